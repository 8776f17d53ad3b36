//! The per-user secret that makes a handoff's stamp id unforgeable by hand (QA finding F2).
//!
//! A stamp id that is a plain hash of the block can be recomputed by anyone who edits the file,
//! agent included. So the id is an HMAC-SHA256 (RFC 2104) of the block and the summary under a
//! key kit keeps outside the repository: `$XDG_STATE_HOME/kit/handoff.key`, else
//! `~/.local/state/kit/handoff.key` (the XDG Base Directory default for state). `kit handoff
//! save` creates it on first use and `kit handoff verify` only reads it; how a key file is made,
//! read and signed with is [`crate::keys`]'.
//!
//! What it does and does not guard against: an edited summary or stamp block, or a block typed
//! by hand, no longer carries the keyed id, and nothing in the repository lets one compute it.
//! A process running as the same user can still read the key file; the transcript proof and the
//! `handoff_saved` journal event are the other two witnesses (DESIGN §11).

use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::keys::state_dir;

/// File name of the key inside `<state dir>/kit/`.
pub const FILE: &str = crate::keys::HANDOFF_FILE;

/// Where the key lives, from the environment `var` looks up: `$XDG_STATE_HOME/kit/handoff.key`
/// when that variable is an absolute path (the XDG spec says to ignore relative ones), else
/// `$HOME/.local/state/kit/handoff.key`.
///
/// Errors: [`crate::Error::Usage`] when neither variable gives an absolute path.
pub fn path(var: impl Fn(&str) -> Option<String>) -> Result<PathBuf> {
    state_dir(var).map(|d| d.join("kit").join(FILE))
}

/// [`path`] from this process's environment.
pub fn default_path() -> Result<PathBuf> {
    path(|k| std::env::var(k).ok())
}

/// The state folder a project keeps for itself, when it keeps one: given a project's root, the
/// folder that holds its `kit/handoff.key` instead of the user's state folder (`None`: the
/// user's). The harness knows no such project; the course does (a sandbox that `kit exercise
/// start` laid out keeps its own key, the one its setup and `kit exercise check` use, so that
/// the learner's own `kit handoff save` and the check agree), and the command edge passes its
/// answer down in [`SaveOptions`](super::SaveOptions), [`VerifyOptions`](super::VerifyOptions)
/// and the hook's environment.
pub type OwnStateDir = fn(&Path) -> Option<PathBuf>;

/// An [`OwnStateDir`] for which no project keeps its own state folder.
pub fn no_own_state_dir(_root: &Path) -> Option<PathBuf> {
    None
}

/// The key for the project at `root`: in the state folder `own` gives for it, else
/// [`default_path`].
///
/// Errors: as [`default_path`].
pub fn project_path(root: &Path, own: OwnStateDir) -> Result<PathBuf> {
    match own(root) {
        Some(state) => Ok(state.join("kit").join(FILE)),
        None => default_path(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_prefers_an_absolute_xdg_state_home() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        };
        let p = |pairs| path(env(pairs)).ok().map(|p| p.display().to_string());
        assert_eq!(
            p(&[("XDG_STATE_HOME", "/s"), ("HOME", "/h")]).as_deref(),
            Some("/s/kit/handoff.key")
        );
        assert_eq!(
            p(&[("XDG_STATE_HOME", "rel"), ("HOME", "/h")]).as_deref(),
            Some("/h/.local/state/kit/handoff.key")
        );
        assert_eq!(p(&[("HOME", "")]), None);
    }
}
