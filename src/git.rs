//! Every git command kit runs starts here, so that nothing an agent wrote into the repository's
//! git config runs as kit (DESIGN §12: kit never executes text it did not write).
//!
//! An agent can run `git config core.fsmonitor "sh evil.sh"` or point `core.hooksPath` at its
//! own scripts; a plain `git status` or `git add` from kit would then run that program outside
//! the agent's process group, timeout and memory cap, possibly after the loop verified the tree.
//! [`command`] turns those settings off on the command line (which wins over every config
//! file), and ignores the system-wide config.
//!
//! In a repository, [`command_in`] also turns off the programs `.gitattributes` can name: a
//! clean filter runs on kit's own scratch `git add` (the tree identity and the checkpoint), a
//! textconv on a diff. It reads attributes from the empty tree (`GIT_ATTR_SOURCE`, git 2.40 and
//! later) and, for older gits, blanks every filter and diff driver the repository's config
//! defines (`-c filter.NAME.clean=` …; an empty command is no command). Reading the config
//! (`git config --get-regexp`) runs nothing.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::error::{Error, Result};

/// Settings given with `-c` to every git command kit runs: no file-system monitor (a program
/// git would start), no hooks, no untracked cache (written back to the index), no external diff
/// program, no pager.
pub const SAFE_CONFIG: [&str; 5] = [
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.untrackedCache=false",
    "diff.external=",
    "core.pager=cat",
];

/// A `git` command with [`SAFE_CONFIG`] and `GIT_CONFIG_NOSYSTEM=1`; add `-C DIR` and the
/// subcommand.
pub fn command() -> Command {
    let mut c = Command::new("git");
    for setting in SAFE_CONFIG {
        c.arg("-c").arg(setting);
    }
    c.env("GIT_CONFIG_NOSYSTEM", "1");
    c
}

/// The empty tree's id: attributes read from it name no filter, no diff driver, nothing.
const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/// [`command`] run in the repository at `root` (`-C root`), with no `.gitattributes` program:
/// attributes come from the empty tree, and each filter or diff driver defined in the
/// repository's config is blanked on the command line. Use it for every git call on a
/// repository the agent could have touched.
pub fn command_in(root: &std::path::Path) -> Command {
    let mut c = command();
    c.arg("-C").arg(root).env("GIT_ATTR_SOURCE", EMPTY_TREE);
    for setting in blanked_drivers(root) {
        c.arg("-c").arg(setting);
    }
    c
}

/// `filter.NAME.clean=`, `filter.NAME.smudge=`, `filter.NAME.process=`, `diff.NAME.textconv=`,
/// `diff.NAME.command=` for each driver NAME the config of the repository at `root` defines
/// (any scope, includes followed).
fn blanked_drivers(root: &std::path::Path) -> Vec<String> {
    let Ok(out) = command()
        .arg("-C")
        .arg(root)
        .args(["config", "--null", "--name-only", "--get-regexp", r"^(filter|diff)\."])
        .output()
    else {
        return Vec::new();
    };
    let mut names: Vec<(&'static str, String)> = Vec::new();
    for key in out.stdout.split(|&b| b == 0 || b == b'\n') {
        let key = String::from_utf8_lossy(key);
        for section in ["filter", "diff"] {
            let Some(rest) = key.strip_prefix(section).and_then(|r| r.strip_prefix('.')) else {
                continue;
            };
            let Some((name, _variable)) = rest.rsplit_once('.') else { continue };
            if !names.iter().any(|(s, n)| *s == section && n == name) {
                names.push((section, name.to_string()));
            }
        }
    }
    let mut out = Vec::new();
    for (section, name) in names {
        let programs: &[&str] = if section == "filter" {
            &["clean", "smudge", "process"]
        } else {
            &["textconv", "command"]
        };
        for p in programs {
            out.push(format!("{section}.{name}.{p}="));
        }
    }
    out
}

/// The output lines of `git ARGS` run in `root` through [`command_in`] (kit's safe settings);
/// `None` when git fails or cannot start. For the questions kit asks git where "no answer" is an
/// answer (HEAD before the first commit, a folder that is not a repository).
pub fn lines_in<S: AsRef<std::ffi::OsStr>>(
    root: &std::path::Path,
    args: &[S],
) -> Option<Vec<String>> {
    command_in(root)
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).lines().map(str::to_string).collect())
}

/// The stdout of `git ARGS` run in `dir` through [`command`], with `env` added to this process's
/// environment and no stdin. For the git calls whose failure is kit's own (its sandboxes, the
/// handoff's questions about a repository kit already found).
///
/// Errors: [`Error::Internal`] naming the command, the folder and git's stderr when git fails,
/// or "cannot run git" (with the hint to install it) when git cannot start.
pub fn output_in(dir: &Path, env: &[(String, String)], args: &[&str]) -> Result<String> {
    let out = command_in(dir)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::internal(format!("cannot run git: {e}")).with_hint("install git"))?;
    if !out.status.success() {
        return Err(Error::internal(format!(
            "git {} failed in {}: {}",
            args.join(" "),
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Make `dir` a sandbox repository: `git init` on branch `main`, the learner's identity in its
/// own config (so a `git commit` there works on a machine with no global identity; the golden
/// environment sets it by env too), a first empty commit `start` with the identities and dates
/// of `env`, and `/.home/` excluded (the sandbox's HOME, with `CLAUDE_CONFIG_DIR` and its
/// transcripts, is not project work: `kit handoff save` would fingerprint transcripts that grow
/// after the save).
///
/// Errors: as [`output_in`]; [`Error::Io`] when `.git/info/exclude` cannot be written.
pub fn init_sandbox(dir: &Path, env: &[(String, String)]) -> Result<()> {
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["config", "user.name", crate::sandbox::LEARNER.0][..],
        &["config", "user.email", crate::sandbox::LEARNER.1][..],
        &["commit", "-q", "--allow-empty", "-m", "start"][..],
    ] {
        output_in(dir, env, args)?;
    }
    let info = dir.join(".git").join("info");
    let exclude = info.join("exclude");
    let mut text = std::fs::read_to_string(&exclude).unwrap_or_default();
    text.push_str("/.home/\n");
    crate::atomic::create_dir_all(&info)?;
    crate::atomic::write_atomic(&exclude, text.as_bytes())
}
