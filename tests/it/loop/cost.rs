//! The cost cap inside an iteration (issue 22): `fake:spend` and `fake-codex:spend` make 40 API
//! calls of $0.40 each in one call; kit prices each as it streams (Claude Code's `assistant`
//! events, Codex's rollout `token_count` records) and ends the agent's process group at the call
//! that reaches the cap, journals `cost_cap` and stops with exit 3 — within one API call of the
//! cap. Claude Code is given what is left as `--max-budget-usd`, and its own stop at that budget
//! ends the run the same way.

use super::*;

/// The calc project with the cost cap at $1.00 in config.toml.
fn capped_project() -> tempfile::TempDir {
    let d = project(false);
    write(d.path(), "longrun/config.toml", &format!("{CONFIG}\n[caps]\nmax_cost_usd = 1.0\n"));
    d
}

/// The run stopped at the cost cap inside iteration 1, within one API call of the cap, with
/// the agent ended by kit (SIGTERM to its group) before it finished its 40 calls.
fn assert_stopped_within_one_call(root: &Path, o: &Output, source: &str) {
    let out = text(o);
    assert_eq!(o.status.code(), Some(3), "{out}");
    let cap = events(root, "cost_cap").pop().unwrap_or_else(|| panic!("no cost_cap: {out}"));
    assert_eq!((cap["by"].as_str(), cap["iteration"].as_u64()), (Some("kit"), Some(1)), "{cap}");
    assert_eq!(cap["source"], source, "{cap}");
    let (used, limit) = (cap["used"].as_f64().unwrap(), cap["limit"].as_f64().unwrap());
    let at = &cap["at_stop"];
    let last = at["last_call_usd"].as_f64().unwrap();
    assert_eq!(limit, 1.0);
    assert!((last - 0.40).abs() < 0.001, "each call costs $0.40: {cap}");
    assert!(used >= limit && used <= limit + last + 1e-9, "within one call of the cap: {cap}");
    assert_eq!(at["api_calls"].as_u64(), Some(3), "{cap}");
    let end = events(root, "agent_end").pop().unwrap();
    assert_eq!(end["cost_capped"], true, "{end}");
    assert_eq!(end["signal"], 15, "ended by kit's SIGTERM, not by finishing: {end}");
    assert!((end["cost_usd"].as_f64().unwrap() - used).abs() < 1e-9, "{end}");
    let c = events(root, "cap").pop().unwrap();
    assert_eq!((c["which"].as_str(), c["used"].as_f64()), (Some("cost"), Some(used)), "{c}");
    assert!(events(root, "criteria").is_empty(), "no criteria run past the cap: {out}");
    assert!(
        out.contains("iteration 1: agent stopped at the cost cap after "),
        "the loop says so: {out}"
    );
    assert!(last_line(o).starts_with("cap: cost cap reached (cost $1.20 of $1.00)"), "{out}");
    // kit status names the cap and what was spent.
    let s = kit(root).arg("status").output().unwrap();
    let st = text(&s);
    assert!(st.contains("needs you: cost cap reached (cost $1.20 of $1.00)"), "{st}");
    assert!(st.contains("iteration 1: stopped at the cost cap by kit: $1.20 of $1.00 after 3 API calls (the last $0.40)"), "{st}");
}

#[test]
fn a_claude_stream_that_spends_past_the_cap_in_one_iteration_stops_within_one_api_call() {
    let d = capped_project();
    let o = kit_loop(d.path(), &["--agent", "fake:spend"]);
    assert_stopped_within_one_call(d.path(), &o, "stream");
    // The fake never reached its `result`: kit ended it mid-stream.
    let log = read(d.path(), "longrun/.runs/001.log");
    assert!(!log.contains(r#""type":"result""#), "{log}");
}

#[test]
fn a_codex_stream_that_spends_past_the_cap_in_one_iteration_stops_within_one_api_call() {
    let d = capped_project();
    let o = kit(d.path())
        .env("CODEX_HOME", d.path().join(".home/codex"))
        .args(["loop", "--agent", "fake-codex:spend"])
        .output()
        .unwrap();
    assert_stopped_within_one_call(d.path(), &o, "rollout");
    let log = read(d.path(), "longrun/.runs/001.log");
    assert!(!log.contains("turn.completed"), "{log}");
    let end = events(d.path(), "agent_end").pop().unwrap();
    assert_eq!(end["usage"]["model"], "gpt-5.3-codex", "{end}");
}

/// A stand-in `claude` on PATH: records its argv and ends as Claude Code 2.1.197 does at
/// `--max-budget-usd` (a `result` of subtype `error_max_budget_usd`), after one API call.
const BUDGET_CLAUDE: &str = r#"#!/bin/sh
echo "$@" > claude-args.txt
cat > /dev/null
echo '{"type":"system","subtype":"init","model":"claude-sonnet-4-5-20250929","session_id":"s1"}'
echo '{"type":"assistant","message":{"id":"msg_1","model":"claude-sonnet-4-5-20250929","usage":{"input_tokens":10,"cache_creation_input_tokens":2000,"cache_read_input_tokens":12800,"output_tokens":100}},"session_id":"s1"}'
echo '{"type":"result","subtype":"error_max_budget_usd","is_error":true,"num_turns":1,"session_id":"s1","total_cost_usd":0.0133,"usage":{"input_tokens":10,"cache_creation_input_tokens":2000,"cache_read_input_tokens":12800,"output_tokens":100},"modelUsage":{},"permission_denials":[],"errors":[]}'
"#;

#[test]
fn claude_code_gets_the_remaining_budget_and_its_own_stop_there_ends_the_run() {
    use std::os::unix::fs::PermissionsExt;
    let d = project(false);
    let root = d.path();
    write(root, "bin/claude", BUDGET_CLAUDE);
    std::fs::set_permissions(root.join("bin/claude"), std::fs::Permissions::from_mode(0o755))
        .unwrap();
    write(
        root,
        "longrun/config.toml",
        &format!("{CONFIG}\n[caps]\nmax_cost_usd = 2.5\n\n[agent]\ncommand = \"claude\"\n"),
    );
    let path = format!("{}:{}", root.join("bin").display(), std::env::var("PATH").unwrap());
    let o = kit(root).arg("loop").env("PATH", path).output().unwrap();
    let out = text(&o);
    assert_eq!(o.status.code(), Some(3), "{out}");
    let args = read(root, "claude-args.txt");
    assert!(args.trim_end().ends_with("--max-budget-usd 2.50"), "{args}");
    let cap = events(root, "cost_cap").pop().unwrap_or_else(|| panic!("no cost_cap: {out}"));
    assert_eq!(cap["by"], "claude", "{cap}");
    assert!(
        out.contains("Claude Code stopped itself at --max-budget-usd after 1 API call"),
        "{out}"
    );
    assert!(last_line(&o).starts_with("cap: cost cap reached (cost $0.01 of $2.50)"), "{out}");
}
