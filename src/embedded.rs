//! Files embedded in the binary (DESIGN §2): `kit/` (templates, prompt, hook snippets, the
//! rehearsal project, prices), `lessons/`, `exercises/`, `fake-agent/scenarios/` and
//! `tests/cases/`, so an installed `kit` needs no checkout.

use include_dir::{include_dir, Dir};

/// `kit/`: templates and the rehearsal project.
pub static KIT: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/kit");
/// `lessons/`.
pub static LESSONS: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/lessons");
/// `exercises/`.
pub static EXERCISES: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/exercises");
/// `fake-agent/scenarios/`.
pub static SCENARIOS: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/fake-agent/scenarios");
/// Names of the embedded fake-agent scenarios (`fake-agent/scenarios/NAME.toml`), sorted.
pub fn scenario_names() -> Vec<String> {
    let mut v: Vec<String> = SCENARIOS
        .files()
        .filter_map(|f| {
            let p = f.path();
            (p.extension()? == "toml").then(|| p.file_stem().map(|s| s.to_string_lossy().into()))?
        })
        .collect();
    v.sort();
    v
}

/// `tests/cases/`: the kit test catalogue.
pub static CASES: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/tests/cases");

/// The text of an embedded file under `kit/`, e.g. `templates/goal.md`.
pub fn kit_file(path: &str) -> Option<&'static str> {
    KIT.get_file(path).and_then(|f| f.contents_utf8())
}

/// `tests/fixtures/transcripts/`: real transcripts for the measure and recall goldens.
pub static TRANSCRIPT_FIXTURES: Dir<'static> =
    include_dir!("$CARGO_MANIFEST_DIR/tests/fixtures/transcripts");

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
