//! Usage limits in `kit loop` (issue 13): a limited iteration is waited out on the kit clock
//! (virtual under KIT_FAKE_CLOCK) and retried under its number; a crash is a failed iteration.

use super::*;

/// A fake-agent scenario for the calc project: call 1 as `first`, call 2 fixes `calc.py`.
fn scenario(root: &Path, first: &str) {
    let fix = "[[call]]\nwhen = \"2\"\n\n[[call.step]]\ndo = \"write\"\npath = \"calc.py\"\ncontent = '''def add(a, b):\n    return a + b\n'''\n";
    write(
        root,
        "agent.toml",
        &format!("description = \"limit test\"\n\n[[call]]\nwhen = \"1\"\n\n[[call.step]]\ndo = \"print\"\ntext = \"Looking.\"\n\n{first}\n{fix}"),
    );
}

/// `agent.sh`, a shell agent whose first `limited` calls print `result` (a Claude Code result
/// line) and exit 1, and whose next call fixes calc.py; it counts its calls in `.git/kit-calls`.
fn limited_agent(root: &Path, limited: u32, result: &str) {
    write(
        root,
        "agent.sh",
        &format!(
            "n=$(cat .git/kit-calls 2>/dev/null || echo 0); n=$((n+1)); echo $n > .git/kit-calls\n\
             if [ $n -le {limited} ]; then\n  echo '{result}'\n  exit 1\nfi\nprintf '{}' > calc.py\n",
            CALC_FIXED.replace('\n', "\\n")
        ),
    );
}

fn fake_clock_loop(root: &Path, args: &[&str]) -> Output {
    kit(root).env("KIT_FAKE_CLOCK", "2026-10-01T01:06:00Z").arg("loop").args(args).output().unwrap()
}

#[test]
fn a_usage_limited_iteration_is_waited_out_and_retried_under_its_number() {
    let d = project(false);
    let root = d.path();
    scenario(root, "[[call.step]]\ndo = \"limit\"\nreset_minutes = 124\n");
    let o = fake_clock_loop(root, &["--agent", "fake:agent.toml"]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains(
            "loop: usage limit reached; waiting until 03:10 UTC (2h 5m), bounded by the wall cap"
        ),
        "{out}"
    );
    let wait = events(root, "limit_wait");
    assert_eq!(wait.len(), 1, "{out}");
    let w = &wait[0];
    assert_eq!(
        (w["iteration"].as_u64(), w["kind"].as_str(), w["agent"].as_str()),
        (Some(1), Some("usage"), Some("fake"))
    );
    assert_eq!(w["until"], "2026-10-01T03:10:00Z");
    assert!(w["message"].as_str().unwrap().contains("You've hit your limit · resets 3:10am (UTC)"));
    let resume = events(root, "limit_resume");
    assert_eq!(resume.len(), 1);
    assert_eq!(resume[0]["waited_s"], w["wait_s"]);
    assert!(resume[0]["cut_short"].is_null());
    // The retry has the same number; the limited run counted as no iteration.
    let starts: Vec<u64> =
        events(root, "iteration_start").iter().map(|e| e["iteration"].as_u64().unwrap()).collect();
    assert_eq!(starts, [1, 1]);
    let criteria = events(root, "criteria");
    assert_eq!(criteria.len(), 1, "no criteria ran after the limited call");
    assert_eq!(criteria[0]["no_progress"], 0);
    let end = &events(root, "loop_end")[0];
    assert_eq!(
        (end["outcome"].as_str(), end["iterations"].as_u64(), end["run_iterations"].as_u64()),
        (Some("done"), Some(1), Some(1))
    );
    // The virtual wait counts as the run's wall time.
    assert!(end["wall_s"].as_f64().unwrap() >= 2.0 * 3600.0, "{end}");
}

#[test]
fn a_reset_after_the_wall_cap_stops_the_run_at_the_cap_saying_so() {
    let d = project(false);
    let root = d.path();
    scenario(root, "[[call.step]]\ndo = \"limit\"\nreset_minutes = 124\n");
    let o = fake_clock_loop(root, &["--agent", "fake:agent.toml", "--max-wall", "1h"]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(3), "{out}");
    assert!(out.contains("it resets at 03:10 UTC, after the wall cap ends"), "{out}");
    assert!(last_line(&o).contains("wall cap reached"), "{out}");
    assert!(
        last_line(&o).contains("the usage limit resets at 03:10 UTC, after the wall cap ends"),
        "{out}"
    );
    assert_eq!(events(root, "limit_resume")[0]["cut_short"], "wall");
    assert_eq!(events(root, "cap")[0]["which"], "wall");
    assert!(events(root, "criteria").is_empty());
}

#[test]
fn a_crash_mid_stream_is_a_failed_iteration_not_a_limit() {
    let d = project(false);
    let root = d.path();
    scenario(root, "[[call.step]]\ndo = \"crash\"\nsignal = 9\n");
    let o = fake_clock_loop(root, &["--agent", "fake:agent.toml"]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(events(root, "limit_wait").is_empty(), "{out}");
    let ends = events(root, "agent_end");
    assert_eq!(ends[0]["signal"], 9, "{out}");
    let criteria = events(root, "criteria");
    let iters: Vec<u64> = criteria.iter().map(|e| e["iteration"].as_u64().unwrap()).collect();
    assert_eq!(iters, [1, 2], "{out}");
    assert!(criteria[0]["passed"].as_u64() < criteria[0]["total"].as_u64());
}

/// The backoff streak is the run's, not the loop process's: a loop that stopped during a
/// backoff (here at the wall cap; a kill or `--ensure-alive` restart continues the run the same
/// way) is followed by one that backs off twice as long on the next limit without a reset time.
#[test]
fn a_continued_run_goes_on_with_the_backoff_streak_of_the_loop_before() {
    let d = project(false);
    let root = d.path();
    // Calls 1 and 2 meet a rate limit without a reset time; call 3 fixes calc.py.
    limited_agent(
        root,
        2,
        r#"{"type":"result","subtype":"success","is_error":true,"result":"API Error: Rate limit reached"}"#,
    );
    let first = fake_clock_loop(root, &["--agent", "sh ./agent.sh", "--max-wall", "30s"]);
    let out = text(&first);
    assert_eq!(first.status.code(), Some(3), "{out}");
    let waits = events(root, "limit_wait");
    assert_eq!(waits.len(), 1, "{out}");
    assert_eq!(
        (waits[0]["kind"].as_str(), waits[0]["backoff"].as_bool()),
        (Some("rate"), Some(true))
    );
    assert_eq!(events(root, "limit_resume")[0]["cut_short"], "wall", "{out}");

    let second = fake_clock_loop(root, &["--agent", "sh ./agent.sh", "--max-wall", "1h"]);
    let out = text(&second);
    assert_eq!(second.status.code(), Some(0), "{out}");
    assert!(out.contains("loop: continuing run 1"), "{out}");
    let waits = events(root, "limit_wait");
    assert_eq!(waits.len(), 2, "{out}");
    // backoff(2) = 2 minutes: the second limit in a row, though the first loop process met the first.
    assert_eq!(waits[1]["wait_s"], 120, "{out}");
    assert!(out.contains("backing off 2m"), "{out}");
    let end = events(root, "loop_end").pop().unwrap();
    assert_eq!((end["outcome"].as_str(), end["run_iterations"].as_u64()), (Some("done"), Some(1)));
}

/// `kit loop --agent fake-codex:agent.toml` under the fake clock, with the rollouts in the
/// sandbox's `CODEX_HOME`.
fn fake_codex_loop(root: &Path) -> Output {
    kit(root)
        .env("KIT_FAKE_CLOCK", "2026-10-01T01:06:00Z")
        .env("CODEX_HOME", root.join(".home/codex"))
        .args(["loop", "--agent", "fake-codex:agent.toml"])
        .output()
        .unwrap()
}

#[test]
fn a_codex_usage_limit_waits_until_the_reset_its_rollout_gives() {
    let d = project(false);
    let root = d.path();
    scenario(root, "[[call.step]]\ndo = \"limit\"\nreset_minutes = 124\n");
    let o = fake_codex_loop(root);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    let wait = events(root, "limit_wait");
    assert_eq!(wait.len(), 1, "{out}");
    let w = &wait[0];
    assert_eq!(
        (w["iteration"].as_u64(), w["kind"].as_str(), w["agent"].as_str()),
        (Some(1), Some("usage"), Some("fake-codex"))
    );
    assert_eq!(w["until"], "2026-10-01T03:10:00Z", "{out}");
    // Codex's text has no time ("try again later"): the reset is the rollout's, 03:10 UTC.
    let message = w["message"].as_str().unwrap();
    assert!(message.starts_with("You've hit your usage limit."), "{w}");
    assert!(message.ends_with("or try again later."), "{w}");
    let resume = events(root, "limit_resume");
    assert_eq!(resume.len(), 1, "{out}");
    assert_eq!(resume[0]["waited_s"], w["wait_s"]);
    let starts: Vec<u64> =
        events(root, "iteration_start").iter().map(|e| e["iteration"].as_u64().unwrap()).collect();
    assert_eq!(starts, [1, 1], "{out}");
    let end = &events(root, "loop_end")[0];
    assert_eq!(
        (end["outcome"].as_str(), end["iterations"].as_u64()),
        (Some("done"), Some(1)),
        "{out}"
    );
    assert!(end["wall_s"].as_f64().unwrap() >= 2.0 * 3600.0, "{end}");
}

#[test]
fn a_codex_crash_mid_stream_is_a_failed_iteration_not_a_limit() {
    let d = project(false);
    let root = d.path();
    scenario(root, "[[call.step]]\ndo = \"crash\"\nsignal = 9\n");
    let o = fake_codex_loop(root);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(events(root, "limit_wait").is_empty(), "{out}");
    let log = read(root, "longrun/.runs/001.log");
    assert!(log.contains(r#""type":"thread.started""#), "{log}");
    assert!(!log.contains("turn.completed") && !log.contains("turn.failed"), "{log}");
    assert_eq!(events(root, "agent_end")[0]["signal"], 9, "{out}");
    let iters: Vec<u64> =
        events(root, "criteria").iter().map(|e| e["iteration"].as_u64().unwrap()).collect();
    assert_eq!(iters, [1, 2], "{out}");
}

/// A loop that stops while it waits out a usage limit (here at the wall cap; a kill, a reboot or
/// Ctrl-C leave the run the same way) is followed by one that waits out the rest of the recorded
/// reset before the agent runs again, and retries the iteration under its own number.
#[test]
fn a_continued_run_waits_out_the_rest_of_the_reset_before_retrying_the_same_iteration() {
    let d = project(false);
    let root = d.path();
    // Call 1 meets the usage limit (reset 03:10 UTC, as a unix time after the bar); call 2 fixes.
    limited_agent(
        root,
        1,
        r#"{"type":"result","subtype":"success","is_error":true,"result":"Claude AI usage limit reached|1790824200"}"#,
    );
    let first = fake_clock_loop(root, &["--agent", "sh ./agent.sh", "--max-wall", "30m"]);
    let out = text(&first);
    assert_eq!(first.status.code(), Some(3), "{out}");
    assert_eq!(events(root, "limit_resume")[0]["cut_short"], "wall", "{out}");

    let second = fake_clock_loop(root, &["--agent", "sh ./agent.sh", "--max-wall", "4h"]);
    let out = text(&second);
    assert_eq!(second.status.code(), Some(0), "{out}");
    assert!(out.contains("loop: continuing run 1"), "{out}");
    assert!(
        out.contains(
            "the run's last loop stopped while waiting for the usage limit until 03:10 UTC; \
             waiting out the rest before iteration 1"
        ),
        "{out}"
    );
    let waits = events(root, "limit_wait");
    assert_eq!(waits.len(), 2, "{out}");
    assert_eq!(waits[1]["until"], "2026-10-01T03:10:00Z");
    // Only two agent calls in all: the limited one and the retry, both iteration 1.
    assert_eq!(std::fs::read_to_string(root.join(".git/kit-calls")).unwrap().trim(), "2");
    let starts: Vec<u64> =
        events(root, "iteration_start").iter().map(|e| e["iteration"].as_u64().unwrap()).collect();
    assert_eq!(starts, [1, 1], "{out}");
    let end = events(root, "loop_end").pop().unwrap();
    assert_eq!(end["outcome"], "done", "{out}");
}
