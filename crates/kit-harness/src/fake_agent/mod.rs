//! `fake-agent`: a scripted stand-in for `claude -p --output-format stream-json --verbose`
//! (DESIGN §7), so that the loop, `kit measure`, the hook and the course can be rehearsed without
//! spending a token. It takes the prompt (`-p` or stdin), acts on the working tree as its scenario
//! says for this invocation, prints stream-json events ending in a `result` with usage and cost,
//! and writes a Claude Code transcript. Same seed and fake clock, same bytes.
//!
//! With `--codex` it stands in for `codex exec --json` instead (`kit loop --agent
//! fake-codex:NAME`): the same steps, printed as Codex's event stream, and a Codex rollout under
//! `$CODEX_HOME/sessions/` (see `codex.rs`).
//!
//! It is compiled once, here in the library; two thin mains start it: the `fake-agent` binary
//! (`fake-agent/src/main.rs`) and the `kit` binary itself, as `kit fake-agent …` or when started
//! under the name `fake-agent` (see `src/main.rs`). Its scenarios are `fake-agent/scenarios/`.

mod args;
mod codex;
mod hooks;
mod scenario;
mod session;
mod steps;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::error::{Error, ErrorReport, IoContext, Result};

use args::Args;
pub use scenario::names as scenario_names;
use scenario::Scenario;
pub use scenario::SCENARIOS;
use session::{OutputFormat, Session, SessionSpec};

/// The fake agent on this process's arguments: the whole `fake-agent` program.
pub fn main() -> ExitCode {
    main_with_args(std::env::args_os().skip(1))
}

/// The fake agent on `args` (without the program name): how `kit fake-agent …` runs it.
pub fn main_with_args(args: impl IntoIterator<Item = std::ffi::OsString>) -> ExitCode {
    let args = match Args::parse(args) {
        Ok(a) => a,
        Err(msg) => return fail(&Error::usage(msg).with_hint("fake-agent --help")),
    };
    if args.help {
        let _ = writeln!(std::io::stdout(), "{}", args::HELP);
        return ExitCode::SUCCESS;
    }
    if args.list {
        return match list() {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fail(&e),
        };
    }
    match run(&args) {
        Ok(code) => ExitCode::from(code),
        Err(e) => fail(&e),
    }
}

fn fail(e: &Error) -> ExitCode {
    let text = ErrorReport(e).to_string().replacen("kit: error:", "fake-agent: error:", 1);
    let _ = writeln!(std::io::stderr(), "{text}");
    ExitCode::from(e.exit_code())
}

fn run(args: &Args) -> Result<u8> {
    let output = match args.output_format.as_deref() {
        None => OutputFormat::Text,
        Some(f) => OutputFormat::parse(f).ok_or_else(|| {
            Error::usage(format!("--output-format {f}: expected text, json or stream-json"))
        })?,
    };
    if output == OutputFormat::StreamJson && !args.verbose && !args.codex {
        // What Claude Code answers (formats/claude-code.md §7).
        return Err(Error::usage(
            "When using --print, --output-format=stream-json requires --verbose",
        )
        .with_hint("fake-agent --scenario NAME -p --output-format stream-json --verbose"));
    }
    let name = args.scenario.as_deref().ok_or_else(|| {
        Error::usage("no scenario: pass --scenario NAME or set KIT_FAKE_SCENARIO").with_hint(
            format!("fake-agent --scenario finish (embedded: {})", scenario::names().join(", ")),
        )
    })?;
    let (scenario, short) = Scenario::load(name)?;
    let cwd = std::env::current_dir().map_err(|e| Error::io("current directory", e))?;
    let git_dir = find_git_dir(&cwd);
    let counter = counter_file(&short, git_dir.as_deref(), &cwd);
    let count = Count::read(&counter)?;
    let invocation = count.invocation()?;
    let prompt = match &args.prompt {
        Some(p) => p.clone(),
        None => {
            let mut s = String::new();
            std::io::stdin().read_to_string(&mut s).map_err(|e| Error::io("stdin", e))?;
            s
        }
    };
    // The place joins the seed so that fake sessions in two projects (or two rehearsals) never
    // share an id, while a golden, whose paths all sit under its sandbox, still gets the same.
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
    // The seed counts every call made here (all runs), so two runs never share a session id;
    // a test that sets KIT_FAKE_INVOCATION sets the seed with it.
    let nth = if std::env::var_os("KIT_FAKE_INVOCATION").is_some() {
        invocation
    } else {
        count.total + 1
    };
    let seed = format!("{short}:{nth}:{}", place_of(&cwd, &home));
    let spec = SessionSpec {
        output,
        seed,
        invocation,
        transcript: None,
        model: args.model.clone().unwrap_or_else(|| {
            if args.codex {
                codex::CODEX_MODEL.to_string()
            } else {
                scenario.model.clone()
            }
        }),
        cache_ttl: scenario.cache_ttl.clone(),
        permission_mode: args.permission_mode.clone().unwrap_or_else(|| "default".into()),
        git_branch: git_dir.as_deref().map(branch_of).unwrap_or_default(),
        cwd: cwd.clone(),
        codex: args.codex.then(|| codex::Mode {
            json: args.json,
            sandbox: args.sandbox.clone().unwrap_or_else(|| "read-only".into()),
            home: codex::codex_home(),
            ephemeral: args.ephemeral,
        }),
    };
    let persist = !args.no_persistence && !args.codex;
    if args.codex
        && !args.ephemeral
        && std::env::var("CODEX_HOME").map_or(true, |v| v.trim().is_empty())
    {
        let _ = writeln!(
            std::io::stderr(),
            "fake-agent: note: this fake session's rollout goes under the real ~/.codex/sessions: kit measure counts it among your sessions; set CODEX_HOME to a folder of its own to keep them apart"
        );
    }
    let mut session = Session::start_with(spec, &prompt, |id| {
        persist.then(|| session::transcript_path(&cwd, id))
    })?;
    if persist && std::env::var("CLAUDE_CONFIG_DIR").map_or(true, |v| v.trim().is_empty()) {
        // Where Claude Code would write it, so the lessons' `kit measure` and hooks see it; but a
        // fake session must not pass unnoticed among the user's real ones.
        if let Some(t) = session.transcript() {
            let _ = writeln!(
                std::io::stderr(),
                "fake-agent: note: this fake session's transcript is {} (the real ~/.claude): kit measure counts it among your sessions; set CLAUDE_CONFIG_DIR to a folder of its own to keep them apart",
                t.display()
            );
        }
    }
    let steps = scenario.steps_for(invocation).unwrap_or(&[]);
    let ending = steps::Runner::new(&mut session, &cwd, invocation, &prompt)
        .run(steps, &scenario.otherwise)?;
    match ending.how {
        steps::How::Result => session.finish(&ending.text, ending.code)?,
        steps::How::Limit(minutes) => session.limit_hit(minutes)?,
        steps::How::Crash(signal) => {
            // A crash is this invocation's end: the next call does the next `when`.
            count.finished(&counter)?;
            let _ = std::io::stdout().flush();
            if let Ok(sig) = nix::sys::signal::Signal::try_from(signal) {
                let _ = nix::sys::signal::raise(sig);
            }
            return Ok(128u8.wrapping_add(signal as u8));
        }
    }
    // Counted once finished: an invocation interrupted (Ctrl-C, a pause, a timeout) is done again
    // by the next one, so a resumed `kit loop --agent fake:finish` still does the work.
    count.finished(&counter)?;
    Ok(ending.code)
}

/// `--list`: each embedded scenario and its description.
fn list() -> Result<()> {
    let mut out = std::io::stdout().lock();
    for name in scenario::names() {
        let (s, _) = Scenario::load(&name)?;
        writeln!(out, "{name:<8} {}", s.description).map_err(|e| Error::io("stdout", e))?;
    }
    Ok(())
}

/// Where the number of finished invocations of `scenario` is kept: `<git dir>/fake-agent-<scenario>.count`
/// (`<cwd>/.fake-agent-<scenario>.count` outside a repository).
fn counter_file(scenario: &str, git_dir: Option<&Path>, cwd: &Path) -> PathBuf {
    match git_dir {
        Some(g) => g.join(format!("fake-agent-{scenario}.count")),
        None => cwd.join(format!(".fake-agent-{scenario}.count")),
    }
}

/// What the counter file remembers: `TOTAL KEY FIRST` on one line — the invocations of the
/// scenario that finished here (all runs), the run they belong to (`KIT_RUN_KEY`, which the loop
/// gives its agent; `-` outside a loop), and `TOTAL` when that run's first invocation started.
/// An older kit's file holds `TOTAL` alone (run `-`, first 0).
#[derive(Clone, Debug, PartialEq)]
struct Count {
    total: u64,
    key: String,
    first: u64,
}

impl Count {
    /// The counter of `counter` as this invocation sees it: a run other than the file's starts
    /// counting afresh (its first invocation is 1), so what one loop run remembers (a cheat
    /// already tried) never leaks into another run or into a check's copy of the lab.
    fn read(counter: &Path) -> Result<Count> {
        let key = std::env::var("KIT_RUN_KEY")
            .ok()
            .filter(|k| !k.is_empty() && !k.contains(char::is_whitespace))
            .unwrap_or_else(|| "-".into());
        let text = match std::fs::read_to_string(counter) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(Error::io(counter, e)),
        };
        Ok(Count::parse(&text, key))
    }

    fn parse(text: &str, key: String) -> Count {
        let mut w = text.split_whitespace();
        let total = w.next().and_then(|t| t.parse::<u64>().ok()).unwrap_or(0);
        let file_key = w.next().unwrap_or("-");
        let first = w.next().and_then(|t| t.parse::<u64>().ok()).unwrap_or(0).min(total);
        if file_key == key {
            Count { total, key, first }
        } else {
            Count { total, key, first: total }
        }
    }

    /// This invocation's number: `KIT_FAKE_INVOCATION` if set (tests), else one more than the
    /// invocations of this run that finished here. Never `KIT_ITERATION`: a loop resumed after
    /// a pause starts at iteration 2 although the agent never finished its first call.
    fn invocation(&self) -> Result<u64> {
        if let Ok(v) = std::env::var("KIT_FAKE_INVOCATION") {
            return v.trim().parse::<u64>().ok().filter(|n| *n >= 1).ok_or_else(|| {
                Error::usage(format!(
                    "KIT_FAKE_INVOCATION={v:?} is not an invocation number (1, 2, …)"
                ))
            });
        }
        Ok(self.total - self.first + 1)
    }

    /// Record this invocation as finished (atomically).
    fn finished(&self, counter: &Path) -> Result<()> {
        let line = format!("{} {} {}\n", self.total + 1, self.key, self.first);
        crate::atomic::write_atomic(counter, line.as_bytes())
    }
}

/// `cwd` relative to `$HOME` (`../x` when beside it), else `cwd` itself: stable for a golden
/// (its HOME and its project share the sandbox), distinct for every project of a user.
fn place_of(cwd: &Path, home: &Path) -> String {
    let (mut h, mut c) = (home.components().peekable(), cwd.components().peekable());
    if home.as_os_str().is_empty() || h.peek() != c.peek() {
        return cwd.to_string_lossy().into_owned();
    }
    while h.peek().is_some() && h.peek() == c.peek() {
        h.next();
        c.next();
    }
    let mut rel = PathBuf::new();
    for _ in h {
        rel.push("..");
    }
    rel.extend(c);
    rel.to_string_lossy().into_owned()
}

/// The `.git` folder of the repository holding `cwd` (following a worktree's `gitdir:` file).
fn find_git_dir(cwd: &Path) -> Option<PathBuf> {
    for dir in cwd.ancestors() {
        let dot = dir.join(".git");
        if dot.is_dir() {
            return Some(dot);
        }
        if dot.is_file() {
            let text = std::fs::read_to_string(&dot).at(&dot).ok()?;
            let target = text.trim().strip_prefix("gitdir:")?.trim();
            return Some(dir.join(target));
        }
    }
    None
}

/// The current branch from `HEAD` (`""` when detached or unreadable).
fn branch_of(git_dir: &Path) -> String {
    std::fs::read_to_string(git_dir.join("HEAD"))
        .ok()
        .and_then(|h| h.trim().strip_prefix("ref: refs/heads/").map(str::to_string))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The counter belongs to one run: another run (or a loop after calls by hand) starts at
    /// invocation 1, while the total keeps growing, so session ids never repeat.
    #[test]
    fn the_invocation_count_belongs_to_one_run() {
        let k = |s: &str| s.to_string();
        let cases: &[(&str, &str, u64, u64)] = &[
            // (file, this run's key, invocation, total before)
            ("", "-", 1, 0),
            ("2\n", "-", 3, 2),
            ("2\n", "abc", 1, 2),
            ("5 abc 3\n", "abc", 3, 5),
            ("5 abc 3\n", "def", 1, 5),
            ("5 abc 3\n", "-", 1, 5),
            ("garbage", "abc", 1, 0),
            ("5 abc 9\n", "abc", 1, 5),
        ];
        for (file, key, inv, total) in cases {
            let c = Count::parse(file, k(key));
            assert_eq!((c.invocation().unwrap(), c.total), (*inv, *total), "{file:?} {key}");
        }
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("c");
        let c = Count::parse("", k("abc"));
        c.finished(&f).unwrap();
        let again = Count::parse(&std::fs::read_to_string(&f).unwrap(), k("abc"));
        assert_eq!(again.invocation().unwrap(), 2);
    }

    #[test]
    fn the_place_is_the_folder_relative_to_home() {
        let home = Path::new("/s/.home");
        assert_eq!(place_of(Path::new("/s/.home/p/q"), home), "p/q");
        assert_eq!(place_of(Path::new("/s/project"), home), "../project");
        assert_eq!(place_of(Path::new("/other/x"), Path::new("")), "/other/x");
        assert_ne!(place_of(Path::new("/s/a"), home), place_of(Path::new("/s/b"), home));
    }
}
