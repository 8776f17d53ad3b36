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
//! and exit status.
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

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use super::exercise::Exercise;
use crate::error::{Error, IoContext, Result};
use crate::golden::{Binaries, Failure, Outcome, Toolbox};

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

/// What a whole proof may take, start to verdict: generous, for a loaded machine.
const PROOF_TIMEOUT: Duration = Duration::from_secs(600);

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
    /// `exercises/NN-slug/variants/NAME` (or `cheats/`), as reports name it.
    pub fn origin(&self, ex: &Exercise) -> String {
        format!("exercises/{}/{}s/{}/proof.toml", ex.slug, self.side.word(), self.name)
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

/// Run `proof` of `ex` as a learner would (see the module doc) with the binaries `bins`, and
/// judge it: a variant passes when the check passes; a cheat passes when the check fails at its
/// `fails_at` step (or refuses the folder, for `refused`).
///
/// Errors: the lab cannot be made, `kit exercise start` fails.
pub fn run(ex: &Exercise, proof: &Proof, bins: &Binaries) -> Result<Outcome> {
    let name = format!("exercise {} {} {}", ex.slug, proof.side.word(), proof.name);
    let tmp = tempfile::Builder::new()
        .prefix("kit-proof-")
        .tempdir()
        .map_err(|e| Error::io("a temporary folder", e))?;
    let (home, lab) = (tmp.path().join("home"), tmp.path().join("lab"));
    std::fs::create_dir_all(&home).at(&home)?;
    let tools = Toolbox::in_dir(&tmp.path().join("tools"), bins)?;
    let cheat_path = tmp.path().join("path");
    std::fs::create_dir_all(&cheat_path).at(&cheat_path)?;
    for (rel, bytes) in &proof.path {
        let p = cheat_path.join(rel);
        std::fs::write(&p, bytes).at(&p)?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).at(&p)?;
    }
    let mut env = crate::sandbox::environment(&home, vec![], crate::sandbox::LEARNER);
    let path = format!("{}:{}", cheat_path.display(), tools.path());
    for (k, v) in env.iter_mut() {
        if k == "PATH" {
            v.clone_from(&path);
        }
    }
    env.extend(
        [
            ("KIT_LAB", lab.to_string_lossy().as_ref()),
            ("NO_COLOR", "1"),
            ("LANG", "C.UTF-8"),
            ("TZ", "UTC"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    let fail = |line: usize, command: &str, detail: String| Outcome {
        name: name.clone(),
        failure: Some(Failure { line, command: command.to_string(), detail }),
    };
    // kit itself by absolute path, as a learner's `kit` is the real one: what the proof tests is
    // whether the check's own steps can be fooled.
    let kit = tools.dir().join("kit");
    let kit = shlex::try_quote(&kit.to_string_lossy()).map(|q| q.into_owned()).unwrap_or_default();
    let start = format!("{kit} exercise start {}", ex.meta.id);
    let (code, out) = shell(&start, tmp.path(), &env)?;
    if code != Some(0) {
        return Ok(fail(0, "kit exercise start", format!("`{start}` failed ({code:?}):\n{out}")));
    }
    let folder = lab.join(&ex.slug);
    let mut log = String::new();
    if proof.meta.solution {
        crate::embedded::write_files(&folder, &ex.solution)?;
        for cmd in &ex.meta.solution_steps {
            let (code, out) = shell(cmd, &folder, &env)?;
            log.push_str(&format!("$ {cmd}   (a solution step)\n{out}(exit {code:?})\n"));
        }
    }
    crate::embedded::write_files(&folder, &proof.files)?;
    for cmd in &proof.meta.before {
        let (code, out) = shell(cmd, &folder, &env)?;
        log.push_str(&format!("$ {cmd}\n{out}(exit {code:?})\n"));
    }
    let check = format!("{kit} exercise check");
    let (code, out) = shell(&check, &folder, &env)?;
    let passed = code == Some(0) && out.starts_with("PASS");
    let verdict = match (proof.side, passed) {
        (Side::Variant, true) => None,
        (Side::Variant, false) => Some(format!(
            "an honest variant ({}) fails the check:\n{out}\n(before the check:)\n{log}",
            proof.meta.about
        )),
        (Side::Cheat, true) => Some(format!(
            "a known cheat ({}; class {}) passes the check: {out}\n(what it did:)\n{log}",
            proof.meta.about,
            proof.meta.class.as_deref().unwrap_or("?")
        )),
        (Side::Cheat, false) => {
            let want = proof.meta.fails_at.as_deref().unwrap_or_default();
            let step = failing_step(&out);
            let at_step = match want {
                "refused" => code == Some(2),
                _ => step.is_some_and(|s| s.contains(want)),
            };
            (!at_step).then(|| {
                format!(
                    "the cheat ({}) fails, but not where it must (`{want}`): it failed at {}:\n{out}",
                    proof.meta.about,
                    step.map_or(format!("exit {code:?} with no step"), |s| format!("`{s}`"))
                )
            })
        }
    };
    Ok(match verdict {
        None => Outcome { name, failure: None },
        Some(detail) => fail(0, "kit exercise check", detail),
    })
}

/// The `$ ` command `kit exercise check` names as its first differing step.
fn failing_step(out: &str) -> Option<&str> {
    out.lines().find_map(|l| {
        let rest = l.strip_prefix("first differing step: golden.md:")?;
        rest.split_once("  $ ").map(|(_, cmd)| cmd)
    })
}

/// `command` through `/bin/sh -c` in `dir` with exactly `env`; stdout and stderr merged.
fn shell(command: &str, dir: &Path, env: &[(String, String)]) -> Result<(Option<i32>, String)> {
    let mut cmd = std::process::Command::new("/bin/sh");
    cmd.arg("-c").arg(command).current_dir(dir).env_clear().envs(env.iter().map(|(k, v)| (k, v)));
    let how = crate::proc::Spawn { merge: true, own_group: true, input: None };
    let done = crate::proc::spawn(&mut cmd, how)
        .at(dir)?
        .wait(PROOF_TIMEOUT, Some(crate::golden::EOF_GRACE))
        .at(dir)?;
    Ok((done.code, String::from_utf8_lossy(&done.stdout).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_failing_step_is_read_from_the_check_report() {
        let out = "FAIL  04 Write a goal\nfirst differing step: golden.md:31  $ kit loop --agent fake:lie --max-iterations 2\n  exit status: expected 3, got 0\n";
        assert_eq!(failing_step(out), Some("kit loop --agent fake:lie --max-iterations 2"));
        assert_eq!(failing_step("PASS  04 x\n"), None);
    }
}
