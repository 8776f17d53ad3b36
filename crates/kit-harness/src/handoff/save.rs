//! `kit handoff save`: the stamp of the repository as it is now (fingerprints of the state files
//! and of every file changed since the base commit), appended to the summary and journaled.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, IoContext, Result, EXIT_OK};
use crate::longrun::event::{Event, HandoffSaved};
use crate::longrun::journal::Journal;
use crate::longrun::Project;

use super::*;
use crate::digest::sha256_hex;

/// Options of `kit handoff save`.
#[derive(Clone, Debug)]
pub struct SaveOptions {
    /// Where kit runs.
    pub cwd: PathBuf,
    /// The summary piped on stdin (`None` when stdin is a terminal); empty means none.
    pub piped: Option<String>,
    /// Where a project that keeps its own state folder keeps the handoff key.
    pub own_state_dir: key::OwnStateDir,
}

/// `kit handoff save`: write the summary (the piped text when there is one, else the file's
/// current body) and a fresh stamp block to `longrun/handoff.md` atomically; journal
/// `handoff_saved`; print one line with the stamp id.
///
/// Errors: [`Error::Usage`] outside an initialised repository or with no summary;
/// [`Error::Internal`] when git fails (e.g. no commit yet).
pub fn save(opts: &SaveOptions, out: &mut dyn Write) -> Result<u8> {
    let project = Project::discover_initialised(&opts.cwd)?;
    let path = project.handoff();
    let piped = opts.piped.as_deref().unwrap_or("");
    let summary = if piped.trim().is_empty() {
        match std::fs::read_to_string(&path) {
            Ok(text) => parse(&path, &text)
                .map(|h| {
                    if h.trailing.is_empty() {
                        h.summary
                    } else {
                        format!("{}\n\n{}", h.summary, h.trailing)
                    }
                })
                .unwrap_or_else(|_| text.trim().to_string()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(Error::io(&path, e)),
        }
    } else {
        piped.trim().to_string()
    };
    if summary.is_empty() || is_template(&summary) {
        return Err(Error::usage("no handoff summary to save: longrun/handoff.md holds no summary (only the template) and nothing came on stdin")
            .with_hint("write the summary and next action into longrun/handoff.md, or: echo \"…\" | kit handoff save"));
    }
    let key = crate::keys::load_or_create(&key::project_path(&project.root, opts.own_state_dir)?)?;
    let stamp = stamp_now(&project, &key, &summary)?;
    let block = toml::to_string(&stamp).map_err(|e| Error::internal(e.to_string()))?;
    let text = format!("{summary}\n\n{MARKER}\n{FENCE}\n{}```\n", block);
    crate::atomic::write_atomic(&path, text.as_bytes())?;
    Journal::new(project.journal()).append(&Event::HandoffSaved(HandoffSaved {
        stamp: stamp.stamp.clone(),
        commit: stamp.commit.clone(),
        dirty: stamp.dirty,
        files: stamp.files.len() as u64,
        handoff_sha256: sha256_hex(text.as_bytes()),
        summary_sha256: sha256_hex(summary.as_bytes()),
    }))?;
    writeln!(
        out,
        "handoff saved: stamp {} (commit {}{}, {} files fingerprinted) in longrun/handoff.md",
        stamp.stamp,
        &stamp.commit[..stamp.commit.len().min(7)],
        if stamp.dirty { ", dirty" } else { "" },
        stamp.files.len()
    )
    .map_err(|e| Error::io("stdout", e))?;
    Ok(EXIT_OK)
}

/// True when `text` is still the template `kit init` wrote.
pub(super) fn is_template(text: &str) -> bool {
    crate::templates::kit_file("templates/handoff.md").is_some_and(|t| t.trim() == text.trim())
}

fn stamp_now(project: &Project, key: &[u8], summary: &str) -> Result<Stamp> {
    let root = &project.root;
    let commit = git(root, &["rev-parse", "HEAD"])
        .map_err(|e| e.with_hint("commit once before saving a handoff"))?;
    let commit = commit.trim().to_string();
    let dirty = !crate::git::work_tree(root, Some(&commit), &crate::git::info_exclude(root), "")?
        .changed
        .is_empty();
    let base_commit = base_commit(project).unwrap_or_else(|| commit.clone());
    let mut files = BTreeMap::new();
    for path in fingerprinted_paths(project, &base_commit)? {
        files.insert(path.clone(), fingerprint(&root.join(&path))?);
    }
    let mut stamp = Stamp {
        format_version: FORMAT_VERSION,
        stamp: String::new(),
        time: crate::clock::now_rfc3339(),
        commit,
        dirty,
        base_commit,
        files,
    };
    stamp.stamp = stamp.compute_id(key, summary);
    Ok(stamp)
}

/// The goal's base commit: `base_commit` in `longrun/frozen.toml`, when present.
fn base_commit(project: &Project) -> Option<String> {
    let text = std::fs::read_to_string(project.frozen()).ok()?;
    let v: toml::Value = toml::from_str(&text).ok()?;
    v.get("base_commit").and_then(|b| b.as_str()).map(str::to_string).filter(|s| !s.is_empty())
}

/// Repo-relative paths to fingerprint: existing state files, the repository's `info/exclude`
/// (its rules decide which untracked files [`changed_since`] sees, so a rule added after the
/// save must show), then files changed since `base`.
fn fingerprinted_paths(project: &Project, base: &str) -> Result<Vec<String>> {
    let mut out: Vec<String> = FINGERPRINTED_STATE
        .iter()
        .filter(|f| project.dir.join(f).is_file())
        .map(|f| format!("{}/{f}", crate::longrun::DIR))
        .collect();
    out.extend(info_exclude_path(&project.root));
    out.extend(changed_since(project, base)?);
    out.sort();
    out.dedup();
    Ok(out)
}

/// Files whose content differs from `base` (changed, added, deleted; untracked files that no
/// `.gitignore` or `info/exclude` rule ignores), outside `longrun/`, read by content in a
/// private index ([`crate::git::work_tree`]): an `assume-unchanged` or `skip-worktree` bit,
/// `core.ignoreStat` or an fsmonitor hides no edit, and a `.gitignore` written to hide a file
/// is itself a changed file (`info/exclude` is fingerprinted, see [`fingerprinted_paths`]).
pub(super) fn changed_since(project: &Project, base: &str) -> Result<Vec<String>> {
    let root = &project.root;
    // Everything under longrun/ is left out here: its state files are fingerprinted by name
    // (FINGERPRINTED_STATE), handoff.md and journal.jsonl change by design, and the rest is
    // runtime (.hook/, .runs/, .lock, PAUSE) even where an older .gitignore does not say so.
    let w = crate::git::work_tree(
        root,
        Some(base),
        &crate::git::info_exclude(root),
        crate::longrun::DIR,
    )?;
    Ok(w.changed)
}

/// `.git/info/exclude` relative to the root, when git names it inside the repository's folder
/// (a linked worktree keeps it elsewhere: not fingerprinted). Verify checks it only through
/// the stamp's fingerprint, so a stamp saved by an older kit, without one, is not failed on it.
pub(super) fn info_exclude_path(root: &Path) -> Option<String> {
    let rel = crate::git::lines_in(root, &["rev-parse", "--git-path", "info/exclude"])?
        .into_iter()
        .next()?;
    // Recorded even when missing ([`DELETED`]): one written after the save then shows.
    (!rel.starts_with('/')).then_some(rel)
}

/// sha256 hex of a file, or [`DELETED`] when it does not exist.
pub(super) fn fingerprint(path: &Path) -> Result<String> {
    match std::fs::File::open(path) {
        Ok(f) => crate::digest::sha256_reader(f).at(path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(DELETED.to_string()),
        Err(e) => Err(Error::io(path, e)),
    }
}

pub(super) fn git(root: &Path, args: &[&str]) -> Result<String> {
    crate::git::output_in(root, &[], args)
}
