"""Durations as they appear in configuration files: "90s", "15m", "2h"."""

import re

# Seconds per unit.
UNITS = {"s": 1, "m": 60, "h": 3600}


def parse_duration(text):
    """Return the number of whole seconds that TEXT stands for.

    TEXT is a whole number immediately followed by one unit: s (seconds), m (minutes) or
    h (hours), e.g. "90s", "15m", "2h". Blanks around it are ignored. Anything else (no unit,
    another unit, a sign, a fraction, blanks inside, an empty string) raises ValueError whose
    message quotes TEXT.
    """
    match = re.fullmatch(r"([0-9]+)([smh])", text.strip()) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"bad duration {text!r}: expected a whole number and s, m or h")
    return int(match.group(1)) * UNITS[match.group(2)]
