//! A course sandbox as the rest of kit sees it: the marker that ties it to its exercise, and
//! the state folder a sandbox whose marker verifies keeps ([`own_state_dir`]; the handoff key
//! reads it, so it sits below both the course and the handoff).
//!
//! Also the one environment every sandbox's commands run with ([`environment`]: its own HOME,
//! Claude and Codex folders, kit state and git identity), which the golden runner
//! (`golden::golden_env`) and `kit rehearse` extend.
//!
//! The marker that ties a sandbox to its exercise. `kit exercise start` (and `kit verify`, which
//! builds sandboxes the same way) writes it where neither the learner's `ls` and `git status`
//! nor a golden sees it: `.git/kit-exercise` in a sandbox that is a git repository, else
//! `.home/.kit-exercise` (the sandbox's HOME, which only the golden environment uses):
//!
//! ```toml
//! # written by kit exercise start: ties this folder to exercise 4 (do not edit)
//! schema = "kit.sandbox/1"
//! exercise = 4
//! slug = "04-a-goal-that-survives"
//! seed = "3f2a…"  # the lab's seed (`KIT_LAB_SEED`), which its setup drew from
//! stamp = "…"   # HMAC-SHA256 under the course key of schema, exercise, slug, this folder
//!               # and the seed
//! ```
//!
//! `kit exercise check N` refuses a sandbox without a genuine marker of exercise N (a progress
//! file redirected to another exercise's sandbox, a folder copied from elsewhere). A sandbox
//! whose marker verifies also keeps its own kit state (the handoff key its setup made) in
//! `.home/.local/state`: [`own_state_dir`]. The seed is what a check that lays the lab out anew
//! (`check_in_new_lab`, exercise 13) lays it out from: it is under the stamp, so no file of the
//! lab can change which lab the check rebuilds. (A marker of an older kit has no seed; its stamp
//! covers the other fields.)

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::keys;

/// The git identity of a course sandbox (and of golden cases): name, email.
pub(crate) const LEARNER: (&str, &str) = ("Kit Learner", "learner@example.com");

/// The environment a sandbox's commands run with, whose user folders all live in `home`:
/// `PATH` (`bin_dirs`, then this process's `PATH`, for `sh`, `git` and coreutils), `HOME`,
/// `CLAUDE_CONFIG_DIR` (`home/.claude`, where the fake agent writes its transcripts),
/// `CODEX_HOME`, `XDG_STATE_HOME` (so kit's handoff and course keys stay in the sandbox), the
/// git author and committer `identity` (name, email), and no global or system git config.
pub(crate) fn environment(
    home: &Path,
    bin_dirs: Vec<PathBuf>,
    identity: (&str, &str),
) -> Vec<(String, String)> {
    let old = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = bin_dirs;
    dirs.extend(std::env::split_paths(&old));
    let path = std::env::join_paths(dirs).unwrap_or(old);
    let s = |p: &Path| p.to_string_lossy().into_owned();
    let (name, email) = identity;
    [
        ("PATH", s(Path::new(&path))),
        ("HOME", s(home)),
        ("CLAUDE_CONFIG_DIR", s(&home.join(".claude"))),
        ("CODEX_HOME", s(&home.join(".codex"))),
        ("XDG_STATE_HOME", s(&home.join(".local/state"))),
        ("GIT_AUTHOR_NAME", name.into()),
        ("GIT_AUTHOR_EMAIL", email.into()),
        ("GIT_COMMITTER_NAME", name.into()),
        ("GIT_COMMITTER_EMAIL", email.into()),
        ("GIT_CONFIG_GLOBAL", "/dev/null".into()),
        ("GIT_CONFIG_NOSYSTEM", "1".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// The marker's schema id.
pub(crate) const SCHEMA: &str = "kit.sandbox/1";
/// The marker inside a sandbox that is a git repository.
pub(crate) const IN_GIT: &str = ".git/kit-exercise";
/// The marker inside any other sandbox.
pub(crate) const IN_HOME: &str = ".home/.kit-exercise";

/// The marker's fields.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Marker {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// The exercise's number.
    pub exercise: u32,
    /// The exercise's folder name, `NN-slug`.
    pub slug: String,
    /// The lab's seed (`KIT_LAB_SEED`) its setup ran with; absent in a marker of an older kit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<String>,
    /// [`keys::sign`] of schema, exercise, slug, the sandbox's canonical path and the seed (when
    /// there is one).
    pub stamp: String,
}

/// What [`read`] found in a sandbox.
#[derive(Clone, Debug)]
pub(crate) enum Found {
    /// No marker, or one kit cannot read.
    Missing,
    /// A marker naming exercise `id`; `genuine` when its stamp verifies under the course key for
    /// this very folder.
    Of {
        /// The exercise it names.
        id: u32,
        /// Whether the stamp verifies.
        genuine: bool,
        /// The lab's seed it records (trust it only when `genuine`).
        seed: Option<String>,
    },
}

fn canonical(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

fn fields(m: &Marker, sandbox: &Path) -> Vec<String> {
    let dir = canonical(sandbox).to_string_lossy().into_owned();
    let mut f = vec![m.schema.clone(), m.exercise.to_string(), m.slug.clone(), dir];
    f.extend(m.seed.clone());
    f
}

fn strs(f: &[String]) -> Vec<&str> {
    f.iter().map(String::as_str).collect()
}

/// Write the marker of exercise `id` (folder `slug`, `NN-slug`), laid out from the lab's `seed`,
/// into `sandbox` under `key`.
///
/// Errors: the file cannot be written.
pub(crate) fn write(sandbox: &Path, id: u32, slug: &str, seed: &str, key: &[u8]) -> Result<()> {
    let mut m = Marker {
        schema: SCHEMA.into(),
        exercise: id,
        slug: slug.into(),
        seed: Some(seed.into()),
        stamp: "".into(),
    };
    m.stamp = keys::sign(key, &strs(&fields(&m, sandbox)));
    let rel = if sandbox.join(".git").is_dir() { IN_GIT } else { IN_HOME };
    let path = sandbox.join(rel);
    if let Some(parent) = path.parent() {
        crate::atomic::create_dir_all(parent)?;
    }
    let body = toml::to_string(&m).map_err(|e| Error::internal(format!("marker TOML: {e}")))?;
    let text = format!(
        "# written by kit exercise start: ties this folder to exercise {} (do not edit)\n{body}",
        id
    );
    crate::atomic::write_atomic(&path, text.as_bytes())
}

/// The marker of `sandbox`, checked against `key` (`None`: no key, nothing verifies).
pub(crate) fn read(sandbox: &Path, key: Option<&[u8]>) -> Found {
    let Some(m) = [IN_GIT, IN_HOME].iter().find_map(|rel| {
        let text = std::fs::read_to_string(sandbox.join(rel)).ok()?;
        toml::from_str::<Marker>(&text).ok()
    }) else {
        return Found::Missing;
    };
    let f = fields(&m, sandbox);
    let genuine = m.schema == SCHEMA && key.is_some_and(|k| keys::verify(k, &strs(&f), &m.stamp));
    Found::Of { id: m.exercise, genuine, seed: m.seed }
}

/// The nearest folder at or above `cwd` whose genuine marker names an exercise, with its number.
pub(crate) fn find_up(cwd: &Path, key: Option<&[u8]>) -> Option<(PathBuf, u32)> {
    let cwd = canonical(cwd);
    cwd.ancestors().find_map(|a| match read(a, key) {
        Found::Of { id, genuine: true, .. } => Some((a.to_path_buf(), id)),
        _ => None,
    })
}

/// The state folder of the course sandbox at `root` (`<root>/.home/.local/state`) when `root`
/// holds a genuine marker under this user's course key; `None` anywhere else (then kit uses
/// `$XDG_STATE_HOME`). A marker cannot be made without the course key, so no repository can
/// redirect where kit keeps its handoff key by writing files.
pub fn own_state_dir(root: &Path) -> Option<PathBuf> {
    let key = keys::load_course_key().ok().flatten()?;
    match read(root, Some(&key)) {
        Found::Of { genuine: true, .. } => Some(root.join(".home/.local/state")),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_marker_keeps_the_seed_under_its_stamp() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join(".git")).unwrap();
        write(d.path(), 13, "13-forged-handoff", "3f2a", b"k").unwrap();
        let seed_of = |key: &[u8]| match read(d.path(), Some(key)) {
            Found::Of { id: 13, genuine, seed } => (genuine, seed),
            other => panic!("{other:?}"),
        };
        assert_eq!(seed_of(b"k"), (true, Some("3f2a".into())));
        assert!(!seed_of(b"other").0, "another key's");
        // A seed edited by hand: the stamp no longer verifies.
        let path = d.path().join(IN_GIT);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replace("\"3f2a\"", "\"kit-verify\"")).unwrap();
        assert_eq!(seed_of(b"k"), (false, Some("kit-verify".into())));
        // An older kit's marker, without a seed: still genuine, and says it has none.
        let mut m = Marker {
            schema: SCHEMA.into(),
            exercise: 13,
            slug: "13-forged-handoff".into(),
            seed: None,
            stamp: String::new(),
        };
        m.stamp = keys::sign(b"k", &strs(&fields(&m, d.path())));
        std::fs::write(&path, toml::to_string(&m).unwrap()).unwrap();
        assert_eq!(seed_of(b"k"), (true, None));
    }
}
