//! The revert probe (issue 22: done proves the tests depend on the work). When every criterion
//! passes at a done candidate, kit checks that the function criteria need the agent's change:
//! it puts the run's start tree (the commit and the uncommitted work the loop found, as the
//! `baseline` event's `tree`) into a scratch folder outside the repository, writes the frozen
//! files there from the copies the loop holds in memory, and runs each function criterion there
//! in the criteria's own environment ([`crate::goal::env`]). Each must fail: one that passes
//! without the work proves nothing about it, and done is refused with that reason.
//!
//! The scratch folder is a plain checkout (`git read-tree` into a private index, then
//! `git checkout-index --prefix`), not a worktree: nothing is registered in the repository, and
//! the folder is removed when the probe ends, whatever happened. Untracked ignored files (a
//! virtualenv, build output) are not in it, so a criterion that needs them fails there, which
//! never refuses done.
//!
//! Function criteria that already passed at the run's first baseline under `--allow-green-start`
//! are exempt: the user said that passing before the work is expected of them.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::frozen::guard::Guard;
use crate::goal::env::CriteriaEnv;
use crate::goal::CriterionResult;
use crate::goal::{Goal, Kind};

/// What the probe found.
#[derive(Debug)]
pub(super) struct Probe {
    /// The function criteria run on the start tree (exempt ones not run), in goal order.
    pub(super) results: Vec<CriterionResult>,
    /// goal.md lines of the function criteria that passed without the work.
    pub(super) pass_without_work: Vec<usize>,
    /// goal.md lines exempt under `--allow-green-start`.
    pub(super) exempt: Vec<usize>,
    /// Wall time of the whole probe: the checkout, the frozen files, the criteria, the clean-up.
    pub(super) wall: Duration,
    /// CPU time (user + system) of the processes the probe waited for: git and the criteria.
    pub(super) cpu: Duration,
}

/// Run the probe on `tree` (a tree id of the repository at `root`).
///
/// Errors: [`Error::Internal`] naming the git command when the start tree cannot be checked out
/// (its objects are gone: `git prune` run during the run); [`Error::Io`] when the scratch
/// folder or a frozen file in it cannot be written.
#[allow(clippy::too_many_arguments)]
pub(super) fn run(
    root: &Path,
    tree: &str,
    guard: &Guard,
    goal: &Goal,
    env: &CriteriaEnv,
    timeout: Duration,
    allowed: &[usize],
    stop: &dyn Fn() -> bool,
) -> Result<Probe> {
    let started = Instant::now();
    let cpu_before = children_cpu();
    let scratch = tempfile::Builder::new()
        .prefix("kit-revert-probe-")
        .tempdir()
        .map_err(|e| Error::io(std::env::temp_dir(), e))?;
    let work = scratch.path().join("start");
    let index = scratch.path().join("index");
    crate::atomic::create_dir_all(&work)?;
    let git = |args: &[&str]| -> Result<()> {
        let out = crate::git::command_in(root)
            .args(args)
            .env("GIT_INDEX_FILE", &index)
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| {
                Error::internal(format!("cannot run git: {e}")).with_hint("install git")
            })?;
        if out.status.success() {
            Ok(())
        } else {
            Err(Error::internal(format!(
                "the revert probe cannot check out the run's start tree {tree}: git {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            )))
        }
    };
    git(&["read-tree", tree])?;
    let prefix = format!("{}/", work.display());
    git(&["checkout-index", "-a", "-f", &format!("--prefix={prefix}")])?;
    let longrun = format!("{}/", crate::longrun::DIR);
    for (rel, bytes, perm) in guard.held() {
        if rel.starts_with(&longrun) {
            continue;
        }
        let path = work.join(rel);
        if let Some(dir) = path.parent() {
            crate::atomic::create_dir_all(dir)?;
        }
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
            std::fs::remove_dir_all(&path).map_err(|e| Error::io(&path, e))?;
        }
        crate::atomic::write_atomic_mode(&path, bytes, perm)?;
    }
    let (exempt, run): (Vec<_>, Vec<_>) = goal
        .criteria
        .iter()
        .filter(|c| c.kind == Kind::Function)
        .cloned()
        .partition(|c| allowed.contains(&c.line));
    let exempt = exempt.iter().map(|c| c.line).collect();
    let only = Goal { criteria: run, ..goal.clone() };
    let results = crate::goal::run_all(&only, &work, timeout, Some(env), stop);
    drop(scratch);
    let pass_without_work = results.iter().filter(|r| r.passed).map(|r| r.line).collect();
    Ok(Probe {
        results,
        pass_without_work,
        exempt,
        wall: started.elapsed(),
        cpu: children_cpu().saturating_sub(cpu_before),
    })
}

/// CPU time (user + system) of this process's waited-for children so far (`getrusage`).
fn children_cpu() -> Duration {
    use nix::sys::resource::{getrusage, UsageWho};
    use nix::sys::time::TimeValLike;
    getrusage(UsageWho::RUSAGE_CHILDREN).map_or(Duration::ZERO, |u| {
        let us = u.user_time().num_microseconds() + u.system_time().num_microseconds();
        Duration::from_micros(us.max(0) as u64)
    })
}
