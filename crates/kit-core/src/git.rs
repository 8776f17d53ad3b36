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

/// Make `dir` a sandbox repository: `git init` on branch `main`, the author identity of `env`
/// (`GIT_AUTHOR_NAME`, `GIT_AUTHOR_EMAIL`: the course's sandbox environment sets the learner's)
/// in its own config (so a `git commit` there works on a machine with no global identity), a
/// first empty commit `start` with the identities and dates of `env`, and `/.home/` excluded
/// (the sandbox's HOME, with `CLAUDE_CONFIG_DIR` and its transcripts, is not project work:
/// `kit handoff save` would fingerprint transcripts that grow after the save).
///
/// Errors: [`Error::Internal`] when `env` has no author name or email; as [`output_in`];
/// [`Error::Io`] when `.git/info/exclude` cannot be written.
pub fn init_sandbox(dir: &Path, env: &[(String, String)]) -> Result<()> {
    let var = |k: &str| {
        env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str()).ok_or_else(|| {
            Error::internal(format!(
                "no {k} in the environment given to make the sandbox {}",
                dir.display()
            ))
        })
    };
    let (name, email) = (var("GIT_AUTHOR_NAME")?, var("GIT_AUTHOR_EMAIL")?);
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["config", "user.name", name][..],
        &["config", "user.email", email][..],
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

/// Settings given with `-c` to the git commands that say what a working tree holds: no
/// `core.ignoreStat` (which trusts the index's stat data over the files), no sparse checkout
/// (whose skip-worktree bits hide files), and no user-wide exclude file (`core.excludesFile`,
/// a file the agent can write as the user).
const CONTENT_CONFIG: [&str; 3] =
    ["core.ignoreStat=false", "core.sparseCheckout=false", "core.excludesFile=/dev/null"];

/// What a working tree holds, read by content (issue 22: kit trusts nothing the agent can set in
/// git). Built in a private index (`GIT_INDEX_FILE` in a temporary folder) that starts from
/// `base`'s tree (or empty), so the repository's own index — its `assume-unchanged` and
/// `skip-worktree` bits, its stat data, an fsmonitor's answers — is never read. Every file is
/// hashed from its bytes (`git update-index` on each path, which always re-reads the file).
///
/// Which untracked files count: those not ignored by the `.gitignore` files of the tree and by
/// `info_exclude` (the content of `.git/info/exclude` the caller trusts: as it was when the loop
/// started, or fingerprinted by the handoff's stamp); never the user-wide exclude file. A
/// `.gitignore` file itself is always counted, even one that ignores itself: an agent that
/// writes one to hide its files changes the tree by writing it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkTree {
    /// The tree id of the working tree (outside the skipped folder, which stays as in `base`).
    pub tree: String,
    /// Paths that differ from `base` (changed, added or deleted), `/`-separated, sorted.
    pub changed: Vec<String>,
}

/// [`WorkTree`] of the repository at `root` against `base` (a commit or tree; None: the empty
/// tree), leaving out everything under the folder `skip` (e.g. `longrun`; "" skips nothing).
///
/// Errors: [`Error::Internal`] naming the git command that failed (an unknown `base`, not a
/// repository, git missing); [`Error::Io`] when the temporary folder cannot be made.
pub fn work_tree(
    root: &Path,
    base: Option<&str>,
    info_exclude: &[u8],
    skip: &str,
) -> Result<WorkTree> {
    let scratch = tempfile::tempdir().map_err(|e| Error::io(std::env::temp_dir(), e))?;
    let index = scratch.path().join("index");
    let exclude = scratch.path().join("exclude");
    std::fs::write(&exclude, info_exclude).map_err(|e| Error::io(&exclude, e))?;
    let run = |args: &[&str], stdin: Option<&[u8]>| -> Result<Vec<u8>> {
        let mut c = command_in(root);
        for s in CONTENT_CONFIG {
            c.arg("-c").arg(s);
        }
        c.args(args)
            .env("GIT_INDEX_FILE", &index)
            .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().map_err(|e| {
            Error::internal(format!("cannot run git: {e}")).with_hint("install git")
        })?;
        if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
            use std::io::Write as _;
            pipe.write_all(bytes).map_err(|e| Error::internal(format!("git {}: {e}", args[0])))?;
        }
        let out = child
            .wait_with_output()
            .map_err(|e| Error::internal(format!("git {}: {e}", args[0])))?;
        if !out.status.success() {
            return Err(Error::internal(format!(
                "git {} failed in {}: {}",
                args.join(" "),
                root.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(out.stdout)
    };
    let base_tree = match base {
        Some(b) => {
            let spec = format!("{b}^{{tree}}");
            let out = run(&["rev-parse", "--verify", "-q", &spec], None)?;
            String::from_utf8_lossy(&out).trim().to_string()
        }
        None => EMPTY_TREE.to_string(),
    };
    run(&["read-tree", &base_tree], None)?;
    let split = |bytes: Vec<u8>| -> Vec<String> {
        bytes
            .split(|&b| b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect()
    };
    let mut paths: std::collections::BTreeSet<String> =
        split(run(&["ls-files", "-z"], None)?).into_iter().collect();
    let exclude_from = format!("--exclude-from={}", exclude.display());
    paths.extend(split(run(
        &["ls-files", "--others", "-z", "--exclude-per-directory=.gitignore", &exclude_from],
        None,
    )?));
    paths.extend(
        split(run(&["ls-files", "--others", "-z"], None)?)
            .into_iter()
            .filter(|p| p == ".gitignore" || p.ends_with("/.gitignore")),
    );
    let skipped = |p: &str| !skip.is_empty() && (p == skip || p.starts_with(&format!("{skip}/")));
    // A folder `ls-files` shows with a slash is a repository inside this one: not its files.
    let mut stdin = Vec::new();
    for p in paths.iter().filter(|p| !skipped(p) && !p.ends_with('/')) {
        stdin.extend_from_slice(p.as_bytes());
        stdin.push(0);
    }
    if !stdin.is_empty() {
        run(&["update-index", "--add", "--remove", "-z", "--stdin"], Some(&stdin))?;
    }
    let tree = String::from_utf8_lossy(&run(&["write-tree"], None)?).trim().to_string();
    let changed = split(run(
        &["diff-tree", "-r", "-z", "--no-renames", "--name-only", &base_tree, &tree],
        None,
    )?);
    Ok(WorkTree { tree, changed })
}

/// The content of the repository's `info/exclude` file at `root` (empty when there is none):
/// what [`work_tree`] trusts, read by the caller at a moment it trusts.
pub fn info_exclude(root: &Path) -> Vec<u8> {
    lines_in(root, &["rev-parse", "--path-format=absolute", "--git-path", "info/exclude"])
        .and_then(|l| l.into_iter().next())
        .and_then(|p| std::fs::read(p).ok())
        .unwrap_or_default()
}
