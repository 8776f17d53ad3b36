//! The learner's lab and its progress file. The lab is `$KIT_LAB` (a relative one is looked for
//! from the current folder upwards), else the nearest folder above
//! the current one that holds `.kit/progress.json`, else `./kit-lab`; exercise N lives in
//! `<lab>/NN-slug/` unless `kit exercise start N --dir DIR` put it elsewhere.
//!
//! `<lab>/.kit/progress.json` is written by [`Progress::save`] only (one writer, atomic):
//!
//! ```json
//! {
//!   "schema": "kit.progress/1",
//!   "exercises": {
//!     "01-init": { "dir": "/home/me/kit-lab/01-init", "started": "2026-10-01T09:00:00Z",
//!                  "passed": "2026-10-01T09:10:00Z", "hints_seen": 1 }
//!   }
//! }
//! ```
//!
//! `started`/`passed` are RFC 3339 times (kit's clock), `hints_seen` the highest hint level shown.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The progress file's schema id.
pub const SCHEMA: &str = "kit.progress/1";

/// The lab folder for a command run in `cwd`.
pub fn lab_dir(cwd: &Path) -> PathBuf {
    if let Some(v) = std::env::var_os("KIT_LAB").filter(|v| !v.is_empty()) {
        // A relative `KIT_LAB` holds from any folder below the one it was made in.
        return cwd
            .ancestors()
            .map(|a| a.join(&v))
            .find(|lab| lab.join(".kit/progress.json").is_file())
            .unwrap_or_else(|| cwd.join(&v));
    }
    if let Some(found) = cwd.ancestors().find(|a| a.join(".kit/progress.json").is_file()) {
        return found.to_path_buf();
    }
    cwd.join("kit-lab")
}

/// What kit knows about one exercise in this lab.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct Entry {
    /// Where its sandbox is.
    pub dir: Option<PathBuf>,
    /// When `kit exercise start` laid it out.
    pub started: Option<String>,
    /// When `kit exercise check` first passed.
    pub passed: Option<String>,
    /// The highest hint level shown.
    pub hints_seen: usize,
}

/// `<lab>/.kit/progress.json`.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct Progress {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// Keyed by the exercise's folder name, `NN-slug`.
    #[serde(default)]
    pub exercises: BTreeMap<String, Entry>,
}

impl Default for Progress {
    fn default() -> Self {
        Progress { schema: SCHEMA.into(), exercises: BTreeMap::new() }
    }
}

/// Where the progress file of `lab` is.
pub fn progress_path(lab: &Path) -> PathBuf {
    lab.join(".kit").join("progress.json")
}

impl Progress {
    /// Read the lab's progress (empty when the file does not exist).
    ///
    /// Errors: unreadable or malformed file, or another schema ([`Error::Input`]).
    pub fn load(lab: &Path) -> Result<Progress> {
        let path = progress_path(lab);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Progress::default()),
            Err(e) => return Err(Error::io(&path, e)),
        };
        let p: Progress = serde_json::from_str(&text)
            .map_err(|e| Error::input(&path, Some(e.line()), e.to_string()))?;
        if p.schema != SCHEMA {
            return Err(Error::input(
                &path,
                None,
                format!("schema `{}`, this kit reads `{SCHEMA}`", p.schema),
            )
            .with_hint("update kit"));
        }
        Ok(p)
    }

    /// Write the progress atomically.
    pub fn save(&self, lab: &Path) -> Result<()> {
        let path = progress_path(lab);
        crate::atomic::create_dir_all(&lab.join(".kit"))?;
        let mut text = serde_json::to_string_pretty(self)
            .map_err(|e| Error::internal(format!("progress JSON: {e}")))?;
        text.push('\n');
        crate::atomic::write_atomic(&path, text.as_bytes())
    }

    /// The entry of exercise `slug`, created empty if missing.
    pub fn entry(&mut self, slug: &str) -> &mut Entry {
        self.exercises.entry(slug.to_string()).or_default()
    }

    /// Whether exercise `slug` has passed.
    pub fn passed(&self, slug: &str) -> bool {
        self.exercises.get(slug).is_some_and(|e| e.passed.is_some())
    }

    /// `not started`, `started` or `passed`.
    pub fn status(&self, slug: &str) -> &'static str {
        match self.exercises.get(slug) {
            Some(e) if e.passed.is_some() => "passed",
            Some(e) if e.started.is_some() => "started",
            _ => "not started",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_round_trips_and_names_its_status() {
        let d = tempfile::tempdir().unwrap();
        let mut p = Progress::load(d.path()).unwrap();
        assert_eq!(p.status("01-init"), "not started");
        p.entry("01-init").started = Some("2026-10-01T09:00:00Z".into());
        p.save(d.path()).unwrap();
        let mut p = Progress::load(d.path()).unwrap();
        assert_eq!(p.status("01-init"), "started");
        p.entry("01-init").passed = Some("2026-10-01T09:10:00Z".into());
        assert_eq!(p.status("01-init"), "passed");
        std::fs::write(progress_path(d.path()), r#"{"schema":"kit.progress/9"}"#).unwrap();
        assert!(matches!(Progress::load(d.path()), Err(Error::Input { .. })));
    }
}
