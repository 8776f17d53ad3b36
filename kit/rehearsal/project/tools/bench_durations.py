"""The goal's limit criterion: parse 20,000 durations and print how long it took.

Prints one line, `parsed=20000 total_ms=N`, N the wall time in whole milliseconds.
"""

import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from confload.durations import parse_duration  # noqa: E402

SAMPLES = ["90s", "15m", "2h", "45s", "120m"]
COUNT = 20000

start = time.perf_counter()
for i in range(COUNT):
    parse_duration(SAMPLES[i % len(SAMPLES)])
total_ms = round((time.perf_counter() - start) * 1000)
print(f"parsed={COUNT} total_ms={total_ms}")
