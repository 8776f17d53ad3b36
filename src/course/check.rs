//! Running an exercise's `golden.md`: against a copy of the learner's sandbox (`kit exercise
//! check`: the learner's files cannot influence the checker and the check never writes into the
//! learner's folder), and against the start and the solution (`kit verify`).

use std::path::Path;

use super::exercise::{self, Exercise};
use crate::error::Result;
use crate::golden::{self, Binaries, Outcome};

/// Run `ex`'s golden in a temporary copy of `sandbox` (the learner's folder, `.git` included).
pub fn check_copy(ex: &Exercise, sandbox: &Path, bins: &Binaries) -> Result<Outcome> {
    let case = ex.case(&format!("exercise {}", ex.slug))?;
    // `golden::SandboxFn` is `'static`: the closures own what they use.
    let sandbox = sandbox.to_path_buf();
    let copy =
        move |_kind: &str, dir: &Path, _env: &[(String, String)]| super::copy_tree(&sandbox, dir);
    golden::run_case(&case, bins, &copy)
}

/// Run `ex`'s golden on its start state with the solution laid over it (must pass).
pub fn run_solution(ex: &Exercise, bins: &Binaries) -> Result<Outcome> {
    let case = ex.case(&format!("exercise {} solution", ex.slug))?;
    let owned = ex.clone();
    let build = move |_kind: &str, dir: &Path, env: &[(String, String)]| {
        exercise::build_sandbox(&owned, dir, env, true)
    };
    golden::run_case(&case, bins, &build)
}

/// Run `ex`'s golden on its start state alone. The outcome is inverted: a failure of the golden
/// is a pass of this case, and a pass is reported as a failure saying the exercise passes before
/// the learner works.
pub fn run_start_fails(ex: &Exercise, bins: &Binaries) -> Result<Outcome> {
    let name = format!("exercise {} start fails", ex.slug);
    let case = ex.case(&name)?;
    let owned = ex.clone();
    let build = move |_kind: &str, dir: &Path, env: &[(String, String)]| {
        exercise::build_sandbox(&owned, dir, env, false)
    };
    let o = golden::run_case(&case, bins, &build)?;
    let failure = match o.failure {
        Some(_) => None,
        None => Some(golden::Failure {
            line: 1,
            command: "(every step)".into(),
            detail: format!("{} passes on the start state: {START_PASSES}\n", ex.golden_origin()),
        }),
    };
    Ok(Outcome { name, failure })
}

const START_PASSES: &str = "the exercise passes before the learner works; make golden.md check \
what the learner must change";
