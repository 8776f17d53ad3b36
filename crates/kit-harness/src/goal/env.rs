//! The environment the criteria run in, set by kit at the start of a loop and not by anything the
//! agent can write (issue 10: "done" is never false). A test runner loads code from more places
//! than the repository: the user's site folder and its start-up hooks, compiled caches, whatever
//! `PATH` finds first. The agent runs as the user, so it can write to all of those. What kit
//! neutralises, and journals once per run as a `criteria_env` event:
//!
//! - **Python's start-up**: every `PYTHON*` variable that changes what the interpreter loads at
//!   start (`PYTHONSTARTUP`, `PYTHONUSERBASE`, `PYTHONINSPECT`, `PYTHONEXECUTABLE`,
//!   `PYTHONPLATLIBDIR`) is removed; `PYTHONNOUSERSITE=1` turns the user site folder off (and
//!   with it `usercustomize.py` and the `.pth` files there); `PYTHONPYCACHEPREFIX` points at
//!   kit's own bytecode folder ([`BytecodeCache`]), so no `__pycache__` the agent compiled is
//!   read and nothing is written into the repository: before each run it holds links to the
//!   standard library's own bytecode and nothing else. The user's own `PYTHONPATH` stays: kit's
//!   environment came from the user, not from the agent.
//! - **PATH**: entries that are relative (`.`, `bin`, an empty entry), in a temporary folder
//!   anyone can write (`/tmp`, `/var/tmp`, `/dev/shm`, `$TMPDIR`), or inside the repository but
//!   absent when the loop starts are dropped. A folder inside the repository that exists at the
//!   start (`.venv/bin`) is the project's own and stays, behind the pinned programs.
//! - **The programs the criteria run** (`python3`, `pytest`, `cargo`, `make`, …) are looked up
//!   once, at the start of the run, and pinned: each run of the criteria puts a fresh folder of
//!   wrappers that exec the pinned files first on `PATH`, so a `python3` the agent drops into
//!   `~/.local/bin` later is never the one that runs. A pinned file whose content changed
//!   (sha256) is reported by [`CriteriaEnv::tampered`], and the loop does not accept done on it.
//!   A Python launcher that is a script (a pyenv shim, which picks its interpreter from
//!   `.python-version` and runs hooks at every start) is resolved once to the interpreter it
//!   starts (`sys.executable`), and that interpreter is what is pinned.
//!
//! What it does not cover: the interpreter's own site-packages (a `.pth` or `sitecustomize.py`
//! the agent writes there when the installation is writable by the user), and anything the code
//! under test does once it is imported; the canary ([`super::canary`]) is the check for the latter.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::Serialize;

use super::{shell, Goal};

/// `PYTHON*` variables removed from the criteria's environment: each makes the interpreter load
/// or run something at start-up that is not the code under test. Source: `python3 --help-env`
/// (CPython 3.11–3.13).
pub const PYTHON_REMOVED: [&str; 6] = [
    "PYTHONSTARTUP",
    "PYTHONUSERBASE",
    "PYTHONINSPECT",
    "PYTHONEXECUTABLE",
    "PYTHONPLATLIBDIR",
    "PYTHONSAFEPATH",
];

/// Shell built-ins and keywords of `sh` that are never looked up on PATH.
const BUILTINS: [&str; 24] = [
    "cd", "echo", "printf", "set", "exit", "test", "[", "true", "false", ":", ".", "export",
    "unset", "read", "shift", "trap", "wait", "eval", "exec", "command", "type", "if", "then",
    "fi",
];

/// One program a criterion runs, as found on the cleaned PATH when the loop started.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Pinned {
    /// The name the command uses (`python3`).
    pub name: String,
    /// Where it was found (not resolved through links, so `argv[0]` stays what the shell gives).
    pub path: PathBuf,
    /// sha256 of the file it points to, hex.
    pub sha256: String,
}

/// What kit changed about the environment, for the journal (`criteria_env`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Neutralised {
    /// Variables removed (`PYTHONSTARTUP`).
    pub removed: Vec<String>,
    /// Variables set by kit (`PYTHONNOUSERSITE=1`; the per-run cache folder shown as `<fresh>`).
    pub set: Vec<String>,
    /// PATH entries dropped, each with why (`bin (relative)`).
    pub path_dropped: Vec<String>,
    /// Programs pinned: name → path.
    pub pinned: BTreeMap<String, String>,
    /// Names the criteria run that PATH did not find when the loop started.
    pub not_found: Vec<String>,
}

/// The criteria's environment for one loop run: built once by [`CriteriaEnv::capture`].
/// Clones share one [`BytecodeCache`].
#[derive(Clone, Debug)]
pub struct CriteriaEnv {
    vars: Vec<(OsString, OsString)>,
    path: Vec<PathBuf>,
    pinned: Vec<Pinned>,
    neutralised: Neutralised,
    /// The standard library folders of the pinned Python interpreters, with their bytecode tag
    /// (`cpython-311`): the bytecode the run's cache starts with.
    stdlib: Vec<(PathBuf, String)>,
    cache: Arc<BytecodeCache>,
}

/// The `PYTHONPYCACHEPREFIX` folder the criteria's Python reads bytecode from instead of any
/// `__pycache__`: `$XDG_CACHE_HOME/kit/pycache` (else `~/.cache/kit/pycache`), kept from run to
/// run, or a temporary folder of the [`CriteriaEnv`] when neither is set. It holds links to the
/// bytecode of the pinned interpreters' own standard library (`python3 -B`, which most criteria
/// use, writes none: without them every run compiles the standard library it imports again,
/// ~0.3 s of CPU for `unittest`) and nothing else a later run reads: before each run kit removes
/// every entry that is not such a link (what Python wrote, what anything else planted) and the
/// whole subtree of the folder the criterion runs in (a source edited twice within a second,
/// keeping its size, would otherwise be read stale: bytecode records whole seconds). When an
/// entry cannot be removed, that run gets an empty temporary folder instead.
#[derive(Debug)]
pub struct BytecodeCache {
    /// The kept folder, or None for a temporary one.
    kept: Option<PathBuf>,
    temporary: Mutex<Option<tempfile::TempDir>>,
}

/// A run's folders: fresh wrappers of the pinned programs and, when the bytecode folder could
/// not be tidied, an empty one; both removed on drop.
pub struct RunEnv {
    _dir: tempfile::TempDir,
    /// The full environment to give the criterion's shell (the child's environment is cleared
    /// first).
    pub vars: Vec<(OsString, OsString)>,
}

impl BytecodeCache {
    fn new(vars: &[(OsString, OsString)]) -> BytecodeCache {
        let get = |k: &str| {
            vars.iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| PathBuf::from(v))
                .filter(|p| p.is_absolute())
        };
        let kept = get("XDG_CACHE_HOME")
            .or_else(|| get("HOME").map(|h| h.join(".cache")))
            .map(|c| c.join("kit").join("pycache"));
        BytecodeCache { kept, temporary: Mutex::default() }
    }

    /// The folder for the next run in `root`, tidied (see [`BytecodeCache`]); None when it
    /// cannot be made or tidied.
    fn prepare(&self, root: &Path, stdlib: &[(PathBuf, String)]) -> Option<PathBuf> {
        let dir = match &self.kept {
            Some(dir) => {
                std::fs::create_dir_all(dir).ok()?;
                dir.clone()
            }
            None => {
                let mut t = self.temporary.lock().unwrap_or_else(|p| p.into_inner());
                if t.is_none() {
                    *t = Some(tempfile::Builder::new().prefix("kit-pycache-").tempdir().ok()?);
                }
                t.as_ref()?.path().to_path_buf()
            }
        };
        let real = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        for r in [root, real.as_path()] {
            let own = dir.join(r.strip_prefix("/").unwrap_or(r));
            if r.is_absolute() && own.symlink_metadata().is_ok() {
                gone(std::fs::remove_dir_all(&own)).ok()?;
            }
        }
        let mut kept = std::collections::HashSet::new();
        let removed = tidy(&dir, &dir, stdlib, &mut kept).ok()?;
        // Seeded once per process and folder, and again after tidy removed something (a link
        // replaced, a file planted): the links stay from run to run (tidy keeps them), and
        // walking the standard library for each run cost thousands of symlink() calls that found
        // the link there.
        static SEEDED: Mutex<BTreeMap<PathBuf, Vec<(PathBuf, String)>>> =
            Mutex::new(BTreeMap::new());
        let mut seeded = SEEDED.lock().unwrap_or_else(|p| p.into_inner());
        let done = seeded.entry(dir.clone()).or_default();
        if removed > 0 {
            done.clear();
        }
        for (lib, tag) in stdlib {
            if !done.iter().any(|(l, t)| l == lib && t == tag) {
                seed(&dir, lib, tag, &kept).ok()?;
                done.push((lib.clone(), tag.clone()));
            }
        }
        Some(dir)
    }
}

/// Ok when `r` is, or failed only because the entry was already gone (another kit tidying).
fn gone(r: std::io::Result<()>) -> std::io::Result<()> {
    match r {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Remove from `dir` (inside the bytecode folder `base`) every entry but folders and the links
/// [`seed`] makes: `base/<folder F>/NAME.TAG.pyc` → `/<F>/__pycache__/NAME.TAG.pyc`, F inside
/// one of the `stdlib` folders.
/// The links kept are added to `kept`; returns how many entries were removed.
fn tidy(
    base: &Path,
    dir: &Path,
    stdlib: &[(PathBuf, String)],
    kept: &mut std::collections::HashSet<PathBuf>,
) -> std::io::Result<usize> {
    let mut removed = 0;
    let entries = match std::fs::read_dir(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        r => r?,
    };
    for entry in entries {
        let entry = entry?;
        let path = entry.path();
        let kind = match entry.file_type() {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            r => r?,
        };
        if kind.is_dir() {
            removed += tidy(base, &path, stdlib, kept)?;
            continue;
        }
        let keep = kind.is_symlink()
            && std::fs::read_link(&path).is_ok_and(|target| {
                let Ok(rel) = path.strip_prefix(base) else { return false };
                let (Some(folder), Some(name)) = (rel.parent(), rel.file_name()) else {
                    return false;
                };
                let folder = Path::new("/").join(folder);
                let name = name.to_string_lossy();
                target == folder.join("__pycache__").join(name.as_ref())
                    && stdlib.iter().any(|(lib, tag)| {
                        folder.starts_with(lib) && name.ends_with(&format!(".{tag}.pyc"))
                    })
            });
        if keep {
            kept.insert(path);
        } else {
            gone(std::fs::remove_file(&path))?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// Folders of a standard library whose bytecode is not linked: third-party packages (not the
/// interpreter's own) and the large packages criteria do not import.
const STDLIB_SKIPPED: [&str; 7] =
    ["site-packages", "dist-packages", "test", "idlelib", "tkinter", "lib2to3", "turtledemo"];

/// Link, under `prefix`, each `NAME.TAG.pyc` of the `__pycache__` folders of the standard library
/// at `lib`, where `PYTHONPYCACHEPREFIX` looks for it: `prefix/<folder of NAME.py>/NAME.TAG.pyc`
/// (PEP 3147 and the `pycache_prefix` of `importlib._bootstrap_external.cache_from_source`).
/// A link in `kept` (found by [`tidy`]) is not made again. A folder that cannot be read is
/// skipped; errors only when a link cannot be made.
fn seed(
    prefix: &Path,
    lib: &Path,
    tag: &str,
    kept: &std::collections::HashSet<PathBuf>,
) -> std::io::Result<()> {
    let suffix = format!(".{tag}.pyc");
    let mut folders = vec![lib.to_path_buf()];
    while let Some(dir) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let name = entry.file_name();
            if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            if name == "__pycache__" {
                let into = prefix.join(dir.strip_prefix("/").unwrap_or(&dir));
                let Ok(pycs) = std::fs::read_dir(entry.path()) else { continue };
                let mut made = false;
                for pyc in pycs.flatten() {
                    let link = into.join(pyc.file_name());
                    if pyc.file_name().to_string_lossy().ends_with(&suffix) && !kept.contains(&link)
                    {
                        if !made {
                            std::fs::create_dir_all(&into)?;
                            made = true;
                        }
                        match std::os::unix::fs::symlink(pyc.path(), link) {
                            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
                                return Err(e)
                            }
                            _ => {}
                        }
                    }
                }
            } else if !STDLIB_SKIPPED.iter().any(|s| name == *s) {
                folders.push(entry.path());
            }
        }
    }
    Ok(())
}

/// The standard library folder of the Python interpreter at `python` and its bytecode tag
/// (`cpython-311`): read from where a CPython keeps it ([`stdlib_by_layout`]), else asked of it
/// in isolated mode (`-I`, [`ask_stdlib`]); None when it cannot say. Once per interpreter and
/// process (a loop builds the criteria's environment up to four times, and each answer asked cost
/// a Python start: 12 of the ~45 interpreter runs of an exercise-4 check).
///
/// Only speed depends on the answer: the bytecode folder links a `.pyc` of this folder where
/// Python looks for the bytecode of a source *in this folder*, and Python checks it against that
/// source; a wrong folder links bytecode no import reads, a missing one links nothing.
fn stdlib_of(python: &Path) -> Option<(PathBuf, String)> {
    type Answers = Mutex<BTreeMap<PathBuf, Option<(PathBuf, String)>>>;
    static KNOWN: Answers = Mutex::new(BTreeMap::new());
    let mut known = KNOWN.lock().unwrap_or_else(|p| p.into_inner());
    known
        .entry(python.to_path_buf())
        .or_insert_with(|| stdlib_by_layout(python).or_else(|| ask_stdlib(python)))
        .clone()
}

/// The standard library of a CPython installed the usual way (`PREFIX/bin/pythonX.Y`, its
/// library in `PREFIX/lib/pythonX.Y`: Debian's and Ubuntu's `/usr`, pyenv, Homebrew, python.org
/// builds, a venv whose `python` links to one of those), found without starting it: `python`
/// resolved through its links must be named `pythonX.Y` and `PREFIX/lib/pythonX.Y/os.py` must
/// exist; the tag is then `cpython-XY`. None for any other layout (Fedora's `lib64`, a copied
/// venv interpreter, PyPy), which [`ask_stdlib`] then answers.
fn stdlib_by_layout(python: &Path) -> Option<(PathBuf, String)> {
    let real = std::fs::canonicalize(python).ok()?;
    let name = real.file_name()?.to_str()?;
    let (major, minor) = name.strip_prefix("python")?.split_once('.')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(major) || !digits(minor) {
        return None;
    }
    let bin = real.parent()?;
    if bin.file_name()? != "bin" {
        return None;
    }
    let lib = bin.parent()?.join("lib").join(name);
    lib.join("os.py").is_file().then(|| (lib, format!("cpython-{major}{minor}")))
}

/// [`stdlib_of`] asked of the interpreter: `sysconfig.get_path('stdlib')` and
/// `sys.implementation.cache_tag`, in isolated mode with an empty environment.
fn ask_stdlib(python: &Path) -> Option<(PathBuf, String)> {
    let out = std::process::Command::new(python)
        .args([
            "-I",
            "-c",
            "import sys, sysconfig; print(sysconfig.get_path('stdlib')); \
             print(sys.implementation.cache_tag)",
        ])
        .env_clear()
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let text = String::from_utf8(out.stdout).ok()?;
    let mut lines = text.lines();
    let lib = PathBuf::from(lines.next()?.trim());
    let tag = lines.next()?.trim().to_string();
    (lib.is_absolute() && lib.is_dir() && !tag.is_empty() && !tag.contains('/'))
        .then_some((lib, tag))
}

impl CriteriaEnv {
    /// Build it from kit's own environment (`std::env::vars_os`) for the criteria of `goal` in
    /// the repository at `root`.
    pub fn capture(goal: &Goal, root: &Path) -> CriteriaEnv {
        Self::from_vars(std::env::vars_os().collect(), goal, root)
    }

    /// [`CriteriaEnv::capture`] from the given variables (for tests).
    pub fn from_vars(vars: Vec<(OsString, OsString)>, goal: &Goal, root: &Path) -> CriteriaEnv {
        let mut n = Neutralised::default();
        let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        let temp_dirs = temp_dirs(&vars);
        let mut kept = Vec::new();
        let mut path = Vec::new();
        for (k, v) in vars {
            let key = k.to_string_lossy();
            if PYTHON_REMOVED.contains(&key.as_ref())
                || matches!(
                    key.as_ref(),
                    "PYTHONNOUSERSITE" | "PYTHONPYCACHEPREFIX" | "PYTHONDONTWRITEBYTECODE"
                )
            {
                if PYTHON_REMOVED.contains(&key.as_ref()) {
                    n.removed.push(key.into_owned());
                }
                continue;
            }
            if key == "PATH" {
                for entry in std::env::split_paths(&v) {
                    match dropped_because(&entry, &root, &temp_dirs) {
                        Some(why) => n.path_dropped.push(format!("{} ({why})", show(&entry))),
                        None => path.push(entry),
                    }
                }
                continue;
            }
            kept.push((k, v));
        }
        n.removed.sort();
        n.set = vec![
            "PYTHONNOUSERSITE=1".into(),
            "PYTHONPYCACHEPREFIX=<kit's bytecode folder: the standard library's only>".into(),
        ];
        let mut pinned: Vec<Pinned> = Vec::new();
        let joined = std::env::join_paths(&path).unwrap_or_default();
        for name in program_names(goal) {
            if pinned.iter().any(|p| p.name == name) || n.not_found.contains(&name) {
                continue;
            }
            match which::which_in(&name, Some(&joined), &root) {
                Ok(found) => {
                    // A Python launcher that is a script (a pyenv or asdf shim) picks its
                    // interpreter at each start from files the agent can write
                    // (`.python-version`, hooks): pin the interpreter it starts now instead.
                    let found = if name.starts_with("python") && is_script(&found) {
                        interpreter_behind(&found, &kept, &path, &root).unwrap_or(found)
                    } else {
                        found
                    };
                    let sha256 = file_sha256(&found).unwrap_or_default();
                    n.pinned.insert(name.clone(), show(&found));
                    pinned.push(Pinned { name, path: found, sha256 });
                }
                Err(_) => n.not_found.push(name),
            }
        }
        let mut stdlib = Vec::new();
        for p in pinned.iter().filter(|p| p.name.starts_with("python")) {
            if let Some(lib) = stdlib_of(&p.path).filter(|lib| !stdlib.contains(lib)) {
                stdlib.push(lib);
            }
        }
        let cache = Arc::new(BytecodeCache::new(&kept));
        CriteriaEnv { vars: kept, path, pinned, neutralised: n, stdlib, cache }
    }

    /// What was changed, for the journal.
    pub fn neutralised(&self) -> &Neutralised {
        &self.neutralised
    }

    /// The pinned programs.
    pub fn pinned(&self) -> &[Pinned] {
        &self.pinned
    }

    /// Pinned programs whose file no longer holds what it held at the start of the run:
    /// `(name, path)`. A file that cannot be read counts as changed.
    pub fn tampered(&self) -> Vec<(String, PathBuf)> {
        self.pinned
            .iter()
            .filter(|p| file_sha256(&p.path).as_deref() != Some(p.sha256.as_str()))
            .map(|p| (p.name.clone(), p.path.clone()))
            .collect()
    }

    /// The folders for one run of the criteria in `root`: a fresh `bin/` with a wrapper per
    /// pinned program (first on PATH) and the [`BytecodeCache`] as `PYTHONPYCACHEPREFIX` (an
    /// empty `pycache/` beside `bin/` when it cannot be tidied). Errors when a folder cannot be
    /// made.
    pub fn for_run(&self, root: &Path) -> std::io::Result<RunEnv> {
        let dir = tempfile::Builder::new().prefix("kit-criteria-").tempdir()?;
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin)?;
        let cache = match self.cache.prepare(root, &self.stdlib) {
            Some(cache) => cache,
            None => {
                let empty = dir.path().join("pycache");
                std::fs::create_dir(&empty)?;
                empty
            }
        };
        // A wrapper that execs the pinned path, not a link: Python finds its venv (pyvenv.cfg)
        // beside the path it was started from, and a shim names its program after `$0`.
        for p in &self.pinned {
            let target = p.path.to_string_lossy().replace('\'', "'\\''");
            let wrapper = bin.join(&p.name);
            std::fs::write(&wrapper, format!("#!/bin/sh\nexec '{target}' \"$@\"\n"))?;
            std::fs::set_permissions(
                &wrapper,
                std::os::unix::fs::PermissionsExt::from_mode(0o755),
            )?;
        }
        let mut path = vec![bin];
        path.extend(self.path.iter().cloned());
        let mut vars = self.vars.clone();
        vars.push(("PATH".into(), std::env::join_paths(&path).unwrap_or_default()));
        vars.push(("PYTHONNOUSERSITE".into(), "1".into()));
        vars.push(("PYTHONPYCACHEPREFIX".into(), cache.into_os_string()));
        Ok(RunEnv { _dir: dir, vars })
    }
}

/// Why a PATH entry is dropped: relative, inside the repository, or in a world-writable
/// temporary folder. None keeps it.
fn dropped_because(entry: &Path, root: &Path, temp_dirs: &[PathBuf]) -> Option<&'static str> {
    if entry.as_os_str().is_empty() || entry.is_relative() {
        return Some("relative: it depends on the folder the criterion runs in");
    }
    let real = std::fs::canonicalize(entry).unwrap_or_else(|_| entry.to_path_buf());
    // A folder inside the repository that exists now is the project's own (`.venv/bin`,
    // `node_modules/.bin`): kept, and what the criteria name from it is pinned. One that does
    // not exist yet could only be filled by the agent.
    if real.starts_with(root) {
        if entry.is_dir() {
            return None;
        }
        return Some(
            "inside the repository and absent at the start, so only the agent could fill it",
        );
    }
    if temp_dirs.iter().any(|t| real.starts_with(t)) {
        return Some("a temporary folder anyone can write");
    }
    None
}

/// `/tmp`, `/var/tmp`, `/dev/shm` and `$TMPDIR`, canonicalised.
fn temp_dirs(vars: &[(OsString, OsString)]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> =
        ["/tmp", "/var/tmp", "/dev/shm"].iter().map(PathBuf::from).collect();
    if let Some((_, v)) = vars.iter().find(|(k, _)| k == OsStr::new("TMPDIR")) {
        if !v.is_empty() {
            out.push(PathBuf::from(v));
        }
    }
    out.into_iter().map(|p| std::fs::canonicalize(&p).unwrap_or(p)).collect()
}

/// Names of the programs the criteria start, in goal order, without duplicates: each simple
/// command's first word and the program behind wrappers (`env`, `timeout 60`, `uv run`), when
/// it is a bare name (no `/`) and not a shell built-in.
fn program_names(goal: &Goal) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in &goal.criteria {
        for words in shell::simple_commands(&c.command) {
            let mut names = Vec::new();
            if let Some(first) = words.iter().find(|w| !is_assignment(w)) {
                names.push(first.clone());
            }
            if let Some((prog, _)) = shell::program(&words) {
                names.push(prog.to_string());
            }
            for n in names {
                if n.is_empty()
                    || n.contains('/')
                    || n.contains('$')
                    || BUILTINS.contains(&n.as_str())
                {
                    continue;
                }
                if !out.contains(&n) {
                    out.push(n);
                }
            }
        }
    }
    out
}

/// Whether `p` starts with `#!` (a script, not a binary or a link to one).
fn is_script(p: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 2];
    std::fs::File::open(p).and_then(|mut f| f.read_exact(&mut head)).is_ok() && &head == b"#!"
}

/// The interpreter a Python launcher script starts from `root` right now
/// (`sys.executable`), run once in the criteria's own environment; None when it cannot say.
/// Asked once per launcher and folder in a process (a pyenv shim takes ~0.3 s to answer, and a
/// loop builds the criteria's environment up to four times at its start).
fn interpreter_behind(
    launcher: &Path,
    vars: &[(OsString, OsString)],
    path: &[PathBuf],
    root: &Path,
) -> Option<PathBuf> {
    type Answers = Mutex<BTreeMap<(PathBuf, PathBuf), Option<PathBuf>>>;
    static ASKED: std::sync::OnceLock<Answers> = std::sync::OnceLock::new();
    let key = (launcher.to_path_buf(), root.to_path_buf());
    let asked = ASKED.get_or_init(Answers::default);
    if let Some(known) = asked.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
        return known.clone();
    }
    let found = ask_interpreter(launcher, vars, path, root);
    asked.lock().unwrap_or_else(|p| p.into_inner()).insert(key, found.clone());
    found
}

fn ask_interpreter(
    launcher: &Path,
    vars: &[(OsString, OsString)],
    path: &[PathBuf],
    root: &Path,
) -> Option<PathBuf> {
    let out = std::process::Command::new(launcher)
        .args(["-c", "import sys; print(sys.executable)"])
        .current_dir(root)
        .env_clear()
        .envs(vars.iter().map(|(k, v)| (k, v)))
        .env("PATH", std::env::join_paths(path).ok()?)
        .env("PYTHONNOUSERSITE", "1")
        .stdin(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let exe = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    (exe.is_absolute() && exe.is_file()).then_some(exe)
}

fn is_assignment(w: &str) -> bool {
    w.split_once('=').is_some_and(|(k, _)| {
        !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// A pinned program's sha256, remembered for this process while the file keeps its identity
/// (a loop pins its programs up to four times at its start and checks them at every done).
fn file_sha256(p: &Path) -> Option<String> {
    crate::digest::sha256_file_remembered(p).ok()
}

fn show(p: &Path) -> String {
    if p.as_os_str().is_empty() {
        "(empty entry)".into()
    } else {
        p.display().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn goal(cmds: &[&str]) -> Goal {
        let mut text = String::from("# Goal: g\n\n## Criteria\n");
        for c in cmds {
            text.push_str(&format!("- function: `{c}` → `Ran 3 tests` and `OK`\n"));
        }
        super::super::parse(Path::new("longrun/goal.md"), &text).unwrap()
    }

    #[test]
    fn path_entries_that_are_relative_in_the_repo_or_temporary_are_dropped() {
        let repo = tempfile::tempdir().unwrap();
        std::fs::create_dir(repo.path().join("tools")).unwrap();
        let path = format!("bin::/usr/bin:{0}/tools:{0}/later:/tmp/x:/bin", repo.path().display());
        let vars = vec![
            ("PATH".into(), path.into()),
            ("PYTHONSTARTUP".into(), "evil.py".into()),
            ("PYTHONPATH".into(), "src".into()),
            ("HOME".into(), "/home/u".into()),
        ];
        let e = CriteriaEnv::from_vars(vars, &goal(&["python3 -m unittest -v"]), repo.path());
        let n = e.neutralised();
        assert_eq!(n.removed, vec!["PYTHONSTARTUP"]);
        let dropped: Vec<&str> =
            n.path_dropped.iter().map(|d| d.split(" (").next().unwrap()).collect();
        assert_eq!(dropped.len(), 4, "{dropped:?}");
        assert!(dropped.contains(&"bin") && dropped.contains(&"(empty entry)"));
        assert!(dropped.contains(&"/tmp/x"));
        let later = format!("{}/later", repo.path().display());
        assert!(dropped.contains(&later.as_str()), "{dropped:?}");
        let run = e.for_run(repo.path()).unwrap();
        let get = |k: &str| {
            run.vars
                .iter()
                .find(|(n, _)| n == OsStr::new(k))
                .map(|(_, v)| v.to_string_lossy().into_owned())
        };
        assert_eq!(get("PYTHONPATH").as_deref(), Some("src"), "the user's own PYTHONPATH stays");
        assert_eq!(get("PYTHONSTARTUP"), None);
        assert_eq!(get("PYTHONNOUSERSITE").as_deref(), Some("1"));
        let path = get("PATH").unwrap();
        let tools = format!("{}/tools", repo.path().display());
        assert!(
            path.ends_with(&format!(":/usr/bin:{tools}:/bin")),
            "the project's own folder stays: {path}"
        );
        assert!(
            path.starts_with(&std::env::temp_dir().display().to_string())
                || path.contains("kit-criteria-"),
            "{path}"
        );
    }

    #[test]
    fn the_programs_a_criterion_starts_are_pinned_and_a_changed_one_is_named() {
        let repo = tempfile::tempdir().unwrap();
        let bin = tempfile::tempdir_in(
            std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(std::env::temp_dir),
        )
        .unwrap();
        let tool = bin.path().join("mytool");
        std::fs::write(&tool, "#!/bin/sh\necho real\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        let vars = vec![("PATH".into(), bin.path().as_os_str().to_owned())];
        let g = goal(&["FOO=1 timeout 60 mytool --check && cd sub && echo done"]);
        let e = CriteriaEnv::from_vars(vars, &g, repo.path());
        let names: Vec<&str> = e.pinned().iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, vec!["mytool"], "timeout is not on this PATH: {:?}", e.neutralised());
        assert!(e.neutralised().not_found.contains(&"timeout".to_string()));
        assert!(e.tampered().is_empty());
        let run = e.for_run(repo.path()).unwrap();
        let path = run.vars.iter().find(|(k, _)| k == "PATH").unwrap().1.clone();
        let first = std::env::split_paths(&path).next().unwrap();
        let wrapper = std::fs::read_to_string(first.join("mytool")).unwrap();
        assert_eq!(wrapper, format!("#!/bin/sh\nexec '{}' \"$@\"\n", tool.display()));
        std::fs::write(&tool, "#!/bin/sh\necho 'Ran 3 tests'\n").unwrap();
        assert_eq!(e.tampered(), vec![("mytool".to_string(), tool.clone())]);
    }

    #[test]
    fn the_bytecode_folder_keeps_only_the_standard_librarys_own_bytecode() {
        let repo = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let lib = tempfile::tempdir().unwrap();
        let lib = std::fs::canonicalize(lib.path()).unwrap();
        for dir in ["__pycache__", "json/__pycache__", "site-packages/evil/__pycache__"] {
            std::fs::create_dir_all(lib.join(dir)).unwrap();
        }
        std::fs::write(lib.join("__pycache__/os.cpython-311.pyc"), "os").unwrap();
        std::fs::write(lib.join("__pycache__/os.cpython-311.opt-1.pyc"), "os -O").unwrap();
        std::fs::write(lib.join("__pycache__/os.cpython-312.pyc"), "other python").unwrap();
        std::fs::write(lib.join("json/__pycache__/decoder.cpython-311.pyc"), "json").unwrap();
        std::fs::write(lib.join("site-packages/evil/__pycache__/x.cpython-311.pyc"), "x").unwrap();
        let vars = vec![("HOME".into(), home.path().as_os_str().to_owned())];
        let mut e = CriteriaEnv::from_vars(vars, &goal(&["python3 -m unittest"]), repo.path());
        e.stdlib = vec![(lib.clone(), "cpython-311".into())];
        let prefix = |run: &RunEnv| {
            PathBuf::from(&run.vars.iter().find(|(k, _)| k == "PYTHONPYCACHEPREFIX").unwrap().1)
        };
        let under = |p: &Path, rel: &str| p.join(lib.strip_prefix("/").unwrap()).join(rel);
        let files = |p: &Path| {
            let mut out = Vec::new();
            let mut dirs = vec![p.to_path_buf()];
            while let Some(d) = dirs.pop() {
                for entry in std::fs::read_dir(&d).unwrap().flatten() {
                    if entry.file_type().unwrap().is_dir() {
                        dirs.push(entry.path());
                    } else {
                        out.push(entry.path().strip_prefix(p).unwrap().display().to_string());
                    }
                }
            }
            out.sort();
            out
        };
        let real = std::fs::canonicalize(repo.path()).unwrap();
        let own = |p: &Path| p.join(real.strip_prefix("/").unwrap()).join("lib.cpython-311.pyc");

        let run = e.for_run(repo.path()).unwrap();
        let folder = prefix(&run);
        assert_eq!(folder, home.path().join(".cache/kit/pycache"), "kept under the user's cache");
        let lib_rel = lib.strip_prefix("/").unwrap().display().to_string();
        let linked = vec![
            format!("{lib_rel}/json/decoder.cpython-311.pyc"),
            format!("{lib_rel}/os.cpython-311.pyc"),
        ];
        assert_eq!(files(&folder), linked, "only this interpreter's plain bytecode");
        assert_eq!(std::fs::read_to_string(under(&folder, "os.cpython-311.pyc")).unwrap(), "os");
        // What Python writes during a run (the repository's bytecode), and what an agent plants
        // between runs: a file beside the links, a link to its own bytecode, a link replaced.
        std::fs::create_dir_all(own(&folder).parent().unwrap()).unwrap();
        std::fs::write(own(&folder), "repo").unwrap();
        drop(run);
        std::fs::write(under(&folder, "unittest.cpython-311.pyc"), "planted").unwrap();
        std::os::unix::fs::symlink(
            lib.join("site-packages/evil/__pycache__/x.cpython-311.pyc"),
            under(&folder, "json/x.cpython-311.pyc"),
        )
        .unwrap();
        std::fs::remove_file(under(&folder, "os.cpython-311.pyc")).unwrap();
        std::os::unix::fs::symlink(
            lib.join("json/__pycache__/decoder.cpython-311.pyc"),
            under(&folder, "os.cpython-311.pyc"),
        )
        .unwrap();
        let run = e.clone().for_run(repo.path()).unwrap();
        assert_eq!(prefix(&run), folder);
        assert_eq!(
            files(&folder),
            linked,
            "every planted entry removed, the repository's bytecode too, and the replaced link made again"
        );
        assert_eq!(std::fs::read_to_string(under(&folder, "os.cpython-311.pyc")).unwrap(), "os");
        drop(run);
        // A new environment (the next loop) links the standard library again.
        let e2 = CriteriaEnv { cache: Arc::new(BytecodeCache::new(&e.vars)), ..e.clone() };
        let run = e2.for_run(repo.path()).unwrap();
        assert_eq!(files(&prefix(&run)), linked);
    }

    #[test]
    fn a_cpython_standard_library_is_found_by_its_layout_and_agrees_with_the_interpreter() {
        let d = tempfile::tempdir().unwrap();
        let prefix = std::fs::canonicalize(d.path()).unwrap();
        std::fs::create_dir_all(prefix.join("bin")).unwrap();
        std::fs::create_dir_all(prefix.join("lib/python3.11")).unwrap();
        std::fs::write(prefix.join("bin/python3.11"), "").unwrap();
        std::os::unix::fs::symlink("python3.11", prefix.join("bin/python3")).unwrap();
        // No os.py: not a standard library.
        assert_eq!(stdlib_by_layout(&prefix.join("bin/python3")), None);
        std::fs::write(prefix.join("lib/python3.11/os.py"), "").unwrap();
        let want = Some((prefix.join("lib/python3.11"), "cpython-311".to_string()));
        assert_eq!(stdlib_by_layout(&prefix.join("bin/python3")), want, "through the link");
        assert_eq!(stdlib_by_layout(&prefix.join("bin/python3.11")), want);
        // Other names and folders: asked instead.
        for name in ["python", "pypy3.10", "python3.x", "python3.11d"] {
            std::fs::write(prefix.join("bin").join(name), "").unwrap();
            assert_eq!(stdlib_by_layout(&prefix.join("bin").join(name)), None, "{name}");
        }
        std::fs::create_dir_all(prefix.join("sbin")).unwrap();
        std::fs::write(prefix.join("sbin/python3.11"), "").unwrap();
        assert_eq!(stdlib_by_layout(&prefix.join("sbin/python3.11")), None, "not in bin/");
        // The interpreter on this machine, when its layout is the usual one, says the same.
        let path = std::env::var_os("PATH").unwrap_or_default();
        let found = std::env::split_paths(&path).map(|p| p.join("python3")).find(|p| p.is_file());
        if let Some(py) = found.and_then(|p| ask_interpreter_path(&p)) {
            if let Some(by_layout) = stdlib_by_layout(&py) {
                assert_eq!(Some(by_layout), ask_stdlib(&py), "{py:?}");
            }
        }
    }

    /// The interpreter a `python3` on PATH (perhaps a pyenv shim) runs.
    fn ask_interpreter_path(launcher: &Path) -> Option<PathBuf> {
        let out = std::process::Command::new(launcher)
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .ok()?;
        let p = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        p.is_absolute().then_some(p)
    }

    #[test]
    fn without_a_home_the_bytecode_folder_is_temporary() {
        let repo = tempfile::tempdir().unwrap();
        let e = CriteriaEnv::from_vars(Vec::new(), &goal(&["python3 -m unittest"]), repo.path());
        let run = e.for_run(repo.path()).unwrap();
        let p =
            PathBuf::from(&run.vars.iter().find(|(k, _)| k == "PYTHONPYCACHEPREFIX").unwrap().1);
        assert!(p.file_name().unwrap().to_string_lossy().starts_with("kit-pycache-"), "{p:?}");
        assert!(p.is_dir());
    }
}
