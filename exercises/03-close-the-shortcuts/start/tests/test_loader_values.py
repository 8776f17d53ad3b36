"""Regression tests added by the team: quoted values and keys, as load_config reads them today."""

import unittest

from confload.loader import ConfigError, load_config


class LoaderValuesTest(unittest.TestCase):
    def test_a_quoted_value_keeps_its_spaces(self):
        config = load_config('greeting = "hello, world"\n')
        self.assertEqual(config, {"greeting": "hello, world"})

    def test_a_line_without_a_key_names_its_line(self):
        with self.assertRaises(ConfigError) as caught:
            load_config("port = 80\n= 81\n")
        self.assertEqual(caught.exception.line, 2)


if __name__ == "__main__":
    unittest.main()
