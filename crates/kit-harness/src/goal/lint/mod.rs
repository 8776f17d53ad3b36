//! The done-criterion scale and the shortcut linter (DESIGN §4). A criterion is only as good as
//! the cheapest way to make it pass: if deleting tests, skipping them, swallowing the exit status
//! or editing the test itself satisfies it, an agent under pressure will find that way. The linter
//! names each such shortcut with its goal.md line and how to close it, and caps the level at 2.
//!
//! | level | meaning |
//! |---|---|
//! | 0 | no criteria section, or nothing checkable |
//! | 1 | criteria in prose only, no commands |
//! | 2 | commands, but some criterion has no expected output, or can be met by a shortcut |
//! | 3 | every criterion is command → expected output, none is shortcut-able, every test file the commands exercise is frozen |
//! | 4 | level 3, and the criteria cover function, regression and limit |
//!
//! Whose exit status is the criterion's: the command is read as the shell runs it
//! ([`super::shell::script`]: lists, and-or chains, pipelines, `!`, redirections, nested
//! `sh -c`), and the last command that runs must be work, not a step that only prints (`echo`,
//! `printf`, `cat FILE`, `python3 -c 'print(…)'`, `true`, `exit 0`). A runner whose status `;` or
//! `&` throws away, `|| true`, `! runner`, and a runner's output sent to /dev/null or to a file
//! nothing reads are each named. A pipe hands the status to its last command, so
//! `pytest -q tests/ 2>&1 | tail -5` is a shortcut too (a failing run that prints `14 passed`
//! before an error still passes) unless `set -o pipefail` comes first; expectations already
//! search the whole output, so the `tail` adds nothing. `set -e` keeps a failing step's status,
//! so `set -e; runner; echo done` is not named.
//!
//! The checks read the command with [`super::shell`] (words, operators, nested `sh -c`) and know
//! the common runners: `python -m unittest` (module names, `discover -s DIR -p PATTERN`),
//! `pytest`, `cargo test`, `go test`. Any other path in a command that names a test (a path
//! component containing `test`) must be frozen too, and so must the script a `limit` runs.

//!
//! The parts: [`scale`] rates (the levels and their reasons), `status` reads whose exit status
//! decides, `expect` judges the expected output, `runner` knows the runners and which files a
//! command runs, `coverage` checks that what is run is frozen.

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::shell;
use super::{Criterion, Expectation, Goal, Kind, IMPLICITLY_FROZEN};

mod adversary;
mod coverage;
mod expect;
mod runner;
mod scale;
mod status;
mod suite;
#[cfg(test)]
mod tests;

pub use adversary::Trial;
pub(crate) use runner::{canary_plan, TestLanguage};
pub(super) use scale::rate;

use coverage::Frozen;
use expect::pins_a_count;
use runner::{
    build_files, in_folders, runs_tests, script_inputs, script_run, test_paths, Runner, Target,
};

/// Separates the problem from its fix in [`Shortcut::what`].
pub(crate) const FIX_SEP: &str = "; fix: ";

/// A way to satisfy a criterion without doing the work.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shortcut {
    /// 1-based line of the criterion in goal.md.
    pub line: usize,
    /// What the shortcut is, then `; fix: ` and how to close it.
    pub what: String,
}

/// A goal's place on the done-criterion scale.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rating {
    /// 0 to 4.
    pub level: u8,
    /// Four sentences, one per point 1–4 of the scale: why it is reached or not. Point `i` is
    /// reached when `i <= level`.
    pub reasons: Vec<String>,
    /// Every shortcut found, in goal.md order. Any shortcut caps the level at 2.
    pub shortcuts: Vec<Shortcut>,
    /// The adversarial outputs tried against each criterion, in goal.md order (see
    /// `adversary`): a function or regression criterion that accepts one is a shortcut, a limit
    /// must reject one.
    #[serde(default)]
    pub trials: Vec<Trial>,
    /// What kit could not check and why (a collection that could not run), so a rating is
    /// never silently weaker than it reads.
    #[serde(default)]
    pub notes: Vec<String>,
}

struct Lint<'a> {
    goal: &'a Goal,
    root: &'a Path,
    frozen: &'a Frozen,
    shortcuts: Vec<Shortcut>,
    /// Frozen test files and folders the criteria exercise (for the level 3 reason).
    exercised: BTreeSet<String>,
    /// Lines of criteria whose exit status is not the work's (`; exit 0`, `|| true`…).
    status_lost: BTreeSet<usize>,
    /// The adversarial outputs tried.
    trials: Vec<Trial>,
    /// What could not be checked.
    notes: Vec<String>,
    /// Test counts by collection command (one collection per distinct command).
    collected: std::collections::HashMap<String, Option<u64>>,
    /// The criteria's environment, built once when a collection runs.
    env: Option<super::env::CriteriaEnv>,
}

impl Lint<'_> {
    fn flag(&mut self, line: usize, problem: impl Into<String>, fix: impl Into<String>) {
        let what = format!("{}{FIX_SEP}{}", problem.into(), fix.into());
        self.shortcuts.push(Shortcut { line, what });
    }

    /// A shortcut that makes the criterion's exit status something other than the work's.
    fn flag_status(&mut self, line: usize, problem: impl Into<String>, fix: impl Into<String>) {
        self.status_lost.insert(line);
        self.flag(line, problem, fix);
    }

    fn criterion(&mut self, c: &Criterion) {
        let line = c.line;
        self.expectations(c);
        self.swallowed_failure(c);
        self.unseen_programs(c);
        let commands = shell::simple_commands(&c.command);
        let pinned = c.expectations.iter().any(pins_a_count);
        for words in &commands {
            self.agent_files(line, words);
            self.own_output(c, words);
            if let Some(runner) = Runner::of(words) {
                self.runner_flags(c, &runner, pinned);
            }
        }
        let mut targets = Vec::new();
        for (cwd, words) in in_folders(&commands) {
            let here = self.root.join(&cwd);
            let mut found = Vec::new();
            if let Some(runner) = Runner::of(words) {
                found.extend(runner.targets(&here));
                found.extend(runner.config_files(&here));
            }
            found.extend(test_paths(words, &here));
            // A script is the test when it measures a limit, or when its name says it runs
            // tests or checks (a program the goal asks for is the work, not the test).
            // Every script of the repository the command runs, by path, through an
            // interpreter, sourced or as `python -m MODULE`, once it exists: an agent that
            // rewrites it decides what the criterion prints. One that does not exist yet is
            // the work, unless it measures a limit or its name says it runs tests.
            found.extend(script_run(words, &here).filter(|t| {
                c.kind == Kind::Limit
                    || matches!(t, Target::Script(p) if runs_tests(p) || here.join(p).is_file())
            }));
            found.extend(script_inputs(words, &here));
            found.extend(build_files(words, &here));
            targets.extend(found.into_iter().map(|t| t.under(&cwd)));
        }
        // A script fed to an interpreter on its standard input (`python3 - < tools/bench.py`):
        // the redirection is not among the words above (read from the criterion's own folder).
        for list in shell::script(&c.command) {
            for simple in list.pipelines.iter().flat_map(|p| &p.commands) {
                targets.extend(runner::stdin_script(simple, self.root));
            }
        }
        // One check per path: what a runner found (with its file patterns) comes first. The
        // packages' `__init__.py` files last: an unfrozen one is named in the shortcut of an
        // unfrozen test file of its package (one fix for both), else on its own.
        let mut seen = BTreeSet::new();
        targets.retain(|t| seen.insert(t.path().to_string()));
        let (packages, targets): (Vec<Target>, Vec<Target>) =
            targets.into_iter().partition(|t| matches!(t, Target::Package(_)));
        let mut inits: Vec<String> = packages
            .iter()
            .map(|t| t.path().to_string())
            .filter(|p| !self.frozen.covers(p))
            .collect();
        for t in &targets {
            self.target(line, c.kind, t, &mut inits);
        }
        for p in inits {
            self.package(line, &p);
        }
        let suite_count = self.whole_suite(c);
        self.adversary(c, suite_count);
    }
}

fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn abbreviate(items: &[&str], max: usize) -> String {
    if items.len() <= max {
        items.join(", ")
    } else {
        format!("{}, and {} more", items[..max].join(", "), items.len() - max)
    }
}

/// A command for a message: its words, quoted again where the shell needs it, cut after 60
/// characters.
fn show_words(words: &[String]) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_./:=@%+,-$".contains(c);
    let quoted: Vec<String> = words
        .iter()
        .map(|w| {
            if !w.is_empty() && w.chars().all(plain) {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect();
    cut(quoted.join(" "))
}

fn cut(text: String) -> String {
    if text.chars().count() > 60 {
        format!("{}…", text.chars().take(59).collect::<String>())
    } else {
        text
    }
}
