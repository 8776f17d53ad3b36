//! Per-session hook state: which bands already fired, whether the Stop was already blocked, and
//! which handoff stamp this session was seen to save. The hook is a fresh process on every
//! event, so "once per band per session" needs a file: `longrun/.hook/<session>.json`
//! (gitignored runtime state, written atomically, only when it changes).
//!
//! Format (`format_version` 1):
//!
//! ```json
//! {"format_version":1,"session":"c45af7b1-…","fired":[50,70],"stop_blocked":false,
//!  "handoff_stamp":"3f9a1c0e7b2d","model":"claude-opus-4-8[1m]",
//!  "point":{"tokens":1000000,"window":1000000,"trigger":"reactive","source":"…"},
//!  "point_model":"claude-opus-4-8[1m]","peak":151000}
//! ```
//!
//! - `fired`: bands (percent of the compaction point) that fired since the last compaction;
//!   a band is re-armed as soon as the context is seen below it (only a compaction or a rewind
//!   shrinks the context of a session).
//! - `stop_blocked`: the Stop was blocked once at the wrap-up band; never again until re-armed.
//! - `handoff_stamp`: the stamp id a `kit handoff save` tool call of this session printed.
//! - `model`: the session's model as named with its window suffix (`claude-opus-4-8[1m]`), when
//!   SessionStart stdin (or [`remember_model`], for a caller that saw `system/init`) gave it;
//!   transcript lines only carry the bare id.
//! - `point`, `point_model`, `peak`: the compaction point resolved for this session
//!   ([`crate::transcript::point`]), the model and largest context it was resolved from; it is
//!   resolved again only when the model changes or the context passes its window.
//!
//! A missing, unreadable or foreign file reads as a fresh state: the worst case is one band
//! message repeated, never a broken session.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::Result;

/// The state format this kit writes.
pub(crate) const FORMAT_VERSION: u32 = 1;

/// One session's hook state.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct HookState {
    /// Format of this file.
    pub format_version: u32,
    /// The Claude Code session id.
    pub session: String,
    /// Bands (percent) that fired since the last compaction, ascending.
    pub fired: Vec<u8>,
    /// True once the Stop was blocked at the wrap-up band.
    pub stop_blocked: bool,
    /// Stamp id printed by a `kit handoff save` tool call in this session.
    pub handoff_stamp: Option<String>,
    /// The model with its window suffix, when an event named it.
    pub model: Option<String>,
    /// The compaction point resolved for this session.
    pub point: Option<crate::transcript::point::Point>,
    /// The model `point` was resolved for.
    pub point_model: Option<String>,
    /// The largest context seen (tokens).
    pub peak: u64,
}

/// Remember the window-suffixed model of `session` (e.g. from a `system/init` event) so the
/// hook resolves the compaction point for it. Errors: the state cannot be written.
pub(crate) fn remember_model(longrun: &Path, session: &str, model: &str) -> Result<()> {
    let mut st = HookState::load(longrun, session);
    if st.model.as_deref() == Some(model) {
        return Ok(());
    }
    st.model = Some(model.to_string());
    st.save(longrun)
}

/// `longrun/.hook/`, the folder of the per-session files.
pub(crate) fn dir(longrun: &Path) -> PathBuf {
    longrun.join(".hook")
}

/// The state file of `session`. Characters outside `[A-Za-z0-9_-]` become `_`, so a hostile
/// session id cannot name a path outside the folder.
pub(crate) fn path(longrun: &Path, session: &str) -> PathBuf {
    let safe: String = session
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
        .collect();
    dir(longrun).join(format!("{safe}.json"))
}

impl HookState {
    /// Load the state of `session`, or a fresh one.
    pub(crate) fn load(longrun: &Path, session: &str) -> HookState {
        let fresh = HookState {
            format_version: FORMAT_VERSION,
            session: session.to_string(),
            ..HookState::default()
        };
        match std::fs::read(path(longrun, session)) {
            Ok(bytes) => match serde_json::from_slice::<HookState>(&bytes) {
                Ok(s) if s.session == session && s.format_version == FORMAT_VERSION => s,
                _ => fresh,
            },
            Err(_) => fresh,
        }
    }

    /// Write the state atomically (creating `longrun/.hook/`).
    pub(crate) fn save(&self, longrun: &Path) -> Result<()> {
        crate::atomic::create_dir_all(&dir(longrun))?;
        let text =
            serde_json::to_string(self).map_err(|e| crate::Error::internal(e.to_string()))?;
        crate::atomic::write_atomic(&path(longrun, &self.session), text.as_bytes())
    }

    /// Re-arm every band above `pct` (the context shrank: a compaction or a rewind happened).
    /// Returns true when something was re-armed. Re-arming also allows one more Stop block.
    pub(crate) fn rearm_above(&mut self, pct: f64) -> bool {
        let before = self.fired.len();
        self.fired.retain(|&b| f64::from(b) <= pct);
        let changed = self.fired.len() != before;
        if changed {
            self.stop_blocked = false;
        }
        changed
    }

    /// The highest band in `bands` that `pct` reached and that has not fired yet; marks it and
    /// every lower band as fired (a jump from 40 % to 90 % gives one wrap-up, not three).
    pub(crate) fn crossed(&mut self, bands: &[u8], pct: f64) -> Option<u8> {
        let top = bands.iter().copied().filter(|&b| pct >= f64::from(b)).max()?;
        if self.fired.contains(&top) {
            return None;
        }
        for &b in bands.iter().filter(|&&b| b <= top) {
            if !self.fired.contains(&b) {
                self.fired.push(b);
            }
        }
        self.fired.sort_unstable();
        Some(top)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bands_fire_once_and_rearm_below() {
        let bands = [50, 70, 85];
        let mut s = HookState::default();
        let seq: &[(f64, Option<u8>)] = &[
            (49.9, None),
            (50.0, Some(50)),
            (55.0, None),
            (70.0, Some(70)),
            (71.0, None),
            (92.0, Some(85)),
            (95.0, None),
        ];
        for (pct, want) in seq {
            assert_eq!(s.crossed(&bands, *pct), *want, "{pct}");
        }
        s.stop_blocked = true;
        assert!(s.rearm_above(22.0));
        assert!(s.fired.is_empty() && !s.stop_blocked);
        assert_eq!(s.crossed(&bands, 90.0), Some(85));
        assert_eq!(s.fired, vec![50, 70, 85]);
    }

    #[test]
    fn a_hostile_session_id_stays_in_the_folder() {
        let p = path(Path::new("/r/longrun"), "../../etc/passwd");
        assert_eq!(p, Path::new("/r/longrun/.hook/______etc_passwd.json"));
    }

    #[test]
    fn round_trip_and_foreign_files() {
        let d = tempfile::tempdir().unwrap();
        let mut s = HookState::load(d.path(), "abc");
        s.fired.push(50);
        s.save(d.path()).unwrap();
        assert_eq!(HookState::load(d.path(), "abc"), s);
        std::fs::write(path(d.path(), "abc"), "{not json").unwrap();
        assert!(HookState::load(d.path(), "abc").fired.is_empty());
    }
}
