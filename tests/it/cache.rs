//! `kit cache`: the idle-time arithmetic of DESIGN §10 from the command line and from real
//! transcripts.

use crate::hook::samples;
use crate::util::kit;

fn run(args: &[&str]) -> (i32, String) {
    let d = tempfile::tempdir().unwrap();
    let o = kit(d.path()).args(args).output().unwrap();
    let mut text = String::from_utf8_lossy(&o.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&o.stderr));
    (o.status.code().unwrap_or(-1), text)
}

#[test]
fn worked_check_opus_150k_idle_2h() {
    let (code, out) =
        run(&["cache", "--model", "claude-opus-4-6", "--context", "150000", "--idle", "2h"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(
            "resend the context          150,000 tokens × $6.25/M (5m cache write)  $0.9375"
        ),
        "{out}"
    );
    assert!(
        out.contains(
            "clean start from handoff     25,000 tokens × $6.25/M (5m cache write)  $0.1563"
        ),
        "{out}"
    );
    assert!(out.contains("clean start is cheaper by $0.7813 (83% less than resending)"), "{out}");
}

#[test]
fn a_warm_cache_makes_resending_cheaper() {
    let (code, out) = run(&[
        "cache",
        "--model",
        "claude-opus-4-6",
        "--context",
        "150000",
        "--idle",
        "3m",
        "--handoff",
        "30000",
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("(cache read)  $0.0750"), "{out}");
    assert!(out.contains("resending is cheaper by $0.1125"), "{out}");
    let (_, out) = run(&[
        "cache",
        "--model",
        "claude-opus-4-6",
        "--context",
        "150000",
        "--idle",
        "30m",
        "--ttl",
        "1h",
    ]);
    assert!(out.contains("warm"), "{out}");
}

#[test]
fn the_idle_gap_of_a_real_transcript() {
    // spotter 4d5611e5 L261–L300: the last call before the 4 h gap is at 16:08:00Z;
    // the next prompt comes at 20:19:00Z.
    let path =
        samples().join("spotter_4d5611e5-241a-462a-8d15-5122611a9569.L261-L300.excerpt.jsonl");
    let src = std::fs::read_to_string(&path).unwrap();
    let cut: Vec<&str> = src.lines().take_while(|l| !l.contains("20:19:0")).collect();
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("before-gap.jsonl");
    std::fs::write(&t, cut.join("\n") + "\n").unwrap();
    let o = kit(d.path())
        .args(["cache", "--transcript", t.to_str().unwrap(), "--at", "2026-02-12T20:19:00Z"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.starts_with("claude-opus-4-6 · "), "{out}");
    assert!(out.contains("idle 4h10m"), "{out}");
    assert!(out.contains("clean start is cheaper"), "{out}");
}

#[test]
fn at_picks_the_last_call_at_or_before_the_time() {
    // QA F4: on the whole excerpt (calls at 16:07:54, 16:08:00, then 20:19:04…), `--at 20:19:00`
    // is about the return after the gap: the call before it is 16:08:00 (81,960 tokens), not
    // the file's last call (which would read as idle 0s, warm).
    let path =
        samples().join("spotter_4d5611e5-241a-462a-8d15-5122611a9569.L261-L300.excerpt.jsonl");
    let p = path.to_str().unwrap();
    let (code, out) = run(&["cache", "--transcript", p, "--at", "2026-02-12T20:19:00Z"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("claude-opus-4-6 · 81,960 tokens of context · idle 4h10m"), "{out}");
    assert!(out.contains("from the last API call 2026-02-12T16:08:00Z"), "{out}");
    assert!(out.contains("$0.5123") && out.contains("clean start is cheaper"), "{out}");
    // Exactly at a call's time: that call counts.
    let (code, out) = run(&["cache", "--transcript", p, "--at", "2026-02-12T16:08:00.5Z"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("from the last API call 2026-02-12T16:08:00Z"), "{out}");
    // Before the first call: an error, not "idle 0s, warm".
    let (code, out) = run(&["cache", "--transcript", p, "--at", "2020-01-01T00:00:00Z"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("no main-chain API call with usage at or before --at 2020-01-01T00:00:00Z"),
        "{out}"
    );
    assert!(out.contains("next: "), "{out}");
}

#[test]
fn an_unreadable_or_foreign_transcript_exits_2_with_the_next_step() {
    // QA F12: a missing file was an I/O error (exit 1, no next step).
    let (code, out) = run(&["cache", "--transcript", "/nonexistent/t.jsonl"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("/nonexistent/t.jsonl: no such transcript"), "{out}");
    assert!(
        out.contains("next: kit measure lists the sessions; then kit cache --session ID"),
        "{out}"
    );
    let codex = samples().join("../codex/codexhud__rollout-session.jsonl");
    let (code, out) = run(&["cache", "--transcript", codex.to_str().unwrap()]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("a Codex rollout: kit cache reads Claude Code transcripts only"), "{out}");
}

#[test]
fn bad_arguments_say_what_to_do() {
    let (code, out) =
        run(&["cache", "--model", "gpt-unknown-9", "--context", "1000", "--idle", "1h"]);
    assert_eq!(code, 2);
    assert!(out.contains("model `gpt-unknown-9` is not in the price table"), "{out}");
    let (code, out) = run(&["cache", "--model", "claude-opus-4-6", "--context", "1000"]);
    assert_eq!(code, 2);
    assert!(
        out.contains("next: kit cache --model claude-opus-4-6 --context 150000 --idle 2h"),
        "{out}"
    );
    let (code, out) = run(&[
        "cache",
        "--model",
        "claude-opus-4-6",
        "--context",
        "1000",
        "--idle",
        "1h",
        "--ttl",
        "10m",
    ]);
    assert_eq!(code, 2);
    assert!(out.contains("cache TTL `10m` is not 5m or 1h"), "{out}");
}

#[test]
fn a_transcript_that_writes_the_1h_cache_stays_warm_for_an_hour() {
    // spotter_tool_heavy writes 1-hour cache only; its last call (27,666 tokens) is at
    // 22:59:37.598Z.
    let t = samples().join("spotter_tool_heavy.jsonl");
    let t = t.to_str().unwrap();
    let (code, out) = run(&["cache", "--transcript", t, "--at", "2026-02-10T23:30:00Z"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.starts_with("claude-opus-4-6 · 27,666 tokens of context · idle 30m22s · cache TTL 1h"),
        "{out}"
    );
    assert!(out.contains("warm: at 30m22s the context is still cached"), "{out}");
    let (_, out) = run(&["cache", "--transcript", t, "--at", "2026-02-11T01:00:00Z"]);
    assert!(out.contains("(1h cache write)"), "{out}");
    let (_, out) =
        run(&["cache", "--transcript", t, "--at", "2026-02-11T01:00:00Z", "--ttl", "5m"]);
    assert!(out.contains("(5m cache write)"), "--ttl overrides the transcript's: {out}");
}

#[test]
fn a_session_is_found_by_id_prefix_under_the_claude_roots() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join(".home/.claude/projects/-work-app");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(
        samples().join("spotter_tool_heavy.jsonl"),
        dir.join("9f1c2d3e-0000-4000-8000-000000000000.jsonl"),
    )
    .unwrap();
    let o = kit(d.path())
        .args(["cache", "--session", "9f1c2d3e", "--at", "2026-02-11T01:00:00Z"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.contains("from the last API call 2026-02-10T22:59:37Z in"), "{out}");
    let o = kit(d.path()).args(["cache", "--session", "0000"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no transcript of session `0000`"));
}
