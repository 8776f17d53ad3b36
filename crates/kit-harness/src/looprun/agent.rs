//! One agent iteration as an operating-system matter: which program runs, in its own process
//! group, under the timeout and the memory cap, with its output in `longrun/.runs/NNN.log`, and
//! what it reported spending.
//!
//! Agents (DESIGN §6), from `config.toml` `agent.command` or `kit loop --agent`:
//!
//! | spec | argv | usage read from |
//! |---|---|---|
//! | `claude` | `claude -p --output-format stream-json --verbose --permission-mode acceptEdits --allowedTools … --setting-sources project,local --max-budget-usd B` (see [`AgentSpec::argv_with`]) | the `result` event; while it runs, each `assistant` event's usage ([`Meter`]) |
//! | `codex` | `codex exec --json --sandbox workspace-write -` | the last `turn.completed` event; the model from `-m` or the rollout ([`codex_model`]); while it runs, the rollout's `token_count` records ([`Meter`]) |
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

mod launch;
mod spend;
mod usage;

pub use launch::*;
pub use spend::*;
pub use usage::*;

use super::memcap::{Enforcer, Watchdog};
use crate::error::{Error, IoContext, Result};
use crate::prices::{Lookup, PriceTable, Usage};
use crate::proc as procs;

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
        // What a valid spec is belongs to the state layer, so `kit status` can tell too.
        crate::longrun::caps::check_agent_command(spec)?;
        let s = spec.trim();
        Ok(match s {
            "claude" => AgentSpec::Claude,
            "codex" => AgentSpec::Codex,
            _ => match (s.strip_prefix("fake-codex:"), s.strip_prefix("fake:")) {
                (Some(scenario), _) => AgentSpec::FakeCodex(scenario.to_string()),
                (None, Some(scenario)) => AgentSpec::Fake(scenario.to_string()),
                (None, None) => AgentSpec::Shell(s.to_string()),
            },
        })
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
    /// | `claude`, allowlist | `claude -p --output-format stream-json --verbose --permission-mode acceptEdits --allowedTools P… [--setting-sources S] [--model M] [--max-budget-usd B]` |
    /// | `claude`, skip | `claude -p --output-format stream-json --verbose --dangerously-skip-permissions [--setting-sources S] [--model M] [--max-budget-usd B]` |
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
                if !setup.max_budget_usd.is_empty() {
                    a.extend(["--max-budget-usd".into(), setup.max_budget_usd.clone()]);
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
    /// Claude Code's `--max-budget-usd` (what is left of the run's cost cap, see
    /// [`budget_arg`]); empty: no flag. Set per iteration by the loop. Claude Code 2.1.197 has
    /// the flag (`claude --help`: "Maximum dollar amount to spend on API calls (only works with
    /// --print)"): after each message it compares its own running cost with it and ends with a
    /// `result` of subtype `error_max_budget_usd` ([`stopped_at_budget`]). Codex has no such
    /// flag.
    pub max_budget_usd: String,
}

/// `usd` as Claude Code's `--max-budget-usd` takes it: plain decimals, rounded down to the cent
/// (so Claude Code stops no later than kit would), or to 0.0001 when less than a cent is left
/// (the flag refuses 0).
pub fn budget_arg(usd: f64) -> String {
    let cents = (usd * 100.0).floor() / 100.0;
    if cents >= 0.01 {
        format!("{cents:.2}")
    } else {
        format!("{:.4}", ((usd * 10_000.0).floor() / 10_000.0).max(0.0001))
    }
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
            max_budget_usd: String::new(),
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
    let names = crate::fake_agent::scenario_names();
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
    fn claude_is_given_the_remaining_budget_rounded_down_and_never_zero() {
        for (usd, want) in [
            (25.0, "25.00"),
            (1.239, "1.23"),
            (0.4, "0.40"),
            (0.0099, "0.0099"),
            (0.00001, "0.0001"),
            (0.0, "0.0001"),
        ] {
            assert_eq!(budget_arg(usd), want, "{usd}");
        }
        let setup = AgentSetup { max_budget_usd: budget_arg(1.5), ..AgentSetup::default() };
        let argv = AgentSpec::Claude.argv_with(&setup).join(" ");
        assert!(argv.ends_with("--setting-sources project,local --max-budget-usd 1.50"), "{argv}");
        // Codex has no such flag; the fake and a command line take no set-up.
        assert!(!AgentSpec::Codex.argv_with(&setup).join(" ").contains("budget"));
        assert!(!AgentSpec::Fake("spend".into()).argv_with(&setup).join(" ").contains("budget"));
    }

    #[test]
    fn a_claude_stop_at_its_budget_is_read_from_the_last_result() {
        let log = log_with(&[
            r#"{"type":"result","subtype":"error_max_budget_usd","is_error":true,"total_cost_usd":1.01}"#,
        ]);
        assert!(stopped_at_budget(log.path()));
        let ok = log_with(&[r#"{"type":"result","subtype":"success","is_error":false}"#]);
        assert!(!stopped_at_budget(ok.path()));
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
