//! Golden cases: the kit test catalogue (`tests/cases/*.md`) and the exercises' `golden.md`
//! share this format and this runner, and both `cargo test` and `kit verify` use it.
//!
//! A case is Markdown with a TOML front matter between `+++` lines:
//!
//! ````markdown
//! +++
//! name = "init_creates_the_seven_files"   # unique, snake_case, states the behaviour
//! lesson = 1                              # the lesson it belongs to
//! sandbox = "git"                         # "empty" | "git" | "rehearsal"
//! timeout = "120s"                        # per command (default 120s)
//! [env]                                   # extra environment for every command
//! KIT_EXAMPLE = "1"
//! +++
//!
//! Prose for the reader.
//!
//! ```text file=notes/todo.txt
//! a file written into the sandbox before the next command
//! ```
//!
//! ```console
//! $ kit init
//! ? 0
//! created longrun/goal.md
//! ...
//! ```
//! ````
//!
//! In a `console` block a line `$ COMMAND` starts a step; an optional `? N` line right after it
//! sets the expected exit status (`? failed`: any non-zero; default 0); the lines until the next
//! `$ ` are the expected output (stdout and stderr merged), matched by [`crate::matcher`]. Each
//! command runs through `/bin/sh -c` in the sandbox with `PATH` = a [`Toolbox`] outside the
//! sandbox (`kit`, `fake-agent`) and the system's folders (never the caller's `PATH`), `HOME`,
//! `CLAUDE_CONFIG_DIR`, `CODEX_HOME`, `XDG_STATE_HOME` (kit's handoff key) and `TMPDIR` inside
//! the sandbox, `NO_COLOR=1`, `COLUMNS=100`, `LANG=C.UTF-8`, and nothing else from the host environment,
//! `KIT_FAKE_CLOCK=2026-10-01T09:00:00Z` and fixed git identities and dates (so commit ids are
//! the same on every machine). The sandbox path prints as `[ROOT]`, `HOME` as `[HOME]`, the
//! folder of the binaries as `[BIN]`, the toolbox as `[TOOLS]`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde::Deserialize;

use crate::error::{Error, IoContext, Result};
use crate::matcher::{self, Redactions};

/// The fake time every golden runs at.
pub const GOLDEN_CLOCK: &str = "2026-10-01T09:00:00Z";

/// Builds the starting tree of a sandbox kind: `(kind, sandbox dir, environment)`.
pub type SandboxFn = dyn Fn(&str, &Path, &[(String, String)]) -> Result<()>;

/// The front matter of a case.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Meta {
    /// Unique snake_case name stating the behaviour.
    pub name: String,
    /// The lesson (1–8) the case belongs to.
    pub lesson: Option<u8>,
    /// The sandbox it starts from: `empty`, `git`, `rehearsal`, or `transcripts` (the embedded
    /// transcript fixtures of `tests/fixtures/transcripts/` in `$HOME/.claude` and `$HOME/.codex`).
    pub sandbox: Option<String>,
    /// Per-command timeout, e.g. `120s` (default [`StepTimeout::default`], 120 s).
    pub timeout: Option<StepTimeout>,
    /// Extra environment for every command.
    pub env: BTreeMap<String, String>,
}

/// The time limit of one step (`$ ` command), as a case's front matter or an `exercise.toml`
/// writes it: `timeout = "120s"` (a duration [`crate::duration::parse_duration`] reads). Parsed
/// when the file is read, so a bad one is an error naming the file and line; shown back as
/// written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepTimeout {
    /// The limit.
    pub limit: Duration,
    /// The text it was written as, e.g. `120s`.
    pub written: String,
}

impl Default for StepTimeout {
    /// 120 seconds, the limit of a step whose file names none.
    fn default() -> Self {
        StepTimeout { limit: Duration::from_secs(120), written: "120s".into() }
    }
}

impl std::fmt::Display for StepTimeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.written)
    }
}

impl std::str::FromStr for StepTimeout {
    type Err = String;

    /// Errors: a message naming the text and the accepted shapes.
    fn from_str(t: &str) -> std::result::Result<Self, String> {
        match crate::duration::parse_duration(t) {
            Ok(limit) => Ok(StepTimeout { limit, written: t.to_string() }),
            Err(_) => {
                Err(format!("bad timeout `{t}`: write a duration such as \"120s\" or \"5m\""))
            }
        }
    }
}

impl<'de> Deserialize<'de> for StepTimeout {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

/// One thing a case does, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Write `content` to `path` (relative to the sandbox).
    File { path: String, content: String },
    /// Run `command`; expect `status` (None: any non-zero) and `output`.
    Run { line: usize, command: String, status: Option<i32>, output: String },
}

/// A parsed case.
#[derive(Clone, Debug)]
pub struct Case {
    /// Front matter.
    pub meta: Meta,
    /// Steps in order.
    pub steps: Vec<Step>,
}

/// Parse a case's text; `origin` names it in errors (`tests/cases/x.md`).
///
/// Errors: [`Error::Input`] with the line of a malformed front matter or an unclosed block.
pub fn parse(origin: &str, text: &str) -> Result<Case> {
    parse_with_spans(origin, text).map(|(case, _)| case)
}

/// Where a `$ ` step sits in its case file (0-based line indices), for rewriting it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Span {
    /// The `$ ` line.
    command: usize,
    /// The `? ` line, if any.
    status: Option<usize>,
    /// The expected output lines, without trailing blank lines.
    output: std::ops::Range<usize>,
}

fn parse_with_spans(origin: &str, text: &str) -> Result<(Case, Vec<Span>)> {
    let err = |line: usize, msg: &str| Error::input(origin, Some(line), msg.to_string());
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    let mut meta = Meta::default();
    if lines.first().map(|l| l.trim()) == Some("+++") {
        let end = lines[1..]
            .iter()
            .position(|l| l.trim() == "+++")
            .ok_or_else(|| err(1, "front matter not closed with +++"))?
            + 1;
        let fm = lines[1..end].join("\n");
        meta = toml::from_str(&fm).map_err(|e| {
            let l = e.span().map_or(2, |s| crate::longrun::config::line_of(&fm, s.start) + 1);
            err(l, e.message())
        })?;
        i = end + 1;
    }
    let mut steps = Vec::new();
    let mut spans = Vec::new();
    while i < lines.len() {
        let l = lines[i].trim_start();
        let Some(info) = l.strip_prefix("```") else {
            i += 1;
            continue;
        };
        let start = i;
        let close = lines[i + 1..]
            .iter()
            .position(|x| x.trim_start().starts_with("```"))
            .ok_or_else(|| err(start + 1, "code block not closed"))?
            + i
            + 1;
        let body = &lines[i + 1..close];
        if let Some(path) = info.split_whitespace().find_map(|w| w.strip_prefix("file=")) {
            let mut content = body.join("\n");
            content.push('\n');
            steps.push(Step::File { path: path.to_string(), content });
        } else if info.trim() == "console" {
            parse_console(body, start + 2, &mut steps, &mut spans).map_err(|(l, m)| err(l, &m))?;
        }
        i = close + 1;
    }
    Ok((Case { meta, steps }, spans))
}

/// Parse an expected exit status line's value: `N` (0–255) or `failed` (any non-zero).
pub fn parse_status(text: &str) -> std::result::Result<Option<i32>, String> {
    let t = text.trim();
    if t == "failed" {
        return Ok(None);
    }
    match t.parse::<u8>() {
        Ok(n) if t.bytes().all(|b| b.is_ascii_digit()) => Ok(Some(i32::from(n))),
        _ => Err(format!("bad exit status `? {t}`: write `? N` (0 to 255) or `? failed`")),
    }
}

/// The value of an exit status line `? TOKEN`: `?`, one space, then a single word.
fn status_token(line: &str) -> Option<&str> {
    let rest = line.trim_end().strip_prefix("? ")?;
    (!rest.is_empty() && !rest.contains(char::is_whitespace)).then_some(rest)
}

fn parse_console(
    body: &[&str],
    first_line: usize,
    steps: &mut Vec<Step>,
    spans: &mut Vec<Span>,
) -> std::result::Result<(), (usize, String)> {
    let at = |k: usize| first_line - 1 + k;
    let mut k = 0;
    while k < body.len() {
        let Some(cmd) = body[k].strip_prefix("$ ") else {
            k += 1;
            continue;
        };
        let line = first_line + k;
        k += 1;
        let mut status = Some(0);
        let mut status_at = None;
        // `? TOKEN` (one word after `? `) is a status line and must be valid; anything else,
        // such as git's `?? notes.txt`, is the command's output.
        if let Some(s) = body.get(k).and_then(|l| status_token(l)) {
            status = parse_status(s).map_err(|m| (first_line + k, m))?;
            status_at = Some(at(k));
            k += 1;
        }
        let from = k;
        while k < body.len() && !body[k].starts_with("$ ") {
            k += 1;
        }
        let output = body[from..k].join("\n");
        let mut to = k;
        while to > from && body[to - 1].trim().is_empty() {
            to -= 1;
        }
        spans.push(Span {
            command: at(line - first_line),
            status: status_at,
            output: at(from)..at(to),
        });
        steps.push(Step::Run { line, command: cmd.to_string(), status, output });
    }
    Ok(())
}

/// Where the binaries under test are.
#[derive(Clone, Debug)]
pub struct Binaries {
    /// The `kit` binary.
    pub kit: PathBuf,
    /// The `fake-agent` binary (usually beside `kit`).
    pub fake_agent: Option<PathBuf>,
}

/// One failed step.
#[derive(Clone, Debug)]
pub struct Failure {
    /// Line of the `$ ` command in the case file.
    pub line: usize,
    /// The command.
    pub command: String,
    /// What went wrong: a status mismatch and/or a diff of expected versus actual.
    pub detail: String,
}

/// The result of one case.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The case's name.
    pub name: String,
    /// The first failure, if any (later steps are not run after one fails).
    pub failure: Option<Failure>,
}

/// The folder a check's scratch folders (its sandbox, toolbox and temporary files) are made in:
/// `/dev/shm` when `TMPDIR` is not set, `/dev/shm` is a tmpfs this user can write and it has
/// [`SCRATCH_MIN_FREE`] free; else [`std::env::temp_dir`] (`$TMPDIR`, else `/tmp`). A check
/// creates and removes thousands of files (a lab, git repositories, the criteria's folders): on a
/// disk file system that is a third of its CPU, in the kernel; in memory it is a fraction of it
/// (BENCHMARKS.md, "kit verify"). `/dev/shm` is among the folders the criteria's environment
/// treats as temporary (a `PATH` entry there is dropped), exactly as `/tmp`, so a check judges the
/// same wherever its scratch folder is. Decided once per process.
pub fn scratch_base() -> PathBuf {
    static BASE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BASE.get_or_init(|| {
        if std::env::var_os("TMPDIR").is_some_and(|t| !t.is_empty()) {
            return std::env::temp_dir();
        }
        let shm = Path::new("/dev/shm");
        if in_memory_with_room(shm) {
            shm.to_path_buf()
        } else {
            std::env::temp_dir()
        }
    })
    .clone()
}

/// The name a case's scratch folder starts with in `base`: `kit-golden-`, or in `/dev/shm`
/// `kit-gc-`, so that the sandbox's path (`/dev/shm/kit-gc-XXXXXX/sandbox`) is exactly as long
/// as in `/tmp` (`/tmp/kit-golden-XXXXXX/sandbox`). The fake agent counts a token per 4 bytes of
/// what it reads and writes, absolute paths included, so the token counts a golden prints
/// (`loop_adds_each_iteration_to_the_ledger`) follow the length of that path.
fn case_prefix(base: &Path) -> &'static str {
    if base == Path::new("/dev/shm") {
        "kit-gc-"
    } else {
        "kit-golden-"
    }
}

/// The free space [`scratch_base`] wants of a memory file system: the whole course's sandboxes,
/// eight at a time, take a few tens of MB.
pub const SCRATCH_MIN_FREE: u64 = 512 << 20;

/// Whether `dir` is a tmpfs folder this process can write, with [`SCRATCH_MIN_FREE`] free.
#[cfg(not(target_os = "linux"))]
fn in_memory_with_room(_dir: &Path) -> bool {
    false
}

/// Whether `dir` is a tmpfs folder this process can write, with [`SCRATCH_MIN_FREE`] free.
#[cfg(target_os = "linux")]
fn in_memory_with_room(dir: &Path) -> bool {
    use nix::sys::statfs::{statfs, TMPFS_MAGIC};
    use nix::unistd::{access, AccessFlags};
    let Ok(fs) = statfs(dir) else { return false };
    let Ok(vfs) = nix::sys::statvfs::statvfs(dir) else { return false };
    #[allow(clippy::useless_conversion)] // c_ulong and fsblkcnt_t are u32 on 32-bit targets
    let free = u64::from(vfs.blocks_available()) * u64::from(vfs.fragment_size());
    fs.filesystem_type() == TMPFS_MAGIC
        && free >= SCRATCH_MIN_FREE
        && access(dir, AccessFlags::W_OK | AccessFlags::X_OK).is_ok()
}

/// The binaries to test: this executable and the `fake-agent` beside it, else a `fake-agent`
/// link to this executable (which is also the fake agent) in a temporary folder, returned so it
/// lives as long as the run. So the `kit` binary alone verifies the whole catalogue.
pub fn this_binaries() -> Result<(Binaries, Option<tempfile::TempDir>)> {
    let kit = std::env::current_exe()
        .map_err(|e| Error::internal(format!("cannot locate the kit binary: {e}")))?;
    let beside = kit.with_file_name(crate::rehearse::FAKE_AGENT);
    if beside.is_file() {
        return Ok((Binaries { kit, fake_agent: Some(beside) }, None));
    }
    let dir = tempfile::Builder::new()
        .prefix("kit-verify-bin-")
        .tempdir()
        .map_err(|e| Error::io("a temporary folder", e))?;
    let link = dir.path().join(crate::rehearse::FAKE_AGENT);
    std::os::unix::fs::symlink(&kit, &link).at(&link)?;
    Ok((Binaries { kit, fake_agent: Some(link) }, Some(dir)))
}

/// Prepare a sandbox of `kind` in `dir`: `empty`; `git` (an empty first commit); `rehearsal`
/// (the sample project of `kit rehearse`, committed, with `.home/` excluded from git).
pub fn build_sandbox(kind: &str, dir: &Path, env: &[(String, String)]) -> Result<()> {
    match kind {
        "empty" => Ok(()),
        "git" => crate::git::init_sandbox(dir, env),
        "rehearsal" => {
            crate::rehearse::sample::write_sample_project(dir)?;
            crate::rehearse::sample::commit_sample_project(dir, env)?;
            // The sandbox's HOME (`.home/`, with the fake agent's transcripts) is not project work.
            let exclude = dir.join(".git/info/exclude");
            let mut text = std::fs::read_to_string(&exclude).unwrap_or_default();
            text.push_str("/.home/\n");
            crate::atomic::write_atomic(&exclude, text.as_bytes())
        }
        "transcripts" => crate::embedded::write_transcript_fixtures(&dir.join(".home")),
        other => Err(Error::usage(format!("unknown sandbox kind `{other}`"))
            .with_hint("use sandbox = \"empty\", \"git\", \"rehearsal\" or \"transcripts\"")),
    }
}

/// The system's own folders, which end every check's `PATH` after its [`Toolbox`]: coreutils,
/// `sh`, `git` and `python3` come from here on a usual Linux machine.
pub const SYSTEM_PATH: [&str; 6] =
    ["/usr/local/bin", "/usr/bin", "/bin", "/usr/local/sbin", "/usr/sbin", "/sbin"];

/// The tools a step may start that some machines keep outside [`SYSTEM_PATH`] (pyenv, Homebrew):
/// the [`Toolbox`] links them to the program they are, resolved once.
const TOOLS: [&str; 2] = ["python3", "git"];

/// The first folder of every check's `PATH`: a temporary folder outside the sandbox, holding
/// links to the kit under test (`kit`, `fake-agent`) and to the [`TOOLS`] that are not in
/// [`SYSTEM_PATH`]. A check's `PATH` is this folder and the system's, never the caller's: a
/// `sh`, `python3`, `git` or `kit` that the learner puts first on their `PATH` (or anywhere in
/// the lab) is not what a check runs.
pub struct Toolbox {
    dir: PathBuf,
    /// The links it holds: name, target.
    links: Vec<(String, PathBuf)>,
    _owned: Option<tempfile::TempDir>,
}

impl Toolbox {
    /// A toolbox in a new temporary folder (removed when it is dropped).
    ///
    /// Errors: the folder or a link cannot be made.
    pub fn new(bins: &Binaries) -> Result<Toolbox> {
        let t = tempfile::Builder::new()
            .prefix("kit-tools-")
            .tempdir()
            .map_err(|e| Error::io("a temporary folder", e))?;
        let dir = t.path().to_path_buf();
        let links = Toolbox::fill(&dir, bins)?;
        Ok(Toolbox { dir, links, _owned: Some(t) })
    }

    /// The toolbox of `bins` kept for reuse in this user's temporary folder
    /// (`kit-tools-UID-HASH`, HASH of the kit binary's path), its links made anew (atomically)
    /// each time: for the commands that set up a sandbox (`kit exercise start`, tests), not for
    /// a check's verdict, whose runner makes a toolbox of its own in a new folder.
    ///
    /// Errors: the folder or a link cannot be made.
    pub fn shared(bins: &Binaries) -> Result<Toolbox> {
        use sha2::Digest;
        let hash = hex::encode(sha2::Sha256::digest(bins.kit.to_string_lossy().as_bytes()));
        let uid = nix::unistd::Uid::current();
        let dir = std::env::temp_dir().join(format!("kit-tools-{uid}-{}", &hash[..12]));
        Toolbox::in_dir(&dir, bins)
    }

    /// A toolbox in `dir` (made if missing; the caller removes it).
    ///
    /// Errors: the folder or a link cannot be made.
    pub fn in_dir(dir: &Path, bins: &Binaries) -> Result<Toolbox> {
        let links = Toolbox::fill(dir, bins)?;
        Ok(Toolbox { dir: dir.to_path_buf(), links, _owned: None })
    }

    /// What changed in the toolbox since it was made, if anything: a link replaced, removed,
    /// pointed elsewhere, or a new entry. A step that runs the learner's code can reach the
    /// toolbox (`command -v kit` names it), so the runner looks after every step and fails the
    /// case rather than run a later step with a `kit` the work put there.
    pub fn tampered(&self) -> Option<String> {
        let mut seen = 0;
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) => return Some(format!("{} cannot be read: {e}", self.dir.display())),
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some((_, want)) = self.links.iter().find(|(n, _)| *n == name) else {
                return Some(format!("{name} appeared in it"));
            };
            match std::fs::read_link(e.path()) {
                Ok(t) if &t == want => seen += 1,
                _ => return Some(format!("{name} is no longer the link to {}", want.display())),
            }
        }
        (seen != self.links.len()).then(|| "an entry was removed".to_string())
    }

    fn fill(dir: &Path, bins: &Binaries) -> Result<Vec<(String, PathBuf)>> {
        std::fs::create_dir_all(dir).at(dir)?;
        let absolute = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        let kit = absolute(&bins.kit);
        let fake = bins.fake_agent.as_deref().map_or_else(|| kit.clone(), absolute);
        let mut links = vec![("kit".to_string(), kit), (crate::rehearse::FAKE_AGENT.into(), fake)];
        for name in TOOLS {
            if SYSTEM_PATH.iter().any(|d| is_executable(&Path::new(d).join(name))) {
                continue;
            }
            if let Some(found) = resolve_outside(name) {
                links.push((name.to_string(), found));
            }
        }
        for (name, target) in &links {
            // A new link beside it, renamed over the old: another process filling the same
            // shared toolbox never sees the name missing.
            let link = dir.join(name);
            let tmp = dir.join(format!(".{name}.{}", std::process::id()));
            let _ = std::fs::remove_file(&tmp);
            std::os::unix::fs::symlink(target, &tmp).at(&tmp)?;
            std::fs::rename(&tmp, &link).at(&link)?;
        }
        Ok(links)
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A check's whole `PATH`: this folder, then [`SYSTEM_PATH`].
    pub fn path(&self) -> String {
        let mut dirs = vec![self.dir.to_string_lossy().into_owned()];
        dirs.extend(SYSTEM_PATH.iter().map(|d| d.to_string()));
        dirs.join(":")
    }
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `name` found on this process's `PATH` in an absolute folder that is not a temporary one
/// (nor the current folder), as the program it is: a Python launcher script (a pyenv shim,
/// which would look for its versions under the check's own HOME) is resolved to the interpreter
/// it starts now. None when there is none.
fn resolve_outside(name: &str) -> Option<PathBuf> {
    let cwd = std::env::current_dir().ok();
    let temp = std::env::temp_dir();
    let path = std::env::var_os("PATH")?;
    let found = std::env::split_paths(&path)
        .filter(|d| d.is_absolute() && !d.starts_with(&temp) && !d.starts_with("/tmp"))
        .filter(|d| cwd.as_deref().is_none_or(|c| !d.starts_with(c)))
        .map(|d| d.join(name))
        .find(|p| is_executable(p))?;
    if !name.starts_with("python") {
        return Some(found.canonicalize().unwrap_or(found));
    }
    let out = Command::new(&found)
        .args(["-I", "-c", "import sys; print(sys.executable)"])
        .stdin(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let exe = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    (exe.is_absolute() && is_executable(&exe)).then_some(exe)
}

/// [`golden_env_with`] the [shared](Toolbox::shared) toolbox of `bins` (for setting a sandbox
/// up; a check's runner uses a toolbox of its own). A toolbox that cannot be made leaves `PATH`
/// the system's folders only, with `kit` not on it.
pub fn golden_env(root: &Path, bins: &Binaries) -> Vec<(String, String)> {
    match Toolbox::shared(bins) {
        Ok(tools) => golden_env_with(root, &tools),
        Err(_) => {
            let empty = Toolbox { dir: PathBuf::new(), links: vec![], _owned: None };
            let mut env = golden_env_with(root, &empty);
            for (k, v) in env.iter_mut() {
                if k == "PATH" {
                    *v = SYSTEM_PATH.join(":");
                }
            }
            env
        }
    }
}

/// The whole environment every golden command runs with: nothing else is inherited from the
/// host (the runner clears it), so `KIT_*` or `CLAUDE_*` variables of the caller cannot leak in.
/// `PATH` is the [`Toolbox`]'s, never the caller's.
pub fn golden_env_with(root: &Path, tools: &Toolbox) -> Vec<(String, String)> {
    let mut env = crate::sandbox::environment(&root.join(".home"), vec![], crate::sandbox::LEARNER);
    for (k, v) in env.iter_mut() {
        if k == "PATH" {
            *v = tools.path();
        }
    }
    let date = "2026-10-01T09:00:00+00:00";
    env.extend(
        [
            ("NO_COLOR", "1"),
            ("COLUMNS", "100"),
            ("TERM", "dumb"),
            ("TZ", "UTC"),
            ("LANG", "C.UTF-8"),
            // No compiled caches: a fix of the same size within the same second would otherwise
            // run the stale `.pyc` (Python compares mtime and size only).
            ("PYTHONDONTWRITEBYTECODE", "1"),
            ("KIT_FAKE_CLOCK", GOLDEN_CLOCK),
            ("GIT_AUTHOR_DATE", date),
            ("GIT_COMMITTER_DATE", date),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    env
}

/// Run `case` in a fresh sandbox under a temporary folder. `sandbox` builds the starting tree
/// for the case's sandbox kind (use [`build_sandbox`] unless you add kinds).
pub fn run_case(case: &Case, bins: &Binaries, sandbox: &SandboxFn) -> Result<Outcome> {
    run_case_with_progress(case, bins, sandbox, &|_, _, _| {})
}

/// Called before each `$ ` step runs: (1-based step number, number of `$ ` steps, command).
pub type ProgressFn<'a> = dyn Fn(usize, usize, &str) + 'a;

/// [`run_case`], calling `progress` before each `$ ` step (`kit exercise check` shows it).
pub fn run_case_with_progress(
    case: &Case,
    bins: &Binaries,
    sandbox: &SandboxFn,
    progress: &ProgressFn<'_>,
) -> Result<Outcome> {
    run_steps(case, bins, sandbox, false, progress).map(|(outcome, _)| outcome)
}

/// What one `$ ` step printed and how it exited, from [`run_case_steps`].
#[derive(Clone, Debug)]
pub struct StepRun {
    /// Line of the `$ ` command in the case file.
    pub line: usize,
    /// The exit code (None: killed by a signal or the timeout).
    pub code: Option<i32>,
    /// The output, stdout and stderr merged, with the placeholders applied.
    pub actual: String,
    /// Whether status and output matched the case.
    pub ok: bool,
}

/// [`run_case`], also returning every step's [`StepRun`]. With `keep_going`, steps after a failed
/// one still run (for [`bless`]); the outcome still reports the first failure.
pub fn run_case_steps(
    case: &Case,
    bins: &Binaries,
    sandbox: &SandboxFn,
    keep_going: bool,
) -> Result<(Outcome, Vec<StepRun>)> {
    run_steps(case, bins, sandbox, keep_going, &|_, _, _| {})
}

fn run_steps(
    case: &Case,
    bins: &Binaries,
    sandbox: &SandboxFn,
    keep_going: bool,
    progress: &ProgressFn<'_>,
) -> Result<(Outcome, Vec<StepRun>)> {
    let total = case.steps.iter().filter(|s| matches!(s, Step::Run { .. })).count();
    let base = scratch_base();
    let tmp = tempfile::Builder::new()
        .prefix(case_prefix(&base))
        .tempdir_in(&base)
        .map_err(|e| Error::io("temporary folder", e))?;
    let root = tmp.path().join("sandbox");
    std::fs::create_dir_all(root.join(".home")).at(&root)?;
    // Each case's temporary files stay in its own HOME (cases run in parallel), and go with it.
    let tmpdir = root.join(".home").join("tmp");
    std::fs::create_dir_all(&tmpdir).at(&tmpdir)?;
    let tools = Toolbox::in_dir(&tmp.path().join("tools"), bins)?;
    let mut env = golden_env_with(&root, &tools);
    env.push(("TMPDIR".into(), tmpdir.to_string_lossy().into_owned()));
    env.extend(case.meta.env.iter().map(|(k, v)| (k.clone(), v.clone())));
    sandbox(case.meta.sandbox.as_deref().unwrap_or("empty"), &root, &env)?;
    std::fs::create_dir_all(&tmpdir).at(&tmpdir)?;
    let timeout = case.meta.timeout.clone().unwrap_or_default().limit;
    let mut red = Redactions::new();
    red.add("[ROOT]", root.to_string_lossy());
    if let Ok(c) = root.canonicalize() {
        red.add("[ROOT]", c.to_string_lossy());
    }
    red.add("[HOME]", root.join(".home").to_string_lossy());
    if let Some(d) = bins.kit.parent() {
        red.add("[BIN]", d.to_string_lossy());
    }
    red.add("[TOOLS]", tools.dir().to_string_lossy());
    let name = case.meta.name.clone();
    let mut runs = Vec::new();
    let mut first_failure = None;
    for step in &case.steps {
        match step {
            Step::File { path, content } => write_own_file(&root, path, content)?,
            Step::Run { line, command, status, output } => {
                progress(runs.len() + 1, total, command);
                let (code, actual) = run_merged(command, &root, &env, timeout)?;
                let actual = red.apply(&actual);
                let status_ok = match status {
                    Some(s) => code == Some(*s),
                    None => code.is_some_and(|c| c != 0),
                };
                let mut out_ok = matcher::is_match(output, &actual);
                let mut actual = actual;
                if let Some(what) = tools.tampered() {
                    out_ok = false;
                    actual.push_str(&format!(
                        "kit: this step changed the check's own tools ([TOOLS]): {what}; a check \
                         runs kit and its tools from there, so it stops here\n"
                    ));
                }
                runs.push(StepRun {
                    line: *line,
                    code,
                    actual: actual.clone(),
                    ok: status_ok && out_ok,
                });
                if !(status_ok && out_ok) && first_failure.is_none() {
                    let mut detail = String::new();
                    if !status_ok {
                        let want = status.map_or("non-zero".to_string(), |s| s.to_string());
                        let got = code
                            .map_or("killed by a signal or the timeout".into(), |c| c.to_string());
                        detail.push_str(&format!("exit status: expected {want}, got {got}\n"));
                    }
                    if !out_ok {
                        detail.push_str(&matcher::diff(output, &actual));
                    }
                    first_failure = Some(Failure { line: *line, command: command.clone(), detail });
                    if !keep_going {
                        break;
                    }
                }
            }
        }
    }
    Ok((Outcome { name, failure: first_failure }, runs))
}

/// Rewrite `text` (a case file) so that its failed steps expect what they printed in `runs`:
/// expected lines that still match (wildcards too) stay, others are replaced
/// ([`matcher::bless`]); a wrong `? N` becomes the actual status. Prose, file blocks and passing
/// steps are untouched. A step killed by the timeout keeps its status line.
pub fn bless(origin: &str, text: &str, runs: &[StepRun]) -> Result<String> {
    let (case, spans) = parse_with_spans(origin, text)?;
    let lines: Vec<&str> = text.split('\n').collect();
    let expected: Vec<(&Option<i32>, &String)> = case
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::Run { status, output, .. } => Some((status, output)),
            Step::File { .. } => None,
        })
        .collect();
    let mut out: Vec<String> = Vec::new();
    let mut next = 0;
    for (span, (status, output)) in spans.iter().zip(expected) {
        let Some(run) = runs.iter().find(|r| r.line == span.command + 1 && !r.ok) else {
            continue;
        };
        out.extend(lines[next..=span.command].iter().map(|l| l.to_string()));
        let status_ok = match status {
            Some(s) => run.code == Some(*s),
            None => run.code.is_some_and(|c| c != 0),
        };
        let new_status = match (status_ok, run.code, span.status) {
            (false, Some(c), _) => (c != 0 || span.status.is_some()).then(|| format!("? {c}")),
            (_, _, Some(at)) => Some(lines[at].to_string()),
            _ => None,
        };
        out.extend(new_status);
        let blessed = matcher::bless(output, &run.actual);
        if !blessed.is_empty() {
            out.extend(blessed.split('\n').map(str::to_string));
        }
        next = span.output.end;
    }
    out.extend(lines[next..].iter().map(|l| l.to_string()));
    Ok(out.join("\n"))
}

/// Run the case in file `path` and, if steps fail, [`bless`] the file in place (atomically).
/// Returns the outcome before blessing and whether the file changed.
pub fn bless_file(
    path: &Path,
    origin: &str,
    bins: &Binaries,
    sandbox: &SandboxFn,
) -> Result<(Outcome, bool)> {
    bless_file_as(path, origin, &|text| parse(origin, text), bins, sandbox)
}

/// [`bless_file`] for a file whose case is not its own front matter alone (an exercise's
/// `golden.md`, a lesson's `README.md`): `case_of` turns the file's text into the case to run.
pub fn bless_file_as(
    path: &Path,
    origin: &str,
    case_of: &dyn Fn(&str) -> Result<Case>,
    bins: &Binaries,
    sandbox: &SandboxFn,
) -> Result<(Outcome, bool)> {
    let text = std::fs::read_to_string(path).at(path)?;
    let case = case_of(&text)?;
    let (outcome, runs) = run_case_steps(&case, bins, sandbox, true)?;
    if outcome.failure.is_none() {
        return Ok((outcome, false));
    }
    let new = bless(origin, &text, &runs)?;
    let changed = new != text;
    if changed {
        crate::atomic::write_atomic(path, new.as_bytes())?;
    }
    Ok((outcome, changed))
}

/// Write a case's file block `rel` under `root` as the case's own: a link met on the way (the
/// file itself or a folder above it, planted by the work a check judges) is removed first, so
/// the write never lands outside the sandbox or in a file the work chose.
///
/// Errors: I/O errors naming the path; a path that climbs out of `root`.
fn write_own_file(root: &Path, rel: &str, content: &str) -> Result<()> {
    let rel_path = Path::new(rel);
    if rel_path.is_absolute()
        || rel_path.components().any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return Err(Error::internal(format!("file block `{rel}` must stay inside the sandbox")));
    }
    let mut at = root.to_path_buf();
    let parts: Vec<_> = rel_path.components().collect();
    for (i, c) in parts.iter().enumerate() {
        at.push(c);
        let meta = std::fs::symlink_metadata(&at);
        if meta.as_ref().is_ok_and(|m| m.file_type().is_symlink()) {
            std::fs::remove_file(&at).at(&at)?;
        }
        if i + 1 < parts.len() && !at.is_dir() {
            std::fs::create_dir_all(&at).at(&at)?;
        }
    }
    std::fs::write(&at, content).at(&at)
}

/// How long the runner waits, after the shell exits, for the output pipe to close before it
/// kills the process group (a background job holding the pipe).
pub const EOF_GRACE: Duration = Duration::from_secs(2);

/// Run `command` through `/bin/sh -c` (by absolute path: never a `sh` on anyone's `PATH`) in `dir`, stdout and stderr into one pipe; kill it (and its
/// process group) after `timeout`. Returns the exit code (None if killed) and the output.
fn run_merged(
    command: &str,
    dir: &Path,
    env: &[(String, String)],
    timeout: Duration,
) -> Result<(Option<i32>, String)> {
    // Its own process group, so the timeout ends what it started; a process that holds the
    // pipe open after the shell exits (`sleep 600 &`) costs at most EOF_GRACE and loses
    // nothing already printed.
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c").arg(command).current_dir(dir).env_clear().envs(env.iter().map(|(k, v)| (k, v)));
    let how = crate::proc::Spawn { merge: true, own_group: true, input: None };
    let running = crate::proc::spawn(&mut cmd, how).at(dir)?;
    let group = nix::unistd::Pid::from_raw(running.id() as i32);
    let done = running.wait(timeout, Some(EOF_GRACE)).at(dir)?;
    // What the step started ends with it, unless the step leaves a job running on purpose
    // (a command ending in `&`, such as a loop started in the background for later steps): a
    // process the work started cannot outlive its step and change what later steps judge.
    if !leaves_a_job(command) {
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
    }
    Ok((done.code, String::from_utf8_lossy(&done.stdout).into_owned()))
}

/// Whether a step's command ends by sending a job to the background (`… &`, not `… &&`).
fn leaves_a_job(command: &str) -> bool {
    let t = command.trim_end();
    t.ends_with('&') && !t.ends_with("&&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scratch_folders_go_to_memory_only_on_a_writable_tmpfs() {
        // The source tree is on a disk, a missing folder is nothing: both fall back.
        assert!(!in_memory_with_room(Path::new(env!("CARGO_MANIFEST_DIR"))));
        assert!(!in_memory_with_room(Path::new("/no/such/folder")));
        let base = scratch_base();
        assert!(base.is_dir(), "{base:?}");
        // A case's sandbox path is as long in memory as in /tmp (token counts follow it).
        let len = |b: &str| Path::new(b).join(case_prefix(Path::new(b))).as_os_str().len();
        assert_eq!(len("/dev/shm"), len("/tmp"));
        let memory = base == Path::new("/dev/shm");
        assert!(!memory || in_memory_with_room(&base), "/dev/shm chosen without room: {base:?}");
    }

    #[test]
    fn parses_front_matter_files_and_steps() {
        let text = "+++\nname = \"x\"\nlesson = 2\nsandbox = \"git\"\n+++\n\nProse.\n\n```text file=a/b.txt\nhello\n```\n\n```console\n$ kit goal check\n? 2\nlevel 0\n...\n$ echo hi\nhi\n```\n";
        let c = parse("x.md", text).unwrap();
        assert_eq!(c.meta.name, "x");
        assert_eq!(c.meta.lesson, Some(2));
        assert_eq!(c.steps.len(), 3);
        assert_eq!(c.steps[0], Step::File { path: "a/b.txt".into(), content: "hello\n".into() });
        assert_eq!(
            c.steps[1],
            Step::Run {
                line: 14,
                command: "kit goal check".into(),
                status: Some(2),
                output: "level 0\n...".into()
            }
        );
        assert_eq!(
            c.steps[2],
            Step::Run { line: 18, command: "echo hi".into(), status: Some(0), output: "hi".into() }
        );
    }

    #[test]
    fn malformed_front_matter_names_the_line() {
        match parse("c.md", "+++\nname = \"x\"\nlesson = \"two\"\n+++\n") {
            Err(Error::Input { line: Some(3), .. }) => {}
            other => panic!("{other:?}"),
        }
        assert!(parse("c.md", "```console\n$ x\n").is_err());
    }

    #[test]
    fn exit_status_is_strict() {
        let case = |st: &str| parse("c.md", &format!("x\n```console\n$ true\n? {st}\n```\n"));
        let status = |st: &str| match case(st).unwrap().steps[0].clone() {
            Step::Run { status, .. } => status,
            other => panic!("{other:?}"),
        };
        assert_eq!(status("0"), Some(0));
        assert_eq!(status("255"), Some(255));
        assert_eq!(status("failed"), None);
        for bad in ["success", "256", "-1", "1x", "fail", "+1"] {
            match case(bad) {
                Err(Error::Input { line: Some(4), .. }) => {}
                other => panic!("`? {bad}`: {other:?}"),
            }
        }
        // Output that merely starts with `?` (git's untracked files) is output, not a status.
        for output in ["?? notes.txt", "? two words"] {
            let c = parse("c.md", &format!("x\n```console\n$ git status --short\n{output}\n```\n"));
            match c.unwrap().steps[0].clone() {
                Step::Run { status: Some(0), output: o, .. } => assert_eq!(o, output),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn bad_timeout_names_the_line() {
        match parse("c.md", "+++\nname = \"x\"\ntimeout = \"soon\"\n+++\n") {
            Err(Error::Input { line: Some(3), msg, .. }) => {
                assert!(msg.starts_with("bad timeout `soon`: write a duration"), "{msg}")
            }
            other => panic!("{other:?}"),
        }
        let case = parse("c.md", "+++\nname = \"x\"\ntimeout = \"5m\"\n+++\n").unwrap();
        let t = case.meta.timeout.unwrap();
        assert_eq!((t.limit, t.to_string()), (Duration::from_secs(300), "5m".to_string()));
        let none = parse("c.md", "+++\nname = \"x\"\n+++\n").unwrap().meta.timeout;
        assert_eq!(none.unwrap_or_default().limit, Duration::from_secs(120));
    }

    fn bins() -> Binaries {
        Binaries { kit: PathBuf::from("/nonexistent/kit"), fake_agent: None }
    }

    #[test]
    fn host_environment_does_not_leak() {
        let tools = Toolbox::new(&bins()).unwrap();
        let env = golden_env_with(Path::new("/tmp/x"), &tools);
        let (code, out) =
            run_merged("env | sort", Path::new("/tmp"), &env, Duration::from_secs(20)).unwrap();
        assert_eq!(code, Some(0));
        let names: Vec<&str> = out.lines().filter_map(|l| l.split('=').next()).collect();
        let allowed: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        for n in names {
            // `sh` itself may export PWD, SHLVL and `_`.
            assert!(allowed.contains(&n) || ["PWD", "SHLVL", "_", "OLDPWD"].contains(&n), "{n}");
        }
    }

    #[test]
    fn background_job_holding_the_pipe_does_not_hang() {
        let tools = Toolbox::new(&bins()).unwrap();
        let env = golden_env_with(Path::new("/tmp/x"), &tools);
        let start = std::time::Instant::now();
        let (code, out) =
            run_merged("(sleep 600 &) ; echo hi", Path::new("/tmp"), &env, Duration::from_secs(60))
                .unwrap();
        assert!(start.elapsed() < Duration::from_secs(10), "{:?}", start.elapsed());
        assert_eq!((code, out.as_str()), (Some(0), "hi\n"));
    }

    /// Parallel cases cannot see each other's files: each has its own HOME and TMPDIR, inside
    /// its own sandbox, gone with it.
    #[test]
    fn each_case_has_its_own_home_and_tmpdir() {
        let text = "```console\n$ echo \"$HOME $TMPDIR $CLAUDE_CONFIG_DIR\"; mktemp\n\
                    [HOME] [HOME]/tmp [HOME]/.claude\n[HOME]/tmp/tmp.[..]\n```\n";
        let case = parse("c.md", text).unwrap();
        let o = run_case(&case, &bins(), &build_sandbox).unwrap();
        assert!(o.failure.is_none(), "{:?}", o.failure);
    }

    #[test]
    fn bless_file_rewrites_failing_steps_only() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("case.md");
        let text = "+++\nname = \"b\"\n+++\n\nProse stays.\n\n```console\n$ echo one; echo took 3s\nzero\ntook [DURATION]\n\n$ echo same\nsame\n$ exit 3\n$ printf 'a\\nb\\nc\\n'; false\n? failed\na\n...\nz\n```\n\nMore prose.\n";
        std::fs::write(&path, text).unwrap();
        let (outcome, changed) = bless_file(&path, "case.md", &bins(), &build_sandbox).unwrap();
        assert_eq!(outcome.failure.unwrap().line, 8);
        assert!(changed);
        let new = std::fs::read_to_string(&path).unwrap();
        let want = "+++\nname = \"b\"\n+++\n\nProse stays.\n\n```console\n$ echo one; echo took 3s\none\ntook [DURATION]\n\n$ echo same\nsame\n$ exit 3\n? 3\n$ printf 'a\\nb\\nc\\n'; false\n? failed\na\n...\nc\n```\n\nMore prose.\n";
        assert_eq!(new, want);
        let again = bless_file(&path, "case.md", &bins(), &build_sandbox).unwrap();
        assert!(again.0.failure.is_none() && !again.1);
    }

    #[test]
    fn a_step_ends_what_it_started_unless_it_ends_in_an_ampersand() {
        let d = tempfile::tempdir().unwrap();
        let tools = Toolbox::new(&bins()).unwrap();
        let env = golden_env_with(d.path(), &tools);
        let t = Duration::from_secs(60);
        let (_, out) =
            run_merged("sleep 300 >/dev/null 2>&1 & echo $!", d.path(), &env, t).unwrap();
        let pid: i32 = out.trim().parse().unwrap();
        // Killed with its group once the step's shell ended (a zombie until reaped counts);
        // the signal lands asynchronously: wait for it with a generous deadline.
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while crate::proc::get(pid).is_some_and(|p| !p.is_zombie()) {
            assert!(std::time::Instant::now() < deadline, "the background sleep outlived its step");
            std::thread::sleep(Duration::from_millis(10));
        }
        let (_, out) = run_merged("sleep 300 >/dev/null 2>&1 &", d.path(), &env, t).unwrap();
        assert_eq!(out, "");
        assert!(leaves_a_job("kit loop > loop.log 2>&1 &"));
        assert!(!leaves_a_job("true && false"));
        assert!(!leaves_a_job("a & b"));
    }

    #[test]
    fn a_step_that_replaces_a_tool_of_the_check_fails_the_case() {
        let text = "```console\n$ ln -sf /bin/true \"${PATH%%:*}/kit\"\n$ echo next\nnext\n```\n";
        let case = parse("c.md", text).unwrap();
        let o = run_case(&case, &bins(), &build_sandbox).unwrap();
        let f = o.failure.expect("the tampering step must fail");
        assert_eq!(f.line, 2);
        assert!(f.detail.contains("changed the check's own tools"), "{}", f.detail);
    }

    /// A file block never writes through a link the sandbox holds (to a folder or a file).
    #[test]
    fn a_file_block_replaces_links_on_its_way() {
        let outside = tempfile::tempdir().unwrap();
        let root = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join(".check")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("x"), root.path().join("f.txt")).unwrap();
        write_own_file(root.path(), ".check/run.py", "print(1)\n").unwrap();
        write_own_file(root.path(), "f.txt", "mine\n").unwrap();
        assert!(std::fs::read_dir(outside.path()).unwrap().next().is_none());
        assert_eq!(
            std::fs::read_to_string(root.path().join(".check/run.py")).unwrap(),
            "print(1)\n"
        );
        assert!(!std::fs::symlink_metadata(root.path().join(".check")).unwrap().is_symlink());
        assert!(write_own_file(root.path(), "../escape", "x").is_err());
    }

    #[test]
    fn failure_detail_names_the_exit_status_and_numbers_lines() {
        let case = parse("c.md", "```console\n$ echo hi; exit 4\nho\n```\n").unwrap();
        let o = run_case(&case, &bins(), &build_sandbox).unwrap();
        let f = o.failure.unwrap();
        assert_eq!(f.line, 2);
        assert!(f.detail.starts_with("exit status: expected 0, got 4\n"), "{}", f.detail);
        assert!(f.detail.contains("       1        - ho\n              1 + hi\n"), "{}", f.detail);
    }
}
