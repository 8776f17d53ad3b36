//! Helpers shared by the integration tests.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The `kit` binary under test.
pub fn kit_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_kit"))
}

/// The `fake-agent` binary under test.
pub fn fake_agent_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_fake-agent"))
}

/// A `kit` command running in `dir` with the deterministic golden environment
/// (fake clock, NO_COLOR, HOME and CLAUDE_CONFIG_DIR inside `dir/.home`).
pub fn kit(dir: &Path) -> Command {
    let bins = kit_course::golden::Binaries { kit: kit_bin(), fake_agent: Some(fake_agent_bin()) };
    let mut c = Command::new(kit_bin());
    c.current_dir(dir).envs(kit_course::golden::golden_env(dir, &bins));
    c
}

/// A fresh git repository with one empty commit, in a temporary folder.
pub fn git_repo() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let bins = kit_course::golden::Binaries { kit: kit_bin(), fake_agent: Some(fake_agent_bin()) };
    kit_core::git::init_sandbox(d.path(), &kit_course::golden::golden_env(d.path(), &bins))
        .unwrap();
    d
}

/// A handoff saved in the git project `root`: everything committed, `summary` written to
/// `longrun/handoff.md`, then `kit handoff save`, which must succeed; returns what it printed
/// (the line with its stamp), as a session would see it.
pub fn save_handoff(root: &Path, summary: &str) -> String {
    crate::handoff::commit_all(root);
    std::fs::write(root.join("longrun/handoff.md"), summary).unwrap();
    let saved = kit(root).args(["handoff", "save"]).output().unwrap();
    let line = String::from_utf8_lossy(&saved.stdout).into_owned();
    assert!(saved.status.success(), "{line}{}", String::from_utf8_lossy(&saved.stderr));
    line
}

/// The samples folder: `$KIT_SAMPLES` (a folder laid out the same way, for extra data), else
/// the copies in the repository, `tests/fixtures/samples/{claude-code,codex}` (each with its
/// `SOURCES.md`), so a fresh clone tests on its own.
pub fn samples() -> PathBuf {
    if let Some(p) = std::env::var_os("KIT_SAMPLES") {
        return PathBuf::from(p);
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/samples")
}

pub fn sample(rel: &str) -> PathBuf {
    samples().join(rel)
}

/// The Claude Code samples of [`samples`].
pub fn claude_samples() -> PathBuf {
    samples().join("claude-code")
}
