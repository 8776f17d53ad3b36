//! Running an exercise's `golden.md`: against a copy of the learner's sandbox (`kit exercise
//! check`: the learner's files cannot influence the checker and the check never writes into the
//! learner's folder), and against the start and the solution (`kit verify`).

use std::path::Path;

use super::exercise::{self, Exercise};
use crate::error::{IoContext, Result};
use crate::golden::{self, Binaries, Outcome};

/// Run `ex`'s golden in a temporary copy of `sandbox` ([`copy_sandbox`]).
pub fn check_copy(ex: &Exercise, sandbox: &Path, bins: &Binaries) -> Result<Outcome> {
    check_copy_with_progress(ex, sandbox, bins, &|_, _, _| {})
}

/// [`check_copy`], calling `progress` before each step ([`golden::run_case_with_progress`]).
pub fn check_copy_with_progress(
    ex: &Exercise,
    sandbox: &Path,
    bins: &Binaries,
    progress: &golden::ProgressFn<'_>,
) -> Result<Outcome> {
    let case = ex.case(&format!("exercise {}", ex.slug))?;
    // `golden::SandboxFn` is `'static`: the closures own what they use.
    let sandbox = sandbox.to_path_buf();
    let kind = ex.meta.sandbox.clone();
    let copy = move |_kind: &str, dir: &Path, _env: &[(String, String)]| {
        copy_sandbox(&sandbox, &kind, dir)
    };
    golden::run_case_with_progress(&case, bins, &copy, progress)
}

/// Copy what a check of the sandbox `from` needs into `to`: the sandbox's own files and `.git`,
/// without what is not the exercise's work: the sandbox's `.home/` is laid anew for its kind
/// `kind` (the transcript fixtures come from the binary, not from the learner's copy) with only
/// the sandbox's own kit state (`.home/.local/state/kit/handoff.key`, which its setup made), and
/// no nested lab (a folder with `.kit/progress.json`) or other exercise's sandbox (a folder with
/// a marker) is copied.
///
/// Errors: I/O errors naming the file.
pub fn copy_sandbox(from: &Path, kind: &str, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to.join(".home")).at(to)?;
    super::copy_tree_filtered(from, to, &|rel: &Path, is_dir: bool| {
        if rel == Path::new(".home") || rel == Path::new(".kit") {
            return false;
        }
        let src = from.join(rel);
        !(is_dir && (src.join(".kit/progress.json").is_file() || is_sandbox(&src)))
    })?;
    if kind == "transcripts" {
        crate::embedded::write_transcript_fixtures(&to.join(".home"))?;
    }
    let key = Path::new(".home/.local/state/kit").join(crate::keys::HANDOFF_FILE);
    if from.join(&key).is_file() {
        crate::atomic::create_dir_all(&to.join(".home/.local/state/kit"))?;
        std::fs::copy(from.join(&key), to.join(&key)).at(&from.join(&key))?;
    }
    Ok(())
}

fn is_sandbox(dir: &Path) -> bool {
    [crate::sandbox::IN_GIT, crate::sandbox::IN_HOME].iter().any(|m| dir.join(m).is_file())
}

/// Run `ex`'s golden on its start state with the solution laid over it (must pass).
pub fn run_solution(ex: &Exercise, bins: &Binaries) -> Result<Outcome> {
    let case = ex.case(&format!("exercise {} solution", ex.slug))?;
    let owned = ex.clone();
    let build = move |_kind: &str, dir: &Path, env: &[(String, String)]| {
        exercise::build_sandbox(&owned, dir, env, &exercise::env_course_key(env)?, true)
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
        exercise::build_sandbox(&owned, dir, env, &exercise::env_course_key(env)?, false)
    };
    let o = golden::run_case(&case, bins, &build)?;
    let toml = format!("exercises/{}/exercise.toml", ex.slug);
    let failure = match (o.failure, ex.meta.start_fails_at.as_deref()) {
        (None, _) => Some(golden::Failure {
            line: 1,
            command: "(every step)".into(),
            detail: format!("{} passes on the start state: {START_PASSES}\n", ex.golden_origin()),
        }),
        (Some(f), None) => Some(golden::Failure {
            detail: format!(
                "{toml} has no start_fails_at: name the step the learner's work changes (the start failed at `{}`, golden.md:{})\n",
                f.command, f.line
            ),
            ..f
        }),
        (Some(f), Some(want)) if !f.command.contains(want) => Some(golden::Failure {
            detail: format!(
                "the start state fails at golden.md:{} `{}`, not at the step {toml}'s start_fails_at names (`{want}`): that step is broken on the start state for another reason, or start_fails_at is wrong\n{}",
                f.line, f.command, f.detail
            ),
            ..f
        }),
        (Some(_), Some(_)) => None,
    };
    Ok(Outcome { name, failure })
}

const START_PASSES: &str = "the exercise passes before the learner works; make golden.md check \
what the learner must change";
