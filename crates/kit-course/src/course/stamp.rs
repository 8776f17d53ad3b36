//! What makes the course's records trustworthy: an HMAC-SHA256 under the learner's course key,
//! `$XDG_STATE_HOME/kit/course.key` (else `~/.local/state/kit/course.key`), which lives outside
//! every lab. `kit exercise check` creates it on first use (32 random bytes as 64 hex digits,
//! 0600 in a 0700 folder, created atomically and never overwritten, like the handoff key of
//! [`crate::handoff::key`]; both are made by [`crate::keys`]); everything else only reads it.
//!
//! Two records carry such a stamp: a pass in `<lab>/.kit/progress.json` ([`super::lab::Pass`],
//! over the exercise, the sandbox, the time and the digest of the files the learner edited) and
//! the marker `kit exercise start` leaves in a sandbox ([`crate::sandbox`]). A record edited by
//! hand, copied from another exercise or lab, or made under another user's key does not verify,
//! and kit ignores it. As with the handoff key, a process running as the same user can read the
//! key; the stamp stops hand edits and copies, not a learner determined to forge.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::{IoContext, Result};

/// File name of the key inside `<state dir>/kit/`.
pub const FILE: &str = crate::keys::COURSE_FILE;

use crate::keys::course_key_path;

/// The course key, created first when missing.
///
/// Errors: as [`crate::keys::load_course_key`], or the key cannot be created.
pub fn key() -> Result<Vec<u8>> {
    crate::keys::load_or_create(&course_key_path()?)
}

/// SHA-256 of the files `edit` names under `sandbox` (a folder counts as every file below it),
/// as 64 hex digits: each file's relative path and content hash in path order, a missing path as
/// such. Two sandboxes with the same edited files have the same digest.
///
/// Errors: a file that exists but cannot be read.
pub fn edited_digest(sandbox: &Path, edit: &[String]) -> Result<String> {
    let mut h = Sha256::new();
    for rel in edit {
        let p = sandbox.join(rel);
        let mut files = Vec::new();
        if p.is_dir() {
            walk(&p, &mut files)?;
        } else if p.exists() {
            files.push(p.clone());
        } else {
            h.update(format!("{rel}\0missing\n"));
            continue;
        }
        files.sort();
        for f in files {
            let bytes = std::fs::read(&f).at(&f)?;
            let shown = f.strip_prefix(sandbox).unwrap_or(&f).to_string_lossy().into_owned();
            h.update(format!("{shown}\0{}\n", crate::digest::sha256_hex(&bytes)));
        }
    }
    Ok(hex::encode(h.finalize()))
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for e in std::fs::read_dir(dir).at(dir)? {
        let e = e.at(dir)?;
        let p = e.path();
        let ft = e.file_type().at(&p)?;
        if ft.is_dir() {
            walk(&p, out)?;
        } else {
            out.push(p);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_follows_the_edited_files_only() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("longrun")).unwrap();
        std::fs::write(d.path().join("longrun/goal.md"), "a").unwrap();
        std::fs::write(d.path().join("other.txt"), "x").unwrap();
        let edit = vec!["longrun/".to_string(), "answers.txt".to_string()];
        let one = edited_digest(d.path(), &edit).unwrap();
        std::fs::write(d.path().join("other.txt"), "y").unwrap();
        assert_eq!(edited_digest(d.path(), &edit).unwrap(), one);
        std::fs::write(d.path().join("answers.txt"), "b").unwrap();
        assert_ne!(edited_digest(d.path(), &edit).unwrap(), one);
    }
}
