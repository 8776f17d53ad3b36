#!/usr/bin/env bash
# Render `kit report` in a real headless browser and check that the charts drew.
#
# Usage:  scripts/report-screenshot.sh [--serve] [KIT] [PATH...]
#   KIT   the kit binary (default: target/release/kit, else target/debug/kit)
#   PATH  what to report on (default: the embedded samples, tests/fixtures/samples)
# Needs Debian's chromium (apt-get install -y chromium) and python3. Writes into a temporary
# folder and prints where: report.html, report.png (1280x2000) and the checks' results.
#
# Checks, each failing the script (exit 1) when not met:
#   - every <svg> chart of the page has a non-zero width and height as laid out by Chromium
#     (measure.js, run in the page, measures them), and every session with API calls has its
#     two charts (context; cache and cost);
#   - the screenshot exists, is a PNG and is not blank (more than one colour, and at least
#     1 % of its pixels not white).
#
# --serve: the page served by `kit report --serve 127.0.0.1:0`, in a loop project made by
# `kit rehearse --keep` (its journal and the fake agent's transcripts, plus PATH), loaded from
# the server in headless Chromium driven over the DevTools protocol by
# scripts/report-serve-check.py (python3's websocket-client: apt-get install -y
# python3-websocket, or pip install websocket-client). Checks, besides the two above:
#   - the page reloads by itself after a run is appended to longrun/journal.jsonl (its live
#     version changes and its outcome becomes that run's), and its charts drew again;
#   - every request the browser made went to the server, and the page asked for /version;
#   - SIGTERM ends the server with exit 0 and "stopped serving (SIGTERM)".
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
serve=0
if [[ ${1:-} == --serve ]]; then
  serve=1
  shift
fi
kit=${1:-}
[[ $# -gt 0 ]] && shift
if [[ -z $kit ]]; then
  kit=$here/target/release/kit
  [[ -x $kit ]] || kit=$here/target/debug/kit
fi
[[ -x $kit ]] || { echo "no kit binary at $kit: cargo build first, or pass it" >&2; exit 2; }
kit=$(cd "$(dirname "$kit")" && pwd)/$(basename "$kit")
chromium=$(command -v chromium || command -v chromium-browser || true)
[[ -n $chromium ]] || { echo "chromium is not installed: apt-get install -y chromium" >&2; exit 2; }
[[ $# -gt 0 ]] || set -- "$here/tests/fixtures/samples"

work=$(mktemp -d)
echo "work: $work"

# The measuring script, an expression: each chart's laid-out size, and the sessions with API
# calls missing one of their two charts.
cat >"$work/measure.js" <<'EOF'
(function () {
  var svgs = document.querySelectorAll("figure.chart svg"), out = [];
  svgs.forEach(function (s) {
    var r = s.getBoundingClientRect();
    out.push(Math.round(r.width) + "x" + Math.round(r.height) + " " + s.querySelectorAll("*").length);
  });
  // Sessions with API calls in the main conversation, each of which must hold two charts.
  var charted = 0, short = 0;
  document.querySelectorAll("article.session").forEach(function (a) {
    var n = a.querySelectorAll("figure.chart svg").length;
    if (a.querySelector(".nothing-to-chart")) return;
    charted += 1;
    if (n !== 2) short += 1;
  });
  return "charts=" + svgs.length + " sessions=" + charted + " short=" + short + "\n" + out.join("\n");
})()
EOF

browser() {
  local profile
  profile=$(mktemp -d)
  timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run --user-data-dir="$profile" \
    --window-size=1280,2000 "$@" 2>/dev/null
  rm -rf "$profile"
}

if [[ $serve == 1 ]]; then
  python3 -c "import websocket" 2>/dev/null || {
    echo "python3's websocket-client is missing: apt-get install -y python3-websocket (or pip install websocket-client)" >&2
    exit 2
  }
  (cd "$work" && "$kit" rehearse --keep sb >rehearse.txt) || { cat "$work/rehearse.txt"; exit 1; }
  project=$work/sb/project
  # The server as a coprocess: its first line (the URL) is read with a deadline.
  coproc SRV { cd "$project" && exec "$kit" report --serve 127.0.0.1:0 ../home/.claude "$@" 2>&1; }
  srv_pid=$SRV_PID
  exec {srv_out}<&"${SRV[0]}"
  trap 'kill -TERM $srv_pid 2>/dev/null || true' EXIT
  read -r -t 120 -u "$srv_out" first || { echo "FAIL: kit report --serve said nothing in 120 s" >&2; exit 1; }
  echo "$first"
  url=$(grep -o 'http://127\.0\.0\.1:[0-9]*/' <<<"$first") || { echo "FAIL: no URL on the first line" >&2; exit 1; }
  profile=$(mktemp -d)
  python3 "$here/scripts/report-serve-check.py" "$work" "$url" "$project/longrun/journal.jsonl" \
    "$chromium" "$profile"
  rm -rf "$profile"
  kill -TERM "$srv_pid"
  said=$(cat <&"$srv_out")
  code=0
  wait "$srv_pid" || code=$?
  trap - EXIT
  last=$(tail -n 1 <<<"$said")
  echo "server: $last (exit $code)"
  [[ $code == 0 && $last == "stopped serving (SIGTERM)" ]] || {
    echo "FAIL: the server did not end cleanly on SIGTERM" >&2
    exit 1
  }
else
  "$kit" report --out "$work/report.html" "$@"
  # The measuring copy: the page plus a script that writes what measure.js finds into the DOM
  # (--dump-dom prints it).
  cp "$work/report.html" "$work/check.html"
  {
    echo '<script>'
    echo 'var pre = document.createElement("pre"); pre.id = "chart-check"; pre.textContent ='
    cat "$work/measure.js"
    echo '; document.body.appendChild(pre);'
    echo '</script>'
  } >>"$work/check.html"
  browser --dump-dom "file://$work/check.html" >"$work/dom.html"
  browser --screenshot="$work/report.png" "file://$work/report.html" >/dev/null
fi

python3 - "$work" <<'EOF'
import html, re, struct, sys, zlib
work = sys.argv[1]
dom = open(f"{work}/dom.html", encoding="utf-8").read()
m = re.search(r'<pre id="chart-check">(.*?)</pre>', dom, re.S)
if not m:
    sys.exit("FAIL: the measuring script did not run (no #chart-check in the DOM)")
lines = html.unescape(m.group(1)).strip().split("\n")
head = dict(kv.split("=") for kv in lines[0].split())
charts, sessions, short = int(head["charts"]), int(head["sessions"]), int(head["short"])
sizes = lines[1:]
bad = [s for s in sizes if s.split()[0].startswith("0x") or "x0 " in s]
print(f"charts: {charts} for {sessions} sessions; laid-out sizes: {', '.join(sorted(set(s.split()[0] for s in sizes)))}")
if charts == 0 or short or bad:
    sys.exit(f"FAIL: {charts} charts; {short} of {sessions} sessions without their two; {len(bad)} with a zero size")
if any(int(s.split()[1]) < 20 for s in sizes):
    sys.exit("FAIL: a chart has fewer than 20 SVG elements")

# The screenshot: decode the PNG (8-bit RGB or RGBA, as Chromium writes it) with zlib alone.
data = open(f"{work}/report.png", "rb").read()
if data[:8] != b"\x89PNG\r\n\x1a\n":
    sys.exit("FAIL: report.png is not a PNG")
pos, idat, w = 8, b"", 0
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
bpp = {2: 3, 6: 4}.get(ctype)
if depth != 8 or bpp is None:
    sys.exit(f"FAIL: unexpected PNG format (depth {depth}, colour type {ctype})")
raw, stride = zlib.decompress(idat), w * bpp
prev, colours, inked = bytearray(stride), set(), 0
for y in range(h):
    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b, c = prev[i], (prev[i - bpp] if i >= bpp else 0)
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    for x in range(0, stride, bpp * 4):  # every 4th pixel is enough to tell
        px = bytes(line[x:x + 3])
        colours.add(px)
        inked += px != b"\xff\xff\xff"
    prev = line
share = inked / (h * ((w + 3) // 4))
print(f"screenshot: {w}x{h}, {len(colours)} colours, {share:.1%} of pixels not white")
if len(colours) < 2 or share < 0.01:
    sys.exit("FAIL: the screenshot is blank")
print("ok: the charts drew")
EOF
echo "screenshot: $work/report.png"
