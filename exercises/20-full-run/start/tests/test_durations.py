"""The new work: parse_duration, and load_config using it for duration keys."""

import unittest

from confload.durations import parse_duration
from confload.loader import ConfigError, load_config


class ParseDurationTest(unittest.TestCase):
    def test_seconds(self):
        self.assertEqual(parse_duration("90s"), 90)

    def test_minutes(self):
        self.assertEqual(parse_duration("15m"), 900)

    def test_hours(self):
        self.assertEqual(parse_duration("2h"), 7200)

    def test_blanks_around_are_ignored(self):
        self.assertEqual(parse_duration("  5m "), 300)

    def test_a_number_without_unit_is_rejected(self):
        with self.assertRaises(ValueError) as caught:
            parse_duration("15")
        self.assertIn("'15'", str(caught.exception))

    def test_an_unknown_unit_is_rejected(self):
        with self.assertRaises(ValueError):
            parse_duration("3d")

    def test_malformed_text_is_rejected(self):
        for text in ["", "m", "-5m", "+5m", "1.5h", "1 5m", "5 m", "5mm", "five m"]:
            with self.subTest(text=text):
                with self.assertRaises(ValueError):
                    parse_duration(text)


class LoaderDurationTest(unittest.TestCase):
    def test_duration_keys_become_seconds(self):
        config = load_config("timeout = 15m\nretry_delay = 90s\nretries = 3\n")
        self.assertEqual(config, {"timeout": 900, "retry_delay": 90, "retries": 3})

    def test_a_bad_duration_names_its_line(self):
        with self.assertRaises(ConfigError) as caught:
            load_config("retries = 3\npoll_interval = 10x\n")
        self.assertEqual(caught.exception.line, 2)
        self.assertIn("'10x'", str(caught.exception))


if __name__ == "__main__":
    unittest.main()
