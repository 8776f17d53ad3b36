//! A check's verdict cannot come from the learner's tools: a `sh`, `python3` or `git` first on
//! the learner's `PATH` when they run `kit exercise check` is never what the check runs
//! (docs/golden-format.md, "The environment of a step"). Each test lays out exercise 4 with its
//! solution, puts a broken tool first on PATH (it prints a marker and exits 1), and demands the
//! same PASS as without it. A fake that would make an unsolved lab pass is each exercise's `path`
//! cheat (`exercises/*/cheats/`), run by `kit verify` and `tests/cases.rs`.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::util::{fake_agent_bin, kit_bin};

const EXERCISE: &str = "04-a-goal-that-survives";

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// A learner's lab with exercise 4 laid out and its solution written, under a HOME of its own.
fn solved_lab() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let lab = d.path().join("lab");
    let out = learner(d.path(), &lab, None).args(["exercise", "start", "4"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let folder = lab.join(EXERCISE);
    let solution =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("exercises").join(EXERCISE).join("solution");
    copy_dir(&solution, &folder);
    (d, folder)
}

fn copy_dir(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&dst).unwrap();
            copy_dir(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), &dst).unwrap();
        }
    }
}

/// `kit` as the learner runs it: their HOME beside the lab, `fakes` (if any) first on PATH.
fn learner(top: &Path, lab: &Path, fakes: Option<&Path>) -> std::process::Command {
    let bins = kit_course::golden::Binaries { kit: kit_bin(), fake_agent: Some(fake_agent_bin()) };
    let mut env = kit_course::golden::golden_env(top, &bins);
    for (k, v) in env.iter_mut() {
        if k == "PATH" {
            if let Some(f) = fakes {
                *v = format!("{}:{v}", f.display());
            }
        }
    }
    let mut c = std::process::Command::new(kit_bin());
    c.current_dir(top).env_clear().envs(env).env("KIT_LAB", lab);
    c
}

/// Check the solved lab with a broken `tool` first on PATH: still PASS, and the marker the
/// broken tool prints appears nowhere.
fn check_with_a_broken(tool: &str) {
    let (d, folder) = solved_lab();
    let fakes = d.path().join("fakes");
    std::fs::create_dir_all(&fakes).unwrap();
    let fake = fakes.join(tool);
    std::fs::write(&fake, format!("#!/bin/bash\necho \"the learner's {tool} ran\"\nexit 1\n"))
        .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let lab = d.path().join("lab");
    let out = learner(d.path(), &lab, Some(&fakes))
        .current_dir(&folder)
        .args(["exercise", "check"])
        .output()
        .unwrap();
    let t = text(&out);
    assert!(out.status.success() && t.starts_with("PASS"), "{tool} first on PATH:\n{t}");
    assert!(!t.contains("the learner's"), "{t}");
}

#[test]
fn a_broken_sh_first_on_path_changes_no_verdict() {
    check_with_a_broken("sh");
}

#[test]
fn a_broken_python3_first_on_path_changes_no_verdict() {
    check_with_a_broken("python3");
}

#[test]
fn a_broken_git_first_on_path_changes_no_verdict() {
    check_with_a_broken("git");
}
