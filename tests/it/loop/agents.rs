//! How kit starts the real agents (issue 12), with stand-ins: Claude Code's
//! `permission_denials` — a shell agent prints the `result` event Claude
//! Code 2.1.197 prints when a Bash call was denied, changing nothing; the loop journals the
//! denials, passes them to no further iteration (it stops at once, exit 3) and names the exact
//! config.toml setting that allows them; `kit status` shows them in one line. `kit doctor` on the
//! configured agent's version and permission set-up. A stand-in `codex` on PATH: its sandbox
//! flag, its model read from the rollout, its errors, and an unknown model flagged unpriced.

use super::*;
use serde_json::json;

/// The stream-json lines of a `claude -p` run in which Bash `npm install left-pad` was denied
/// (shape of Claude Code 2.1.197, real-clis.md §2–3).
const DENIED: &str = r#"{"type":"system","subtype":"init","model":"claude-sonnet-4-5-20250929","permissionMode":"acceptEdits"}
{"type":"result","subtype":"success","is_error":false,"num_turns":2,"result":"I could not run npm.","session_id":"s1","total_cost_usd":0.01,"usage":{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":20,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0}},"modelUsage":{},"permission_denials":[{"tool_name":"Bash","tool_use_id":"toolu_01","tool_input":{"command":"npm install left-pad","description":"install"}}],"terminal_reason":"completed"}
"#;

#[test]
fn an_iteration_that_only_met_denials_stops_the_loop_naming_the_setting() {
    let d = project(false);
    write(d.path(), "denied.jsonl", DENIED);
    write(d.path(), "agent.sh", "cat denied.jsonl\n");
    let o = kit_loop(d.path(), &["--agent", "sh ./agent.sh"]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let setting = r#"add allowed_tools = ["Bash(npm install:*)"] under [agent] in longrun/config.toml (or permissions = "skip" to allow everything)"#;
    assert_eq!(
        last_line(&o),
        format!(
            "denied: iteration 1 changed nothing and Claude Code denied 1 tool call (Bash(npm install:*)); next: {setting}, then kit loop"
        )
    );
    let ev = events(d.path(), "permission_denials");
    assert_eq!(ev.len(), 1, "{}", text(&o));
    assert_eq!(ev[0]["iteration"], 1);
    assert_eq!(ev[0]["setting"], "agent.allowed_tools");
    assert_eq!(ev[0]["denials"][0]["tool_name"], "Bash");
    assert!(ev[0]["denials"][0]["tool_input"].as_str().unwrap().contains("npm install left-pad"));
    let end = events(d.path(), "loop_end").pop().unwrap();
    assert_eq!((end["outcome"].as_str(), end["exit"].as_u64()), (Some("denied"), Some(3)));
    // The criteria were not run again for nothing.
    assert!(events(d.path(), "criteria").is_empty());
    let status = kit(d.path()).arg("status").output().unwrap();
    let st = String::from_utf8_lossy(&status.stdout);
    assert!(
        st.lines()
            .any(|l| l
                .starts_with("agent: iteration 1: 1 tool call denied (Bash); add allowed_tools")),
        "{st}"
    );
}

#[test]
fn denials_alongside_real_work_go_to_the_next_prompt() {
    let d = project(false);
    write(d.path(), "denied.jsonl", DENIED);
    // Iteration 1 does part of the work (a new file: the tree changed) and meets a denial;
    // iteration 2 fixes the code.
    write(
        d.path(),
        "agent.sh",
        "if [ \"$KIT_ITERATION\" = 1 ]; then echo note > notes.txt; cat denied.jsonl; else sed -i 's/a - b/a + b/' calc.py; fi\n",
    );
    let o = kit_loop(d.path(), &["--agent", "sh ./agent.sh"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let prompt = read(d.path(), "longrun/.runs/002.prompt.md");
    assert!(prompt.contains("# Tool calls denied last time"), "{prompt}");
    assert!(prompt.contains("- Bash: {\"command\":\"npm install left-pad\""), "{prompt}");
    assert!(!read(d.path(), "longrun/.runs/001.prompt.md").contains("Tool calls denied"));
}

#[test]
fn doctor_prints_the_configured_agents_version_and_what_it_may_do() {
    let d = project(false);
    write(d.path(), "bin/claude", "#!/bin/sh\necho '2.1.197 (Claude Code)'\n");
    write(d.path(), "bin/codex", "#!/bin/sh\necho 'codex-cli 0.171.0'\n");
    for b in ["bin/claude", "bin/codex"] {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(d.path().join(b), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path =
        format!("{}:{}", d.path().join("bin").display(), std::env::var("PATH").unwrap_or_default());
    let doctor = |config: &str| {
        write(d.path(), "longrun/config.toml", &format!("{CONFIG}\n[agent]\n{config}"));
        let o = kit(d.path()).arg("doctor").env("PATH", &path).output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let out = doctor("command = \"claude\"\nallowed_tools = [\"Bash(npm install:*)\"]\n");
    assert!(out.contains("  version: 2.1.197 (Claude Code)"), "{out}");
    assert!(out.contains("acceptEdits"), "{out}");
    assert!(out.contains("Bash(python3 -m unittest:*)"), "{out}");
    assert!(out.contains("Bash(npm install:*)"), "{out}");
    assert!(out.contains("widen it with [agent] allowed_tools in longrun/config.toml"), "{out}");
    assert!(out.contains("--setting-sources project,local"), "{out}");
    let out = doctor("command = \"claude\"\npermissions = \"skip\"\n");
    assert!(out.contains("--dangerously-skip-permissions"), "{out}");
    let out = doctor("command = \"codex\"\n");
    assert!(out.contains("  version: codex-cli 0.171.0"), "{out}");
    assert!(out.contains("codex exec --json --sandbox workspace-write -"), "{out}");
}

/// A stand-in `codex` on PATH: records its argv, fixes the code, writes the rollout Codex 0.171
/// writes (the model in `turn_context`) unless `NO_ROLLOUT` exists, and prints the `--json`
/// stream, which never names the model, with an `error` item.
const FAKE_CODEX: &str = r#"#!/bin/sh
echo "$@" > codex-args.txt
cat > /dev/null
sed -i 's/a - b/a + b/' calc.py
tid=019a7c1e-3c5d-7f00-9e2b-1c0ffee00001
if [ ! -e NO_ROLLOUT ]; then
  mkdir -p "$CODEX_HOME/sessions/2026/12/01"
  printf '%s\n' '{"type":"session_meta","payload":{"id":"'$tid'","originator":"codex_exec","cli_version":"0.171.0"}}' '{"type":"turn_context","payload":{"cwd":"/r","model":"gpt-5.3-codex"}}' > "$CODEX_HOME/sessions/2026/12/01/rollout-2026-12-01T10-00-00-$tid.jsonl"
fi
echo '{"type":"thread.started","thread_id":"'$tid'"}'
echo '{"type":"turn.started"}'
echo '{"type":"item.completed","item":{"id":"item_1","type":"error","message":"command timed out: pip install"}}'
echo '{"type":"turn.completed","usage":{"input_tokens":100000,"cached_input_tokens":40000,"cache_write_input_tokens":0,"output_tokens":2000,"reasoning_output_tokens":500}}'
"#;

fn codex_loop(no_rollout: bool) -> (tempfile::TempDir, Output) {
    use std::os::unix::fs::PermissionsExt;
    let d = project(false);
    write(d.path(), "bin/codex", FAKE_CODEX);
    std::fs::set_permissions(d.path().join("bin/codex"), std::fs::Permissions::from_mode(0o755))
        .unwrap();
    if no_rollout {
        write(d.path(), "NO_ROLLOUT", "");
    }
    write(d.path(), "longrun/config.toml", &format!("{CONFIG}\n[agent]\ncommand = \"codex\"\n"));
    let path =
        format!("{}:{}", d.path().join("bin").display(), std::env::var("PATH").unwrap_or_default());
    let o = kit(d.path())
        .arg("loop")
        .env("PATH", path)
        .env("CODEX_HOME", d.path().join(".home/codex"))
        .output()
        .unwrap();
    (d, o)
}

#[test]
fn codex_runs_in_a_workspace_write_sandbox_and_is_priced_from_its_rollout() {
    let (d, o) = codex_loop(false);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(read(d.path(), "codex-args.txt").trim(), "exec --json --sandbox workspace-write -");
    let end = events(d.path(), "agent_end").pop().unwrap();
    assert_eq!(end["usage"]["model"], "gpt-5.3-codex", "{end}");
    assert_eq!(end["errors"][0], "command timed out: pip install");
    // gpt-5.3-codex: $1.75 in, $0.175 cached, $14 out per million.
    let want = (60000.0 * 1.75 + 40000.0 * 0.175 + 2000.0 * 14.0) / 1e6;
    assert!((end["cost_usd"].as_f64().unwrap() - want).abs() < 1e-9, "{end}");
    assert!(events(d.path(), "unpriced").is_empty());
    assert!(text(&o).contains("; codex: command timed out: pip install"), "{}", text(&o));
    assert!(text(&o).contains("loop: Codex runs with --sandbox workspace-write"), "{}", text(&o));
}

#[test]
fn a_codex_iteration_with_no_known_model_is_flagged_unpriced_never_a_silent_zero() {
    let (d, o) = codex_loop(true);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let un = events(d.path(), "unpriced");
    assert_eq!(un.len(), 1, "{}", text(&o));
    assert_eq!(un[0]["models"][0], "(no model reported)");
    assert!(text(&o).contains("so the cost cap cannot be trusted"), "{}", text(&o));
    let status = kit(d.path()).arg("status").output().unwrap();
    let st = String::from_utf8_lossy(&status.stdout);
    assert!(
        st.contains("agent: unpriced: (no model reported) (the cost cap cannot be trusted"),
        "{st}"
    );
}

/// A fake Claude Code on the 1M window: `claude-opus-4-6[1m]` is named in `system/init` only,
/// as Claude Code names the default model; transcript lines carry the bare id, and SessionStart
/// stdin names no model. The first step waits (bounded) until the hook state holds the model,
/// as the first API call's latency does for the real agent; the context then reaches 150,300
/// tokens (90 % of the 200k window's 167,000: a wrap-up there) and 600,000 (60 % of 1M).
const ONE_M_SCENARIO: &str = r#"description = "A 1M-window session named in system/init only."
model = "claude-opus-4-6[1m]"

[[call]]
when = "*"

[[call.step]]
do = "run"
command = "for i in $(seq 600); do grep -qs 'opus-4-6\\[1m\\]' longrun/.hook/*.json && exit 0; sleep 0.05; done; exit 1"

[[call.step]]
do = "grow_context"
to_pct = 90
compaction_point = 167000

[[call.step]]
do = "hook"
event = "PostToolUse"

[[call.step]]
do = "grow_context"
to_pct = 60
compaction_point = 1000000

[[call.step]]
do = "hook"
event = "PostToolUse"

[[call.step]]
do = "patch"
path = "calc.py"
find = "a - b"
replace = "a + b"
"#;

#[test]
fn the_loop_gives_the_hook_the_model_of_system_init_and_its_1m_point() {
    let d = project(false);
    let root = d.path();
    write(root, "scenario.toml", ONE_M_SCENARIO);
    kit_ok(root, &["hook", "install"]);
    for args in [&["add", "-A"][..], &["commit", "-q", "-m", "1M scenario, hook"]] {
        let st = Command::new("git")
            .args(args)
            .current_dir(root)
            .envs(kit(root).get_envs().filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned()))))
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(st.success());
    }
    let o = kit_loop(root, &["--agent", "fake:scenario.toml", "--max-iterations", "1"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // The stream names the suffix in `system/init` only (the hook's stdin never does).
    let log: Vec<Value> = read(root, "longrun/.runs/001.log")
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let models = |ty: &str| -> Vec<String> {
        log.iter()
            .filter(|v| v["type"] == ty)
            .map(|v| {
                let m = if ty == "system" { &v["model"] } else { &v["message"]["model"] };
                m.as_str().unwrap_or("").to_string()
            })
            .collect()
    };
    assert_eq!(models("system"), ["claude-opus-4-6[1m]"]);
    assert!(
        models("assistant").iter().all(|m| m == "claude-opus-4-6"),
        "{:?}",
        models("assistant")
    );
    // Not told to wrap up at 150,300 tokens; the checkpoint at 60 % of the 1M point.
    let hooks: Vec<(String, Value, Value)> = events(root, "hook")
        .into_iter()
        .map(|e| {
            (e["action"].as_str().unwrap_or("").to_string(), e["band"].clone(), e["pct"].clone())
        })
        .collect();
    assert_eq!(hooks, [("checkpoint".to_string(), json!(50), json!(60.0))], "{}", text(&o));
    let state = std::fs::read_dir(root.join("longrun/.hook")).unwrap().next().unwrap().unwrap();
    let st: Value = serde_json::from_str(&std::fs::read_to_string(state.path()).unwrap()).unwrap();
    assert_eq!(st["model"], "claude-opus-4-6[1m]", "{st}");
    let point = (st["point"]["tokens"].as_u64(), st["point"]["window"].as_u64());
    assert_eq!(point, (Some(1_000_000), Some(1_000_000)), "{st}");
}

/// The fake agent as Codex (`fake-codex:SCENARIO`): its stream read as Codex's, the model from
/// the rollout it wrote, the iteration priced, and `kit measure` of that rollout agreeing.
#[test]
fn the_fake_codex_agent_is_priced_from_its_rollout_and_measured_alike() {
    let d = project(false);
    let root = d.path();
    write(
        root,
        "agent.toml",
        "description = \"fixes calc\"\n\n[[call]]\nwhen = \"1\"\n\n[[call.step]]\ndo = \"run\"\ncommand = \"python3 -m unittest discover -s tests 2>&1 | tail -n 1\"\n\n[[call.step]]\ndo = \"write\"\npath = \"calc.py\"\ncontent = '''def add(a, b):\n    return a + b\n'''\n\n[[call.step]]\ndo = \"print\"\ntext = \"Fixed add.\"\n",
    );
    let home = root.join(".home/codex");
    let o = kit(root)
        .env("KIT_FAKE_CLOCK", "2026-10-01T01:06:00Z")
        .env("CODEX_HOME", &home)
        .args(["loop", "--agent", "fake-codex:agent.toml"])
        .output()
        .unwrap();
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    let end = events(root, "loop_end").pop().unwrap();
    assert_eq!((end["outcome"].as_str(), end["iterations"].as_u64()), (Some("done"), Some(1)));
    let a = events(root, "agent_end").pop().unwrap();
    assert_eq!(a["usage"]["model"], "gpt-5.3-codex", "{a}");
    assert!(a["cost_usd"].as_f64().unwrap() > 0.0, "{a}");
    let log = read(root, "longrun/.runs/001.log");
    let kinds: Vec<String> = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|v| {
            let item = v["item"]["type"].as_str().map(|t| format!(":{t}")).unwrap_or_default();
            format!("{}{item}", v["type"].as_str().unwrap_or("?"))
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "thread.started",
            "turn.started",
            "item.started:command_execution",
            "item.completed:command_execution",
            "item.completed:file_change",
            "item.completed:agent_message",
            "turn.completed"
        ],
        "{log}"
    );
    // The rollout it wrote: found by the stream's thread id, measured as the stream says.
    let tid = log
        .lines()
        .find_map(|l| {
            serde_json::from_str::<Value>(l).ok().filter(|v| v["type"] == "thread.started")
        })
        .unwrap()["thread_id"]
        .as_str()
        .unwrap()
        .to_string();
    let rollout = kit_harness::looprun::agent::codex_rollout(&home, &tid).expect("rollout");
    let m = crate::measure::measure_json(root, &[rollout.to_str().unwrap()]);
    let s = &m["sessions"][0];
    assert_eq!(s["source"], "codex");
    assert_eq!(s["models"][0], "gpt-5.3-codex");
    let u = &a["usage"];
    for (k, want) in [
        ("input_tokens", "input_tokens"),
        ("cache_read_tokens", "cache_read_tokens"),
        ("output_tokens", "output_tokens"),
    ] {
        assert_eq!(s[k], u[want], "{k}: {s} vs {u}");
    }
    assert!((s["cost_usd"].as_f64().unwrap() - a["cost_usd"].as_f64().unwrap()).abs() < 1e-9);
}
