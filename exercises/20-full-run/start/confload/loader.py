"""load_config: `key = value` lines into a dict, with errors that name their line."""

from confload.durations import parse_duration

# A key ending in one of these holds a duration ("15m"), stored as seconds.
DURATION_SUFFIXES = ("timeout", "interval", "delay")


class ConfigError(ValueError):
    """A malformed line; `line` is its 1-based number."""

    def __init__(self, line, message):
        super().__init__(f"line {line}: {message}")
        self.line = line


def load_config(text):
    """Parse TEXT and return a dict of its keys and converted values.

    Blank lines and `#` comments are skipped. Values: integers, `true`/`false`, "quoted"
    strings, durations for duration keys, anything else as the bare string.
    Raises ConfigError for a line without `=`, an empty key, a duplicate key or a bad duration.
    """
    config = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        key, sep, value = line.partition("=")
        key, value = key.strip(), value.strip()
        if not sep:
            raise ConfigError(number, f"expected `key = value`, got {line!r}")
        if not key:
            raise ConfigError(number, "missing key before `=`")
        if key in config:
            raise ConfigError(number, f"duplicate key {key!r}")
        config[key] = _convert(key, value, number)
    return config


def _convert(key, value, number):
    if key.endswith(DURATION_SUFFIXES):
        try:
            return parse_duration(value)
        except ValueError as err:
            raise ConfigError(number, str(err)) from None
    if value in ("true", "false"):
        return value == "true"
    if value.isdigit():
        return int(value)
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1]
    return value
