#!/usr/bin/env bash
# Benchmark of `kit hook claude` (BENCHMARKS.md, section "hook"): whole-process time of one
# PostToolUse event on transcripts of about 1 MB, 100 MB and 1 GB. Each transcript repeats the
# real pre-compaction part of the spotter 4d5611e5 L641-L801 excerpt (../shared/samples), so all
# three end with the same tail (last call: 164,831 tokens) and differ only in size.
#
# Then the same events without a shell (bench/hook_cpu.py): wall and CPU (user + sys) medians,
# the CPU time being what a loaded machine does not distort.
#
# Usage: bench/hook.sh [KIT_BINARY] [WORK_DIR]   (needs hyperfine and python3)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
kit=${1:-$here/target/release/kit}
work=${2:-${TMPDIR:-/tmp}/kit-hook-bench}
sample=
for d in "$here/../shared" "$here/../../shared"; do
  for f in "$d"/samples/claude-code/spotter_4d5611e5-*.L641-L801.excerpt.jsonl; do
    [[ -f $f ]] && sample=$f
  done
done
[[ -n $sample ]] || { echo "the shared samples folder is missing" >&2; exit 2; }
mkdir -p "$work/project/longrun" "$work/project/.git"
python3 - "$sample" "$work" <<'PY'
import sys
src, work = sys.argv[1], sys.argv[2]
lines = open(src, 'rb').read().splitlines(True)
cut = next(i for i, l in enumerate(lines) if b'"compact_boundary"' in l)
body = b''.join(lines[:cut])
for name, size in [('1m', 1 << 20), ('100m', 100 << 20), ('1g', 1 << 30)]:
    with open(f'{work}/{name}.jsonl', 'wb') as f:
        n = 0
        while n + len(body) < size:
            f.write(body); n += len(body)
        f.write(body)
# The last tool_use id of the tail: the event names it, so each run also does the flush check
# (src/hook/mod.rs wait_for_flush) and finds it at once, as with a flushed transcript.
import re
ids = re.findall(rb'"id":"(toolu_[A-Za-z0-9]+)"', body)
open(f'{work}/tool_use_id', 'wb').write(ids[-1] if ids else b'')
PY
tool_use_id=$(cat "$work/tool_use_id")
for n in 1m 100m 1g; do
  printf '{"session_id":"bench-%s","transcript_path":"%s/%s.jsonl","cwd":"%s/project","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_response":{"stdout":""},"tool_use_id":"%s"}' \
    "$n" "$work" "$n" "$work" "$tool_use_id" > "$work/$n.event.json"
done
cd "$work/project"
hyperfine --warmup 50 --runs 1000 --export-json "$work/hook.json" \
  -n 1MB "$kit hook claude < $work/1m.event.json" \
  -n 100MB "$kit hook claude < $work/100m.event.json" \
  -n 1GB "$kit hook claude < $work/1g.event.json" > /dev/null
python3 - "$work/hook.json" <<'PY'
import json, sys
rs = json.load(open(sys.argv[1]))['results']
base = rs[0]['median']
print('| transcript | median | mean ± σ | min | runs | median / 1 MB median |')
print('|---|---:|---:|---:|---:|---:|')
for r in rs:
    print(f"| {r['command']} | {r['median']*1e3:.2f} ms | {r['mean']*1e3:.2f} ± {r['stddev']*1e3:.2f} ms "
          f"| {r['min']*1e3:.2f} ms | {len(r['times'])} | {r['median']/base:.2f}× |")
PY
python3 "$here/bench/hook_cpu.py" "$kit" "$work"
