import unittest

from textkit.words import word_count


class WordCountTest(unittest.TestCase):
    def test_empty(self):
        self.assertEqual(word_count(""), 0)

    def test_plain(self):
        self.assertEqual(word_count("the quick brown fox"), 4)

    def test_punctuation(self):
        self.assertEqual(word_count("Hello, world! Again?"), 3)

    def test_apostrophe(self):
        self.assertEqual(word_count("don't stop"), 2)
