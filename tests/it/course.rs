//! The course: a learner's flow through exercise 1, every exercise's and lesson's golden run
//! through the same code as `kit verify`, and guards on the layout of lessons/ and exercises/.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::util::{fake_agent_bin, kit, kit_bin};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// `kit` in `dir` with the lab at `lab`.
fn kit_in(dir: &Path, lab: &Path, args: &[&str]) -> Output {
    kit(dir).env("KIT_LAB", lab).args(args).output().unwrap()
}

#[test]
fn learner_starts_fails_fixes_and_passes_exercise_1() {
    let d = tempfile::tempdir().unwrap();
    let lab = d.path().join("lab");
    let o = kit_in(d.path(), &lab, &["exercise", "start", "1"]);
    assert!(o.status.success(), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("exercise 01: Create longrun/ in a repository"), "{t}");
    assert!(t.contains("check it: kit exercise check 1"), "{t}");
    let sandbox = lab.join("01-init");
    assert!(sandbox.join("NOTES.md").is_file());
    assert!(sandbox.join(".git").is_dir());

    let again = kit_in(d.path(), &lab, &["exercise", "start", "1"]);
    assert_eq!(again.status.code(), Some(2), "{}", text(&again));
    assert!(text(&again).contains("kit exercise reset 1"), "{}", text(&again));

    let o = kit_in(d.path(), &lab, &["exercise", "check", "1"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("FAIL  01 Create longrun/ in a repository"), "{t}");
    assert!(t.contains("golden.md:4  $ ls longrun"), "{t}");
    assert!(t.contains("hint 2: "), "{t}");
    assert!(t.contains("more: kit exercise hint 1 --level 3"), "{t}");
    assert!(!sandbox.join("longrun").exists(), "a check must not write into the lab");

    let solution = kit_in(d.path(), &lab, &["exercise", "solution", "1"]);
    assert_eq!(solution.status.code(), Some(2), "{}", text(&solution));

    let init = kit(&sandbox).arg("init").output().unwrap();
    assert!(init.status.success(), "{}", text(&init));
    // Without N, check finds the exercise whose sandbox holds the current folder.
    let o = kit_in(&sandbox.join("longrun"), &lab, &["exercise", "check"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.starts_with("PASS  01 Create longrun/ in a repository\n"), "{t}");

    let list = text(&kit_in(d.path(), &lab, &["exercise", "list"]));
    assert!(list.lines().any(|l| l.starts_with(" 1 ") && l.ends_with("passed")), "{list}");
    let json = kit_in(d.path(), &lab, &["exercise", "list", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["exercises"][0]["status"], "passed");

    let lessons = text(&kit_in(d.path(), &lab, &["lesson"]));
    let row = lessons.lines().find(|l| l.starts_with(" 1 ")).unwrap_or_default();
    assert!(row.ends_with(&format!("1/{}", lesson_1_exercises())), "{lessons}");

    let progress = std::fs::read_to_string(lab.join(".kit/progress.json")).unwrap();
    let p: serde_json::Value = serde_json::from_str(&progress).unwrap();
    assert_eq!(p["schema"], "kit.progress/1");
    assert!(p["exercises"]["01-init"]["passed"].is_string(), "{progress}");

    let solution = kit_in(d.path(), &lab, &["exercise", "solution", "1"]);
    assert!(solution.status.success(), "{}", text(&solution));
    assert!(text(&solution).contains("--- solution/longrun/goal.md"));

    let reset = kit_in(d.path(), &lab, &["exercise", "reset", "1"]);
    assert_eq!(reset.status.code(), Some(2), "without a terminal reset needs --yes");
    let reset = kit_in(d.path(), &lab, &["exercise", "reset", "1", "--yes"]);
    assert!(reset.status.success(), "{}", text(&reset));
    assert!(!sandbox.join("longrun").exists());
}

fn lesson_1_exercises() -> usize {
    exercise_dirs()
        .iter()
        .filter(|d| {
            let t = std::fs::read_to_string(d.join("exercise.toml")).unwrap_or_default();
            t.lines().any(|l| l.replace(' ', "") == "lesson=1")
        })
        .count()
}

#[test]
fn check_json_reports_the_failing_step_for_graders() {
    let d = tempfile::tempdir().unwrap();
    let lab = d.path().join("lab");
    assert!(kit_in(d.path(), &lab, &["exercise", "start", "1"]).status.success());
    let o = kit_in(d.path(), &lab, &["exercise", "check", "1", "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["schema"], "kit.check/1");
    assert_eq!(v["passed"], false);
    assert_eq!(v["failure"]["line"], 4);
    assert_eq!(v["failure"]["command"], "ls longrun");
}

#[test]
fn every_exercise_and_lesson_passes_kit_verify() {
    let bins = kit::golden::Binaries { kit: kit_bin(), fake_agent: Some(fake_agent_bin()) };
    let filter = std::env::var("KIT_CASE").ok();
    let opts = kit::verify::Options { filter, ..Default::default() };
    let mut failures = Vec::new();
    let mut ran = 0;
    for job in kit::verify::jobs(&opts) {
        if matches!(job, kit::verify::Job::Catalogue(..)) {
            continue; // tests/it/golden.rs runs the catalogue
        }
        ran += 1;
        match job.run(&bins) {
            Ok(o) => {
                if let Some(f) = o.failure {
                    failures.push(format!(
                        "{}: {}:{}: `{}`\n{}",
                        job.name(),
                        job.origin(),
                        f.line,
                        f.command,
                        f.detail
                    ));
                }
            }
            Err(e) => failures.push(format!("{}: {e}", job.name())),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {ran} failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

fn subdirs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    v.sort();
    v
}

fn exercise_dirs() -> Vec<PathBuf> {
    subdirs(&root().join("exercises"))
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    v.sort();
    v
}

fn nn(dir: &Path) -> Option<u32> {
    let name = dir.file_name()?.to_string_lossy().into_owned();
    let (n, slug) = name.split_once('-')?;
    (n.len() == 2 && !slug.is_empty()).then(|| n.parse().ok())?
}

#[test]
fn every_exercise_folder_has_its_files_and_its_number() {
    let mut problems = Vec::new();
    let lessons: Vec<u32> = subdirs(&root().join("lessons")).iter().filter_map(|d| nn(d)).collect();
    for d in exercise_dirs() {
        let shown = d.strip_prefix(root()).unwrap().display().to_string();
        let Some(n) = nn(&d) else {
            problems.push(format!("{shown}: not named NN-slug"));
            continue;
        };
        for f in ["exercise.toml", "golden.md", "start"] {
            if !d.join(f).exists() {
                problems.push(format!("{shown}: no {f}"));
            }
        }
        for f in names(&d) {
            if !["exercise.toml", "golden.md", "start", "solution"].contains(&f.as_str()) {
                problems.push(format!("{shown}: stray file {f}"));
            }
        }
        let t = std::fs::read_to_string(d.join("exercise.toml")).unwrap_or_default();
        match toml::from_str::<toml::Table>(&t) {
            Ok(tab) => {
                if tab.get("id").and_then(|v| v.as_integer()) != Some(i64::from(n)) {
                    problems.push(format!("{shown}: id is not {n}"));
                }
                let lesson = tab.get("lesson").and_then(|v| v.as_integer()).unwrap_or(0);
                if !lessons.iter().any(|&l| i64::from(l) == lesson) {
                    problems.push(format!("{shown}: lesson {lesson} does not exist in lessons/"));
                }
            }
            Err(e) => problems.push(format!("{shown}/exercise.toml: {e}")),
        }
    }
    for f in names(&root().join("exercises")) {
        if !root().join("exercises").join(&f).is_dir() {
            problems.push(format!("exercises/{f}: stray file"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_lesson_folder_holds_lesson_toml_and_readme_only() {
    let mut problems = Vec::new();
    for f in names(&root().join("lessons")) {
        let d = root().join("lessons").join(&f);
        if !d.is_dir() {
            problems.push(format!("lessons/{f}: stray file"));
            continue;
        }
        if nn(&d).is_none() {
            problems.push(format!("lessons/{f}: not named NN-slug"));
        }
        if names(&d) != ["README.md", "lesson.toml"] {
            problems
                .push(format!("lessons/{f}: holds {:?}, not README.md and lesson.toml", names(&d)));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The embedded course loads: every file parses and numbers match folders.
    let exercises = kit::course::exercise::load_all().unwrap();
    let lessons = kit::course::lesson::load_all().unwrap();
    assert!(!exercises.is_empty() && !lessons.is_empty());
}

/// Everything embedded from the course folders is in git: a file that a `.gitignore` inside an
/// exercise hides (a solution's `longrun/.frozen/`) is in the binary built here but missing
/// from a fresh clone. Skipped where the checkout is not a git repository.
#[test]
fn every_embedded_course_file_is_tracked_by_git() {
    let out = std::process::Command::new("git")
        .args(["ls-files", "--others", "--exclude-standard", "--ignored", "--directory", "--"])
        .args(["lessons", "exercises", "tests/cases", "kit", "fake-agent/scenarios"])
        .current_dir(root())
        .output();
    let Ok(out) = out else { return };
    if !out.status.success() {
        return;
    }
    let untracked = String::from_utf8_lossy(&out.stdout);
    assert!(
        untracked.trim().is_empty(),
        "embedded files that git ignores (add them with git add -f):\n{untracked}"
    );
}
