//! Why an exercise's check failed, in terms the learner can act on, so that the hint names the
//! learner's actual problem. The hint ladder of `exercise.toml` is about the work the task asks
//! for; it is shown only when the failing step is that work's ([`Cause::Work`], or
//! [`Cause::Stopped`], which may be). The rest is told from data the exercise already has, never
//! a list kept by hand here:
//!
//! - a program the step runs was not found (exit 127, `sh: 1: NAME: not found`): the machine;
//! - the step did not finish (the runner's "killed by a signal or the timeout"): a hang, or a
//!   busy machine;
//! - after the work (a step before it is told as below), the step pins files by sha256 (`HASH
//!   PATH` lines, as `sha256sum` prints them) and the lines that differ name files that are not
//!   the task's (`edit`): the lab's own tests or benchmark were changed, and the check judges the
//!   goal against the lab's, so the fix is to put them back, not to rewrite the goal;
//! - after the work, kit itself refused to run the step (a `kit: error:` line among the lines
//!   that differ) for a reason that is not goal.md (a malformed config.toml, a cap turned off):
//!   its message is the problem;
//! - the step comes before the one `start_fails_at` names and no `[[step_hints]]` entry names it:
//!   it passes on the exercise as laid out (`kit verify` proves the start fails exactly at
//!   `start_fails_at`), so it checks what the exercise gave the learner, not the work; the files
//!   changed since the start (git, else the embedded `start/` files) are named.

use std::path::Path;

use super::exercise::Exercise;
use crate::golden::{self, Failure, Step};

/// What a failing step says about the learner's work.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cause {
    /// The work the task asks for: the hint ladder applies.
    Work,
    /// The step did not finish: stopped by its timeout or a signal.
    Stopped,
    /// A program the step runs was not found.
    Missing {
        /// Its name, as the shell reported it.
        program: String,
    },
    /// Files the step pins by sha256 that are not the task's differ from the lab's own.
    LabFiles {
        /// The differing files (sandbox-relative), sorted.
        files: Vec<String>,
        /// The start commit (abbreviated), when the sandbox is a git repository that has it.
        start: Option<String>,
    },
    /// kit refused to run the step, for a reason that is not goal.md.
    Refused {
        /// kit's error line, from `kit: error:` on.
        message: String,
    },
    /// A step that passes on the exercise as laid out, which the task's work does not reach.
    Untouched {
        /// The step's `golden.md` line.
        line: usize,
        /// Files changed since the start (sandbox-relative; at most [`MAX_LISTED`] shown).
        changed: Vec<String>,
        /// The start commit (abbreviated), when the sandbox is a git repository that has it.
        start: Option<String>,
    },
}

/// How many changed files a hint names.
pub const MAX_LISTED: usize = 5;

/// Why `f`, a failure of `ex`'s check of the sandbox `folder`, happened.
pub fn cause(ex: &Exercise, folder: &Path, f: &Failure) -> Cause {
    let got = f
        .detail
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("exit status: expected "))
        .and_then(|l| l.split_once(", got ").map(|(_, g)| g.trim().to_string()));
    if got.as_deref().is_some_and(|g| g.starts_with("killed")) {
        return Cause::Stopped;
    }
    if let Some(program) = not_found(&f.detail) {
        return Cause::Missing { program };
    }
    if got.as_deref() == Some("127") {
        return Cause::Missing { program: String::new() };
    }
    if before_the_work(ex, f) {
        let (changed, start) = changed_since_start(ex, folder);
        return Cause::Untouched { line: f.line, changed, start };
    }
    let rows = changed_rows(&f.detail);
    let files = pinned_files(&rows);
    if !files.is_empty() && files.iter().any(|p| !is_task_file(ex, p)) {
        return Cause::LabFiles { files, start: start_commit(folder) };
    }
    if let Some(message) = kit_refusal(&rows) {
        return Cause::Refused { message };
    }
    Cause::Work
}

/// The program a shell said it could not find in `detail` (dash's `sh: 1: NAME: not found`,
/// bash's `NAME: command not found`).
fn not_found(detail: &str) -> Option<String> {
    let re = regex::Regex::new(
        r"(?m)(?:^|\s)(?:sh: \d+: |[\w./-]+: (?:line )?\d+: )?([\w./+-]+): (?:command )?not found$",
    )
    .ok()?;
    re.captures(detail).map(|c| c[1].to_string())
}

/// The rows of a failure's diff that differ: `('-', text)` expected and missing, `('+', text)`
/// printed and not expected. The diff is [`crate::matcher`]'s numbered one: after its
/// `expected actual` line, each row is `{expected:>8} {actual:>6} {sign} {text}`.
fn changed_rows(detail: &str) -> Vec<(char, &str)> {
    let Some((_, diff)) = detail.split_once("expected actual\n") else { return vec![] };
    diff.lines()
        .filter_map(|l| {
            let sign = *l.as_bytes().get(16)?;
            let numbers = l.get(..16)?;
            let numbered = numbers.bytes().all(|b| b == b' ' || b == b'-' || b.is_ascii_digit());
            (numbered && (sign == b'-' || sign == b'+') && l.get(17..18) == Some(" "))
                .then(|| (sign as char, &l[18..]))
        })
        .collect()
}

/// The files named by the differing rows that are `sha256sum` lines (`<64 hex>  PATH`), sorted.
fn pinned_files(rows: &[(char, &str)]) -> Vec<String> {
    let mut files: Vec<String> = rows
        .iter()
        .filter_map(|(_, text)| {
            let (hash, path) = text.split_once("  ")?;
            (hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit()) && !path.is_empty())
                .then(|| path.trim().to_string())
        })
        .collect();
    files.sort();
    files.dedup();
    files
}

/// kit's own error line among the printed rows (`kit: error: …`), unless it is about goal.md
/// (then the goal is the work, and the ladder speaks to it).
fn kit_refusal(rows: &[(char, &str)]) -> Option<String> {
    rows.iter().filter(|(sign, _)| *sign == '+').find_map(|(_, text)| {
        let at = text.find("kit: error: ")?;
        let message = text[at..].trim().to_string();
        (!message.contains("goal.md")).then_some(message)
    })
}

/// Whether `f`'s step comes before the step `start_fails_at` names and no step hint names it.
fn before_the_work(ex: &Exercise, f: &Failure) -> bool {
    let Some(want) = ex.meta.start_fails_at.as_deref() else { return false };
    if ex.meta.step_hints.iter().any(|h| f.command.contains(&h.step)) {
        return false;
    }
    let Ok(case) = golden::parse(&ex.golden_origin(), ex.golden) else { return false };
    let work = case.steps.iter().find_map(|s| match s {
        Step::Run { line, command, .. } if command.contains(want) => Some(*line),
        _ => None,
    });
    work.is_some_and(|w| f.line < w)
}

/// Files of `folder` changed since `kit exercise start` laid it out, and the start commit: from
/// git when the sandbox has the start commit (tracked changes and untracked files), else the
/// embedded `start/` files that differ or are gone. The sandbox's `.home/` is left out.
fn changed_since_start(ex: &Exercise, folder: &Path) -> (Vec<String>, Option<String>) {
    let git = |args: &[&str]| {
        let mut a = vec!["--no-optional-locks"];
        a.extend_from_slice(args);
        crate::git::lines_in(folder, &a)
    };
    let start = start_commit(folder);
    let mut changed: Vec<String> = match &start {
        Some(c) => {
            let mut v =
                git(&["diff", "--name-only", "--no-renames", c.as_str(), "--"]).unwrap_or_default();
            v.extend(git(&["ls-files", "--others", "--exclude-standard"]).unwrap_or_default());
            v
        }
        None => ex
            .start
            .iter()
            .filter(|(rel, bytes)| std::fs::read(folder.join(rel)).ok().as_deref() != Some(*bytes))
            .map(|(rel, _)| rel.clone())
            .collect(),
    };
    changed.retain(|p| !p.starts_with(".home/") && !p.is_empty());
    changed.sort();
    changed.dedup();
    (changed, start)
}

/// The commit `kit exercise start` made in `folder` (abbreviated), when it is a git repository
/// that has it.
fn start_commit(folder: &Path) -> Option<String> {
    folder
        .join(".git")
        .is_dir()
        .then(|| crate::git::lines_in(folder, &["--no-optional-locks", "log", "--format=%h %s"]))
        .flatten()
        .and_then(|log| {
            // `start (lab SEED)` (see `exercise::build_sandbox`), or `start` in an older lab.
            log.iter().find_map(|l| {
                let (hash, subject) = l.split_once(' ')?;
                (subject == "start" || subject.starts_with("start (lab ")).then(|| hash.to_string())
            })
        })
}

/// Whether `rel` is among the files `ex`'s task edits (`edit`; a folder holds what is below it).
fn is_task_file(ex: &Exercise, rel: &str) -> bool {
    ex.meta.edit.iter().any(|e| {
        let e = e.trim_end_matches('/');
        rel == e || rel.strip_prefix(e).is_some_and(|r| r.starts_with('/'))
    })
}

impl Cause {
    /// A short name for graders (`kit exercise check --json`).
    pub fn kind(&self) -> &'static str {
        match self {
            Cause::Work => "work",
            Cause::Stopped => "stopped",
            Cause::Missing { .. } => "missing-program",
            Cause::LabFiles { .. } => "lab-files-changed",
            Cause::Refused { .. } => "kit-refused",
            Cause::Untouched { .. } => "outside-the-task",
        }
    }

    /// What to tell the learner about it (None: the hint ladder says it).
    pub fn text(&self, ex: &Exercise) -> Option<String> {
        let n = ex.meta.id;
        match self {
            Cause::Work => None,
            Cause::Stopped => Some(format!(
                "the step did not finish: it ran past its timeout ({}) or was killed. If your work makes it wait (a loop that does not end, a script that hangs), that is the problem; if not, the machine was busy: check again.",
                ex.meta.timeout.clone().unwrap_or_default()
            )),
            Cause::Missing { program } => {
                let what = if program.is_empty() {
                    "a program this step runs was not found (exit 127)".to_string()
                } else {
                    format!("`{program}` was not found: this step runs it")
                };
                Some(format!(
                    "{what}. That is this machine, not your work: install it (kit doctor checks what kit needs) and check again; if a script of yours calls it, check the name."
                ))
            }
            Cause::LabFiles { files, start } => {
                let shown = files.join(" ");
                let undo = match start {
                    Some(c) => format!("git checkout {c} -- {shown}"),
                    None => format!("kit exercise reset {n} (move your work aside first)"),
                };
                Some(format!(
                    "not your goal: the check pins the lab's own files, and {} not what kit exercise start {n} gave you. Your goal is judged against the lab's tests and benchmark, never a changed copy.\nput them back: {undo} (a file you added there: remove it), then check again (if you froze the changed copy, kit freeze it again first).",
                    if files.len() == 1 { format!("{shown} is") } else { format!("{shown} are") }
                ))
            }
            Cause::Refused { message } => Some(format!(
                "kit refused to run this step: {message}\nthat is the problem to fix first (the message names the file and the next command); the hints are about the goal and come after."
            )),
            Cause::Untouched { line, changed, start } => {
                let edits = if ex.meta.edit.is_empty() {
                    String::new()
                } else {
                    format!(" (the task edits {})", ex.meta.edit.join(", "))
                };
                let mut t = format!(
                    "not the task's step: golden.md:{line} passes on exercise {n} as kit exercise start {n} lays it out{edits}; a change since broke it."
                );
                if !changed.is_empty() {
                    let shown: Vec<String> = changed
                        .iter()
                        .take(MAX_LISTED)
                        .map(|p| {
                            if is_task_file(ex, p) {
                                p.clone()
                            } else {
                                format!("{p} (not the task's)")
                            }
                        })
                        .collect();
                    let more = changed.len().saturating_sub(MAX_LISTED);
                    let more = if more > 0 { format!(" and {more} more") } else { String::new() };
                    t.push_str(&format!("\nchanged since the start: {}{more}", shown.join(", ")));
                }
                match start {
                    Some(c) => t.push_str(&format!(
                        "\nsee a change: git diff {c} -- FILE; undo it: git checkout {c} -- FILE; or kit exercise reset {n} lays the exercise out again (move your work aside first)"
                    )),
                    None => t.push_str(&format!(
                        "\nkit exercise reset {n} lays the exercise out again (move your work aside first)"
                    )),
                }
                Some(t)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shell_that_cannot_find_a_program_names_it() {
        let cases: &[(&str, Option<&str>)] = &[
            ("  + sh: 1: python3: not found\n", Some("python3")),
            ("+ bash: line 1: jq: command not found\n", Some("jq")),
            ("+ foo: command not found\n", Some("foo")),
            ("+ ls: cannot access 'longrun': No such file or directory\n", None),
            ("- handoff not found in journal\n", None),
        ];
        for (detail, want) in cases {
            assert_eq!(not_found(detail).as_deref(), *want, "{detail}");
        }
    }

    fn ex(n: u32) -> Exercise {
        super::super::exercise::load_all().unwrap().into_iter().find(|e| e.meta.id == n).unwrap()
    }

    fn failure(ex: &Exercise, containing: &str, detail: &str) -> Failure {
        let case = golden::parse("g", ex.golden).unwrap();
        let (line, command) = case
            .steps
            .iter()
            .find_map(|s| match s {
                Step::Run { line, command, .. } if command.contains(containing) => {
                    Some((*line, command.clone()))
                }
                _ => None,
            })
            .unwrap();
        Failure { line, command, detail: detail.into() }
    }

    #[test]
    fn a_step_before_the_work_that_no_hint_names_is_outside_the_task() {
        let d = tempfile::tempdir().unwrap();
        let fifteen = ex(15);
        let want = fifteen.meta.start_fails_at.clone().unwrap();
        let diff = "exit status: expected 0, got 1\n";
        // Before the work, named by no step hint: outside the task.
        let first =
            golden::parse("g", fifteen.golden).unwrap().steps.into_iter().find_map(|s| match s {
                Step::Run { command, .. } => Some(command),
                _ => None,
            });
        let first = first.unwrap();
        if !first.contains(&want)
            && !fifteen.meta.step_hints.iter().any(|h| first.contains(&h.step))
        {
            let f = failure(&fifteen, &first, diff);
            assert!(matches!(cause(&fifteen, d.path(), &f), Cause::Untouched { .. }));
        }
        // The work's own step: the ladder.
        let f = failure(&fifteen, &want, diff);
        assert_eq!(cause(&fifteen, d.path(), &f), Cause::Work);
        // Whatever the step, a missing program or a stopped step is said as such.
        let f =
            failure(&fifteen, &want, "exit status: expected 0, got 127\n+ sh: 1: git: not found\n");
        assert_eq!(cause(&fifteen, d.path(), &f), Cause::Missing { program: "git".into() });
        let f = failure(
            &fifteen,
            &want,
            "exit status: expected 0, got killed by a signal or the timeout\n",
        );
        assert_eq!(cause(&fifteen, d.path(), &f), Cause::Stopped);
    }

    #[test]
    fn a_lab_file_the_check_pins_by_sha256_is_named_and_the_goal_is_not_blamed() {
        let d = tempfile::tempdir().unwrap();
        let twenty = ex(20);
        let (a, b) = ("a".repeat(64), "b".repeat(64));
        let expected = format!("{a}  tests/__init__.py\n{a}  tests/test_durations.py\n");
        let actual = format!("{a}  tests/__init__.py\n{b}  tests/test_durations.py\n");
        let detail = crate::matcher::diff_numbered(&expected, &actual, 7);
        let f = failure(&twenty, "sha256sum", &detail);
        let c = cause(&twenty, d.path(), &f);
        assert_eq!(
            c,
            Cause::LabFiles { files: vec!["tests/test_durations.py".into()], start: None }
        );
        let t = c.text(&twenty).unwrap();
        assert!(t.starts_with("not your goal: the check pins the lab's own files"), "{t}");
        assert!(t.contains("tests/test_durations.py is not what kit exercise start 20"), "{t}");
        // A file added under a pinned folder is named too.
        let added = format!("{expected}{b}  tests/test_extra.py\n");
        let f = failure(&twenty, "sha256sum", &crate::matcher::diff_numbered(&expected, &added, 7));
        assert!(matches!(cause(&twenty, d.path(), &f),
            Cause::LabFiles { files, .. } if files == vec!["tests/test_extra.py".to_string()]));
        // A pinned file that is the task's own (goal.md here) is the work: the ladder speaks.
        let four = ex(4);
        let detail = crate::matcher::diff_numbered(
            &format!("{a}  longrun/goal.md\n"),
            &format!("{b}  longrun/goal.md\n"),
            7,
        );
        let f = failure(&four, "slow.toml", &detail);
        assert_eq!(cause(&four, d.path(), &f), Cause::Work);
    }

    #[test]
    fn kit_refusing_a_step_for_another_file_than_the_goal_is_said_as_such() {
        let d = tempfile::tempdir().unwrap();
        let four = ex(4);
        let expected = "loop: took longrun/.lock (pid [N])\n...\n";
        let actual = "kit: error: longrun/config.toml:28: max_iterations must be at least 1\n  next: fix it, then kit loop\n";
        let detail = format!(
            "exit status: expected 3, got 2\n{}",
            crate::matcher::diff_numbered(expected, actual, 40)
        );
        let f = failure(&four, "slow.toml", &detail);
        let c = cause(&four, d.path(), &f);
        assert_eq!(
            c,
            Cause::Refused {
                message: "kit: error: longrun/config.toml:28: max_iterations must be at least 1"
                    .into()
            }
        );
        assert!(c
            .text(&four)
            .unwrap()
            .starts_with("kit refused to run this step: kit: error: longrun/config.toml:28"));
        // About goal.md, the refusal is the work's: the ladder speaks.
        let actual = "kit: error: longrun/goal.md rates level 2, below the required level 3\n";
        let detail = crate::matcher::diff_numbered(expected, actual, 40);
        let f = failure(&four, "slow.toml", &detail);
        assert_eq!(cause(&four, d.path(), &f), Cause::Work);
    }
}
