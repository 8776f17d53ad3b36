//! The canary: before the loop accepts "done", kit proves that the test runner can still say
//! "failed" (issue 10). Code under test runs inside the runner's process, so it can patch the
//! framework (`unittest.TestCase.assertEqual = lambda *a, **k: None`), mark every result a
//! success, or print the runner's summary itself and exit 0 before a test runs. No scan of the
//! code finds every way to do that; a test that must fail does. For each criterion whose command
//! runs a runner kit knows (unittest, pytest, cargo test, go test) and expects exit status 0, kit
//! appends to every test file the criterion runs one test that fails (`assertEqual(N, N + 1)`
//! with a fresh N) — where the criterion selects one class (`tests.test_x.Class`,
//! `file::Class`) a failing method added to that class, where it selects one test the test
//! replaced by a failing one — runs the criterion once more, and puts each file back byte for
//! byte. Which criteria kit can canary is one rule, [`canary_plan`], that the linter's level 4
//! uses too: a criterion it cannot canary is skipped here, never refused. The run
//! must exit non-zero: a runner that still exits 0 with a failing test in its files does not
//! report failures, and its "passed" proves nothing.
//!
//! The canary is added only after the agent's process group has been ended and the tree
//! verified, and is gone before the next iteration: the agent never sees it. What it does not
//! prove: code that recognises the canary (by its name, or by the test file's hash) and fails it
//! on purpose while passing everything else would not be caught — kit's tests, not a scan, are
//! the floor, and the frozen files say what is tested. Criteria kit cannot read a runner in (a
//! script, `make test`) are reported as not canaried.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::criteria::run_until;
use super::env::CriteriaEnv;
use super::lint::{canary_plan, TestLanguage};
use super::{Criterion, Goal};

/// The outcome of the canary for one criterion.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CanaryResult {
    /// 1-based line of the criterion in goal.md.
    pub line: usize,
    /// The test files the canary was added to (empty when not canaried).
    pub files: Vec<String>,
    /// `caught` (the run failed, as it must), `missed` (it passed with the failing test in
    /// place), or `skipped` (see `why`).
    pub outcome: String,
    /// For `missed` and `skipped`: why, in a sentence.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub why: String,
}

impl CanaryResult {
    /// The runner reported success with a failing test in its files.
    pub fn missed(&self) -> bool {
        self.outcome == "missed"
    }
}

/// Run the canary for every criterion of `goal` (all of which just passed) in `root`, each with
/// `timeout`, in `env`. `seed` makes the canary's name and numbers differ from run to run.
/// Errors only when a test file cannot be put back; the caller must then stop the loop (the
/// frozen guard restores it from its stored copy too).
pub fn run(
    goal: &Goal,
    root: &Path,
    timeout: Duration,
    env: Option<&CriteriaEnv>,
    seed: u64,
    stop: &dyn Fn() -> bool,
) -> Result<Vec<CanaryResult>, String> {
    let mut out = Vec::new();
    for (k, c) in goal.criteria.iter().enumerate() {
        if stop() {
            break;
        }
        out.push(one(c, root, timeout, env, seed.wrapping_add(k as u64), stop)?);
    }
    Ok(out)
}

fn one(
    c: &Criterion,
    root: &Path,
    timeout: Duration,
    env: Option<&CriteriaEnv>,
    seed: u64,
    stop: &dyn Fn() -> bool,
) -> Result<CanaryResult, String> {
    let skipped = |why: &str| CanaryResult {
        line: c.line,
        files: Vec::new(),
        outcome: "skipped".into(),
        why: why.into(),
    };
    // The linter's rule: a criterion `kit goal check` says kit cannot canary is skipped here,
    // never refused.
    let plan = match canary_plan(c, root) {
        Ok(plan) => plan,
        Err(why) => return Ok(skipped(&format!("kit cannot canary it: {why}"))),
    };
    let lang = plan.lang;
    let tag = format!("{:08x}", splitmix(seed) as u32);
    let n = 1000 + (splitmix(seed ^ 0x5eed) % 9000) as i64;
    let mut originals: Vec<(String, Vec<u8>, u32)> = Vec::new();
    let mut planted = Vec::new();
    for (rel, selected) in &plan.files {
        let abs = root.join(rel);
        let (Ok(bytes), Ok(meta)) = (std::fs::read(&abs), std::fs::metadata(&abs)) else {
            continue;
        };
        let Some(with) = with_canary(lang, &bytes, &tag, n, selected) else { continue };
        originals.push((rel.clone(), bytes, meta.permissions().mode()));
        if std::fs::write(&abs, with).is_ok() {
            planted.push(rel.clone());
        }
    }
    let result = if planted.is_empty() {
        skipped("no test file the canary could be added to")
    } else {
        let r = run_until(c, root, timeout, env, stop);
        let (outcome, why) = if r.interrupted {
            ("skipped", "stopped by hand".to_string())
        } else if r.timed_out {
            ("missed", "the run with the canary did not end within the criterion's timeout".into())
        } else if r.exit == Some(0) {
            (
                "missed",
                "the runner exited 0 with a failing test added: something in the code under test changes what the runner reports (patches the test framework, or prints the summary and exits)".into(),
            )
        } else {
            ("caught", String::new())
        };
        CanaryResult { line: c.line, files: planted, outcome: outcome.into(), why }
    };
    for (rel, bytes, mode) in originals {
        let abs = root.join(&rel);
        crate::atomic::write_atomic(&abs, &bytes)
            .and_then(|()| {
                std::fs::set_permissions(&abs, std::fs::Permissions::from_mode(mode))
                    .map_err(|e| crate::error::Error::io(&abs, e))
            })
            .map_err(|e| format!("cannot put {rel} back after the canary: {e}"))?;
    }
    Ok(result)
}

/// The file's bytes with a failing test added, or None when it cannot take one (not UTF-8, or a
/// Go file that does not import `testing`). `selected`: the attribute paths the criterion runs
/// in the file (Python only; empty for the whole file): a class selected gets a failing test
/// method, a test selected is replaced by a failing one (it cannot take a sibling that runs).
fn with_canary(
    lang: TestLanguage,
    bytes: &[u8],
    tag: &str,
    n: i64,
    selected: &[Vec<String>],
) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut text = text.to_string();
    if !text.ends_with('\n') && !text.is_empty() {
        text.push('\n');
    }
    match lang {
        TestLanguage::Python => {
            let canary = if selected.is_empty() {
                format!(
                    "\n\nimport unittest as _kit_canary_{tag}\n\n\nclass TestKitCanary{tag}(_kit_canary_{tag}.TestCase):\n    def test_kit_canary_{tag}(self):\n        self.assertEqual({n}, {})\n\n\n",
                    n + 1
                )
            } else {
                // Planted by the module itself once its classes exist: resolving the name at run
                // time needs no parse of the class body, and works for an inherited test too.
                let calls: String = selected
                    .iter()
                    .map(|path| {
                        let quoted: Vec<String> = path.iter().map(|p| format!("{p:?}")).collect();
                        format!("_kit_canary_{tag}_plant([{}])\n", quoted.join(", "))
                    })
                    .collect();
                format!(
                    "\n\ndef _kit_canary_{tag}_plant(path):\n    import unittest\n\n    def test(*args):\n        if args and isinstance(args[0], unittest.TestCase):\n            args[0].assertEqual({n}, {m})\n        else:\n            raise AssertionError(\"kit canary: {n} != {m}\")\n\n    parent, name, obj = None, path[0], globals().get(path[0])\n    for part in path[1:]:\n        parent, name, obj = obj, part, getattr(obj, part, None)\n    if isinstance(obj, type):\n        test.__name__ = \"test_kit_canary_{tag}\"\n        setattr(obj, test.__name__, test)\n    elif parent is None:\n        test.__name__ = name\n        globals()[name] = test\n    else:\n        test.__name__ = name\n        setattr(parent, name, test)\n\n\n{calls}\n\n",
                    m = n + 1
                )
            };
            // Before a top-level `if __name__ == "__main__":`, so a file run as a script runs it.
            let at = text
                .match_indices("\nif __name__")
                .last()
                .map(|(i, _)| i + 1)
                .or_else(|| text.starts_with("if __name__").then_some(0));
            match at {
                Some(i) => text.insert_str(i, &canary),
                None => text.push_str(&canary),
            }
        }
        TestLanguage::Rust => {
            text.push_str(&format!(
                "\n#[test]\nfn kit_canary_{tag}() {{\n    assert_eq!({n}, {}, \"kit canary\");\n}}\n",
                n + 1
            ));
        }
        TestLanguage::Go => {
            if !text.contains("\"testing\"") {
                return None;
            }
            text.push_str(&format!(
                "\nfunc TestKitCanary{tag}(t *testing.T) {{\n\tif {n} != {} {{\n\t\tt.Fatal(\"kit canary\")\n\t}}\n}}\n",
                n + 1
            ));
        }
    }
    Some(text.into_bytes())
}

/// SplitMix64: one step, for the canary's name and numbers (not for anything secret).
fn splitmix(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEST: &str = "import unittest\nfrom calc import add\n\n\nclass AddTest(unittest.TestCase):\n    def test_small(self):\n        self.assertEqual(add(1, 2), 3)\n";

    fn setup(calc: &str, test: &str, criterion: &str) -> (tempfile::TempDir, Goal) {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("tests")).unwrap();
        std::fs::write(d.path().join("tests/__init__.py"), "").unwrap();
        std::fs::write(d.path().join("tests/test_calc.py"), test).unwrap();
        std::fs::write(d.path().join("calc.py"), calc).unwrap();
        let g = super::super::parse(
            Path::new("longrun/goal.md"),
            &format!(
                "# Goal: g\n\n## Criteria\n- function: `{criterion}` → `Ran 1 test` and `OK`\n"
            ),
        )
        .unwrap();
        (d, g)
    }

    fn outcome(calc: &str, test: &str, criterion: &str) -> (CanaryResult, String) {
        let (d, g) = setup(calc, test, criterion);
        let r = run(&g, d.path(), Duration::from_secs(60), None, 7, &|| false).unwrap();
        let after = std::fs::read_to_string(d.path().join("tests/test_calc.py")).unwrap();
        assert_eq!(after, test, "the test file was not put back byte for byte");
        (r[0].clone(), after)
    }

    #[test]
    fn an_honest_runner_fails_the_canary_and_the_file_is_put_back() {
        for cmd in
            ["python3 -m unittest tests.test_calc -v", "python3 -m unittest discover -s tests -v"]
        {
            let (r, _) = outcome("def add(a, b):\n    return a + b\n", TEST, cmd);
            assert_eq!(r.outcome, "caught", "{cmd}: {r:?}");
            assert_eq!(r.files, vec!["tests/test_calc.py"]);
        }
        // A test file run as a script: the canary goes before `if __name__`.
        let script = format!("{TEST}\n\nif __name__ == \"__main__\":\n    unittest.main()\n");
        let (r, _) =
            outcome("def add(a, b):\n    return a + b\n", &script, "python3 tests/test_calc.py -v");
        assert_eq!(r.outcome, "caught", "{r:?}");
    }

    #[test]
    fn code_that_patches_the_framework_or_prints_the_summary_is_missed_by_the_runner() {
        let table = [
            ("assertEqual patched", "import unittest\nunittest.TestCase.assertEqual = lambda *a, **k: None\ndef add(a, b):\n    return a + b\n"),
            ("result patched", "import unittest\nunittest.TestResult.wasSuccessful = lambda self: True\ndef add(a, b):\n    return a + b\n"),
            ("prints and exits", "import os, sys\nsys.stderr.write('Ran 1 test\\n\\nOK\\n')\nsys.stderr.flush()\nos._exit(0)\n"),
        ];
        for (name, calc) in table {
            let (r, _) = outcome(calc, TEST, "python3 -m unittest tests.test_calc -v");
            assert!(r.missed(), "{name}: {r:?}");
        }
    }

    const TWO_CLASSES: &str = "import unittest\nfrom calc import add\n\n\nclass AddTest(unittest.TestCase):\n    def test_small(self):\n        self.assertEqual(add(1, 2), 3)\n\n    def test_zero(self):\n        self.assertEqual(add(0, 0), 0)\n\n\nclass OtherTest(unittest.TestCase):\n    def test_other(self):\n        self.assertEqual(1, 1)\n\n\nif __name__ == \"__main__\":\n    unittest.main()\n";
    const HONEST: &str = "def add(a, b):\n    return a + b\n";
    const PATCHED: &str = "import unittest\nunittest.TestCase.assertEqual = lambda *a, **k: None\ndef add(a, b):\n    return a + b\n";

    #[test]
    fn a_class_or_one_test_selected_gets_the_canary_where_the_selection_runs_it() {
        // Exercise 14: `tests.test_x.Class` ran none of a top-level canary class, so an honest
        // runner exited 0 and the loop refused done forever.
        for cmd in [
            "python3 -B -m unittest tests.test_calc.AddTest -v",
            "python3 -B -m unittest tests.test_calc.AddTest.test_small -v",
            "python3 -B -m unittest tests.test_calc.AddTest.test_small tests.test_calc.OtherTest -v",
            "PYTHONPATH=. python3 -B tests/test_calc.py AddTest -v",
            "PYTHONPATH=. python3 -B tests/test_calc.py AddTest.test_zero",
        ] {
            let (r, _) = outcome(HONEST, TWO_CLASSES, cmd);
            assert_eq!(r.outcome, "caught", "{cmd}: {r:?}");
            assert_eq!(r.files, vec!["tests/test_calc.py"], "{cmd}");
            // And a runner the code under test patched still exits 0: missed, as it must be.
            let (r, _) = outcome(PATCHED, TWO_CLASSES, cmd);
            assert!(r.missed(), "{cmd}: {r:?}");
        }
    }

    #[test]
    fn the_selected_test_is_replaced_and_a_class_gets_a_method() {
        let sel = |p: &[&str]| vec![p.iter().map(|s| s.to_string()).collect::<Vec<_>>()];
        let class = String::from_utf8(
            with_canary(TestLanguage::Python, TWO_CLASSES.as_bytes(), "ab", 5, &sel(&["AddTest"]))
                .unwrap(),
        )
        .unwrap();
        // Before `if __name__`, after the classes it names.
        let plant = class.find("_kit_canary_ab_plant([\"AddTest\"])").unwrap();
        assert!(class.find("class OtherTest").unwrap() < plant);
        assert!(plant < class.find("if __name__").unwrap());
        assert!(class.contains("args[0].assertEqual(5, 6)"));
        let one = String::from_utf8(
            with_canary(
                TestLanguage::Python,
                TWO_CLASSES.as_bytes(),
                "ab",
                5,
                &sel(&["AddTest", "test_small"]),
            )
            .unwrap(),
        )
        .unwrap();
        assert!(one.contains("_kit_canary_ab_plant([\"AddTest\", \"test_small\"])"));
        // The runs fail on the canary itself, not on an error in it.
        for (text, name, expect) in [
            (
                &class,
                "tests.test_calc.AddTest",
                ["Ran 3 tests", "FAIL: test_kit_canary_ab", "AssertionError: 5 != 6"],
            ),
            (
                &one,
                "tests.test_calc.AddTest.test_small",
                ["Ran 1 test", "FAIL: test_small", "AssertionError: 5 != 6"],
            ),
        ] {
            let (d, _) = setup(HONEST, text, "true");
            let out = std::process::Command::new("python3")
                .args(["-B", "-m", "unittest", name, "-v"])
                .current_dir(d.path())
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success(), "{err}");
            for e in expect {
                assert!(err.contains(e), "{name}: no {e:?} in {err}");
            }
            assert!(err.contains("FAILED (failures=1)"), "{err}");
        }
    }

    #[test]
    fn pytest_selections_are_canaried_where_they_run() {
        if !std::process::Command::new("python3")
            .args(["-c", "import pytest"])
            .status()
            .is_ok_and(|s| s.success())
        {
            return; // pytest is not installed here
        }
        let plain = "from calc import add\n\n\nclass TestAdd:\n    def test_small(self):\n        assert add(1, 2) == 3\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n";
        for cmd in [
            "python3 -B -m pytest -q -p no:cacheprovider tests/test_calc.py::TestAdd",
            "python3 -B -m pytest -q -p no:cacheprovider tests/test_calc.py::TestAdd::test_small",
            "python3 -B -m pytest -q -p no:cacheprovider tests/test_calc.py::test_zero",
        ] {
            let (r, _) = outcome(HONEST, plain, cmd);
            assert_eq!(r.outcome, "caught", "{cmd}: {r:?}");
        }
    }

    #[test]
    fn a_selection_kit_cannot_canary_is_skipped_with_the_linters_reason() {
        for (cmd, why) in [
            ("python3 -m unittest tests.test_calc -k small -v", "`-k small` selects"),
            ("python3 -m pytest -q tests/test_calc.py -k small", "`-k small` selects"),
            ("python3 -m pytest -q tests/test_calc.py::test_x[1]", "`test_x[1]` selects"),
            ("python3 tests/test_calc.py -k small", "`-k` selects"),
            ("python3 -m unittest tests.AddTest", "inside the package tests"),
            ("cargo test parse", "`a test name filter parse` selects"),
            ("go test ./... -run TestParse", "`-run TestParse` selects"),
        ] {
            let (d, g) = setup(HONEST, TEST, cmd);
            let why_lint = canary_plan(&g.criteria[0], d.path()).unwrap_err();
            assert!(why_lint.contains(why), "{cmd}: {why_lint}");
            let r = run(&g, d.path(), Duration::from_secs(5), None, 1, &|| false).unwrap();
            assert_eq!(r[0].outcome, "skipped", "{cmd}: {r:?}");
            assert!(r[0].why.contains(&why_lint), "{cmd}: {r:?}");
        }
    }

    #[test]
    fn criteria_kit_cannot_read_are_skipped_not_failed() {
        let (d, g) = setup("", TEST, "sh run_tests.sh");
        let r = run(&g, d.path(), Duration::from_secs(5), None, 1, &|| false).unwrap();
        assert_eq!(r[0].outcome, "skipped");
    }

    #[test]
    fn the_canary_is_valid_rust_and_go() {
        let rs = with_canary(TestLanguage::Rust, b"#[test]\nfn a() {}", "ab", 5, &[]).unwrap();
        assert!(String::from_utf8(rs)
            .unwrap()
            .contains("fn kit_canary_ab() {\n    assert_eq!(5, 6"));
        assert!(with_canary(TestLanguage::Go, b"package x\n", "ab", 5, &[]).is_none());
        let go = with_canary(TestLanguage::Go, b"package x\nimport \"testing\"\n", "ab", 5, &[])
            .unwrap();
        assert!(String::from_utf8(go).unwrap().contains("func TestKitCanaryab(t *testing.T)"));
    }
}
