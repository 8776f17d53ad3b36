"""The new work: parse_duration, and load_config using it for duration keys."""

import unittest

from confload.durations import parse_duration


class ParseDurationTest(unittest.TestCase):
    def test_seconds(self):
        self.assertEqual(parse_duration("90s"), 90)


if __name__ == "__main__":
    unittest.main()
