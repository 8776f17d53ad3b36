//! The goal as a contract (DESIGN §4). A long agent run fails when nobody outside the model
//! decides when the work is done; `longrun/goal.md` says it in a form kit can check: an end state
//! in prose, then criteria — shell commands with the output they must print — that the loop runs
//! itself, plus constraints and a budget.
//!
//! - [`parse`] / [`load`] read goal.md into a [`Goal`]; malformed criteria and budget lines are
//!   errors naming `goal.md:LINE` with a hint.
//! - [`rate`] places the goal on the done-criterion scale 0–4 and names every shortcut: a way to
//!   satisfy a criterion without doing the work (`→ OK` alone, `|| true`, an unfrozen test file…).
//! - [`run_criterion`] / [`run_all`] run criteria the way the loop does: `sh -c` in the repository
//!   root, in their own process group, killed as a group at the timeout.
//! - [`review`] runs the `- review:` criteria through the evaluator command (layered
//!   verification: tests are the floor, a review judges what no test can).
//! - [`check`] is `kit goal check [--json]`, the teaching view of the rating.
//!
//! The format, by example (DESIGN §4):
//!
//! ```markdown
//! # Goal: parse durations in the config loader
//!
//! ## End state
//! `load_config` accepts "90s", "15m", "2h" and rejects anything else with a line number.
//!
//! ## Criteria
//! - function: `python3 -m unittest tests.test_durations -v` → `Ran 9 tests` and `OK`
//! - regression: `python3 -m unittest discover -s tests` → `Ran 14 tests` and `OK`
//! - limit: `python3 tools/bench_load.py` → `re:^p95_ms=([0-9]|1[0-9])$`
//!
//! ## Constraints
//! - tests/ is frozen; do not edit it.
//!
//! ## Budget
//! - iterations: 8
//! - wall: 2h
//! - cost: 15 USD
//! ```

pub mod canary;
mod check;
mod criteria;
pub mod env;
mod lint;
mod parse;
pub mod review;
mod shell;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::longrun::Project;

pub use check::{check, CheckOptions};
pub use criteria::{run_all, run_criterion, CriterionResult, OUTPUT_TAIL_LINES};
pub use lint::{Rating, Shortcut, Trial};
pub use parse::parse;

/// The three kinds of criterion. A level 4 goal has at least one of each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// The new behaviour works (the tests written for this goal pass).
    Function,
    /// Nothing that worked before broke (the whole suite still passes).
    Regression,
    /// A measured bound holds (time, size, memory), e.g. `p95_ms` under 20.
    Limit,
}

impl Kind {
    /// All kinds, in the order goal.md lists them.
    pub const ALL: [Kind; 3] = [Kind::Function, Kind::Regression, Kind::Limit];

    /// The word used in goal.md: `function`, `regression`, `limit`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Function => "function",
            Kind::Regression => "regression",
            Kind::Limit => "limit",
        }
    }

    /// The kind named by `word` (case-insensitive), if any.
    pub fn from_word(word: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str().eq_ignore_ascii_case(word))
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One backquoted item after the arrow of a criterion.
#[derive(Clone, Debug)]
pub enum Expectation {
    /// The output (stdout and stderr together) must contain this text.
    Substring(String),
    /// Some line of the output must match this regular expression (written `re:PATTERN`).
    Regex {
        /// The pattern as written after `re:`.
        pattern: String,
        /// The compiled pattern.
        re: regex::Regex,
    },
}

impl Expectation {
    /// Whether `output` meets this expectation: a substring anywhere, a regex on some line.
    pub fn is_met(&self, output: &str) -> bool {
        match self {
            Expectation::Substring(s) => output.contains(s.as_str()),
            Expectation::Regex { re, .. } => output.lines().any(|l| re.is_match(l)),
        }
    }

    /// The item as written in goal.md, without the backquotes: `Ran 9 tests` or `re:^OK$`.
    pub fn as_written(&self) -> String {
        match self {
            Expectation::Substring(s) => s.clone(),
            Expectation::Regex { pattern, .. } => format!("re:{pattern}"),
        }
    }
}

impl PartialEq for Expectation {
    fn eq(&self, other: &Self) -> bool {
        self.as_written() == other.as_written()
    }
}

impl Serialize for Expectation {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.as_written())
    }
}

/// One checkable criterion: `- KIND: `COMMAND` → EXPECTATION [and EXPECTATION…] [(exit N)]`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Criterion {
    /// 1-based line in goal.md.
    pub line: usize,
    /// function, regression or limit.
    pub kind: Kind,
    /// The shell command, run through `sh -c` in the repository root.
    pub command: String,
    /// Every item must be met; empty when the criterion has no arrow (rated as a shortcut).
    #[serde(rename = "expect")]
    pub expectations: Vec<Expectation>,
    /// The exit status the command must end with (0 unless the line says `(exit N)`).
    pub exit: i32,
}

impl Criterion {
    /// Whether a run that exited `exit` and printed `output` passes this criterion: the exit
    /// status it requires and every expectation met. The loop's rule (see `criteria`), used by
    /// the linter to try the outputs a shortcut would produce.
    pub fn accepts(&self, exit: i32, output: &str) -> bool {
        exit == self.exit && self.expectations.iter().all(|e| e.is_met(output))
    }
}

/// A criterion of kind `review`: `- review: WHAT THE EVALUATOR MUST JUDGE` (prose, backquotes
/// allowed). No test decides it: the `[review] evaluator` command of config.toml reads the goal,
/// the diff since the base commit and the deterministic criteria's results, and answers
/// `VERDICT: pass|fail|ask REASON` (see [`review`]). A review never replaces a test: it runs only
/// when every deterministic criterion passes, and the linter rates a goal with reviews only at
/// level 2 at most.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Review {
    /// 1-based line in goal.md.
    pub line: usize,
    /// What the evaluator must judge, as written after `review:`.
    pub text: String,
}

/// A criterion of kind `human`: `- human: WHAT A PERSON MUST APPROVE` (prose, backquotes
/// allowed). Only a person marks it: when every other criterion passes (and every review says
/// pass), the loop stops "needs you" (exit 6) and asks for it as a numbered decision, which
/// `kit approve N` answers for the tree it was given on (see [`crate::looprun::ask`]). An approval given
/// from inside an agent iteration never counts. Like a review, it never replaces a test: the
/// linter rates a goal whose only criteria are reviews and human ones at level 2 at most.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Human {
    /// 1-based line in goal.md.
    pub line: usize,
    /// What the person must approve, as written after `human:`.
    pub text: String,
}

/// The budget section: caps on the goal's runs, so the type lives with them in the state layer.
pub use crate::longrun::caps::Budget;

/// A parsed goal.md.
#[derive(Clone, Debug, PartialEq)]
pub struct Goal {
    /// The first `# ` heading, without a leading `Goal:`; empty when there is none.
    pub title: String,
    /// The `## End state` section's text, trimmed.
    pub end_state: String,
    /// The checkable criteria, in file order.
    pub criteria: Vec<Criterion>,
    /// Items of `## Criteria` written in prose (no command): `(line, text)`.
    pub prose_criteria: Vec<(usize, String)>,
    /// The `- review:` items of `## Criteria`: judged by the evaluator in config.toml, only
    /// once every deterministic criterion passes (see [`review`]).
    pub reviews: Vec<Review>,
    /// The `- human:` items of `## Criteria`: decisions only a person marks (`kit approve N`),
    /// asked once every other criterion passes (see [`Human`]).
    pub humans: Vec<Human>,
    /// The items of `## Constraints`.
    pub constraints: Vec<String>,
    /// The `## Budget` section.
    pub budget: Budget,
}

/// The files kit freezes implicitly, whatever frozen.toml says (DESIGN §5).
pub const IMPLICITLY_FROZEN: [&str; 3] =
    ["longrun/goal.md", "longrun/config.toml", "longrun/frozen.toml"];

/// Rate `goal` on the done-criterion scale 0–4 (see `lint`): the criteria's commands, their
/// shortcuts and coverage, with the review criteria weighed by [`review::weigh`] (a goal whose
/// only evidence is reviews is level 2 at most). `frozen` holds the repo-relative paths
/// frozen.toml protects; `root` is the repository root.
pub fn rate(goal: &Goal, frozen: &[String], root: &Path) -> Rating {
    review::weigh(goal, lint::rate(goal, frozen, root))
}

/// Read and parse the project's `longrun/goal.md`.
///
/// Errors: [`Error::Usage`] when the file does not exist (next step: `kit init`), [`Error::Io`]
/// when it cannot be read, [`Error::Input`] (`longrun/goal.md:LINE`) when it is malformed.
pub fn load(project: &Project) -> Result<Goal> {
    let path = project.goal();
    let shown = display_path(project, &path);
    let Some(text) = crate::longrun::read_user_text(&path, &shown)? else {
        return Err(Error::usage(format!("no goal: {} does not exist", path.display()))
            .with_hint("kit init (it writes a goal.md template to fill in)"));
    };
    parse(&shown, &text)
}

/// The repo-relative paths frozen by `longrun/frozen.toml` (files and folders): the keys of its
/// `[files."<relpath>"]` tables and its `dirs` array, read through
/// [`crate::frozen::manifest::Manifest`]. A missing file means nothing is frozen yet. The
/// implicitly frozen files are not included.
///
/// Errors: [`Error::Input`] naming `frozen.toml:LINE` when the manifest is malformed.
pub fn frozen_paths(project: &Project) -> Result<Vec<String>> {
    let m = crate::frozen::manifest::Manifest::load(&project.frozen())?;
    Ok(m.files.into_keys().chain(m.dirs).collect())
}

/// `path` relative to the project root when it is inside it (`longrun/goal.md`), for messages.
fn display_path(project: &Project, path: &Path) -> PathBuf {
    path.strip_prefix(&project.root).map(Path::to_path_buf).unwrap_or_else(|_| path.to_path_buf())
}
