//! The fake agent (DESIGN §7) on the real rehearsal project: each scenario's effect on the tree,
//! the stream-json it prints, the Claude Code transcript it writes, and its determinism.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use kit_harness::longrun::event::name_of;
use serde_json::Value;

use crate::util::fake_agent_bin;

const CLOCK: &str = "2026-10-01T09:00:00Z";

/// A temporary folder with the sample project committed in `p/` and a HOME in `home/`.
struct Sandbox {
    _tmp: tempfile::TempDir,
    project: PathBuf,
    home: PathBuf,
}

fn sandbox() -> Sandbox {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let project = root.join("p");
    let home = root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    kit_course::rehearse::sample::write_sample_project(&project).unwrap();
    kit_course::rehearse::sample::commit_sample_project(&project, &git_env()).unwrap();
    Sandbox { _tmp: tmp, project, home }
}

fn git_env() -> Vec<(String, String)> {
    [
        ("GIT_AUTHOR_NAME", "t"),
        ("GIT_AUTHOR_EMAIL", "t@example.com"),
        ("GIT_COMMITTER_NAME", "t"),
        ("GIT_COMMITTER_EMAIL", "t@example.com"),
        ("GIT_AUTHOR_DATE", "2026-10-01T09:00:00+00:00"),
        ("GIT_COMMITTER_DATE", "2026-10-01T09:00:00+00:00"),
        ("GIT_CONFIG_GLOBAL", "/dev/null"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

impl Sandbox {
    /// `fake-agent --scenario S -p --output-format stream-json --verbose` as `kit loop` runs it.
    fn fake(&self, scenario: &str, iteration: Option<u64>) -> Command {
        let mut c = Command::new(fake_agent_bin());
        c.args(["--scenario", scenario, "-p", "--output-format", "stream-json", "--verbose"])
            .current_dir(&self.project)
            .env("HOME", &self.home)
            .env("CLAUDE_CONFIG_DIR", self.home.join(".claude"))
            .env("KIT_FAKE_CLOCK", CLOCK)
            .env_remove("KIT_FAKE_SCENARIO")
            .env_remove("KIT_FAKE_INVOCATION");
        if let Some(n) = iteration {
            c.env("KIT_FAKE_INVOCATION", n.to_string());
        }
        c
    }

    fn run(&self, scenario: &str, iteration: Option<u64>) -> Output {
        run_with_prompt(
            self.fake(scenario, iteration),
            "Make the criteria in longrun/goal.md pass.",
        )
    }

    fn unittest(&self) -> Output {
        Command::new("python3")
            .args(["-B", "-m", "unittest", "discover", "-s", "tests"])
            .current_dir(&self.project)
            .output()
            .unwrap()
    }

    fn transcripts(&self) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(self.home.join(".claude/projects"))
            .into_iter()
            .flatten()
            .flatten()
            .flat_map(|d| std::fs::read_dir(d.path()).unwrap().flatten().map(|f| f.path()))
            .collect();
        v.sort();
        v
    }

    /// Back to the committed tree, untracked files removed.
    fn reset(&self) {
        for args in [&["checkout", "-q", "--", "."][..], &["clean", "-fdq"][..]] {
            Command::new("git").args(args).current_dir(&self.project).status().unwrap();
        }
    }

    fn read(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.project.join(rel)).unwrap()
    }
}

fn run_with_prompt(mut c: Command, prompt: &str) -> Output {
    use std::io::Write;
    let mut child =
        c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    // An agent that fails early (a bad scenario) never reads its prompt: a broken pipe is fine.
    let _ = child.stdin.take().unwrap().write_all(prompt.as_bytes());
    child.wait_with_output().unwrap()
}

fn events(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
        .collect()
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

#[test]
fn finish_makes_all_14_tests_pass() {
    let sb = sandbox();
    let before = sb.unittest();
    assert!(!before.status.success());
    assert!(text(&before).contains("Ran 14 tests"));

    let out = sb.run("finish", Some(1));
    assert!(out.status.success(), "{}", text(&out));
    let after = sb.unittest();
    let t = text(&after);
    assert!(after.status.success(), "{t}");
    assert!(t.contains("Ran 14 tests") && t.trim_end().ends_with("OK"), "{t}");
    let bench = Command::new("python3")
        .args(["-B", "tools/bench_durations.py"])
        .current_dir(&sb.project)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&bench.stdout).starts_with("parsed=20000 cpu_ms="));
    // The frozen tests are untouched.
    assert_eq!(
        sb.read("tests/test_durations.py"),
        kit_course::rehearse::sample::original("tests/test_durations.py").unwrap()
    );
}

#[test]
fn cheat_weakens_a_test_on_call_1_and_does_the_work_on_call_2() {
    let sb = sandbox();
    let original = kit_course::rehearse::sample::original("tests/test_durations.py").unwrap();

    // Invocation numbers from the counter in .git, as when nothing sets KIT_FAKE_INVOCATION.
    assert!(sb.run("cheat", None).status.success());
    let weakened = String::from_utf8(sb.read("tests/test_durations.py")).unwrap();
    assert_ne!(weakened.as_bytes(), original);
    assert_eq!(weakened.matches("@unittest.skip(\"flaky\")").count(), 2);
    assert_eq!(
        std::fs::read_to_string(sb.project.join(".git/fake-agent-cheat.count")).unwrap(),
        "1 - 0\n"
    );

    // What kit loop does: put the frozen test back.
    std::fs::write(sb.project.join("tests/test_durations.py"), original).unwrap();
    assert!(!sb.unittest().status.success(), "the stub must not pass the real tests");

    let out = sb.run("cheat", None);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(sb.project.join(".git/fake-agent-cheat.count")).unwrap(),
        "2 - 0\n"
    );
    let t = text(&sb.unittest());
    assert!(t.contains("Ran 14 tests") && t.trim_end().ends_with("OK"), "{t}");
    assert_eq!(sb.read("tests/test_durations.py"), original);
}

#[test]
fn lie_claims_success_and_changes_nothing() {
    let sb = sandbox();
    let out = sb.run("lie", Some(3));
    assert!(out.status.success());
    let ev = events(&out);
    let result = ev.last().unwrap();
    assert_eq!(result["result"], "All done, every test passes!");
    let status = Command::new("git")
        .args(["status", "--porcelain"])
        .current_dir(&sb.project)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&status.stdout), "");
}

#[test]
fn stall_rewrites_only_its_notes() {
    let sb = sandbox();
    assert!(sb.run("stall", Some(2)).status.success());
    let progress = std::fs::read_to_string(sb.project.join("longrun/progress.md")).unwrap();
    assert!(progress.contains("Attempt 2:"), "{progress}");
    let status = Command::new("git")
        .args(["status", "--porcelain"])
        .current_dir(&sb.project)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&status.stdout), "?? longrun/\n");
    assert!(!sb.unittest().status.success());
}

#[test]
fn stream_json_starts_with_init_and_ends_with_a_result_with_usage_and_cost() {
    let sb = sandbox();
    let out = sb.run("finish", Some(1));
    let ev = events(&out);
    let init = &ev[0];
    assert_eq!((init["type"].as_str(), init["subtype"].as_str()), (Some("system"), Some("init")));
    assert_eq!(init["cwd"], sb.project.to_string_lossy().as_ref());
    assert_eq!(init["model"], "claude-sonnet-4-5-20250929");
    assert!(init["tools"].as_array().unwrap().iter().any(|t| t == "Edit"));
    let sid = init["session_id"].as_str().unwrap().to_string();

    assert!(ev.iter().any(|e| e["type"] == "assistant"));
    let result = ev.last().unwrap();
    assert_eq!(result["type"], "result");
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["is_error"], false);
    assert_eq!(result["session_id"], sid.as_str());
    let u = &result["usage"];
    for k in
        ["input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens"]
    {
        assert!(u[k].as_u64().unwrap() > 0, "{k}: {u}");
    }
    assert!(result["num_turns"].as_u64().unwrap() >= 3);
    let cost = result["total_cost_usd"].as_f64().unwrap();
    assert!(cost > 0.0);

    // The cost is the sum of the transcript's API calls, priced with kit's table.
    let t = sb.transcripts();
    assert_eq!(t.len(), 1);
    let mut seen = std::collections::HashSet::new();
    let mut sum = 0.0;
    let kit_transcript::prices::Lookup::Priced(price) =
        kit_transcript::prices::PriceTable::embedded().lookup("claude-sonnet-4-5-20250929")
    else {
        panic!("sonnet 4.5 is priced");
    };
    let lines: Vec<Value> = std::fs::read_to_string(&t[0])
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for l in lines.iter().filter(|l| l["type"] == "assistant") {
        let m = &l["message"];
        if !seen.insert((
            m["id"].as_str().unwrap().to_string(),
            l["requestId"].as_str().unwrap().to_string(),
        )) {
            continue;
        }
        // The last line of a response carries the final output count (formats §3.3).
        let last = lines.iter().rfind(|x| x["message"]["id"] == m["id"]).unwrap();
        let u = &last["message"]["usage"];
        let usage = kit_transcript::prices::Usage {
            input: u["input_tokens"].as_u64().unwrap(),
            cache_write_5m: u["cache_creation"]["ephemeral_5m_input_tokens"].as_u64().unwrap(),
            cache_write_1h: u["cache_creation"]["ephemeral_1h_input_tokens"].as_u64().unwrap(),
            cache_read: u["cache_read_input_tokens"].as_u64().unwrap(),
            output: u["output_tokens"].as_u64().unwrap(),
        };
        sum += price.cost(&usage);
    }
    assert!((sum - cost).abs() < 1e-9, "transcript {sum} vs result {cost}");
    assert_eq!(seen.len() as u64, result["num_turns"].as_u64().unwrap());
}

#[test]
fn transcript_is_a_claude_code_session_under_claude_config_dir() {
    let sb = sandbox();
    let out = sb.run("finish", Some(1));
    let sid = events(&out)[0]["session_id"].as_str().unwrap().to_string();
    let encoded: String = sb
        .project
        .to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let path = sb.home.join(".claude/projects").join(encoded).join(format!("{sid}.jsonl"));
    let body = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));

    let lines: Vec<Value> = body.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines[0]["type"], "user");
    assert_eq!(lines[0]["parentUuid"], Value::Null);
    assert_eq!(lines[0]["message"]["content"], "Make the criteria in longrun/goal.md pass.");
    let mut parent = Value::Null;
    let mut tool_uses = Vec::new();
    let mut tool_results = Vec::new();
    for l in &lines {
        assert!(l["type"] == "user" || l["type"] == "assistant", "{l}");
        assert_eq!(l["sessionId"], sid.as_str());
        assert_eq!(l["cwd"], sb.project.to_string_lossy().as_ref());
        assert_eq!(l["parentUuid"], parent, "lines chain by parentUuid");
        parent = l["uuid"].clone();
        assert_eq!(l["uuid"].as_str().unwrap().len(), 36);
        assert!(l["timestamp"].as_str().unwrap().starts_with("2026-10-01T09:0"));
        if l["type"] == "assistant" {
            let m = &l["message"];
            assert_eq!(m["model"], "claude-sonnet-4-5-20250929");
            assert!(m["id"].as_str().unwrap().starts_with("msg_01"));
            assert!(l["requestId"].as_str().unwrap().starts_with("req_"));
            let u = &m["usage"];
            let write = u["cache_creation_input_tokens"].as_u64().unwrap();
            let split = u["cache_creation"]["ephemeral_5m_input_tokens"].as_u64().unwrap()
                + u["cache_creation"]["ephemeral_1h_input_tokens"].as_u64().unwrap();
            assert_eq!(write, split);
            assert!(u["cache_read_input_tokens"].as_u64().unwrap() > 0);
            for b in m["content"].as_array().unwrap() {
                if b["type"] == "tool_use" {
                    tool_uses.push(b["id"].as_str().unwrap().to_string());
                }
            }
        } else if let Some(blocks) = l["message"]["content"].as_array() {
            for b in blocks {
                assert_eq!(b["type"], "tool_result");
                tool_results.push(b["tool_use_id"].as_str().unwrap().to_string());
            }
            assert!(l.get("toolUseResult").is_some());
        }
    }
    assert!(tool_uses.len() >= 3);
    assert_eq!(tool_uses, tool_results, "every tool_use has its tool_result, in order");
    let last = lines.last().unwrap();
    assert_eq!(last["message"]["stop_reason"], "end_turn");
    // Context grows from call to call: each reads what the previous one had.
    let reads: Vec<u64> = lines
        .iter()
        .filter(|l| l["type"] == "assistant")
        .map(|l| l["message"]["usage"]["cache_read_input_tokens"].as_u64().unwrap())
        .collect();
    assert!(reads.windows(2).all(|w| w[0] <= w[1]), "{reads:?}");
}

#[test]
fn same_fake_clock_same_stdout_and_transcript() {
    let sb = sandbox();
    let first = sb.run("finish", Some(1));
    let t1 = std::fs::read(&sb.transcripts()[0]).unwrap();
    sb.reset();
    let second = sb.run("finish", Some(1));
    let t = sb.transcripts();
    assert_eq!(t.len(), 1, "same seed, same session id");
    assert_eq!(String::from_utf8_lossy(&first.stdout), String::from_utf8_lossy(&second.stdout));
    assert_eq!(t1, std::fs::read(&t[0]).unwrap());
    // Another invocation is another session.
    sb.reset();
    sb.run("finish", Some(2));
    assert_eq!(sb.transcripts().len(), 2);
}

#[test]
fn prompt_from_the_command_line_and_no_persistence() {
    let sb = sandbox();
    let mut c = Command::new(fake_agent_bin());
    c.args([
        "-p",
        "say hi",
        "--scenario",
        "lie",
        "--model",
        "claude-opus-4-6",
        "--no-session-persistence",
        "--output-format",
        "json",
    ])
    .current_dir(&sb.project)
    .env("HOME", &sb.home)
    .env("CLAUDE_CONFIG_DIR", sb.home.join(".claude"))
    .env("KIT_FAKE_INVOCATION", "1");
    let out = c.output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    // `--output-format json`: the result object alone.
    let ev = events(&out);
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0]["type"], "result");
    assert!(ev[0]["modelUsage"]["claude-opus-4-6"].is_object());
    assert!(sb.transcripts().is_empty());
}

#[test]
fn output_formats_follow_claude_p() {
    let sb = sandbox();
    let run = |args: &[&str]| {
        let mut c = Command::new(fake_agent_bin());
        c.args(["--scenario", "lie", "-p", "hi"])
            .args(args)
            .current_dir(&sb.project)
            .env("HOME", &sb.home)
            .env_remove("CLAUDE_CONFIG_DIR")
            .env("KIT_FAKE_INVOCATION", "1");
        c.output().unwrap()
    };
    // Default: text, the final answer only.
    let out = run(&[]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "All done, every test passes!\n");
    // stream-json without --verbose is refused, as by Claude Code.
    let out = run(&["--output-format", "stream-json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("requires --verbose"));
    let out = run(&["--output-format", "yaml"]);
    assert_eq!(out.status.code(), Some(2));
    // Without CLAUDE_CONFIG_DIR the transcript goes under ~/.claude.
    assert_eq!(std::fs::read_dir(sb.home.join(".claude/projects")).unwrap().count(), 1);
}

#[test]
fn unknown_scenario_is_a_usage_error_naming_the_scenarios() {
    let sb = sandbox();
    let out = sb.run("teleport", Some(1));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no scenario `teleport`") && err.contains("finish"), "{err}");
    let out = Command::new(fake_agent_bin())
        .env_remove("KIT_FAKE_SCENARIO")
        .arg("-p")
        .arg("x")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn hang_ignores_sigterm_and_keeps_a_child_in_its_process_group() {
    use nix::sys::signal::{killpg, Signal};
    use nix::unistd::Pid;
    use std::os::unix::process::CommandExt;
    let sb = sandbox();
    let mut c = sb.fake("hang", Some(1));
    c.process_group(0).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    let mut child = c.spawn().unwrap();
    let pgid = child.id() as i32;
    let deadline = Instant::now() + Duration::from_secs(60);
    while group_size(pgid) < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(group_size(pgid) >= 2, "the agent and its child share a process group");
    killpg(Pid::from_raw(pgid), Signal::SIGTERM).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(child.try_wait().unwrap().is_none(), "SIGTERM is ignored");
    assert!(group_size(pgid) >= 2);
    killpg(Pid::from_raw(pgid), Signal::SIGKILL).unwrap();
    child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while group_size(pgid) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(group_size(pgid), 0);
}

/// Live processes of process group `pgid`.
fn group_size(pgid: i32) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter(|e| {
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            let f: Vec<&str> =
                stat.rsplit_once(')').map_or("", |(_, r)| r).split_whitespace().collect();
            f.len() > 2 && f[0] != "Z" && f[2] == pgid.to_string()
        })
        .count()
}

/// A scenario file of our own, for the step kinds the embedded ones do not show.
fn own_scenario(dir: &Path, body: &str) -> String {
    let p = dir.join("own.toml");
    std::fs::write(&p, format!("description = \"test\"\n{body}")).unwrap();
    p.to_string_lossy().into_owned()
}

#[test]
fn allocate_really_holds_resident_memory() {
    let sb = sandbox();
    let file = own_scenario(
        sb.home.as_path(),
        "[[call]]\nwhen = \"*\"\n[[call.step]]\ndo = \"allocate\"\nmb = 120\nstep_mb = 40\npause_ms = 10\nhold_seconds = 3.0\n",
    );
    let mut child =
        sb.fake(&file, Some(1)).stdin(Stdio::null()).stdout(Stdio::null()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut peak_kb = 0;
    while Instant::now() < deadline && child.try_wait().unwrap().is_none() {
        let status =
            std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap_or_default();
        let rss = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .unwrap_or(0);
        peak_kb = peak_kb.max(rss);
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait().unwrap();
    assert!(peak_kb >= 120 * 1024, "peak resident {peak_kb} kB");
}

#[test]
fn patch_delete_rename_spawn_and_exit_steps() {
    let sb = sandbox();
    // The spawned child writes once the test releases it (at most a minute later), so that it
    // provably outlives the agent however slowly a loaded machine runs either.
    let release = sb.home.join("release");
    let file = own_scenario(
        sb.home.as_path(),
        &r##"[[call]]
when = "1"
[[call.step]]
do = "patch"
path = "README.md"
find = "# confload"
replace = "# confload (patched at call {{invocation}})"
[[call.step]]
do = "patch"
path = "README.md"
find = "not there"
replace = "x"
[[call.step]]
do = "rename"
from = "tools/bench_durations.py"
to = "tools/bench.py"
[[call.step]]
do = "delete"
path = "tests/test_loader.py"
[[call.step]]
do = "spawn"
command = "for i in $(seq 600); do [ -e RELEASE ] && break; sleep 0.1; done; echo late > late.txt"
[[call.step]]
do = "exit"
code = 7
[[call.step]]
do = "print"
text = "never said"
"##
        .replace("RELEASE", &release.to_string_lossy()),
    );
    let out = sb.run(&file, Some(1));
    assert_eq!(out.status.code(), Some(7));
    let ev = events(&out);
    let result = ev.last().unwrap();
    assert_eq!(result["is_error"], true);
    assert_eq!(result["subtype"], "error_during_execution");
    let readme = String::from_utf8(sb.read("README.md")).unwrap();
    assert!(readme.starts_with("# confload (patched at call 1)\n"));
    // The failed Edit is a tool_result with is_error, and the run went on.
    let failed: Vec<&Value> = ev
        .iter()
        .filter(|e| e["type"] == "user" && e["message"]["content"][0]["is_error"] == true)
        .collect();
    assert_eq!(failed.len(), 1);
    assert!(sb.project.join("tools/bench.py").exists());
    assert!(!sb.project.join("tools/bench_durations.py").exists());
    assert!(!sb.project.join("tests/test_loader.py").exists());
    // The detached child outlives the agent and writes after it exited.
    assert!(!sb.project.join("late.txt").exists());
    std::fs::write(&release, "").unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !sb.project.join("late.txt").exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(std::fs::read_to_string(sb.project.join("late.txt")).unwrap(), "late\n");
}

#[test]
fn grow_context_reaches_the_given_share_of_the_compaction_point() {
    let sb = sandbox();
    let file = own_scenario(
        sb.home.as_path(),
        "[[call]]\nwhen = \"*\"\n[[call.step]]\ndo = \"grow_context\"\nto_pct = 50\ncalls = 3\n",
    );
    let out = sb.run(&file, Some(1));
    assert!(out.status.success(), "{}", text(&out));
    let lines: Vec<Value> = std::fs::read_to_string(&sb.transcripts()[0])
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let contexts: Vec<u64> = lines
        .iter()
        .filter(|l| l["type"] == "assistant")
        .map(|l| {
            let u = &l["message"]["usage"];
            u["input_tokens"].as_u64().unwrap()
                + u["cache_creation_input_tokens"].as_u64().unwrap()
                + u["cache_read_input_tokens"].as_u64().unwrap()
        })
        .collect();
    // Three Read calls, the last at exactly 50 % of the default model's compaction point by the
    // hook's rule (claude-sonnet-4-5: reactive, at its 200,000 window); then the final answer.
    assert_eq!(contexts.len(), 4, "{contexts:?}");
    assert!(contexts[0] < contexts[1] && contexts[1] < contexts[2], "{contexts:?}");
    assert_eq!(contexts[2], 100_000, "{contexts:?}");
    assert!(contexts[3] > 100_000 && contexts[3] < 101_000, "{contexts:?}");
}

#[test]
fn an_interrupted_invocation_is_done_again_and_kit_iteration_does_not_skip_the_work() {
    use std::io::BufRead;
    let sb = sandbox();
    // A loop resumed after a pause runs the agent at KIT_ITERATION=2; the fake's own count of
    // finished invocations decides, so fake:finish still does the work of its first call.
    let mut c = sb.fake("finish", None);
    c.env("KIT_ITERATION", "2");
    let out = run_with_prompt(c, "Make the criteria in longrun/goal.md pass.");
    assert!(out.status.success(), "{}", text(&out));
    assert!(!text(&out).contains("Nothing left"), "{}", text(&out));
    assert!(sb.unittest().status.success());
    let count = sb.project.join(".git/fake-agent-finish.count");
    assert_eq!(std::fs::read_to_string(&count).unwrap(), "1 - 0\n");

    // Killed in the middle of its first call (real clock: `race` sleeps 5 s): not counted.
    sb.reset();
    let mut c = sb.fake("race", None);
    c.env_remove("KIT_FAKE_CLOCK").stdout(Stdio::piped()).stdin(Stdio::null());
    let mut child = c.spawn().unwrap();
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    assert!(first.contains("\"init\""), "{first}");
    child.kill().unwrap();
    child.wait().unwrap();
    let race_count = sb.project.join(".git/fake-agent-race.count");
    assert!(!race_count.exists());
    let out = sb.run("race", None);
    assert!(out.status.success(), "{}", text(&out));
    assert!(sb.unittest().status.success(), "the resumed call did the work");
    assert_eq!(std::fs::read_to_string(&race_count).unwrap(), "1 - 0\n");
}

#[test]
fn fake_sessions_in_two_projects_have_different_ids() {
    let a = sandbox();
    let b_root = a.home.parent().unwrap().join("q");
    kit_course::rehearse::sample::write_sample_project(&b_root).unwrap();
    kit_course::rehearse::sample::commit_sample_project(&b_root, &git_env()).unwrap();
    let b = Sandbox { _tmp: tempfile::tempdir().unwrap(), project: b_root, home: a.home.clone() };
    assert!(a.run("lie", Some(1)).status.success());
    assert!(b.run("lie", Some(1)).status.success());
    let t = a.transcripts();
    assert_eq!(t.len(), 2, "{t:?}");
    let ids: Vec<_> = t.iter().map(|p| p.file_stem().unwrap().to_owned()).collect();
    assert_ne!(ids[0], ids[1], "{t:?}");
}

fn journal_events(root: &Path, kind: &str) -> Vec<Value> {
    std::fs::read_to_string(root.join("longrun/journal.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| name_of(v) == kind)
        .collect()
}

#[test]
fn a_fake_loop_interrupted_in_its_first_call_does_the_work_when_resumed() {
    let sb = sandbox();
    let root = &sb.project;
    let kit = |args: &[&str]| {
        let o = crate::util::kit(root).args(args).output().unwrap();
        assert!(o.status.success(), "kit {args:?}: {}", text(&o));
    };
    std::fs::write(root.join(".git/info/exclude"), "/.home/\n").unwrap();
    kit(&["init"]);
    std::fs::write(root.join("longrun/goal.md"), kit_course::rehearse::sample::goal_text())
        .unwrap();
    kit(&["freeze", "tests", "tools"]);
    let git = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qam", "goal"])
        .current_dir(root)
        .status()
        .unwrap();
    assert!(git.success());
    Command::new("git").args(["add", "-A"]).current_dir(root).status().unwrap();
    Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "longrun"])
        .current_dir(root)
        .status()
        .unwrap();

    // `race` works 5 s before its edit: Ctrl-C lands inside its first call; a second Ctrl-C
    // ends the agent at once (SIGKILL), so the call never finishes.
    let mut child = crate::util::kit(root)
        .args(["loop", "--agent", "fake:race"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while journal_events(root, "agent_start").is_empty() {
        assert!(t0.elapsed() < Duration::from_secs(60), "the agent never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    {
        use std::io::BufRead;
        let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        while !line.contains("SIGINT received") {
            line.clear();
            assert!(err.read_line(&mut line).unwrap() > 0, "kit never saw the SIGINT");
        }
    }
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", text(&o));
    assert!(
        !root.join(".git/fake-agent-race.count").exists(),
        "an interrupted call counts: {}",
        text(&o)
    );

    // Resumed: iteration 2 of the loop, the fake's first finished call, which does the work.
    let o = crate::util::kit(root).args(["loop", "--agent", "fake:race"]).output().unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.lines().last().unwrap_or("").starts_with("done:"), "{t}");
    let its: Vec<u64> = journal_events(root, "iteration_start")
        .iter()
        .filter_map(|e| e["iteration"].as_u64())
        .collect();
    assert_eq!(its, [1, 2], "{t}");
}
