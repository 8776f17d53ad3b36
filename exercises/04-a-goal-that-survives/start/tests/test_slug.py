import unittest

from textkit.slug import slugify


class SlugifyTest(unittest.TestCase):
    def test_words(self):
        self.assertEqual(slugify("Hello World"), "hello-world")

    def test_punctuation_separates(self):
        self.assertEqual(slugify("Hello, World!"), "hello-world")

    def test_runs_collapse(self):
        self.assertEqual(slugify("  a -- b  "), "a-b")

    def test_accents(self):
        self.assertEqual(slugify("Café Crème"), "cafe-creme")

    def test_digits(self):
        self.assertEqual(slugify("Top 10 tips"), "top-10-tips")

    def test_max_length_cuts_at_a_word(self):
        self.assertEqual(slugify("one two three four", max_length=12), "one-two")

    def test_max_length_cuts_a_long_word(self):
        self.assertEqual(slugify("abcdefghij", max_length=4), "abcd")

    def test_nothing_left(self):
        for title in ["", "!!!", " - "]:
            with self.assertRaises(ValueError):
                slugify(title)
