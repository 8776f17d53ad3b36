//! The frozen-file guard the loop runs after every agent iteration (DESIGN §5, §12).
//!
//! [`Guard::capture`] loads `frozen.toml` once, at the start of a loop, and holds in memory the
//! bytes and permission bits of every frozen file, of the implicitly frozen `goal.md`,
//! `config.toml` and `frozen.toml`, and of the stored copies in `longrun/.frozen/objects/`.
//! From then on nothing on disk can change what is protected: an agent that edits the manifest
//! or a stored copy has edited two more frozen files.
//!
//! [`Guard::check`] compares the working tree with what it holds; [`Guard::restore`] puts every
//! drifted path back byte for byte. The cheat catalogue it answers (tests/it/freeze.rs proves
//! each one): edit, delete, rename (deleted + new file), truncate, mode change, link swap (of the
//! file or of a folder above it), new file in a frozen folder, edit of goal/config/manifest,
//! edit or delete of a stored copy, a rewrite of the journal's history, and a `git commit` or
//! `git reset` that changes frozen files (the guard compares the working tree, whatever HEAD
//! says), and a new module that shadows the test runner or Python's start-up (see
//! [`RUNNER_SHADOWS`]).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::manifest::{self, Manifest};
use super::{inspect, walk, ModeRule, CACHE_DIRS};
use crate::error::{Error, IoContext, Result};
use crate::longrun::Project;

/// How a frozen path differs from what was frozen. Serialised in snake_case
/// (`"modified"`, `"deleted"`, `"mode_changed"`, `"replaced_by_link"`, `"new_file"`), as the
/// journal's `cheat` events carry it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DriftKind {
    /// Different content (including truncation), or a folder where the file was.
    Modified,
    /// Gone: deleted, or renamed away.
    Deleted,
    /// Same content, other permission bits (e.g. `chmod +x`).
    ModeChanged,
    /// The file, or a folder above it, is now a symbolic link.
    ReplacedByLink,
    /// A file that was not there appeared under a frozen folder (a rename lands here too).
    NewFile,
    /// A new, untracked file or folder on the criteria's import path that Python would import
    /// instead of the test runner or run at start-up (see [`RUNNER_SHADOWS`]); removed.
    ShadowsRunner,
}

/// Names that, new on the criteria's import path (the repository root, the frozen folders and
/// their parents), replace what the criteria run: `python3 -m unittest` or `pytest` import a
/// local `unittest/` or `pytest.py` before the standard one, `conftest.py` is loaded by pytest,
/// `sitecustomize.py`, `usercustomize.py` and any `*.pth` run at interpreter start-up. Such an
/// entry that is not tracked by git when the loop starts is removed after every iteration and
/// journaled as a `shadows_runner` cheat.
pub const RUNNER_SHADOWS: [&str; 12] = [
    "unittest",
    "unittest.py",
    "pytest",
    "pytest.py",
    "_pytest",
    "py.test",
    "conftest.py",
    "sitecustomize.py",
    "usercustomize.py",
    // make reads GNUmakefile, then makefile, before Makefile: a new one replaces a frozen Makefile.
    "GNUmakefile",
    "makefile",
    // pyenv's shims pick the interpreter named there.
    ".python-version",
];

/// Standard-library modules the runners import after the repository root is on `sys.path`
/// (so a local `difflib.py`, a sourceless `traceback.pyc` or a `re/__init__.py` package is
/// imported instead, inside the runner). Found with `python3 -X importtime -m unittest -h` and
/// `python3 -X importtime -m pytest --version` (CPython 3.11, pytest 8). Only an entry that
/// is new and untracked during a run is removed; one that git tracks stays, but the loop
/// refuses done while it is there ([`shadows_stdlib_entry`], [`Guard::stdlib_shadows`]).
pub const STDLIB_SHADOWS: &[&str] = &[
    "abc",
    "argparse",
    "ast",
    "bisect",
    "bz2",
    "codecs",
    "collections",
    "contextlib",
    "copy",
    "copyreg",
    "dataclasses",
    "difflib",
    "dis",
    "encodings",
    "enum",
    "fnmatch",
    "functools",
    "genericpath",
    "gettext",
    "glob",
    "heapq",
    "importlib",
    "inspect",
    "io",
    "ipaddress",
    "json",
    "keyword",
    "linecache",
    "locale",
    "logging",
    "lzma",
    "ntpath",
    "opcode",
    "operator",
    "os",
    "pathlib",
    "platform",
    "posixpath",
    "pprint",
    "random",
    "re",
    "reprlib",
    "runpy",
    "selectors",
    "shlex",
    "shutil",
    "signal",
    "site",
    "socket",
    "stat",
    "string",
    "struct",
    "subprocess",
    "tempfile",
    "textwrap",
    "threading",
    "token",
    "tokenize",
    "tomllib",
    "traceback",
    "types",
    "typing",
    "urllib",
    "warnings",
    "weakref",
    "zipfile",
    "_pytest",
    "pluggy",
    "iniconfig",
    "packaging",
];

/// True for a name in [`RUNNER_SHADOWS`], ending in `.pth`, a sourceless `.pyc` of one of them,
/// or a module of [`STDLIB_SHADOWS`] (`NAME.py`, `NAME.pyc`, or a folder `NAME` that is a
/// package — `is_package` says whether it holds `__init__.py`).
pub fn shadows_runner(name: &str) -> bool {
    shadows_runner_entry(name, false)
}

/// [`shadows_runner`] for a directory entry: `is_package` is true for a folder with an
/// `__init__.py`.
pub fn shadows_runner_entry(name: &str, is_package: bool) -> bool {
    if RUNNER_SHADOWS.contains(&name) || name.ends_with(".pth") {
        return true;
    }
    if let Some(stem) = name.strip_suffix(".pyc") {
        return RUNNER_SHADOWS.contains(&format!("{stem}.py").as_str())
            || RUNNER_SHADOWS.contains(&stem)
            || STDLIB_SHADOWS.contains(&stem);
    }
    if let Some(stem) = name.strip_suffix(".py") {
        return STDLIB_SHADOWS.contains(&stem);
    }
    is_package && STDLIB_SHADOWS.contains(&name)
}

/// Names of [`STDLIB_SHADOWS`] that are not the standard library's but pytest's own modules: a
/// project may have its own package named like one (`packaging/`), so [`shadows_stdlib_entry`]
/// leaves them to the guard's rule for new, untracked entries.
const THIRD_PARTY_SHADOWS: [&str; 4] = ["_pytest", "pluggy", "iniconfig", "packaging"];

/// True for an entry on the criteria's import path that replaces a module of Python's standard
/// library which the runners import (`unittest/` with an `__init__.py`, `unittest.py`,
/// `difflib.py`, a sourceless `traceback.pyc`, `sitecustomize.py`), whether git tracks it or
/// not: the loop refuses done while one is there ([`Guard::stdlib_shadows`]). A folder without
/// `__init__.py` is a namespace package, which a regular module later on `sys.path` wins over,
/// so `is_package` must be true for a folder to count.
pub fn shadows_stdlib_entry(name: &str, is_package: bool) -> bool {
    let stdlib = |stem: &str| {
        stem == "unittest"
            || (STDLIB_SHADOWS.contains(&stem) && !THIRD_PARTY_SHADOWS.contains(&stem))
    };
    if matches!(name, "sitecustomize.py" | "usercustomize.py") {
        return true;
    }
    match name.strip_suffix(".py").or_else(|| name.strip_suffix(".pyc")) {
        Some(stem) => stdlib(stem),
        None => is_package && stdlib(name),
    }
}

impl DriftKind {
    /// How kit prints it: `modified`, `deleted`, `mode changed`, `replaced by a link`,
    /// `new file in a frozen folder`.
    pub fn describe(self) -> &'static str {
        match self {
            DriftKind::Modified => "modified",
            DriftKind::Deleted => "deleted",
            DriftKind::ModeChanged => "mode changed",
            DriftKind::ReplacedByLink => "replaced by a link",
            DriftKind::NewFile => "new file in a frozen folder",
            DriftKind::ShadowsRunner => "shadows the test runner or Python start-up",
        }
    }
}

/// One frozen path that differs from what the guard holds.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Drift {
    /// Path relative to the repository root, `/`-separated.
    pub path: String,
    /// What happened to it.
    pub kind: DriftKind,
}

/// How many drifted paths a one-line message names before it says "and N more".
pub const LISTED_DRIFTS: usize = 5;

/// `path (what happened), …` for a one-line message: the first [`LISTED_DRIFTS`] pairs, then
/// `and N more (kit freeze --check lists them all)`.
pub fn list_drifts<'a>(drifts: impl IntoIterator<Item = (&'a str, DriftKind)>) -> String {
    let all: Vec<(&str, DriftKind)> = drifts.into_iter().collect();
    let mut text: Vec<String> =
        all.iter().take(LISTED_DRIFTS).map(|(p, k)| format!("{p} ({})", k.describe())).collect();
    if all.len() > LISTED_DRIFTS {
        text.push(format!(
            "and {} more (kit freeze --check lists them all)",
            all.len() - LISTED_DRIFTS
        ));
    }
    text.join(", ")
}

/// One path [`Guard::restore`] put back (or removed, for [`DriftKind::NewFile`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Revert {
    /// Path relative to the repository root, `/`-separated.
    pub path: String,
    /// The drift that was reverted.
    pub kind: DriftKind,
}

/// One protected file: where it lives, its content (by sha256 in [`Guard::blobs`]) and the
/// permission bits to restore.
#[derive(Clone, Debug)]
struct Held {
    rel: String,
    sha256: String,
    perm: u32,
}

/// Everything the loop protects, held in memory from the loop's start. Build with
/// [`Guard::capture`]; cheap to [`Guard::check`] (reads and hashes each protected file).
#[derive(Debug)]
pub struct Guard {
    root: PathBuf,
    /// `longrun/.frozen/objects`, relative to the root.
    objects_rel: String,
    /// Frozen files, then goal.md, config.toml, frozen.toml.
    files: Vec<Held>,
    /// Content by sha256: frozen files, implicitly frozen files and stored copies.
    blobs: BTreeMap<String, Vec<u8>>,
    /// Stored copies that must exist in `objects_rel`.
    objects: BTreeSet<String>,
    /// Everything in the stored-copies folder at capture (older copies included), relative to
    /// the root: anything else appearing there is a new file.
    objects_at_capture: BTreeSet<String>,
    /// Frozen folders.
    dirs: Vec<String>,
    /// Sub-folders of the frozen folders when captured (new ones are removed once empty).
    dirs_at_capture: BTreeSet<String>,
    /// Folders on the criteria's import path: the root (`""`), the frozen folders and their
    /// parents, the folders of frozen files.
    import_dirs: BTreeSet<String>,
    /// Entries named in [`RUNNER_SHADOWS`] there at capture and tracked by git: allowed.
    shadows_allowed: BTreeSet<String>,
    /// `longrun/journal.jsonl`, relative to the root.
    journal_rel: String,
    /// `journal.jsonl` is append-only: what it held at the last seal (capture, a clean check,
    /// [`Guard::seal_journal`]) must stay its prefix.
    journal: Mutex<JournalHold>,
}

/// The held prefix of `journal.jsonl`.
#[derive(Clone, Debug)]
struct JournalHold {
    prefix: Vec<u8>,
    perm: u32,
}

impl Guard {
    /// Load `frozen.toml` once and hold every protected file's bytes and mode.
    ///
    /// Each frozen file's content comes from its stored copy, whose sha256 is re-checked; if the
    /// copy is missing or damaged but the file in the tree still matches the manifest, the file
    /// is used (and the copy is re-written at the next [`Guard::restore`]). `goal.md`,
    /// `config.toml` and `frozen.toml` are held as they are now (a missing one is not held);
    /// `journal.jsonl` is held as a prefix that must stay (see [`Guard::seal_journal`]).
    ///
    /// Errors: [`Error::Input`] for a malformed `frozen.toml`; [`Error::Internal`] naming the
    /// path when a frozen file can be found neither in its stored copy nor in the tree.
    pub fn capture(project: &Project) -> Result<Guard> {
        let manifest = Manifest::load(&project.frozen())?;
        let root = project.root.clone();
        let objects_dir = project.frozen_objects();
        let objects_rel = rel_of(&root, &objects_dir);
        let mut g = Guard {
            root,
            objects_rel,
            files: Vec::new(),
            blobs: BTreeMap::new(),
            objects: BTreeSet::new(),
            objects_at_capture: BTreeSet::new(),
            dirs: manifest.dirs.clone(),
            dirs_at_capture: BTreeSet::new(),
            import_dirs: BTreeSet::new(),
            shadows_allowed: BTreeSet::new(),
            journal_rel: rel_of(&project.root, &project.journal()),
            journal: Mutex::new(JournalHold { prefix: Vec::new(), perm: 0o644 }),
        };
        g.seal_journal()?;
        for (rel, entry) in &manifest.files {
            let live = g.root.join(rel);
            let bytes = read_verified(&objects_dir.join(&entry.sha256), &entry.sha256)
                .or_else(|| read_verified(&live, &entry.sha256))
                .ok_or_else(|| {
                    Error::internal(format!(
                        "cannot protect {rel}: its stored copy {}/{} is missing or damaged and \
                         the file no longer matches frozen.toml",
                        g.objects_rel, entry.sha256
                    ))
                    .with_hint(format!(
                        "restore {rel} to the version you trust, then kit freeze {rel}"
                    ))
                })?;
            let perm = match fs::symlink_metadata(&live) {
                Ok(m) if m.is_file() => m.permissions().mode() & 0o7777,
                _ => 0,
            };
            let perm = if perm != 0 && manifest::git_mode(perm) == entry.mode {
                perm
            } else {
                manifest::default_perm(&entry.mode)
            };
            g.files.push(Held { rel: rel.clone(), sha256: entry.sha256.clone(), perm });
            g.objects.insert(entry.sha256.clone());
            g.blobs.insert(entry.sha256.clone(), bytes);
        }
        for path in [project.goal(), project.config(), project.frozen()] {
            let Ok(bytes) = fs::read(&path) else { continue };
            let perm = fs::metadata(&path).at(&path)?.permissions().mode() & 0o7777;
            let sha256 = crate::digest::sha256_hex(&bytes);
            g.files.push(Held { rel: rel_of(&g.root, &path), sha256: sha256.clone(), perm });
            g.blobs.insert(sha256, bytes);
        }
        for d in &g.dirs {
            g.dirs_at_capture.extend(walk(&g.root, d)?.dirs);
        }
        unlisted_at_base(&g.root, &manifest)?;
        g.import_dirs.insert(String::new());
        for d in &g.dirs {
            g.import_dirs.insert(d.clone());
            g.import_dirs.insert(parent_of(d));
        }
        for rel in manifest.files.keys() {
            g.import_dirs.insert(parent_of(rel));
        }
        let tracked = tracked_files(&g.root);
        g.shadows_allowed = g
            .shadows()
            .into_iter()
            .filter(|rel| {
                tracked.as_ref().is_none_or(|t| {
                    t.contains(rel)
                        || t.range(format!("{rel}/")..)
                            .next()
                            .is_some_and(|f| f.starts_with(&format!("{rel}/")))
                })
            })
            .collect();
        let stored = walk(&g.root, &g.objects_rel)?.entries.into_iter().map(|e| e.rel);
        g.objects_at_capture =
            stored.chain(g.objects.iter().map(|s| format!("{}/{s}", g.objects_rel))).collect();
        Ok(g)
    }

    /// Every protected path that differs from what was captured, sorted by path. Changes
    /// nothing. The stored-copies folder counts as a frozen folder: a file that was not there
    /// at capture is a new file. A frozen folder kit cannot read is reported as [`DriftKind::Modified`].
    pub fn check(&self) -> Vec<Drift> {
        // Hashing dominates; spread it over the cores.
        let objects: Vec<(String, &String, ModeRule)> = self
            .objects
            .iter()
            .map(|sha| (format!("{}/{sha}", self.objects_rel), sha, ModeRule::Any))
            .collect();
        let files = self.files.iter().map(|h| (h.rel.clone(), &h.sha256, ModeRule::Exact(h.perm)));
        let wanted: Vec<_> = objects.into_iter().chain(files).collect();
        let mut out: Vec<Drift> = wanted
            .into_par_iter()
            .filter_map(|(rel, sha, mode)| {
                inspect(&self.root, &rel, sha, mode).map(|kind| Drift { path: rel, kind })
            })
            .collect();
        if let Ok(w) = walk(&self.root, &self.objects_rel) {
            out.extend(
                w.entries
                    .into_iter()
                    .filter(|e| !self.objects_at_capture.contains(&e.rel))
                    .map(|e| Drift { path: e.rel, kind: DriftKind::NewFile }),
            );
        }
        let held: BTreeSet<&str> = self.files.iter().map(|h| h.rel.as_str()).collect();
        for d in &self.dirs {
            match walk(&self.root, d) {
                Ok(w) => out.extend(
                    w.entries
                        .into_iter()
                        .filter(|e| !held.contains(e.rel.as_str()))
                        .map(|e| Drift { path: e.rel, kind: DriftKind::NewFile }),
                ),
                Err(_) => out.push(Drift { path: d.clone(), kind: DriftKind::Modified }),
            }
        }
        if let Some(kind) = self.journal_drift() {
            out.push(Drift { path: self.journal_rel.clone(), kind });
        }
        // A shadow inside a frozen folder is already a new file there.
        let found: BTreeSet<String> = out.iter().map(|d| d.path.clone()).collect();
        out.extend(
            self.shadows()
                .into_iter()
                .filter(|rel| !self.shadows_allowed.contains(rel) && !found.contains(rel))
                .filter(|rel| !self.dirs.iter().any(|d| rel.starts_with(&format!("{d}/"))))
                .map(|path| Drift { path, kind: DriftKind::ShadowsRunner }),
        );
        out.sort();
        out.dedup();
        out
    }

    /// Take the journal as it is now as the prefix it must keep. `journal.jsonl` is append-only
    /// and kit (the loop, the hook) appends to it while the agent runs, so the guard cannot hold
    /// its bytes; it holds a prefix instead: rewriting, truncating or deleting any line written
    /// before the last seal is drift ([`DriftKind::Modified`] or [`DriftKind::Deleted`]), and
    /// [`Guard::restore`] puts the sealed prefix back (lines appended after it are dropped, as
    /// they can no longer be trusted). [`Guard::check`] seals whenever it finds the journal
    /// intact; call this after kit's own appends to protect them before the agent runs again.
    ///
    /// Errors: [`Error::Io`] when the journal exists but cannot be read.
    pub fn seal_journal(&mut self) -> Result<()> {
        let path = self.root.join(&self.journal_rel);
        let hold = self.journal.get_mut().unwrap_or_else(|p| p.into_inner());
        match fs::read(&path) {
            Ok(bytes) => {
                hold.perm = fs::metadata(&path).at(&path)?.permissions().mode() & 0o7777;
                hold.prefix = bytes;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => hold.prefix.clear(),
            Err(e) => return Err(Error::io(&path, e)),
        }
        Ok(())
    }

    /// How the journal broke append-only, if it did; when intact, seal what it holds now.
    fn journal_drift(&self) -> Option<DriftKind> {
        let path = self.root.join(&self.journal_rel);
        let mut hold = self.journal.lock().unwrap_or_else(|p| p.into_inner());
        let meta = match fs::symlink_metadata(&path) {
            Ok(m) => m,
            Err(_) if hold.prefix.is_empty() => return None,
            Err(_) => return Some(DriftKind::Deleted),
        };
        if meta.file_type().is_symlink() {
            return Some(DriftKind::ReplacedByLink);
        }
        match fs::read(&path) {
            Ok(bytes) if meta.is_file() && bytes.starts_with(&hold.prefix) => {
                hold.prefix = bytes;
                None
            }
            _ => Some(DriftKind::Modified),
        }
    }

    /// Put back every drifted path byte for byte, with its permission bits: links and folders
    /// in the way are removed, deleted folders re-created, new files under frozen folders
    /// removed (and new sub-folders, once empty), stored copies re-written. Test-runner caches
    /// ([`CACHE_DIRS`]) next to frozen files are deleted too, so call this after every agent
    /// iteration, not only when [`Guard::check`] found drift. Returns what was reverted, sorted by
    /// path (empty when nothing had drifted). Writes go through [`crate::atomic`].
    ///
    /// Errors: [`Error::Io`] naming the path that could not be written or removed, or
    /// [`Error::Internal`] naming the paths still drifted afterwards; either way the caller must
    /// not go on as if the tree were protected.
    pub fn restore(&self) -> Result<Vec<Revert>> {
        let drifts = self.check();
        let mut reverts = Vec::with_capacity(drifts.len());
        // New files first: a link that appeared where a frozen folder was is one of them.
        for d in drifts.iter().filter(|d| d.kind == DriftKind::NewFile) {
            let p = self.root.join(&d.path);
            match fs::remove_file(&p) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(Error::io(&p, e));
                }
                _ => {}
            }
            reverts.push(Revert { path: d.path.clone(), kind: d.kind });
        }
        for d in drifts.iter().filter(|d| d.kind == DriftKind::ShadowsRunner) {
            let p = self.root.join(&d.path);
            let gone = if fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir()) {
                fs::remove_dir_all(&p)
            } else {
                fs::remove_file(&p)
            };
            match gone {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(Error::io(&p, e));
                }
                _ => {}
            }
            reverts.push(Revert { path: d.path.clone(), kind: d.kind });
        }
        for d in drifts
            .iter()
            .filter(|d| !matches!(d.kind, DriftKind::NewFile | DriftKind::ShadowsRunner))
        {
            if d.path == self.journal_rel {
                let hold = self.journal.lock().unwrap_or_else(|p| p.into_inner()).clone();
                put_back(&self.root, &d.path, &hold.prefix, hold.perm)?;
                reverts.push(Revert { path: d.path.clone(), kind: d.kind });
                continue;
            }
            let (sha, perm) = self.wanted(&d.path).ok_or_else(|| {
                Error::internal(format!("{} drifted but the guard holds no copy of it", d.path))
            })?;
            put_back(&self.root, &d.path, &self.blobs[sha], perm)?;
            reverts.push(Revert { path: d.path.clone(), kind: d.kind });
        }
        self.purge_caches();
        for d in &self.dirs {
            let Ok(w) = walk(&self.root, d) else { continue };
            for sub in w.dirs.iter().rev().filter(|s| !self.dirs_at_capture.contains(*s)) {
                let _ = fs::remove_dir(self.root.join(sub));
            }
        }
        let left = self.check();
        if !left.is_empty() {
            return Err(Error::internal(format!(
                "could not restore frozen files: {}",
                list_drifts(left.iter().map(|d| (d.path.as_str(), d.kind)))
            ))
            .with_hint("fix the permissions of those paths, then kit freeze --check"));
        }
        reverts.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(reverts)
    }

    /// Entries on the criteria's import path (the root, the frozen folders and their parents)
    /// that replace a standard-library module the test runner imports ([`shadows_stdlib_entry`]),
    /// tracked by git or not, relative to the root: `python3 -m unittest` puts the folder it runs
    /// in first on `sys.path`, so a committed `unittest/` is the runner that runs. The guard
    /// removes only new, untracked shadows; the loop refuses done while any of these is there.
    pub fn stdlib_shadows(&self) -> Vec<String> {
        self.shadows()
            .into_iter()
            .filter(|rel| {
                let path = self.root.join(rel);
                let name = rel.rsplit('/').next().unwrap_or(rel);
                let package = path.is_dir()
                    && (path.join("__init__.py").is_file() || path.join("__init__.pyc").is_file());
                shadows_stdlib_entry(name, package)
            })
            .collect()
    }

    /// Entries on the import path whose name shadows the test runner or Python's start-up,
    /// relative to the root.
    fn shadows(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for dir in &self.import_dirs {
            let Ok(entries) = fs::read_dir(self.root.join(dir)) else { continue };
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                let package = e.file_type().is_ok_and(|t| t.is_dir())
                    && e.path().join("__init__.py").is_file();
                if shadows_runner_entry(&name, package) {
                    out.insert(if dir.is_empty() { name } else { format!("{dir}/{name}") });
                }
            }
        }
        out
    }

    /// Paths the guard protects (frozen files, then goal.md, config.toml, frozen.toml).
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.files.iter().map(|h| h.rel.as_str())
    }

    /// Each protected file as held in memory: its path, its bytes and its permission bits (the
    /// frozen files, then goal.md, config.toml, frozen.toml). The loop's revert probe puts the
    /// frozen ones into a scratch copy of the run's start.
    pub fn held(&self) -> impl Iterator<Item = (&str, &[u8], u32)> {
        self.files.iter().filter_map(|h| {
            self.blobs.get(&h.sha256).map(|b| (h.rel.as_str(), b.as_slice(), h.perm))
        })
    }

    /// The frozen folders.
    pub fn dirs(&self) -> &[String] {
        &self.dirs
    }

    /// What `rel` must hold: its sha256 and permission bits.
    fn wanted(&self, rel: &str) -> Option<(&String, u32)> {
        if let Some(h) = self.files.iter().find(|h| h.rel == rel) {
            return Some((&h.sha256, h.perm));
        }
        let sha = rel.strip_prefix(&self.objects_rel)?.strip_prefix('/')?;
        self.objects.get(sha).map(|s| (s, 0o644))
    }

    /// Delete test-runner caches in the frozen folders (at any depth) and beside frozen files.
    fn purge_caches(&self) {
        let mut places: BTreeSet<String> = BTreeSet::new();
        for d in &self.dirs {
            places.insert(d.clone());
            if let Ok(w) = walk(&self.root, d) {
                places.extend(w.dirs);
            }
        }
        for h in &self.files {
            places.insert(h.rel.rsplit_once('/').map_or(String::new(), |(p, _)| p.to_string()));
        }
        for place in places {
            for cache in CACHE_DIRS {
                let p = self.root.join(&place).join(cache);
                if fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir()) {
                    let _ = fs::remove_dir_all(&p);
                } else if fs::symlink_metadata(&p).is_ok() {
                    let _ = fs::remove_file(&p);
                }
            }
        }
    }
}

/// Write `bytes` with `perm` at `root/rel`, first clearing the way: a link or file where a
/// folder above it should be is removed and the folder created; a folder in its place is removed.
fn put_back(root: &Path, rel: &str, bytes: &[u8], perm: u32) -> Result<()> {
    let mut above = root.to_path_buf();
    let parts: Vec<&str> = rel.split('/').collect();
    for part in &parts[..parts.len() - 1] {
        above.push(part);
        match fs::symlink_metadata(&above) {
            Ok(m) if m.is_dir() => continue,
            Ok(_) => fs::remove_file(&above).at(&above)?,
            Err(_) => {}
        }
        fs::create_dir(&above).at(&above)?;
    }
    let path = root.join(rel);
    if fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
        fs::remove_dir_all(&path).at(&path)?;
    }
    crate::atomic::write_atomic_mode(&path, bytes, perm)
}

/// The content of `path` if its sha256 is `sha256`.
fn read_verified(path: &Path, sha256: &str) -> Option<Vec<u8>> {
    let meta = fs::symlink_metadata(path).ok()?;
    if !meta.is_file() {
        return None;
    }
    let bytes = fs::read(path).ok()?;
    (crate::digest::sha256_hex(&bytes) == sha256).then_some(bytes)
}

/// The folder above `rel` (`""` for the root).
fn parent_of(rel: &str) -> String {
    rel.rsplit_once('/').map_or(String::new(), |(p, _)| p.to_string())
}

/// Files git tracks in the index under `root`, relative to it; None when git cannot say.
fn tracked_files(root: &Path) -> Option<BTreeSet<String>> {
    let out = crate::git::command_in(root)
        .args(["ls-files", "-z"])
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    Some(
        out.stdout
            .split(|&b| b == 0)
            .filter(|f| !f.is_empty())
            .map(|f| String::from_utf8_lossy(f).into_owned())
            .collect(),
    )
}

/// `path` relative to `root`, `/`-separated.
fn rel_of(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/")
}

/// Refuse a manifest that does not list a file its frozen folders held when they were frozen:
/// a file under a frozen folder that is in the base commit's tree, on disk now, and absent from
/// `[files]`. kit freeze records every file of a folder, so only a frozen.toml edited by hand (or
/// damaged) lacks one, and the guard would remove it as new with no copy to put back.
///
/// Errors: [`Error::Usage`] naming the first such files and the `kit freeze` that records them.
pub(crate) fn unlisted_at_base(root: &Path, manifest: &Manifest) -> Result<()> {
    if manifest.base_commit.is_empty() || manifest.dirs.is_empty() {
        return Ok(());
    }
    let mut args = vec!["ls-tree", "-r", "--name-only", "-z", manifest.base_commit.as_str(), "--"];
    args.extend(manifest.dirs.iter().map(String::as_str));
    let Ok(out) = crate::git::command_in(root).args(&args).output() else { return Ok(()) };
    if !out.status.success() {
        // The base commit is gone (history rewritten): nothing to compare with.
        return Ok(());
    }
    let unlisted: Vec<String> = out
        .stdout
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .filter(|p| !manifest.files.contains_key(p) && root.join(p).is_file())
        .collect();
    if unlisted.is_empty() {
        return Ok(());
    }
    let shown: Vec<&str> = unlisted.iter().take(5).map(String::as_str).collect();
    let more = if unlisted.len() > 5 {
        format!(" and {} more", unlisted.len() - 5)
    } else {
        String::new()
    };
    Err(Error::usage(format!(
        "longrun/frozen.toml does not list {}{more}, which the frozen folders held when they were \
         frozen (commit {}): frozen.toml was edited by hand or is damaged, and kit will not remove \
         files it has no copy of",
        shown.join(", "),
        &manifest.base_commit[..manifest.base_commit.len().min(7)]
    ))
    .with_hint(format!(
        "kit freeze {} records the frozen folders as they are now",
        manifest.dirs.join(" ")
    )))
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_stdlib_shadow_is_a_standard_library_module_file_or_package_only() {
        let cases: &[(&str, bool, bool)] = &[
            ("unittest", true, true),
            ("unittest", false, false), // a namespace folder: the standard one wins
            ("unittest.py", false, true),
            ("difflib.py", false, true),
            ("traceback.pyc", false, true),
            ("signal", true, true),
            ("sitecustomize.py", false, true),
            ("packaging", true, false),
            ("pluggy.py", false, false),
            ("conftest.py", false, false),
            ("pytest.py", false, false),
            ("calc_tools", true, false),
            (".python-version", false, false),
            ("GNUmakefile", false, false),
        ];
        for (name, package, want) in cases {
            assert_eq!(shadows_stdlib_entry(name, *package), *want, "{name} package={package}");
        }
    }

    use super::*;

    #[test]
    fn a_drift_list_names_five_paths_then_how_many_more() {
        let paths: Vec<String> = (1..=7).map(|i| format!("tests/t{i}.py")).collect();
        let two = list_drifts(paths.iter().take(2).map(|p| (p.as_str(), DriftKind::NewFile)));
        assert_eq!(
            two,
            "tests/t1.py (new file in a frozen folder), tests/t2.py (new file in a frozen folder)"
        );
        let seven = list_drifts(paths.iter().map(|p| (p.as_str(), DriftKind::Modified)));
        assert!(seven.contains("tests/t5.py") && !seven.contains("tests/t6.py"), "{seven}");
        assert!(seven.ends_with(", and 2 more (kit freeze --check lists them all)"), "{seven}");
    }
}
