//! `kit loop`, `kit status` and `kit doctor` with real processes: plain shell-script agents on a
//! real git repository with a small Python project whose criteria the loop runs itself.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use kit_harness::longrun::event::{fixture, name_of};
use serde_json::{json, Value};

use crate::util::{git_repo, kit};

const CALC_BROKEN: &str = "def add(a, b):\n    return a - b\n";
const CALC_FIXED: &str = "def add(a, b):\n    return a + b\n";
const TEST_CALC: &str = "import unittest\nfrom calc import add\n\n\nclass AddTest(unittest.TestCase):\n    def test_small(self):\n        self.assertEqual(add(1, 2), 3)\n\n    def test_zero(self):\n        self.assertEqual(add(0, 0), 0)\n\n    def test_negative(self):\n        self.assertEqual(add(-1, -2), -3)\n";
const GOAL: &str = "# Goal: add returns the sum\n\n## End state\n`calc.add` returns the sum of its two arguments.\n\n## Criteria\n- function: `python3 -m unittest tests.test_calc -v` → `Ran 3 tests` and `re:^OK$`\n- regression: `python3 -m unittest discover -s tests -v` → `Ran 3 tests` and `re:^OK$`\n\n## Budget\n- iterations: 6\n";
const CONFIG: &str =
    "[timeouts]\ngrace = \"1s\"\ncriterion = \"60s\"\n\n[goal]\nrequired_level = 3\n";

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn read(root: &Path, rel: &str) -> String {
    std::fs::read_to_string(root.join(rel)).unwrap_or_default()
}

/// Run kit in `root` and require success.
fn kit_ok(root: &Path, args: &[&str]) {
    let o = kit(root).args(args).output().unwrap();
    assert!(o.status.success(), "kit {args:?}: {}", text(&o));
}

/// A repository set up as a user would: `kit init`, the calc project (broken unless `fixed`), a
/// level 3 goal, a config with a short grace period, `kit freeze tests`, all committed.
fn project(fixed: bool) -> tempfile::TempDir {
    let d = git_repo();
    let root = d.path();
    kit_ok(root, &["init"]);
    write(root, "calc.py", if fixed { CALC_FIXED } else { CALC_BROKEN });
    write(root, "tests/__init__.py", "");
    write(root, "tests/test_calc.py", TEST_CALC);
    let ignore = read(root, ".gitignore");
    write(root, ".gitignore", &format!("{ignore}__pycache__/\n.home/\n"));
    write(root, "longrun/goal.md", GOAL);
    write(root, "longrun/config.toml", CONFIG);
    kit_ok(root, &["freeze", "tests"]);
    let git = |args: &[&str]| {
        assert!(Command::new("git")
            .args(args)
            .current_dir(root)
            .envs(kit(root).get_envs().filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned()))))
            .stdout(Stdio::null())
            .status()
            .unwrap()
            .success());
    };
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "calc project"]);
    d
}

fn kit_loop(root: &Path, args: &[&str]) -> Output {
    kit(root).arg("loop").args(args).output().unwrap()
}

fn spawn_loop(root: &Path, args: &[&str]) -> Child {
    kit(root).arg("loop").args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn last_line(o: &Output) -> String {
    text(o).lines().last().unwrap_or_default().to_string()
}

/// Every journal line, asserting none is torn.
/// The journal's lines. Each must read as one of kit's typed events and write back as the
/// same bytes (`kit_harness::longrun::event`): whatever a loop journals, in any of these tests.
fn journal(root: &Path) -> Vec<Value> {
    read(root, "longrun/journal.jsonl")
        .lines()
        .map(|l| {
            let v: Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("torn journal line {l:?}: {e}"));
            let entry = kit_harness::longrun::event::Entry::from_value(v.clone());
            assert!(
                !matches!(entry.event, kit_harness::longrun::event::Event::Unknown(_)),
                "not a known event: {l}"
            );
            assert!(entry.absent.is_empty() && entry.extra.is_empty(), "{l}: {entry:?}");
            let again = serde_json::to_string(&entry.to_value()).unwrap();
            assert_eq!(again, l, "a journal line does not write back as kit wrote it");
            v
        })
        .collect()
}

fn events(root: &Path, name: &str) -> Vec<Value> {
    journal(root).into_iter().filter(|e| name_of(e) == name).collect()
}

/// Live (non-zombie) processes whose process group is `pgid`.
fn group_alive(pgid: i64) -> Vec<i32> {
    kit_core::proc::snapshot()
        .into_iter()
        .filter(|p| i64::from(p.pgid) == pgid && !p.is_zombie())
        .map(|p| p.pid)
        .collect()
}

/// A shell agent that works until the test creates `name` in the repository root (at most about
/// a minute, so that a failed test leaves nothing running), for tests that must act while the
/// agent runs however slowly a loaded machine starts things.
fn gated_agent(root: &Path, script: &str, name: &str) {
    write(
        root,
        script,
        &format!("for i in $(seq 600); do [ -e {name} ] && exit 0; sleep 0.1; done\n"),
    );
}

fn wait_for(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn loop_is_done_at_iteration_0_when_the_baseline_passes_and_the_user_allows_a_green_start() {
    let d = project(true);
    let o =
        kit_loop(d.path(), &["--agent", "sh -c 'echo never > never-ran'", "--allow-green-start"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        last_line(&o).starts_with("done: every criterion passes (2 of 2) at iteration 0"),
        "{}",
        text(&o)
    );
    assert!(
        text(&o).contains("baseline: function criteria goal.md:7 already pass before any agent ran; --allow-green-start accepts that"),
        "{}",
        text(&o)
    );
    assert!(events(d.path(), "agent_start").is_empty());
    assert!(events(d.path(), "revert_probe").is_empty(), "the start tree is the tree: no probe");
    assert!(!d.path().join("never-ran").exists());
    let end = events(d.path(), "loop_end").pop().unwrap();
    assert_eq!((end["outcome"].as_str(), end["iterations"].as_u64()), (Some("done"), Some(0)));
    let baseline = events(d.path(), "baseline").pop().unwrap();
    assert_eq!(baseline["passed"], 2);
    assert_eq!(baseline["start_of_run"], true);
    let green = events(d.path(), "green_start").pop().unwrap();
    assert_eq!(
        (green["lines"].clone(), green["allowed"].clone()),
        (serde_json::json!([7]), Value::Bool(true))
    );
}

/// Red first and the revert probe (issue 22): criteria that already pass before any agent ran
/// prove nothing; done is refused at iteration 0, the agent runs, and at the done candidate the
/// function criteria pass on the run's start tree too: done is refused again, every time, until
/// a cap ends the run.
#[test]
fn a_goal_whose_criteria_pass_without_the_work_never_reaches_done() {
    let d = project(true);
    let o = kit_loop(
        d.path(),
        &["--agent", "sh -c 'echo $KIT_ITERATION >> notes.txt'", "--max-iterations", "2"],
    );
    let t = text(&o);
    assert_eq!(o.status.code(), Some(3), "{t}");
    assert!(t.contains("baseline: function criteria goal.md:7 already pass before any agent ran: a test that passes without the work proves nothing about it (red first)"), "{t}");
    assert!(
        t.contains("baseline: done refused at iteration 0: goal.md:7 passes before any agent ran"),
        "{t}"
    );
    assert!(t.contains("iteration 1: done refused: the criteria pass without the work (goal.md:7 passes on the run's start tree with the frozen files; revert probe)"), "{t}");
    assert!(last_line(&o).starts_with("cap: iterations cap reached"), "{t}");
    let probes = events(d.path(), "revert_probe");
    assert_eq!(probes.len(), 2, "{probes:?}");
    assert_eq!(probes[0]["refused"], true);
    assert_eq!(probes[0]["pass_without_work"], serde_json::json!([7]));
    assert_eq!(probes[0]["tree"], events(d.path(), "baseline")[0]["tree"]);
    // The prompt of iteration 2 says why.
    let prompt = read(d.path(), "longrun/.runs/002.prompt.md");
    assert!(prompt.contains("The criteria pass without the work"), "{prompt}");
    // No scratch folder is left behind in the repository, and git knows no extra worktree.
    let wt = Command::new("git").args(["worktree", "list"]).current_dir(d.path()).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&wt.stdout).lines().count(), 1);
}

#[test]
fn loop_with_a_shell_agent_that_fixes_the_code_is_done_in_1() {
    let d = project(false);
    write(
        d.path(),
        "agent.sh",
        "cat > stdin.txt\nprintf '%s\\n%s\\n%s\\n' \"$KIT_PROMPT_FILE\" \"$KIT_ITERATION\" \"$KIT_ROOT\" > env.txt\nsed -i 's/a - b/a + b/' calc.py\n",
    );
    let o = kit_loop(d.path(), &["--agent", "sh ./agent.sh"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(last_line(&o), "done: every criterion passes (2 of 2) at iteration 1");
    let prompt_file = d.path().join("longrun/.runs/001.prompt.md");
    let prompt = std::fs::read_to_string(&prompt_file).unwrap();
    assert!(prompt.contains("# Goal: add returns the sum"), "{prompt}");
    assert!(prompt.contains("`python3 -m unittest tests.test_calc -v` failed"), "{prompt}");
    assert_eq!(read(d.path(), "stdin.txt"), prompt, "the prompt arrives on stdin");
    let env: Vec<String> = read(d.path(), "env.txt").lines().map(String::from).collect();
    assert_eq!(env[0], prompt_file.to_string_lossy());
    assert_eq!(env[1], "1");
    assert_eq!(Path::new(&env[2]).canonicalize().unwrap(), d.path().canonicalize().unwrap());
    let start = events(d.path(), "agent_start").pop().unwrap();
    assert_eq!(start["pid"], start["pgid"], "the agent leads its own process group");
    let crit = events(d.path(), "criteria").pop().unwrap();
    assert_eq!((crit["passed"].as_u64(), crit["verified"].as_bool()), (Some(2), Some(true)));
    assert_eq!(crit["commit"].as_str().unwrap().len(), 40);
    assert!(d.path().join("longrun/.runs/001.log").is_file());
    // The revert probe ran the function criterion on the start tree, where it failed.
    let probe = events(d.path(), "revert_probe").pop().unwrap();
    assert_eq!(probe["refused"], false, "{probe}");
    assert_eq!(probe["results"][0]["line"], 7);
    assert_eq!(probe["results"][0]["passed"], false);
    assert!(probe["wall_ms"].as_u64().is_some() && probe["cpu_ms"].as_u64().is_some(), "{probe}");
}

#[test]
fn loop_reverts_an_edited_and_a_deleted_frozen_test_byte_for_byte() {
    let d = project(false);
    write(
        d.path(),
        "agent.sh",
        "sed -i 's/a - b/a + b/' calc.py\nsed -i 's/3)/-1)/' tests/test_calc.py\nrm tests/__init__.py\necho 'import os' > tests/test_extra.py\n",
    );
    let o = kit_loop(d.path(), &["--agent", "sh ./agent.sh"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(read(d.path(), "tests/test_calc.py"), TEST_CALC);
    assert!(d.path().join("tests/__init__.py").is_file());
    assert!(!d.path().join("tests/test_extra.py").exists());
    let mut cheats: Vec<(String, String)> = events(d.path(), "cheat")
        .iter()
        .map(|e| (e["path"].as_str().unwrap().to_string(), e["kind"].as_str().unwrap().to_string()))
        .collect();
    cheats.sort();
    assert_eq!(
        cheats,
        [
            ("tests/__init__.py".to_string(), "deleted".to_string()),
            ("tests/test_calc.py".into(), "modified".into()),
            ("tests/test_extra.py".into(), "new_file".into()),
        ]
    );
    assert!(text(&o).contains("iteration 1: reverted"), "{}", text(&o));
}

#[test]
fn loop_restores_goal_config_and_manifest_edited_by_the_agent() {
    let d = project(false);
    let frozen = read(d.path(), "longrun/frozen.toml");
    write(
        d.path(),
        "agent.sh",
        "echo '# Goal: nothing' > longrun/goal.md\necho '[caps]' > longrun/config.toml\n: > longrun/frozen.toml\n",
    );
    let o = kit_loop(d.path(), &["--agent", "sh ./agent.sh", "--max-iterations", "1"]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert_eq!(read(d.path(), "longrun/goal.md"), GOAL);
    assert_eq!(read(d.path(), "longrun/config.toml"), CONFIG);
    assert_eq!(read(d.path(), "longrun/frozen.toml"), frozen);
    let mut paths: Vec<String> =
        events(d.path(), "cheat").iter().map(|e| e["path"].as_str().unwrap().to_string()).collect();
    paths.sort();
    assert_eq!(paths, ["longrun/config.toml", "longrun/frozen.toml", "longrun/goal.md"]);
    // Whoever edited them (here the agent; as often a person), the output says how to change
    // the goal of a running loop, at the moment of the revert.
    assert!(
        text(&o).contains(
            "loop: longrun/config.toml, longrun/frozen.toml, longrun/goal.md are held as at this \
             loop's start, so an edit during the run is reverted. To change them: touch \
             longrun/PAUSE"
        ),
        "{}",
        text(&o)
    );
    assert!(
        last_line(&o).starts_with("cap: iterations cap reached (1 of 1 iterations used)"),
        "{}",
        text(&o)
    );
}

#[test]
fn loop_puts_back_a_journal_the_agent_emptied() {
    let d = project(false);
    write(d.path(), "agent.sh", "sed -i 's/a - b/a + b/' calc.py\n: > longrun/journal.jsonl\n");
    let o = kit_loop(d.path(), &["--agent", "sh ./agent.sh"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let names: Vec<String> = journal(d.path()).iter().map(|e| name_of(e).to_string()).collect();
    for kept in
        ["loop_start", "baseline", "iteration_start", "agent_start", "agent_end", "loop_end"]
    {
        assert!(names.iter().any(|n| n == kept), "{kept} missing from {names:?}");
    }
    let cheat = events(d.path(), "cheat").pop().unwrap();
    assert_eq!(
        (cheat["path"].as_str(), cheat["phase"].as_str()),
        (Some("longrun/journal.jsonl"), Some("after_agent"))
    );
}

#[test]
fn loop_kills_a_hanging_agent_and_its_whole_group_at_the_timeout() {
    let d = project(false);
    let started = Instant::now();
    let o = kit_loop(
        d.path(),
        &["--agent", "sleep 1000 & sleep 1000", "--timeout", "2s", "--max-iterations", "1"],
    );
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    // The sleeps would last 1000 s; the bounds leave room for a loaded machine.
    assert!(started.elapsed() < Duration::from_secs(120), "{:?}", started.elapsed());
    let end = events(d.path(), "agent_end").pop().unwrap();
    assert_eq!(end["timed_out"], true);
    let ms = end["duration_ms"].as_u64().unwrap();
    assert!((2000..2000 + 1000 + 30_000).contains(&ms), "ended {ms} ms after the start: {end}");
    let pgid = events(d.path(), "agent_start").pop().unwrap()["pgid"].as_i64().unwrap();
    assert_eq!(group_alive(pgid), Vec::<i32>::new(), "no process of the agent's group survives");
    assert!(text(&o).contains("iteration 1: agent killed at the timeout"), "{}", text(&o));
}

#[test]
fn loop_ends_a_detached_child_that_would_edit_a_frozen_test_later() {
    let d = project(false);
    write(
        d.path(),
        "agent.sh",
        "setsid sh -c 'sleep 29.3; echo x >> tests/test_calc.py; echo late > late.txt' </dev/null >/dev/null 2>&1 &\nsed -i 's/a - b/a + b/' calc.py\n",
    );
    let o = kit_loop(d.path(), &["--agent", "sh ./agent.sh"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(
        processes_running(d.path(), "sleep 29.3"),
        0,
        "the detached child was killed, not left to run"
    );
    assert_eq!(read(d.path(), "tests/test_calc.py"), TEST_CALC);
    assert!(!d.path().join("late.txt").exists());
    let end = events(d.path(), "agent_end").pop().unwrap();
    assert!(!end["leftovers_killed"].as_array().unwrap().is_empty(), "{end}");
}

/// An agent whose calc.py, when imported by a criterion, starts a detached process running `sh`
/// and, given `until`, waits (at most a minute) until the file `until` exists before it goes on.
fn stray_agent(root: &Path, sh: &str, until: Option<&str>) {
    let wait = until.map_or(String::new(), |f| {
        format!("import os, time\nfor _ in range(6000):\n    if os.path.exists('{f}'):\n        break\n    time.sleep(0.01)\n")
    });
    write(
        root,
        "agent.sh",
        &format!("cat > calc.py <<'PY'\nimport subprocess\nsubprocess.Popen(['sh', '-c', '{sh}'], start_new_session=True)\n{wait}\ndef add(a, b):\n    return a + b\nPY\n"),
    );
}

/// Live processes working in `root` (their cwd is in it) whose command line contains `marker`.
/// The cwd tells them from the same test's processes in another checkout's run on this machine.
fn processes_running(root: &Path, marker: &str) -> usize {
    let root = root.canonicalize().unwrap();
    kit_core::proc::snapshot()
        .iter()
        .filter(|p| !p.is_zombie())
        .filter(|p| {
            std::fs::read_link(format!("/proc/{}/cwd", p.pid))
                .is_ok_and(|cwd| cwd.starts_with(&root))
                && std::fs::read(format!("/proc/{}/cmdline", p.pid))
                    .is_ok_and(|c| String::from_utf8_lossy(&c).contains(marker))
        })
        .count()
}

#[test]
fn loop_ends_a_process_the_code_under_test_leaves_running() {
    let d = project(false);
    stray_agent(d.path(), "sleep 31.7; echo late > late.txt", None);
    let o = kit_loop(d.path(), &["--agent", "sh ./agent.sh"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(
        processes_running(d.path(), "sleep 31.7"),
        0,
        "the criteria's stray processes were ended"
    );
}

#[test]
fn loop_does_not_trust_criteria_while_a_stray_edits_a_frozen_test() {
    let d = project(false);
    // The criterion waits for the stray's edit, so it lands while the criteria run.
    stray_agent(d.path(), "echo x >> tests/test_calc.py; touch edited", Some("edited"));
    let o = kit_loop(d.path(), &["--agent", "sh ./agent.sh", "--max-iterations", "1"]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert_eq!(read(d.path(), "tests/test_calc.py"), TEST_CALC);
    let cheat = events(d.path(), "cheat").pop().unwrap();
    assert_eq!(cheat["phase"], "after_criteria");
    assert_eq!(events(d.path(), "criteria").pop().unwrap()["verified"], false);
}

#[test]
fn loop_kills_a_memory_hog_at_the_cap_and_names_the_enforcer() {
    let d = project(false);
    write(
        d.path(),
        "hog.py",
        "import time\nheld = []\nfor i in range(10):\n    held.append(b'x' * (50 << 20))\n    time.sleep(0.3)\ntime.sleep(600)\n",
    );
    let o = kit(d.path())
        .env("KIT_MEMORY_ENFORCER", "watchdog")
        .args([
            "loop",
            "--agent",
            "python3 hog.py",
            "--memory-max",
            "100M",
            "--timeout",
            "300s",
            "--max-iterations",
            "1",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let end = events(d.path(), "agent_end").pop().unwrap();
    assert_eq!(end["memory_killed"], true, "{end}");
    assert_eq!(end["enforcer"], "watchdog");
    assert!(end["peak_rss_bytes"].as_u64().unwrap() > 100 << 20, "{end}");
    // The hog would hold its memory for 600 s; the bound leaves room for a loaded machine.
    assert!(
        end["duration_ms"].as_u64().unwrap() < 60_000,
        "killed long before the hog finished: {end}"
    );
    assert_eq!(events(d.path(), "memory_cap")[0]["enforcer"], "watchdog");
    assert!(text(&o).contains("killed at the memory cap by the watchdog"), "{}", text(&o));
}

#[test]
fn a_second_loop_exits_4_naming_the_holder() {
    let d = project(false);
    gated_agent(d.path(), "slow.sh", "go");
    let mut first = spawn_loop(d.path(), &["--agent", "sh slow.sh", "--max-iterations", "1"]);
    wait_for("the first loop's agent", Duration::from_secs(60), || {
        !events(d.path(), "agent_start").is_empty()
    });
    let o = kit_loop(d.path(), &["--agent", "true"]);
    write(d.path(), "go", "");
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    let err = text(&o);
    assert!(err.contains(&format!("pid {} on ", first.id())), "{err}");
    assert!(err.contains("kit loop --agent sh slow.sh"), "{err}");
    assert_eq!(first.wait().unwrap().code(), Some(3));
    assert_eq!(events(d.path(), "loop_start").len(), 1, "the second loop wrote nothing");
}

#[test]
fn an_agent_that_deletes_the_lock_file_never_lets_a_second_loop_displace_the_first() {
    let d = project(false);
    // The agent keeps deleting longrun/.lock until the test says stop (at most about a minute):
    // whatever instant the second loop starts, it must find the first loop alive and leave its
    // agent alone.
    let agent = "rm -f longrun/.lock; touch deleting; for i in $(seq 3000); do [ -e stop ] && exit 0; rm -f longrun/.lock; sleep 0.02; done";
    let first = spawn_loop(d.path(), &["--agent", agent, "--max-iterations", "1"]);
    wait_for("the agent deleting the lock", Duration::from_secs(60), || {
        d.path().join("deleting").exists() && !events(d.path(), "agent_start").is_empty()
    });
    let pgid = events(d.path(), "agent_start")[0]["pgid"].as_i64().unwrap();
    for _ in 0..3 {
        let o = kit_loop(d.path(), &["--agent", "true"]);
        assert_eq!(o.status.code(), Some(4), "{}", text(&o));
        assert!(text(&o).contains(&format!("pid {} on ", first.id())), "{}", text(&o));
        assert!(!group_alive(pgid).is_empty(), "the live loop's agent was killed");
    }
    write(d.path(), "stop", "");
    let out = first.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert_eq!(events(d.path(), "recovered").len(), 0);
    assert_eq!(events(d.path(), "loop_start").len(), 1, "the second loops wrote nothing");
    let cheats = events(d.path(), "cheat");
    assert!(cheats.iter().any(|c| c["kind"] == "lock_replaced"), "{cheats:?}");
    assert_eq!(read(d.path(), "longrun/.lock"), "", "the re-created lock was released cleanly");
}

#[test]
fn a_local_module_that_shadows_the_test_runner_is_removed_and_journaled() {
    let d = project(false);
    // A fake `unittest` package at the root: `python3 -m unittest …` from the root would import
    // it and print what the criteria look for without running a test. A `.pth` and a
    // sitecustomize.py would run code at every interpreter start.
    let fake = "import sys\nsys.stderr.write(\"Ran 3 tests\\n\\nOK\\n\")\n";
    write(d.path(), "unittest_main.py", fake);
    write(
        d.path(),
        "agent.sh",
        "mkdir -p unittest && cp unittest_main.py unittest/__main__.py && touch unittest/__init__.py\n\
         echo 'print(1)' > sitecustomize.py\necho 'import os' > tests/../evil.pth\n",
    );
    let o = kit_loop(d.path(), &["--agent", "sh ./agent.sh", "--max-iterations", "2"]);
    assert_eq!(o.status.code(), Some(3), "the shadowed runner passed the goal: {}", text(&o));
    let kinds: Vec<(String, String)> = events(d.path(), "cheat")
        .iter()
        .map(|c| (c["path"].as_str().unwrap().into(), c["kind"].as_str().unwrap().into()))
        .collect();
    for path in ["unittest", "sitecustomize.py", "evil.pth"] {
        assert!(kinds.contains(&(path.into(), "shadows_runner".into())), "{path}: {kinds:?}");
        assert!(!d.path().join(path).exists(), "{path} was left in place");
    }
    assert!(text(&o).contains("shadows the test runner"), "{}", text(&o));
    // Files tracked by git when the loop starts are the project's own and stay.
    let d = project(true);
    write(d.path(), "conftest.py", "# the project's own pytest configuration\n");
    let git = Command::new("git").args(["add", "conftest.py"]).current_dir(d.path()).status();
    assert!(git.unwrap().success());
    let o = kit_loop(d.path(), &["--agent", "true", "--allow-green-start"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(d.path().join("conftest.py").exists());
    assert_eq!(events(d.path(), "cheat").len(), 0);
}

#[test]
fn git_config_set_by_the_agent_never_runs_as_kit() {
    let d = project(false);
    // The agent makes every `git status` run its script (core.fsmonitor) and installs a hook;
    // the script would rewrite a frozen test after the loop verified the tree.
    write(d.path(), "evil.sh", "echo ran >> fsmonitor-ran\necho 'pass' > tests/test_calc.py\n");
    let agent = "git config core.fsmonitor 'sh evil.sh' && git config core.hooksPath .evil";
    let o = kit_loop(d.path(), &["--agent", agent, "--max-iterations", "1"]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(!d.path().join("fsmonitor-ran").exists(), "kit ran the agent's fsmonitor");
    assert_eq!(read(d.path(), "tests/test_calc.py"), TEST_CALC);
    kit_ok(d.path(), &["freeze", "--check"]);
}

#[test]
fn lines_the_agent_appends_to_the_journal_are_cut_and_journaled() {
    let d = project(false);
    let forged = fixture(
        "loop_end",
        json!({"ts":"2026-01-01T00:00:00Z","outcome":"done","iterations":1,"iteration":1,"reason":"forged","exit":0}),
    );
    write(d.path(), "forge.sh", &format!("echo '{forged}' >> longrun/journal.jsonl\n"));
    let o = kit_loop(d.path(), &["--agent", "sh ./forge.sh", "--max-iterations", "1"]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(
        !read(d.path(), "longrun/journal.jsonl").contains("\"forged\""),
        "{}",
        read(d.path(), "longrun/journal.jsonl")
    );
    let cheats = events(d.path(), "cheat");
    assert!(cheats.iter().any(|c| c["kind"] == "journal_appended"), "{cheats:?}");
    let ends = events(d.path(), "loop_end");
    assert_eq!(ends.len(), 1);
    assert_eq!(ends[0]["outcome"], "cap");
}

/// Issue 22: an agent that kills its loop and writes a holder record naming pid 1 with its real
/// command line does not turn later loops away: the flock is free, so the record is stale.
#[test]
fn a_record_naming_a_live_process_that_is_no_loop_is_stale_and_taken_over() {
    let d = project(true);
    let cmd = std::fs::read("/proc/1/cmdline").unwrap();
    let cmd: Vec<String> = cmd
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let record = serde_json::json!({"pid": 1, "host": host.trim(), "started": "2026-01-01T00:00:00Z", "command": cmd.join(" ")});
    write(d.path(), "longrun/.lock", &record.to_string());
    let o = kit_loop(d.path(), &["--agent", "true", "--allow-green-start"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o).contains("the record is stale (the flock was free); took the lock"),
        "{}",
        text(&o)
    );
    let t = events(d.path(), "lock_takeover").pop().unwrap();
    assert_eq!((t["previous"]["pid"].as_u64(), t["stale"].as_bool()), (Some(1), Some(true)));
}

#[test]
fn a_dead_holders_lock_is_taken_over_and_journaled() {
    let d = project(true);
    let record =
        r#"{"pid":999999999,"host":"gone","started":"2026-01-01T00:00:00Z","command":"kit loop"}"#;
    write(d.path(), "longrun/.lock", record);
    let o = kit_loop(d.path(), &["--agent", "true", "--allow-green-start"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let t = events(d.path(), "lock_takeover").pop().unwrap();
    assert_eq!(t["previous"]["pid"], 999_999_999);
    assert_eq!(read(d.path(), "longrun/.lock"), "", "the record is cleared at the end");
}

#[test]
fn two_loops_started_at_the_same_instant_exactly_one_runs() {
    let d = project(false);
    // The winner's agent works until one loop has exited: however late a loaded machine starts
    // the second loop, the first cannot have ended before it.
    gated_agent(d.path(), "slow.sh", "go");
    for round in 0..20 {
        let _ = std::fs::remove_file(d.path().join("go"));
        // Each round is a run of its own: the last one reached its cap, so it is finished.
        let args = ["--agent", "sh slow.sh", "--max-iterations", "1", "--new-run"];
        let mut a = spawn_loop(d.path(), &args);
        let mut b = spawn_loop(d.path(), &args);
        wait_for("one of the two loops to exit", Duration::from_secs(60), || {
            a.try_wait().unwrap().is_some() || b.try_wait().unwrap().is_some()
        });
        write(d.path(), "go", "");
        let mut codes = [a.wait().unwrap().code(), b.wait().unwrap().code()];
        codes.sort();
        assert_eq!(codes, [Some(3), Some(4)], "round {round}");
    }
    assert_eq!(events(d.path(), "loop_start").len(), 20);
    assert_eq!(events(d.path(), "lock_takeover").len(), 0);
}

#[test]
fn an_agent_that_kills_the_loop_and_then_weakens_a_test_is_reverted_on_restart() {
    let d = project(false);
    // The agent SIGKILLs kit (its grandparent: kit runs it through `sh -c`), then weakens the frozen test and
    // exits, before the user starts the loop again.
    write(
        d.path(),
        "agent.sh",
        "kill -9 $(ps -o ppid= -p $PPID)\nsleep 0.2\nprintf 'import unittest\\n' > tests/test_calc.py\ntouch tampered\n",
    );
    let mut first = spawn_loop(d.path(), &["--agent", "sh ./agent.sh"]);
    wait_for("the tampering", Duration::from_secs(120), || d.path().join("tampered").exists());
    first.wait().unwrap();
    assert_ne!(read(d.path(), "tests/test_calc.py"), TEST_CALC);

    // The journal shows a run that never ended, so the drift is the agent's: restored and
    // journaled, not refused as the user's edit.
    write(d.path(), "agent.sh", "sed -i 's/a - b/a + b/' calc.py\n");
    let o = kit_loop(d.path(), &["--agent", "sh ./agent.sh"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(read(d.path(), "tests/test_calc.py"), TEST_CALC);
    let cheat = events(d.path(), "cheat").into_iter().find(|e| e["path"] == "tests/test_calc.py");
    let cheat = cheat.unwrap_or_else(|| panic!("no cheat journaled: {:?}", journal(d.path())));
    assert_eq!(cheat["phase"], "start", "{cheat}");
}

#[test]
fn a_loop_killed_mid_iteration_resumes_after_ending_the_old_agent_group() {
    let d = project(false);
    let mut first = spawn_loop(d.path(), &["--agent", "sleep 1000 & sleep 1000"]);
    wait_for("the agent", Duration::from_secs(60), || !events(d.path(), "agent_start").is_empty());
    let start = events(d.path(), "agent_start").pop().unwrap();
    let pgid = start["pgid"].as_i64().unwrap();
    wait_for("both sleeps", Duration::from_secs(60), || group_alive(pgid).len() >= 3);
    first.kill().unwrap();
    first.wait().unwrap();
    assert!(!group_alive(pgid).is_empty(), "SIGKILL of kit leaves the agent running");

    write(d.path(), "agent.sh", "sed -i 's/a - b/a + b/' calc.py\n");
    let o = kit_loop(d.path(), &["--agent", "sh ./agent.sh"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(group_alive(pgid), Vec::<i32>::new());
    let rec = events(d.path(), "recovered").pop().unwrap();
    assert_eq!((rec["iteration"].as_u64(), rec["pgid"].as_i64()), (Some(1), Some(pgid)));
    assert!(rec["killed"].as_array().unwrap().len() >= 2, "{rec}");
    assert_eq!(events(d.path(), "lock_takeover").len(), 1);
    let iterations: Vec<u64> = events(d.path(), "iteration_start")
        .iter()
        .map(|e| e["iteration"].as_u64().unwrap())
        .collect();
    assert_eq!(iterations, [1, 2]);
    assert!(last_line(&o).ends_with("at iteration 2"), "{}", text(&o));
    // State files are whole: the goal, config and manifest still parse; the journal has no torn
    // line (journal() panics on one).
    assert_eq!(read(d.path(), "longrun/goal.md"), GOAL);
    assert_eq!(read(d.path(), "longrun/config.toml"), CONFIG);
    journal(d.path());
}

#[test]
fn ctrl_c_ends_the_agent_restores_frozen_files_and_exits_130() {
    let d = project(false);
    write(d.path(), "agent.sh", "echo x >> tests/test_calc.py\nsleep 1000 & sleep 1000\n");
    let child = spawn_loop(d.path(), &["--agent", "sh ./agent.sh"]);
    wait_for("the agent", Duration::from_secs(60), || !events(d.path(), "agent_start").is_empty());
    let pgid = events(d.path(), "agent_start").pop().unwrap()["pgid"].as_i64().unwrap();
    wait_for("the agent's edit", Duration::from_secs(60), || {
        read(d.path(), "tests/test_calc.py") != TEST_CALC
    });
    let kit_pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(kit_pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.lines().last().unwrap().starts_with("interrupted: stopped by SIGINT"),
        "{stdout}"
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("loop: SIGINT received"), "{}", text(&o));
    assert_eq!(group_alive(pgid), Vec::<i32>::new());
    assert_eq!(read(d.path(), "tests/test_calc.py"), TEST_CALC);
    assert_eq!(events(d.path(), "agent_end").pop().unwrap()["interrupted"], true);
    assert_eq!(events(d.path(), "loop_end").pop().unwrap()["outcome"], "interrupted");
    assert_eq!(read(d.path(), "longrun/.lock"), "", "the lock was released cleanly");
}

#[test]
fn ctrl_c_says_what_it_stops_at_once_and_a_second_one_skips_the_grace() {
    let d = project(false);
    // A grace period far longer than the test's deadline: only the second Ctrl-C can end the
    // agent in time, as it ignores SIGTERM (and so do its children).
    write(d.path(), "longrun/config.toml", &CONFIG.replace("grace = \"1s\"", "grace = \"10m\""));
    kit_ok(d.path(), &["freeze", "tests"]);
    let git = Command::new("git")
        .args(["commit", "-qam", "grace 10m"])
        .current_dir(d.path())
        .envs(kit(d.path()).get_envs().filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned()))))
        .status()
        .unwrap();
    assert!(git.success());
    write(
        d.path(),
        "agent.py",
        "import signal, subprocess, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nsubprocess.Popen(['sleep', '1000'])\nsubprocess.Popen(['sleep', '1000'])\nopen('ready', 'w').close()\ntime.sleep(1000)\n",
    );
    let mut child = spawn_loop(d.path(), &["--agent", "exec python3 agent.py"]);
    wait_for("the agent", Duration::from_secs(60), || !events(d.path(), "agent_start").is_empty());
    let pgid = events(d.path(), "agent_start").pop().unwrap()["pgid"].as_i64().unwrap();
    wait_for("the agent to ignore SIGTERM", Duration::from_secs(60), || {
        d.path().join("ready").exists()
    });
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let kit_pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(kit_pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let first = rx.recv_timeout(Duration::from_secs(60)).expect("a notice at the first Ctrl-C");
    assert!(
        first.starts_with(&format!(
            "loop: SIGINT received: stopping the agent (process group {pgid})"
        )),
        "{first}"
    );
    assert!(first.contains("SIGKILL in 10m00s") && first.contains("Ctrl-C again"), "{first}");
    assert!(!group_alive(pgid).is_empty(), "it ignores SIGTERM: still running in the grace");
    nix::sys::signal::kill(kit_pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let second = match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(l) => l,
        Err(e) => {
            let o = child.wait_with_output().unwrap();
            panic!(
                "no notice at the second Ctrl-C ({e}): {:?} {} {:?}",
                o.status,
                text(&o),
                events(d.path(), "agent_end")
            );
        }
    };
    assert_eq!(second, format!("loop: SIGINT again: killing the agent's process group {pgid} now"));
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(start.elapsed() < Duration::from_secs(120), "the loop did not end after SIGKILL");
        std::thread::sleep(Duration::from_millis(50));
    }
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", text(&o));
    assert_eq!(group_alive(pgid), Vec::<i32>::new());
    assert_eq!(events(d.path(), "loop_end").pop().unwrap()["outcome"], "interrupted");
}

#[test]
fn a_pause_file_stops_the_loop_with_exit_5() {
    let d = project(false);
    write(d.path(), "longrun/PAUSE", "");
    let o = kit_loop(d.path(), &["--agent", "true"]);
    assert_eq!(o.status.code(), Some(5), "{}", text(&o));
    assert!(last_line(&o).starts_with("paused: longrun/PAUSE exists"), "{}", text(&o));
    assert!(events(d.path(), "agent_start").is_empty());
    assert_eq!(events(d.path(), "loop_end").pop().unwrap()["outcome"], "paused");
}

#[test]
fn the_no_progress_cap_stops_an_agent_that_changes_nothing() {
    let d = project(false);
    write(d.path(), "longrun/config.toml", &format!("{CONFIG}\n[caps]\nmax_no_progress = 2\n"));
    // It claims success and touches only a frozen file, which is reverted: no progress.
    write(
        d.path(),
        "agent.sh",
        "echo 'DONE: all tests pass'\necho '# gone' > tests/test_calc.py\n",
    );
    let o = kit_loop(d.path(), &["--agent", "sh ./agent.sh"]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let cap = events(d.path(), "cap").pop().unwrap();
    assert_eq!((cap["which"].as_str(), cap["used"].as_f64()), (Some("no_progress"), Some(2.0)));
    assert_eq!(events(d.path(), "iteration_start").len(), 2);
    assert!(last_line(&o).starts_with("cap: no_progress cap reached"), "{}", text(&o));
}

#[test]
fn churning_a_file_while_the_tests_fail_the_same_way_is_no_progress() {
    let d = project(false);
    write(d.path(), "longrun/config.toml", &format!("{CONFIG}\n[caps]\nmax_no_progress = 2\n"));
    // Each iteration appends a new comment to the code under test: a new tree every time, but
    // the criteria fail exactly as before (timings aside).
    write(d.path(), "agent.sh", "echo \"# pass $KIT_ITERATION\" >> calc.py\n");
    let o = kit_loop(d.path(), &["--agent", "sh ./agent.sh", "--max-iterations", "6"]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let cap = events(d.path(), "cap").pop().unwrap();
    assert_eq!(cap["which"], "no_progress", "{cap}");
    assert_eq!(events(d.path(), "iteration_start").len(), 2, "{}", text(&o));
    // A change in how they fail is progress: half a fix resets the count.
    let d = project(false);
    write(d.path(), "longrun/config.toml", &format!("{CONFIG}\n[caps]\nmax_no_progress = 2\n"));
    write(
        d.path(),
        "agent.sh",
        "case $KIT_ITERATION in 2) sed -i 's/return a - b/return a + b if b > 0 else a - b/' calc.py;; esac\n",
    );
    let o = kit_loop(d.path(), &["--agent", "sh ./agent.sh", "--max-iterations", "6"]);
    // Iteration 1: nothing (1 without progress); 2: one test fewer failing (progress, reset);
    // 3 and 4: nothing, so the cap stops it after 4.
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert_eq!(events(d.path(), "iteration_start").len(), 4, "{}", text(&o));
}

#[test]
fn uncommitted_work_swept_away_by_the_agent_comes_back_from_kits_checkpoint() {
    let d = project(false);
    write(d.path(), "notes/plan.md", "my uncommitted plan\n");
    write(d.path(), "calc.py", &format!("{CALC_BROKEN}# my uncommitted comment\n"));
    // The agent hides everything uncommitted, as `git stash -u` does.
    write(d.path(), "agent.sh", "git stash -u -q\n");
    let o = kit_loop(d.path(), &["--agent", "sh ./agent.sh", "--max-iterations", "1"]);
    assert!(
        text(&o)
            .contains("loop: the tree has uncommitted changes; kept them as refs/kit/checkpoint"),
        "{}",
        text(&o)
    );
    assert_eq!(events(d.path(), "checkpoint").len(), 1);
    assert!(!d.path().join("notes/plan.md").exists(), "the agent swept it away");
    let restore = Command::new("git")
        .args(["checkout", "refs/kit/checkpoint", "--", "."])
        .current_dir(d.path())
        .envs(kit(d.path()).get_envs().filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned()))))
        .output()
        .unwrap();
    assert!(restore.status.success(), "{}", String::from_utf8_lossy(&restore.stderr));
    assert_eq!(read(d.path(), "notes/plan.md"), "my uncommitted plan\n");
    assert!(read(d.path(), "calc.py").ends_with("# my uncommitted comment\n"));
}

#[test]
fn a_commit_that_weakens_a_frozen_test_and_planted_git_settings_are_named() {
    let d = project(false);
    // The agent commits a weakened test and plants a hooks path and a hook.
    write(
        d.path(),
        "agent.sh",
        "printf 'import unittest\\n' > tests/test_calc.py\ngit add -A && git commit -qm 'simplify tests'\ngit config core.hooksPath .evil\nprintf '#!/bin/sh\\n' > .git/hooks/post-checkout\n",
    );
    let o = kit_loop(d.path(), &["--agent", "sh ./agent.sh", "--max-iterations", "1"]);
    let all = text(&o);
    assert_eq!(read(d.path(), "tests/test_calc.py"), TEST_CALC, "the tree is restored");
    let fc = events(d.path(), "frozen_commit").pop().unwrap_or_else(|| panic!("{all}"));
    assert_eq!(fc["paths"], serde_json::json!(["tests/test_calc.py"]));
    let commit = fc["commits"][0].as_str().unwrap().to_string();
    assert!(
        all.contains(&format!(
            "loop: commit {commit} made during this run changes tests/test_calc.py"
        )),
        "{all}"
    );
    assert!(all.contains(&format!("git revert {commit}")), "{all}");
    let planted = events(d.path(), "git_config_changed").pop().unwrap_or_else(|| panic!("{all}"));
    let added: Vec<&str> =
        planted["added"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert!(added.contains(&"core.hookspath=.evil"), "{added:?}");
    assert!(added.iter().any(|a| a.starts_with("hooks/post-checkout sha256:")), "{added:?}");
    assert!(all.contains("loop: git settings appeared during the run and outlive it"), "{all}");
}

#[test]
fn freeze_is_refused_while_an_interrupted_run_is_open_until_the_run_is_closed() {
    let d = project(false);
    let mut first = spawn_loop(d.path(), &["--agent", "sleep 1000"]);
    wait_for("the agent", Duration::from_secs(60), || !events(d.path(), "agent_start").is_empty());
    first.kill().unwrap();
    first.wait().unwrap();
    // Whoever killed it weakens a test and tries to make that the frozen version.
    write(d.path(), "tests/test_calc.py", "import unittest\n");
    let manifest = read(d.path(), "longrun/frozen.toml");
    let o = kit(d.path()).args(["freeze", "tests"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("was interrupted and its run is still open"), "{}", text(&o));
    assert_eq!(read(d.path(), "longrun/frozen.toml"), manifest, "the manifest is untouched");
    // Closing the run: a paused loop restores the test first, then ends the run.
    write(d.path(), "longrun/PAUSE", "");
    let o = kit_loop(d.path(), &["--agent", "true"]);
    assert_eq!(o.status.code(), Some(5), "{}", text(&o));
    assert_eq!(read(d.path(), "tests/test_calc.py"), TEST_CALC);
    std::fs::remove_file(d.path().join("longrun/PAUSE")).unwrap();
    let o = kit(d.path()).args(["freeze", "tests"]).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn a_lock_record_that_does_not_name_the_flock_holder_is_not_believed() {
    let d = project(false);
    // Some process holds the flock, and the record in the file names another pid (here this
    // test's, which is no loop): kit must not present that pid as the loop to kill.
    let me = std::process::id();
    let record = format!(
        r#"{{"pid":{me},"host":"{}","started":"2026-01-01T00:00:00Z","command":"kit loop"}}"#,
        kit_harness::longrun::lock::host_name()
    );
    write(d.path(), "longrun/.lock", &record);
    let mut holder = Command::new("flock")
        .args(["longrun/.lock", "sleep", "60"])
        .current_dir(d.path())
        .spawn()
        .unwrap();
    wait_for("the flock", Duration::from_secs(60), || {
        kit_harness::longrun::lock::live_holder(&d.path().join("longrun/.lock")).is_some()
    });
    let o = kit_loop(d.path(), &["--agent", "true"]);
    holder.kill().unwrap();
    holder.wait().unwrap();
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    let all = text(&o);
    assert!(
        all.contains(&format!("not proven to be a kit loop: the lock record names pid {me}")),
        "{all}"
    );
    assert!(all.contains("but the flock is held by pid"), "{all}");
    assert!(!all.contains("kill the pid"), "{all}");
}

#[test]
fn an_agent_started_directly_receives_the_sigterm_of_the_timeout() {
    // The fake agent is started without a shell, as `claude` and `codex` are: it must not
    // inherit the signals kit blocks for itself, or SIGTERM never arrives and only the SIGKILL
    // after the grace period ends it.
    let d = project(false);
    let o =
        kit_loop(d.path(), &["--agent", "fake:race", "--timeout", "2s", "--max-iterations", "1"]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let end = events(d.path(), "agent_end").pop().unwrap();
    assert_eq!(end["timed_out"], true, "{end}");
    assert_eq!(end["signal"], 15, "ended by SIGTERM, not by the SIGKILL after the grace: {end}");
}

/// A shell agent that prints a Claude Code stream-json `system`/`init` and `result` with usage.
fn spending_agent(root: &Path, model: &str) {
    write(
        root,
        "agent.sh",
        &format!(
            "echo '{{\"type\":\"system\",\"subtype\":\"init\",\"model\":\"{model}\"}}'\necho 'working' >&2\necho '{{\"type\":\"result\",\"subtype\":\"success\",\"total_cost_usd\":4.0,\"usage\":{{\"input_tokens\":1000000,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0,\"output_tokens\":100000}}}}'\n"
        ),
    );
    write(root, "longrun/config.toml", &format!("{CONFIG}\n[caps]\nmax_cost_usd = 8.0\n"));
}

#[test]
fn the_cost_cap_stops_the_loop_on_usage_priced_from_the_table() {
    let d = project(false);
    spending_agent(d.path(), "claude-sonnet-4-5-20250929");
    let o = kit_loop(d.path(), &["--agent", "sh ./agent.sh"]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let end = events(d.path(), "agent_end").pop().unwrap();
    // claude-sonnet-4-5: 1M input at $3 and 100k output at $15 per million = $4.50.
    assert!((end["cost_usd"].as_f64().unwrap() - 4.5).abs() < 1e-9, "{end}");
    assert_eq!(end["usage"]["model"], "claude-sonnet-4-5-20250929");
    assert_eq!(end["usage"]["output_tokens"], 100_000);
    let cap = events(d.path(), "cap").pop().unwrap();
    assert_eq!((cap["which"].as_str(), cap["used"].as_f64()), (Some("cost"), Some(9.0)));
    assert!(events(d.path(), "unpriced").is_empty());
    assert!(
        last_line(&o).starts_with("cap: cost cap reached (cost $9.00 of $8.00)"),
        "{}",
        text(&o)
    );
}

#[test]
fn an_unpriced_model_counts_the_agents_reported_cost_and_is_journaled() {
    let d = project(false);
    spending_agent(d.path(), "claude-future-9");
    let o = kit_loop(d.path(), &["--agent", "sh ./agent.sh", "--max-iterations", "1"]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let unpriced = events(d.path(), "unpriced").pop().unwrap();
    assert_eq!(unpriced["models"][0], "claude-future-9");
    assert_eq!(events(d.path(), "agent_end").pop().unwrap()["cost_usd"], 4.0);
}

#[test]
fn an_agent_that_is_not_installed_is_named_before_anything_runs() {
    let d = project(false);
    // A PATH with only what kit and the criteria need, so `codex` is missing on any machine.
    let bin = tempfile::tempdir().unwrap();
    for tool in ["git", "python3", "sh"] {
        let found = kit_core::proc::find_on_path(tool).unwrap();
        std::os::unix::fs::symlink(found, bin.path().join(tool)).unwrap();
    }
    let o =
        kit(d.path()).env("PATH", bin.path()).args(["loop", "--agent", "codex"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("the agent program `codex` is not installed"), "{}", text(&o));
    assert!(text(&o).contains("next: kit doctor"), "{}", text(&o));
    assert!(events(d.path(), "baseline").is_empty(), "nothing ran");
}

#[test]
fn a_malformed_config_exits_2_naming_the_line() {
    let d = project(false);
    write(d.path(), "longrun/config.toml", "[caps]\nmax_iterations = \"ten\"\n");
    let before = state(d.path());
    let o = kit_loop(d.path(), &["--agent", "true"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("config.toml:2"), "{}", text(&o));
    assert_eq!(
        state(d.path()),
        before,
        "a refusal leaves the journal and the lock file as they were"
    );
}

#[test]
fn a_goal_below_the_required_level_is_refused_with_the_reason() {
    let d = project(false);
    write(
        d.path(),
        "longrun/goal.md",
        "# Goal: weak\n\n## Criteria\n- function: `python3 -m unittest discover -s tests` → `OK`\n",
    );
    let before = state(d.path());
    let o = kit_loop(d.path(), &["--agent", "true"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("below the level 3"), "{t}");
    assert!(t.contains("next: kit goal check"), "{t}");
    assert!(!t.contains("took longrun/.lock"), "{t}");
    assert_eq!(
        state(d.path()),
        before,
        "a refusal leaves the journal and the lock file as they were"
    );
}

#[test]
fn status_reports_criteria_reverts_caps_and_outcome_from_the_journal() {
    let d = project(false);
    write(
        d.path(),
        "longrun/progress.md",
        "# Progress\n\n## Next action\n- make add return the sum\n",
    );
    write(d.path(), "agent.sh", "sed -i 's/a - b/a + b/' calc.py\necho x >> tests/test_calc.py\n");
    assert_eq!(kit_loop(d.path(), &["--agent", "sh ./agent.sh"]).status.code(), Some(0));
    let o = kit(d.path()).args(["status", "--json"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let s: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(s["schema"], "kit.status/1");
    assert_eq!(s["goal"]["title"], "add returns the sum");
    assert_eq!(s["goal"]["level"], 3);
    assert_eq!(s["owner"], Value::Null);
    assert_eq!(s["iteration"], 1);
    assert_eq!(
        (s["criteria"]["passed"].as_u64(), s["criteria"]["total"].as_u64()),
        (Some(2), Some(2))
    );
    assert_eq!(s["reverts"]["total"], 1);
    assert_eq!(s["caps"]["iterations"]["used"], 1.0);
    assert_eq!(s["caps"]["iterations"]["limit"], 6.0, "goal.md's budget is stricter than config");
    assert_eq!(s["next_action"], "make add return the sum");
    assert_eq!(s["outcome"]["outcome"], "done");
    let t = text(&kit(d.path()).arg("status").output().unwrap());
    assert!(t.contains("outcome: done: every criterion passes (2 of 2) at iteration 1"), "{t}");
    assert!(
        t.contains("reverts: 1 (1 this run; last: tests/test_calc.py modified at iteration 1)"),
        "{t}"
    );
}

#[test]
fn status_names_the_live_owner_while_a_loop_runs() {
    let d = project(false);
    gated_agent(d.path(), "slow.sh", "go");
    let mut child = spawn_loop(d.path(), &["--agent", "sh slow.sh", "--max-iterations", "1"]);
    wait_for("the agent", Duration::from_secs(60), || !events(d.path(), "agent_start").is_empty());
    let status = kit(d.path()).args(["status", "--json"]).output().unwrap();
    write(d.path(), "go", "");
    let s: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(s["owner"]["pid"], child.id());
    assert_eq!(s["outcome"], Value::Null);
    assert_eq!(child.wait().unwrap().code(), Some(3), "status never took the lock from the loop");
}

#[test]
fn doctor_names_the_memory_enforcer_and_the_programs() {
    let d = tempfile::tempdir().unwrap();
    let o = kit(d.path()).arg("doctor").output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let t = text(&o);
    assert!(t.starts_with("memory cap: "), "{t}");
    assert!(t.contains("systemd-run") || t.contains("watchdog"), "{t}");
    assert!(t.lines().any(|l| l.trim_start().starts_with("git ") && l.contains("/git")), "{t}");
    assert!(t.lines().any(|l| l.trim_start().starts_with("fake-agent ")), "{t}");
}

/// The journal and the lock file as they are, to show a refused run wrote nothing.
fn state(root: &Path) -> (String, String, bool) {
    (
        read(root, "longrun/journal.jsonl"),
        read(root, "longrun/.lock"),
        root.join("longrun/.runs").exists(),
    )
}

#[test]
fn an_unknown_fake_scenario_exits_2_before_the_lock_naming_the_scenarios() {
    let d = project(false);
    let before = state(d.path());
    let o = kit_loop(d.path(), &["--agent", "fake:bogus", "--max-iterations", "3"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let t = text(&o);
    assert!(
        t.contains(&format!(
            "no fake-agent scenario `bogus`; the scenarios are: {}\n",
            kit_harness::fake_agent::scenario_names().join(", ")
        )),
        "{t}"
    );
    assert!(t.contains("next: kit loop --agent fake:finish"), "{t}");
    assert!(!t.contains("took longrun/.lock"), "{t}");
    assert_eq!(state(d.path()), before, "no lock record, journal line or run file");
}

#[test]
fn flag_errors_exit_2_naming_flag_and_value_before_the_lock_and_the_baseline() {
    let d = project(false);
    let before = state(d.path());
    let cases: [(&[&str], &str); 9] = [
        (&["--timeout", "abc"], "--timeout: `abc` is not a duration"),
        (&["--memory-max", "5X"], "--memory-max: `5X` is not a memory size"),
        (&["--max-wall", "-1"], "--max-wall: `-1` is not a duration"),
        (&["--max-iterations", "0"], "--max-iterations 0: caps may not be off"),
        (&["--max-iterations", "-3"], "'-3' for '--max-iterations <N>'"),
        (&["--timeout", "0s"], "--timeout 0s: caps may not be off"),
        (&["--max-wall", "0s"], "--max-wall 0s: caps may not be off"),
        (&["--memory-max", "1K"], "--memory-max: `1K` is below the smallest memory cap"),
        (&["--memory-max", "99999999999T"], "--memory-max: `99999999999T` is too large"),
    ];
    for (args, want) in cases {
        let o = kit_loop(d.path(), &[&["--agent", "sh -c 'echo ran > ran'"], args].concat());
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(want), "{args:?}: {}", text(&o));
        assert_eq!(state(d.path()), before, "{args:?} wrote nothing");
        assert!(!d.path().join("ran").exists());
    }
}

#[test]
fn a_handoff_the_agent_saves_during_the_loop_keeps_its_journal_record() {
    // `kit handoff save` run by the agent journals `handoff_saved`; the loop cuts what the agent
    // appends to the journal, but must keep that record (as it keeps hook events), or the
    // handoff could never verify after a loop.
    let d = project(false);
    let forged = fixture("loop_end", json!({"outcome": "done"}));
    write(
        d.path(),
        "agent.sh",
        &format!("cat > /dev/null\nsed -i 's/a - b/a + b/' calc.py\nkit handoff save <<'EOF'\nDone: add returns the sum.\nNext action: none.\nEOF\necho '{forged}' >> longrun/journal.jsonl\n"),
    );
    let o = kit_loop(d.path(), &["--agent", "sh ./agent.sh"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let saved = events(d.path(), "handoff_saved");
    assert_eq!(saved.len(), 1, "{:?}", journal(d.path()));
    assert_eq!(events(d.path(), "loop_end").len(), 1, "the forged loop_end is cut");
    let o = kit(d.path()).args(["handoff", "verify"]).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("ok   the journal records this save"), "{}", text(&o));
}

#[test]
fn an_agent_sh_cannot_start_stops_the_run_at_iteration_1_with_exit_2() {
    let d = project(false);
    write(d.path(), "agent.sh", "sed -i 's/a - b/a + b/' calc.py\n"); // not executable
                                                                      // A program that is not there at all is refused before the lock, the journal untouched.
    let before = journal(d.path());
    let o = kit_loop(d.path(), &["--agent", "no-such-agent-for-kit --go", "--max-iterations", "5"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("the agent program `no-such-agent-for-kit` is not installed"),
        "{}",
        text(&o)
    );
    assert_eq!(journal(d.path()), before, "nothing journaled");
    let cases = [
        ("./agent.sh", "exited 126 (found but not executable) in iteration 1"),
        ("sh -c 'no-such-agent-for-kit --go'", "exited 127 (command not found) in iteration 2"),
    ];
    for (i, (agent, want)) in cases.into_iter().enumerate() {
        let o = kit_loop(d.path(), &["--agent", agent, "--max-iterations", "5"]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        let last = last_line(&o);
        assert!(last.starts_with(&format!("agent_failed: the agent `{agent}` {want}")), "{last}");
        assert!(last.contains("next: fix the agent command"), "{last}");
        assert_eq!(events(d.path(), "agent_start").len(), i + 1, "one iteration per run");
        assert!(events(d.path(), "criteria").is_empty(), "the criteria never ran after it");
        let end = events(d.path(), "loop_end").pop().unwrap();
        assert_eq!(
            (end["outcome"].as_str(), end["exit"].as_u64()),
            (Some("agent_failed"), Some(2))
        );
    }
    // An agent that changed the tree before a missing command is not a failed start.
    let o = kit_loop(d.path(), &["--agent", "sh ./agent.sh; no-such-tool-for-kit"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(last_line(&o), "done: every criterion passes (2 of 2) at iteration 3");
}

#[test]
fn the_wall_cap_cutting_an_iteration_short_is_reported_as_the_wall_cap() {
    let d = project(false);
    // The wall cap (60 s) is far below the iteration timeout: the remaining wall time ends the
    // agent, and the run stops there, without running the criteria past the cap. The cap counts
    // from the baseline, so it leaves a loaded machine time to run the baseline's criteria.
    let o = kit_loop(d.path(), &["--agent", "sleep 1000", "--max-wall", "60s", "--timeout", "10m"]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(text(&o).contains("iteration 1: agent stopped at the wall-time cap"), "{}", text(&o));
    // Not reported as the iteration timeout (the caps line names the timeout's value only).
    let all = text(&o);
    let timeout_lines: Vec<&str> =
        all.lines().filter(|l| l.contains("timeout") && !l.starts_with("loop: caps:")).collect();
    assert!(timeout_lines.is_empty(), "{}", text(&o));
    assert!(last_line(&o).starts_with("cap: wall cap reached (wall time "), "{}", text(&o));
    let end = events(d.path(), "agent_end").pop().unwrap();
    assert_eq!((end["wall_cut"].as_bool(), end["timed_out"].as_bool()), (Some(true), Some(false)));
    assert_eq!(events(d.path(), "cap").pop().unwrap()["which"], "wall");
    assert!(events(d.path(), "criteria").is_empty());
    assert_eq!(events(d.path(), "agent_start").len(), 1);
    let loop_end = events(d.path(), "loop_end").pop().unwrap();
    assert_eq!((loop_end["outcome"].as_str(), loop_end["exit"].as_u64()), (Some("cap"), Some(3)));
}

#[test]
fn freeze_and_restore_are_refused_while_a_loop_runs_and_check_is_not() {
    let d = project(false);
    let frozen = read(d.path(), "longrun/frozen.toml");
    // The agent waits (at most 60 s) for the test to let it go.
    let agent = "for i in $(seq 600); do [ -e release ] && break; sleep 0.1; done";
    let mut first = spawn_loop(d.path(), &["--agent", agent, "--max-iterations", "1"]);
    wait_for("the loop's agent", Duration::from_secs(30), || {
        !events(d.path(), "agent_start").is_empty()
    });
    write(d.path(), "calc.py", CALC_FIXED);
    for args in [&["freeze", "calc.py"][..], &["freeze", "--restore"]] {
        let o = kit(d.path()).args(args).output().unwrap();
        assert_eq!(o.status.code(), Some(4), "{args:?}: {}", text(&o));
        let t = text(&o);
        assert!(t.contains(&format!("longrun/.lock: pid {} on ", first.id())), "{args:?}: {t}");
        assert!(t.contains("next: kit status"), "{args:?}: {t}");
    }
    assert_eq!(read(d.path(), "longrun/frozen.toml"), frozen, "the manifest is untouched");
    let o = kit(d.path()).args(["freeze", "--check"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "--check only reads: {}", text(&o));
    write(d.path(), "release", "");
    assert_eq!(first.wait().unwrap().code(), Some(0), "the loop went on undisturbed");
    // With the loop ended, freezing works again.
    kit_ok(d.path(), &["freeze", "calc.py"]);
}

#[test]
fn an_agent_that_wipes_untracked_files_or_longrun_does_not_stop_the_loop() {
    for wipe in ["git clean -fdxq", "rm -rf longrun"] {
        let d = project(false);
        // Iteration 1 prints, wipes, weakens a frozen test and prints again; iteration 2 works.
        let agent = format!(
            "if [ \"$KIT_ITERATION\" = 1 ]; then echo before-the-wipe; {wipe}; \
             echo '# weakened' >> tests/test_calc.py; echo after-the-wipe; \
             else sed -i 's/a - b/a + b/' calc.py; fi"
        );
        let o = kit_loop(d.path(), &["--agent", &agent, "--max-iterations", "3"]);
        assert_eq!(o.status.code(), Some(0), "{wipe}: {}", text(&o));
        assert_eq!(last_line(&o), "done: every criterion passes (2 of 2) at iteration 2", "{wipe}");
        let log = read(d.path(), "longrun/.runs/001.log");
        assert!(
            log.contains("before-the-wipe") && log.contains("after-the-wipe"),
            "{wipe}: {log:?}"
        );
        assert!(
            text(&o).contains("iteration 1: the agent deleted longrun/.runs/001.log"),
            "{wipe}: {}",
            text(&o)
        );
        assert_eq!(read(d.path(), "tests/test_calc.py"), TEST_CALC, "{wipe}");
        assert_eq!(read(d.path(), "longrun/goal.md"), GOAL, "{wipe}");
        let cheats = events(d.path(), "cheat");
        let has = |path: &str, kind: &str| {
            cheats.iter().any(|c| c["path"] == path && c["kind"] == kind && c["iteration"] == 1)
        };
        assert!(has("longrun/.runs/001.log", "run_log_deleted"), "{wipe}: {cheats:?}");
        assert!(has("tests/test_calc.py", "modified"), "{wipe}: {cheats:?}");
        assert!(d.path().join("longrun/.runs/002.prompt.md").is_file(), "{wipe}");
    }
}

#[test]
fn ctrl_c_while_a_criterion_runs_ends_its_group_and_exits_130() {
    let d = project(false);
    // The function criterion marks that it started, then sleeps for ten minutes.
    let goal = GOAL.replace(
        "`python3 -m unittest tests.test_calc -v`",
        "`mkdir -p .home && touch .home/criterion-started && sleep 600.25 && python3 -m unittest tests.test_calc -v`",
    );
    write(d.path(), "longrun/goal.md", &goal);
    write(
        d.path(),
        "longrun/config.toml",
        &CONFIG.replace("required_level = 3", "required_level = 1"),
    );
    let child = spawn_loop(d.path(), &["--agent", "true"]);
    wait_for("the criterion", Duration::from_secs(60), || {
        d.path().join(".home/criterion-started").exists()
    });
    let kit_pid = nix::unistd::Pid::from_raw(child.id() as i32);
    // Measured from the stop, with room for a loaded machine; the criterion would sleep 600 s.
    let started = Instant::now();
    nix::sys::signal::kill(kit_pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "took {:?}: {}",
        started.elapsed(),
        text(&o)
    );
    assert_eq!(o.status.code(), Some(130), "{}", text(&o));
    assert!(text(&o).contains("ended the running criterion (goal.md:7)"), "{}", text(&o));
    assert!(last_line(&o).starts_with("interrupted: stopped by SIGINT"), "{}", text(&o));
    assert_eq!(processes_running(d.path(), "sleep 600.25"), 0, "the criterion's group was ended");
    assert!(events(d.path(), "agent_start").is_empty(), "no agent after the stop");
    assert_eq!(events(d.path(), "loop_end").pop().unwrap()["outcome"], "interrupted");
    assert_eq!(read(d.path(), "longrun/.lock"), "", "the lock was released cleanly");
}

#[test]
fn criteria_whose_program_is_missing_stop_the_loop_before_the_agent_with_exit_2() {
    let d = project(false);
    // A PATH with the programs kit and sh need, but no python3.
    let bin = d.path().join(".home/bin");
    std::fs::create_dir_all(&bin).unwrap();
    for prog in ["sh", "git", "true"] {
        let found = ["/usr/bin", "/bin", "/usr/local/bin"]
            .iter()
            .map(|dir| Path::new(dir).join(prog))
            .find(|p| p.exists())
            .unwrap_or_else(|| panic!("{prog} not found"));
        std::os::unix::fs::symlink(found, bin.join(prog)).unwrap();
    }
    let o = kit(d.path()).env("PATH", &bin).args(["loop", "--agent", "true"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("goal.md:7: every criterion exited 127 (command not found)"), "{t}");
    assert!(t.contains("longrun/goal.md:8: `python3` is not on PATH"), "{t}");
    assert!(t.contains("next: install python3 or put it on PATH"), "{t}");
    assert!(events(d.path(), "agent_start").is_empty(), "the agent never started");
    let end = events(d.path(), "loop_end").pop().unwrap();
    assert_eq!((end["outcome"].as_str(), end["exit"].as_u64()), (Some("refused"), Some(2)));
}

#[test]
fn a_loop_killed_mid_run_continues_its_run_with_the_spent_budget() {
    let d = project(false);
    write(d.path(), "longrun/config.toml", &format!("{CONFIG}\n[caps]\nmax_no_progress = 10\n"));
    // Iterations 1 and 2 change nothing; iteration 3 waits to be killed with kit.
    write(d.path(), "agent.sh", "case $KIT_ITERATION in 3) touch at3; exec sleep 1000;; esac\n");
    let args = ["--agent", "sh ./agent.sh", "--max-iterations", "4"];
    let mut first = spawn_loop(d.path(), &args);
    wait_for("iteration 3", Duration::from_secs(120), || d.path().join("at3").exists());
    first.kill().unwrap();
    first.wait().unwrap();

    let o = kit_loop(d.path(), &args);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let out = text(&o);
    let line = out.lines().find(|l| l.starts_with("loop: continuing run 1")).unwrap_or_default();
    assert!(line.contains("last: killed): 3 iterations, "), "{out}");
    let numbers: Vec<u64> = events(d.path(), "iteration_start")
        .iter()
        .map(|e| e["iteration"].as_u64().unwrap())
        .collect();
    assert_eq!(numbers, [1, 2, 3, 4], "numbering goes on; the cap counts the 3 spent");
    let starts = events(d.path(), "loop_start");
    assert_eq!((starts[1]["run"].as_u64(), starts[1]["resumed"].as_bool()), (Some(1), Some(true)));
    assert_eq!(starts[1]["spent"]["iterations"], 3);
    assert_eq!(starts[1]["run_started"], starts[0]["run_started"]);
    let cap = events(d.path(), "cap").pop().unwrap();
    assert_eq!((cap["which"].as_str(), cap["used"].as_f64()), (Some("iterations"), Some(4.0)));
    assert!(last_line(&o).contains("iterations cap reached (4 of 4 iterations used)"), "{out}");

    // Under --max-iterations 4 the run is finished: kit loop refuses it, naming the flag.
    let before = journal(d.path());
    let o = kit_loop(d.path(), &args);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("run 1 reached its iterations cap (4 of 4 iterations used)"),
        "{}",
        text(&o)
    );
    assert!(text(&o).contains("kit loop --new-run starts run 2"), "{}", text(&o));
    assert_eq!(journal(d.path()), before, "a refusal journals nothing");
    let s = kit(d.path()).arg("status").output().unwrap();
    let s = text(&s);
    assert!(s.contains("run: 1 (started "), "{s}");
    assert!(s.contains("2 loop processes, last: cap); spent 4 iterations"), "{s}");
    assert!(s.contains("caps: iterations 4 of 4 (flag)"), "{s}");
    // A plain kit loop has goal.md's budget of 6 iterations: 2 are left, and it would continue.
    assert!(s.contains("next loop: continues run 1 with what it spent (4 iterations, "), "{s}");

    // A new run has the whole budget again; raising the cap would have continued run 1.
    let o = kit_loop(d.path(), &["--agent", "true", "--max-iterations", "1", "--new-run"]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(
        text(&o).contains("loop: starting run 2 (--new-run); run 1 (cap) had spent 4 iterations"),
        "{}",
        text(&o)
    );
    assert_eq!(events(d.path(), "loop_start").pop().unwrap()["run"], 2);
    assert_eq!(events(d.path(), "iteration_start").pop().unwrap()["iteration"], 5);
}

#[test]
fn pause_stops_after_the_iteration_pause_now_at_once_and_resume_continues_the_run() {
    let d = project(false);
    gated_agent(d.path(), "slow.sh", "go");
    let args = ["--agent", "sh slow.sh"];
    let first = spawn_loop(d.path(), &args);
    wait_for("the agent", Duration::from_secs(60), || !events(d.path(), "agent_start").is_empty());
    let o = kit(d.path()).args(["pause", "--reason", "lunch"]).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).starts_with(&format!(
            "paused: the loop (pid {}) stops after its current iteration",
            first.id()
        )),
        "{}",
        text(&o)
    );
    let s = text(&kit(d.path()).arg("status").output().unwrap());
    assert!(s.contains("paused: since 2026-10-01T09:00:00Z by "), "{s}");
    assert!(s.contains("(kit pause, pid ") && s.contains("): lunch; kit resume to go on"), "{s}");
    write(d.path(), "go", "");
    let o = first.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(5), "{}", text(&o));
    assert!(
        last_line(&o).starts_with("paused: longrun/PAUSE exists (paused since "),
        "{}",
        text(&o)
    );
    assert_eq!(events(d.path(), "criteria").len(), 1, "the iteration ended with its criteria");
    let p = events(d.path(), "paused").pop().unwrap();
    assert_eq!((p["now"].as_bool(), p["by"]["reason"].as_str()), (Some(false), Some("lunch")));

    let o = kit(d.path()).arg("resume").output().unwrap();
    assert!(text(&o).starts_with("resumed: removed longrun/PAUSE (paused since "), "{}", text(&o));
    assert!(!d.path().join("longrun/PAUSE").exists());

    // --now: the agent of the next iteration is stopped at once, its criteria are not run.
    std::fs::remove_file(d.path().join("go")).unwrap();
    let second = spawn_loop(d.path(), &args);
    wait_for("the second agent", Duration::from_secs(60), || {
        events(d.path(), "agent_start").len() == 2
    });
    let pgid = events(d.path(), "agent_start").pop().unwrap()["pgid"].as_i64().unwrap();
    let o = kit(d.path()).args(["pause", "--now"]).output().unwrap();
    assert!(text(&o).contains("stops its agent now"), "{}", text(&o));
    let o = second.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(5), "{}", text(&o));
    assert!(
        text(&o).contains("iteration 2: agent stopped at once by kit pause --now"),
        "{}",
        text(&o)
    );
    assert!(
        text(&o).contains("the agent of iteration 2 was stopped at once and its criteria not run"),
        "{}",
        text(&o)
    );
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("loop: kit pause --now: stopping the agent"),
        "{}",
        text(&o)
    );
    assert_eq!(group_alive(pgid), Vec::<i32>::new());
    assert_eq!(events(d.path(), "agent_end").pop().unwrap()["paused"], true);
    assert_eq!(events(d.path(), "criteria").len(), 1, "no criteria after a pause --now");
    let s = text(&kit(d.path()).arg("status").output().unwrap());
    assert!(s.contains("next loop: exits 5: paused since "), "{s}");

    kit_ok(d.path(), &["resume"]);
    write(d.path(), "fix.sh", "sed -i 's/a - b/a + b/' calc.py\n");
    let o = kit_loop(d.path(), &["--agent", "sh fix.sh"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("loop: continuing run 1 (started "), "{}", text(&o));
    assert_eq!(last_line(&o), "done: every criterion passes (2 of 2) at iteration 3");
    assert!(events(d.path(), "loop_start").iter().all(|e| e["run"] == 1));
}

/// Start `kit loop --ensure-alive ARGS` `n` times at once; their (exit status, output) pairs.
fn ensure_alive_at_once(root: &Path, n: usize, args: &[&str]) -> Vec<(Option<i32>, String)> {
    let children: Vec<Child> = (0..n)
        .map(|_| {
            kit(root)
                .args(["loop", "--ensure-alive"])
                .args(args)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    children
        .into_iter()
        .map(|c| {
            let o = c.wait_with_output().unwrap();
            (o.status.code(), text(&o))
        })
        .collect()
}

/// The pid in the one `ensure-alive: started a loop (pid N, …` line among `results`, asserting
/// every other call found it alive.
fn the_one_started(results: &[(Option<i32>, String)]) -> i32 {
    let mut started = Vec::new();
    for (code, out) in results {
        assert_eq!(*code, Some(0), "{out}");
        assert_eq!(out.lines().count(), 1, "one status line: {out}");
        if let Some(rest) = out.strip_prefix("ensure-alive: started a loop (pid ") {
            started.push(rest.split(',').next().unwrap().parse::<i32>().unwrap());
        } else {
            assert!(out.starts_with("ensure-alive: a loop is alive (pid "), "{out}");
        }
    }
    assert_eq!(started.len(), 1, "exactly one loop started: {results:?}");
    started[0]
}

#[test]
fn ensure_alive_20_at_once_starts_one_loop_and_after_a_kill_takes_over_once() {
    let d = project(false);
    gated_agent(d.path(), "slow.sh", "go");
    let args = ["--agent", "sh slow.sh", "--max-iterations", "3"];
    let pid = the_one_started(&ensure_alive_at_once(d.path(), 20, &args));
    wait_for("the loop_start", Duration::from_secs(60), || {
        !events(d.path(), "loop_start").is_empty()
    });
    assert_eq!(events(d.path(), "loop_start").len(), 1);
    let holder = kit_harness::longrun::lock::live_holder(&d.path().join("longrun/.lock")).unwrap();
    assert_eq!(holder.pid as i32, pid, "the lock was taken before ensure-alive returned");
    // Detached: its own session, stdin from /dev/null, output under longrun/.runs/.
    let sid = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let sid: i32 =
        sid.rsplit(')').next().unwrap().split_whitespace().nth(3).unwrap().parse().unwrap();
    assert_eq!(sid, pid, "the loop leads its own session");
    let stdin = std::fs::read_link(format!("/proc/{pid}/fd/0")).unwrap();
    assert_eq!(stdin, Path::new("/dev/null"));
    wait_for("the agent", Duration::from_secs(60), || !events(d.path(), "agent_start").is_empty());
    let logs: Vec<_> = std::fs::read_dir(d.path().join("longrun/.runs"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("loop-"))
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    let log = std::fs::read_to_string(logs[0].path()).unwrap();
    assert!(log.starts_with(&format!("loop: took longrun/.lock (pid {pid})")), "{log}");

    // SIGKILL leaves a dead holder's record in the lock: 20 calls take it over exactly once.
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL)
        .unwrap();
    wait_for("the loop to die", Duration::from_secs(30), || !kit_core::proc::is_alive(pid));
    let second = the_one_started(&ensure_alive_at_once(d.path(), 20, &args));
    assert_ne!(second, pid);
    // It returned once the loop held the lock; the loop journals its start just after.
    wait_for("the second loop_start", Duration::from_secs(60), || {
        events(d.path(), "loop_start").len() == 2
    });
    assert_eq!(events(d.path(), "lock_takeover").len(), 1);
    assert_eq!(events(d.path(), "recovered").len(), 1, "the killed loop's agent group was ended");
    let starts = events(d.path(), "loop_start");
    assert_eq!(starts.len(), 2);
    assert_eq!((starts[1]["run"].as_u64(), starts[1]["resumed"].as_bool()), (Some(1), Some(true)));

    // The run goes to its cap; then there is nothing to start.
    write(d.path(), "go", "");
    wait_for("the run's end", Duration::from_secs(120), || {
        !events(d.path(), "loop_end").is_empty()
    });
    let end = events(d.path(), "loop_end").pop().unwrap();
    assert_eq!((end["outcome"].as_str(), end["run_iterations"].as_u64()), (Some("cap"), Some(3)));
    wait_for("the lock's release", Duration::from_secs(30), || {
        kit_harness::longrun::lock::live_holder(&d.path().join("longrun/.lock")).is_none()
    });
    let o = kit(d.path()).args(["loop", "--ensure-alive"]).args(args).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o).starts_with("ensure-alive: run 1 reached its iterations cap (3 of 3 iterations used); nothing to start"),
        "{}",
        text(&o)
    );
    // Paused: nothing starts, exit 5.
    kit_ok(d.path(), &["pause"]);
    let o = kit(d.path()).args(["loop", "--ensure-alive", "--agent", "true"]).output().unwrap();
    assert_eq!(o.status.code(), Some(5), "{}", text(&o));
    assert!(text(&o).starts_with("ensure-alive: paused since "), "{}", text(&o));
    assert_eq!(events(d.path(), "loop_start").len(), 2);
}

/// A small seeded generator (xorshift64*): the kill instants are the same on every run.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

#[test]
fn kill_fuzz_a_loop_killed_at_random_instants_and_restarted_always_finishes() {
    let d = project(false);
    let root = d.path();
    // No budget in the goal and caps far away: only the kills stop the loop, until the last
    // loop, whose agent is allowed to fix the code.
    write(root, "longrun/goal.md", &GOAL.replace("\n## Budget\n- iterations: 6\n", ""));
    write(root, "longrun/config.toml", &format!("{CONFIG}\n[caps]\nmax_no_progress = 1000\n"));
    write(
        root,
        "agent.sh",
        "echo \"$KIT_ITERATION\" >> agent-ran.txt\n[ -e fix-now ] && sed -i 's/a - b/a + b/' calc.py\nsleep 0.05\n",
    );
    let args = ["--agent", "sh ./agent.sh", "--max-iterations", "1000"];
    let mut rng = Rng(0x5eed_1e55_c0ff_ee00);
    let started = Instant::now();
    let trials = 30;
    for trial in 0..trials {
        // A random instant in the loop's life: a phase (start-up, after its start, after the
        // baseline, while the agent runs, after it, after its criteria), reached by waiting on
        // the journal, then a random few milliseconds more.
        let phases = ["", "loop_start", "baseline", "agent_start", "agent_end", "criteria"];
        let phase = phases[rng.below(phases.len() as u64) as usize];
        let before = events(root, phase).len();
        let mut child = spawn_loop(root, &args);
        if !phase.is_empty() {
            wait_for(phase, Duration::from_secs(60), || events(root, phase).len() > before);
        }
        std::thread::sleep(Duration::from_millis(rng.below(40)));
        let _ = child.kill();
        let status = child.wait().unwrap();
        assert!(
            status.code().is_none_or(|c| c == 130),
            "trial {trial}: the loop ended by itself ({status:?}) before it was killed"
        );
    }
    write(root, "fix-now", "");
    let o = kit_loop(root, &args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(last_line(&o).starts_with("done: every criterion passes (2 of 2)"), "{}", text(&o));

    // The journal has no torn line (journal() panics on one) and every iteration exactly once.
    let numbers: Vec<u64> =
        events(root, "iteration_start").iter().map(|e| e["iteration"].as_u64().unwrap()).collect();
    let want: Vec<u64> = (1..=numbers.len() as u64).collect();
    assert_eq!(numbers, want, "each iteration started once, in order");
    for name in ["agent_end", "criteria"] {
        let mut seen: Vec<u64> =
            events(root, name).iter().map(|e| e["iteration"].as_u64().unwrap()).collect();
        let n = seen.len();
        seen.dedup();
        assert_eq!(seen.len(), n, "{name} journaled twice for an iteration: {seen:?}");
    }
    // Kills landed in every phase: before a loop started, during an agent (its group ended
    // by the next loop), and around the criteria.
    let (takeovers, recovered) =
        (events(root, "lock_takeover").len(), events(root, "recovered").len());
    eprintln!(
        "kill fuzz: {trials} kills, {} loop starts, {takeovers} lock takeovers, {recovered} agent \
         groups recovered, {} iterations, {:?}",
        events(root, "loop_start").len(),
        numbers.len(),
        started.elapsed()
    );
    assert!(takeovers > 0 && recovered > 0, "{takeovers} takeovers, {recovered} recovered");
    // One run throughout: every loop continued it.
    let starts = events(root, "loop_start");
    assert!(starts.iter().all(|e| e["run"] == 1), "{starts:?}");
    assert!(starts.len() > 1, "some kills landed after the loop started");
    // Every state file parses; the tree matches the manifest; the lock is released.
    for args in [&["goal", "check"][..], &["freeze", "--check"], &["status"]] {
        let o = kit(root).args(args).output().unwrap();
        assert!(o.status.success(), "kit {args:?}: {}", text(&o));
        assert!(!text(&o).contains("problem:"), "kit {args:?}: {}", text(&o));
    }
    kit_harness::longrun::config::Config::load(&root.join("longrun/config.toml")).unwrap();
    assert_eq!(read(root, "longrun/.lock"), "");
    assert_eq!(read(root, "tests/test_calc.py"), TEST_CALC);
}
mod agents;
mod ask;
mod cheats;
mod cost;
mod fallback;
mod layers;
mod limits;
mod steer;

/// Issue 22: what the agent can set in git hides none of its changes from the loop. After each
/// cheat the iteration's `criteria` event says the tree differs from HEAD (`dirty`), which
/// `git status` would not: the loop reads the tree by content in a private index.
#[test]
fn git_flags_and_excludes_the_agent_sets_hide_no_change_from_the_loop() {
    let cases = [
        ("assume-unchanged", "git update-index --assume-unchanged calc.py\nsed -i 's/a - b/a + b/' calc.py\n"),
        ("skip-worktree", "git update-index --skip-worktree calc.py\nsed -i 's/a - b/a + b/' calc.py\n"),
        ("core.ignoreStat", "git config core.ignoreStat true\ngit rm -q --cached calc.py\ngit add calc.py\nsed -i 's/a - b/a + b/' calc.py\n"),
        ("core.fsmonitor", "printf '#!/bin/sh\\nprintf \"t\\\\0\"\\n' > .git/fsm.sh\nchmod +x .git/fsm.sh\ngit config core.fsmonitor .git/fsm.sh\nsed -i 's/a - b/a + b/' calc.py\n"),
        ("info/exclude", "echo hidden.py >> .git/info/exclude\necho 'x = 1' > hidden.py\n"),
        (".gitignore", "mkdir -p sub\necho '*' > sub/.gitignore\necho 'x = 1' > sub/hidden.py\n"),
    ];
    for (name, script) in cases {
        let d = project(false);
        // The agent's script lives in .git/, outside the working tree: the tree is clean but
        // for what the script does.
        write(d.path(), ".git/agent.sh", script);
        let o = kit_loop(d.path(), &["--agent", "sh .git/agent.sh", "--max-iterations", "1"]);
        assert!(matches!(o.status.code(), Some(0 | 3)), "{name}: {}", text(&o));
        let crit =
            events(d.path(), "criteria").pop().unwrap_or_else(|| panic!("{name}: {}", text(&o)));
        assert_eq!(crit["dirty"], true, "{name}: the change is seen: {crit}");
    }
}
