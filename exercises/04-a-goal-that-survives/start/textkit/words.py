"""Counting words in a text."""

import re

WORD = re.compile(r"[A-Za-z0-9]+(?:'[A-Za-z]+)?")


def word_count(text):
    """Return the number of words in TEXT: runs of letters and digits, with an apostrophe inside
    a word allowed ("don't" is one word)."""
    return len(WORD.findall(text))
