//! `kit freeze PATH…`, `kit freeze --check`, `kit freeze --restore` and `kit freeze --list`
//! (DESIGN §5).
//!
//! Freezing records each file's sha256, size and git-style mode in `longrun/frozen.toml` and
//! stores its content at `longrun/.frozen/objects/<sha256>`; a folder is walked (skipping `.git`,
//! `longrun/` and test-runner caches) and recorded in `dirs`, so a file appearing under it later
//! counts as a cheat. Freezing again adds and updates entries; re-freezing a folder drops the
//! entries of files no longer in it. Every path is checked before anything is written, and the
//! copies are stored before the manifest that names them is rewritten.
//!
//! Exit status of `--check`: 0 when the tree matches, 1 when drift was found (each path is
//! named with its kind), 2 for bad input.
//!
//! While a loop runs (it holds `longrun/.lock`), freezing and `--restore` refuse with exit 4
//! naming the holder: the loop protects the manifest it loaded at its start, and a manifest
//! changed under it — by the agent, or by hand — would turn the agent's edits into the frozen
//! truth for the next run. `--check` and `--list` only read, so they stay allowed.

use std::collections::BTreeSet;
use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use rayon::prelude::*;

use super::guard::{Drift, DriftKind, Guard};
use super::manifest::{self, FileEntry, Manifest};
use super::{inspect, walk, ModeRule};
use crate::error::{Error, IoContext, Result, EXIT_CHECK_FAILED, EXIT_OK};
use crate::longrun::Project;
use crate::term::Theme;

/// What `kit freeze` was asked to do.
#[derive(Clone, Debug)]
pub enum FreezeAction {
    /// Freeze these files and folders (relative to the current folder, or absolute).
    Freeze(Vec<PathBuf>),
    /// List drift from the manifest.
    Check,
    /// Put every drifted frozen file back from its stored copy.
    Restore,
    /// Print the frozen paths, one per line (see [`list_paths`]).
    List,
}

/// Run `kit freeze` in `cwd`, printing to `out`. Returns the exit status. `constraints` holds the
/// items of goal.md's `## Constraints` (None: no goal.md, or one that does not parse), read by
/// the caller (the frozen layer does not read goals): a freeze asks to name the frozen paths
/// there only when they do not name them already.
///
/// Errors: [`Error::Usage`] for a path that is missing, a link, outside the repository or inside
/// `longrun/`/`.git`, or when `longrun/` does not exist; [`Error::Input`] for a malformed
/// `frozen.toml`; [`Error::Io`] naming the file that could not be read or written;
/// [`Error::Locked`] (exit 4) when freezing or restoring while a loop runs.
pub fn run(
    cwd: &Path,
    action: &FreezeAction,
    constraints: Option<&[String]>,
    theme: &Theme,
    out: &mut dyn Write,
) -> Result<u8> {
    let project = Project::discover_initialised(cwd)?;
    if !matches!(action, FreezeAction::Check | FreezeAction::List) {
        if let Some(holder) = crate::longrun::running_loop(&project) {
            return Err(Error::Locked { path: project.lock(), holder: holder.describe() });
        }
    }
    // An interrupted loop is still a loop: its run is open in the journal, and the manifest is
    // what the resumed run will protect. Re-freezing now would let whoever killed the loop (an
    // agent can) make its weakened test the frozen version. Restoring is always safe.
    if let FreezeAction::Freeze(_) = action {
        let history = crate::longrun::history::History::read(&project.journal())?;
        if let Some(open) = history.open_run {
            return Err(Error::usage(format!(
                "the loop started at {} (pid {}) was interrupted and its run is still open in \
                 longrun/journal.jsonl; kit freeze would change what that run protects",
                open.started, open.pid
            ))
            .with_hint(
                "kit loop resumes the run (it restores the frozen files first); to close it \
                 without an agent: touch longrun/PAUSE && kit loop (exit 5), rm longrun/PAUSE, then kit freeze",
            ));
        }
    }
    match action {
        FreezeAction::Freeze(paths) => freeze(&project, cwd, paths, constraints, theme, out),
        FreezeAction::Check => check(&project, theme, out),
        FreezeAction::Restore => restore(&project, theme, out),
        FreezeAction::List => {
            let m = Manifest::load(&project.frozen())?;
            for p in list_paths(&m) {
                writeln!(out, "{p}").at(Path::new("stdout"))?;
            }
            Ok(EXIT_OK)
        }
    }
}

/// The paths `m` freezes as `kit freeze` was given them, for `kit freeze --list`: each frozen
/// folder with a trailing `/`, and each frozen file that lies in no frozen folder (a folder
/// names its files), sorted by path. `kit freeze` given these paths again freezes the same
/// paths; nothing frozen gives none.
pub fn list_paths(m: &Manifest) -> Vec<String> {
    let mut out: Vec<String> = m.dirs.iter().map(|d| format!("{d}/")).collect();
    out.extend(
        m.files.keys().filter(|f| !m.dirs.iter().any(|d| manifest::is_under(f, d))).cloned(),
    );
    out.sort();
    out.dedup();
    out
}

/// Every drift of the tree from the manifest on disk: each frozen file (content and git-style
/// mode), each stored copy, and new files under the frozen folders; sorted by path. Unlike the
/// [`Guard`], it trusts `frozen.toml` as it is now.
pub fn check_manifest(project: &Project, m: &Manifest) -> Result<Vec<Drift>> {
    let root = &project.root;
    super::guard::unlisted_at_base(root, m)?;
    let objects_rel = format!("{}/.frozen/objects", crate::longrun::DIR);
    let wanted: Vec<(String, &str, ModeRule)> = m
        .files
        .iter()
        .flat_map(|(rel, e)| {
            [
                (rel.clone(), e.sha256.as_str(), ModeRule::Git(&e.mode)),
                (format!("{objects_rel}/{}", e.sha256), e.sha256.as_str(), ModeRule::Any),
            ]
        })
        .collect();
    let mut out: Vec<Drift> = wanted
        .into_par_iter()
        .filter_map(|(rel, sha, mode)| {
            inspect(root, &rel, sha, mode).map(|kind| Drift { path: rel, kind })
        })
        .collect();
    for d in &m.dirs {
        for e in walk(root, d)?.entries {
            if !m.files.contains_key(&e.rel) {
                out.push(Drift { path: e.rel, kind: DriftKind::NewFile });
            }
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// The drift of the frozen files themselves (not of kit's stored copies) from `frozen.toml` as
/// it is now: what `kit freeze --check` reports for the user's files.
///
/// Errors: a malformed `frozen.toml`, or a frozen folder that cannot be read.
pub fn drift_of_user_files(project: &Project) -> Result<Vec<Drift>> {
    let m = Manifest::load(&project.frozen())?;
    let stored = format!("{}/.frozen/", crate::longrun::DIR);
    Ok(check_manifest(project, &m)?.into_iter().filter(|d| !d.path.starts_with(&stored)).collect())
}

/// One file to freeze, found while resolving the arguments.
struct Found {
    rel: String,
    bytes: Vec<u8>,
    perm: u32,
}

fn freeze(
    project: &Project,
    cwd: &Path,
    paths: &[PathBuf],
    constraints: Option<&[String]>,
    theme: &Theme,
    out: &mut dyn Write,
) -> Result<u8> {
    let root = project.root.canonicalize().at(&project.root)?;
    let mut m = Manifest::load(&project.frozen())?;
    m.format_version = manifest::FORMAT_VERSION;

    // Resolve and read everything first: a bad argument writes nothing.
    let mut found: Vec<Found> = Vec::new();
    let mut new_dirs: Vec<(String, usize)> = Vec::new();
    for p in paths {
        let rel = resolve(&root, cwd, p)?;
        let abs = root.join(&rel);
        let meta = fs::symlink_metadata(&abs).at(&abs)?;
        if meta.is_dir() {
            let w = walk(&root, &rel)?;
            let mut n = 0;
            for e in w.entries {
                if e.is_link {
                    return Err(Error::usage(format!(
                        "{} is a symbolic link inside {rel}/; kit freezes regular files only",
                        e.rel
                    ))
                    .with_hint(format!(
                        "remove the link or freeze the files of {rel}/ one by one"
                    )));
                }
                if !e.is_file {
                    return Err(Error::usage(format!("{} is not a regular file", e.rel))
                        .with_hint(format!("freeze the files of {rel}/ one by one")));
                }
                found.push(read_found(&root, e.rel)?);
                n += 1;
            }
            new_dirs.push((rel, n));
        } else {
            found.push(read_found(&root, rel)?);
        }
    }

    // Store the copies, then rewrite the manifest that names them.
    let objects = project.frozen_objects();
    crate::atomic::create_dir_all(&objects)?;
    let mut lines = Vec::new();
    let mut seen = BTreeSet::new();
    for (dir, _) in &new_dirs {
        let gone: Vec<String> = m
            .files
            .keys()
            .filter(|k| manifest::is_under(k, dir) && !found.iter().any(|f| &f.rel == *k))
            .cloned()
            .collect();
        for k in gone {
            m.files.remove(&k);
            lines.push(("dropped", k, None));
        }
        if !m.dirs.contains(dir) {
            m.dirs.push(dir.clone());
        }
    }
    m.dirs.sort();
    for f in found {
        if !seen.insert(f.rel.clone()) {
            continue;
        }
        let sha256 = crate::digest::sha256_hex(&f.bytes);
        let obj = objects.join(&sha256);
        if fs::read(&obj).map(|b| crate::digest::sha256_hex(&b)).ok().as_deref() != Some(&sha256) {
            crate::atomic::write_atomic_mode(&obj, &f.bytes, 0o644)?;
        }
        let entry = FileEntry {
            sha256,
            size: f.bytes.len() as u64,
            mode: manifest::git_mode(f.perm).to_string(),
        };
        let status = match m.files.get(&f.rel) {
            None => "added",
            Some(old) if *old == entry => "unchanged",
            Some(_) => "updated",
        };
        lines.push((status, f.rel.clone(), Some(entry.clone())));
        m.files.insert(f.rel, entry);
    }
    m.base_commit = head_commit(&project.root);
    m.save(&project.frozen())?;

    for (dir, n) in &new_dirs {
        let files = if *n == 1 { "file" } else { "files" };
        writeln!(
            out,
            "froze {dir}/ ({n} {files}; a new file appearing under it counts as a cheat)"
        )
        .at(Path::new("stdout"))?;
    }
    let width = lines.iter().map(|(_, rel, _)| rel.len()).max().unwrap_or(0);
    for (status, rel, entry) in &lines {
        let status = match *status {
            "added" | "updated" => theme.ok(&format!("{status:<9}")),
            "dropped" => theme.warn(&format!("{status:<9}")),
            s => format!("{s:<9}"),
        };
        let detail = match entry {
            Some(e) => format!("{}  {} bytes  sha256 {}", e.mode, e.size, &e.sha256[..12]),
            None => "no longer there; its entry is removed".to_string(),
        };
        writeln!(out, "  {status} {rel:<width$}  {detail}").at(Path::new("stdout"))?;
    }
    let base = if m.base_commit.is_empty() {
        "no commit yet".to_string()
    } else {
        format!("base commit {}", &m.base_commit[..m.base_commit.len().min(7)])
    };
    let (nf, nd) = (m.files.len(), m.dirs.len());
    writeln!(
        out,
        "longrun/frozen.toml: {nf} {} in {nd} {}, {base}; copies in longrun/.frozen/objects/",
        if nf == 1 { "file" } else { "files" },
        if nd == 1 { "frozen folder" } else { "frozen folders" },
    )
    .at(Path::new("stdout"))?;
    let named = constraints.is_some_and(|c| all_named_in_constraints(c, &m));
    let next = if named { NEXT_WHEN_NAMED } else { NEXT_AFTER_FREEZE };
    writeln!(out, "{}", theme.dim(next)).at(Path::new("stdout"))?;
    Ok(EXIT_OK)
}

/// Whether the Constraints items `constraints` already name every path `m` freezes, so that
/// `kit freeze` need not ask for it. A path is named when an item holds it, or a folder above it,
/// as a word of its own (`tests/`, `` `tests` ``, `tests/test_x.py.` at the end of a sentence;
/// see [`constraint_words`]).
fn all_named_in_constraints(constraints: &[String], m: &Manifest) -> bool {
    let words = constraint_words(constraints);
    named_by(&words, m.dirs.iter().chain(m.files.keys()))
}

/// The words of Constraints items that name a path: runs of letters, digits and `._-/` written as
/// a path (with a `/`, a `.` inside, or between backticks), without a leading `./` or a trailing
/// `.` or `/`. "the tests decide" names no path; "tests/" and "`tests`" do.
fn constraint_words(items: &[String]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for item in items {
        for raw in item.split(|c: char| !(c.is_alphanumeric() || "._-/".contains(c))) {
            let word = raw.trim_start_matches("./").trim_end_matches(['.', '/']);
            let path_like =
                raw.contains('/') || word.contains('.') || item.contains(&format!("`{word}`"));
            if !word.is_empty() && path_like {
                out.insert(word.to_string());
            }
        }
    }
    out
}

/// Whether every path of `paths` (repo-relative, `/`-separated) is in `words`, itself or a folder
/// above it.
fn named_by<'a>(words: &BTreeSet<String>, mut paths: impl Iterator<Item = &'a String>) -> bool {
    paths.all(|p| {
        let mut at = p.as_str();
        loop {
            if words.contains(at) {
                return true;
            }
            match at.rsplit_once('/') {
                Some((up, _)) => at = up,
                None => return false,
            }
        }
    })
}

fn check(project: &Project, theme: &Theme, out: &mut dyn Write) -> Result<u8> {
    let m = Manifest::load(&project.frozen())?;
    let stdout = Path::new("stdout");
    if m.files.is_empty() && m.dirs.is_empty() {
        writeln!(out, "nothing is frozen yet: longrun/frozen.toml lists no files").at(stdout)?;
        writeln!(out, "next: kit freeze tests   (the folder of the tests your criteria run)")
            .at(stdout)?;
        return Ok(EXIT_OK);
    }
    let drifts = check_manifest(project, &m)?;
    if drifts.is_empty() {
        let (nf, nd) = (m.files.len(), m.dirs.len());
        writeln!(
            out,
            "{}: {nf} frozen {} and {nd} frozen {} match longrun/frozen.toml",
            theme.ok("clean"),
            if nf == 1 { "file" } else { "files" },
            if nd == 1 { "folder" } else { "folders" },
        )
        .at(stdout)?;
        return Ok(EXIT_OK);
    }
    let width = drifts.iter().map(|d| d.kind.describe().len()).max().unwrap_or(0);
    for d in &drifts {
        let kind = theme.bad(&format!("{:<width$}", d.kind.describe()));
        writeln!(out, "{kind}  {}{}", d.path, detail(project, &m, d)).at(stdout)?;
    }
    let n = drifts.len();
    writeln!(
        out,
        "{n} {} from longrun/frozen.toml",
        if n == 1 { "path drifted" } else { "paths drifted" }
    )
    .at(stdout)?;
    writeln!(out, "{NEXT_AFTER_DRIFT}").at(stdout)?;
    Ok(EXIT_CHECK_FAILED)
}

fn restore(project: &Project, theme: &Theme, out: &mut dyn Write) -> Result<u8> {
    let reverts = Guard::capture(project)?.restore()?;
    let stdout = Path::new("stdout");
    if reverts.is_empty() {
        writeln!(out, "nothing to restore: every frozen file matches longrun/frozen.toml")
            .at(stdout)?;
        return Ok(EXIT_OK);
    }
    for r in &reverts {
        let verb = if r.kind == DriftKind::NewFile { "removed " } else { "restored" };
        writeln!(out, "{} {}  (was {})", theme.ok(verb), r.path, r.kind.describe()).at(stdout)?;
    }
    writeln!(out, "{} paths put back; kit freeze --check now reports clean", reverts.len())
        .at(stdout)?;
    Ok(EXIT_OK)
}

/// Extra words after a drifted path: the mode change, or which frozen file a copy belongs to.
fn detail(project: &Project, m: &Manifest, d: &Drift) -> String {
    if let Some(e) = m.files.get(&d.path) {
        if d.kind == DriftKind::ModeChanged {
            let now = fs::symlink_metadata(project.root.join(&d.path))
                .map(|md| manifest::git_mode(md.permissions().mode()))
                .unwrap_or("?");
            return format!("  ({} → {now})", e.mode);
        }
        return String::new();
    }
    if let Some(sha) = d.path.rsplit('/').next() {
        if let Some((rel, _)) = m.files.iter().find(|(_, e)| e.sha256 == sha) {
            return format!("  (the stored copy of {rel})");
        }
    }
    String::new()
}

/// Resolve an argument to a path relative to the root, refusing what kit will not freeze.
fn resolve(root: &Path, cwd: &Path, p: &Path) -> Result<String> {
    let abs = cwd.join(p);
    let shown = p.display();
    let meta = fs::symlink_metadata(&abs).map_err(|_| {
        Error::usage(format!("{shown}: no such file or folder"))
            .with_hint("kit freeze takes paths of existing files or folders, e.g. kit freeze tests")
    })?;
    if meta.file_type().is_symlink() {
        return Err(Error::usage(format!(
            "{shown} is a symbolic link; kit freezes regular files and folders, not links"
        ))
        .with_hint("freeze the file or folder it points to"));
    }
    if !meta.is_dir() && !meta.is_file() {
        return Err(Error::usage(format!("{shown} is neither a regular file nor a folder")));
    }
    let canon = abs.canonicalize().at(&abs)?;
    let rel = canon.strip_prefix(root).map_err(|_| {
        Error::usage(format!("{shown} is outside the repository {}", root.display()))
            .with_hint("freeze files inside the repository kit init set up")
    })?;
    let mut parts = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(s) => parts.push(s.to_str().ok_or_else(|| {
                Error::usage(format!("{shown}: kit freezes paths that are valid UTF-8"))
            })?),
            _ => return Err(Error::internal(format!("{shown}: unexpected path component"))),
        }
    }
    let rel = parts.join("/");
    if rel.is_empty() {
        return Err(Error::usage(
            "refusing to freeze the whole repository: the agent could change nothing",
        )
        .with_hint("freeze the tests and fixtures only, e.g. kit freeze tests"));
    }
    if manifest::is_under(&rel, crate::longrun::DIR) || parts.contains(&".git") {
        return Err(Error::usage(format!(
            "{rel} belongs to kit or git; goal.md, config.toml and frozen.toml are frozen during a \
             loop without kit freeze"
        ))
        .with_hint("freeze your project's tests, e.g. kit freeze tests"));
    }
    Ok(rel)
}

fn read_found(root: &Path, rel: String) -> Result<Found> {
    let abs = root.join(&rel);
    let bytes = fs::read(&abs).at(&abs)?;
    let perm = fs::metadata(&abs).at(&abs)?.permissions().mode();
    Ok(Found { rel, bytes, perm })
}

/// HEAD's commit id, or "" before the first commit.
fn head_commit(root: &Path) -> String {
    crate::git::lines_in(root, &["rev-parse", "--verify", "-q", "HEAD"])
        .and_then(|l| l.into_iter().next())
        .map(|l| l.trim().to_string())
        .unwrap_or_default()
}

const NEXT_AFTER_FREEZE: &str =
    "next: name the frozen paths under Constraints in longrun/goal.md, then kit goal check";

const NEXT_WHEN_NAMED: &str =
    "next: kit goal check (the Constraints of longrun/goal.md name the frozen paths)";

const NEXT_AFTER_DRIFT: &str = "next: kit freeze --restore puts them back from the stored copies\n\
     (to accept a deliberate change instead, kit freeze PATH again)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_names_each_folder_and_each_file_outside_the_folders() {
        let entry = || FileEntry { sha256: "a".repeat(64), size: 1, mode: "100644".into() };
        // (dirs, files, the list)
        let cases: &[(&[&str], &[&str], &[&str])] = &[
            (&[], &[], &[]),
            (&["tests", "tools"], &["tests/__init__.py", "tools/b.py"], &["tests/", "tools/"]),
            (
                &[],
                &["tools/b.py", "tests/test_a.py", "tests/__init__.py"],
                &["tests/__init__.py", "tests/test_a.py", "tools/b.py"],
            ),
            (
                &["tests"],
                &["tests/a.py", "tests2/b.py", "setup.cfg"],
                &["setup.cfg", "tests/", "tests2/b.py"],
            ),
            (&["tests/unit"], &["tests/unit/a.py", "tests/b.py"], &["tests/b.py", "tests/unit/"]),
            // A folder frozen with no file in it yet is still listed.
            (&["fixtures"], &[], &["fixtures/"]),
        ];
        for (dirs, files, want) in cases {
            let mut m = Manifest::new();
            m.dirs = dirs.iter().map(|d| d.to_string()).collect();
            m.files = files.iter().map(|f| (f.to_string(), entry())).collect();
            assert_eq!(list_paths(&m), *want, "{dirs:?} {files:?}");
        }
    }

    #[test]
    fn a_frozen_path_is_named_by_itself_or_a_folder_above_it_as_a_word_of_its_own() {
        let cases: &[(&str, &[&str], bool)] = &[
            ("tests/ and tools/ are frozen; do not edit them.", &["tests", "tools"], true),
            ("`tests/` and `tools/` are frozen", &["tests/test_durations.py", "tools"], true),
            ("do not edit tests/test_durations.py.", &["tests/test_durations.py"], true),
            ("do not edit ./tests", &["tests/__init__.py"], true),
            ("the tests decide; tools/ is frozen", &["tests", "tools"], false),
            ("`tests` and `tools` are frozen", &["tests", "tools"], true),
            ("the tests decide; tools/ is frozen", &["tests/x.py"], false),
            ("tests/unit is frozen", &["tests"], false),
            ("Standard library only.", &["tests"], false),
            ("my_tests/ are frozen", &["tests"], false),
        ];
        for (item, paths, named) in cases {
            let words = constraint_words(&[item.to_string()]);
            let paths: Vec<String> = paths.iter().map(|p| p.to_string()).collect();
            assert_eq!(named_by(&words, paths.iter()), *named, "{item:?} naming {paths:?}");
        }
    }
}
