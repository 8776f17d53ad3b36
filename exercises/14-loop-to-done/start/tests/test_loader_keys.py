"""Regression tests added by the team: how load_config treats keys and bare values today."""

import unittest

from confload.loader import load_config


class LoaderKeysTest(unittest.TestCase):
    def test_blanks_around_keys_and_values_are_trimmed(self):
        self.assertEqual(load_config("  retries   =   3  \n"), {"retries": 3})

    def test_a_bare_word_stays_a_string(self):
        self.assertEqual(load_config("mode = fast\n"), {"mode": "fast"})

    def test_an_empty_text_is_an_empty_config(self):
        self.assertEqual(load_config(""), {})


if __name__ == "__main__":
    unittest.main()
