//! `kit doctor`: what this machine offers the loop, before an unattended run depends on it —
//! which memory-cap enforcer `kit loop` will use (and why), whether kit can be a child
//! subreaper, and which agents and tools are on `PATH`.
//!
//! Inside a repository with `longrun/`, it also checks the agent that `longrun/config.toml`
//! configures (installed, scenario known) and that the config parses; outside one it says the
//! machine is ready and where to start.
//!
//! Exit status: 0 when a loop can run here (git found, and in a project the configured agent
//! found and the config valid), 1 otherwise.

use std::io::Write;
use std::path::Path;

use crate::error::{IoContext, Result, EXIT_CHECK_FAILED, EXIT_OK};
use crate::looprun::{agent, memcap};
use crate::proc as procs;
use crate::term::Theme;

/// One program the loop may need.
struct Tool {
    name: &'static str,
    role: &'static str,
    needed: bool,
    /// How to get it when it is missing.
    install: &'static str,
}

const TOOLS: [Tool; 5] = [
    Tool {
        name: "git",
        role: "the repository, frozen-file checks, handoff stamps",
        needed: true,
        install: INSTALL_GIT,
    },
    Tool {
        name: "python3",
        role: "the course's sample project and exercises",
        needed: false,
        install: INSTALL_PYTHON,
    },
    Tool {
        name: "claude",
        role: "agent = \"claude\" (Claude Code)",
        needed: false,
        install: INSTALL_CLAUDE,
    },
    Tool {
        name: "codex",
        role: "agent = \"codex\" (Codex CLI)",
        needed: false,
        install: INSTALL_CODEX,
    },
    Tool {
        name: "fake-agent",
        role: "agent = \"fake:SCENARIO\" (rehearsals, no tokens)",
        needed: false,
        install: "",
    },
];

use crate::proc::find_on_path;

/// `kit doctor`: print what the loop will use on this machine, and for the project containing
/// `cwd` (if any) whether its configured agent can start.
pub fn run(cwd: &Path, theme: &Theme, out: &mut dyn Write) -> Result<u8> {
    let o = Path::new("stdout");
    let (enforcer, why) = memcap::detect();
    writeln!(out, "{} {} — {why}", theme.bold("memory cap:"), enforcer.name()).at(o)?;
    // A subreaper setting only affects this short-lived process's orphans.
    match procs::become_subreaper() {
        Ok(()) => writeln!(
            out,
            "{} yes — agent processes that leave their group stay in kit's tree",
            theme.bold("subreaper:")
        )
        .at(o)?,
        Err(e) => writeln!(
            out,
            "{} {} — detached agent processes may escape ({e})",
            theme.bold("subreaper:"),
            theme.warn("no")
        )
        .at(o)?,
    }
    // A user timer (kit schedule install) only outlives the login session with lingering on.
    match crate::schedule::lingering() {
        crate::schedule::Linger::On(user) => writeln!(
            out,
            "{} on for {user} — a user timer (kit schedule install) keeps running after logout",
            theme.bold("lingering:")
        ),
        crate::schedule::Linger::Off(user) => writeln!(
            out,
            "{} {} for {user} — a user timer stops at logout; loginctl enable-linger {user} (or kit schedule install --cron)",
            theme.bold("lingering:"),
            theme.warn("off")
        ),
        crate::schedule::Linger::Unknown(user) => writeln!(
            out,
            "{} unknown for {user} (loginctl does not answer, no /var/lib/systemd/linger) — without lingering a user timer stops at logout",
            theme.bold("lingering:")
        ),
    }
    .at(o)?;
    writeln!(out, "{}", theme.bold("programs:")).at(o)?;
    let mut ok = true;
    for t in &TOOLS {
        if t.name == "fake-agent" {
            // Always there: the fake agent is built into kit (`kit fake-agent`).
            let state = agent::fake_agent_beside()
                .map_or_else(|| FAKE_AGENT_BUILT_IN.to_string(), |p| p.display().to_string());
            writeln!(out, "  {:<11} {}  — {}", t.name, theme.ok(&state), t.role).at(o)?;
            continue;
        }
        let state = match find_on_path(t.name) {
            Some(p) => theme.ok(&p.display().to_string()),
            None if t.needed => {
                ok = false;
                theme.bad(&format!("not found (required; {})", t.install))
            }
            None => theme.warn(&format!("not found ({})", t.install)),
        };
        writeln!(out, "  {:<11} {state}  — {}", t.name, t.role).at(o)?;
    }
    if !ok {
        writeln!(out, "{} a loop cannot run here: install git", theme.bold("doctor:")).at(o)?;
        return Ok(EXIT_CHECK_FAILED);
    }
    let project = crate::longrun::Project::discover_initialised(cwd).ok();
    let Some(project) = project else {
        writeln!(
            out,
            "{} this machine can run a loop; no longrun/ here (next: kit init, in a git repository)",
            theme.bold("doctor:")
        )
        .at(o)?;
        return Ok(EXIT_OK);
    };
    let problem = match crate::longrun::config::Config::load(&project.config()) {
        Err(e) => Some(format!("{e}")),
        Ok(cfg) => {
            let agent = cfg.agent.command.clone();
            let parsed = agent::AgentSpec::parse(&agent);
            let checked = match &parsed {
                Ok(spec) => spec.check_installed(&project.root),
                Err(_) => agent::AgentSpec::parse(&agent).map(|_| ()),
            };
            match checked {
                Ok(()) => {
                    writeln!(
                        out,
                        "{} `{agent}` (longrun/config.toml) {}",
                        theme.bold("agent:"),
                        theme.ok("found")
                    )
                    .at(o)?;
                    if let Ok(spec) = &parsed {
                        agent_setup(&project, &cfg, spec, theme, out)?;
                    }
                    None
                }
                Err(e) => {
                    writeln!(
                        out,
                        "{} `{agent}` (longrun/config.toml) {}",
                        theme.bold("agent:"),
                        theme.bad(&e.to_string())
                    )
                    .at(o)?;
                    let next = match agent::AgentSpec::parse(&agent) {
                        Ok(agent::AgentSpec::Claude) => INSTALL_CLAUDE.to_string(),
                        Ok(agent::AgentSpec::Codex) => INSTALL_CODEX.to_string(),
                        Ok(agent::AgentSpec::Fake(_) | agent::AgentSpec::FakeCodex(_)) => {
                            e.hint().unwrap_or("kit loop --agent fake:finish").to_string()
                        }
                        _ => "install it, or set [agent] command in longrun/config.toml".into(),
                    };
                    Some(format!(
                        "the configured agent `{agent}` cannot start (next: {next}; to rehearse \
                         meanwhile: kit loop --agent fake:finish)"
                    ))
                }
            }
        }
    };
    match problem {
        None => {
            writeln!(out, "{} a loop can run here", theme.bold("doctor:")).at(o)?;
            Ok(EXIT_OK)
        }
        Some(why) => {
            writeln!(out, "{} a loop cannot run here: {why}", theme.bold("doctor:")).at(o)?;
            Ok(EXIT_CHECK_FAILED)
        }
    }
}

/// For Claude Code and Codex: the version the configured program reports (`claude --version`,
/// `codex --version`, at most [`VERSION_TIMEOUT`]) and what a loop will let it do (the
/// permission set-up from config.toml `[agent]` and the goal's criteria).
fn agent_setup(
    project: &crate::longrun::Project,
    cfg: &crate::longrun::config::Config,
    spec: &agent::AgentSpec,
    theme: &Theme,
    out: &mut dyn Write,
) -> Result<()> {
    let o = Path::new("stdout");
    let program = match spec {
        agent::AgentSpec::Claude => "claude",
        agent::AgentSpec::Codex => "codex",
        _ => return Ok(()),
    };
    let version = agent_version(program);
    writeln!(out, "  version: {version}").at(o)?;
    let goal = crate::goal::load(project).ok();
    let commands: Vec<&str> = goal
        .as_ref()
        .map(|g| g.criteria.iter().map(|c| c.command.as_str()).collect())
        .unwrap_or_default();
    let setup = agent::AgentSetup::new(&cfg.agent, &commands);
    if let Some(line) = setup.describe(spec) {
        writeln!(out, "  {} {line}", theme.bold("allowed:")).at(o)?;
    }
    writeln!(out, "  argv: {}", setup_argv(spec, &setup)).at(o)?;
    Ok(())
}

fn setup_argv(spec: &agent::AgentSpec, setup: &agent::AgentSetup) -> String {
    spec.argv_with(setup)
        .iter()
        .map(|a| {
            if a.chars().all(|c| c.is_ascii_alphanumeric() || "-_./,:=".contains(c)) {
                a.clone()
            } else {
                format!("'{a}'")
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// How long `kit doctor` waits for `PROGRAM --version`.
pub(crate) const VERSION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The first line `program --version` prints, or why there is none (it timed out, failed).
fn agent_version(program: &str) -> String {
    let mut cmd = std::process::Command::new(program);
    cmd.arg("--version");
    let how = procs::Spawn { input: None, merge: true, own_group: true };
    let finished = procs::spawn(&mut cmd, how)
        .and_then(|r| r.wait(VERSION_TIMEOUT, Some(std::time::Duration::from_secs(1))));
    match finished {
        Err(e) => format!("unknown ({program} --version: {e})"),
        Ok(f) if f.timed_out => format!(
            "unknown ({program} --version did not answer in {})",
            crate::units::format_duration(VERSION_TIMEOUT)
        ),
        Ok(f) => {
            let text = String::from_utf8_lossy(&f.stdout);
            let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
            match f.code {
                Some(0) if !first.is_empty() => first.to_string(),
                c => format!("unknown ({program} --version exited {c:?}: {first})"),
            }
        }
    }
}

/// What `kit doctor` prints for the fake agent when no `fake-agent` binary sits beside `kit`.
const FAKE_AGENT_BUILT_IN: &str = "built into kit (`kit fake-agent`)";
const INSTALL_GIT: &str = "install git: apt-get install git, or your system's package manager";
const INSTALL_PYTHON: &str =
    "install Python 3: apt-get install python3, or your system's package manager";
const INSTALL_CLAUDE: &str = "install Claude Code: npm install -g @anthropic-ai/claude-code";
const INSTALL_CODEX: &str = "install Codex CLI: npm install -g @openai/codex";
