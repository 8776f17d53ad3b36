//! The course's files embedded in the binary (DESIGN §2): `lessons/`, `exercises/`,
//! `tests/cases/` and the transcript fixtures, so an installed `kit` needs no checkout; and the
//! one writer of embedded trees to disk. The harness's own `kit/` is [`crate::templates`]'s, the
//! fake agent's scenarios [`crate::fake_agent`]'s.

use include_dir::{include_dir, Dir};

/// `lessons/`.
pub static LESSONS: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/../../lessons");
/// `exercises/`.
pub static EXERCISES: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/../../exercises");
/// `tests/cases/`: the kit test catalogue.
pub static CASES: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/../../tests/cases");

/// `tests/fixtures/transcripts/`: real transcripts for the measure and recall goldens.
pub static TRANSCRIPT_FIXTURES: Dir<'static> =
    include_dir!("$CARGO_MANIFEST_DIR/../../tests/fixtures/transcripts");

/// Write the transcript fixtures into `home`: `claude/` as `home/.claude`, `codex/` as
/// `home/.codex` (the golden sandbox kind `transcripts`).
///
/// Errors: a file cannot be written ([`crate::Error::Io`]).
pub fn write_transcript_fixtures(home: &std::path::Path) -> crate::Result<()> {
    for (src, dst) in [("claude", ".claude"), ("codex", ".codex")] {
        if let Some(dir) = TRANSCRIPT_FIXTURES.get_dir(src) {
            write_tree(dir, &home.join(dst))?;
        }
    }
    Ok(())
}

/// Every file under the embedded folder `dir` (recursively) as `(path relative to dir, bytes)`,
/// sorted by path.
pub fn files(dir: &'static Dir<'static>) -> Vec<(String, &'static [u8])> {
    let mut out = Vec::new();
    let mut stack = vec![dir];
    while let Some(d) = stack.pop() {
        for e in d.entries() {
            match e {
                include_dir::DirEntry::Dir(sub) => stack.push(sub),
                include_dir::DirEntry::File(f) => {
                    let rel = f.path().strip_prefix(dir.path()).unwrap_or(f.path());
                    out.push((rel.to_string_lossy().into_owned(), f.contents()));
                }
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Write `files` (relative paths, as [`files`] lists them) under `dest`, creating folders and
/// replacing files already there. The one writer of embedded trees to disk: exercises' `start/`
/// and `solution/`, the rehearsal project, the transcript fixtures.
///
/// Errors: a folder or file cannot be written ([`crate::Error::Io`] naming it).
pub fn write_files(dest: &std::path::Path, files: &[(String, &'static [u8])]) -> crate::Result<()> {
    use crate::error::IoContext;
    for (rel, bytes) in files {
        let p = dest.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).at(parent)?;
        }
        std::fs::write(&p, bytes).at(&p)?;
    }
    Ok(())
}

/// Write the embedded folder `dir` under `dest` ([`files`] then [`write_files`]); returns the
/// relative paths written, sorted.
///
/// Errors: as [`write_files`].
pub fn write_tree(
    dir: &'static Dir<'static>,
    dest: &std::path::Path,
) -> crate::Result<Vec<String>> {
    let list = files(dir);
    write_files(dest, &list)?;
    Ok(list.into_iter().map(|(rel, _)| rel).collect())
}
