use super::expect::numbers;
use super::runner::glob_match;
use super::*;
use std::path::PathBuf;

/// A repository with a unittest suite, a pytest file, a bench script and a Rust tests/ folder.
fn repo() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    for f in [
        "tests/test_durations.py",
        "tests/test_config.py",
        "tests/helpers.py",
        "tools/bench_load.py",
        "pyt/test_api.py",
        "rs/tests/cli.rs",
        "longrun/goal.md",
    ] {
        let p = d.path().join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, "x\n").unwrap();
    }
    d
}

fn goal(criteria: &str) -> Goal {
    super::super::parse(
        &PathBuf::from("goal.md"),
        &format!("# Goal: g\n\n## Criteria\n{criteria}\n"),
    )
    .unwrap()
}

fn all_frozen() -> Vec<String> {
    vec!["tests/".into(), "tools/bench_load.py".into(), "pyt/test_api.py".into()]
}

const GOOD: &str =
    "- function: `python3 -m unittest tests.test_durations -v` → `Ran 9 tests` and `re:^OK$`
- regression: `python3 -m unittest discover -s tests` → `Ran 14 tests` and `re:^OK$`
- limit: `python3 tools/bench_load.py` → `re:^p95_ms=([0-9]|1[0-9])$`";

#[test]
fn levels() {
    let root = repo();
    let r = |text: &str, frozen: &[String]| rate(&goal(text), frozen, root.path()).level;
    let none: Vec<String> = Vec::new();
    // The unittest suite and the benchmark: pyt/ holds pytest files the regression leaves out.
    let all: Vec<String> = vec!["tests/".into(), "tools/bench_load.py".into()];
    // (criteria section body, frozen, level)
    let cases: Vec<(&str, &[String], u8)> = vec![
        ("", &none, 0),
        ("Nothing here yet.", &none, 0),
        ("- all tests pass\n- it is fast", &none, 1),
        ("- function: `python3 -m unittest tests.test_durations` → `OK`", &none, 2),
        ("- function: `python3 -m unittest tests.test_durations` → `Ran 9 tests`", &none, 2),
        (GOOD, &none, 2),
        ("- function: `python3 -m unittest tests.test_durations` → `Ran 9 tests`\n- and it is fast", &all, 2),
        ("- function: `python3 -m unittest tests.test_durations` → `Ran 9 tests` and `OK`", &all, 2),
        ("- function: `python3 -m unittest tests.test_durations` → `Ran 9 tests` and `re:^OK$`", &all, 3),
        (GOOD, &all, 4),
    ];
    for (text, frozen, level) in cases {
        let rating = rate(&goal(text), frozen, root.path());
        assert_eq!(rating.level, level, "{text}\n{:#?}", rating);
        assert_eq!(rating.reasons.len(), 4);
    }
    // Without a criteria section at all.
    let g = super::super::parse(Path::new("goal.md"), "# Goal: g\n\n## End state\nfast\n").unwrap();
    assert_eq!(rate(&g, &none, root.path()).level, 0);
    assert_eq!(r(GOOD, &["tests".into(), "./tools/bench_load.py".into()]), 4);
}

/// Each criterion alone, with everything frozen: the shortcut it must raise (a phrase of
/// its message), or none.
#[test]
fn shortcuts() {
    let root = repo();
    let cases: &[(&str, Option<&str>)] = &[
        // Expectations that pin nothing or match anything.
        ("- function: `python3 -m unittest tests.test_durations`", Some("no expected output")),
        ("- function: `python3 -m unittest tests.test_durations` → `OK`", Some("pins no count")),
        ("- regression: `pytest pyt/test_api.py` → `0 failed`", Some("pins no count")),
        ("- regression: `pytest pyt/test_api.py` → `re:\\d+ passed`", Some("pins no count")),
        ("- regression: `pytest pyt/test_api.py` → `re:[0-9]{2} passed`", Some("pins no count")),
        ("- function: `pytest pyt/test_api.py` → `14 passed`", None),
        ("- function: `pytest pyt/test_api.py` → `re:^14 passed`", None),
        ("- function: `python3 -m unittest tests.test_durations` → `Ran 9 tests` and ``", Some("matches any output")),
        ("- function: `python3 -m unittest tests.test_durations` → `Ran 9 tests` and `re:.*`", Some("matches any output")),
        ("- function: `python3 -m unittest tests.test_durations` → `Ran 9 tests` and `re:^`", Some("matches any output")),
        ("- function: `python3 -m unittest tests.test_durations` → `re:`", Some("matches any output")),
        // Swallowed failures.
        ("- function: `python3 -m unittest tests.test_durations || true` → `Ran 9 tests`", Some("`|| true` swallows")),
        ("- function: `python3 -m unittest tests.test_durations || :` → `Ran 9 tests`", Some("`|| :` swallows")),
        ("- function: `python3 -m unittest tests.test_durations || echo failed` → `Ran 9 tests`", Some("swallows")),
        ("- function: `python3 -m unittest tests.test_durations || exit 1` → `Ran 9 tests` and `re:^OK$`", None),
        ("- function: `python3 -m unittest tests.test_durations; exit 0` → `Ran 9 tests`", Some("`; exit 0`")),
        ("- function: `python3 -m unittest tests.test_durations; true` → `Ran 9 tests`", Some("`; true`")),
        ("- function: `python3 -m unittest tests.test_durations > out.txt; cat out.txt` → `Ran 9 tests`", Some("`; cat out.txt`")),
        ("- function: `python3 -m unittest tests.test_durations 2>&1 | tee log` → `Ran 9 tests`", Some("`| tee`")),
        ("- function: `set -o pipefail; python3 -m unittest tests.test_durations 2>&1 | tee log` → `Ran 9 tests` and `re:^OK$`", None),
        ("- function: `cd . ; python3 -m unittest tests.test_durations` → `Ran 9 tests` and `re:^OK$`", None),
        ("- function: `set +e; python3 -m unittest tests.test_durations` → `Ran 9 tests`", Some("set +e")),
        ("- function: `python3 -m unittest tests.test_durations 2>/dev/null` → `Ran 9 tests`", Some("2>/dev/null")),
        ("- function: `python3 -m unittest tests.test_durations 2> /dev/null` → `Ran 9 tests`", Some("2> /dev/null")),
        ("- function: `python3 -m unittest tests.test_durations >/dev/null 2>&1` → `Ran 9 tests`", Some(">/dev/null")),
        ("- function: `python3 -m unittest tests.test_durations 2>&1 | tail -3` → `Ran 9 tests`", Some("`| tail`")),
        // A pipe loses the runner's status: grep decides, and grep passes on any output
        // with `ok` in it, a failing run included.
        ("- function: `python3 -m unittest tests.test_durations 2>&1 | grep -c ok` → `Ran 9 tests`", Some("`| grep`")),
        ("- function: `sh -c 'python3 -m unittest tests.test_durations || true'` → `Ran 9 tests`", Some("swallows")),
        // Files the agent writes.
        ("- function: `grep -c DONE longrun/progress.md` → `3`", Some("which the agent writes")),
        ("- function: `cat progress.md` → `done 3`", Some("which the agent writes")),
        ("- function: `grep -r finished longrun/` → `finished 3`", Some("which the agent writes")),
        ("- function: `grep -c Criteria longrun/goal.md` → `1`", None),
        // Unfrozen or missing test files (here nothing else is wrong).
        ("- function: `python3 -m unittest tests.test_nothere` → `Ran 2 tests` and `re:^OK$`", None),
        ("- function: `python3 -m unittest nothere.test_x` → `Ran 2 tests`", Some("nothere/test_x.py is run by this criterion but does not exist")),
        ("- function: `python3 -m unittest rs` → `Ran 2 tests`", Some("rs holds no test file (test*.py) yet")),
        // Scripts, build files and runner configuration the criterion runs (issue 10).
        ("- function: `sh run_tests.sh` → `Ran 14 tests` and `OK`", Some("run_tests.sh is run by this criterion but does not exist")),
        ("- function: `./run_tests.sh` → `Ran 14 tests` and `OK`", Some("run_tests.sh is run by this criterion but does not exist")),
        ("- function: `bash scripts/check` → `Ran 14 tests` and `OK`", Some("scripts/check is run by this criterion but does not exist")),
        ("- function: `python3 tools/bench_load.py --check` → `Ran 14 tests` and `OK`", None),
        // A program the goal asks for is the work: its output is the evidence.
        ("- function: `python3 tools/convert.py in.txt` → `converted 3 lines`", None),
        ("- limit: `python3 tools/bench_new.py` → `re:^p95_ms=[0-9]$`", Some("tools/bench_new.py is run by this criterion but does not exist")),
        ("- function: `make test` → `Ran 14 tests` and `OK`", Some("Makefile, which `make` runs from, does not exist")),
        ("- function: `make -C sub check` → `Ran 14 tests` and `OK`", Some("sub/Makefile")),
        ("- function: `npm test` → `14 passing`", Some("package.json, which `npm test` runs from, does not exist")),
        ("- function: `python3 -m unittest discover -s nothere` → `Ran 14 tests` and `OK`", Some("nothere does not exist")),
        ("- function: `python3 -m unittest discover -s tools` → `Ran 14 tests` and `OK`", Some("tools holds no test file")),
        ("- function: `sh -c 'python3 -m unittest discover -s tests'` → `Ran 14 tests` and `re:^OK$`", None),
        ("- function: `cargo test --manifest-path rs/Cargo.toml` → `test result: ok. 3 passed`", None),
        ("- function: `python3 -m unittest newtests/test_new.py` → `Ran 2 tests`", Some("does not exist")),
        // Runner flags that select, skip or stop early.
        ("- function: `pytest pyt/test_api.py -k parse` → `14 passed`", Some("`-k parse` selects")),
        ("- function: `pytest -vk parse pyt/test_api.py` → `14 passed`", Some("`-k parse` selects")),
        ("- function: `pytest pyt/test_api.py --deselect pyt/test_api.py::test_x` → `14 passed`", Some("--deselect")),
        ("- function: `pytest --lf pyt/test_api.py` → `14 passed`", Some("`--lf` selects")),
        ("- function: `python3 -m unittest -k parse tests.test_durations` → `Ran 9 tests`", Some("`-k parse`")),
        ("- function: `pytest -x pyt/test_api.py` → `passed`", Some("`-x` stops")),
        ("- function: `pytest -x pyt/test_api.py` → `14 passed`", None),
        ("- function: `python3 -m unittest -f tests.test_durations` → `OK`", Some("`-f` stops")),
        ("- function: `cargo test parse` → `test result: ok. 3 passed`", Some("test name filter")),
        ("- function: `cargo test -- --skip slow` → `test result: ok. 3 passed`", Some("--skip slow")),
        ("- function: `go test -run Parse ./...` → `ok 3`", Some("-run Parse")),
        // Limits.
        ("- limit: `python3 tools/bench_load.py` → `re:^p95_ms=\\d+$`", Some("limit without a number")),
        ("- limit: `python3 tools/bench_load.py` → `p95_ms=`", Some("limit without a number")),
        ("- limit: `python3 tools/bench_load.py` → `re:^p95_ms=([0-9]|1[0-9])$`", None),
        ("- limit: `python3 tools/bench_load.py` → `re:^p95_ms=[0-9]$`", None),
        // A command that prints its own evidence.
        ("- function: `echo Ran 9 tests` → `Ran 9 tests`", Some("prints the expected")),
    ];
    check_table(&root, cases);
}

#[test]
fn runner_configuration_and_scripts_must_be_frozen_once_they_exist() {
    let root = repo();
    for (f, text) in [
        ("pytest.ini", "[pytest]\naddopts = -q\n"),
        ("pyproject.toml", "[tool.pytest.ini_options]\naddopts = \"-q\"\n"),
        ("Makefile", "test:\n\tpython3 -m unittest discover -s tests\n"),
        ("run_tests.sh", "python3 -m unittest discover -s tests\n"),
        (".cargo/config.toml", "[target.x86_64-unknown-linux-gnu]\nrunner = \"sh fake.sh\"\n"),
    ] {
        let p = root.path().join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let cases: &[(&str, Option<&str>)] = &[
        (
            "- function: `pytest pyt/test_api.py` → `14 passed`",
            Some("pytest.ini decides what `pytest` runs, but is not frozen"),
        ),
        (
            "- function: `pytest pyt/test_api.py` → `14 passed`",
            Some("pyproject.toml decides what `pytest` runs"),
        ),
        (
            "- function: `make test` → `Ran 14 tests` and `OK`",
            Some("Makefile decides what `make` runs, but is not frozen"),
        ),
        (
            "- function: `sh run_tests.sh` → `Ran 14 tests` and `OK`",
            Some("run_tests.sh is not frozen"),
        ),
        (
            "- function: `cargo test` → `test result: ok. 3 passed`",
            Some(".cargo/config.toml decides what `cargo test` runs"),
        ),
    ];
    check_table(&root, cases);
    let frozen: Vec<String> = [
        "tests/",
        "pyt/test_api.py",
        "pytest.ini",
        "pyproject.toml",
        "Makefile",
        "run_tests.sh",
        ".cargo/",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for (text, _) in cases {
        let rating = rate(&goal(text), &frozen, root.path());
        assert!(rating.shortcuts.is_empty(), "{text}: {:#?}", rating.shortcuts);
    }
}

fn check_table(root: &tempfile::TempDir, cases: &[(&str, Option<&str>)]) {
    for (text, want) in cases {
        let rating = rate(&goal(text), &all_frozen(), root.path());
        let whats: Vec<&str> = rating.shortcuts.iter().map(|s| s.what.as_str()).collect();
        match want {
            None => assert!(whats.is_empty(), "{text}: unexpected {whats:#?}"),
            Some(phrase) => {
                assert!(
                    whats.iter().any(|w| w.contains(phrase)),
                    "{text}: no shortcut mentions `{phrase}`: {whats:#?}"
                );
                assert!(rating.level <= 2, "{text}: level {}", rating.level);
                assert!(
                    rating.shortcuts.iter().all(|s| s.line == 4),
                    "{text}: {:?}",
                    rating.shortcuts
                );
                assert!(
                    whats.iter().all(|w| w.contains(FIX_SEP)),
                    "{text}: a shortcut without a fix"
                );
            }
        }
    }
}

/// Criteria whose exit status or output is not the runner's (QA HIGH-1): the last command
/// that runs decides the status, so each of these passes with the work undone. Everything is
/// frozen and the count pinned, so the shortcut named is the only thing wrong.
#[test]
fn the_runner_must_decide_the_exit_status() {
    let root = repo();
    const R: &str = "python3 -B -m unittest discover -s tests -v";
    let cases: Vec<(String, Option<&str>)> = [
        // `;`, a newline and `&` throw an earlier status away.
        (
            format!("{R} > /dev/null 2>&1; python3 -c 'print(\"Ran 14 tests\\nOK\")'"),
            Some("replaces the runner's exit status"),
        ),
        (
            format!("{R} > /dev/null 2>&1; python3 -c 'print(\"Ran 14 tests\\nOK\")'"),
            Some("`> /dev/null 2>&1` throws away"),
        ),
        (
            format!("{R} > /dev/null 2>&1; python3 -c 'print(\"Ran 14 tests\\nOK\")'"),
            Some("`python3` prints the expected `Ran 14 tests`"),
        ),
        (
            format!("{R} >/dev/null; python3 -c \"print(\\\"Ran 14 tests\\\")\""),
            Some("replaces the runner's exit status"),
        ),
        (format!("{R}; true"), Some("`; true` replaces")),
        (format!("{R}; :"), Some("`; :` replaces")),
        (format!("{R} ; exit 0"), Some("`; exit 0` replaces")),
        (format!("{R}; rm -rf build"), Some("`; rm -rf build` replaces")),
        (
            format!("{R}; python3 tools/bench_load.py"),
            Some(
                "`; python3 tools/bench_load.py` decides the exit status: `python3 -B -m unittest",
            ),
        ),
        (format!("{R} & wait"), Some("runs in the background")),
        (format!("{R} &"), Some("runs in the background")),
        (format!("({R}; true)"), Some("`; true` replaces")),
        (format!("{{ {R}; true; }}"), Some("`; true` replaces")),
        (format!("if {R}; then echo Ran 14 tests; fi"), Some("replaces the runner's exit status")),
        (format!("sh -c '{R}; true'"), Some("`; true` replaces")),
        // Harmless: the runner still runs last, or every step must succeed.
        (format!("true; python3 -c \"print(1)\"; {R}"), None),
        (format!("cd . ; {R}"), None),
        (format!("set -e; {R}; echo finished"), None),
        (format!("bash -ec '{R}; echo finished'"), None),
        (format!("{R}; exit $?"), None),
        (format!("{R}; exit"), None),
        (format!("{R} && echo finished"), None),
        (format!("cd tests && cd .. && {R}"), None),
        (format!("timeout 600 {R}"), None),
        (format!("{R} 2>&1"), None),
        (format!("{R} >&2"), None),
        (format!("{R} > out.txt && cat out.txt"), None),
        // Output sent away, with any spacing.
        (format!("{R} > /dev/null"), Some("`> /dev/null` throws away")),
        (format!("{R} >/dev/null"), Some("`>/dev/null` throws away")),
        (format!("{R}>/dev/null"), Some("`>/dev/null` throws away")),
        (format!("{R} 1>/dev/null"), Some("throws away")),
        (format!("{R} 2>&1 >/dev/null"), Some("`2>&1 >/dev/null` throws away")),
        (format!("{R} &>/dev/null"), Some("`&>/dev/null` throws away")),
        (format!("{R} &> /dev/null"), Some("`&> /dev/null` throws away")),
        (format!("{R} >&/dev/null"), Some("throws away")),
        (format!("{R} 2>/dev/null"), Some("`2>/dev/null` hides")),
        (format!("{R} > out.txt && cat expected.txt"), Some("to a file the criterion never reads")),
        // Swallowed, inverted, piped away.
        (format!("{R} || true"), Some("`|| true` swallows")),
        (format!("{R} || :"), Some("`|| :` swallows")),
        (format!("{R} || exit 0"), Some("`|| exit 0` swallows")),
        (format!("{R} || exit 1"), None),
        (format!("! {R}"), Some("inverts the exit status")),
        (format!("! ( {R} )"), Some("inverts the exit status")),
        (format!("{R} | true"), Some("`| true` makes the exit status")),
        (format!("{R} 2>&1 | cat >/dev/null"), Some("`| cat` makes the exit status")),
        (format!("{R} 2>&1 | tee log.txt"), Some("`| tee` makes the exit status")),
        (format!("{R} 2>&1 | tail -5"), Some("`| tail` makes the exit status")),
        (format!("set -o pipefail; {R} 2>&1 | tail -5"), None),
        (format!("bash -o pipefail -c '{R} 2>&1 | tail -5'"), None),
        // Commands that only print the expected text, or nothing.
        ("echo Ran 14 tests OK".to_string(), Some("only prints or does nothing")),
        ("printf 'Ran 14 tests\\nOK\\n'".to_string(), Some("`printf` prints the expected")),
        ("python3 -c 'print(\"Ran 14 tests\")'".to_string(), Some("only prints or does nothing")),
        (
            "python3 -c 'import sys; sys.stdout.write(\"Ran 14 tests\")'".to_string(),
            Some("only prints"),
        ),
        ("cat tests/expected.txt".to_string(), Some("only prints or does nothing")),
        ("true".to_string(), Some("only prints or does nothing")),
        ("exit 0".to_string(), Some("only prints or does nothing")),
        ("sh -c 'echo Ran 14 tests'".to_string(), Some("prints the expected")),
        // A real check through an inline script is work.
        (
            "python3 -B -c 'from tests.test_config import TestConfig; print(TestConfig)'"
                .to_string(),
            None,
        ),
        // Genuine runners.
        (R.to_string(), None),
        ("python3 -m unittest discover -s tests -v".to_string(), None),
    ]
    .into_iter()
    .map(|(cmd, want)| (format!("- function: `{cmd}` → `Ran 14 tests` and `re:^OK$`"), want))
    .collect();
    let cases: Vec<(&str, Option<&str>)> = cases.iter().map(|(t, w)| (t.as_str(), *w)).collect();
    check_table(&root, &cases);
    // Other runners: genuine forms pass, their faked forms do not.
    let cargo: &[(&str, Option<&str>)] = &[
        ("- function: `cargo test --locked` → `test result: ok. 3 passed`", None),
        (
            "- regression: `cargo test --locked; true` → `test result: ok. 3 passed`",
            Some("`; true` replaces"),
        ),
        ("- function: `pytest -q pyt/test_api.py` → `14 passed`", None),
        ("- function: `pytest -q pyt/test_api.py 2>&1 | tail -5` → `14 passed`", Some("`| tail`")),
    ];
    check_table(&root, cargo);
}

/// Which test files each command exercises, seen through what must be frozen.
#[test]
fn unfrozen_test_files_are_named() {
    let root = repo();
    let none: Vec<String> = Vec::new();
    // (criterion, frozen, a phrase the shortcut must hold)
    let cases: Vec<(&str, Vec<String>, &str)> = vec![
        ("- function: `python3 -m unittest tests.test_durations -v` → `Ran 9 tests`", none.clone(), "tests/test_durations.py is not frozen"),
        ("- function: `python3 -m unittest tests.test_durations.TestParse.test_90s` → `Ran 1 test`", none.clone(), "tests/test_durations.py is not frozen"),
        ("- regression: `python3 -m unittest discover -s tests` → `Ran 14 tests`", none.clone(), "2 test files the command runs are not frozen (tests/test_config.py, tests/test_durations.py)"),
        ("- regression: `python3 -m unittest discover -s tests` → `Ran 14 tests`", vec!["tests/test_config.py".into()], "tests/test_durations.py is not frozen"),
        ("- regression: `python3 -m unittest` → `Ran 14 tests`", none.clone(), "kit freeze pyt/test_api.py tests/test_config.py tests/test_durations.py"),
        ("- regression: `python3 -m unittest` → `Ran 14 tests`", vec!["pyt".into()], "kit freeze tests/ (a frozen folder"),
        ("- regression: `pytest pyt` → `14 passed`", none.clone(), "pyt/test_api.py is not frozen"),
        ("- regression: `pytest pyt/test_api.py::test_one` → `1 passed`", none.clone(), "pyt/test_api.py is not frozen"),
        ("- regression: `cd rs && cargo test` → `3 passed`", none.clone(), "rs/tests/cli.rs is not frozen"),
        ("- regression: `sh tests/helpers.py` → `3 passed`", none.clone(), "tests/helpers.py is not frozen"),
        ("- function: `python3 -B -m unittest tests.test_durations -v` → `Ran 9 tests`", none.clone(), "tests/test_durations.py is not frozen"),
        ("- regression: `python3 -X dev -u -m unittest discover -s tests` → `Ran 9 tests`", none.clone(), "kit freeze tests/"),
        ("- regression: `python3 -B -m pytest -k x pyt` → `9 passed`", none.clone(), "`-k x` selects"),
        ("- regression: `pytest tests/` → `3 passed`", none.clone(), "2 test files the command runs are not frozen (tests/test_config.py, tests/test_durations.py)"),
        ("- limit: `python3 tools/bench_load.py` → `re:^p95_ms=[0-9]$`", none.clone(), "tools/bench_load.py measures the limit but is not frozen"),
        // However the path is written (QA: each of these rated 4 with tools/ not frozen).
        ("- limit: `python3 tools/../tools/bench_load.py` → `re:^p95_ms=[0-9]$`", none.clone(), "tools/bench_load.py measures the limit but is not frozen"),
        ("- limit: `python3 tests/../tools/bench_load.py` → `re:^p95_ms=[0-9]$`", none.clone(), "tools/bench_load.py measures the limit but is not frozen"),
        ("- limit: `python3 $PWD/tools/bench_load.py` → `re:^p95_ms=[0-9]$`", none.clone(), "tools/bench_load.py measures the limit but is not frozen"),
        ("- limit: `python3 \"${PWD}/tools/bench_load.py\"` → `re:^p95_ms=[0-9]$`", none.clone(), "tools/bench_load.py measures the limit but is not frozen"),
        ("- limit: `python3 - < tools/bench_load.py` → `re:^p95_ms=[0-9]$`", none.clone(), "tools/bench_load.py measures the limit but is not frozen"),
        ("- limit: `python3 <tools/bench_load.py` → `re:^p95_ms=[0-9]$`", none.clone(), "tools/bench_load.py measures the limit but is not frozen"),
        // Past the interpreter's options and their values, and with options of its own.
        ("- limit: `python3 -X utf8 tools/bench_load.py` → `re:^p95_ms=[0-9]$`", none.clone(), "tools/bench_load.py measures the limit but is not frozen"),
        ("- limit: `python3 -W ignore tools/bench_load.py -c 3` → `re:^p95_ms=[0-9]$`", none.clone(), "tools/bench_load.py measures the limit but is not frozen"),
        ("- limit: `cd tests && python3 ../tools/bench_load.py` → `re:^p95_ms=[0-9]$`", none.clone(), "tools/bench_load.py measures the limit but is not frozen"),
        ("- regression: `python3 -m unittest discover -s tests/../tests` → `Ran 14 tests`", none.clone(), "kit freeze tests/"),
        ("- regression: `pytest $PWD/pyt/test_api.py` → `1 passed`", none.clone(), "pyt/test_api.py is not frozen"),
    ];
    let abs = format!(
        "- limit: `python3 {}/tools/bench_load.py` → `re:^p95_ms=[0-9]$`",
        root.path().display()
    );
    let mut cases = cases;
    cases.push((&abs, none.clone(), "tools/bench_load.py measures the limit but is not frozen"));
    for (text, frozen, phrase) in cases {
        let rating = rate(&goal(text), &frozen, root.path());
        let whats: Vec<&str> = rating.shortcuts.iter().map(|s| s.what.as_str()).collect();
        assert!(whats.iter().any(|w| w.contains(phrase)), "{text}: no `{phrase}` in {whats:#?}");
    }
}

/// A program whose text kit cannot see cannot be checked frozen (a tester's: the benchmark
/// fed through `cat … | python3 -` or named by `$B`, tools/ left unfrozen, rated level 3):
/// each way is a shortcut with everything frozen; the visible ways are not.
#[test]
fn a_program_kit_cannot_see_is_a_shortcut() {
    let root = repo();
    let pipe = "runs the program it reads from a pipe";
    let named = |w: &'static str| -> String { format!("runs a program named by `{w}`") };
    let cases: Vec<(&str, Option<String>)> = vec![
        // The program from a pipe: standard input, `-`, a shell's `-s`.
        ("- limit: `cat tools/bench_load.py | python3 -B -` → `re:^p95_ms=[0-9]$`", Some(pipe.into())),
        ("- limit: `cat tools/bench_load.py | python3` → `re:^p95_ms=[0-9]$`", Some(pipe.into())),
        ("- limit: `cat tools/bench_load.py | python3 -X dev -` → `re:^p95_ms=[0-9]$`", Some(pipe.into())),
        ("- limit: `cat tools/bench_load.py | sh -s` → `re:^p95_ms=[0-9]$`", Some(pipe.into())),
        ("- limit: `sed s/x/y/ tools/bench_load.py | python3 -` → `re:^p95_ms=[0-9]$`", Some(pipe.into())),
        ("- limit: `printf '%s' \"$(cat tools/bench_load.py)\" | python3 -` → `re:^p95_ms=[0-9]$`", Some(pipe.into())),
        ("- limit: `sh -c 'cat tools/bench_load.py | python3 -'` → `re:^p95_ms=[0-9]$`", Some(pipe.into())),
        // The program's path in a variable or a command's output.
        ("- limit: `B=tools/bench_load.py; python3 -B $B` → `re:^p95_ms=[0-9]$`", Some(named("$B"))),
        ("- limit: `B=tools/bench_load.py; python3 -B \"${B}\"` → `re:^p95_ms=[0-9]$`", Some(named("${B}"))),
        ("- limit: `D=tools; python3 $D/bench_load.py` → `re:^p95_ms=[0-9]$`", Some(named("$D/bench_load.py"))),
        ("- limit: `python3 \"$(ls tools/*.py)\"` → `re:^p95_ms=[0-9]$`", Some(named("$(ls tools/*.py)"))),
        ("- limit: `B=tools/bench_load.py; python3 - < $B` → `re:^p95_ms=[0-9]$`", Some(named("$B"))),
        ("- limit: `B=tools/bench_load.py; ./$B` → `re:^p95_ms=[0-9]$`", Some(named("./$B"))),
        ("- limit: `P=python3; $P tools/bench_load.py` → `re:^p95_ms=[0-9]$`", Some(named("$P"))),
        ("- limit: `B=tools/bench_load.py; sh -c \"python3 $B\"` → `re:^p95_ms=[0-9]$`", Some(named("$B"))),
        ("- limit: `M=tools.bench_load; python3 -m $M` → `re:^p95_ms=[0-9]$`", Some(named("$M"))),
        // Seen: by path, from a frozen file on standard input, the goal's own text.
        ("- limit: `python3 -B tools/bench_load.py` → `re:^p95_ms=[0-9]$`", None),
        ("- limit: `python3 -B - < tools/bench_load.py` → `re:^p95_ms=[0-9]$`", None),
        ("- limit: `python3 < tools/bench_load.py` → `re:^p95_ms=[0-9]$`", None),
        ("- limit: `python3 $PWD/tools/bench_load.py` → `re:^p95_ms=[0-9]$`", None),
        ("- limit: `python3 -B tools/bench_load.py | python3 -c 'import sys; print(sys.stdin.read())'` → `re:^p95_ms=[0-9]$`", None),
        ("- limit: `echo 'import runpy' | python3 -B - && python3 tools/bench_load.py` → `re:^p95_ms=[0-9]$`", None),
        ("- function: `python3 -m unittest tests.test_durations -v 2>&1 | tee /dev/stderr | python3 tools/bench_load.py` → `Ran 9 tests` and `re:^OK$`", None),
    ];
    for (text, want) in &cases {
        let rating = rate(&goal(text), &all_frozen(), root.path());
        let whats: Vec<&str> = rating.shortcuts.iter().map(|s| s.what.as_str()).collect();
        match want {
            Some(phrase) => {
                assert!(
                    whats.iter().any(|w| w.contains(phrase.as_str()) && w.contains(FIX_SEP)),
                    "{text}: no shortcut says `{phrase}`: {whats:#?}"
                );
                assert!(rating.level <= 2, "{text}: level {}", rating.level);
            }
            None => assert!(
                !whats.iter().any(|w| w.contains("kit cannot see which file")),
                "{text}: unexpected {whats:#?}"
            ),
        }
    }
    // The fix names the file a `cat` piped in.
    let rating = rate(&goal(cases[0].0), &all_frozen(), root.path());
    assert!(
        rating.shortcuts.iter().any(|s| s.what.ends_with(
            "fix: run it by its path: `python3 tools/bench_load.py`, then kit freeze tools/bench_load.py"
        )),
        "{:#?}",
        rating.shortcuts
    );
}

/// Where an interpreter's program comes from, whatever options come before it.
#[test]
fn an_interpreters_program_is_found_past_its_options() {
    use super::runner::{source, Source};
    let w = |s: &str| -> Vec<String> { s.split(' ').map(String::from).collect() };
    let cases: Vec<(&str, &str, Source)> = vec![
        ("python3", "-B tools/b.py", Source::File("tools/b.py")),
        ("python3", "-X dev -W ignore tools/b.py -c 3", Source::File("tools/b.py")),
        ("python3", "-Xdev tools/b.py", Source::File("tools/b.py")),
        ("python3", "-B -m tools.b", Source::Module("tools.b")),
        ("python3", "-c print(1)", Source::Inline),
        ("python3", "-B -", Source::Stdin),
        ("python3", "-B", Source::Stdin),
        ("sh", "-e check.sh", Source::File("check.sh")),
        ("bash", "-o pipefail check.sh", Source::File("check.sh")),
        ("sh", "-ec true", Source::Inline),
        ("sh", "-s", Source::Stdin),
        ("node", "-r ts-node/register check.js", Source::File("check.js")),
        ("node", "-e 1", Source::Inline),
        ("perl", "-I lib bench.pl", Source::File("bench.pl")),
        ("php", "-f bench.php", Source::File("bench.php")),
    ];
    for (base, args, want) in cases {
        let args = w(args);
        assert_eq!(source(base, &args), want, "{base} {args:?}");
    }
}

#[test]
fn a_folder_named_twice_is_reported_once() {
    let root = repo();
    let rating = rate(&goal("- regression: `pytest tests/` → `3 passed`"), &[], root.path());
    assert_eq!(rating.shortcuts.len(), 1, "{:#?}", rating.shortcuts);
}

/// A package's `__init__.py` runs whenever Python imports a test module of that package, so it
/// is frozen with the tests: `python -m unittest tests.test_x` imports `tests`, discovery the
/// packages below its top-level folder, pytest every package around a test file.
#[test]
fn the_init_files_of_the_packages_a_criterion_imports_must_be_frozen() {
    let d = tempfile::tempdir().unwrap();
    for f in [
        "tests/__init__.py",
        "tests/test_a.py",
        "tests/test_b.py",
        "tests/unit/__init__.py",
        "tests/unit/test_c.py",
        "flat/test_d.py",
        "longrun/goal.md",
    ] {
        let p = d.path().join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, "x\n").unwrap();
    }
    let files = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<String>>();
    let leaves = files(&["tests/test_a.py", "tests/test_b.py", "tests/unit/test_c.py"]);
    let with_top = files(&[
        "tests/test_a.py",
        "tests/test_b.py",
        "tests/unit/test_c.py",
        "tests/unit/__init__.py",
    ]);
    let dotted = "- function: `python3 -m unittest tests.test_a -v` → `Ran 3 tests` and `re:^OK$`";
    let sub = "- function: `python3 -m unittest tests.unit.test_c` → `Ran 3 tests` and `re:^OK$`";
    let discover =
        "- regression: `python3 -m unittest discover -s tests` → `Ran 9 tests` and `re:^OK$`";
    let discover_top =
        "- regression: `python3 -m unittest discover -s tests -t .` → `Ran 9 tests` and `re:^OK$`";
    let by_path = "- function: `python3 -m unittest tests/test_a.py` → `Ran 3 tests` and `re:^OK$`";
    let pytest = "- function: `pytest tests/unit/test_c.py` → `3 passed`";
    let flat = "- function: `python3 -m unittest flat.test_d` → `Ran 3 tests` and `re:^OK$`";
    // (criterion, frozen, the unfrozen `__init__.py` files it must name, in order)
    let cases: Vec<(&str, Vec<String>, &[&str])> = vec![
        (dotted, files(&["tests/test_a.py"]), &["tests/__init__.py"]),
        (dotted, files(&["tests/test_a.py", "tests/__init__.py"]), &[]),
        (dotted, files(&["tests"]), &[]),
        (by_path, files(&["tests/test_a.py"]), &["tests/__init__.py"]),
        (sub, files(&["tests/unit/test_c.py"]), &["tests/unit/__init__.py", "tests/__init__.py"]),
        (sub, files(&["tests/unit"]), &["tests/__init__.py"]),
        // Discovery imports the files as modules of its start folder: the start folder's own
        // `__init__.py` does not run, those of the packages below it do.
        (discover, leaves.clone(), &["tests/unit/__init__.py"]),
        (discover, with_top.clone(), &[]),
        (discover_top, with_top.clone(), &["tests/__init__.py"]),
        (
            pytest,
            files(&["tests/unit/test_c.py"]),
            &["tests/unit/__init__.py", "tests/__init__.py"],
        ),
        // A folder without `__init__.py` is no package: nothing else runs.
        (flat, files(&["flat/test_d.py"]), &[]),
    ];
    for (text, frozen, inits) in cases {
        let rating = rate(&goal(text), &frozen, d.path());
        let named: Vec<&str> = rating
            .shortcuts
            .iter()
            .filter_map(|s| s.what.split(' ').next().filter(|p| p.ends_with("__init__.py")))
            .collect();
        assert_eq!(named, inits, "{text} with {frozen:?}: {:#?}", rating.shortcuts);
        for s in &rating.shortcuts {
            assert!(
                s.what.contains("runs whenever the tests of its package are imported"),
                "{s:?}"
            );
            let fix = s.what.split(FIX_SEP).nth(1).unwrap();
            let folder = s.what.split(' ').next().unwrap().trim_end_matches("/__init__.py");
            assert!(fix.contains(&format!("kit freeze {folder}/")), "{s:?}");
        }
        assert_eq!(rating.level <= 2, !inits.is_empty(), "{text}: level {}", rating.level);
    }
    // With the test file unfrozen too, one shortcut names both, and one command fixes both.
    let rating = rate(&goal(dotted), &[], d.path());
    let whats: Vec<&str> = rating.shortcuts.iter().map(|s| s.what.as_str()).collect();
    assert_eq!(
        whats,
        ["tests/test_a.py is not frozen, nor tests/__init__.py (run when its package is imported): the agent can edit the test until it passes; fix: kit freeze tests/test_a.py tests/__init__.py"]
    );
    // A folder's fix takes the packages inside it along.
    let rating = rate(&goal(discover_top), &[], d.path());
    let whats: Vec<&str> = rating.shortcuts.iter().map(|s| s.what.as_str()).collect();
    assert_eq!(whats.len(), 1, "{whats:#?}");
    assert!(whats[0].ends_with("fix: kit freeze tests/ (a frozen folder also catches new files)"));
}

#[test]
fn the_whole_tests_folder_frozen_covers_discover() {
    let root = repo();
    let rating = rate(
        &goal(
            "- regression: `python3 -m unittest discover -s tests -p 'test_*.py'` → `Ran 14 tests` and `re:^OK$`",
        ),
        &["tests".into()],
        root.path(),
    );
    assert_eq!(rating.shortcuts, []);
    assert!(rating.reasons[2].contains("tests/"), "{}", rating.reasons[2]);
}

#[test]
fn arbitrary_commands_never_panic() {
    let root = repo();
    let pieces = [
        "python3 -m unittest ",
        "pytest ",
        "cargo test ",
        "go test ",
        "discover ",
        "-s ",
        "-k",
        " -p ",
        "tests",
        "/",
        ".",
        "::",
        "'",
        "\"",
        "\\",
        " || ",
        "; ",
        " | ",
        "&",
        " 2>",
        "/dev/null",
        "sh -c '",
        "cd ",
        "..",
        "longrun/",
        "é",
        "--",
        "-x",
        "exit 0",
        "$",
        "=",
        "test_durations",
        "py",
        " ",
    ];
    let kinds = ["function", "regression", "limit"];
    let exps = ["`OK`", "`Ran 3 tests`", "`re:.*`", "``", "`re:^p95_ms=[0-9]$`"];
    let mut seed = 0x9E3779B97F4A7C15u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..1500 {
        let mut cmd = String::new();
        for _ in 0..(next() % 12) + 1 {
            cmd.push_str(pieces[(next() % pieces.len() as u64) as usize]);
        }
        let cmd = cmd.replace('`', "");
        let kind = kinds[(next() % 3) as usize];
        let exp = exps[(next() % exps.len() as u64) as usize];
        let Ok(g) = super::super::parse(
            Path::new("goal.md"),
            &format!("## Criteria\n- {kind}: ``{cmd} `` → {exp}\n"),
        ) else {
            continue;
        };
        let r = rate(&g, &[], root.path());
        assert!(r.level <= 4 && r.reasons.len() == 4);
    }
}

/// Every fix text is built from the criterion it is about (QA): no count, metric name or
/// runner from some other goal. Each criterion below has one shortcut whose fix is checked
/// for what it must and must not say.
#[test]
fn fix_texts_come_from_their_own_criterion() {
    let root = repo();
    // (criterion, a phrase of the problem, what the fix must hold, what it must not)
    let cases: &[(&str, &str, &[&str], &[&str])] = &[
        (
            "- function: `python3 -m unittest tests.test_durations -v` → `OK`",
            "pins no count",
            &["`Ran N tests`", "`python3 -m unittest tests.test_durations -v`"],
            &["14", "9 tests", "passed"],
        ),
        (
            "- regression: `pytest pyt/test_api.py` → `0 failed`",
            "pins no count",
            &["`N passed`", "`pytest pyt/test_api.py`"],
            &["14", "Ran "],
        ),
        (
            "- regression: `cargo test --locked` → `ok`",
            "pins no count",
            &["test result: ok. N passed", "`cargo test --locked`"],
            &["14", "Ran "],
        ),
        (
            "- function: `python3 -m unittest tests.test_durations 2>/dev/null` → `OK`",
            "pins no count",
            &["`python3 -m unittest tests.test_durations`"],
            &["/dev/null"],
        ),
        (
            "- function: `python3 -m unittest tests.test_durations`",
            "no expected output",
            &["`Ran N tests`", "tests.test_durations"],
            &["14"],
        ),
        (
            "- function: `python3 -m unittest tests.test_durations` → `Ran 9 tests` and `re:.*`",
            "matches any output",
            &["drop `re:.*`", "`Ran 9 tests`"],
            &["14"],
        ),
        (
            "- function: `python3 -m unittest tests.test_durations` → `re:.*`",
            "matches any output",
            &["`Ran N tests`"],
            &["14"],
        ),
        (
            "- function: `python3 -m unittest -f tests.test_durations` → `OK`",
            "stops at the first failure",
            &["drop `-f`", "`Ran N tests`"],
            &["14", "passed"],
        ),
        (
            "- limit: `python3 tools/bench_load.py` → `re:^parsed=20000 cpu_ms=\\d+$`",
            "limit without a bound",
            &["`re:^parsed=20000 cpu_ms=[0-9]{1,3}$`"],
            &["p95"],
        ),
        (
            "- limit: `python3 tools/bench_load.py` → `re:^rows=[0-9]+ took_ms=[0-9]{1,3}$`",
            "",
            &[],
            &[],
        ),
        (
            "- limit: `python3 tools/bench_load.py` → `re:cpu_ms=\\d+`",
            "limit without a number",
            &["`re:cpu_ms=[0-9]{1,3}\\b`"],
            &["p95"],
        ),
        (
            "- limit: `python3 tools/bench_load.py` → `rss_kb=`",
            "limit without a number",
            &["`re:rss_kb=[0-9]{1,3}\\b`"],
            &["p95", "cpu"],
        ),
        (
            "- limit: `python3 tools/bench_load.py` → `re:^took (.*) ms$`",
            "limit without a number",
            &["`re:^took ([0-9]{1,3}) ms$`"],
            &["p95"],
        ),
        (
            "- limit: `python3 tools/bench_load.py`",
            "no expected output",
            &["`python3 tools/bench_load.py` prints the value alone"],
            &["p95", "Ran "],
        ),
    ];
    for (text, problem, must, must_not) in cases {
        let rating = rate(&goal(text), &all_frozen(), root.path());
        if problem.is_empty() {
            // `rows=[0-9]+` is a count, not the bound; the bound is there too. Known gap:
            // the linter cannot tell which number is the limited one.
            assert!(rating.shortcuts.iter().all(|s| !s.what.contains("bound")), "{text}");
            continue;
        }
        let Some(s) = rating.shortcuts.iter().find(|s| s.what.contains(problem)) else {
            panic!("{text}: no `{problem}` in {:#?}", rating.shortcuts);
        };
        let fix = s.what.split_once(FIX_SEP).map(|(_, f)| f).unwrap_or("");
        for m in *must {
            assert!(fix.contains(m), "{text}: fix lacks `{m}`: {fix}");
        }
        for m in *must_not {
            assert!(!fix.contains(m), "{text}: fix has `{m}`: {fix}");
        }
    }
    // A bound written that way really is a bound: 1000 and more fail, 999 passes.
    let re = regex::Regex::new("cpu_ms=[0-9]{1,3}\\b").unwrap();
    assert!(re.is_match("parsed=20000 cpu_ms=999"));
    assert!(!re.is_match("parsed=20000 cpu_ms=1000"));
}

/// Point 2 of the scale says each command's exit status is checked only when it is.
#[test]
fn the_commands_point_does_not_claim_a_swallowed_status() {
    let root = repo();
    let honest = rate(
        &goal("- regression: `python3 -m unittest discover -s tests` → `Ran 14 tests` and `OK`"),
        &all_frozen(),
        root.path(),
    );
    assert!(
        honest.reasons[1].contains("each with its exit status checked"),
        "{:?}",
        honest.reasons
    );
    for cmd in [
        "python3 -m unittest discover -s tests; exit 0",
        "python3 -m unittest discover -s tests || true",
        "python3 -m unittest discover -s tests 2>&1 | tail -3",
        "! python3 -m unittest discover -s tests",
        "echo Ran 14 tests OK",
    ] {
        let text = format!(
            "- function: `python3 -m unittest tests.test_durations` → `Ran 9 tests` and `OK`\n- regression: `{cmd}` → `Ran 14 tests` and `OK`"
        );
        let r = rate(&goal(&text), &all_frozen(), root.path());
        assert_eq!(r.level, 2, "{cmd}");
        assert!(
            !r.reasons[1].contains("each with its exit status checked"),
            "{cmd}: {}",
            r.reasons[1]
        );
        assert!(
            r.reasons[1].contains("exit status of goal.md:5 is thrown away"),
            "{cmd}: {}",
            r.reasons[1]
        );
    }
}

#[test]
fn numbers_inside_names_do_not_count() {
    assert_eq!(numbers("Ran 14 tests"), ["14"]);
    assert_eq!(numbers("p95_ms=12 test_2 v3"), ["12"]);
    assert_eq!(numbers("^p95_ms=([0-9]|1[0-9])$"), ["0", "9", "1", "0", "9"]);
}

#[test]
fn globs() {
    for (p, n, want) in [
        ("test*.py", "test_a.py", true),
        ("test*.py", "a_test.py", false),
        ("*_test.py", "a_test.py", true),
        ("*.rs", "cli.rs", true),
        ("t?st.py", "test.py", true),
        ("*", "", true),
    ] {
        assert_eq!(glob_match(p, n), want, "{p} {n}");
    }
}

/// The lab of lesson 2: the rehearsal sample project with exercise 3's extra regression tests
/// (16 unittest tests: 9 in tests/test_durations.py), and `tools/run.sh`, a wrapper script.
fn lab() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let here = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let project = here.join("kit/rehearsal/project");
    for f in [
        "confload/__init__.py",
        "confload/durations.py",
        "confload/loader.py",
        "tests/__init__.py",
        "tests/test_durations.py",
        "tests/test_loader.py",
        "tools/bench_durations.py",
    ] {
        let to = d.path().join(f);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(project.join(f), to).unwrap();
    }
    std::fs::copy(
        here.join("exercises/03-close-the-shortcuts/start/tests/test_loader_values.py"),
        d.path().join("tests/test_loader_values.py"),
    )
    .unwrap();
    std::fs::write(d.path().join("tools/run.sh"), "python3 -B -m unittest \"$@\" -v\n").unwrap();
    d
}

const F: &str =
    "- function: `python3 -B -m unittest tests.test_durations -v` → `Ran 9 tests` and `re:^OK$`";
const R: &str =
    "- regression: `python3 -B -m unittest discover -s tests -v` → `Ran 16 tests` and `re:^OK$`";
const L: &str =
    "- limit: `python3 -B tools/bench_durations.py` → `re:^parsed=20000 cpu_ms=[0-9]{1,3}$`";

/// Issue 22's held-back set: goals on the lesson-2 lab as their author meant them, sound ones
/// written the ways people write them (3–4) and every known shortcut shape (≤ 2), old and new.
/// The linter must neither pass a shortcut nor cry wolf on a sound goal.
#[test]
fn goals_on_the_lesson_2_lab_are_rated_as_their_author_meant() {
    let root = lab();
    let tt: Vec<String> = vec!["tests".into(), "tools".into()];
    let bench_only: Vec<String> = vec!["tests".into(), "tools/bench_durations.py".into()];
    let with = |f: &str, r: &str, l: &str| format!("{f}\n{r}\n{l}");
    // (criteria, frozen, lowest level, highest level)
    let cases: Vec<(String, &Vec<String>, u8, u8)> = vec![
        // Sound.
        (with(F, R, L), &tt, 4, 4),
        (with(L, F, R), &tt, 4, 4),
        // A fourth criterion: the loader tests pinned on their own, beside the whole suite.
        (format!("{L}\n- regression: `python3 -B -m unittest tests.test_loader tests.test_loader_values -v` → `Ran 7 tests` and `re:^OK$`\n{F}\n{R}"), &tt, 4, 4),
        (format!("The suite is the team's.\n\n{F}\n\nAnd it must stay fast:\n\n{R}\n{L}"), &tt, 4, 4),
        (with(F, "- regression: `python3 -m unittest discover -s tests -v` → `Ran 16 tests` and `re:^OK$`", L), &tt, 4, 4),
        (with(F, "- regression: `python3 -B -m unittest discover -s tests` → `re:^Ran 16 tests in` and `re:^OK$`", L), &tt, 4, 4),
        (with("- function: `python3 -B -m unittest -v tests.test_durations` → `re:^OK$` and `Ran 9 tests`", R, L), &tt, 4, 4),
        (with(F, R, "- limit: `python3 -B tools/bench_durations.py` → `re:^parsed=20000 cpu_ms=([0-9]{1,2}|[1-8][0-9]{2})$`"), &tt, 4, 4),
        (with(F, R, "- limit: `python3 -B tools/bench_durations.py` → `parsed=20000` and `re:cpu_ms=[0-9]{1,3}$`"), &tt, 4, 4),
        (with("- function: `python -m pytest -q tests/test_durations.py` → `9 passed`", "- regression: `python -m pytest -q` → `16 passed`", L), &tt, 4, 4),
        (format!("{F}\n{R}"), &tt, 3, 3),
        // A wrapper script, frozen: sound, but kit cannot canary it.
        (with("- function: `sh tools/run.sh tests.test_durations` → `Ran 9 tests` and `re:^OK$`", R, L), &tt, 3, 3),
        // Shortcuts the issue names.
        (with(F, "- regression: `python3 -B -m unittest discover -s tests -p \"test_d*.py\" -v` → `Ran 9 tests` and `re:^OK$`", L), &tt, 0, 2),
        (with(F, R, "- limit: `python3 -B tools/bench_durations.py` → `parsed=20000`"), &tt, 0, 2),
        (with(F, R, "- limit: `python3 -B tools/bench_durations.py` → `re:cpu_ms=[0-9]{1,9}`"), &tt, 0, 2),
        (with(F, R, "- limit: `python3 -B tools/bench_durations.py` → `re:cpu_ms=[0-9]{1,3}|cpu_ms=[0-9]*`"), &tt, 0, 2),
        (with(F, R, "- limit: `python3 -B tools/bench_durations.py` → `re:^parsed=20000 cpu_ms=[0-9]{1,13}$`"), &tt, 0, 2),
        (with("- function: `python3 -B -m unittest tests.test_durations -v` → `Ran 9 tests` and `re:^OK`", R, L), &tt, 0, 2),
        (with("- function: `sh tools/run.sh tests.test_durations` → `Ran 9 tests` and `re:^OK$`", R, L), &bench_only, 0, 2),
        (with("- function: `./tools/run.sh tests.test_durations` → `Ran 9 tests` and `re:^OK$`", R, L), &bench_only, 0, 2),
        (with("- function: `bash tools/run.sh tests.test_durations` → `Ran 9 tests` and `re:^OK$`", R, L), &bench_only, 0, 2),
        // Shapes the table already names.
        (with("- function: `python3 -B -m unittest -k seconds tests.test_durations -v` → `Ran 9 tests` and `re:^OK$`", R, L), &tt, 0, 2),
        (with(F, R, "- limit: `python3 -B tools/bench_durations.py` → `re:cpu_ms=[0-9]+`"), &tt, 0, 2),
        (with(F, "- regression: `python3 -B -m unittest discover -s tests -v` → `Ran 16 tests` and `re:.*`", L), &tt, 0, 2),
        (with(F, "- regression: `python3 -B -m unittest discover -s tests -v; exit 0` → `Ran 16 tests` and `re:^OK$`", L), &tt, 0, 2),
        (with("- function: `python3 -B -m unittest tests.test_durations -v 2>/dev/null` → `Ran 9 tests` and `re:^OK$`", R, L), &tt, 0, 2),
        (with("- function: `python3 -B -m unittest tests.test_durations -v` → `OK`", R, L), &tt, 0, 2),
        // Sound-looking, but not.
        (with("- function: `python3 -B -m unittest tests.test_durations -v` → `Ran 9 tests` and `OK`", R, L), &tt, 0, 2),
        (with("- function: `python3 -B -m unittest tests.test_durations -v` → `Ran 9 tests`", R, L), &tt, 0, 2),
        (with(F, "- regression: `python3 -B -m unittest tests.test_durations tests.test_loader -v` → `Ran 14 tests` and `re:^OK$`", L), &tt, 0, 2),
        (with(F, "- regression: `python3 -B -m unittest discover -s tests -v` → `Ran 15 tests` and `re:^OK$`", L), &tt, 0, 2),
        (with(F, "- regression: `python -m pytest -q tests/test_durations.py tests/test_loader.py` → `14 passed`", L), &tt, 0, 2),
        (with(F, "- regression: `python -m pytest -q --ignore tests/test_loader_values.py` → `14 passed`", L), &tt, 0, 2),
        (with(F, "- regression: `python -m pytest -q` → `re:[0-9]+ passed`", L), &tt, 0, 2),
    ];
    for (criteria, frozen, low, high) in &cases {
        let rating = rate(&goal(criteria), frozen, root.path());
        assert!(
            (*low..=*high).contains(&rating.level),
            "{criteria}\nrated {}, meant {low}–{high}\n{:#?}\n{:#?}",
            rating.level,
            rating.shortcuts,
            rating.reasons
        );
        if *high <= 2 {
            assert!(rating.shortcuts.iter().all(|s| s.what.contains(FIX_SEP)), "{criteria}");
        }
    }
}

/// Exercise 14: an extra function criterion that selects one class or one test of a module is
/// canaried where the selection runs (level 4), and the loop's canary plans it by the same rule;
/// a selection kit cannot canary caps the goal at 3 and says why.
#[test]
fn a_class_or_one_test_selected_is_canaried_and_a_pattern_is_not() {
    let root = lab();
    let tt: Vec<String> = vec!["tests".into(), "tools".into()];
    for (extra, level, plan) in [
        (
            "- function: `python3 -B -m unittest tests.test_durations.LoaderDurationTest -v` → `Ran 2 tests` and `re:^OK$`",
            4,
            Some(vec!["LoaderDurationTest"]),
        ),
        (
            "- function: `python3 -B -m unittest tests.test_durations.ParseDurationTest.test_seconds -v` → `Ran 1 test` and `re:^OK$`",
            4,
            Some(vec!["ParseDurationTest", "test_seconds"]),
        ),
        (
            "- function: `python3 -B -m unittest tests.ParseDurationTest -v` → `Ran 7 tests` and `re:^OK$`",
            3,
            None,
        ),
    ] {
        let g = goal(&format!("{F}\n{R}\n{L}\n{extra}"));
        let rating = rate(&g, &tt, root.path());
        assert_eq!(rating.level, level, "{extra}\n{:#?}\n{:#?}", rating.shortcuts, rating.reasons);
        let planned = super::canary_plan(&g.criteria[3], root.path());
        match plan {
            Some(path) => {
                let p = planned.unwrap();
                let want: Vec<String> = path.iter().map(|s| s.to_string()).collect();
                assert_eq!(p.files, vec![("tests/test_durations.py".to_string(), vec![want])]);
            }
            None => {
                let why = planned.unwrap_err();
                assert!(
                    rating.reasons[3].contains("kit cannot canary goal.md:7")
                        && rating.reasons[3].contains(&why),
                    "{why}\n{:#?}",
                    rating.reasons
                );
            }
        }
    }
}

/// Each adversarial shortcut names the output it accepted; the trials are kept for --json.
#[test]
fn an_adversarial_shortcut_names_the_output_it_accepted() {
    let root = lab();
    let tt: Vec<String> = vec!["tests".into(), "tools".into()];
    let cases: &[(&str, &str)] = &[
        ("- function: `python3 -B -m unittest tests.test_durations -v` → `Ran 9 tests` and `re:^OK`", "OK (skipped=3)"),
        ("- limit: `python3 -B tools/bench_durations.py` → `re:cpu_ms=[0-9]{1,9}`", "cpu_ms=1000000000000"),
        ("- limit: `python3 -B tools/bench_durations.py` → `parsed=20000`", "parsed=20000 1000000000000"),
        ("- regression: `python3 -B -m unittest discover -s tests -v` → `Ran 15 tests` and `re:^OK$`", "the frozen suite holds 16"),
        ("- regression: `python3 -B -m unittest discover -s tests -p \"test_d*.py\" -v` → `Ran 9 tests` and `re:^OK$`", "left out: tests/test_loader.py, tests/test_loader_values.py"),
    ];
    for (text, phrase) in cases {
        let rating = rate(&goal(text), &tt, root.path());
        assert!(
            rating.shortcuts.iter().any(|s| s.line == 4 && s.what.contains(phrase)),
            "{text}: no `{phrase}` in {:#?}",
            rating.shortcuts
        );
    }
    let rating = rate(&goal(L), &tt, root.path());
    assert!(rating.shortcuts.is_empty(), "{:#?}", rating.shortcuts);
    let far: Vec<&Trial> =
        rating.trials.iter().filter(|t| t.output.contains("1000000000000")).collect();
    assert!(!far.is_empty() && far.iter().all(|t| !t.accepted), "{:#?}", rating.trials);
}
