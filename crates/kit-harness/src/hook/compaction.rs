//! The compaction point the hook's bands are percentages of: how many tokens of context Claude
//! Code lets a session reach before it compacts.
//!
//! The rule is the transcript engine's, [`crate::transcript::point::resolve`] (per model and
//! window, as Claude Code 2.1.197 does; formats/real-clis.md §4), so the hook and `kit measure`
//! agree on every percentage. This module gathers its inputs as the hook sees them: config.toml's
//! `[context] compaction_point`, the model (SessionStart's `model`, else the one remembered for
//! the session, else the transcript's bare `message.model`), the largest context seen, the
//! `CLAUDE_*` variables, and the `autoCompactWindow` / `autoCompactEnabled` settings of Claude
//! Code's settings files (`<config root>/settings.json`, `<project>/.claude/settings.json`,
//! `<project>/.claude/settings.local.json`; the config root from `CLAUDE_CONFIG_DIR` or `HOME`
//! through the hook's own environment, so a rehearsal with no variables reads none).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::transcript::point::{self, PointEnv, PointInputs};
pub(crate) use crate::transcript::point::{Point, Trigger};

/// The settings files Claude Code reads for a project at `project` (merge order).
pub(crate) fn settings_files(var: &dyn Fn(&str) -> Option<String>, project: &Path) -> Vec<PathBuf> {
    let os = |k: &str| var(k).map(OsString::from);
    let mut files: Vec<PathBuf> = crate::transcript::discover::claude_roots_in(&os)
        .ok()
        .and_then(|r| r.into_iter().next())
        .map(|r| vec![r.join("settings.json")])
        .unwrap_or_default();
    files.push(project.join(".claude/settings.json"));
    files.push(project.join(".claude/settings.local.json"));
    files
}

/// Resolve the compaction point. `configured` is config.toml's value (0 = derive), `var` the
/// hook's environment, `model` the best-known model, `observed` the largest context seen
/// (tokens), `project` the folder whose `.claude/` settings apply (None: user settings only).
pub(crate) fn resolve(
    configured: u64,
    var: &dyn Fn(&str) -> Option<String>,
    model: Option<&str>,
    observed: u64,
    project: Option<&Path>,
) -> Point {
    let (setting_window, setting_disabled) = if configured > 0 {
        (None, false)
    } else {
        let files = match project {
            Some(p) => settings_files(var, p),
            None => settings_files(var, Path::new("/nonexistent-kit-project")),
        };
        point::settings(&files)
    };
    point::resolve(&PointInputs {
        configured,
        model: model.map(str::to_string),
        observed,
        env: PointEnv::from_vars(var),
        setting_window,
        setting_disabled,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_of_the_project_move_the_point() {
        let d = tempfile::tempdir().unwrap();
        let home = d.path().join("home");
        std::fs::create_dir_all(home.join(".claude")).unwrap();
        std::fs::create_dir_all(d.path().join("p/.claude")).unwrap();
        std::fs::write(home.join(".claude/settings.json"), r#"{"autoCompactWindow":300000}"#)
            .unwrap();
        let h = home.to_string_lossy().to_string();
        let var = move |k: &str| (k == "HOME").then(|| h.clone());
        let p = d.path().join("p");
        let got = resolve(0, &var, Some("claude-opus-4-8[1m]"), 0, Some(&p));
        assert_eq!((got.tokens, got.trigger), (267_000, Trigger::Proactive));
        std::fs::write(p.join(".claude/settings.local.json"), r#"{"autoCompactEnabled":false}"#)
            .unwrap();
        let got = resolve(0, &var, Some("claude-opus-4-8[1m]"), 0, Some(&p));
        assert_eq!((got.tokens, got.trigger), (1_000_000, Trigger::Reactive));
        let none = |_: &str| None;
        assert_eq!(resolve(0, &none, Some("claude-opus-4-6"), 0, None).tokens, 167_000);
        assert_eq!(resolve(30_000, &none, Some("claude-opus-4-6"), 0, None).tokens, 30_000);
    }
}
