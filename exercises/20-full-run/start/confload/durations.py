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
    raise NotImplementedError("parse_duration is not written yet")
