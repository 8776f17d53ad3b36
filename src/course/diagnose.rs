//! Why an exercise's check failed, in terms the learner can act on, so that the hint names the
//! learner's actual problem. The hint ladder of `exercise.toml` is about the work the task asks
//! for; it is shown only when the failing step is that work's ([`Cause::Work`], or
//! [`Cause::Stopped`], which may be). The rest is told from data the exercise already has, never
//! a list kept by hand here:
//!
//! - a program the step runs was not found (exit 127, `sh: 1: NAME: not found`): the machine;
//! - the step did not finish (the runner's "killed by a signal or the timeout"): a hang, or a
//!   busy machine;
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
    let start = folder
        .join(".git")
        .is_dir()
        .then(|| git(&["log", "--format=%h %s"]))
        .flatten()
        .and_then(|log| log.iter().find_map(|l| l.strip_suffix(" start").map(str::to_string)));
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
}
