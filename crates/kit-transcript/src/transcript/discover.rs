//! Finding transcripts (DESIGN §8): the default roots are `$CLAUDE_CONFIG_DIR` (a comma list;
//! default `~/.claude`) `/projects` and `$CODEX_HOME` (default `~/.codex`) `/sessions` and
//! `/archived_sessions`. A PATH given by the user may be such a root, a project folder, any
//! folder holding transcripts, or one file. Files are `.jsonl` or `.jsonl.zst` (the plain file
//! wins when both exist). Claude subagent files (`<session>/subagents/*.jsonl`) are grouped
//! with their parent session. The Claude roots come from one function, [`claude_roots`], for
//! every command (`kit measure`, `kit recall`, `kit hook install --user`, `kit cache
//! --session`, `kit handoff verify --session`): when they would come from `HOME` and it is
//! unset or relative, each refuses rather than read the current folder's `.claude/`.
//!
//! Each real folder is walked once and each real file read once, whatever the symlinks: a
//! folder already walked (same device and inode) is passed over, which ends symlink loops
//! (`d/up -> ..`) and keeps a symlinked project folder or `CLAUDE_CONFIG_DIR=A,A` from
//! counting sessions twice. A folder that cannot be read is noted in the damage report.

use std::collections::{BTreeMap, HashSet};
use std::ffi::OsString;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::{Damage, Source};
use crate::error::{Error, Result};

/// One unit of work: a session's files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Job {
    /// A Claude Code session (main file and subagents).
    Claude(SessionFiles),
    /// A Codex rollout.
    Codex(PathBuf),
}

impl Job {
    /// The source.
    pub fn source(&self) -> Source {
        match self {
            Job::Claude(_) => Source::Claude,
            Job::Codex(_) => Source::Codex,
        }
    }

    /// All files of the job.
    pub fn files(&self) -> Vec<&Path> {
        match self {
            Job::Claude(s) => s.all().map(|p| p.as_path()).collect(),
            Job::Codex(p) => vec![p.as_path()],
        }
    }
}

/// The files of one Claude Code session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionFiles {
    /// Session id (the main file's stem).
    pub session_id: String,
    /// The project folder's name (the encoded working directory).
    pub project_dir: String,
    /// The main transcript, if present (a subagent folder may outlive it).
    pub main: Option<PathBuf>,
    /// Subagent transcripts, sorted.
    pub subagents: Vec<PathBuf>,
}

impl SessionFiles {
    /// All files, main first.
    pub(crate) fn all(&self) -> impl Iterator<Item = &PathBuf> {
        self.main.iter().chain(self.subagents.iter())
    }
}

/// The default roots from the environment: (Claude `projects` folders, Codex session folders).
/// The Claude roots are [`claude_roots`]'; the Codex root is `$CODEX_HOME`, else `$HOME/.codex`.
///
/// Errors: [`Error::Usage`] when a root would come from `HOME` (no `CLAUDE_CONFIG_DIR` or
/// `CODEX_HOME`) and `HOME` is unset or not absolute: kit would read relative to the current
/// folder instead, as `kit hook install --user` refuses to.
pub fn default_roots() -> Result<(Vec<PathBuf>, Vec<PathBuf>)> {
    default_roots_in(&|k| std::env::var_os(k))
}

/// [`default_roots`] with the environment as a function (tests give their own).
pub(crate) fn default_roots_in(
    var: &dyn Fn(&str) -> Option<OsString>,
) -> Result<(Vec<PathBuf>, Vec<PathBuf>)> {
    let home = var("HOME").map(PathBuf::from).filter(|h| h.is_absolute());
    let codex_home = var("CODEX_HOME").filter(|v| !v.is_empty()).map(PathBuf::from);
    let claude_dirs = config_dirs(var);
    let (Some(codex_home), Some(claude_dirs)) = (
        codex_home.or_else(|| Some(home.as_ref()?.join(".codex"))),
        claude_dirs.or_else(|| Some(vec![home.as_ref()?.join(".claude")])),
    ) else {
        return Err(Error::usage(
            "HOME is not set to an absolute folder, so ~/.claude and ~/.codex cannot be found",
        )
        .with_hint("set HOME (or CLAUDE_CONFIG_DIR and CODEX_HOME), or name the folders: kit measure ~/.claude ~/.codex"));
    };
    Ok((
        claude_dirs.into_iter().map(|d| d.join("projects")).collect(),
        vec![codex_home.join("sessions"), codex_home.join("archived_sessions")],
    ))
}

/// The folders `$CLAUDE_CONFIG_DIR` names (a comma list, blanks ignored); `None` when it names
/// none.
fn config_dirs(var: &dyn Fn(&str) -> Option<OsString>) -> Option<Vec<PathBuf>> {
    let v = var("CLAUDE_CONFIG_DIR")?;
    let dirs: Vec<PathBuf> = v
        .to_string_lossy()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .collect();
    (!dirs.is_empty()).then_some(dirs)
}

/// Find the transcript of session `id` (a full id or a unique prefix) under the Claude Code
/// roots: each entry of `$CLAUDE_CONFIG_DIR` (a comma list; default `~/.claude`) `/projects/*/`.
///
/// Errors: [`Error::Usage`] when no transcript or more than one matches, or when the
/// roots are unknown ([`claude_roots`]).
pub fn find_session(id: &str) -> Result<PathBuf> {
    let mut found = Vec::new();
    for root in claude_roots()? {
        let projects = root.join("projects");
        let Ok(dirs) = std::fs::read_dir(&projects) else { continue };
        for d in dirs.flatten() {
            let Ok(files) = std::fs::read_dir(d.path()) else { continue };
            for f in files.flatten() {
                let name = f.file_name();
                let name = name.to_string_lossy();
                if name.starts_with(id) && name.ends_with(".jsonl") {
                    found.push(f.path());
                }
            }
        }
    }
    found.sort();
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(Error::usage(format!(
            "no transcript of session `{id}` under the Claude Code roots"
        ))
        .with_hint("kit measure (lists the sessions), or pass --transcript PATH")),
        n => Err(Error::usage(format!("session prefix `{id}` matches {n} transcripts"))
            .with_hint("give more of the session id")),
    }
}

/// The Claude Code configuration roots: `$CLAUDE_CONFIG_DIR` split on commas, else `$HOME/.claude`
/// (where Claude Code keeps `settings.json` and `projects/`).
///
/// Errors: [`Error::Usage`] ("HOME is not set", with the next step) when neither
/// variable names a folder, or `HOME` is not an absolute path: kit never falls back to a path
/// relative to the current folder, which would read or write the project's `.claude/` instead.
pub fn claude_roots() -> Result<Vec<PathBuf>> {
    claude_roots_in(&|k| std::env::var_os(k))
}

/// [`claude_roots`] with the environment as a function (tests give their own).
pub fn claude_roots_in(var: &dyn Fn(&str) -> Option<OsString>) -> Result<Vec<PathBuf>> {
    if let Some(dirs) = config_dirs(var) {
        return Ok(dirs);
    }
    match var("HOME").map(PathBuf::from) {
        Some(home) if home.is_absolute() => Ok(vec![home.join(".claude")]),
        Some(home) if !home.as_os_str().is_empty() => Err(Error::usage(format!(
            "HOME ({}) is not an absolute path, so kit cannot find ~/.claude",
            home.display()
        ))
        .with_hint(HOME_HINT)),
        _ => {
            Err(Error::usage("HOME is not set, so kit cannot find ~/.claude").with_hint(HOME_HINT))
        }
    }
}

/// The next step when `HOME` cannot be used.
const HOME_HINT: &str =
    "set HOME to your home folder (or CLAUDE_CONFIG_DIR to Claude Code's folder), then run the command again";

/// The jobs under `paths`, or under the default roots when `paths` is empty (missing default
/// roots are simply empty). Sorted by path, so output order does not depend on the file system.
/// Folders that exist but cannot be read are noted in `damage.unreadable`.
///
/// Errors: a given PATH that does not exist ([`Error::Usage`]).
pub fn discover(paths: &[PathBuf], damage: &mut Damage) -> Result<Vec<Job>> {
    let mut claude_files = vec![];
    let mut codex_files = vec![];
    let mut w = Walker { seen: HashSet::new(), damage };
    if paths.is_empty() {
        let (c, x) = default_roots()?;
        for d in c {
            w.walk(&d, &mut claude_files);
        }
        for d in x {
            w.walk(&d, &mut codex_files);
        }
    }
    for p in paths {
        if !p.exists() && std::fs::symlink_metadata(p).is_ok() {
            // A symlink that leads nowhere or loops: read it, so the reason is reported.
            claude_files.push(p.clone());
        } else if std::fs::metadata(p).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
            return Err(Error::usage(format!(
                "{}: not a regular file (a FIFO, device or socket); kit reads transcripts only",
                p.display()
            ))
            .with_hint("give a transcript file, a project folder or a root like ~/.claude"));
        } else if p.is_file() {
            if sniff_codex(p) {
                codex_files.push(p.clone());
            } else {
                claude_files.push(p.clone());
            }
        } else if p.is_dir() {
            let (projects, sessions, archived) =
                (p.join("projects"), p.join("sessions"), p.join("archived_sessions"));
            let is_claude_root = projects.is_dir();
            let is_codex_root = sessions.is_dir() || archived.is_dir();
            if is_claude_root {
                w.walk(&projects, &mut claude_files);
            }
            if is_codex_root {
                w.walk(&sessions, &mut codex_files);
                w.walk(&archived, &mut codex_files);
            }
            if !is_claude_root && !is_codex_root {
                let mut all = vec![];
                w.walk(p, &mut all);
                for f in all {
                    if sniff_codex(&f) {
                        codex_files.push(f);
                    } else {
                        claude_files.push(f);
                    }
                }
            }
        } else {
            return Err(Error::usage(format!("{}: no such file or folder", p.display()))
                .with_hint("give a transcript file, a project folder or a root like ~/.claude"));
        }
    }
    let mut files_seen = HashSet::new();
    let claude_files = once_each(prefer_plain(claude_files), &mut files_seen);
    let codex_files = once_each(prefer_plain(codex_files), &mut files_seen);
    let mut jobs: Vec<Job> = group_claude(claude_files)
        .into_iter()
        .map(Job::Claude)
        .chain(codex_files.into_iter().map(Job::Codex))
        .collect();
    jobs.sort_by(|a, b| a.files().first().cmp(&b.files().first()));
    jobs.dedup();
    Ok(jobs)
}

/// Whether a file name is a transcript's: `*.jsonl` or `*.jsonl.zst`.
pub(crate) fn is_transcript_name(p: &Path) -> bool {
    let n = p.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    n.ends_with(".jsonl") || n.ends_with(".jsonl.zst")
}

/// The file name without `.jsonl` / `.jsonl.zst`.
pub fn stem(p: &Path) -> String {
    let n = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let n = n.strip_suffix(".zst").unwrap_or(&n);
    n.strip_suffix(".jsonl").unwrap_or(n).to_string()
}

/// Keep the first path (in sorted order) of each real file; paths whose target cannot be
/// found (a dangling or looping symlink) are kept so that reading them reports why.
fn once_each(files: Vec<PathBuf>, seen: &mut HashSet<(u64, u64)>) -> Vec<PathBuf> {
    files
        .into_iter()
        .filter(|f| std::fs::metadata(f).map_or(true, |m| seen.insert((m.dev(), m.ino()))))
        .collect()
}

/// A depth-first walk that enters each real folder once (by device and inode).
struct Walker<'a> {
    seen: HashSet<(u64, u64)>,
    damage: &'a mut Damage,
}

impl Walker<'_> {
    fn walk(&mut self, dir: &Path, out: &mut Vec<PathBuf>) {
        let meta = match std::fs::metadata(dir) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(e) => {
                self.damage.add_unreadable(dir, format!("cannot read folder: {e}"));
                return;
            }
        };
        if !self.seen.insert((meta.dev(), meta.ino())) {
            return;
        }
        let rd = match std::fs::read_dir(dir) {
            Ok(rd) => rd,
            Err(e) => {
                self.damage.add_unreadable(dir, format!("cannot read folder: {e}"));
                return;
            }
        };
        let mut entries: Vec<_> = rd.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let p = e.path();
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() || (ft.is_symlink() && p.is_dir()) {
                self.walk(&p, out);
            } else if is_transcript_name(&p) {
                // A FIFO, socket or device named like a transcript is never opened: reading a
                // FIFO would wait for a writer forever. A link that leads nowhere is kept, so
                // that reading it reports why.
                if std::fs::metadata(&p).is_ok_and(|m| !m.is_file()) {
                    self.damage.add_unreadable(
                        &p,
                        "not a regular file (a FIFO, device or socket); skipped",
                    );
                    continue;
                }
                out.push(p);
            }
        }
    }
}

/// Drop `x.jsonl.zst` when `x.jsonl` is also there.
fn prefer_plain(mut files: Vec<PathBuf>) -> Vec<PathBuf> {
    files.sort();
    files.dedup();
    let plain: std::collections::HashSet<PathBuf> =
        files.iter().filter(|p| !p.to_string_lossy().ends_with(".zst")).cloned().collect();
    files.retain(|p| {
        let s = p.to_string_lossy();
        match s.strip_suffix(".zst") {
            Some(base) => !plain.contains(Path::new(base)),
            None => true,
        }
    });
    files
}

/// Group Claude files into sessions: `<dir>/<id>.jsonl` with `<dir>/<id>/subagents/*.jsonl`.
fn group_claude(files: Vec<PathBuf>) -> Vec<SessionFiles> {
    let mut groups: BTreeMap<PathBuf, (bool, Vec<PathBuf>)> = BTreeMap::new();
    for f in files {
        let parent = f.parent().unwrap_or(Path::new(""));
        if parent.file_name().is_some_and(|n| n == "subagents") {
            if let Some(session_dir) = parent.parent() {
                let main = session_dir.with_file_name(format!(
                    "{}.jsonl",
                    session_dir.file_name().map(|n| n.to_string_lossy()).unwrap_or_default()
                ));
                groups.entry(main).or_default().1.push(f);
                continue;
            }
        }
        groups.entry(f).or_default().0 = true;
    }
    groups
        .into_iter()
        .map(|(main, (present, mut subagents))| {
            subagents.sort();
            SessionFiles {
                session_id: stem(&main),
                project_dir: main
                    .parent()
                    .and_then(|p| p.file_name())
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                main: present.then_some(main),
                subagents,
            }
        })
        .collect()
}

/// Whether a file is a Codex rollout: named `rollout-…`, or its first line has the
/// `{timestamp, type, payload}` envelope.
pub(crate) fn sniff_codex(p: &Path) -> bool {
    if p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("rollout-")) {
        return true;
    }
    let Ok(r) = super::lines::open(p) else { return false };
    let mut head = vec![0; 64 << 10];
    let mut n = 0;
    let mut r = r.take(head.len() as u64);
    while let Ok(k) = r.read(&mut head[n..]) {
        if k == 0 {
            break;
        }
        n += k;
    }
    let first = head[..n].split(|&b| b == b'\n').next().unwrap_or_default();
    memchr::memmem::find(first, b"\"payload\"").is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_roots_never_fall_back_to_a_relative_path() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| OsString::from(v))
        };
        let roots = |pairs| claude_roots_in(&env(pairs));
        assert_eq!(roots(&[("HOME", "/home/u")]).unwrap(), [PathBuf::from("/home/u/.claude")]);
        assert_eq!(
            roots(&[("HOME", "/home/u"), ("CLAUDE_CONFIG_DIR", "/a, /b")]).unwrap(),
            [PathBuf::from("/a"), PathBuf::from("/b")]
        );
        assert_eq!(roots(&[("CLAUDE_CONFIG_DIR", "/a")]).unwrap(), [PathBuf::from("/a")]);
        for (pairs, want) in [
            (&[][..], "HOME is not set"),
            (&[("HOME", ""), ("CLAUDE_CONFIG_DIR", " , ")][..], "HOME is not set"),
            (&[("HOME", "u")][..], "HOME (u) is not an absolute path"),
        ] {
            let e = roots(pairs).unwrap_err();
            assert!(e.to_string().starts_with(want), "{pairs:?}: {e}");
            assert_eq!(e.exit_code(), 2);
            assert!(e.hint().unwrap().starts_with("set HOME"), "{e:?}");
        }
    }

    #[test]
    fn measure_takes_its_claude_roots_from_the_same_function_as_the_hook() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| OsString::from(v))
        };
        let roots = |pairs| default_roots_in(&env(pairs));
        let (c, x) = roots(&[("HOME", "/h"), ("CLAUDE_CONFIG_DIR", " , ")]).unwrap();
        assert_eq!(c, [PathBuf::from("/h/.claude/projects")]);
        assert_eq!(x[0], PathBuf::from("/h/.codex/sessions"));
        let (c, x) = roots(&[("CLAUDE_CONFIG_DIR", "/a,/b"), ("CODEX_HOME", "/x")]).unwrap();
        assert_eq!(c, [PathBuf::from("/a/projects"), PathBuf::from("/b/projects")]);
        assert_eq!(x[1], PathBuf::from("/x/archived_sessions"));
        // A blank CLAUDE_CONFIG_DIR without HOME once read `.claude/` of the current folder.
        for pairs in [&[("CLAUDE_CONFIG_DIR", " "), ("CODEX_HOME", "/x")][..], &[("HOME", "h")]] {
            let e = roots(pairs).unwrap_err();
            assert!(e.to_string().starts_with("HOME is not set to an absolute folder"), "{e}");
            assert_eq!(e.exit_code(), 2);
        }
    }

    #[test]
    fn subagent_files_join_their_session_and_plain_beats_zst() {
        let files = vec![
            PathBuf::from("/p/proj/s1.jsonl"),
            PathBuf::from("/p/proj/s1/subagents/agent-b.jsonl"),
            PathBuf::from("/p/proj/s1/subagents/agent-a.jsonl"),
            PathBuf::from("/p/proj/s2/subagents/agent-c.jsonl"),
            PathBuf::from("/p/proj/s3.jsonl"),
            PathBuf::from("/p/proj/s3.jsonl.zst"),
        ];
        let g = group_claude(prefer_plain(files));
        assert_eq!(g.len(), 3);
        assert_eq!(g[0].session_id, "s1");
        assert_eq!(g[0].project_dir, "proj");
        assert_eq!(
            g[0].subagents,
            [
                PathBuf::from("/p/proj/s1/subagents/agent-a.jsonl"),
                PathBuf::from("/p/proj/s1/subagents/agent-b.jsonl")
            ]
        );
        assert_eq!(g[1].main, None);
        assert_eq!(g[1].subagents.len(), 1);
        assert_eq!(g[2].main, Some(PathBuf::from("/p/proj/s3.jsonl")));
        assert_eq!(stem(Path::new("a/b.jsonl.zst")), "b");
    }
}
