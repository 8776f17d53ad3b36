//! One agent iteration as an operating-system matter: which program runs, in its own process
//! group, under the timeout and the memory cap, with its output in `longrun/.runs/NNN.log`, and
//! what it reported spending.
//!
//! Agents (DESIGN §6), from `config.toml` `agent.command` or `kit loop --agent`:
//!
//! | spec | argv | usage read from |
//! |---|---|---|
//! | `claude` | `claude -p --output-format stream-json --verbose --permission-mode acceptEdits --allowedTools … --setting-sources project,local` (see [`AgentSpec::argv_with`]) | the `result` event |
//! | `codex` | `codex exec --json --sandbox workspace-write -` | the last `turn.completed` event; the model from `-m` or the rollout ([`codex_model`]) |
//! | `fake:SCENARIO` | `fake-agent --scenario SCENARIO -p --output-format stream-json --verbose` | the `result` event |
//! | `fake-codex:SCENARIO` | `fake-agent --codex --scenario SCENARIO exec --json -` (the same steps as Codex prints them) | as `codex`: the last `turn.completed`; the model from the rollout it writes under `$CODEX_HOME` |
//! | anything else | `sh -c SPEC` | whichever of the two it prints; a plain command reports none |
//!
//! Every agent runs in the repository root with the prompt on stdin (the prompt file itself, so
//! no pipe can stall) and the environment `KIT_PROMPT_FILE` (its path), `KIT_ITERATION` (1-based)
//! and `KIT_ROOT` (the repository root). stdout and stderr both go to the iteration's log. While
//! a Claude stream runs, kit reads its `system/init` from the log and remembers the model it
//! names (with the window suffix) for the hook's compaction point.
//!
//! Ending an iteration: at the timeout, SIGTERM to the process group, then after the grace
//! period SIGKILL; at the memory cap (watchdog), SIGKILL at once. When the agent's main process
//! has exited, whatever is left of its tree — the group, and anything that left the group but,
//! kit being a child subreaper, was re-parented to kit — is SIGKILLed and reaped.
//!
//! Usage sources: the format reference `formats/claude-code.md` §7 (the `result` object: `usage` with
//! `input_tokens`, `cache_creation_input_tokens`, `cache_read_input_tokens`, `output_tokens`;
//! `total_cost_usd`; `modelUsage` per model) and the format reference `formats/codex.md` §14.2
//! (`turn.completed.usage` with `input_tokens` ⊇ `cached_input_tokens`, `output_tokens`; the
//! thread's cumulative total, so the last one counts).
//!
//! Permissions (real-clis.md §2): `claude -p` denies Bash and Write in its default mode and
//! `codex exec` runs read-only, so kit starts them as [`AgentSetup`] says — from config.toml
//! `[agent]` (`permissions`, `allowed_tools`, `setting_sources`, `sandbox`, `model`) and the
//! goal's criteria ([`tool_patterns`]). What Claude Code still denied is read back with
//! [`read_denials`]; what Codex reported as errors with [`codex_errors`].

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use serde::Serialize;
use serde_json::Value;

use super::memcap::{Enforcer, Watchdog};
use super::procs;
use crate::error::{Error, IoContext, Result};
use crate::prices::{Lookup, PriceTable, Usage};

/// Which agent runs, parsed from its spec string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AgentSpec {
    /// Claude Code in headless mode.
    Claude,
    /// Codex `exec`.
    Codex,
    /// kit's scripted fake agent with this scenario.
    Fake(String),
    /// kit's fake agent with this scenario, as `codex exec --json` (`fake-agent --codex`).
    FakeCodex(String),
    /// Any command line, run through `sh -c`.
    Shell(String),
}

/// The structured output an agent prints, which decides how usage is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    /// Claude Code `--output-format stream-json` (also the fake agent).
    ClaudeStreamJson,
    /// Codex `exec --json`.
    CodexJson,
    /// A command line: it may print either (e.g. a wrapper around `claude -p
    /// --output-format stream-json`); whichever usage event appears is read, else none.
    Detect,
}

impl AgentSpec {
    /// Parse a spec: `claude`, `codex`, `fake:SCENARIO`, `fake-codex:SCENARIO`, or a command
    /// line.
    ///
    /// Errors: [`Error::Usage`] for an empty spec or `fake:` / `fake-codex:` without a scenario.
    pub fn parse(spec: &str) -> Result<AgentSpec> {
        let s = spec.trim();
        match s {
            "" => Err(Error::usage("the agent command is empty").with_hint(
                "kit loop --agent claude (or set [agent] command in longrun/config.toml)",
            )),
            "claude" => Ok(AgentSpec::Claude),
            "codex" => Ok(AgentSpec::Codex),
            _ if s.starts_with("fake-codex:") => match &s["fake-codex:".len()..] {
                "" => Err(Error::usage("`fake-codex:` needs a scenario name")
                    .with_hint("kit loop --agent fake-codex:finish")),
                scenario => Ok(AgentSpec::FakeCodex(scenario.to_string())),
            },
            _ => match s.strip_prefix("fake:") {
                Some("") => Err(Error::usage("`fake:` needs a scenario name")
                    .with_hint("kit loop --agent fake:finish")),
                Some(scenario) => Ok(AgentSpec::Fake(scenario.to_string())),
                None => Ok(AgentSpec::Shell(s.to_string())),
            },
        }
    }

    /// How this agent reports usage.
    pub fn format(&self) -> OutputFormat {
        match self {
            AgentSpec::Claude | AgentSpec::Fake(_) => OutputFormat::ClaudeStreamJson,
            AgentSpec::Codex | AgentSpec::FakeCodex(_) => OutputFormat::CodexJson,
            AgentSpec::Shell(_) => OutputFormat::Detect,
        }
    }

    /// Codex or the fake agent as Codex: read as Codex (its stream, rollout, errors).
    pub fn is_codex(&self) -> bool {
        matches!(self, AgentSpec::Codex | AgentSpec::FakeCodex(_))
    }

    /// The argv that runs this agent with the default set-up (see [`AgentSetup::default`]).
    pub fn argv(&self) -> Vec<String> {
        self.argv_with(&AgentSetup::default())
    }

    /// The argv that runs this agent as `setup` says (before any memory-cap wrapper):
    ///
    /// | spec | argv |
    /// |---|---|
    /// | `claude`, allowlist | `claude -p --output-format stream-json --verbose --permission-mode acceptEdits --allowedTools P… [--setting-sources S] [--model M]` |
    /// | `claude`, skip | `claude -p --output-format stream-json --verbose --dangerously-skip-permissions [--setting-sources S] [--model M]` |
    /// | `codex` | `codex exec --json --sandbox SANDBOX [-m M] -` |
    ///
    /// The fake agent and a command line take no set-up.
    pub fn argv_with(&self, setup: &AgentSetup) -> Vec<String> {
        let v = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        match self {
            AgentSpec::Claude => {
                let mut a = v(&["claude", "-p", "--output-format", "stream-json", "--verbose"]);
                if setup.skip_permissions {
                    a.push("--dangerously-skip-permissions".into());
                } else {
                    a.extend(v(&["--permission-mode", "acceptEdits"]));
                    if !setup.allowed_tools.is_empty() {
                        a.push("--allowedTools".into());
                        a.extend(setup.allowed_tools.iter().cloned());
                    }
                }
                if !setup.setting_sources.is_empty() {
                    a.extend(["--setting-sources".into(), setup.setting_sources.clone()]);
                }
                if !setup.model.is_empty() {
                    a.extend(["--model".into(), setup.model.clone()]);
                }
                a
            }
            AgentSpec::Codex => {
                let mut a = v(&["codex", "exec", "--json", "--sandbox", &setup.sandbox]);
                if !setup.model.is_empty() {
                    a.extend(["-m".into(), setup.model.clone()]);
                }
                a.push("-".into());
                a
            }
            AgentSpec::Fake(scenario) => {
                let mut a = fake_agent_argv();
                a.extend(v(&[
                    "--scenario",
                    scenario,
                    "-p",
                    "--output-format",
                    "stream-json",
                    "--verbose",
                ]));
                a
            }
            AgentSpec::FakeCodex(scenario) => {
                let mut a = fake_agent_argv();
                a.extend(v(&["--codex", "--scenario", scenario, "exec", "--json", "-"]));
                a
            }
            AgentSpec::Shell(cmd) => vec!["sh".into(), "-c".into(), cmd.clone()],
        }
    }

    /// Environment kit adds for this agent: `IS_SANDBOX=1` for Claude Code with
    /// `permissions = "skip"` when kit runs as root (Claude Code refuses
    /// `--dangerously-skip-permissions` as root otherwise; real-clis.md §1).
    pub fn env_with(&self, setup: &AgentSetup) -> Vec<(String, String)> {
        match self {
            AgentSpec::Claude if setup.skip_permissions && nix::unistd::geteuid().is_root() => {
                vec![("IS_SANDBOX".into(), "1".into())]
            }
            _ => Vec::new(),
        }
    }
}

/// How kit starts Claude Code or Codex, from `config.toml` `[agent]` and the goal's criteria.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentSetup {
    /// `permissions = "skip"`: `--dangerously-skip-permissions` instead of the allowlist.
    pub skip_permissions: bool,
    /// Every `--allowedTools` pattern: kit's own ([`BASE_TOOLS`]), those derived from the
    /// criteria's commands ([`tool_patterns`]), then `allowed_tools` from config.toml.
    pub allowed_tools: Vec<String>,
    /// `--setting-sources`; empty: no flag.
    pub setting_sources: String,
    /// Codex `--sandbox`.
    pub sandbox: String,
    /// `--model`/`-m`; empty: the CLI's default.
    pub model: String,
}

/// The patterns every Claude Code iteration is allowed besides edits: git's read commands (the
/// agent looks at its history and its diff) and `kit handoff save` (the hook asks for it).
pub const BASE_TOOLS: &[&str] = &[
    "Bash(git status:*)",
    "Bash(git diff:*)",
    "Bash(git log:*)",
    "Bash(git show:*)",
    "Bash(kit handoff save:*)",
];

/// The config.toml setting that widens what Claude Code may run.
pub const ALLOW_SETTING: &str = "[agent] allowed_tools in longrun/config.toml";

impl Default for AgentSetup {
    fn default() -> Self {
        AgentSetup::new(&crate::longrun::config::AgentConfig::default(), &[])
    }
}

impl AgentSetup {
    /// The set-up for `cfg` and the goal's criteria commands `criteria` (shell command lines).
    pub fn new(cfg: &crate::longrun::config::AgentConfig, criteria: &[&str]) -> AgentSetup {
        let mut tools: Vec<String> = BASE_TOOLS.iter().map(|s| s.to_string()).collect();
        for c in criteria {
            tools.extend(tool_patterns(c));
        }
        tools.extend(cfg.allowed_tools.iter().map(|t| t.trim().to_string()));
        let mut seen = std::collections::HashSet::new();
        tools.retain(|t| seen.insert(t.clone()));
        AgentSetup {
            skip_permissions: cfg.permissions == "skip",
            allowed_tools: tools,
            setting_sources: cfg.setting_sources.trim().to_string(),
            sandbox: cfg.sandbox.clone(),
            model: cfg.model.trim().to_string(),
        }
    }

    /// One line saying what `spec` will be allowed to do, for `kit loop` and `kit doctor`;
    /// None for the fake agent and command lines (kit does not set them up).
    pub fn describe(&self, spec: &AgentSpec) -> Option<String> {
        match spec {
            AgentSpec::Claude if self.skip_permissions => Some(format!(
                "Claude Code may do anything (permissions = \"skip\": --dangerously-skip-permissions{}); \
                 to allow only edits and listed commands, remove permissions from [agent] in longrun/config.toml",
                if nix::unistd::geteuid().is_root() { ", IS_SANDBOX=1 as kit runs as root" } else { "" }
            )),
            AgentSpec::Claude => Some(format!(
                "Claude Code may edit files in the repository (acceptEdits) and run {}{}; \
                 anything else is denied: widen it with {ALLOW_SETTING}",
                self.allowed_tools.join(", "),
                match self.setting_sources.as_str() {
                    "" => "; all of Claude Code's settings are read".to_string(),
                    s => format!("; settings read: {s} (setting_sources)"),
                }
            )),
            AgentSpec::Codex => Some(format!(
                "Codex runs with --sandbox {}{}; change it with [agent] sandbox in longrun/config.toml",
                self.sandbox,
                match self.sandbox.as_str() {
                    "workspace-write" => " (it may write in the repository, not elsewhere)",
                    "read-only" => " (it cannot write anything: no work gets done)",
                    _ => " (no sandbox at all)",
                }
            )),
            _ => None,
        }
    }
}

/// The `--allowedTools` patterns that let Claude Code run a criterion's command line: one
/// `Bash(PREFIX:*)` per simple command in it (split at `&&`, `||`, `;`, `|`; `cd` and leading
/// `VAR=value` skipped). PREFIX is the program, with `-m MODULE` for an interpreter
/// (`python3 -m unittest …` → `Bash(python3 -m unittest:*)`) or a subcommand word for a tool
/// (`cargo test --lib` → `Bash(cargo test:*)`, `make check` → `Bash(make check:*)`), or the
/// script it runs (`python3 t.py` → `Bash(python3 t.py:*)`, `./run.sh -q` → `Bash(./run.sh:*)`).
pub fn tool_patterns(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    let normalized = command.replace("&&", ";").replace("||", ";").replace('|', ";");
    for part in normalized.split([';', '\n']) {
        if let Some(p) = command_prefix(part) {
            let pat = format!("Bash({p}:*)");
            if !out.contains(&pat) {
                out.push(pat);
            }
        }
    }
    out
}

/// The prefix of one simple command that [`tool_patterns`] allows; None for `cd` or nothing.
fn command_prefix(part: &str) -> Option<String> {
    let words: Vec<String> = shlex::split(part.trim())
        .unwrap_or_else(|| part.split_whitespace().map(str::to_string).collect());
    let mut it = words
        .iter()
        .skip_while(|w| w.contains('=') && !w.starts_with('-') && !w.starts_with('='))
        .peekable();
    let prog = it.next()?;
    if ["cd", "true", ":", "exit"].contains(&prog.as_str()) {
        return None;
    }
    let rest: Vec<&String> = it.collect();
    let interpreter = ["python", "python3", "node", "ruby", "perl", "bash", "sh", "uv", "deno"]
        .contains(&prog.as_str())
        || prog.starts_with("python3.");
    let mut prefix = vec![prog.clone()];
    match rest.first() {
        Some(m) if interpreter && m.as_str() == "-m" => {
            prefix.push("-m".into());
            prefix.extend(rest.get(1).map(|s| s.to_string()));
        }
        Some(arg) if interpreter && !arg.starts_with('-') => prefix.push(arg.to_string()),
        Some(sub)
            if !interpreter
                && !sub.starts_with('-')
                && sub.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') =>
        {
            prefix.push(sub.to_string())
        }
        _ => {}
    }
    Some(prefix.join(" "))
}

impl AgentSpec {
    /// Check that the agent can be started: `claude`, `codex` and `fake-agent` must be found
    /// (`sh` for a command line always is), and a fake agent's scenario must exist — an embedded
    /// one by name, or a scenario file (a name with a `/` or ending in `.toml`, relative to the
    /// repository `root`, where the agent runs).
    ///
    /// Errors: [`Error::Usage`] naming the program or the scenario (with the embedded scenario
    /// names) and the next step (exit 2, before anything ran).
    pub fn check_installed(&self, root: &Path) -> Result<()> {
        if let AgentSpec::Fake(scenario) | AgentSpec::FakeCodex(scenario) = self {
            check_scenario(scenario, root)?;
        }
        let argv = self.argv();
        // A command line runs through `sh -c`: check the program its first word names, when
        // that word is a plain program name or path (not a builtin, keyword or assignment).
        let name = match self {
            AgentSpec::Shell(cmd) => match shell_program(cmd) {
                Some(word) => word.to_string(),
                None => return Ok(()),
            },
            _ => argv[0].clone(),
        };
        let program = Path::new(&name);
        let found = if program.components().count() > 1 {
            root.join(program).is_file()
        } else {
            crate::proc::find_on_path(&name).is_some()
        };
        if found {
            return Ok(());
        }
        let at = if program.components().count() > 1 { "not found" } else { "not on PATH" };
        Err(Error::usage(format!("the agent program `{name}` is not installed ({at})"))
            .with_hint(AGENT_NOT_FOUND_HINT))
    }
}

/// The program a shell command line starts with, when its first word is a plain program name
/// or path: `python3 agent.py` → `python3`, `./run.sh` → `./run.sh`; `None` for a builtin or
/// keyword (`cd`, `exec`, `if` …), an assignment (`A=1 cmd`) or anything with shell syntax.
fn shell_program(cmd: &str) -> Option<&str> {
    const BUILTINS: &[&str] = &[
        "cd", "exec", "exit", "true", "false", ":", ".", "source", "echo", "printf", "test", "[",
        "set", "export", "eval", "if", "for", "while", "until", "case", "!", "{", "(", "env",
        "command", "time", "nohup", "trap", "wait", "read", "umask", "ulimit", "unset",
    ];
    let word = cmd.split_whitespace().next()?;
    let plain = word.chars().all(|c| c.is_ascii_alphanumeric() || "._/+-".contains(c));
    (plain && !BUILTINS.contains(&word)).then_some(word)
}

/// A fake agent's scenario exists: embedded (`fake-agent/scenarios/NAME.toml`) or, for a name
/// the fake agent reads as a file, that file under `root`.
fn check_scenario(scenario: &str, root: &Path) -> Result<()> {
    if scenario.ends_with(".toml") || scenario.contains('/') {
        let path = root.join(scenario);
        if path.is_file() {
            return Ok(());
        }
        return Err(Error::usage(format!(
            "the fake-agent scenario file `{}` does not exist",
            path.display()
        ))
        .with_hint(FAKE_SCENARIO_HINT));
    }
    let names = crate::embedded::scenario_names();
    if names.iter().any(|n| n == scenario) {
        return Ok(());
    }
    Err(Error::usage(format!(
        "no fake-agent scenario `{scenario}`; the scenarios are: {}",
        names.join(", ")
    ))
    .with_hint(FAKE_SCENARIO_HINT))
}

/// The `fake-agent` binary beside the running `kit`, if one was built there.
pub fn fake_agent_beside() -> Option<PathBuf> {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|d| d.join("fake-agent")))
        .filter(|p| p.is_file())
}

/// The argv that starts the fake agent: the `fake-agent` binary beside the running `kit`, else
/// the running `kit` itself as `kit fake-agent` (the same code, built in), so the `kit` binary
/// alone runs `agent = "fake:NAME"`.
pub fn fake_agent_argv() -> Vec<String> {
    let s = |p: &Path| p.to_string_lossy().into_owned();
    if let Some(p) = fake_agent_beside() {
        return vec![s(&p)];
    }
    match std::env::current_exe() {
        Ok(exe) => vec![s(&exe), "fake-agent".into()],
        Err(_) => vec!["fake-agent".into()],
    }
}

/// What one iteration's agent run needs.
#[derive(Clone, Debug)]
pub struct Launch<'a> {
    /// The agent.
    pub spec: &'a AgentSpec,
    /// How Claude Code or Codex is started (permissions, sandbox, model).
    pub setup: &'a AgentSetup,
    /// Repository root: working directory, `KIT_ROOT`.
    pub root: &'a Path,
    /// The prompt file: stdin and `KIT_PROMPT_FILE`.
    pub prompt_file: &'a Path,
    /// 1-based iteration number: `KIT_ITERATION`.
    pub iteration: u64,
    /// Where stdout and stderr go.
    pub log: &'a Path,
    /// Time until SIGTERM to the group.
    pub timeout: Duration,
    /// Time between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// Memory cap in bytes of the agent's tree.
    pub memory_max: u64,
    /// Who enforces the memory cap.
    pub enforcer: Enforcer,
    /// Asked to stop by hand (SIGINT/SIGTERM/SIGHUP to kit): ended like a timeout.
    pub stop: Option<&'a super::signals::Stop>,
    /// `longrun/PAUSE`, read every [`PAUSE_POLL`] while the agent runs: a `kit pause --now`
    /// record there stops the agent at once (ended like a timeout).
    pub pause_file: Option<&'a Path>,
    /// The `longrun/` folder where the model a Claude stream's `system/init` names (with its
    /// window suffix, `claude-opus-4-8[1m]`) is remembered for the hook, while the agent runs
    /// ([`InitWatch`]). None: not remembered.
    pub longrun: Option<&'a Path>,
}

/// How often a running agent's loop looks for `kit pause --now`.
pub const PAUSE_POLL: Duration = Duration::from_millis(200);

/// The process just started: journaled before kit waits on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Started {
    /// The agent's main process.
    pub pid: i32,
    /// Its process group (the same number: it leads its own group).
    pub pgid: i32,
    /// Its start time, clock ticks since boot (to recognise the group after a crash).
    pub starttime: u64,
    /// The argv actually run, joined by spaces.
    pub command: String,
}

/// How one agent run ended.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Ended {
    /// Exit status of the main process, if it exited.
    pub exit: Option<i32>,
    /// Signal that ended it, if one did.
    pub signal: Option<i32>,
    /// Ended by the iteration timeout.
    pub timed_out: bool,
    /// Ended because kit was asked to stop (SIGINT, SIGTERM, SIGHUP).
    pub interrupted: bool,
    /// Ended because `kit pause --now` asked for it.
    pub paused: bool,
    /// Ended by the memory cap (the watchdog fired, or SIGKILL under a systemd scope that kit
    /// did not send).
    pub memory_killed: bool,
    /// Highest resident memory of the tree the watchdog saw, bytes (0 when not sampled).
    pub peak_rss_bytes: u64,
    /// Leftover processes of its tree that kit killed after the main process ended.
    pub leftovers_killed: Vec<i32>,
    /// Wall time of the run, ms.
    pub duration_ms: u64,
    /// The agent deleted or replaced its log; kit wrote it again from its open handle.
    pub log_recovered: bool,
}

/// Start the agent, call `on_start` (which journals `agent_start`) before waiting, supervise it
/// to its end and clean up its tree.
///
/// Errors: [`Error::Internal`] when the agent cannot be started (program not found) or its tree
/// cannot be ended; an error from `on_start` is returned after the agent's tree was killed.
pub fn run(l: &Launch<'_>, on_start: &mut dyn FnMut(&Started) -> Result<()>) -> Result<Ended> {
    let argv = l.enforcer.wrap(l.spec.argv_with(l.setup), l.memory_max);
    // Read as well as written: kit reads it back through `kept` if the agent deletes it.
    let log = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(l.log)
        .at(l.log)?;
    let log2 = log.try_clone().at(l.log)?;
    // kit's own handle on the log: the output survives the agent deleting the file.
    let kept = log.try_clone().at(l.log)?;
    let stdin = File::open(l.prompt_file).at(l.prompt_file)?;
    let started_at = Instant::now();
    let mut cmd = Command::new(&argv[0]);
    super::signals::unblock_in_child(&mut cmd);
    let mut child = cmd
        .args(&argv[1..])
        .current_dir(l.root)
        .env("KIT_PROMPT_FILE", l.prompt_file)
        .env("KIT_ITERATION", l.iteration.to_string())
        .env("KIT_ROOT", l.root)
        .envs(l.spec.env_with(l.setup))
        .stdin(Stdio::from(stdin))
        .stdout(Stdio::from(log))
        .stderr(Stdio::from(log2))
        .process_group(0)
        .spawn()
        .map_err(|e| {
            Error::internal(format!("cannot start the agent `{}`: {e}", argv.join(" ")))
                .with_hint(AGENT_NOT_FOUND_HINT)
        })?;
    let pid = child.id() as i32;
    let me = std::process::id() as i32;
    let started = Started {
        pid,
        pgid: pid,
        starttime: procs::get(pid).map_or(0, |p| p.starttime),
        command: argv.join(" "),
    };
    if let Err(e) = on_start(&started) {
        let _ = procs::end_tree(me, pid, Duration::from_secs(5));
        let _ = child.wait();
        return Err(e);
    }

    let mut ended = Ended::default();
    let mut watchdog =
        (l.enforcer == Enforcer::Watchdog).then(|| Watchdog::new(me, pid, l.memory_max));
    let mut term_at: Option<Instant> = None;
    let mut kill_sent = false;
    let mut pause_checked = Instant::now();
    let mut init = l
        .longrun
        .filter(|_| l.spec.format() != OutputFormat::CodexJson)
        .map(|dir| InitWatch { longrun: dir, read: 0, partial: Vec::new() });
    let status = loop {
        if init.as_mut().is_some_and(|w| w.poll(&kept)) {
            init = None;
        }
        if let Some(st) =
            child.try_wait().map_err(|e| Error::internal(format!("waiting for the agent: {e}")))?
        {
            break st;
        }
        if let Some(w) = watchdog.as_mut() {
            if w.tick().is_some() {
                ended.memory_killed = true;
                kill_sent = true;
            }
        }
        if let Some((stop, sig)) = l.stop.and_then(|s| Some((s, s.requested()?))) {
            if !ended.interrupted {
                ended.interrupted = true;
                notify(&format!(
                    "loop: {sig} received: stopping the agent (process group {pid}): SIGTERM now, \
                     SIGKILL in {} unless it exits; press Ctrl-C again to kill it at once",
                    crate::duration::format_duration(l.grace)
                ));
                if term_at.is_none() {
                    procs::signal_tree(me, pid, Signal::SIGTERM);
                    term_at = Some(Instant::now());
                }
            } else if !kill_sent && stop.times() >= 2 {
                notify(&format!("loop: {sig} again: killing the agent's process group {pid} now"));
                procs::signal_tree(me, pid, Signal::SIGKILL);
                kill_sent = true;
            }
        }
        if let Some(pause_file) = l.pause_file.filter(|_| !ended.paused) {
            if pause_checked.elapsed() >= PAUSE_POLL {
                pause_checked = Instant::now();
                if super::pause::read_at(pause_file).is_some_and(|p| p.now()) {
                    ended.paused = true;
                    notify(&format!(
                        "loop: kit pause --now: stopping the agent (process group {pid}): SIGTERM \
                         now, SIGKILL in {} unless it exits",
                        crate::duration::format_duration(l.grace)
                    ));
                    if term_at.is_none() {
                        procs::signal_tree(me, pid, Signal::SIGTERM);
                        term_at = Some(Instant::now());
                    }
                }
            }
        }
        let elapsed = started_at.elapsed();
        match term_at {
            None if elapsed >= l.timeout => {
                ended.timed_out = true;
                procs::signal_tree(me, pid, Signal::SIGTERM);
                term_at = Some(Instant::now());
            }
            Some(t) if !kill_sent && t.elapsed() >= l.grace => {
                procs::signal_tree(me, pid, Signal::SIGKILL);
                kill_sent = true;
            }
            _ => {}
        }
        std::thread::sleep(Duration::from_millis(25));
    };
    ended.exit = status.code();
    ended.signal = status.signal();
    if l.enforcer == Enforcer::SystemdRun
        && ended.signal == Some(Signal::SIGKILL as i32)
        && !kill_sent
    {
        ended.memory_killed = true;
    }
    ended.peak_rss_bytes = watchdog.map_or(0, |w| w.peak);
    match procs::end_tree(me, pid, Duration::from_secs(10)) {
        Ok(killed) => ended.leftovers_killed = killed,
        Err(alive) => {
            return Err(Error::internal(format!(
                "the agent's processes {alive:?} survived SIGKILL for 10s; the tree is not safe to check"
            )))
        }
    }
    ended.duration_ms = started_at.elapsed().as_millis() as u64;
    ended.log_recovered = keep_log(l.log, &kept)?;
    Ok(ended)
}

/// Reads a Claude stream's log while the agent runs, until its `system/init` event: the model
/// there carries the window suffix (`claude-opus-4-8[1m]`) that transcript lines lack, and
/// SessionStart stdin names it only after a compaction (real-clis.md §3, §5). It is remembered
/// for the session ([`crate::hook::state::remember_model`]) so that the hook resolves the
/// compaction point for that window. `system/init` is the stream's first event, printed before
/// the first API call, so a watch polled with the process is done before any tool hook runs.
struct InitWatch<'a> {
    longrun: &'a Path,
    /// Bytes of the log read so far.
    read: u64,
    /// The bytes of a line not yet ended.
    partial: Vec<u8>,
}

impl InitWatch<'_> {
    /// Read no further than this for `system/init` (it is the first line of a stream).
    const LIMIT: u64 = 1 << 20;

    /// Read what the agent added to `log`; true when the watch is over: `system/init` was
    /// read (and remembered), or [`Self::LIMIT`] bytes came without one.
    fn poll(&mut self, log: &File) -> bool {
        use std::os::unix::fs::FileExt;
        let mut buf = [0u8; 16 * 1024];
        loop {
            let n = match log.read_at(&mut buf, self.read) {
                Ok(0) | Err(_) => return self.read >= Self::LIMIT,
                Ok(n) => n,
            };
            self.read += n as u64;
            self.partial.extend_from_slice(&buf[..n]);
            while let Some(end) = self.partial.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.partial.drain(..=end).collect();
                if self.remember(&line) {
                    return true;
                }
            }
            if self.read >= Self::LIMIT {
                return true;
            }
        }
    }

    /// Remember the model of an `init` line; true when `line` was one.
    fn remember(&self, line: &[u8]) -> bool {
        let Ok(v) = serde_json::from_slice::<Value>(line) else { return false };
        let field = |k: &str| v.get(k).and_then(Value::as_str);
        if field("type") != Some("system") || field("subtype") != Some("init") {
            return false;
        }
        if let (Some(session), Some(model)) = (field("session_id"), field("model")) {
            if !session.trim().is_empty() && !model.trim().is_empty() {
                if let Err(e) = crate::hook::state::remember_model(self.longrun, session, model) {
                    notify(&format!("loop: cannot remember the model {model} for the hook: {e}"));
                }
            }
        }
        true
    }
}

/// Say at once, on stderr, what a stop request is doing (the loop's own lines go to stdout and
/// may be redirected to a file; the person who pressed Ctrl-C reads the terminal). A failed write
/// is ignored: the stop goes on.
fn notify(line: &str) {
    use std::io::Write;
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{line}");
}

/// Put the iteration's log back when the agent deleted or replaced it (`git clean -fdx`,
/// `rm -rf longrun`): kit held it open from before the agent started, so the whole output is
/// read back through kit's handle and written again at `path` (its folder recreated). Returns
/// whether it had to.
///
/// Errors: [`Error::Io`] when the log cannot be read back or written.
fn keep_log(path: &Path, kept: &File) -> Result<bool> {
    use std::io::{Read, Seek, SeekFrom};
    use std::os::unix::fs::MetadataExt;
    let ours = kept.metadata().at(path)?;
    let same = std::fs::symlink_metadata(path)
        .is_ok_and(|m| m.dev() == ours.dev() && m.ino() == ours.ino());
    if same {
        return Ok(false);
    }
    let mut bytes = Vec::new();
    let mut f = kept;
    f.seek(SeekFrom::Start(0)).at(path)?;
    f.read_to_end(&mut bytes).at(path)?;
    if let Some(dir) = path.parent() {
        crate::atomic::create_dir_all(dir)?;
    }
    crate::atomic::write_atomic(path, &bytes)?;
    Ok(true)
}

/// Tokens and cost an agent reported for one iteration.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct AgentUsage {
    /// The model that did most of the work (from `system`/`init`, else the first `modelUsage` key).
    pub model: Option<String>,
    /// Uncached input tokens.
    pub input_tokens: u64,
    /// Cache write tokens (5-minute TTL).
    pub cache_write_5m_tokens: u64,
    /// Cache write tokens (1-hour TTL).
    pub cache_write_1h_tokens: u64,
    /// Cache read tokens.
    pub cache_read_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// The agent's own cost estimate (`total_cost_usd`), USD.
    pub reported_cost_usd: Option<f64>,
    /// Per-model usage from `modelUsage` (subagents and compaction included), when present.
    #[serde(skip)]
    pub per_model: Vec<(String, Usage)>,
}

impl AgentUsage {
    fn usage(&self) -> Usage {
        Usage {
            input: self.input_tokens,
            cache_write_5m: self.cache_write_5m_tokens,
            cache_write_1h: self.cache_write_1h_tokens,
            cache_read: self.cache_read_tokens,
            output: self.output_tokens,
        }
    }
}

/// The cost of an iteration, USD, and the models the price table does not know.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Priced {
    /// USD: from the price table when every model is priced, else the agent's reported
    /// `total_cost_usd` (0 when it reported none).
    pub cost_usd: f64,
    /// Models missing from the price table (journaled as `unpriced`).
    pub unpriced: Vec<String>,
}

/// Price `u` with `table`. The result's usage is a sum over the iteration's API calls, so the
/// long-context tier (which applies per request) cannot be told apart: standard rates are used.
pub fn price(u: &AgentUsage, table: &PriceTable) -> Priced {
    let rows: Vec<(String, Usage)> = if u.per_model.is_empty() {
        match &u.model {
            Some(m) => vec![(m.clone(), u.usage())],
            None => vec![],
        }
    } else {
        u.per_model.clone()
    };
    let mut cost = 0.0;
    let mut unpriced = Vec::new();
    for (model, usage) in &rows {
        match table.lookup(model) {
            Lookup::Priced(p) => {
                let r = &p.rates;
                cost += (usage.input as f64 * r.input
                    + usage.cache_write_5m as f64 * r.cache_write_5m
                    + usage.cache_write_1h as f64 * r.cache_write_1h
                    + usage.cache_read as f64 * r.cache_read
                    + usage.output as f64 * r.output)
                    / 1e6;
            }
            Lookup::Free => {}
            Lookup::Unpriced => unpriced.push(model.clone()),
        }
    }
    if rows.is_empty() && (u.reported_cost_usd.is_some() || u.usage() != Usage::default()) {
        unpriced.push("(no model reported)".into());
    }
    if !unpriced.is_empty() {
        cost = u.reported_cost_usd.unwrap_or(0.0);
    }
    Priced { cost_usd: cost, unpriced }
}

/// Read the usage an agent printed to its log. Lines that are not JSON (stderr, progress) are
/// skipped. None when no usage event was printed (a plain command).
pub fn read_usage(log: &Path, format: OutputFormat) -> Option<AgentUsage> {
    let claude = matches!(format, OutputFormat::ClaudeStreamJson | OutputFormat::Detect);
    let codex = matches!(format, OutputFormat::CodexJson | OutputFormat::Detect);
    let file = File::open(log).ok()?;
    let mut model: Option<String> = None;
    let mut found: Option<AgentUsage> = None;
    for line in BufReader::new(file).split(b'\n').map_while(|l| l.ok()) {
        let Ok(v) = serde_json::from_slice::<Value>(&line) else { continue };
        match v.get("type").and_then(Value::as_str) {
            Some("system") if claude => {
                if let Some(m) = v.get("model").and_then(Value::as_str) {
                    model.get_or_insert_with(|| m.to_string());
                }
            }
            Some("result") if claude => found = Some(claude_result(&v)),
            Some("turn.completed") if codex => found = Some(codex_turn(&v)),
            _ => {}
        }
    }
    let mut u = found?;
    if u.model.is_none() {
        u.model = model.or_else(|| u.per_model.first().map(|(m, _)| m.clone()));
    }
    Some(u)
}

fn n(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

fn claude_result(v: &Value) -> AgentUsage {
    let empty = Value::Null;
    let usage = v.get("usage").unwrap_or(&empty);
    let creation = n(usage, "cache_creation_input_tokens");
    // The split by TTL, when the result carries it; otherwise all writes count as 5-minute.
    let split = usage.get("cache_creation");
    let w1h = split.map_or(0, |s| n(s, "ephemeral_1h_input_tokens")).min(creation);
    let w5m = split.map_or(0, |s| n(s, "ephemeral_5m_input_tokens"));
    let mut per_model = Vec::new();
    if let Some(Value::Object(models)) = v.get("modelUsage") {
        for (m, mu) in models {
            let (c5m, c1h) = split_writes(n(mu, "cacheCreationInputTokens"), w5m, w1h);
            per_model.push((
                m.clone(),
                Usage {
                    input: n(mu, "inputTokens"),
                    cache_write_5m: c5m,
                    cache_write_1h: c1h,
                    cache_read: n(mu, "cacheReadInputTokens"),
                    output: n(mu, "outputTokens"),
                },
            ));
        }
    }
    AgentUsage {
        model: None,
        input_tokens: n(usage, "input_tokens"),
        cache_write_5m_tokens: creation - w1h,
        cache_write_1h_tokens: w1h,
        cache_read_tokens: n(usage, "cache_read_input_tokens"),
        output_tokens: n(usage, "output_tokens"),
        reported_cost_usd: v.get("total_cost_usd").and_then(Value::as_f64),
        per_model,
    }
}

/// Split one model's cache writes `total` (`modelUsage[m].cacheCreationInputTokens`, which has
/// no TTL split) into (5-minute, 1-hour) by the result's `usage.cache_creation` figures
/// `w5m`/`w1h`, which `modelUsage` lacks (real-clis.md §3). `usage` excludes the compaction
/// call that `modelUsage` includes, so the split is applied as a proportion; with no split
/// given, all writes count as 5-minute.
fn split_writes(total: u64, w5m: u64, w1h: u64) -> (u64, u64) {
    let known = w5m + w1h;
    if known == 0 || w1h == 0 {
        return (total, 0);
    }
    let h = ((total as u128 * w1h as u128 + known as u128 / 2) / known as u128) as u64;
    let h = h.min(total);
    (total - h, h)
}

fn codex_turn(v: &Value) -> AgentUsage {
    let empty = Value::Null;
    let usage = v.get("usage").unwrap_or(&empty);
    let input = n(usage, "input_tokens");
    let cached = n(usage, "cached_input_tokens").min(input);
    AgentUsage {
        input_tokens: input - cached,
        cache_read_tokens: cached,
        output_tokens: n(usage, "output_tokens"),
        ..AgentUsage::default()
    }
}

/// One tool call Claude Code denied, from the `result` event's `permission_denials`
/// (`[{tool_name, tool_use_id, tool_input}]`, real-clis.md §2).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Denial {
    /// `Bash`, `Write`, `Edit`, …
    pub tool_name: String,
    /// The call's input as JSON text, clipped to 300 characters.
    pub tool_input: String,
}

impl Denial {
    /// The `--allowedTools` pattern that would have allowed it: `Bash(PREFIX:*)` for a shell
    /// command (see [`tool_patterns`]), else the tool's name.
    pub fn pattern(&self) -> String {
        if self.tool_name == "Bash" {
            let cmd = serde_json::from_str::<Value>(&self.tool_input)
                .ok()
                .and_then(|v| v.get("command").and_then(Value::as_str).map(str::to_string));
            if let Some(p) = cmd.as_deref().and_then(|c| tool_patterns(c).into_iter().next()) {
                return p;
            }
        }
        self.tool_name.clone()
    }

    /// `Bash: {"command":"npm install"}` — for the prompt and the loop's output.
    pub fn describe(&self) -> String {
        format!("{}: {}", self.tool_name, self.tool_input)
    }
}

/// The denials in the log's last Claude Code `result` event (empty when there is none).
pub fn read_denials(log: &Path) -> Vec<Denial> {
    let Ok(file) = File::open(log) else { return Vec::new() };
    let mut last = Vec::new();
    for line in BufReader::new(file).split(b'\n').map_while(|l| l.ok()) {
        let Ok(v) = serde_json::from_slice::<Value>(&line) else { continue };
        if v.get("type").and_then(Value::as_str) != Some("result") {
            continue;
        }
        last = v
            .get("permission_denials")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|d| Denial {
                        tool_name: d
                            .get("tool_name")
                            .and_then(Value::as_str)
                            .unwrap_or("?")
                            .to_string(),
                        tool_input: clip(
                            &d.get("tool_input").map(Value::to_string).unwrap_or_default(),
                            300,
                        ),
                    })
                    .collect()
            })
            .unwrap_or_default();
    }
    last
}

/// The exact setting that allows `denials`: `[agent] allowed_tools = ["Bash(npm install:*)"]`
/// in longrun/config.toml, or `permissions = "skip"`.
pub fn denial_setting(denials: &[Denial]) -> String {
    let mut pats: Vec<String> = Vec::new();
    for d in denials {
        let p = d.pattern();
        if !pats.contains(&p) {
            pats.push(p);
        }
    }
    let list = pats.iter().map(|p| format!("{p:?}")).collect::<Vec<_>>().join(", ");
    format!(
        "add allowed_tools = [{list}] under [agent] in longrun/config.toml (or permissions = \"skip\" to allow everything)"
    )
}

fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut t: String = s.chars().take(max).collect();
    t.push('…');
    t
}

/// What Codex said went wrong: each `turn.failed` `error.message`, top-level `error` event
/// `message` and `item.completed` item of type `error` (`message`), in order, each clipped to
/// 300 characters (formats/codex.md §14.2). Empty for a run without errors.
pub fn codex_errors(log: &Path) -> Vec<String> {
    let Ok(file) = File::open(log) else { return Vec::new() };
    let mut out = Vec::new();
    for line in BufReader::new(file).split(b'\n').map_while(|l| l.ok()) {
        let Ok(v) = serde_json::from_slice::<Value>(&line) else { continue };
        let msg = match v.get("type").and_then(Value::as_str) {
            Some("turn.failed") => v.pointer("/error/message"),
            Some("error") => v.get("message"),
            Some("item.completed")
                if v.pointer("/item/type").and_then(Value::as_str) == Some("error") =>
            {
                v.pointer("/item/message")
            }
            _ => None,
        };
        if let Some(m) = msg.and_then(Value::as_str) {
            out.push(clip(m.trim(), 300));
        }
    }
    out
}

/// The `thread.started` `thread_id` of a Codex `--json` log.
pub fn codex_thread_id(log: &Path) -> Option<String> {
    let file = File::open(log).ok()?;
    BufReader::new(file).split(b'\n').map_while(|l| l.ok()).find_map(|line| {
        let v = serde_json::from_slice::<Value>(&line).ok()?;
        (v.get("type")?.as_str()? == "thread.started")
            .then(|| v.get("thread_id")?.as_str().map(str::to_string))?
    })
}

/// `$CODEX_HOME`, else `~/.codex`.
pub fn codex_home() -> Option<PathBuf> {
    match std::env::var_os("CODEX_HOME").filter(|v| !v.is_empty()) {
        Some(h) => Some(PathBuf::from(h)),
        None => std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".codex")),
    }
}

/// The model of Codex thread `thread_id`, read from its rollout
/// `HOME/sessions/YYYY/MM/DD/rollout-…-<thread_id>.jsonl` (or `.jsonl.zst` is skipped): the
/// first `turn_context` `payload.model`, or an `event_msg` `thread_settings_applied` `model`
/// (real-clis.md §2, formats/codex.md §6). The newest day folders are searched first, at most
/// 14 of them. None when no rollout or no model is found.
pub fn codex_rollout_model(home: &Path, thread_id: &str) -> Option<String> {
    rollout_model(&codex_rollout(home, thread_id)?)
}

/// The rollout of Codex thread `thread_id` under `home`
/// (`sessions/YYYY/MM/DD/rollout-…-<thread_id>.jsonl`), the newest 14 day folders searched
/// newest first. None when there is none.
pub fn codex_rollout(home: &Path, thread_id: &str) -> Option<PathBuf> {
    let sessions = home.join("sessions");
    let sorted_desc = |dir: &Path| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
            .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.is_dir()).collect())
            .unwrap_or_default();
        v.sort();
        v.reverse();
        v
    };
    let suffix = format!("-{thread_id}.jsonl");
    let mut days = 0;
    for y in sorted_desc(&sessions) {
        for m in sorted_desc(&y) {
            for d in sorted_desc(&m) {
                days += 1;
                if days > 14 {
                    return None;
                }
                let Ok(rd) = std::fs::read_dir(&d) else { continue };
                for e in rd.filter_map(|e| e.ok()) {
                    let name = e.file_name().to_string_lossy().into_owned();
                    if name.starts_with("rollout-") && name.ends_with(&suffix) {
                        return Some(e.path());
                    }
                }
            }
        }
    }
    None
}

fn rollout_model(path: &Path) -> Option<String> {
    let file = File::open(path).ok()?;
    for line in BufReader::new(file).split(b'\n').map_while(|l| l.ok()) {
        let Ok(v) = serde_json::from_slice::<Value>(&line) else { continue };
        let p = v.get("payload");
        let model = match v.get("type").and_then(Value::as_str) {
            Some("turn_context") => p.and_then(|p| p.get("model")),
            Some("event_msg")
                if p.and_then(|p| p.get("type")).and_then(Value::as_str)
                    == Some("thread_settings_applied") =>
            {
                p.and_then(|p| p.get("model").or_else(|| p.pointer("/settings/model")))
            }
            _ => None,
        };
        if let Some(m) = model.and_then(Value::as_str).filter(|m| !m.is_empty()) {
            return Some(m.to_string());
        }
    }
    None
}

/// The `rate_limits` of the last `event_msg/token_count` in the rollout of the Codex run
/// logged in `log` (its `thread.started` id, under [`codex_home`]): `{primary, secondary}` windows
/// `{used_percent, window_minutes, resets_at}` (formats/codex.md §5.1). None without a rollout
/// or such a record.
pub fn codex_last_rate_limits(log: &Path) -> Option<Value> {
    let path = codex_rollout(&codex_home()?, &codex_thread_id(log)?)?;
    let file = File::open(path).ok()?;
    let mut last = None;
    for line in BufReader::new(file).split(b'\n').map_while(|l| l.ok()) {
        let Ok(v) = serde_json::from_slice::<Value>(&line) else { continue };
        if v.get("type").and_then(Value::as_str) == Some("event_msg")
            && v.pointer("/payload/type").and_then(Value::as_str) == Some("token_count")
        {
            if let Some(r) = v.pointer("/payload/rate_limits").filter(|r| r.is_object()) {
                last = Some(r.clone());
            }
        }
    }
    last
}

/// The model a Codex iteration used: config.toml's `model` (passed as `-m`), else the one its
/// rollout names (see [`codex_rollout_model`]).
pub fn codex_model(log: &Path, setup: &AgentSetup) -> Option<String> {
    if !setup.model.is_empty() {
        return Some(setup.model.clone());
    }
    let id = codex_thread_id(log)?;
    codex_rollout_model(&codex_home()?, &id)
}

const FAKE_SCENARIO_HINT: &str =
    "kit loop --agent fake:finish (fake-agent --list describes each scenario)";

const AGENT_NOT_FOUND_HINT: &str =
    "kit doctor (shows which agents this machine has and how to install one), or kit loop --agent 'COMMAND'";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shell_agent_is_checked_by_its_first_program() {
        for (cmd, want) in [
            ("python3 agent.py", Some("python3")),
            ("./run.sh --fast", Some("./run.sh")),
            ("claude-wrapper", Some("claude-wrapper")),
            ("cd sub && make", None),
            ("A=1 agent", None),
            ("$AGENT -p", None),
            ("sleep 1000 & sleep 1000", Some("sleep")),
            ("  ", None),
        ] {
            assert_eq!(shell_program(cmd), want, "{cmd}");
        }
        let d = tempfile::tempdir().unwrap();
        let e = AgentSpec::Shell("no-such-agent-xyz -p".into()).check_installed(d.path());
        assert!(e.unwrap_err().to_string().contains("`no-such-agent-xyz` is not installed"));
        AgentSpec::Shell("sh -c true".into()).check_installed(d.path()).unwrap();
        let e = AgentSpec::Shell("./missing.sh".into()).check_installed(d.path());
        assert!(e.unwrap_err().to_string().contains("(not found)"));
    }

    #[test]
    fn specs_parse_to_their_argv() {
        let cases = [
            (
                "claude",
                "claude -p --output-format stream-json --verbose --permission-mode acceptEdits \
                 --allowedTools Bash(git status:*) Bash(git diff:*) Bash(git log:*) \
                 Bash(git show:*) Bash(kit handoff save:*) --setting-sources project,local",
            ),
            ("codex", "codex exec --json --sandbox workspace-write -"),
            ("sh ./agent.sh", "sh -c sh ./agent.sh"),
        ];
        for (spec, argv) in cases {
            assert_eq!(AgentSpec::parse(spec).unwrap().argv().join(" "), argv, "{spec}");
        }
        let fake = AgentSpec::parse("fake:finish").unwrap();
        assert_eq!(fake, AgentSpec::Fake("finish".into()));
        assert!(fake
            .argv()
            .join(" ")
            .ends_with("fake-agent --scenario finish -p --output-format stream-json --verbose"));
        assert!(AgentSpec::parse("  ").is_err());
        assert!(AgentSpec::parse("fake:").is_err());
        let fc = AgentSpec::parse("fake-codex:ratelimit").unwrap();
        assert_eq!(fc, AgentSpec::FakeCodex("ratelimit".into()));
        assert_eq!(fc.format(), OutputFormat::CodexJson);
        assert!(fc.is_codex() && !fake.is_codex());
        assert!(fc
            .argv()
            .join(" ")
            .ends_with("fake-agent --codex --scenario ratelimit exec --json -"));
        assert!(AgentSpec::parse("fake-codex:").is_err());
    }

    fn log_with(lines: &[&str]) -> tempfile::NamedTempFile {
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), lines.join("\n")).unwrap();
        f
    }

    #[test]
    fn claude_usage_comes_from_the_result_event() {
        let log = log_with(&[
            r#"{"type":"system","subtype":"init","model":"claude-sonnet-4-5-20250929"}"#,
            "some stderr noise",
            r#"{"type":"assistant","message":{}}"#,
            r#"{"type":"result","subtype":"success","total_cost_usd":0.5,"usage":{"input_tokens":1000,"cache_creation_input_tokens":2000,"cache_read_input_tokens":10000,"output_tokens":500}}"#,
        ]);
        let u = read_usage(log.path(), OutputFormat::ClaudeStreamJson).unwrap();
        assert_eq!(u.model.as_deref(), Some("claude-sonnet-4-5-20250929"));
        assert_eq!(
            (u.input_tokens, u.cache_write_5m_tokens, u.cache_read_tokens, u.output_tokens),
            (1000, 2000, 10000, 500)
        );
        let p = price(&u, PriceTable::embedded());
        assert!(p.unpriced.is_empty());
        // Sonnet 4.5: 3 in, 3.75 5m write, 0.30 read, 15 out per million.
        let want = (1000.0 * 3.0 + 2000.0 * 3.75 + 10000.0 * 0.3 + 500.0 * 15.0) / 1e6;
        assert!((p.cost_usd - want).abs() < 1e-9, "{}", p.cost_usd);
    }

    #[test]
    fn an_unpriced_model_falls_back_to_the_reported_cost() {
        let log = log_with(&[
            r#"{"type":"system","subtype":"init","model":"claude-future-9"}"#,
            r#"{"type":"result","total_cost_usd":1.25,"usage":{"input_tokens":5,"output_tokens":5}}"#,
        ]);
        let u = read_usage(log.path(), OutputFormat::ClaudeStreamJson).unwrap();
        let p = price(&u, PriceTable::embedded());
        assert_eq!(p.unpriced, vec!["claude-future-9".to_string()]);
        assert_eq!(p.cost_usd, 1.25);
    }

    #[test]
    fn codex_usage_is_the_last_cumulative_turn() {
        let log = log_with(&[
            r#"{"type":"thread.started","thread_id":"t"}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":40,"output_tokens":10}}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":300,"cached_input_tokens":200,"output_tokens":30}}"#,
        ]);
        let u = read_usage(log.path(), OutputFormat::CodexJson).unwrap();
        assert_eq!((u.input_tokens, u.cache_read_tokens, u.output_tokens), (100, 200, 30));
        assert!(read_usage(log.path(), OutputFormat::ClaudeStreamJson).is_none());
        assert_eq!(read_usage(log.path(), OutputFormat::Detect).unwrap().output_tokens, 30);
        let plain = log_with(&["hello", "{\"type\":\"other\"}"]);
        assert!(read_usage(plain.path(), OutputFormat::Detect).is_none());
    }

    fn cfg(
        f: impl FnOnce(&mut crate::longrun::config::AgentConfig),
    ) -> crate::longrun::config::AgentConfig {
        let mut c = crate::longrun::config::AgentConfig::default();
        f(&mut c);
        c
    }

    #[test]
    fn claude_and_codex_argv_follow_the_config_and_the_criteria() {
        let base = "claude -p --output-format stream-json --verbose";
        let git = "Bash(git status:*) Bash(git diff:*) Bash(git log:*) Bash(git show:*) Bash(kit handoff save:*)";
        let criteria =
            ["python3 -m unittest tests.test_calc", "cd sub && make check", "./lint.sh -q"];
        let cases: Vec<(&str, crate::longrun::config::AgentConfig, &[&str], String)> = vec![
            (
                "claude",
                cfg(|_| {}),
                &criteria,
                format!("{base} --permission-mode acceptEdits --allowedTools {git} Bash(python3 -m unittest:*) Bash(make check:*) Bash(./lint.sh:*) --setting-sources project,local"),
            ),
            (
                "claude",
                cfg(|c| {
                    c.allowed_tools = vec!["Bash(npm install:*)".into(), "WebFetch".into()];
                    c.setting_sources = String::new();
                    c.model = "claude-sonnet-4-5".into();
                }),
                &[],
                format!("{base} --permission-mode acceptEdits --allowedTools {git} Bash(npm install:*) WebFetch --model claude-sonnet-4-5"),
            ),
            (
                "claude",
                cfg(|c| c.permissions = "skip".into()),
                &criteria,
                format!("{base} --dangerously-skip-permissions --setting-sources project,local"),
            ),
            ("codex", cfg(|_| {}), &criteria, "codex exec --json --sandbox workspace-write -".into()),
            (
                "codex",
                cfg(|c| {
                    c.sandbox = "danger-full-access".into();
                    c.model = "gpt-5.3-codex".into();
                }),
                &[],
                "codex exec --json --sandbox danger-full-access -m gpt-5.3-codex -".into(),
            ),
            ("sh ./a.sh", cfg(|c| c.permissions = "skip".into()), &[], "sh -c sh ./a.sh".into()),
        ];
        for (spec, c, crit, want) in cases {
            let setup = AgentSetup::new(&c, crit);
            let spec = AgentSpec::parse(spec).unwrap();
            assert_eq!(spec.argv_with(&setup).join(" "), want, "{spec:?} {c:?}");
        }
        // IS_SANDBOX only for an opted-in skip, and only as root.
        let skip = AgentSetup::new(&cfg(|c| c.permissions = "skip".into()), &[]);
        let root = nix::unistd::geteuid().is_root();
        assert_eq!(!AgentSpec::Claude.env_with(&skip).is_empty(), root);
        assert!(AgentSpec::Claude.env_with(&AgentSetup::default()).is_empty());
        assert!(AgentSpec::Codex.env_with(&skip).is_empty());
    }

    #[test]
    fn criteria_commands_become_bash_prefix_patterns() {
        for (cmd, want) in [
            ("python3 -m unittest discover -s tests", vec!["Bash(python3 -m unittest:*)"]),
            ("python3 t.py --fast", vec!["Bash(python3 t.py:*)"]),
            ("cargo test --lib", vec!["Bash(cargo test:*)"]),
            ("PYTHONPATH=src pytest -q tests/", vec!["Bash(pytest:*)"]),
            ("cd app && npm test | tail -5", vec!["Bash(npm test:*)", "Bash(tail:*)"]),
            ("./check.sh", vec!["Bash(./check.sh:*)"]),
            ("", vec![]),
        ] {
            assert_eq!(tool_patterns(cmd), want, "{cmd}");
        }
    }

    #[test]
    fn denials_are_read_from_the_last_result_and_name_the_setting() {
        // The shape Claude Code 2.1.197 prints (real-clis.md §2).
        let log = log_with(&[
            r#"{"type":"system","subtype":"init","model":"claude-opus-4-8[1m]"}"#,
            r#"{"type":"result","subtype":"success","is_error":false,"num_turns":3,"permission_denials":[{"tool_name":"Bash","tool_use_id":"toolu_01","tool_input":{"command":"npm install left-pad","description":"install"}},{"tool_name":"Write","tool_use_id":"toolu_02","tool_input":{"file_path":"/etc/x","content":"y"}}],"usage":{"input_tokens":5,"output_tokens":5}}"#,
        ]);
        let d = read_denials(log.path());
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].tool_name, "Bash");
        assert_eq!(d[0].pattern(), "Bash(npm install:*)");
        assert_eq!(d[1].pattern(), "Write");
        assert!(d[0].tool_input.contains("npm install left-pad"));
        assert_eq!(
            denial_setting(&d),
            r#"add allowed_tools = ["Bash(npm install:*)", "Write"] under [agent] in longrun/config.toml (or permissions = "skip" to allow everything)"#
        );
        let none = log_with(&[r#"{"type":"result","permission_denials":[]}"#]);
        assert!(read_denials(none.path()).is_empty());
    }

    #[test]
    fn one_hour_cache_writes_are_priced_by_the_results_split() {
        // A 2.1.197 result: modelUsage has no TTL split, usage.cache_creation has it.
        let log = log_with(&[
            r#"{"type":"system","subtype":"init","model":"claude-sonnet-4-5-20250929"}"#,
            r#"{"type":"result","subtype":"success","total_cost_usd":0.1,"usage":{"input_tokens":10,"cache_creation_input_tokens":4000,"cache_read_input_tokens":20000,"output_tokens":300,"cache_creation":{"ephemeral_5m_input_tokens":1000,"ephemeral_1h_input_tokens":3000}},"modelUsage":{"claude-sonnet-4-5-20250929":{"inputTokens":10,"outputTokens":300,"cacheReadInputTokens":20000,"cacheCreationInputTokens":4000,"costUSD":0.1,"contextWindow":200000,"maxOutputTokens":32000}},"permission_denials":[]}"#,
        ]);
        let u = read_usage(log.path(), OutputFormat::ClaudeStreamJson).unwrap();
        assert_eq!(u.per_model[0].1.cache_write_5m, 1000);
        assert_eq!(u.per_model[0].1.cache_write_1h, 3000);
        let p = price(&u, PriceTable::embedded());
        // Sonnet 4.5: 3 in, 3.75 5m write, 6 1h write, 0.30 read, 15 out per million.
        let want = (10.0 * 3.0 + 1000.0 * 3.75 + 3000.0 * 6.0 + 20000.0 * 0.3 + 300.0 * 15.0) / 1e6;
        assert!((p.cost_usd - want).abs() < 1e-9, "{} vs {want}", p.cost_usd);
        // modelUsage includes the compaction call that usage lacks: the split is a proportion.
        assert_eq!(split_writes(8000, 1000, 3000), (2000, 6000));
        assert_eq!(split_writes(500, 0, 0), (500, 0));
        assert_eq!(split_writes(7, 1, 2), (2, 5));
    }

    #[test]
    fn codex_errors_and_the_model_from_its_rollout() {
        let log = log_with(&[
            r#"{"type":"thread.started","thread_id":"019a7c1e-3c5d-7f00-9e2b-1c0ffee00001"}"#,
            r#"{"type":"turn.started"}"#,
            r#"{"type":"item.completed","item":{"id":"item_1","type":"error","message":"command failed: Read-only file system"}}"#,
            r#"{"type":"error","message":"stream disconnected before completion"}"#,
            r#"{"type":"turn.failed","error":{"message":"unexpected status 401 Unauthorized"}}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":1000,"cached_input_tokens":400,"cache_write_input_tokens":0,"output_tokens":50,"reasoning_output_tokens":20}}"#,
        ]);
        assert_eq!(
            codex_errors(log.path()),
            [
                "command failed: Read-only file system",
                "stream disconnected before completion",
                "unexpected status 401 Unauthorized"
            ]
        );
        assert_eq!(
            codex_thread_id(log.path()).as_deref(),
            Some("019a7c1e-3c5d-7f00-9e2b-1c0ffee00001")
        );
        let home = tempfile::tempdir().unwrap();
        let day = home.path().join("sessions/2026/12/01");
        std::fs::create_dir_all(&day).unwrap();
        std::fs::create_dir_all(home.path().join("sessions/2026/11/30")).unwrap();
        // A 0.171 rollout: session_meta has no model, turn_context does.
        std::fs::write(
            day.join("rollout-2026-12-01T10-00-00-019a7c1e-3c5d-7f00-9e2b-1c0ffee00001.jsonl"),
            [
                r#"{"timestamp":"2026-12-01T10:00:00Z","type":"session_meta","payload":{"id":"019a7c1e-3c5d-7f00-9e2b-1c0ffee00001","originator":"codex_exec","cli_version":"0.171.0"}}"#,
                r#"{"timestamp":"2026-12-01T10:00:00Z","type":"event_msg","payload":{"type":"task_started"}}"#,
                r#"{"timestamp":"2026-12-01T10:00:01Z","type":"turn_context","payload":{"cwd":"/r","approval_policy":"never","sandbox_policy":{"type":"workspace-write"},"model":"gpt-5.3-codex"}}"#,
            ]
            .join("\n"),
        )
        .unwrap();
        std::fs::write(day.join("rollout-2026-12-01T09-00-00-other.jsonl"), "{}").unwrap();
        let id = "019a7c1e-3c5d-7f00-9e2b-1c0ffee00001";
        assert_eq!(codex_rollout_model(home.path(), id).as_deref(), Some("gpt-5.3-codex"));
        assert_eq!(codex_rollout_model(home.path(), "nope"), None);
        // thread_settings_applied names it too.
        let other = home.path().join("sessions/2026/11/30/rollout-x-t2.jsonl");
        std::fs::write(&other, r#"{"type":"event_msg","payload":{"type":"thread_settings_applied","model":"gpt-5.2-codex"}}"#).unwrap();
        assert_eq!(codex_rollout_model(home.path(), "t2").as_deref(), Some("gpt-5.2-codex"));
        // config.toml's model wins (it was passed as -m).
        let set = AgentSetup::new(&cfg(|c| c.model = "gpt-5".into()), &[]);
        assert_eq!(codex_model(log.path(), &set).as_deref(), Some("gpt-5"));
        // Priced once the model is known; unknown stays flagged, never a silent $0.
        let mut u = read_usage(log.path(), OutputFormat::CodexJson).unwrap();
        assert!(price(&u, PriceTable::embedded()).unpriced.len() == 1);
        u.model = Some("gpt-5.3-codex".into());
        let p = price(&u, PriceTable::embedded());
        assert!(p.unpriced.is_empty() && p.cost_usd > 0.0, "{p:?}");
        u.model = Some("gpt-9-unknown".into());
        assert_eq!(price(&u, PriceTable::embedded()).unpriced, ["gpt-9-unknown"]);
    }
}
