//! Frozen files (DESIGN §5): the tests, fixtures and runner configuration the agent must not
//! change, so that "the criteria pass" keeps meaning "the work is done".
//!
//! - [`manifest`]: `longrun/frozen.toml`, written by `kit freeze`, and the content-addressed
//!   copies in `longrun/.frozen/objects/<sha256>`.
//! - [`freeze`]: the `kit freeze PATH…`, `--check` and `--restore` commands.
//! - [`guard`]: what the loop holds in memory from its start, to detect and revert every cheat of
//!   the catalogue (DESIGN §12) after each agent iteration.
//!
//! This module holds what they share: how a frozen path is inspected on disk and how a frozen
//! folder is walked.

pub mod freeze;
pub mod guard;
pub mod manifest;

use std::fs;
use std::io::ErrorKind;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::error::{IoContext, Result};
use guard::DriftKind;

/// Caches that test runners write next to the tests they run (Python's bytecode, pytest's
/// cache). They are not frozen and not reported as new files, but the [`guard::Guard`] deletes
/// them on every restore: a crafted bytecode file whose source stamp matches a frozen test would
/// otherwise run instead of the test.
pub const CACHE_DIRS: [&str; 2] = ["__pycache__", ".pytest_cache"];

/// What a walk of a frozen folder found, paths relative to the root, `/`-separated, sorted.
#[derive(Debug, Default)]
pub(crate) struct Walk {
    /// Everything that is not a folder: regular files, symbolic links (not followed), others.
    pub entries: Vec<Entry>,
    /// Sub-folders (not the walked folder itself).
    pub dirs: Vec<String>,
}

/// One non-folder entry of a walk.
#[derive(Debug)]
pub(crate) struct Entry {
    /// Path relative to the root.
    pub rel: String,
    /// A symbolic link (to anything).
    pub is_link: bool,
    /// A regular file.
    pub is_file: bool,
}

/// Walk `root/dir` without following links, skipping `.git` folders, `longrun/` and caches.
/// A missing folder, or one that is itself a link, gives an empty walk.
pub(crate) fn walk(root: &Path, dir: &str) -> Result<Walk> {
    let mut w = Walk::default();
    let top = root.join(dir);
    match fs::symlink_metadata(&top) {
        Ok(m) if m.is_dir() => walk_into(root, dir, &mut w)?,
        Ok(_) => {}
        Err(e) if missing(&e) => {}
        Err(e) => return Err(crate::Error::io(&top, e)),
    }
    w.entries.sort_by(|a, b| a.rel.cmp(&b.rel));
    w.dirs.sort();
    Ok(w)
}

fn walk_into(root: &Path, rel_dir: &str, w: &mut Walk) -> Result<()> {
    let abs = root.join(rel_dir);
    for ent in fs::read_dir(&abs).at(&abs)? {
        let ent = ent.at(&abs)?;
        let name = ent.file_name().to_string_lossy().into_owned();
        let rel = if rel_dir.is_empty() { name.clone() } else { format!("{rel_dir}/{name}") };
        let ft = ent.file_type().at(&root.join(&rel))?;
        if ft.is_dir() {
            if name == ".git" || rel == crate::longrun::DIR || CACHE_DIRS.contains(&name.as_str()) {
                continue;
            }
            w.dirs.push(rel.clone());
            walk_into(root, &rel, w)?;
        } else {
            w.entries.push(Entry { rel, is_link: ft.is_symlink(), is_file: ft.is_file() });
        }
    }
    Ok(())
}

/// Which permission bits a frozen file may have.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ModeRule<'a> {
    /// Any (stored copies).
    Any,
    /// Exactly these bits (the guard, which saw the file at capture).
    Exact(u32),
    /// Any bits whose git-style mode is this one (`kit freeze --check`, from the manifest).
    Git(&'a str),
}

impl ModeRule<'_> {
    fn accepts(self, perm: u32) -> bool {
        match self {
            ModeRule::Any => true,
            ModeRule::Exact(p) => p == perm,
            ModeRule::Git(mode) => manifest::git_mode(perm) == mode,
        }
    }
}

/// How the file at `root/rel` differs from what was frozen: content `sha256` and permission bits
/// that `mode` accepts. `None` when it matches.
///
/// A link anywhere on the way (the file or a folder above it) is [`DriftKind::ReplacedByLink`];
/// a missing file (or a file where a folder above it should be) is [`DriftKind::Deleted`];
/// a folder in its place, other content, or content kit cannot read is [`DriftKind::Modified`].
pub(crate) fn inspect(root: &Path, rel: &str, sha256: &str, mode: ModeRule) -> Option<DriftKind> {
    let mut above = root.to_path_buf();
    let parts: Vec<&str> = rel.split('/').collect();
    for part in &parts[..parts.len() - 1] {
        above.push(part);
        match fs::symlink_metadata(&above) {
            Ok(m) if m.file_type().is_symlink() => return Some(DriftKind::ReplacedByLink),
            Ok(m) if m.is_dir() => {}
            _ => return Some(DriftKind::Deleted),
        }
    }
    let path = root.join(rel);
    let meta = match fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(_) => return Some(DriftKind::Deleted),
    };
    if meta.file_type().is_symlink() {
        return Some(DriftKind::ReplacedByLink);
    }
    if !meta.is_file() {
        return Some(DriftKind::Modified);
    }
    match crate::digest::sha256_file(&path) {
        Ok(s) if s == sha256 => {}
        _ => return Some(DriftKind::Modified),
    }
    if !mode.accepts(meta.permissions().mode() & 0o7777) {
        return Some(DriftKind::ModeChanged);
    }
    None
}

fn missing(e: &std::io::Error) -> bool {
    e.kind() == ErrorKind::NotFound || e.kind() == ErrorKind::NotADirectory
}
