//! The course: a learner's flow through exercise 1 and guards on the layout of lessons/ and
//! exercises/. Every exercise's and lesson's golden (start, solution, variants, cheats) runs in
//! `tests/cases.rs`, one trial each, through the same code as `kit verify`.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::util::{fake_agent_bin, kit_bin};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// `kit` run by the learner in `dir` with the lab at `lab`: one HOME (and so one course key and
/// one handoff key) outside the lab, `<lab>/../.home`, wherever the command runs.
fn kit_in(dir: &Path, lab: &Path, args: &[&str]) -> Output {
    learner(dir, lab).args(args).output().unwrap()
}

fn learner(dir: &Path, lab: &Path) -> std::process::Command {
    let bins = kit_course::golden::Binaries { kit: kit_bin(), fake_agent: Some(fake_agent_bin()) };
    let mut c = std::process::Command::new(kit_bin());
    c.current_dir(dir)
        .env_clear()
        .envs(kit_course::golden::golden_env(lab.parent().unwrap(), &bins))
        .env("KIT_LAB", lab);
    c
}

/// `sh -c script` in `dir` with the learner's environment.
fn sh_in(dir: &Path, lab: &Path, script: &str) -> Output {
    let bins = kit_course::golden::Binaries { kit: kit_bin(), fake_agent: Some(fake_agent_bin()) };
    std::process::Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .env_clear()
        .envs(kit_course::golden::golden_env(lab.parent().unwrap(), &bins))
        .env("KIT_LAB", lab)
        .output()
        .unwrap()
}

fn progress_json(lab: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(lab.join(".kit/progress.json")).unwrap()).unwrap()
}

fn set_progress(lab: &Path, v: &serde_json::Value) {
    std::fs::write(lab.join(".kit/progress.json"), serde_json::to_string_pretty(v).unwrap())
        .unwrap();
}

fn list_row(lab: &Path, n: u32) -> String {
    let list = text(&kit_in(lab.parent().unwrap(), lab, &["exercise", "list"]));
    list.lines()
        .find(|l| l.starts_with(&format!("{n:>2} ")))
        .unwrap_or_else(|| panic!("no row {n} in {list}"))
        .to_string()
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
    assert!(t.contains("hint 1/3: "), "{t}");
    assert!(
        t.contains("more: kit exercise hint 1 shows hint 2/3 (hint 2/3 is the one for this step"),
        "{t}"
    );
    assert!(!sandbox.join("longrun").exists(), "a check must not write into the lab");

    let solution = kit_in(d.path(), &lab, &["exercise", "solution", "1"]);
    assert_eq!(solution.status.code(), Some(2), "{}", text(&solution));

    let init = learner(&sandbox, &lab).arg("init").output().unwrap();
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
    assert_eq!(p["schema"], "kit.progress/2");
    assert!(p["exercises"]["01-init"]["passed"]["stamp"].is_string(), "{progress}");

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
            let known = ["exercise.toml", "golden.md", "start", "solution", "variants", "cheats"];
            if !known.contains(&f.as_str()) {
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
    let exercises = kit_course::course::exercise::load_all().unwrap();
    let lessons = kit_course::course::lesson::load_all().unwrap();
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

/// Start exercise `n` in a fresh lab: (temp dir, lab, sandbox).
fn started(n: u32) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let lab = d.path().join("lab");
    let o = kit_in(d.path(), &lab, &["exercise", "start", &n.to_string()]);
    assert!(o.status.success(), "{}", text(&o));
    let slug = kit_course::course::exercise::load_all()
        .unwrap()
        .into_iter()
        .find(|e| e.meta.id == n)
        .unwrap()
        .slug;
    let sandbox = lab.join(slug);
    (d, lab, sandbox)
}

fn pass_exercise_1(lab: &Path, sandbox: &Path) {
    assert!(learner(sandbox, lab).arg("init").output().unwrap().status.success());
    let o = kit_in(sandbox, lab, &["exercise", "check", "1"]);
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn a_pass_written_into_progress_by_hand_or_copied_is_ignored_with_a_note() {
    let (d, lab, sandbox) = started(1);
    assert!(kit_in(d.path(), &lab, &["exercise", "start", "2"]).status.success());
    // Typed by hand: a pass that kit did not stamp.
    let mut p = progress_json(&lab);
    p["exercises"]["01-init"]["passed"] = serde_json::json!({
        "time": "2026-10-01T09:10:00Z", "dir": sandbox, "digest": "0".repeat(64), "stamp": "f".repeat(64),
    });
    set_progress(&lab, &p);
    let o = kit_in(d.path(), &lab, &["exercise", "list"]);
    let t = text(&o);
    assert!(t.contains(&format!(
        "note: {}: exercise 1's pass is not stamped by kit (edited by hand or copied), so it is ignored; run `kit exercise check 1`",
        lab.join(".kit/progress.json").display()
    )), "{t}");
    assert!(list_row(&lab, 1).ends_with("started"), "{t}");
    let sol = kit_in(d.path(), &lab, &["exercise", "solution", "1"]);
    assert_eq!(sol.status.code(), Some(2), "{}", text(&sol));

    // A genuine pass of exercise 1, copied to exercise 2's entry, is not exercise 2's.
    pass_exercise_1(&lab, &sandbox);
    let mut p = progress_json(&lab);
    p["exercises"]["02-who-writes-what"]["passed"] = p["exercises"]["01-init"]["passed"].clone();
    p["exercises"]["02-who-writes-what"]["earned"] = p["exercises"]["01-init"]["passed"].clone();
    set_progress(&lab, &p);
    assert!(list_row(&lab, 1).ends_with("passed"));
    assert!(list_row(&lab, 2).ends_with("started"));
    let sol = kit_in(d.path(), &lab, &["exercise", "solution", "2"]);
    assert_eq!(sol.status.code(), Some(2), "{}", text(&sol));
    assert!(text(&sol).contains("kit exercise check 2"), "{}", text(&sol));

    // Another user's key (here: a new key) makes every pass a claim to check again.
    let key = d.path().join(".home/.local/state/kit/course.key");
    let mine = std::fs::read(&key).unwrap();
    std::fs::write(&key, format!("{}\n", "ab".repeat(32))).unwrap();
    assert!(list_row(&lab, 1).ends_with("started"));
    std::fs::write(&key, mine).unwrap();

    // kit.progress/1 is read: its unstamped passes are "started, check again".
    let old = serde_json::json!({"schema": "kit.progress/1", "exercises": {"01-init": {
        "dir": sandbox, "started": "2026-10-01T09:00:00Z", "passed": "2026-10-01T09:10:00Z", "hints_seen": 1}}});
    set_progress(&lab, &old);
    let t = text(&kit_in(d.path(), &lab, &["exercise", "list"]));
    assert!(t.contains("written by an older kit (kit.progress/1), whose passes were not stamped: exercise 1 count as started; run `kit exercise check 1`"), "{t}");
    assert_eq!(t.matches("note:").count(), 1, "{t}");
    assert!(list_row(&lab, 1).ends_with("started"));
    let o = kit_in(d.path(), &lab, &["exercise", "check", "1"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(progress_json(&lab)["schema"], "kit.progress/2");
    assert!(list_row(&lab, 1).ends_with("passed"));
}

#[test]
fn check_refuses_a_sandbox_that_is_another_exercises_or_not_kits() {
    let (d, lab, sandbox1) = started(1);
    assert!(kit_in(d.path(), &lab, &["exercise", "start", "2"]).status.success());
    let mut p = progress_json(&lab);
    p["exercises"]["02-who-writes-what"]["dir"] = serde_json::json!(sandbox1);
    set_progress(&lab, &p);
    let o = kit_in(d.path(), &lab, &["exercise", "check", "2"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(
        t.contains(&format!("{} is exercise 1's sandbox, not exercise 2's", sandbox1.display())),
        "{t}"
    );
    assert!(t.contains("next: kit exercise check 1 checks that one"), "{t}");
    let r = kit_in(d.path(), &lab, &["exercise", "reset", "2", "--yes"]);
    assert_eq!(r.status.code(), Some(2), "{}", text(&r));
    assert!(text(&r).contains("reset would remove it"), "{}", text(&r));
    assert!(sandbox1.join("NOTES.md").is_file(), "exercise 1's work is still there");
    // The marker is where neither ls nor git status sees it.
    assert!(sandbox1.join(".git/kit-exercise").is_file());
    let st = sh_in(&sandbox1, &lab, "ls -a; git status --porcelain");
    assert!(!text(&st).contains("kit-exercise"), "{}", text(&st));

    // A plain folder, or a copy of a sandbox elsewhere, is not exercise 1's sandbox.
    let copy = d.path().join("copy");
    std::fs::create_dir_all(&copy).unwrap();
    let cp = sh_in(d.path(), &lab, &format!("cp -a {}/. {}", sandbox1.display(), copy.display()));
    assert!(cp.status.success());
    let mut p = progress_json(&lab);
    p["exercises"]["01-init"]["dir"] = serde_json::json!(copy);
    set_progress(&lab, &p);
    let t = text(&kit_in(d.path(), &lab, &["exercise", "check", "1"]));
    assert!(t.contains("was not written there by kit exercise start 1"), "{t}");
    assert!(t.contains("next: kit exercise reset 1 --yes"), "{t}");
    std::fs::remove_file(copy.join(".git/kit-exercise")).unwrap();
    let t = text(&kit_in(d.path(), &lab, &["exercise", "check", "1"]));
    assert!(t.contains("has no marker from kit exercise start 1"), "{t}");
}

#[test]
fn the_marker_of_a_sandbox_without_git_is_in_its_home() {
    let (d, lab, sandbox) = started(9);
    assert!(!sandbox.join(".git").exists());
    assert!(sandbox.join(".home/.kit-exercise").is_file());
    let o = kit_in(&sandbox, &lab, &["exercise", "check"]);
    assert_eq!(o.status.code(), Some(1), "found by its marker, and fails: {}", text(&o));
    assert!(text(&o).contains("FAIL  09"), "{}", text(&o));
    drop(d);
}

#[test]
fn reset_after_a_pass_is_started_again_and_keeps_the_solution_unlocked() {
    let (d, lab, sandbox) = started(1);
    pass_exercise_1(&lab, &sandbox);
    assert!(list_row(&lab, 1).ends_with("passed"));
    let o = kit_in(d.path(), &lab, &["exercise", "reset", "1", "--yes"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(!sandbox.join("longrun").exists());
    assert!(
        text(&o).contains("reset: exercise 1 is laid out afresh, and your pass of"),
        "the pass kept on record is said: {}",
        text(&o)
    );
    assert!(list_row(&lab, 1).ends_with("started, passed before"), "{}", list_row(&lab, 1));
    let lessons = text(&kit_in(d.path(), &lab, &["lesson"]));
    assert!(lessons.contains("next: kit exercise check 1 (started)"), "{lessons}");
    let sol = kit_in(d.path(), &lab, &["exercise", "solution", "1"]);
    assert!(sol.status.success(), "earned once, the solution stays open: {}", text(&sol));
    assert!(!text(&sol).contains("seen before passing"), "{}", text(&sol));
}

#[test]
fn a_solution_shown_before_passing_is_recorded_in_list_and_check() {
    let (d, lab, sandbox) = started(1);
    let sol = kit_in(d.path(), &lab, &["exercise", "solution", "1", "--show-anyway"]);
    assert!(sol.status.success(), "{}", text(&sol));
    assert!(text(&sol).contains("warning: exercise 1 has not passed yet"), "{}", text(&sol));
    assert!(list_row(&lab, 1).ends_with("started (solution seen)"), "{}", list_row(&lab, 1));
    let o = kit_in(d.path(), &lab, &["exercise", "check", "1", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["solution_seen"], true);
    pass_exercise_1(&lab, &sandbox);
    assert!(list_row(&lab, 1).ends_with("passed (solution seen)"), "{}", list_row(&lab, 1));
    let json = kit_in(d.path(), &lab, &["exercise", "list", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["exercises"][0]["solution_seen"], true);
    assert_eq!(v["exercises"][1]["solution_seen"], false);
}

#[test]
fn the_hint_ladder_climbs_one_rung_at_a_time_after_a_check() {
    let (d, lab, _sandbox) = started(1);
    // The failing step (`ls longrun`) fits hint 2; the learner has seen none: the check shows
    // hint 1 and names the command that climbs.
    let t = text(&kit_in(d.path(), &lab, &["exercise", "check", "1"]));
    assert!(t.contains("hint 1/3: A long run keeps its state"), "{t}");
    assert!(
        t.contains("more: kit exercise hint 1 shows hint 2/3 (hint 2/3 is the one for this step"),
        "{t}"
    );
    let h = text(&kit_in(d.path(), &lab, &["exercise", "hint", "1"]));
    assert!(h.starts_with("hint 2/3: "), "{h}");
    // Seen up to 2: the check shows the fitting rung itself.
    let t = text(&kit_in(d.path(), &lab, &["exercise", "check", "1"]));
    assert!(t.contains("hint 2/3: `kit init` creates longrun/"), "{t}");
    assert!(t.contains("more: kit exercise hint 1 shows hint 3/3"), "{t}");
    let h = text(&kit_in(d.path(), &lab, &["exercise", "hint", "1"]));
    assert!(h.starts_with("hint 3/3: "), "{h}");
    let h = text(&kit_in(d.path(), &lab, &["exercise", "hint", "1", "--level", "1"]));
    assert!(h.starts_with("hint 1/3: "), "{h}");
    assert_eq!(progress_json(&lab)["exercises"]["01-init"]["hints_seen"], 3);
}

#[test]
fn a_handoff_the_learner_verifies_and_saves_in_the_sandbox_is_the_one_the_check_verifies() {
    // Exercise 12: the setup stamped a handoff with the sandbox's key; the learner's own shell
    // (HOME outside the lab) verifies it with no XDG_STATE_HOME by hand.
    let (d, lab, sandbox) = started(12);
    let v = sh_in(&sandbox, &lab, "kit handoff verify");
    let t = text(&v);
    assert!(t.contains("ok   stamp id is kit's keyed id"), "{t}");
    assert!(t.contains("FAIL") && t.contains("lib.py"), "{t}");
    let fix = sh_in(&sandbox, &lab, "git checkout -- lib.py && kit handoff verify");
    assert!(fix.status.success(), "{}", text(&fix));
    let o = kit_in(&sandbox, &lab, &["exercise", "check", "12"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        !d.path().join(".home/.local/state/kit/handoff.key").exists(),
        "the lab's key is the lab's"
    );

    // Exercise 11: the learner writes, saves and verifies in their own shell; the check agrees.
    let o = kit_in(d.path(), &lab, &["exercise", "start", "11"]);
    assert!(o.status.success(), "{}", text(&o));
    let s11 = lab.join("11-save-a-handoff");
    let save = sh_in(
        &s11,
        &lab,
        "printf '# Handoff\\n\\n## Done\\n- sub added to lib.py.\\n\\n## Next action\\nWrite a test for sub.\\n' > longrun/handoff.md && kit handoff save && kit handoff verify",
    );
    assert!(save.status.success(), "{}", text(&save));
    let o = kit_in(&s11, &lab, &["exercise", "check", "11"]);
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn exercise_13_judges_the_answer_in_a_lab_laid_out_anew_from_the_markers_seed() {
    let (d, lab, sandbox) = started(13);
    let marker = std::fs::read_to_string(sandbox.join(".git/kit-exercise")).unwrap();
    assert!(marker.contains("seed = \""), "{marker}");
    // The right answer, found with verify; then the lab turned upside down: every copy edited,
    // a save committed (HEAD moved), the journal cut. The check judges the setup's copies.
    let sort = sh_in(
        &sandbox,
        &lab,
        include_str!("../../exercises/13-forged-handoff/solution/handoffs/sort.sh"),
    );
    assert!(sort.status.success(), "{}", text(&sort));
    let mess = sh_in(
        &sandbox,
        &lab,
        "for x in a b c d e f; do echo '- tampered' >> handoffs/$x.md; done && cp handoffs/a.md longrun/handoff.md && kit handoff save && git commit -qam moved && sed -i '$d' longrun/journal.jsonl",
    );
    assert!(mess.status.success(), "{}", text(&mess));
    let o = kit_in(&sandbox, &lab, &["exercise", "check", "13"]);
    assert!(o.status.success(), "{}", text(&o));

    // Only the files `edit` names come from the lab: handoffs/answer.txt, not the copies; a link
    // out is refused; an answer the lab does not have is none in the new lab either.
    let ex13 = kit_course::course::exercise::load_all()
        .unwrap()
        .into_iter()
        .find(|e| e.meta.id == 13)
        .unwrap();
    let fence = kit_course::course::check::Fence::of(&ex13.case("ex13").unwrap(), &ex13.meta.edit);
    let to = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(to.path().join("handoffs")).unwrap();
    std::fs::write(to.path().join("handoffs/a.md"), "the setup's\n").unwrap();
    kit_course::course::check::take_edited(&ex13, &sandbox, to.path(), &fence).unwrap();
    assert_eq!(
        std::fs::read(to.path().join("handoffs/answer.txt")).unwrap(),
        std::fs::read(sandbox.join("handoffs/answer.txt")).unwrap()
    );
    assert_eq!(std::fs::read_to_string(to.path().join("handoffs/a.md")).unwrap(), "the setup's\n");
    let answer = sandbox.join("handoffs/answer.txt");
    std::fs::remove_file(&answer).unwrap();
    std::os::unix::fs::symlink("/etc/hostname", &answer).unwrap();
    let e = kit_course::course::check::take_edited(&ex13, &sandbox, to.path(), &fence).unwrap_err();
    assert!(e.to_string().contains("outside the exercise's folder"), "{e}");
    std::fs::remove_file(&answer).unwrap();
    kit_course::course::check::take_edited(&ex13, &sandbox, to.path(), &fence).unwrap();
    assert!(!to.path().join("handoffs/answer.txt").exists());

    // The seed is under the marker's stamp: one edited by hand (to a lab whose answer is known)
    // makes the marker not kit's, and the check refuses the folder.
    let edited = marker
        .lines()
        .map(|l| if l.starts_with("seed = ") { "seed = \"kit-verify\"" } else { l })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(sandbox.join(".git/kit-exercise"), edited).unwrap();
    let o = kit_in(&sandbox, &lab, &["exercise", "check", "13"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("was not written there by kit exercise start 13"), "{}", text(&o));
    drop(d);
}

#[test]
fn check_copies_the_sandbox_without_nested_labs_or_other_sandboxes() {
    let (d, lab, sandbox) = started(1);
    // Another exercise laid out inside this sandbox, and a lab inside it: neither is exercise
    // 1's work, and the golden's `git status --short` would list them.
    let o = kit_in(
        d.path(),
        &lab,
        &["exercise", "start", "2", "--into", &sandbox.join("other").to_string_lossy()],
    );
    assert!(o.status.success(), "{}", text(&o));
    std::fs::create_dir_all(sandbox.join("inner/.kit")).unwrap();
    std::fs::write(sandbox.join("inner/.kit/progress.json"), "{}").unwrap();
    std::fs::write(sandbox.join(".home/big.bin"), vec![0u8; 1 << 20]).unwrap();
    pass_exercise_1(&lab, &sandbox);

    // What the copy holds, for a transcripts sandbox: the fixtures from the binary (not the
    // learner's edited ones), the sandbox's handoff key, nothing else of .home.
    let (_d9, _lab9, s9) = started(9);
    let projects = s9.join(".home/.claude/projects");
    let one = walk_files(&projects)[0].clone();
    let pristine = std::fs::read(&one).unwrap();
    std::fs::write(&one, "edited\n").unwrap();
    std::fs::create_dir_all(s9.join(".home/.local/state/kit")).unwrap();
    std::fs::write(s9.join(".home/.local/state/kit/handoff.key"), "k\n").unwrap();
    std::fs::write(s9.join(".home/notes.txt"), "x").unwrap();
    let to = tempfile::tempdir().unwrap();
    let fence = kit_course::course::check::Fence::new([], &[]);
    kit_course::course::check::copy_sandbox(&s9, "transcripts", to.path(), &fence).unwrap();
    let rel = one.strip_prefix(&s9).unwrap();
    assert_eq!(std::fs::read(to.path().join(rel)).unwrap(), pristine);
    assert!(to.path().join(".home/.local/state/kit/handoff.key").is_file());
    assert!(!to.path().join(".home/notes.txt").exists());
    assert!(!to.path().join(".home/.kit-exercise").exists());
}

fn walk_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk_files(&p));
        } else {
            out.push(p);
        }
    }
    out.sort();
    out
}

#[test]
fn verify_start_fails_only_at_the_step_the_learners_work_changes() {
    let bins = kit_course::golden::Binaries { kit: kit_bin(), fake_agent: Some(fake_agent_bin()) };
    let all = kit_course::course::exercise::load_all().unwrap();
    let one = all.iter().find(|e| e.meta.id == 1).unwrap();
    assert_eq!(one.meta.start_fails_at.as_deref(), Some("ls longrun"));
    let ok = kit_course::course::check::run_start_fails(one, &bins).unwrap();
    assert!(ok.failure.is_none(), "{:?}", ok.failure);
    // A golden broken before the learner's step (a typo) fails on the start state too, and must
    // not count as "start fails".
    let mut broken = one.clone();
    broken.golden =
        Box::leak(format!("```console\n$ catt NOTES.md\n```\n\n{}", one.golden).into_boxed_str());
    let o = kit_course::course::check::run_start_fails(&broken, &bins).unwrap();
    let f = o.failure.expect("a start failing at the wrong step is a failure");
    assert!(
        f.detail.contains(
            "not at the step exercises/01-init/exercise.toml's start_fails_at names (`ls longrun`)"
        ),
        "{}",
        f.detail
    );
    let mut unnamed = one.clone();
    unnamed.meta.start_fails_at = None;
    let o = kit_course::course::check::run_start_fails(&unnamed, &bins).unwrap();
    assert!(o.failure.unwrap().detail.contains("has no start_fails_at"));
}

#[test]
fn a_progress_file_copied_from_another_lab_shows_none_of_its_passes() {
    let (d, lab, sandbox) = started(1);
    pass_exercise_1(&lab, &sandbox);
    assert!(list_row(&lab, 1).ends_with("passed"));
    let other = d.path().join("other-lab");
    std::fs::create_dir_all(other.join(".kit")).unwrap();
    std::fs::copy(lab.join(".kit/progress.json"), other.join(".kit/progress.json")).unwrap();
    let t = text(&kit_in(d.path(), &other, &["exercise", "list"]));
    assert!(t.contains("0/20 passed"), "{t}");
    assert!(t.contains("the passes of exercise 1 were recorded in another lab"), "{t}");
    assert!(list_row(&other, 1).ends_with("started"));
    assert!(list_row(&lab, 1).ends_with("passed"), "the original lab keeps its pass");
}

#[test]
fn from_another_folder_kit_names_the_lab_last_used_and_a_lab_found_above() {
    let (d, lab, _sandbox) = started(1);
    let elsewhere = d.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    // Without KIT_LAB, in a folder with no lab: the lab last used is named, its progress shown
    // (not an empty new lab's), and the next step goes there.
    for args in [&["lesson"][..], &["exercise", "list"][..]] {
        let o = learner(&elsewhere, &lab).env_remove("KIT_LAB").args(args).output().unwrap();
        let t = text(&o);
        let shown = lab.canonicalize().unwrap();
        let want = format!(
            "lab: {0} (the last lab you used; there is none in this folder: cd {0} to go on)",
            shown.display()
        );
        assert!(t.contains(&want), "{args:?}: {t}");
        if args == ["lesson"] {
            let next = format!("next: cd {}, then kit exercise check 1 (started)", shown.display());
            assert!(t.contains(&next), "{t}");
        } else {
            assert!(t.lines().any(|l| l.starts_with(" 1 ") && l.ends_with("started")), "{t}");
        }
    }
    // An exercise command there says so too, before its own answer.
    let o = learner(&elsewhere, &lab)
        .env_remove("KIT_LAB")
        .args(["exercise", "check", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.starts_with("note: no lab in this folder; your lab is "), "{err}");
    assert!(!elsewhere.join("kit-lab").exists(), "{err}");
    // A command that lays out makes a lab here, and its note says so (QA, issue 21: it said
    // "no lab in this folder; your lab is …" while it made ./kit-lab).
    let o = learner(&elsewhere, &lab)
        .env_remove("KIT_LAB")
        .args(["exercise", "start", "2"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let made = elsewhere.join("kit-lab");
    assert!(made.join("02-who-writes-what").is_dir(), "{err}");
    let want =
        format!("note: no lab in this folder, so this command makes one: {}; ", made.display());
    assert!(err.starts_with(&want), "{err}");
    assert!(
        err.contains(&format!(
            "the lab you used before is {}",
            lab.canonicalize().unwrap().display()
        )),
        "{err}"
    );
    assert!(!err.contains("your lab is"), "{err}");
    // Below the lab (not in a sandbox): the lab found above is named.
    let below = lab.join("notes");
    std::fs::create_dir_all(&below).unwrap();
    let o = learner(&below, &lab).env_remove("KIT_LAB").args(["lesson"]).output().unwrap();
    let t = text(&o);
    assert!(t.contains(&format!("lab: {} (found above this folder", lab.display())), "{t}");
    // In the lab itself: no such line.
    let o = learner(&lab, &lab).env_remove("KIT_LAB").args(["lesson"]).output().unwrap();
    assert!(!text(&o).contains("lab:") && !text(&o).contains("no lab"), "{}", text(&o));
}

#[test]
fn lesson_lab_lays_out_the_lessons_sandbox_and_its_exports_make_kit_measure_see_it() {
    let d = tempfile::tempdir().unwrap();
    let lab = d.path().join("lab");
    let o = kit_in(d.path(), &lab, &["lesson", "4", "--lab"]);
    assert!(o.status.success(), "{}", text(&o));
    let t = text(&o);
    let folder = lab.join("lesson-04-cache-idle");
    assert!(t.contains(&format!("  cd {}", folder.display())), "{t}");
    let export = t.lines().find(|l| l.trim_start().starts_with("export ")).unwrap();
    // The learner's shell: the printed commands, then the lesson's first `kit measure`.
    let script =
        format!("cd {} && {export} && kit measure | tail -n 3 | head -n 1", folder.display());
    let out = sh_in(d.path(), &lab, &format!("unset CLAUDE_CONFIG_DIR CODEX_HOME; {script}"));
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("TOTAL    3 sessions"),
        "{}",
        text(&out)
    );
    let again = kit_in(d.path(), &lab, &["lesson", "4", "--lab"]);
    assert_eq!(again.status.code(), Some(2), "{}", text(&again));
    assert!(text(&again).contains("already laid out"), "{}", text(&again));

    // A rehearsal lesson: the sample project, committed, its .home ignored by git.
    let o = kit_in(d.path(), &lab, &["lesson", "6", "--lab"]);
    assert!(o.status.success(), "{}", text(&o));
    let six = lab.join("lesson-06-headless-loop");
    let st = std::process::Command::new("git")
        .args(["status", "--porcelain"])
        .current_dir(&six)
        .output()
        .unwrap();
    assert!(st.stdout.is_empty(), "{}", String::from_utf8_lossy(&st.stdout));
    assert!(six.join("confload").is_dir());

    // Outside a checkout, --path names no folder of the machine kit was built on.
    let o = kit_in(d.path(), &lab, &["lesson", "2", "--path"]);
    let t = text(&o);
    assert!(t.contains("is embedded in kit") && t.contains("kit lesson 2 --lab"), "{t}");
    assert!(!t.contains(env!("CARGO_MANIFEST_DIR")), "{t}");
    let o = kit_in(&root(), &lab, &["lesson", "2", "--path"]);
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        root().join("lessons/02-goal-contract/README.md").display().to_string()
    );
}

#[test]
fn a_fake_loop_in_an_exercise_sandbox_stays_out_of_a_lesson_lab_and_of_the_learners_own_totals() {
    // Exercise 14's loop, run as its task says (its exports first): the fake agent writes its
    // transcript in the sandbox's .home, and the loop its calls to the ledger in the learner's
    // HOME, which the exports do not move.
    let d = tempfile::tempdir().unwrap();
    let lab = d.path().join("lab");
    let o = kit_in(d.path(), &lab, &["exercise", "start", "14"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    let line = t.lines().find(|l| l.starts_with("its sessions are in ")).unwrap();
    let export = &line[line.find("export ").unwrap()..line.find(" (unset").unwrap()];
    let goal = root().join("exercises/14-loop-to-done/solution/longrun/goal.md");
    let sandbox = lab.join("14-loop-to-done");
    let out = sh_in(
        &sandbox,
        &lab,
        &format!(
            "unset CLAUDE_CONFIG_DIR CODEX_HOME; {export} && cp {} longrun/goal.md && kit loop --agent fake:finish",
            goal.display()
        ),
    );
    assert!(out.status.success(), "{}", text(&out));
    let ledger = d.path().join(".home/.local/share/kit/ledger");
    let lines: usize = std::fs::read_dir(&ledger)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".jsonl"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap().lines().count())
        .sum();
    assert!(lines > 0, "the loop wrote its calls to the learner's ledger");
    // Its transcript deleted (the sandbox removed, say): exercise 14's measurement still counts
    // them, from the ledger.
    std::fs::remove_dir_all(sandbox.join(".home/.claude/projects")).unwrap();
    let own = sh_in(
        &sandbox,
        &lab,
        &format!("unset CLAUDE_CONFIG_DIR CODEX_HOME; {export} && kit measure"),
    );
    assert!(text(&own).contains("TOTAL    1 sessions"), "{}", text(&own));

    // Lesson 4's lab shows its three sessions, nothing of the loop's.
    let o = kit_in(d.path(), &lab, &["lesson", "4", "--lab"]);
    let t = text(&o);
    let four = lab.join("lesson-04-cache-idle");
    let export = t.lines().find(|l| l.trim_start().starts_with("export ")).unwrap();
    let out =
        sh_in(&four, &lab, &format!("unset CLAUDE_CONFIG_DIR CODEX_HOME; {export} && kit measure"));
    let t = text(&out);
    assert!(t.contains("TOTAL    3 sessions") && !t.contains("ledger:"), "{t}");
    // Nor do the learner's own roots.
    let out = sh_in(d.path(), &lab, "unset CLAUDE_CONFIG_DIR CODEX_HOME; kit measure");
    assert!(text(&out).starts_with("no sessions found"), "{}", text(&out));
}

#[test]
fn a_solution_with_steps_shows_them_after_its_files() {
    // Exercise 20's solution is files and commands (exercise.toml's solution_steps): a freeze and
    // a commit that files alone cannot hold.
    let (d, lab, _sandbox) = started(20);
    let o = kit_in(d.path(), &lab, &["exercise", "solution", "20", "--show-anyway"]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let steps = out.find("--- then, in the exercise's folder:").unwrap_or_else(|| panic!("{out}"));
    assert!(out.find("--- solution/longrun/goal.md").is_some_and(|f| f < steps), "{out}");
    assert!(out[steps..].contains("\n$ kit freeze tests tools\n"), "{out}");
    assert!(!out.contains("--- solution/longrun/frozen.toml"), "kit freeze writes it: {out}");
}

#[test]
fn a_solution_shown_anyway_warns_and_names_an_empty_file() {
    let (d, lab, _sandbox) = started(4);
    let o = kit_in(d.path(), &lab, &["exercise", "solution", "4", "--show-anyway"]);
    assert!(o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.starts_with("warning: exercise 4 has not passed yet") && !err.contains("error"),
        "{err}"
    );
    let out = String::from_utf8_lossy(&o.stdout);
    // tests/__init__.py is empty: its stored copy is the digest of no bytes.
    let empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    let at = out.find(empty).unwrap_or_else(|| panic!("{out}"));
    assert!(out[at..].lines().nth(1) == Some("(empty file)"), "{out}");
}

#[test]
fn a_lesson_is_called_done_only_when_every_exercise_of_it_passed() {
    // QA, issue 21: the last exercise of a lesson passed while an earlier one of it was never
    // passed printed `lesson N done; next: kit lesson N+1`.
    let (d, lab, ex1) = started(1);
    let o = kit_in(d.path(), &lab, &["exercise", "start", "2"]);
    assert!(o.status.success(), "{}", text(&o));
    let two =
        kit_course::course::exercise::load_all().unwrap().into_iter().find(|e| e.meta.id == 2);
    let two = two.unwrap();
    assert_eq!(two.meta.lesson, 1);
    let sandbox2 = lab.join(&two.slug);
    for (rel, bytes) in &two.solution {
        let p = sandbox2.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, bytes).unwrap();
    }
    let o = kit_in(&sandbox2, &lab, &["exercise", "check", "2"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(!t.contains("lesson 1 done"), "{t}");
    assert!(
        t.contains(
            "next: kit exercise task 1 (started, not passed yet), then kit exercise check 1"
        ),
        "{t}"
    );
    let o = kit_in(&ex1, &lab, &["init"]);
    assert!(o.status.success(), "{}", text(&o));
    let o = kit_in(&ex1, &lab, &["exercise", "check", "1"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    if lesson_1_exercises() == 2 {
        assert!(t.contains("lesson 1 done; next: kit lesson 2"), "{t}");
    }
}

#[test]
fn checking_an_earlier_exercise_once_all_passed_says_the_course_is_done() {
    let (d, lab, sandbox) = started(1);
    pass_exercise_1(&lab, &sandbox);
    // Every other exercise passed too (stamped under this learner's course key, as kit would).
    let key_file = d.path().join(".home/.local/state/kit/course.key");
    let key = kit_core::keys::load(&key_file).unwrap().unwrap();
    let mut p = kit_course::course::lab::Progress::load_with(&lab, Some(&key)).unwrap();
    for ex in kit_course::course::exercise::load_all().unwrap().into_iter().skip(1) {
        let dir = lab.join(&ex.slug);
        let pass =
            kit_course::course::lab::Pass::new(&key, ex.meta.id, &ex.slug, &lab, &dir, "d".into());
        let e = p.entry(&ex.slug);
        e.dir = Some(dir);
        e.started = Some(pass.time.clone());
        e.passed = Some(pass);
    }
    p.save(&lab).unwrap();
    assert!(text(&kit_in(d.path(), &lab, &["exercise", "list"])).contains("20/20 passed"));
    let o = kit_in(&sandbox, &lab, &["exercise", "check"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("every exercise has passed: the course is done"), "{t}");
    assert!(!t.contains("that was the last exercise"), "{t}");
}

#[test]
fn an_exercise_with_sessions_prints_the_exports_that_make_kit_measure_read_them() {
    let d = tempfile::tempdir().unwrap();
    let lab = d.path().join("lab");
    let o = kit_in(d.path(), &lab, &["exercise", "start", "18"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    let line =
        t.lines().find(|l| l.starts_with("its sessions are in ")).unwrap_or_else(|| panic!("{t}"));
    let export = &line[line.find("export ").unwrap()..line.find(" (unset").unwrap()];
    let out = sh_in(
        d.path(),
        &lab,
        &format!(
            "unset CLAUDE_CONFIG_DIR CODEX_HOME; {export} && kit measure | tail -n 3 | head -n 1"
        ),
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("TOTAL    3 sessions"),
        "{}",
        text(&out)
    );
    // An exercise without sessions says nothing of the kind.
    let o = kit_in(d.path(), &lab, &["exercise", "start", "1"]);
    assert!(!text(&o).contains("its sessions are in"), "{}", text(&o));
    // A git sandbox whose task runs `kit loop` (exercise 4) says it: the fake agents write their
    // transcripts under CLAUDE_CONFIG_DIR, which must be the lab's, not the learner's own.
    let o = kit_in(d.path(), &lab, &["exercise", "start", "4"]);
    assert!(text(&o).contains("its sessions are in"), "{}", text(&o));
}

#[test]
fn task_shows_the_task_again_and_start_on_a_laid_out_exercise_points_to_it() {
    let (d, lab, sandbox) = started(1);
    let again = kit_in(d.path(), &lab, &["exercise", "start", "1"]);
    assert_eq!(again.status.code(), Some(2), "{}", text(&again));
    assert!(text(&again).contains("kit exercise task 1 shows its task again"), "{}", text(&again));
    // Inside the sandbox, without N: the sandbox's exercise, with where it is.
    let o = kit_in(&sandbox, &lab, &["exercise", "task"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.starts_with("exercise 01: Create longrun/ in a repository"), "{t}");
    assert!(t.contains(&format!("sandbox: {}\n", sandbox.display())), "{t}");
    assert!(t.contains("check it: kit exercise check 1"), "{t}");
    // Not laid out yet: where `start` will put it.
    let t = text(&kit_in(d.path(), &lab, &["exercise", "task", "2"]));
    assert!(
        t.contains(&format!(
            "sandbox: not laid out yet (kit exercise start 2 lays it out in {})",
            lab.join("02-who-writes-what").display()
        )),
        "{t}"
    );
    // Outside any sandbox and without N: which one?
    let o = kit_in(d.path(), &lab, &["exercise", "task"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("kit exercise task N"), "{}", text(&o));
}

#[test]
fn next_starts_the_first_exercise_not_passed_or_shows_it_when_laid_out() {
    let d = tempfile::tempdir().unwrap();
    let lab = d.path().join("lab");
    let o = kit_in(d.path(), &lab, &["exercise", "next"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).starts_with("exercise 01: "), "{}", text(&o));
    let sandbox = lab.join("01-init");
    assert!(sandbox.join("NOTES.md").is_file());
    let o = kit_in(d.path(), &lab, &["exercise", "next"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).starts_with("exercise 1 is the first not passed yet; it is laid out already:\n"),
        "{}",
        text(&o)
    );
    pass_exercise_1(&lab, &sandbox);
    let t = text(&kit_in(d.path(), &lab, &["exercise", "next"]));
    assert!(t.starts_with("exercise 02: "), "{t}");
    assert!(lab.join("02-who-writes-what").is_dir(), "{t}");
}

#[test]
fn solution_without_n_is_the_exercise_of_the_sandbox_it_runs_in() {
    let (d, lab, sandbox) = started(1);
    let o = kit_in(&sandbox, &lab, &["exercise", "solution"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("exercise 1 has not passed yet"), "{}", text(&o));
    pass_exercise_1(&lab, &sandbox);
    let o = kit_in(&sandbox.join("longrun"), &lab, &["exercise", "solution"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("--- solution/longrun/goal.md"), "{}", text(&o));
    let o = kit_in(d.path(), &lab, &["exercise", "solution"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("kit exercise solution N"), "{}", text(&o));
}

#[test]
fn list_shows_a_pass_whose_sandbox_changed_since_and_one_a_later_check_failed() {
    let (d, lab, sandbox) = started(1);
    pass_exercise_1(&lab, &sandbox);
    assert!(list_row(&lab, 1).ends_with("  passed"), "{}", list_row(&lab, 1));
    // An edit of the exercise's files after the pass: not checked yet, shown as changed.
    std::fs::write(sandbox.join("longrun/goal.md"), "# Goal: something else\n").unwrap();
    assert!(list_row(&lab, 1).ends_with("  passed, changed since"), "{}", list_row(&lab, 1));
    let v: serde_json::Value =
        serde_json::from_slice(&kit_in(d.path(), &lab, &["exercise", "list", "--json"]).stdout)
            .unwrap();
    assert_eq!(v["exercises"][0]["changed_since_pass"], true);
    assert_eq!(v["exercises"][1]["changed_since_pass"], false);
    // A check that fails now clears the pass; the solution stays unlocked.
    std::fs::remove_dir_all(sandbox.join("longrun")).unwrap();
    let o = kit_in(&sandbox, &lab, &["exercise", "check"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(list_row(&lab, 1).ends_with("  failed since passing"), "{}", list_row(&lab, 1));
    assert!(text(&kit_in(d.path(), &lab, &["exercise", "list"])).contains("0/20 passed"));
    let lessons = text(&kit_in(d.path(), &lab, &["lesson"]));
    assert!(lessons.contains("next: kit exercise check 1 (failed since passing)"), "{lessons}");
    assert!(kit_in(d.path(), &lab, &["exercise", "solution", "1"]).status.success());
    // Passing again clears it.
    pass_exercise_1(&lab, &sandbox);
    assert!(list_row(&lab, 1).ends_with("  passed"), "{}", list_row(&lab, 1));
    assert!(progress_json(&lab)["exercises"]["01-init"].get("failed_since_pass").is_none());
}

/// Wait (polling, up to `secs`) until `cond` holds.
fn wait_until(secs: u64, what: &str, cond: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while !cond() {
        assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn watch_checks_at_once_and_again_after_a_save_with_no_progress_line_when_piped() {
    let (d, lab, sandbox) = started(1);
    let log = d.path().join("watch.log");
    let mut child = learner(&sandbox, &lab)
        .args(["exercise", "watch", "--max-checks", "2"])
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let read = || std::fs::read_to_string(&log).unwrap_or_default();
    wait_until(120, "the first check", || read().contains("saving a file checks again"));
    assert!(read().starts_with("FAIL  01 Create longrun/ in a repository\n"), "{}", read());
    // The save: kit init writes longrun/ (a runtime file of kit's alone would not count).
    assert!(learner(&sandbox, &lab).arg("init").output().unwrap().status.success());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("watch did not check again after the save:\n{}", read());
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let out = read();
    assert!(status.success(), "{out}");
    let pass =
        out.find("PASS  01 Create longrun/ in a repository").unwrap_or_else(|| panic!("{out}"));
    assert!(pass > out.find("FAIL").unwrap(), "{out}");
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(!out.contains("step 1/") && !err.contains("step 1/"), "{out}{err}");
    assert!(progress_json(&lab)["exercises"]["01-init"]["passed"]["stamp"].is_string());
}

#[test]
fn a_failure_at_a_step_the_task_does_not_reach_names_the_change_not_the_goal() {
    let (_d, lab, sandbox) = started(15);
    let test = sandbox.join("tests/test_durations.py");
    let mut text_of = std::fs::read_to_string(&test).unwrap();
    text_of.push_str("# made easier\n");
    std::fs::write(&test, text_of).unwrap();
    let o = kit_in(&sandbox, &lab, &["exercise", "check"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("not the task's step: golden.md:"), "{t}");
    assert!(t.contains("(the task edits longrun/frozen.toml)"), "{t}");
    assert!(t.contains("changed since the start: tests/test_durations.py (not the task's)"), "{t}");
    assert!(t.contains("undo it: git checkout "), "{t}");
    assert!(!t.contains("hint 1/"), "the goal's hints are not about this: {t}");
    let o = kit_in(&sandbox, &lab, &["exercise", "check", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["cause"]["kind"], "outside-the-task");
    assert!(v["hint"].is_null(), "{v}");
}

#[test]
fn a_handoff_stamped_in_another_copy_of_exercise_11_does_not_pass_here() {
    // Two learners (or one learner's two labs) start exercise 11: each lab's start commit is its
    // own (the lab's seed is in its message), so the handoff, journal and key saved in one lab,
    // copied into the other, name a commit the other lab never had.
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let (lab_a, lab_b) = (a.path().join("lab"), b.path().join("lab"));
    for (d, lab) in [(a.path(), &lab_a), (b.path(), &lab_b)] {
        assert!(kit_in(d, lab, &["exercise", "start", "11"]).status.success());
    }
    let (ex_a, ex_b) = (lab_a.join("11-save-a-handoff"), lab_b.join("11-save-a-handoff"));
    let head = |ex: &Path| {
        let o = sh_in(ex, ex.parent().unwrap(), "git rev-parse HEAD");
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    assert_ne!(head(&ex_a), head(&ex_b), "each lab's start commit is its own");
    let work =
        "printf '# Handoff\\n\\n## Done\\n- sub in lib.py.\\n\\n## Next action\\nTest sub.\\n' \
                > longrun/handoff.md && kit handoff save > /dev/null";
    assert!(sh_in(&ex_a, &lab_a, work).status.success());
    let pass = kit_in(&ex_a, &lab_a, &["exercise", "check"]);
    assert!(pass.status.success(), "honest work passes: {}", text(&pass));
    let copy = format!(
        "rm -rf .home && cp -r {a}/.home . && cp {a}/longrun/handoff.md {a}/longrun/journal.jsonl longrun/",
        a = ex_a.display()
    );
    assert!(sh_in(&ex_b, &lab_b, &copy).status.success());
    let o = kit_in(&ex_b, &lab_b, &["exercise", "check"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("kit handoff verify"), "it fails at the verify step: {t}");
}
