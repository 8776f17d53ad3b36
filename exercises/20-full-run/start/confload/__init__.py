"""confload: read small `key = value` configuration files."""

from confload.durations import parse_duration
from confload.loader import ConfigError, load_config

__all__ = ["ConfigError", "load_config", "parse_duration"]
