"""Regression tests: what load_config already did before durations existed."""

import unittest

from confload.loader import ConfigError, load_config


class LoaderTest(unittest.TestCase):
    def test_integers_and_strings(self):
        config = load_config('retries = 3\nname = "web"\nmode = fast\n')
        self.assertEqual(config, {"retries": 3, "name": "web", "mode": "fast"})

    def test_comments_and_blank_lines_are_skipped(self):
        config = load_config("# settings\n\nport = 8080  # the public port\n   \n")
        self.assertEqual(config, {"port": 8080})

    def test_booleans(self):
        config = load_config("verbose = true\ncolour = false\n")
        self.assertIs(config["verbose"], True)
        self.assertIs(config["colour"], False)

    def test_line_without_equals_names_its_line(self):
        with self.assertRaises(ConfigError) as caught:
            load_config("port = 80\nhost example.org\n")
        self.assertEqual(caught.exception.line, 2)
        self.assertIn("line 2", str(caught.exception))

    def test_duplicate_key_names_its_line(self):
        with self.assertRaises(ConfigError) as caught:
            load_config("port = 80\n\nport = 81\n")
        self.assertEqual(caught.exception.line, 3)
        self.assertIn("duplicate key 'port'", str(caught.exception))


if __name__ == "__main__":
    unittest.main()
