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
///
/// Attributes come from three more places, which the empty tree does not cover: the user-wide
/// file (`core.attributesFile`, pinned to `/dev/null` here, so that one named by the
/// repository's config is not read), the system-wide one (`GIT_ATTR_NOSYSTEM=1`), and the
/// repository's `info/attributes`. The drivers are blanked when git is older than 2.40 (no
/// `GIT_ATTR_SOURCE`) or the repository has an `info/attributes` ([`drivers_selectable`]); else no
/// attribute can name a driver and the config is not read (that query was half of the git
/// commands a loop ran).
pub fn command_in(root: &std::path::Path) -> Command {
    let mut c = command();
    c.arg("-C")
        .arg(root)
        .arg("-c")
        .arg("core.attributesFile=/dev/null")
        .env("GIT_ATTR_SOURCE", EMPTY_TREE)
        .env("GIT_ATTR_NOSYSTEM", "1");
    if drivers_selectable(root) {
        for setting in blanked_drivers(root) {
            c.arg("-c").arg(setting);
        }
    }
    c
}

/// Whether an attribute could name a filter or diff driver in a git command of [`command_in`]
/// on the repository at `root`: true when git ignores `GIT_ATTR_SOURCE` (before 2.40), when the
/// repository has an `info/attributes` (in its common folder, which a linked worktree shares),
/// and whenever kit cannot tell cheaply (`root` is not the top of a repository whose git folder
/// kit can read, or `GIT_DIR`-like variables point git elsewhere): then the config is read and
/// every driver blanked.
fn drivers_selectable(root: &Path) -> bool {
    const ELSEWHERE: [&str; 4] =
        ["GIT_DIR", "GIT_COMMON_DIR", "GIT_WORK_TREE", "GIT_CEILING_DIRECTORIES"];
    if !attr_source_honoured() || ELSEWHERE.iter().any(|k| std::env::var_os(k).is_some()) {
        return true;
    }
    match common_dir(root) {
        Some(common) => common.join("info").join("attributes").symlink_metadata().is_ok(),
        None => true,
    }
}

/// The common git folder of the repository whose top is `root`, read from the files git reads
/// (`root/.git` as a folder, or a `gitdir: PATH` file, then that folder's `commondir`); None when
/// `root/.git` is neither or the folder holds no `HEAD` (git would look further up).
fn common_dir(root: &Path) -> Option<std::path::PathBuf> {
    let dot = root.join(".git");
    let meta = dot.symlink_metadata().ok()?;
    let git_dir = if meta.is_dir() {
        dot
    } else if meta.is_file() {
        let text = std::fs::read_to_string(&dot).ok()?;
        let p = std::path::PathBuf::from(text.strip_prefix("gitdir:")?.trim());
        if p.is_absolute() {
            p
        } else {
            root.join(p)
        }
    } else {
        return None;
    };
    if !git_dir.join("HEAD").is_file() {
        return None;
    }
    match std::fs::read_to_string(git_dir.join("commondir")) {
        Ok(c) => {
            let p = std::path::PathBuf::from(c.trim());
            Some(if p.is_absolute() { p } else { git_dir.join(p) })
        }
        Err(_) => Some(git_dir),
    }
}

/// Whether the `git` on PATH is 2.40 or later, which reads attributes from `GIT_ATTR_SOURCE`:
/// asked once per process (`git --version`); false when it cannot say.
fn attr_source_honoured() -> bool {
    static HONOURED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *HONOURED.get_or_init(|| {
        let Ok(out) = command().arg("--version").stdin(Stdio::null()).output() else {
            return false;
        };
        version_at_least(&String::from_utf8_lossy(&out.stdout), (2, 40))
    })
}

/// Whether `git --version`'s output (`git version 2.47.3`, `git version 2.39.5 (Apple Git-154)`)
/// names a version at least `want` (major, minor).
fn version_at_least(text: &str, want: (u32, u32)) -> bool {
    let Some(v) = text.trim().strip_prefix("git version ") else { return false };
    let mut parts = v.split(|c: char| !c.is_ascii_digit());
    let major = parts.next().and_then(|p| p.parse::<u32>().ok());
    let minor = parts.next().and_then(|p| p.parse::<u32>().ok());
    matches!((major, minor), (Some(a), Some(b)) if (a, b) >= want)
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
    read_work_tree(root, base, info_exclude, skip, true)
}

/// [`WorkTree::tree`] alone (what [`work_tree`] gives, without the list of changed paths, one git
/// command fewer): the loop's tree identity.
///
/// Errors: as [`work_tree`].
pub fn work_tree_id(
    root: &Path,
    base: Option<&str>,
    info_exclude: &[u8],
    skip: &str,
) -> Result<String> {
    read_work_tree(root, base, info_exclude, skip, false).map(|w| w.tree)
}

/// [`work_tree`], listing the changed paths only when `changes` (else `changed` is empty).
fn read_work_tree(
    root: &Path,
    base: Option<&str>,
    info_exclude: &[u8],
    skip: &str,
    changes: bool,
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
    // read-tree and diff-tree take a commit as its tree: no rev-parse first.
    let base_tree = match base {
        Some(b) => format!("{b}^{{tree}}"),
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
    // The base's files and the untracked ones not ignored, in one listing: the exclude rules
    // filter only the untracked (`--cached` shows every index entry unless `--ignored`).
    let exclude_from = format!("--exclude-from={}", exclude.display());
    let mut paths: std::collections::BTreeSet<String> = split(run(
        &[
            "ls-files",
            "--cached",
            "--others",
            "-z",
            "--exclude-per-directory=.gitignore",
            &exclude_from,
        ],
        None,
    )?)
    .into_iter()
    .collect();
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
    let changed = if changes {
        split(run(
            &["diff-tree", "-r", "-z", "--no-renames", "--name-only", &base_tree, &tree],
            None,
        )?)
    } else {
        Vec::new()
    };
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

/// The repository's own git settings an agent could plant to run code outside the loop or change
/// what git shows, one line each, compared before and after a run:
/// - every config entry of the repository's own scopes, `local` and `worktree`, with the files
///   they include (`git config --list --show-scope --includes`, so an entry added to an included
///   file or to `config.worktree` counts); `KEY=VALUE`;
/// - each hook in the hooks folders (`.git/hooks`, and the folder `core.hooksPath` names, even
///   one inside the work tree) that is not a `.sample`, with a digest of its content, so that a
///   hook edited in place counts as well as a new one: `hooks/NAME sha256:0123456789ab`;
/// - `info/attributes` (which may select a filter driver), likewise by content.
///
/// Errors: none; what git cannot say is left out.
pub fn local_settings(root: &Path) -> Vec<String> {
    let scoped = lines_in(root, &["config", "--list", "--show-scope", "--includes"]);
    let mut out: Vec<String> = match scoped {
        Some(lines) => lines
            .into_iter()
            .filter_map(|l| {
                let (scope, entry) = l.split_once('\t')?;
                matches!(scope, "local" | "worktree").then(|| entry.to_string())
            })
            .collect(),
        // A git older than 2.26 has no --show-scope: the local file alone.
        None => lines_in(root, &["config", "--local", "--list"]).unwrap_or_default(),
    };
    let digest = |path: &Path| {
        std::fs::read(path).ok().map(|b| crate::digest::sha256_hex(&b)[..12].to_string())
    };
    // The default hooks folder and the one `core.hooksPath` names, if any (kit's own git
    // commands pin core.hooksPath, so the repository's value is read from its config).
    let common = lines_in(root, &["rev-parse", "--git-common-dir"]).unwrap_or_default();
    let mut dirs: Vec<std::path::PathBuf> = Vec::new();
    if let Some(common) = common.first() {
        let common = root.join(common);
        dirs.push(common.join("hooks"));
        if let Some(a) = digest(&common.join("info/attributes")) {
            out.push(format!("info/attributes sha256:{a}"));
        }
    }
    let hooks_path =
        out.iter().rev().find_map(|l| l.strip_prefix("core.hookspath=").map(str::to_string));
    if let Some(h) = hooks_path {
        let h = if let Some(rest) = h.strip_prefix("~/") {
            std::env::var_os("HOME")
                .map_or_else(|| root.join(&h), |home| Path::new(&home).join(rest))
        } else {
            root.join(h)
        };
        dirs.push(h);
    }
    dirs.sort();
    dirs.dedup();
    for dir in &dirs {
        if let Ok(rd) = std::fs::read_dir(dir) {
            let mut names: Vec<String> = rd
                .flatten()
                .filter(|e| !e.file_name().to_string_lossy().ends_with(".sample"))
                .map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    match digest(&e.path()) {
                        Some(d) => format!("hooks/{name} sha256:{d}"),
                        None => format!("hooks/{name}"),
                    }
                })
                .collect();
            names.sort();
            out.extend(names);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_versions_are_read_from_git_version_output() {
        let cases: &[(&str, bool)] = &[
            ("git version 2.47.3\n", true),
            ("git version 2.40.0", true),
            ("git version 2.39.5 (Apple Git-154)", false),
            ("git version 3.0.0", true),
            ("git version 1.9", false),
            ("not git", false),
            ("", false),
        ];
        for (text, want) in cases {
            assert_eq!(version_at_least(text, (2, 40)), *want, "{text}");
        }
    }

    fn blanks(c: &Command) -> bool {
        c.get_args().any(|a| a.to_string_lossy().starts_with("filter.evil."))
    }

    #[test]
    fn drivers_are_blanked_when_an_info_attributes_file_could_select_one() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        let git = |args: &[&str]| {
            let mut c = command();
            c.arg("-C").arg(root).args(["-c", "user.name=k", "-c", "user.email=k@k"]);
            assert!(c.args(args).output().unwrap().status.success(), "git {args:?}")
        };
        git(&["init", "-q"]);
        git(&["config", "filter.evil.clean", "sh evil.sh"]);
        // No attribute source outside the empty tree: nothing to blank (when git reads
        // GIT_ATTR_SOURCE), and core.attributesFile is pinned whatever the config says.
        assert_eq!(blanks(&command_in(root)), !attr_source_honoured());
        assert!(command_in(root).get_args().any(|a| a == "core.attributesFile=/dev/null"));
        std::fs::create_dir_all(root.join(".git/info")).unwrap();
        std::fs::write(root.join(".git/info/attributes"), "*.py filter=evil\n").unwrap();
        assert!(blanks(&command_in(root)), "info/attributes names a driver: it must be blanked");
        // A linked worktree shares the common folder's info/attributes.
        let wt = tempfile::tempdir().unwrap();
        let linked = wt.path().join("linked");
        git(&["commit", "-q", "--allow-empty", "-m", "x"]);
        let out = command()
            .arg("-C")
            .arg(root)
            .args(["-c", "user.name=k", "-c", "user.email=k@k"])
            .args(["worktree", "add", "-q"])
            .arg(&linked)
            .output()
            .unwrap();
        if out.status.success() {
            assert!(
                blanks(&command_in(&linked)),
                "a linked worktree reads the common info/attributes"
            );
        }
        // A folder that is not the top of a repository: kit cannot tell, so it blanks.
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::remove_file(root.join(".git/info/attributes")).unwrap();
        assert!(blanks(&command_in(&root.join("sub"))));
    }
}
