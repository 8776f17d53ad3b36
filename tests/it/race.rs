//! `kit race` with real processes (issue 24): three lanes of the fake agent on the rehearsal
//! project, each a real `kit loop` in a git worktree; the proven lane wins and is merged, the
//! cheating lane is reverted, the hung lane stopped; and a race killed with SIGKILL resumes every
//! lane.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::{git_repo, kit};

/// Short grace periods: a stopped lane's hung agent is killed within a second.
const CONFIG: &str = "[timeouts]\ngrace = \"1s\"\ncriterion = \"60s\"\n";

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn kit_ok(root: &Path, args: &[&str]) -> String {
    let o = kit(root).args(args).output().unwrap();
    assert!(o.status.success(), "kit {args:?}: {}", text(&o));
    text(&o)
}

fn git(root: &Path, args: &[&str]) -> String {
    let o = Command::new("git")
        .args(args)
        .current_dir(root)
        .envs(kit(root).get_envs().filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned()))))
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    assert!(o.status.success(), "git {args:?}");
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// The rehearsal project (parse_duration missing), `kit init`, its level-4 goal, tests and tools
/// frozen. The project is committed; `longrun/` too when `commit_longrun`.
fn project(commit_longrun: bool) -> tempfile::TempDir {
    project_with_goal(commit_longrun, kit_course::rehearse::sample::goal_text())
}

/// [`project`] with `goal` as its goal.md.
fn project_with_goal(commit_longrun: bool, goal: &str) -> tempfile::TempDir {
    let d = git_repo();
    let root = d.path();
    kit_course::rehearse::sample::write_sample_project(root).unwrap();
    write(root, ".git/info/exclude", "/.home/\n__pycache__/\n");
    kit_ok(root, &["init"]);
    write(root, "longrun/goal.md", goal);
    write(root, "longrun/config.toml", CONFIG);
    kit_ok(root, &["freeze", "tests", "tools"]);
    if commit_longrun {
        git(root, &["add", "-A"]);
    } else {
        git(root, &["add", "-A", "--", ".", ":(exclude)longrun"]);
    }
    git(root, &["commit", "-q", "-m", "rehearsal project"]);
    d
}

/// The typed events of a journal named `name` (each line must read as a known event).
fn events(journal: &Path, name: &str) -> Vec<Value> {
    std::fs::read_to_string(journal)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let v: Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("torn line {l:?}: {e}"));
            let e = kit_harness::longrun::event::Entry::from_value(v.clone());
            assert!(!matches!(e.event, kit_harness::longrun::event::Event::Unknown(_)), "{l}");
            v
        })
        .filter(|v| v["event"] == name)
        .collect()
}

fn lane_journal(race_start: &Value, lane: usize) -> std::path::PathBuf {
    Path::new(race_start["lanes"][lane - 1]["path"].as_str().unwrap()).join("longrun/journal.jsonl")
}

/// The race's `race_start` in journal `j`, once both of its lanes' agents have started (60 s at
/// most: the lanes' loops start their agents within a second or two).
fn lanes_running(j: &Path) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(s) = events(j, "race_start").first() {
            if (1..=2).all(|n| !events(&lane_journal(s, n), "agent_start").is_empty()) {
                return s.clone();
            }
        }
        assert!(Instant::now() < deadline, "the lanes' agents never started");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The golden race: lane 1 `fake:cheat` (its frozen-test edit reverted; one iteration,
/// so it cannot do the work on a second), lane 2 `fake:finish` wins with every proof, lane 3
/// `fake:hang` is stopped; `--merge` puts lane 2's work on the user's branch. Within 60 s.
#[test]
fn three_fake_lanes_the_proven_one_wins_and_is_merged() {
    let d = project(false);
    let root = d.path();
    let base = git(root, &["rev-parse", "HEAD"]);
    let began = Instant::now();
    let o = kit(root)
        .args(["race", "--agent", "fake:cheat", "--agent", "fake:finish", "--agent", "fake:hang"])
        .args(["--max-iterations", "1", "--merge"])
        .output()
        .unwrap();
    let took = began.elapsed();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(took < Duration::from_secs(60), "the race took {took:?}: {t}");
    let last = t.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("won: lane 2 (`fake:finish`) is done: every criterion passes (3 of 3)"),
        "{t}"
    );
    // The user's journal: race_start, a lane_end per lane, race_end.
    let j = root.join("longrun/journal.jsonl");
    let start = &events(&j, "race_start")[0];
    assert_eq!(start["base"], base.as_str());
    assert_eq!(start["branch"], "main");
    let ends = events(&j, "lane_end");
    let by_lane = |n: u64| ends.iter().find(|e| e["lane"] == n).unwrap_or_else(|| panic!("{t}"));
    assert_eq!(ends.len(), 3, "{t}");
    // Lane 1 cheated: kit restored the frozen tests, and it never reached done.
    let cheat = by_lane(1);
    assert!(cheat["reverts"].as_u64().unwrap() >= 1, "{cheat}");
    assert_ne!(cheat["loop_outcome"], "done", "{cheat}");
    let reverts = events(&lane_journal(start, 1), "cheat");
    assert!(reverts.iter().any(|c| c["path"] == "tests/test_durations.py"), "{reverts:?}");
    // Lane 2 won with every proof its loop demands.
    let won = by_lane(2);
    assert_eq!(
        (won["outcome"].as_str(), won["loop_outcome"].as_str()),
        (Some("won"), Some("done"))
    );
    let lane2 = lane_journal(start, 2);
    assert!(events(&lane2, "revert_probe").iter().all(|p| p["refused"] == false), "{t}");
    assert!(!events(&lane2, "confirm").is_empty(), "{t}");
    // Lane 3 hung and was stopped: its loop journaled the interruption, and no process of its
    // agent's group is left.
    let hang = by_lane(3);
    assert_eq!(hang["outcome"], "stopped", "{hang}");
    assert_eq!(hang["reason"], "lane 2 won");
    let lane3 = lane_journal(start, 3);
    assert_eq!(events(&lane3, "loop_end").last().unwrap()["outcome"], "interrupted");
    for a in events(&lane3, "agent_start") {
        let pgid = a["pgid"].as_i64().unwrap();
        let left: Vec<i32> = kit_core::proc::snapshot()
            .into_iter()
            .filter(|p| i64::from(p.pgid) == pgid && !p.is_zombie())
            .map(|p| p.pid)
            .collect();
        assert!(left.is_empty(), "lane 3's agent group {pgid} is alive: {left:?}");
    }
    let end = &events(&j, "race_end")[0];
    assert_eq!((end["outcome"].as_str(), end["winner"].as_u64()), (Some("won"), Some(2)));
    assert_eq!(end["merged"], "fast-forward", "{t}");
    // Merged: the user's branch now holds lane 2's parse_duration, and descends from the base.
    let durations = std::fs::read_to_string(root.join("confload/durations.py")).unwrap();
    assert!(durations.contains("re.fullmatch"), "{durations}");
    assert_eq!(git(root, &["rev-parse", "HEAD"]), end["commit"].as_str().unwrap());
    assert_eq!(git(root, &["merge-base", &base, "HEAD"]), base);
    assert_eq!(git(root, &["rev-parse", "kit/race/1/2"]), end["commit"].as_str().unwrap());
    // The user's work tree sees nothing of the lanes.
    let st = git(root, &["status", "--porcelain", "--untracked-files=all"]);
    assert!(st.lines().all(|l| l.contains("longrun/")), "{st}");
    // kit status shows every lane and the race's outcome.
    let s = kit_ok(root, &["status"]);
    assert!(s.contains("race: 1 (won by lane 2"), "{s}");
    for lane in ["fake:cheat", "fake:finish", "fake:hang"] {
        assert!(s.contains(lane), "{s}");
    }
    // kit report draws the lanes side by side.
    kit_ok(root, &["report", "--out", ".home/report.html"]);
    let page = std::fs::read_to_string(root.join(".home/report.html")).unwrap();
    assert!(page.contains("<h3>Race 1</h3>"), "no race on the page");
    for cell in ["<th>lane 3</th>", "<td>fake:hang</td>", "<td>stopped</td>", "<td>won</td>"] {
        assert!(page.contains(cell), "{cell} not on the page");
    }
    let c = kit_ok(root, &["race", "clean"]);
    assert!(c.contains("removed 3 lanes"), "{c}");
    assert!(git(root, &["branch", "--list", "kit/race/*"]).is_empty());
    assert!(!Path::new(start["lanes"][0]["path"].as_str().unwrap()).exists());
}

/// The race's process is SIGKILLed while its lanes work: lane 1's loop goes on (adopted by the
/// next `kit race`), lane 2's loop is killed too (continued by a new `kit loop`, which ends what
/// is left of its agent). `kit race` again picks up both; lane 1 wins, and is merged: the
/// killed race was started with `--merge`, which the resumed one keeps.
#[test]
fn a_race_killed_with_sigkill_resumes_every_lane() {
    let d = project(true);
    let root = d.path();
    let mut race = kit(root)
        .args(["race", "--agent", "fake:race", "--agent", "fake:hang", "--max-iterations", "2"])
        .arg("--merge")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let j = root.join("longrun/journal.jsonl");
    let start = lanes_running(&j);
    race.kill().unwrap();
    race.wait().unwrap();
    // Lane 2's loop dies as well (its agent keeps hanging, out of its group).
    let lane2 = lane_journal(&start, 2);
    let loop2 = events(&lane2, "loop_start")[0]["pid"].as_i64().unwrap() as i32;
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(loop2), nix::sys::signal::SIGKILL);
    let deadline = Instant::now() + Duration::from_secs(10);
    while kit_core::proc::get(loop2).is_some_and(|p| !p.is_zombie()) {
        assert!(Instant::now() < deadline, "lane 2's loop outlived SIGKILL");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(events(&j, "race_end").is_empty());
    let o = kit(root).args(["race"]).output().unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("race: continuing run 1"), "{t}");
    assert!(t.contains("race: lane 1: adopted its running loop"), "{t}");
    assert!(t.contains("race: lane 2 `fake:hang`: continued its run with a new loop"), "{t}");
    let starts = events(&j, "race_start");
    assert_eq!(starts.len(), 2);
    assert_eq!(starts[1]["resumed"], true);
    // Lane 2's new loop continued its run and ended what the killed one left of its agent.
    assert_eq!(events(&lane2, "loop_start").last().unwrap()["resumed"], true);
    assert_eq!(events(&lane2, "recovered").len(), 1, "{t}");
    let ends = events(&j, "lane_end");
    assert_eq!(ends.len(), 2, "{t}");
    let end = &events(&j, "race_end")[0];
    assert_eq!((end["outcome"].as_str(), end["winner"].as_u64()), (Some("won"), Some(1)), "{t}");
    assert_eq!(starts[0]["merge"], true);
    assert_eq!(starts[1]["merge"], true);
    assert_eq!(end["merged"], "fast-forward", "{t}");
    assert!(t.contains("race: merged kit/race/1/1 into main (fast-forward"), "{t}");
    assert!(!t.contains("--merge next time"), "{t}");
}

/// A goal with a `- human:` criterion: both lanes of `fake:finish` pass every machine criterion
/// and stop `needs_you`. The race ends needs_you (exit 6) and names each lane's `kit -C LANE
/// approve N`; `kit status` lists them under the race; once lane 1's decision is approved,
/// `kit race` continues the race: lane 1's run goes on to done, wins and is merged (the race's
/// `--merge` holds on resume), lane 2, still waiting, stays needs_you.
#[test]
fn a_race_whose_lanes_wait_for_a_person_ends_needs_you_and_continues_after_approval() {
    let goal = kit_course::rehearse::sample::goal_text().replace(
        "## Constraints",
        "- human: the ValueError's message names the value it rejects\n\n## Constraints",
    );
    let d = project_with_goal(true, &goal);
    let root = d.path();
    let base = git(root, &["rev-parse", "HEAD"]);
    // Uncommitted work is not in the lanes, and the race says so.
    write(root, "notes.txt", "not committed\n");
    let o = kit(root)
        .args(["race", "--agent", "fake:finish", "--agent", "fake:finish"])
        .args(["--max-iterations", "1", "--merge"])
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(6), "{t}");
    assert!(t.contains("your uncommitted changes are not in them (notes.txt); commit them"), "{t}");
    let j = root.join("longrun/journal.jsonl");
    let start = events(&j, "race_start")[0].clone();
    assert_eq!(start["merge"], true);
    let lane = |n: usize| start["lanes"][n - 1]["path"].as_str().unwrap().to_string();
    for n in 1..=2 {
        let approve = format!("kit -C {} approve 1 (or kit -C {} reject 1", lane(n), lane(n));
        assert!(t.contains(&format!("race: lane {n} `fake:finish` needs you: #1 ")), "{t}");
        assert!(t.contains(&approve), "{t}");
    }
    assert!(t.lines().last().unwrap().starts_with("needs_you: no lane is done"), "{t}");
    assert_eq!(events(&j, "race_end")[0]["outcome"], "needs_you");
    let s = kit_ok(root, &["status"]);
    assert!(s.contains("race: 1 (needs you:"), "{s}");
    assert!(s.contains("needs you: lane 1 `fake:finish`: #1 goal.md:"), "{s}");
    assert!(s.contains(&format!("kit -C {} approve 1", lane(2))), "{s}");
    // A plain kit approve in the user's repository names the lanes' decisions instead.
    let a = kit(root).args(["approve", "1"]).output().unwrap();
    assert_eq!(a.status.code(), Some(2), "{}", text(&a));
    assert!(text(&a).contains("lane 2: #1 goal.md:"), "{}", text(&a));
    assert!(text(&a).contains(&format!("kit -C {} approve 1", lane(1))), "{}", text(&a));
    // Answer lane 1 from the user's repository, as the race said.
    let a = kit(root).args(["-C", &lane(1), "approve", "1"]).output().unwrap();
    assert!(a.status.success(), "{}", text(&a));
    let o = kit(root).args(["race"]).output().unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("race: continuing run 1"), "{t}");
    assert!(t.contains("race: lane 1 `fake:finish`: continued its run with a new loop"), "{t}");
    assert!(!t.contains("next time"), "{t}");
    let end = events(&j, "race_end").last().unwrap().clone();
    assert_eq!((end["outcome"].as_str(), end["winner"].as_u64()), (Some("won"), Some(1)), "{t}");
    assert_eq!(end["merged"], "fast-forward", "{t}");
    assert_eq!(git(root, &["rev-parse", "HEAD"]), end["commit"].as_str().unwrap());
    assert_eq!(git(root, &["merge-base", &base, "HEAD"]), base);
    let s = kit_ok(root, &["status"]);
    assert!(s.contains("race: 1 (won by lane 1 `fake:finish`, merged fast-forward)"), "{s}");
    let last = s.lines().last().unwrap();
    assert!(last.starts_with("outcome: race 1 won: lane 1 (`fake:finish`) is done"), "{s}");
    // The report's outcome says the same, not "no loop has run yet".
    kit_ok(root, &["report", "--out", ".git/report.html"]);
    let page = std::fs::read_to_string(root.join(".git/report.html")).unwrap();
    assert!(page.contains("race 1 won: lane 1"), "the report names the race's outcome");
    assert!(!page.contains("no loop has run yet"));
}

/// A cap given to the race that may not be off names the race's help, not the loop's.
#[test]
fn a_race_flag_that_turns_a_cap_off_names_kit_race_help() {
    let d = project(true);
    let o = kit(d.path())
        .args(["race", "--agent", "fake:finish", "--max-iterations", "0"])
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("--max-iterations 0: caps may not be off"), "{t}");
    assert!(t.contains("kit race --help") && !t.contains("kit loop --help"), "{t}");
}

/// `kit tell` while a race runs goes to every running lane's inbox, where each lane's loop puts
/// it in its next iteration's prompt; the user's own inbox, which no loop of the race reads,
/// stays empty.
#[test]
fn kit_tell_during_a_race_reaches_every_running_lane() {
    let d = project(true);
    let root = d.path();
    let race = kit(root)
        .args(["race", "--agent", "fake:hang", "--agent", "fake:hang", "--max-iterations", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let j = root.join("longrun/journal.jsonl");
    let start = lanes_running(&j);
    let t = kit_ok(root, &["tell", "--from", "ada", "keep parse_duration in confload"]);
    let pid = |n: usize| events(&lane_journal(&start, n), "loop_start")[0]["pid"].clone();
    assert!(
        t.starts_with(&format!(
            "told 2 running lanes of race 1: lane 1 (pid {}), lane 2 (pid {})",
            pid(1),
            pid(2)
        )),
        "{t}"
    );
    for n in 1..=2 {
        let inbox = lane_journal(&start, n).with_file_name("inbox.md");
        let text = std::fs::read_to_string(&inbox).unwrap_or_default();
        assert!(text.contains(" ada: keep parse_duration in confload\n"), "lane {n}: {text}");
    }
    assert!(!root.join("longrun/inbox.md").exists(), "the user's inbox got the message");
    let s = kit_ok(root, &["status"]);
    assert!(!s.contains("inbox:"), "{s}");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(race.id() as i32), nix::sys::signal::SIGTERM)
        .unwrap();
    let o = race.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", text(&o));
}

/// A hook a lane's agent plants lives in the repository every lane shares, and the user's git
/// would run it: the race names it at its end, as `kit loop` does.
#[test]
fn a_hook_a_lane_planted_is_named_at_the_end_of_the_race() {
    let d = project(true);
    let root = d.path();
    let plant = "h=\"$(git rev-parse --git-common-dir)/hooks/post-merge\"; printf '#!/bin/sh\\n' > \"$h\"; chmod +x \"$h\"";
    let o = kit(root).args(["race", "--agent", plant, "--max-iterations", "1"]).output().unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(3), "{t}");
    assert!(
        t.contains("race: lane 1: git settings appeared during its run and outlive it: hooks/post-merge sha256:"),
        "{t}"
    );
}
