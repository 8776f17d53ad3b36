//! The repository's identity as the loop sees it, through git: HEAD and dirtiness, the working
//! tree's id (for "did the agent change anything"), the checkpoint ref of a run's start, local
//! git config that appeared during a run, and the failing criteria's fingerprint (progress).

use super::*;

/// HEAD's commit id (`none` before the first commit) and whether the tree outside `longrun/`
/// differs from it, by content ([`crate::git::work_tree`]: no index flag, stat shortcut or
/// exclude file written during the run hides a change; `excludes` is `.git/info/exclude` as the
/// loop found it at its start).
pub(super) fn git_head(root: &Path, excludes: &[u8]) -> (String, bool) {
    let head = git_rev(root, "HEAD");
    let dirty = crate::git::work_tree(root, head.as_deref(), excludes, crate::longrun::DIR)
        .is_ok_and(|w| !w.changed.is_empty());
    (head.unwrap_or_else(|| "none".into()), dirty)
}

/// What the failing criteria say, as one sha256: per failing criterion its goal.md line, exit
/// status, timeout, missed expectations and last output lines, with what changes from run to run
/// without meaning anything removed (decimal numbers such as `0.004s`, hex addresses such as
/// `0x7f3a…`). Equal fingerprints: the criteria failed the same way.
pub(super) fn failure_fingerprint(views: &[CriterionView]) -> String {
    use std::sync::LazyLock;
    static NOISE: LazyLock<regex::Regex> =
        LazyLock::new(|| regex::Regex::new(r"\d+\.\d+|0x[0-9a-fA-F]+").expect("a valid pattern"));
    let mut text = String::new();
    for v in views.iter().filter(|v| !v.passed) {
        text.push_str(&format!(
            "{}\u{0}{:?}\u{0}{}\u{0}{}\u{0}{}\u{1}",
            v.line,
            v.exit,
            v.timed_out,
            v.missing.join("\u{0}"),
            NOISE.replace_all(&v.output_tail, "#")
        ));
    }
    crate::digest::sha256_hex(text.as_bytes())
}

/// `git rev-parse --verify REV` in `root`, with kit's safe git settings.
pub(super) fn git_rev(root: &Path, rev: &str) -> Option<String> {
    crate::git::lines_in(root, &["rev-parse", "--verify", "-q", rev])?.into_iter().next()
}

/// The ref where kit keeps the user's uncommitted work from before a loop started.
pub const CHECKPOINT_REF: &str = "refs/kit/checkpoint";

/// Keep the uncommitted state of the tree (outside `longrun/`, tracked and untracked files that
/// are not ignored) as a commit on [`CHECKPOINT_REF`], without touching the tree, the index or
/// HEAD: what an agent's `git stash -u` or `git clean -fdx` later sweeps away can be restored
/// with `git checkout refs/kit/checkpoint -- .`. Returns the commit id; None when git cannot
/// make it (the loop goes on, and says so).
pub(super) fn checkpoint(root: &Path, label: &str, excludes: &[u8]) -> Option<String> {
    let tree = tree_state(root, excludes)?;
    // kit's own identity for its commit, whatever the user's git has.
    let git = |args: &[&str]| {
        let mut all = vec!["-c", "user.name=kit", "-c", "user.email=kit@localhost"];
        all.extend_from_slice(args);
        crate::git::lines_in(root, &all)
    };
    let head = git_rev(root, "HEAD");
    let msg = format!("kit checkpoint: the tree before {label}");
    let mut args = vec!["commit-tree", tree.as_str(), "-m", msg.as_str()];
    if let Some(h) = &head {
        args.extend(["-p", h.as_str()]);
    }
    let commit = git(&args)?.into_iter().next()?;
    git(&["update-ref", "--create-reflog", "-m", &msg, CHECKPOINT_REF, &commit])?;
    Some(commit)
}

/// The id of the working tree outside `longrun/` (which stays as in HEAD) as git would store
/// it, read by content in a private index ([`crate::git::work_tree`]), so equal trees give equal
/// ids whether or not they are committed, and an `assume-unchanged` bit, `core.ignoreStat` or an
/// exclude file written during the run hides nothing. `excludes` is `.git/info/exclude` as the
/// loop found it at its start. None when git cannot say.
pub(super) fn tree_state(root: &Path, excludes: &[u8]) -> Option<String> {
    // `HEAD` itself as the base (read-tree resolves it): no rev-parse first, one git command of
    // six fewer at each of the ~27 identities an exercise-4 check takes. Before the first commit
    // HEAD names nothing and read-tree fails: then the empty tree, as before.
    let id = |base| crate::git::work_tree_id(root, base, excludes, crate::longrun::DIR).ok();
    id(Some("HEAD")).or_else(|| git_rev(root, "HEAD").is_none().then(|| id(None)).flatten())
}
