#!/usr/bin/env python3
"""The browser half of `scripts/report-screenshot.sh --serve` (see there).

Usage: report-serve-check.py WORK URL JOURNAL CHROMIUM PROFILE

Starts headless Chromium (an empty profile in PROFILE) with its DevTools on a free loopback
port, loads URL (a running `kit report --serve`), runs WORK/measure.js in the page, saves a
screenshot to WORK/report.png, appends a run ending at a cap to JOURNAL, waits until the page
has reloaded itself and shows it, measures again into WORK/dom.html (as the script's file://
mode leaves it), and checks that every request went to URL. Exits 1 with FAIL: … otherwise.
Needs websocket-client (apt-get install -y python3-websocket, or pip install websocket-client).
"""
import base64
import json
import re
import subprocess
import sys
import time
import urllib.request

import websocket

DEADLINE_S = 60

work, url, journal, chromium, profile = sys.argv[1:6]
browser = subprocess.Popen(
    [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
     "--disable-component-update", "--disable-sync", "--no-first-run",
     f"--user-data-dir={profile}", "--window-size=1280,2000", "--remote-debugging-port=0",
     "about:blank"],
    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


class Page:
    """One page target of the browser, spoken to over the DevTools protocol."""

    def __init__(self, ws_url):
        self.ws = websocket.create_connection(ws_url, timeout=DEADLINE_S, suppress_origin=True)
        self.seq = 0
        self.events = []
        self.requested = []

    def _take(self):
        msg = json.loads(self.ws.recv())
        if msg.get("method") == "Network.requestWillBeSent":
            self.requested.append(msg["params"]["request"]["url"])
        return msg

    def call(self, method, **params):
        self.seq += 1
        self.ws.send(json.dumps({"id": self.seq, "method": method, "params": params}))
        while True:
            msg = self._take()
            if msg.get("id") == self.seq:
                if "error" in msg:
                    sys.exit(f"FAIL: {method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)

    def wait_for(self, method):
        """The next event `method` (one already received counts)."""
        for i, e in enumerate(self.events):
            if e.get("method") == method:
                del self.events[: i + 1]
                return e
        end = time.monotonic() + DEADLINE_S
        while time.monotonic() < end:
            msg = self._take()
            if msg.get("method") == method:
                return msg
        sys.exit(f"FAIL: no {method} in {DEADLINE_S} s")

    def evaluate(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True)
        if "exceptionDetails" in r:
            sys.exit(f"FAIL: the page's script failed: {r['exceptionDetails']}")
        return r["result"].get("value")


def devtools_port():
    """Chromium says where its DevTools listen on stderr: 'DevTools listening on ws://…'."""
    for line in browser.stderr:
        m = re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line)
        if m:
            return m.group(1)
    sys.exit("FAIL: Chromium ended without opening its DevTools port")


LIVE = ('(function () { var l = document.getElementById("kit-live"), '
        'o = document.querySelector("dd.outcome"); '
        'return l && o ? l.dataset.version + " " + o.dataset.outcome : null; })()')

try:
    port = devtools_port()
    targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list",
                                               timeout=DEADLINE_S))
    page = Page(next(t for t in targets if t["type"] == "page")["webSocketDebuggerUrl"])
    measure = open(f"{work}/measure.js", encoding="utf-8").read()
    page.call("Page.enable")
    page.call("Network.enable")
    page.call("Page.navigate", url=url)
    page.wait_for("Page.loadEventFired")
    first = page.evaluate(measure)
    v1, outcome = page.evaluate(LIVE).split()
    shot = page.call("Page.captureScreenshot", format="png")
    open(f"{work}/report.png", "wb").write(base64.b64decode(shot["data"]))
    print(f"served page: live version {v1}, outcome {outcome}; {first.splitlines()[0]}")

    # The journal grows by a run that ends at a cap: the page must reload by itself.
    with open(journal, encoding="utf-8") as j:
        runs = [json.loads(line).get("run") or 0 for line in j if '"loop_start"' in line]
    run = max(runs or [0]) + 1
    with open(journal, "a", encoding="utf-8") as j:
        for e in ({"event": "loop_start", "command": "kit loop", "pid": 1, "run": run,
                   "ts": "2026-12-01T10:00:00Z"},
                  {"event": "loop_end", "outcome": "cap",
                   "reason": "appended by report-screenshot.sh", "iteration": 1,
                   "iterations": 0, "exit": 3, "run": run, "ts": "2026-12-01T10:00:01Z"}):
            j.write(json.dumps(e) + "\n")
    appended = time.monotonic()
    page.wait_for("Page.loadEventFired")
    now = page.evaluate(LIVE)
    took = time.monotonic() - appended
    if not now or now.split()[0] == v1 or now.split()[1] != "cap":
        sys.exit(f"FAIL: after the journal grew the page shows {now!r}, not a new version and cap")
    after = page.evaluate(measure)
    print(f"reloaded by itself {took:.1f} s after the journal grew: live version "
          f"{now.split()[0]}, outcome cap; {after.splitlines()[0]}")
    with open(f"{work}/dom.html", "w", encoding="utf-8") as f:
        f.write('<pre id="chart-check">' + after.replace("&", "&amp;").replace("<", "&lt;")
                + "</pre>")

    elsewhere = [u for u in page.requested if not u.startswith(url)]
    if elsewhere:
        sys.exit(f"FAIL: the page asked for {elsewhere[:5]}")
    asks = sum(u.endswith("/version") for u in page.requested)
    if not asks:
        sys.exit("FAIL: the page never asked for /version")
    print(f"requests: {len(page.requested)}, every one to {url} ({asks} for /version)")
    page.ws.close()
finally:
    browser.terminate()
    browser.wait(timeout=30)
