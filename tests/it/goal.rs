//! Running criteria the way the loop does (DESIGN §4, §6): `sh -c` in the repository root, exit
//! status and expectations checked, and the whole process group killed at the timeout.

use std::path::Path;
use std::time::{Duration, Instant};

use kit_harness::goal::{run_criterion, Criterion, Expectation, Kind};

fn criterion(command: &str, expect: &[&str], exit: i32) -> Criterion {
    let expectations = expect
        .iter()
        .map(|e| match e.strip_prefix("re:") {
            Some(p) => Expectation::Regex { pattern: p.into(), re: regex::Regex::new(p).unwrap() },
            None => Expectation::Substring((*e).into()),
        })
        .collect();
    Criterion { line: 7, kind: Kind::Function, command: command.into(), expectations, exit }
}

const TIMEOUT: Duration = Duration::from_secs(30);

#[test]
fn criterion_passes_when_exit_and_every_expectation_match() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("marker.txt"), "here\n").unwrap();
    // Runs in the root (reads a relative file) and sees stderr too (unittest reports there).
    let c = criterion(
        "cat marker.txt; echo 'Ran 14 tests' >&2; echo OK >&2",
        &["here", "Ran 14 tests", "re:^OK$"],
        0,
    );
    let r = run_criterion(&c, dir.path(), TIMEOUT);
    assert!(r.passed, "{r:#?}");
    assert_eq!(r.exit, Some(0));
    assert!(!r.timed_out);
    assert!(r.missing.is_empty());
    assert_eq!(r.output_tail, "here\nRan 14 tests\nOK");
    assert_eq!((r.line, r.kind), (7, Kind::Function));
}

#[test]
fn criterion_fails_naming_the_missing_expectation() {
    let dir = tempfile::tempdir().unwrap();
    let c = criterion("echo 'Ran 13 tests'; echo OK", &["Ran 14 tests", "OK", "re:^FAILED"], 0);
    let r = run_criterion(&c, dir.path(), TIMEOUT);
    assert!(!r.passed);
    assert_eq!(r.exit, Some(0));
    assert_eq!(r.missing, ["Ran 14 tests", "re:^FAILED"]);
}

#[test]
fn regex_expectations_match_per_line() {
    let dir = tempfile::tempdir().unwrap();
    let c = criterion("printf 'p50_ms=3\\np95_ms=12\\n'", &["re:^p95_ms=([0-9]|1[0-9])$"], 0);
    assert!(run_criterion(&c, dir.path(), TIMEOUT).passed);
    let c = criterion("printf 'p50_ms=3\\np95_ms=25\\n'", &["re:^p95_ms=([0-9]|1[0-9])$"], 0);
    assert!(!run_criterion(&c, dir.path(), TIMEOUT).passed);
}

#[test]
fn criterion_fails_on_a_non_zero_exit_even_with_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let c = criterion("echo 'Ran 14 tests'; echo OK; exit 1", &["Ran 14 tests", "OK"], 0);
    let r = run_criterion(&c, dir.path(), TIMEOUT);
    assert!(!r.passed);
    assert_eq!(r.exit, Some(1));
    assert_eq!(r.missing, ["exit status 1, expected 0"]);
}

#[test]
fn criterion_with_exit_1_expects_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let c = criterion("echo '2 errors'; exit 1", &["2 errors"], 1);
    let r = run_criterion(&c, dir.path(), TIMEOUT);
    assert!(r.passed, "{r:#?}");
    let c = criterion("echo '2 errors'", &["2 errors"], 1);
    let r = run_criterion(&c, dir.path(), TIMEOUT);
    assert!(!r.passed);
    assert_eq!(r.missing, ["exit status 0, expected 1"]);
}

/// Whether process `pid` still runs (a zombie waiting for its parent counts as gone).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").split_whitespace().next();
            state != Some("Z") && state != Some("X")
        }
        Err(_) => false,
    }
}

fn wait_gone(pids: &[i32]) -> Vec<i32> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let left: Vec<i32> = pids.iter().copied().filter(|&p| alive(p)).collect();
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn read_pids(path: &Path) -> Vec<i32> {
    std::fs::read_to_string(path).unwrap().split_whitespace().map(|p| p.parse().unwrap()).collect()
}

#[test]
fn timeout_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    // An inner shell with a background and a foreground sleep; each records its pid. The
    // timeout leaves a loaded machine time to start both before it fires.
    let c = criterion(
        "sh -c 'sleep 300 & echo $! >> pids; echo $$ >> pids; sleep 300'",
        &["never printed"],
        0,
    );
    let start = Instant::now();
    let r = run_criterion(&c, dir.path(), Duration::from_secs(5));
    let took = start.elapsed();
    assert!(r.timed_out, "{r:#?}");
    assert!(!r.passed);
    assert_eq!(r.exit, None);
    assert!(r.missing[0].starts_with("timed out after"), "{:?}", r.missing);
    assert!(took < Duration::from_secs(60), "took {took:?}: something held the output pipe");
    let pids = read_pids(&dir.path().join("pids"));
    assert_eq!(pids.len(), 2);
    assert_eq!(wait_gone(&pids), Vec::<i32>::new(), "processes of the group survived");
}

#[test]
fn background_processes_end_with_the_criterion() {
    let dir = tempfile::tempdir().unwrap();
    // The shell exits at once, leaving a sleeper that holds the output pipe.
    let c = criterion("sleep 300 & echo $! > pid; echo started", &["started"], 0);
    let start = Instant::now();
    let r = run_criterion(&c, dir.path(), TIMEOUT);
    assert!(r.passed, "{r:#?}");
    assert!(start.elapsed() < Duration::from_secs(60), "{:?}", start.elapsed());
    let pids = read_pids(&dir.path().join("pid"));
    assert_eq!(wait_gone(&pids), Vec::<i32>::new(), "the background sleeper survived");
}

#[test]
fn a_missing_root_is_a_failed_result_not_a_panic() {
    let c = criterion("true", &[], 0);
    let r = run_criterion(&c, Path::new("/nonexistent/kit/root"), TIMEOUT);
    assert!(!r.passed);
    assert!(r.missing[0].starts_with("could not start"), "{:?}", r.missing);
}

#[test]
fn results_serialize_for_the_journal() {
    let dir = tempfile::tempdir().unwrap();
    let r = run_criterion(&criterion("echo OK", &["OK"], 0), dir.path(), TIMEOUT);
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["kind"], "function");
    assert_eq!(v["passed"], true);
    assert!(v["duration_ms"].is_u64());
    let back: kit_harness::goal::CriterionResult = serde_json::from_value(v).unwrap();
    assert_eq!(back.output_tail, "OK");
}
