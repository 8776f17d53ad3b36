//! The four proofs of an exercise's check beyond its start and its solution (DESIGN §13): honest
//! **variants** (`exercises/NN-slug/variants/NAME/`), what a learner would plausibly write
//! differently or do in another order, must pass; known **cheats**
//! (`exercises/NN-slug/cheats/NAME/`), ways to pass without the work, must fail at the step
//! they name.
//!
//! Each is run as a learner runs it, from the binary alone: `kit exercise start N` in a new lab
//! under a new HOME, the proof's files laid over the exercise's folder (after the solution's, when
//! it says so), its `before` commands run there in the learner's shell, then `kit exercise check`
//! from inside the folder, with the proof's `path/` folder first on `PATH` (a cheat that plants
//! its own `sh`, `python3`, `git` or `kit` for the check). The verdict is the check's own output
//! and exit status ([`super::prove`] runs them).
//!
//! A proof's folder:
//!
//! ```text
//! proof.toml     what it is (below)
//! files/…        laid over the exercise's folder, as the learner would write them
//! path/…         executables put first on PATH for `kit exercise check` (cheats)
//! ```
//!
//! `proof.toml`, field by field ([`ProofToml`]):
//!
//! ```toml
//! about = "the limit criterion first, then function and regression"  # one line
//! class = "planted module"   # cheats: which class of shortcut (see CLASSES)
//! solution = true            # lay solution/, run exercise.toml's solution_steps, then
//!                            # files/ (default false)
//! before = ["kit freeze tests tools", "git add -A && git commit -qm work"]
//! fails_at = "fake:lie"      # cheats: a substring of the `$ ` step the check must fail at,
//!                            # or "refused": the check refuses the folder (exit 2)
//! ```

use serde::Deserialize;

use crate::error::{Error, Result};

/// The classes of cheat a check must refuse (issue 21's list): each cheat names one.
pub const CLASSES: [&str; 10] = [
    "path",               // a sh, python3, git or kit of the learner's first on PATH
    "planted module",     // a module the check's own helper would import, planted beside it
    "reference in reach", // the learner's answer made the reference the check compares with
    "artifact by hand",   // what kit should produce, written by hand
    "git flags",          // index flags (assume-unchanged, skip-worktree) hiding an edit
    "derivable answer",   // an answer worked out from the golden instead of from the lab
    "unstated bound",     // a bound the task states and the check did not
    "link out",           // a link out of the lab
    "huge file",          // a file that makes every check slow
    "shortcut goal",      // a goal the linter rated high that can be met without the work
];

/// `proof.toml`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProofToml {
    /// One line: what this learner did.
    pub about: String,
    /// Cheats: the class of shortcut, one of [`CLASSES`].
    #[serde(default)]
    pub class: Option<String>,
    /// Lay the exercise's `solution/` and run its `solution_steps` (`exercise.toml`) before
    /// `files/`.
    #[serde(default)]
    pub solution: bool,
    /// Commands run in the exercise's folder, in order, after the files are laid (`/bin/sh -c`,
    /// the learner's environment; their exit status does not matter: a loop the learner tries
    /// may well stop at a cap).
    #[serde(default)]
    pub before: Vec<String>,
    /// Cheats: a substring of the `$ ` command of the step the check must fail at, or
    /// `refused` (the check refuses the folder with exit 2 before any step).
    #[serde(default)]
    pub fails_at: Option<String>,
}

/// Whether a proof must pass or fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// An honest variant: the check must pass.
    Variant,
    /// A known cheat: the check must fail at its step.
    Cheat,
}

impl Side {
    /// `variant` or `cheat`, as case names and folders say it.
    pub fn word(self) -> &'static str {
        match self {
            Side::Variant => "variant",
            Side::Cheat => "cheat",
        }
    }
}

/// One variant or cheat, as embedded.
#[derive(Clone, Debug)]
pub struct Proof {
    /// Its folder's name.
    pub name: String,
    /// Variant or cheat.
    pub side: Side,
    /// `proof.toml`.
    pub meta: ProofToml,
    /// `files/`, relative to it.
    pub files: Vec<(String, &'static [u8])>,
    /// `path/`, relative to it.
    pub path: Vec<(String, &'static [u8])>,
}

impl Proof {
    /// `exercises/NN-slug/variants/NAME` (or `cheats/`) of the exercise whose folder is `slug`,
    /// as reports name it.
    pub fn origin(&self, slug: &str) -> String {
        format!("exercises/{slug}/{}s/{}/proof.toml", self.side.word(), self.name)
    }
}

/// Load the proofs of side `side` from an exercise's embedded folder `dir`.
///
/// Errors: a proof without a readable `proof.toml`, a malformed one (file and line), a cheat
/// without `fails_at` or with a class not in [`CLASSES`].
pub fn load(slug: &str, dir: &'static include_dir::Dir<'static>, side: Side) -> Result<Vec<Proof>> {
    let Some(root) = dir.get_dir(dir.path().join(format!("{}s", side.word()))) else {
        return Ok(vec![]);
    };
    let mut out = Vec::new();
    for d in root.dirs() {
        let name = d.path().file_name().unwrap_or_default().to_string_lossy().into_owned();
        let origin = format!("exercises/{slug}/{}s/{name}/proof.toml", side.word());
        let text = d
            .get_file(d.path().join("proof.toml"))
            .and_then(|f| f.contents_utf8())
            .ok_or_else(|| Error::input(&origin, None, "missing or not UTF-8"))?;
        let meta: ProofToml = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| crate::longrun::config::line_of(text, s.start));
            Error::input(&origin, line, e.message().to_string())
        })?;
        if side == Side::Cheat {
            if meta.fails_at.as_deref().is_none_or(str::is_empty) {
                return Err(Error::input(
                    &origin,
                    None,
                    "a cheat names the step it fails at: fails_at = \"…\"",
                ));
            }
            if !meta.class.as_deref().is_some_and(|c| CLASSES.contains(&c)) {
                return Err(Error::input(
                    &origin,
                    None,
                    format!("class must be one of: {}", CLASSES.join(", ")),
                ));
            }
        }
        let sub =
            |n: &str| d.get_dir(d.path().join(n)).map(crate::embedded::files).unwrap_or_default();
        out.push(Proof { name, side, meta, files: sub("files"), path: sub("path") });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}
