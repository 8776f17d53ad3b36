//! `[notify] command`: run by `kit loop` on done, cap and pause with the outcome in its
//! environment; a command that fails or hangs never stops the loop or changes its exit.

use std::path::Path;
use std::time::{Duration, Instant};

use kit_harness::longrun::event::name_of;
use serde_json::Value;

use crate::util::{git_repo, kit};

const GOAL: &str = "# Goal: a file named fixed exists\n\n## End state\nThe file `fixed` exists.\n\n## Criteria\n- function: `test -f fixed`\n";

/// A repository with kit initialised, the goal above and `[notify]` set to `notify` (TOML).
fn project(notify: &str) -> tempfile::TempDir {
    let d = git_repo();
    let o = kit(d.path()).arg("init").output().unwrap();
    assert!(o.status.success(), "{o:?}");
    std::fs::write(d.path().join("longrun/goal.md"), GOAL).unwrap();
    std::fs::write(
        d.path().join("longrun/config.toml"),
        format!("[goal]\nrequired_level = 0\n\n[notify]\n{notify}\n"),
    )
    .unwrap();
    d
}

fn events(root: &Path, name: &str) -> Vec<Value> {
    std::fs::read_to_string(root.join("longrun/journal.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("no torn journal line"))
        .filter(|e| name_of(e) == name)
        .collect()
}

fn loop_out(root: &Path, args: &[&str]) -> (i32, String) {
    let o = kit(root).arg("loop").args(args).output().unwrap();
    let text =
        format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    (o.status.code().unwrap_or(-1), text)
}

#[test]
fn notify_on_done_gets_the_outcome_in_its_environment() {
    let d = project("command = \"env | grep ^KIT_ | sort > notified.env\"");
    let root = d.path();
    let (code, out) = loop_out(root, &["--agent", "touch fixed"]);
    assert_eq!(code, 0, "{out}");
    let last = out.lines().last().unwrap();
    assert_eq!(last, "done: every criterion passes (1 of 1) at iteration 1");
    let env = std::fs::read_to_string(root.join("notified.env")).unwrap();
    for want in [
        "KIT_EVENT=done".to_string(),
        format!("KIT_OUTCOME={last}"),
        "KIT_RUN_ID=1".into(),
        "KIT_ITERATION=1".into(),
        "KIT_EXIT_CODE=0".into(),
        format!("KIT_REPO={}", root.display()),
    ] {
        assert!(env.lines().any(|l| l == want), "{want} not in\n{env}");
    }
    let n = events(root, "notify");
    assert_eq!(n.len(), 1, "{n:?}");
    assert_eq!(n[0]["on"], "done");
    assert_eq!(n[0]["exit"], 0);
    assert!(n[0]["error"].is_null());
}

#[test]
fn a_hanging_or_failing_notify_does_not_stop_the_loop() {
    // Hangs past its timeout, with a child holding its output: killed, the loop exits 3 as usual.
    let d = project("command = \"sleep 300 & sleep 300\"\ntimeout = \"1s\"");
    let root = d.path();
    let began = Instant::now();
    let (code, out) = loop_out(root, &["--agent", "true", "--max-iterations", "1"]);
    assert_eq!(code, 3, "{out}");
    assert!(began.elapsed() < Duration::from_secs(60));
    assert!(out.lines().last().unwrap().starts_with("cap: iterations cap reached"), "{out}");
    let n = events(root, "notify");
    assert_eq!(n.len(), 1, "{n:?}");
    assert_eq!((n[0]["on"].as_str(), n[0]["timed_out"].as_bool()), (Some("cap"), Some(true)));
    let s = kit(root).arg("status").output().unwrap();
    let status = String::from_utf8_lossy(&s.stdout);
    assert!(
        status.contains("notify: the [notify] command failed on cap: timed out after"),
        "{status}"
    );

    // Fails on pause: the loop still exits 5 and says it is paused; then, resumed, it goes on.
    let o = kit(root).args(["pause"]).output().unwrap();
    assert!(o.status.success());
    std::fs::write(
        root.join("longrun/config.toml"),
        "[goal]\nrequired_level = 0\n\n[notify]\ncommand = \"echo no; exit 7\"\n",
    )
    .unwrap();
    let (code, out) = loop_out(root, &["--agent", "touch fixed", "--max-iterations", "3"]);
    assert_eq!(code, 5, "{out}");
    let n = events(root, "notify");
    assert_eq!(n.len(), 2, "{n:?}");
    assert_eq!((n[1]["on"].as_str(), n[1]["exit"].as_i64()), (Some("pause"), Some(7)));
    assert_eq!(n[1]["error"], "exited 7");
    assert!(kit(root).arg("resume").output().unwrap().status.success());
    let (code, out) = loop_out(root, &["--agent", "touch fixed", "--max-iterations", "3"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(events(root, "notify").last().unwrap()["on"], "done");
}
