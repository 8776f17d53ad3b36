//! `longrun/frozen.toml`, the manifest of frozen files (DESIGN §3, §5). Its single writer is
//! `kit freeze`; the goal linter reads its `[files]` keys and `dirs`, the loop's [`Guard`]
//! loads it once at the start of a run.
//!
//! Format, field by field:
//!
//! ```toml
//! format_version = 1                 # checked: a newer file asks for a newer kit
//! base_commit = "<HEAD sha>"         # HEAD when `kit freeze` last ran ("" before any commit)
//! dirs = ["tests"]                   # frozen folders: a new file appearing under one is a cheat
//! [files."tests/test_x.py"]          # one table per frozen file, keyed by its path from the root
//! sha256 = "…"                       # 64 lowercase hex digits of the content
//! size = 1234                        # bytes
//! mode = "100644"                    # git-style: "100644", or "100755" when executable
//! ```
//!
//! Paths are relative to the repository root, `/`-separated, never absolute, never with `..`.
//! The content of each file is stored at `longrun/.frozen/objects/<sha256>`.
//!
//! [`Guard`]: crate::frozen::guard::Guard

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The manifest format this kit reads and writes.
pub const FORMAT_VERSION: u32 = 1;

/// Git's mode string for a regular, non-executable file.
pub const MODE_FILE: &str = "100644";
/// Git's mode string for an executable file.
pub const MODE_EXEC: &str = "100755";

/// Parsed `frozen.toml`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Manifest {
    /// Version of this file's format; kit refuses a newer one.
    pub format_version: u32,
    /// HEAD commit (40 hex digits) when `kit freeze` last ran; empty before the first commit.
    pub base_commit: String,
    /// Frozen folders, relative to the root: a file appearing under one is a cheat.
    pub dirs: Vec<String>,
    /// Frozen files keyed by their path relative to the root.
    pub files: BTreeMap<String, FileEntry>,
}

/// One frozen file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileEntry {
    /// sha256 of the content, 64 lowercase hex digits; also the stored copy's name.
    pub sha256: String,
    /// Size in bytes.
    pub size: u64,
    /// Git-style mode: [`MODE_FILE`] or [`MODE_EXEC`].
    pub mode: String,
}

impl Manifest {
    /// An empty manifest of the current format.
    pub fn new() -> Self {
        Manifest { format_version: FORMAT_VERSION, ..Manifest::default() }
    }

    /// Read `path`; a missing file is an empty manifest (nothing frozen yet).
    ///
    /// Errors: [`Error::Input`] naming `frozen.toml:LINE` for TOML syntax, unknown keys, a bad
    /// sha256 or mode, a path that leaves the repository, or a newer `format_version`.
    pub fn load(path: &Path) -> Result<Manifest> {
        match std::fs::read_to_string(path) {
            Ok(text) => Manifest::parse(path, &text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Manifest::new()),
            Err(e) => Err(Error::io(path, e)),
        }
    }

    /// Parse the text of `frozen.toml`; `path` names it in errors.
    pub fn parse(path: &Path, text: &str) -> Result<Manifest> {
        let m: Manifest = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| crate::longrun::config::line_of(text, s.start));
            Error::input(path, line, e.message().trim().to_string()).with_hint(REFREEZE_HINT)
        })?;
        let bad = |needle: &str, msg: String| {
            Err(Error::input(path, find_line(text, needle), msg).with_hint(REFREEZE_HINT))
        };
        if m.format_version > FORMAT_VERSION {
            return bad(
                "format_version",
                format!(
                    "format_version {} is newer than this kit understands ({FORMAT_VERSION}); update kit",
                    m.format_version
                ),
            );
        }
        for d in &m.dirs {
            if let Err(msg) = check_rel(d) {
                return bad(d, format!("dirs: {msg}"));
            }
        }
        for (p, e) in &m.files {
            if let Err(msg) = check_rel(p) {
                return bad(p, msg);
            }
            if e.sha256.len() != 64 || !e.sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
                return bad(p, format!("{p}: sha256 must be 64 hex digits"));
            }
            if e.mode != MODE_FILE && e.mode != MODE_EXEC {
                return bad(p, format!("{p}: mode must be \"{MODE_FILE}\" or \"{MODE_EXEC}\""));
            }
        }
        Ok(m)
    }

    /// The manifest as `kit freeze` writes it: a header saying what the file is, then the TOML.
    pub fn to_text(&self) -> String {
        let body = toml::to_string(self).unwrap_or_default();
        format!("{HEADER}{body}")
    }

    /// Write the manifest to `path` atomically.
    pub fn save(&self, path: &Path) -> Result<()> {
        crate::atomic::write_atomic(path, self.to_text().as_bytes())
    }

    /// Whether `rel` is a frozen file or lies under a frozen folder.
    pub fn covers(&self, rel: &str) -> bool {
        self.files.contains_key(rel) || self.dirs.iter().any(|d| is_under(rel, d))
    }
}

/// Git-style mode of a file from its Unix permission bits: executable if any `x` bit is set.
pub fn git_mode(perm: u32) -> &'static str {
    if perm & 0o111 != 0 {
        MODE_EXEC
    } else {
        MODE_FILE
    }
}

/// Permission bits to give a restored file whose git-style mode is `mode`.
pub fn default_perm(mode: &str) -> u32 {
    if mode == MODE_EXEC {
        0o755
    } else {
        0o644
    }
}

/// Whether `rel` is `dir` or lies beneath it (both `/`-separated, relative).
pub fn is_under(rel: &str, dir: &str) -> bool {
    rel.strip_prefix(dir).is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

fn check_rel(p: &str) -> std::result::Result<(), String> {
    if p.is_empty() || p.starts_with('/') {
        return Err(format!("`{p}` is not a path relative to the repository root"));
    }
    if p.split('/').any(|c| c.is_empty() || c == "." || c == "..") {
        return Err(format!("`{p}` has an empty, `.` or `..` component"));
    }
    if p == crate::longrun::DIR || is_under(p, crate::longrun::DIR) || is_under(p, ".git") {
        return Err(format!("`{p}` is inside longrun/ or .git/, which kit protects itself"));
    }
    Ok(())
}

/// 1-based line of the first line containing `needle` (quoted as TOML writes keys).
fn find_line(text: &str, needle: &str) -> Option<usize> {
    text.lines().position(|l| l.contains(needle)).map(|i| i + 1)
}

const REFREEZE_HINT: &str = "kit freeze PATH… rewrites the manifest (kit freeze --check to see it)";

const HEADER: &str = "\
# longrun/frozen.toml: the frozen files, written by `kit freeze`. Do not edit by hand.
# The agent may not change a frozen file; during `kit loop` any drift is restored from the copy in
# longrun/.frozen/objects/<sha256> and journaled as a cheat. `kit freeze --check` lists drift.
#   base_commit  HEAD when `kit freeze` last ran
#   dirs         frozen folders: a new file appearing under one is a cheat
#   [files.\"P\"]  sha256 of the content, size in bytes, git-style mode (100755 = executable)
";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_its_text() {
        let mut m = Manifest::new();
        m.base_commit = "a".repeat(40);
        m.dirs.push("tests".into());
        m.files.insert(
            "tests/test_x.py".into(),
            FileEntry { sha256: "b".repeat(64), size: 12, mode: MODE_EXEC.into() },
        );
        let text = m.to_text();
        assert!(text.contains("[files.\"tests/test_x.py\"]"), "{text}");
        assert!(text.contains("dirs = [\"tests\"]"), "{text}");
        assert_eq!(Manifest::parse(Path::new("frozen.toml"), &text).unwrap(), m);
    }

    #[test]
    fn bad_manifests_name_the_line() {
        let sha = "c".repeat(64);
        let cases = [
            ("format_version = 1\nbase_commit = 3\n".to_string(), 2),
            ("format_version = 7\n".to_string(), 1),
            ("dirs = [\"../up\"]\n".to_string(), 1),
            (format!("[files.\"a.py\"]\nsha256 = \"{sha}\"\nsize = 1\nmode = \"120000\"\n"), 1),
            (
                format!(
                    "\n[files.\"/etc/passwd\"]\nsha256 = \"{sha}\"\nsize = 1\nmode = \"100644\"\n"
                ),
                2,
            ),
            ("[files.\"a.py\"]\nsha256 = \"xyz\"\nsize = 1\nmode = \"100644\"\n".to_string(), 1),
            ("[files.\"a.py\"]\nsha = \"x\"\n".to_string(), 2),
        ];
        for (text, line) in cases {
            match Manifest::parse(Path::new("frozen.toml"), &text) {
                Err(Error::Input { line: Some(l), .. }) => assert_eq!(l, line, "{text}"),
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn the_init_template_is_an_empty_manifest() {
        let text = crate::templates::kit_file("templates/frozen.toml").unwrap();
        let m = Manifest::parse(Path::new("frozen.toml"), text).unwrap();
        assert_eq!(m, Manifest::new());
    }

    #[test]
    fn modes_and_paths() {
        assert_eq!(git_mode(0o644), MODE_FILE);
        assert_eq!(git_mode(0o744), MODE_EXEC);
        assert_eq!(git_mode(0o654), MODE_EXEC);
        assert!(is_under("tests/a.py", "tests"));
        assert!(is_under("tests", "tests"));
        assert!(!is_under("tests2/a.py", "tests"));
    }
}
