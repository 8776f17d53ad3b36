//! The git side of a race: the lanes' worktrees and branches under a folder kit owns inside the
//! repository's git folder (so the user's work tree sees nothing of them), the winner's work as a
//! commit on its branch, and the merge into the user's branch (never a force).

use std::path::{Path, PathBuf};

use crate::error::{Error, IoContext, Result};

/// `git ARGS` in `dir` with kit's safe settings ([`crate::git::output_in`]); its stdout trimmed.
///
/// Errors: [`Error::Internal`] naming the command and git's stderr.
pub(super) fn git(dir: &Path, args: &[&str]) -> Result<String> {
    crate::git::output_in(dir, &[], args).map(|s| s.trim().to_string())
}

/// `git ARGS` in `dir`, None when it fails.
pub(super) fn git_opt(dir: &Path, args: &[&str]) -> Option<String> {
    git(dir, args).ok().filter(|s| !s.is_empty())
}

/// The paths outside `longrun/` that differ from HEAD in the work tree at `root` (changed,
/// staged, deleted or untracked and not ignored), sorted: what a race from HEAD leaves out.
pub(super) fn uncommitted(root: &Path) -> Vec<String> {
    let spec = [".", ":(exclude)longrun"];
    let mut paths: Vec<String> = Vec::new();
    for args in [
        &["diff", "--name-only", "--no-renames", "HEAD", "--"][..],
        &["ls-files", "--others", "--exclude-standard", "--"][..],
    ] {
        let all: Vec<&str> = args.iter().chain(spec.iter()).copied().collect();
        if let Some(out) = git_opt(root, &all) {
            paths.extend(out.lines().map(str::to_string));
        }
    }
    paths.sort();
    paths.dedup();
    paths
}

/// The folder kit keeps the races of the repository at `root` in: `<git common dir>/kit/race`.
///
/// Errors: [`Error::Internal`] when git cannot name the git folder.
pub fn races_dir(root: &Path) -> Result<PathBuf> {
    let common = git(root, &["rev-parse", "--git-common-dir"])?;
    let common = root.join(common);
    let common = std::fs::canonicalize(&common).unwrap_or(common);
    Ok(common.join("kit").join("race"))
}

/// The branch of lane `lane` of race `run`.
pub fn lane_branch(run: u64, lane: u32) -> String {
    format!("kit/race/{run}/{lane}")
}

/// Add the worktree of a lane at `path` on a new branch `branch` from `base`.
///
/// Errors: [`Error::Usage`] when the branch or the folder is left from an earlier race (with
/// `kit race clean` as the next step); [`Error::Internal`] when git fails otherwise.
pub(super) fn add_worktree(root: &Path, path: &Path, branch: &str, base: &str) -> Result<()> {
    if git_opt(root, &["rev-parse", "--verify", "-q", &format!("refs/heads/{branch}")]).is_some()
        || path.exists()
    {
        return Err(Error::usage(format!(
            "branch {branch} or folder {} is left from an earlier race",
            path.display()
        ))
        .with_hint("kit race clean"));
    }
    let p = path.to_string_lossy();
    git(root, &["worktree", "add", "-q", "-b", branch, &p, base]).map(|_| ())
}

/// Copy the user's `longrun/` state into a lane's: every file but the journal, the lock, the
/// runs folder, `PAUSE` and the inbox (a lane starts its own run; what its journal holds is
/// its own; those the checkout brought are removed). Files committed in `longrun/` are already
/// there and are overwritten by the user's current ones, so every lane works to the goal the
/// user has now.
///
/// Errors: [`Error::Io`] naming the file that could not be copied.
pub(super) fn copy_longrun(from: &Path, to: &Path) -> Result<()> {
    const SKIP: [&str; 6] = ["journal.jsonl", ".lock", ".runs", "PAUSE", "inbox.md", ".status"];
    fn walk(from: &Path, to: &Path, top: bool) -> Result<()> {
        crate::atomic::create_dir_all(to)?;
        for e in std::fs::read_dir(from).at(from)? {
            let e = e.at(from)?;
            let name = e.file_name();
            if top && SKIP.iter().any(|s| name == *s) {
                continue;
            }
            let (src, dst) = (e.path(), to.join(&name));
            let kind = e.file_type().at(&src)?;
            if kind.is_dir() {
                walk(&src, &dst, false)?;
            } else if kind.is_file() {
                std::fs::copy(&src, &dst).at(&dst)?;
            }
        }
        Ok(())
    }
    walk(from, to, true)?;
    // What the checkout brought of them, when `longrun/` is committed: the lane's run starts
    // with a journal of its own (the user's runs are not the lane's to continue).
    for name in SKIP {
        let p = to.join(name);
        let gone = if p.is_dir() { std::fs::remove_dir_all(&p) } else { std::fs::remove_file(&p) };
        match gone {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(Error::io(&p, e)),
            _ => {}
        }
    }
    Ok(())
}

/// Commit what the lane at `path` changed outside `longrun/` (the tree its criteria passed on)
/// on its branch, with the user's git identity, or kit's when none is configured. Returns the
/// branch's commit (HEAD when there was nothing to commit: the agent committed its own work).
///
/// Errors: [`Error::Internal`] when git fails.
pub(super) fn commit_work(path: &Path, message: &str) -> Result<String> {
    git(path, &["add", "-A", "--", ".", ":(exclude)longrun"])?;
    let staged = crate::git::command_in(path)
        .args(["diff", "--cached", "--quiet"])
        .status()
        .map_err(|e| Error::internal(format!("cannot run git: {e}")))?;
    if !staged.success() {
        let mut args: Vec<&str> = Vec::new();
        if git_opt(path, &["var", "GIT_AUTHOR_IDENT"]).is_none()
            || git_opt(path, &["var", "GIT_COMMITTER_IDENT"]).is_none()
        {
            args.extend(["-c", "user.name=kit", "-c", "user.email=kit@localhost"]);
        }
        args.extend(["commit", "-q", "--no-verify", "-m", message]);
        git(path, &args)?;
    }
    git(path, &["rev-parse", "HEAD"])
}

/// What merging the winner did.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Merge {
    /// Merged: `fast-forward` or `merge`, and the user's branch's new commit.
    Done(&'static str, String),
    /// Not merged, and why in words.
    Refused(String),
}

/// Merge `winner` (a branch) into the user's branch `branch` in the work tree at `root`, only
/// when HEAD is still on `branch` at `base` (where the race began): a fast-forward, or a merge
/// commit when the lane branch does not descend from HEAD. Never a force: git itself refuses to
/// overwrite uncommitted changes, and that refusal is reported.
pub(super) fn merge(root: &Path, branch: Option<&str>, base: &str, winner: &str) -> Merge {
    let Some(branch) = branch else {
        return Merge::Refused("HEAD was detached when the race began".into());
    };
    let now_on = git_opt(root, &["symbolic-ref", "--short", "-q", "HEAD"]);
    if now_on.as_deref() != Some(branch) {
        return Merge::Refused(format!(
            "HEAD is no longer on {branch} ({})",
            now_on.map_or("detached".to_string(), |b| format!("on {b}"))
        ));
    }
    let head = git_opt(root, &["rev-parse", "HEAD"]).unwrap_or_default();
    if head != base {
        return Merge::Refused(format!(
            "{branch} moved since the race began ({} → {})",
            short(base),
            short(&head)
        ));
    }
    let ff = crate::git::command_in(root)
        .args(["merge-base", "--is-ancestor", "HEAD", winner])
        .status()
        .is_ok_and(|s| s.success());
    let how = if ff { "--ff-only" } else { "--no-ff" };
    let msg = format!("kit race: merge {winner}");
    match git(root, &["merge", "-q", how, "-m", &msg, winner]) {
        Ok(_) => Merge::Done(
            if ff { "fast-forward" } else { "merge" },
            git_opt(root, &["rev-parse", "HEAD"]).unwrap_or_default(),
        ),
        Err(e) => Merge::Refused(format!("git refused the merge: {e}")),
    }
}

/// The first 12 hex digits of a commit id.
pub(super) fn short(id: &str) -> &str {
    &id[..id.len().min(12)]
}

/// Remove a lane's worktree and branch (`kit race clean`).
///
/// Errors: [`Error::Internal`] when git fails.
pub(super) fn remove_lane(root: &Path, path: &Path, branch: &str) -> Result<()> {
    if path.exists() {
        git(root, &["worktree", "remove", "--force", &path.to_string_lossy()])?;
    }
    git(root, &["worktree", "prune"])?;
    if git_opt(root, &["rev-parse", "--verify", "-q", &format!("refs/heads/{branch}")]).is_some() {
        git(root, &["branch", "-q", "-D", branch])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(dir: &Path, args: &[&str]) -> String {
        let mut all = vec!["-c", "user.name=t", "-c", "user.email=t@example.com"];
        all.extend_from_slice(args);
        git(dir, &all).unwrap()
    }

    /// A repository on `main` with one commit, and a lane branch with one more.
    fn repo() -> (tempfile::TempDir, String) {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        sh(root, &["init", "-q", "-b", "main"]);
        std::fs::write(root.join("a.txt"), "a\n").unwrap();
        sh(root, &["add", "-A"]);
        sh(root, &["commit", "-q", "-m", "base"]);
        let base = sh(root, &["rev-parse", "HEAD"]);
        sh(root, &["branch", "kit/race/1/1"]);
        sh(root, &["checkout", "-q", "kit/race/1/1"]);
        std::fs::write(root.join("b.txt"), "b\n").unwrap();
        sh(root, &["add", "-A"]);
        sh(root, &["commit", "-q", "-m", "lane work"]);
        sh(root, &["checkout", "-q", "main"]);
        (d, base)
    }

    #[test]
    fn an_unmoved_branch_is_fast_forwarded() {
        let (d, base) = repo();
        let got = merge(d.path(), Some("main"), &base, "kit/race/1/1");
        let lane = sh(d.path(), &["rev-parse", "kit/race/1/1"]);
        assert_eq!(got, Merge::Done("fast-forward", lane));
        assert!(d.path().join("b.txt").is_file());
    }

    #[test]
    fn a_moved_branch_another_branch_or_a_detached_head_is_never_merged() {
        let (d, base) = repo();
        let root = d.path();
        std::fs::write(root.join("c.txt"), "c\n").unwrap();
        sh(root, &["add", "-A"]);
        sh(root, &["commit", "-q", "-m", "the user went on"]);
        let head = sh(root, &["rev-parse", "HEAD"]);
        let Merge::Refused(why) = merge(root, Some("main"), &base, "kit/race/1/1") else {
            panic!("merged a moved branch")
        };
        assert!(why.starts_with("main moved since the race began"), "{why}");
        assert_eq!(sh(root, &["rev-parse", "HEAD"]), head, "HEAD changed");
        assert!(!root.join("b.txt").exists());
        let Merge::Refused(why) = merge(root, None, &base, "kit/race/1/1") else { panic!() };
        assert!(why.contains("detached"), "{why}");
        sh(root, &["checkout", "-q", "-b", "other", &base]);
        let Merge::Refused(why) = merge(root, Some("main"), &base, "kit/race/1/1") else {
            panic!()
        };
        assert_eq!(why, "HEAD is no longer on main (on other)");
    }
}
