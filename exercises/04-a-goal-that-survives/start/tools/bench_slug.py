"""Slug 5000 titles and print the CPU time it took: `slugs=5000 cpu_ms=N`."""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from textkit.slug import slugify  # noqa: E402

TITLES = [f"Release notes {n}: what's new in Café Crème, part {n % 7}" for n in range(5000)]

start = time.process_time()
for title in TITLES:
    slugify(title)
print(f"slugs={len(TITLES)} cpu_ms={round((time.process_time() - start) * 1000)}")
