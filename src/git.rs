//! Every git command kit runs starts here, so that nothing an agent wrote into the repository's
//! git config runs as kit (DESIGN §12: kit never executes text it did not write).
//!
//! An agent can run `git config core.fsmonitor "sh evil.sh"` or point `core.hooksPath` at its
//! own scripts; a plain `git status` or `git add` from kit would then run that program outside
//! the agent's process group, timeout and memory cap, possibly after the loop verified the tree.
//! [`command`] turns those settings off on the command line (which wins over every config
//! file), and ignores the system-wide config.
//!
//! What it cannot turn off from here: clean/smudge filters named in `.gitattributes`. kit's
//! own git calls only read (status, rev-parse, ls-files) or write a scratch index, and never
//! check files out, so a smudge filter never runs; a clean filter can run on `git add`.

use std::process::Command;

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

/// The output lines of `git ARGS` run in `root` through [`command`] (kit's safe settings);
/// `None` when git fails or cannot start. For the questions kit asks git where "no answer" is an
/// answer (HEAD before the first commit, a folder that is not a repository).
pub fn lines_in<S: AsRef<std::ffi::OsStr>>(
    root: &std::path::Path,
    args: &[S],
) -> Option<Vec<String>> {
    command()
        .arg("-C")
        .arg(root)
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).lines().map(str::to_string).collect())
}
