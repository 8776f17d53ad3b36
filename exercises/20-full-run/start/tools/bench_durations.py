"""The goal's limit criterion: parse 20,000 durations and print how long it took.

Prints one line, `parsed=20000 cpu_ms=N`, N the CPU time this process spent parsing, in whole
milliseconds. CPU time, not wall time: it does not grow while a loaded machine makes the
process wait, so the bound judges the code, not the machine's other work.
"""

import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from confload.durations import parse_duration  # noqa: E402

SAMPLES = ["90s", "15m", "2h", "45s", "120m"]
COUNT = 20000

start = time.process_time()
for i in range(COUNT):
    parse_duration(SAMPLES[i % len(SAMPLES)])
cpu_ms = round((time.process_time() - start) * 1000)
print(f"parsed={COUNT} cpu_ms={cpu_ms}")
