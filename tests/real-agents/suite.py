"""The real-agents contract suite: kit driving the real Claude Code and Codex CLIs against
kit's scripted model APIs (mockapi.py). Run through ./run, which installs the pinned CLIs.

Each check prints one line, `ok NAME` or `FAIL NAME: why`; the last line is `N passed, N
failed`; the exit status is 1 when any check failed. README.md says what each check proves.

Usage: python3 suite.py --kit KIT --claude CLAUDE --codex CODEX [--only NAME,...] [--keep DIR]
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from datetime import datetime, timedelta, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))
from mockapi import MockServer, Script  # noqa: E402

SCRIPTS = HERE / "scripts"
SAMPLE = REPO / "kit" / "rehearsal" / "project"
GOAL = REPO / "kit" / "rehearsal" / "goal.md"
LIMIT = 180  # seconds for any one CLI or kit command


class CheckFailed(Exception):
    pass


def expect(cond, why):
    if not cond:
        raise CheckFailed(why)


def load_script(name, **subst):
    """A scripts/NAME.json turn list, with {PLACEHOLDER}s replaced by subst (JSON-escaped)."""
    text = (SCRIPTS / f"{name}.json").read_text()
    for k, v in subst.items():
        text = text.replace("{" + k + "}", json.dumps(str(v))[1:-1])
    return json.loads(text)


class World:
    """Fresh HOME / CLAUDE_CONFIG_DIR / CODEX_HOME and a project for one check."""

    def __init__(self, args, server, name):
        self.args, self.server = args, server
        self.dir = Path(tempfile.mkdtemp(prefix=f"kra-{name}-", dir=args.work))
        self.home = self.dir / "home"
        self.claude_dir = self.home / ".claude"
        self.codex_home = self.home / ".codex"
        for d in (self.claude_dir, self.codex_home):
            d.mkdir(parents=True)
        self.project = self.dir / "project"
        self.bin = self.dir / "bin"
        self.bin.mkdir()
        for name_, target in (("kit", args.kit), ("claude", args.claude), ("codex", args.codex)):
            (self.bin / name_).symlink_to(Path(target).resolve())
        (self.codex_home / "config.toml").write_text(
            'model = "gpt-5.1-codex"\n'
            'model_provider = "kitmock"\n'
            "[model_providers.kitmock]\n"
            'name = "kit mock"\n'
            f'base_url = "{server.url}/v1"\n'
            'wire_api = "responses"\n'
            'env_key = "KIT_MOCK_OPENAI_KEY"\n'
            "request_max_retries = 0\n"
            "stream_max_retries = 0\n")

    def env(self, **extra):
        keep = {k: v for k, v in os.environ.items()
                if k in ("LANG", "LC_ALL", "TERM", "TZ", "USER", "LOGNAME", "SHELL", "TMPDIR")}
        env = dict(keep)
        env.update(
            PATH=f"{self.bin}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            HOME=str(self.home),
            CLAUDE_CONFIG_DIR=str(self.claude_dir),
            CODEX_HOME=str(self.codex_home),
            XDG_CONFIG_HOME=str(self.home / ".config"),
            XDG_CACHE_HOME=str(self.home / ".cache"),
            XDG_DATA_HOME=str(self.home / ".local" / "share"),
            ANTHROPIC_BASE_URL=self.server.url,
            ANTHROPIC_API_KEY="sk-ant-kit-mock",
            KIT_MOCK_OPENAI_KEY="sk-kit-mock",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            DISABLE_AUTOUPDATER="1",
            GIT_AUTHOR_NAME="kit suite", GIT_AUTHOR_EMAIL="suite@kit.invalid",
            GIT_COMMITTER_NAME="kit suite", GIT_COMMITTER_EMAIL="suite@kit.invalid",
        )
        env.update({k: str(v) for k, v in extra.items()})
        return env

    def run(self, argv, cwd=None, input_="", env=None, check=False, timeout=LIMIT):
        r = subprocess.run(argv, cwd=cwd or self.project, env=env or self.env(), input=input_,
                           capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise CheckFailed(f"`{' '.join(map(str, argv))}` exited {r.returncode}: "
                              f"{(r.stderr or r.stdout).strip()[-400:]}")
        return r

    def kit(self, *args, **kw):
        return self.run([str(self.bin / "kit"), *args], **kw)

    def sample_project(self, longrun=True, hook=False):
        """The rehearsal sample, committed; `kit init` + goal + freeze (the default set-up)."""
        shutil.copytree(SAMPLE, self.project)
        self.run(["git", "init", "-q", "-b", "main"], check=True)
        self.run(["git", "add", "-A"], check=True)
        self.run(["git", "commit", "-q", "-m", "the sample project"], check=True)
        if longrun:
            self.kit("init", check=True)
            shutil.copy(GOAL, self.project / "longrun" / "goal.md")
            self.kit("freeze", "tests", "tools", check=True)
        if hook:
            self.kit("hook", "install", check=True)
        self.run(["git", "add", "-A"], check=True)
        self.run(["git", "commit", "-q", "-m", "kit set-up", "--allow-empty"], check=True)

    def claude(self, prompt, *extra, env=None, check=True):
        """`claude -p` with stream-json; returns the parsed events."""
        # The prompt on stdin: --allowedTools takes every following word.
        argv = [str(self.bin / "claude"), "-p", "--output-format", "stream-json", "--verbose",
                *extra]
        r = self.run(argv, env=env, input_=prompt)
        events = []
        for line in r.stdout.splitlines():
            try:
                events.append(json.loads(line))
            except ValueError:
                pass
        if check:
            expect(any(e.get("type") == "result" for e in events),
                   f"claude -p printed no result event (exit {r.returncode}): "
                   f"{r.stderr.strip()[-300:]}")
        return events

    def journal(self, kind=None):
        path = self.project / "longrun" / "journal.jsonl"
        if not path.exists():
            return []
        out = []
        for line in path.read_text().splitlines():
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if kind is None or e.get("kind", e.get("type")) == kind or e.get("event") == kind:
                out.append(e)
        return out

    def hook_events(self):
        """The journal's `hook` entries, flattened: action, band, context, pct, hook_event."""
        out = []
        for e in self.journal():
            k = e.get("kind") or e.get("type") or e.get("event")
            if k != "hook":
                continue
            f = dict(e.get("fields") or e.get("data") or {})
            for key in ("action", "band", "context", "pct", "hook_event", "session", "why"):
                if key in e and key not in f:
                    f[key] = e[key]
            out.append(f)
        return out

    def transcripts(self):
        return sorted((self.claude_dir / "projects").rglob("*.jsonl"))


def session_id(events):
    for e in events:
        if e.get("type") == "result":
            return e.get("session_id")
    return None


def served(script, api="messages", kinds=("turn", "extra", "summary")):
    return [c for c in script.calls if c["api"] == api and c["kind"] in kinds]


def context_of(call):
    u = call["usage"]
    return (u["input_tokens"] + u["cache_read_input_tokens"]
            + u["cache_creation_input_tokens"])


# -- the checks ------------------------------------------------------------------------------

CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


def loop_outcome(w):
    st = w.kit("status", "--json")
    try:
        status = json.loads(st.stdout)
    except ValueError:
        status = {}
    return st, status


@check
def loop_claude_done_at_iteration_1(args, server):
    """kit loop, agent claude, default set-up: the scripted model reads, edits and is done."""
    w = World(args, server, "loop-claude")
    w.sample_project()
    target = w.project / "confload" / "durations.py"
    script = server.load(Script(messages=load_script("loop-claude", FILE=target)))
    r = w.kit("loop", "--agent", "claude", timeout=600)
    st, status = loop_outcome(w)
    it = [e for e in w.journal() if (e.get("kind") or e.get("type")) in ("iteration", "iteration_end")]
    text = r.stdout + r.stderr
    expect("NotImplementedError" not in target.read_text(),
           f"confload/durations.py unchanged after the loop (exit {r.returncode}); "
           f"denials: {denials(w)}; kit said: {last_lines(text)}")
    expect(r.returncode == 0, f"kit loop exited {r.returncode}: {last_lines(text)}")
    expect(re.search(r"\bdone\b", text, re.I) is not None, f"kit loop did not say done: {last_lines(text)}")
    n = iterations_run(w)
    expect(n == 1, f"done after {n} iterations, not 1")
    return script


@check
def loop_claude_cost_cap_within_one_call(args, server):
    """kit loop, agent claude, a $1 cost cap, calls of 80,000 uncached input tokens (~$0.40 each
    at the default model's $5 per million): kit passes --max-budget-usd and reads the stream as
    it comes; the run stops at the cost cap (exit 3) within one API call of it, not after the 8
    calls the script holds."""
    w = World(args, server, "loop-cost")
    w.sample_project()
    goal = w.project / "longrun" / "goal.md"
    goal.write_text(goal.read_text().replace("- cost: 2 USD", "- cost: 1 USD"))
    w.kit("freeze", "tests", "tools", check=True)
    w.run(["git", "add", "-A"], check=True)
    w.run(["git", "commit", "-q", "-m", "a $1 budget"], check=True)
    target = w.project / "confload" / "durations.py"
    script = server.load(Script(messages=load_script("loop-cost", FILE=target)))
    r = w.kit("loop", "--agent", "claude", timeout=600)
    text = r.stdout + r.stderr
    expect(r.returncode == 3, f"kit loop exited {r.returncode}, not 3: {last_lines(text)}")
    args_seen = [e.get("command", "") for e in w.journal("agent_start")]
    expect(any("--max-budget-usd 1.00" in c for c in args_seen),
           f"claude was not given --max-budget-usd 1.00: {args_seen}")
    caps = w.journal("cost_cap")
    expect(caps, f"no cost_cap journaled: {last_lines(text)}")
    c = caps[-1]
    calls = served(script)
    one = max((0.4,) + tuple(
        (x["usage"]["input_tokens"] * 5 + x["usage"]["output_tokens"] * 25) / 1e6 for x in calls))
    expect(c["used"] <= c["limit"] + one + 1e-9,
           f"spent ${c['used']:.2f} of ${c['limit']:.2f}: more than one call (${one:.2f}) past it")
    expect(len(calls) <= 4, f"{len(calls)} API calls served for a $1 cap at $0.40 a call")
    return script


def denials(w):
    runs = w.project / "longrun" / ".runs"
    found = []
    for log in sorted(runs.glob("*.log")) if runs.exists() else []:
        for line in log.read_text(errors="replace").splitlines():
            if '"permission_denials"' in line:
                try:
                    e = json.loads(line)
                except ValueError:
                    continue
                found += [d.get("tool_name") for d in e.get("permission_denials") or []]
    return found or "none"


def iterations_run(w):
    runs = w.project / "longrun" / ".runs"
    return len(list(runs.glob("[0-9]*.log"))) if runs.exists() else 0


def last_lines(text, n=3):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return " | ".join(lines[-n:])[-500:]


@check
def loop_codex_done_at_iteration_1(args, server):
    """kit loop, agent codex, default set-up: exec_command writes the fix, done at iteration 1,
    and the iteration is priced (the model is taken from the rollout)."""
    w = World(args, server, "loop-codex")
    w.sample_project()
    target = w.project / "confload" / "durations.py"
    fix = (HERE / "fixtures" / "durations.py").read_text()
    cmd = f"cat > confload/durations.py <<'KIT_EOF'\n{fix}KIT_EOF"
    script = server.load(Script(responses=[
        {"tool": {"name": "exec_command", "input": {"cmd": cmd}},
         "usage": {"input": 2100, "cache_read": 6000, "output": 420, "reasoning": 64}},
        {"text": "parse_duration is written; the tests pass.",
         "usage": {"input": 300, "cache_read": 8400, "output": 30}},
    ]))
    r = w.kit("loop", "--agent", "codex", timeout=600)
    text = r.stdout + r.stderr
    expect("NotImplementedError" not in target.read_text(),
           f"confload/durations.py unchanged (exit {r.returncode}); the exec_command output: "
           f"{codex_tool_output(w)}; kit said: {last_lines(text)}")
    expect(r.returncode == 0, f"kit loop exited {r.returncode}: {last_lines(text)}")
    n = iterations_run(w)
    expect(n == 1, f"done after {n} iterations, not 1")
    st, status = loop_outcome(w)
    cost = find_number(status, ("cost_usd", "spent_usd", "cost"))
    expect(cost is not None and cost > 0,
           f"the codex iteration is priced at {cost!r} USD (kit status --json): the model "
           "gpt-5.1-codex is in the rollout and in kit/prices.toml")


def codex_tool_output(w):
    """The first exec_command output in the rollouts, e.g. "Read-only file system"."""
    for rollout in sorted((w.codex_home / "sessions").rglob("*.jsonl")):
        for line in rollout.read_text(errors="replace").splitlines():
            try:
                p = json.loads(line).get("payload") or {}
            except ValueError:
                continue
            if p.get("type") == "function_call_output":
                out = str(p.get("output"))
                return " ".join(out.split("Output:", 1)[-1].split())[:200]
    return "none seen"


def find_number(obj, keys):
    """The first number under any of KEYS, depth-first."""
    if isinstance(obj, dict):
        for k in keys:
            if isinstance(obj.get(k), (int, float)) and not isinstance(obj.get(k), bool):
                return obj[k]
        for v in obj.values():
            n = find_number(v, keys)
            if n is not None:
                return n
    if isinstance(obj, list):
        for v in obj:
            n = find_number(v, keys)
            if n is not None:
                return n
    return None


def hook_session(args, server, name, script_name, model=None, extra_env=None, **subst):
    w = World(args, server, name)
    w.sample_project(hook=True)
    subst.setdefault("PROJECT", w.project)
    subst.setdefault("CONTEXT", 160000)
    script = server.load(Script(messages=load_script(script_name, **subst),
                                watch=["kit: the context is at", "Compaction is near",
                                       "no handoff was proven saved"]))
    flags = ["--permission-mode", "acceptEdits", "--allowedTools", "Bash(kit handoff save)",
             "Bash(sleep:*)"]
    if model:
        flags += ["--model", model]
    events = w.claude("Work on the goal in longrun/goal.md.", *flags,
                      env=w.env(**(extra_env or {})))
    return w, script, events


def band_firings(w, actions=("checkpoint", "handoff", "wrap_up", "wrapup")):
    return [h for h in w.hook_events() if str(h.get("action", "")).replace("-", "_") in actions]


@check
def hook_bands_on_time_with_instant_tools(args, server):
    """claude-opus-4-6 (200k window, point 167,000): calls at 40/54/72/87 % each followed by an
    instant Read; each band fires on the PostToolUse right after the call that crossed it, with
    that call's context, and the reminder is in the very next request."""
    w, script, _ = hook_session(args, server, "bands", "bands", model="claude-opus-4-6")
    calls = served(script)
    fired = band_firings(w)
    seen = [(f.get("action"), f.get("context")) for f in fired]
    for action, ctx in (("checkpoint", 90000), ("handoff", 120000), ("wrap_up", 145000)):
        got = [f.get("context") for f in fired if f.get("action") == action]
        expect(got, f"{action} never fired (want it at {ctx:,}; firings: {seen}): the hook read "
               "the transcript before Claude Code flushed the crossing call")
        expect(got[0] == ctx, f"{action} fired at context {got[0]}, want {ctx:,} (the call "
               "that crossed the band): the hook read the transcript one call late")
    # The reminder reaches the model in the request right after the crossing call.
    firsts = [i for i, c in enumerate(calls) if c["watch"].get("kit: the context is at")]
    expect(firsts and firsts[0] == 2,
           f"the first band reminder reached the model in request {firsts[:1]}, want 2 "
           "(right after the 90,000-token call)")


@check
def hook_stop_block_says_deliberate(args, server):
    """At 87 % with no handoff saved, the Stop is blocked once, the reason reaches the model, and
    the reason says the block is deliberate (Claude Code labels it "Stop hook error")."""
    w, script, _ = hook_session(args, server, "stop", "bands", model="claude-opus-4-6")
    blocks = [h for h in w.hook_events() if "stop_blocked" in str(h.get("action"))]
    expect(len(blocks) == 1, f"{len(blocks)} Stop blocks journaled, want 1")
    calls = served(script)
    got = [c for c in calls if c["watch"].get("no handoff was proven saved")]
    expect(got, "the Stop block's reason never reached the model")
    reason = stop_reason_text(script)
    expect(reason and re.search(r"deliberate|on purpose|not a (hook )?(error|failure)", reason, re.I),
           f"the Stop reason does not say the block is deliberate: {reason!r}")


def stop_reason_text(script):
    """The Stop block's reason as the model received it (Claude Code: "Stop hook feedback:")."""
    def strings(x):
        if isinstance(x, str):
            yield x
        elif isinstance(x, dict):
            for v in x.values():
                yield from strings(v)
        elif isinstance(x, list):
            for v in x:
                yield from strings(v)
    for api, body in script.requests:
        for text in strings(body.get("messages", [])):
            if "no handoff was proven saved" in text:
                return text.split("Stop hook feedback:", 1)[-1].strip()
    return None


@check
def hook_1m_default_model_not_told_to_wrap_up(args, server):
    """The default model claude-opus-4-8[1m] (1M window), slow tools (no flush race): at 160,000
    tokens no band fires (the point is near 1,000,000, not 167,000); at 600,000 the checkpoint
    band fires at ~60 %, nothing higher, and the Stop is not blocked."""
    w, script, events = hook_session(args, server, "1m", "window-1m")
    init = [e for e in events if e.get("type") == "system" and e.get("subtype") == "init"]
    model = init[0].get("model") if init else None
    expect(model == "claude-opus-4-8[1m]", f"system/init model is {model!r}, the suite expects "
           "the 2.1.197 default claude-opus-4-8[1m]")
    fired = band_firings(w)
    early = [(f.get("action"), f.get("pct")) for f in fired if f.get("context") == 160000]
    expect(not early, f"the hook fired {early} at 160,000 tokens of a 1,000,000-token window")
    late = [f for f in fired if f.get("context") == 600000]
    expect([f.get("action") for f in late] == ["checkpoint"],
           f"at 600,000 tokens the hook fired {[(f.get('action'), f.get('pct')) for f in late]}, "
           "want the checkpoint alone (~60 % of the 1M window)")
    pct = float(late[0].get("pct") or 0)
    expect(55 <= pct <= 65, f"600,000 tokens is {pct}% of kit's point, want ~60-62 %")
    blocks = [h for h in w.hook_events() if "stop_blocked" in str(h.get("action"))]
    expect(not blocks, "the Stop was blocked at 600,000 tokens of a 1M window")


@check
def hook_reactive_model_point(args, server):
    """claude-sonnet-4-5 compacts only when the API refuses the prompt (near 200k): at 160,000
    tokens the hook's point is the window (80 % of 200k, the handoff band), not 167,000 (96 %)."""
    w, script, _ = hook_session(args, server, "reactive", "big-context", model="claude-sonnet-4-5",
                                CONTEXT=160000)
    fired = band_firings(w)
    expect(fired, "no band fired at 160,000 tokens on claude-sonnet-4-5")
    pct = max(float(f.get("pct") or 0) for f in fired)
    point = round(160000 * 100 / pct) if pct else None
    expect(point and 190000 <= point <= 200000,
           f"the hook's compaction point for claude-sonnet-4-5 is ~{point} tokens ({pct}% at "
           "160,000), want the window, 190k-200k (it compacts reactively)")


@check
def hook_compaction_rearms_bands(args, server):
    """A reactive compaction (400 "prompt is too long", then the summary call): PreCompact
    re-arms the bands, and the checkpoint band fires again after it."""
    w, script, events = hook_session(args, server, "compact", "compaction",
                                     model="claude-sonnet-4-5")
    boundary = [e for e in events if e.get("subtype") == "compact_boundary"]
    expect(boundary, f"Claude Code did not compact (calls: {[c['kind'] for c in script.calls]})")
    hooks = w.hook_events()
    pre = [h for h in hooks if h.get("hook_event") == "PreCompact"]
    expect(pre, f"no PreCompact journaled: {[h.get('action') for h in hooks]}")
    cps = [h for h in hooks if h.get("action") == "checkpoint"]
    expect(len(cps) >= 2, f"checkpoint fired {len(cps)} time(s), want before and after the "
           f"compaction: {[(h.get('hook_event'), h.get('action'), h.get('context')) for h in hooks]}")


@check
def hook_resume_after_idle_gap(args, server):
    """A session, a handoff saved, then `claude -p --resume` after a gap longer than the cache
    TTL (the hook's clock set 20 minutes on): SessionStart(resume) injects the handoff, and
    UserPromptSubmit warns what the idle gap costs."""
    w, script, events = hook_session(args, server, "resume", "handoff")
    sid = session_id(events)
    expect(sid, "no session id")
    later = (datetime.now(timezone.utc) + timedelta(minutes=20)).strftime("%Y-%m-%dT%H:%M:%SZ")
    script2 = server.load(Script(messages=[
        {"text": "Resumed; continuing from the handoff.",
         "usage": {"input": 5, "cache_read": 0, "cache_write": 62000, "output": 12}}],
        watch=["handoff", "parse_duration is next"]))
    w.claude("Continue.", "--resume", sid, env=w.env(KIT_FAKE_CLOCK=later))
    hooks = [h for h in w.hook_events() if h.get("session") == sid or True]
    starts = [h for h in hooks if h.get("hook_event") == "SessionStart"]
    expect(starts, f"no SessionStart(resume) firing journaled: {[h.get('action') for h in hooks]}")
    expect(any(c["watch"].get("parse_duration is next") for c in script2.calls),
           "the handoff's next action did not reach the model after the resume")
    idle = [h for h in hooks if "idle" in str(h.get("action"))]
    expect(idle, f"no idle-gap warning after 20 minutes: {[(h.get('hook_event'), h.get('action')) for h in hooks]}")


@check
def handoff_verify_on_the_real_transcript(args, server):
    """The scripted model writes longrun/handoff.md and runs `kit handoff save` through Claude
    Code's Bash tool; `kit handoff verify --transcript` proves it in the real transcript, and
    the Stop that follows is not blocked."""
    w, script, events = hook_session(args, server, "verify", "handoff")
    sid = session_id(events)
    ts = [t for t in w.transcripts() if sid and sid in t.name]
    expect(ts, f"no transcript for session {sid} under {w.claude_dir / 'projects'}")
    r = w.kit("handoff", "verify", "--transcript", str(ts[0]))
    expect(r.returncode == 0, f"kit handoff verify --transcript exited {r.returncode}: "
           f"{last_lines(r.stdout + r.stderr)}")
    blocks = [h for h in w.hook_events() if "stop_blocked" in str(h.get("action"))]
    expect(not blocks, "the Stop was blocked although the handoff was saved in this session")


def measure_sessions(w, path):
    r = w.kit("measure", "--json", str(path))
    expect(r.returncode == 0, f"kit measure --json exited {r.returncode}: {last_lines(r.stderr)}")
    try:
        return json.loads(r.stdout)
    except ValueError as e:
        raise CheckFailed(f"kit measure --json printed no JSON ({e})")


def sessions_of(doc):
    if isinstance(doc, dict):
        for k in ("sessions", "items"):
            if isinstance(doc.get(k), list):
                return doc[k]
    return doc if isinstance(doc, list) else []


def totals(session):
    """input / output / cache_read / cache_write from a measure session, whatever the nesting."""
    keys = {
        "input": ("input_tokens", "input"),
        "output": ("output_tokens", "output"),
        "cache_read": ("cache_read_tokens", "cache_read_input_tokens", "cache_read"),
        "cache_write": ("cache_write_tokens", "cache_creation_input_tokens", "cache_write"),
    }
    tok = session.get("tokens") or session.get("usage") or session
    return {k: find_number(tok, names) for k, names in keys.items()}


@check
def measure_claude_equals_ground_truth(args, server):
    """kit measure --json on the hook-bands session: the tokens equal what the server sent
    (every main-thread call once), and the session is priced."""
    w, script, events = hook_session(args, server, "measure", "bands", model="claude-opus-4-6")
    calls = served(script, kinds=("turn", "extra"))
    truth = {
        "input": sum(c["usage"]["input_tokens"] for c in calls),
        "output": sum(c["usage"]["output_tokens"] for c in calls),
        "cache_read": sum(c["usage"]["cache_read_input_tokens"] for c in calls),
        "cache_write": sum(c["usage"]["cache_creation_input_tokens"] for c in calls),
    }
    doc = measure_sessions(w, w.claude_dir / "projects")
    ss = sessions_of(doc)
    expect(len(ss) == 1, f"kit measure found {len(ss)} sessions, want 1")
    got = totals(ss[0])
    expect(got == truth, f"kit measure {got} != served {truth}")


@check
def measure_default_model_priced(args, server):
    """A claude-opus-4-8[1m] (default model) session: kit measure prices it (not unpriced, not
    $0), at the price table's claude-opus-4-8 rate."""
    w, script, events = hook_session(args, server, "price", "big-context")
    doc = measure_sessions(w, w.claude_dir / "projects")
    ss = sessions_of(doc)
    expect(len(ss) == 1, f"kit measure found {len(ss)} sessions, want 1")
    cost = find_number(ss[0], ("cost_usd", "cost"))
    text = json.dumps(ss[0])
    expect(cost and cost > 0 and "unpriced\": true" not in text and '"unpriced": [' not in text,
           f"the default-model session costs {cost!r} USD: {text[:300]}")


@check
def measure_codex_equals_ground_truth(args, server):
    """A codex exec session (one exec_command, then an answer): kit measure --json's tokens
    equal the usage the server sent."""
    w = World(args, server, "measure-codex")
    w.sample_project(longrun=False)
    script = server.load(Script(responses=[
        {"tool": {"name": "exec_command", "input": {"cmd": "ls"}},
         "usage": {"input": 1200, "cache_read": 3000, "output": 80, "reasoning": 40}},
        {"text": "Listed.", "usage": {"input": 150, "cache_read": 4200, "output": 20}},
    ]))
    r = w.run([str(w.bin / "codex"), "exec", "--json", "--skip-git-repo-check", "-"],
              input_="list the files")
    expect(r.returncode == 0, f"codex exec exited {r.returncode}: {last_lines(r.stderr)}")
    calls = served(script, api="responses", kinds=("turn",))
    inp = sum(c["usage"]["input_tokens"] for c in calls)
    cached = sum(c["usage"]["input_tokens_details"]["cached_tokens"] for c in calls)
    out = sum(c["usage"]["output_tokens"] for c in calls)
    doc = measure_sessions(w, w.codex_home / "sessions")
    ss = sessions_of(doc)
    expect(len(ss) == 1, f"kit measure found {len(ss)} sessions, want 1")
    got = totals(ss[0])
    truth_a = {"input": inp - cached, "output": out, "cache_read": cached, "cache_write": 0}
    truth_b = dict(truth_a, input=inp)
    expect(got in (truth_a, truth_b), f"kit measure {got} != served {truth_a} "
           f"(input counted with or without the cached part)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kit", required=True)
    ap.add_argument("--claude", required=True)
    ap.add_argument("--codex", required=True)
    ap.add_argument("--only", default="")
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    args.work = tempfile.mkdtemp(prefix="kit-real-agents-")
    only = [s.strip().replace("-", "_") for s in args.only.split(",") if s.strip()]
    server = MockServer(verbose=args.verbose)
    passed = failed = 0
    started = time.monotonic()
    for fn in CHECKS:
        name = fn.__name__
        if only and not any(o in name for o in only):
            continue
        label = name.replace("_", "-")
        t0 = time.monotonic()
        try:
            fn(args, server)
            passed += 1
            print(f"ok {label} ({time.monotonic() - t0:.1f}s)", flush=True)
        except CheckFailed as e:
            failed += 1
            print(f"FAIL {label}: {e}", flush=True)
        except subprocess.TimeoutExpired as e:
            failed += 1
            print(f"FAIL {label}: timed out: {' '.join(map(str, e.cmd))[:200]}", flush=True)
        except Exception as e:  # a broken check is a failure, with its cause
            failed += 1
            tb = traceback.format_exc().strip().splitlines()
            print(f"FAIL {label}: suite error {type(e).__name__}: {e} ({tb[-3].strip()})",
                  flush=True)
    server.stop()
    if passed + failed == 0:
        print(f"no check matches --only {args.only}", file=sys.stderr)
        return 2
    if args.keep:
        print(f"work folder kept: {args.work}", file=sys.stderr)
    else:
        shutil.rmtree(args.work, ignore_errors=True)
    print(f"suite time: {time.monotonic() - started:.0f}s", file=sys.stderr)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
