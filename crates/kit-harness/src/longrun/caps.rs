//! The caps a run is held to: config.toml's `[caps]`, a `kit loop` flag in place of one, and
//! goal.md's `## Budget`, the stricter of flag-or-config and budget winning, with where each
//! came from. The loop enforces them (its settings add the timeouts and the memory cap); `kit
//! status` shows the ones a plain `kit loop` would plan ([`planned_caps`]) without importing the
//! loop.

use std::time::Duration;

use super::config::Config;
use super::durable;
use crate::error::{Error, Result};

/// The budget section of goal.md (`## Budget`, parsed by `goal`). Each item is optional; the
/// loop's caps in config.toml apply regardless.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Budget {
    /// `- iterations: N`: agent iterations.
    pub iterations: Option<u32>,
    /// `- wall: 2h`: wall time.
    pub wall: Option<Duration>,
    /// `- cost: 15 USD`: USD.
    pub cost_usd: Option<f64>,
}

/// The caps a `kit loop` with no flags would run with; see [`planned_caps`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlannedCaps {
    /// Agent iterations.
    pub iterations: u32,
    /// Wall time.
    pub wall: Duration,
    /// USD.
    pub cost_usd: f64,
    /// Consecutive iterations without progress.
    pub no_progress: u32,
    /// Where iterations, wall and cost came from: `flag`, `config.toml` or `goal.md budget`.
    pub sources: [&'static str; 3],
}

impl PlannedCaps {
    /// The caps of `cfg`, with `--max-iterations` and `--max-wall` (`flag_iterations`,
    /// `flag_wall`) in place of config.toml's where given, each tightened by `budget`.
    pub(crate) fn resolve(
        cfg: &Config,
        flag_iterations: Option<u32>,
        flag_wall: Option<Duration>,
        budget: &Budget,
    ) -> PlannedCaps {
        let from = |flag: bool| if flag { "flag" } else { "config.toml" };
        let iterations = flag_iterations.unwrap_or(cfg.caps.max_iterations);
        let wall = flag_wall.unwrap_or_else(|| cfg.max_wall());
        let sources = [
            if budget.iterations.is_some_and(|b| b < iterations) {
                "goal.md budget"
            } else {
                from(flag_iterations.is_some())
            },
            if budget.wall.is_some_and(|b| b < wall) {
                "goal.md budget"
            } else {
                from(flag_wall.is_some())
            },
            if budget.cost_usd.is_some_and(|b| b < cfg.caps.max_cost_usd) {
                "goal.md budget"
            } else {
                "config.toml"
            },
        ];
        PlannedCaps {
            iterations: budget.iterations.map_or(iterations, |b| iterations.min(b)),
            wall: budget.wall.map_or(wall, |b| wall.min(b)),
            cost_usd: budget
                .cost_usd
                .map_or(cfg.caps.max_cost_usd, |b| b.min(cfg.caps.max_cost_usd)),
            no_progress: cfg.caps.max_no_progress,
            sources,
        }
    }

    /// The caps as [`durable::plan`] weighs a run's budget against them.
    pub fn limits(&self) -> durable::Limits {
        durable::Limits {
            iterations: u64::from(self.iterations),
            wall: self.wall,
            cost_usd: self.cost_usd,
            no_progress: self.no_progress,
        }
    }
}

/// The caps a `kit loop` with no flags would run with: the stricter of config.toml and the
/// goal's budget. What `kit status` shows before any run.
///
/// Errors: what the loop would refuse to start on: an agent command in config.toml that does
/// not parse ([`check_agent_command`]), an iteration timeout of 0s ([`check_iteration_timeout`]).
pub fn planned_caps(cfg: &Config, budget: &Budget) -> Result<PlannedCaps> {
    check_agent_command(&cfg.agent.command)?;
    check_iteration_timeout(cfg.iteration_timeout())?;
    Ok(PlannedCaps::resolve(cfg, None, None, budget))
}

/// Whether `spec` (`claude`, `codex`, `fake:SCENARIO`, `fake-codex:SCENARIO` or a command line;
/// trimmed) names an agent the loop can start.
///
/// Errors: [`Error::Usage`] for an empty spec or `fake:` / `fake-codex:` without a scenario.
pub(crate) fn check_agent_command(spec: &str) -> Result<()> {
    let s = spec.trim();
    if s.is_empty() {
        return Err(Error::usage("the agent command is empty")
            .with_hint("kit loop --agent claude (or set [agent] command in longrun/config.toml)"));
    }
    if s == "fake-codex:" {
        return Err(Error::usage("`fake-codex:` needs a scenario name")
            .with_hint("kit loop --agent fake-codex:finish"));
    }
    if s == "fake:" {
        return Err(
            Error::usage("`fake:` needs a scenario name").with_hint("kit loop --agent fake:finish")
        );
    }
    Ok(())
}

/// Errors: [`Error::Usage`] when `timeout` (of one agent iteration) is zero.
pub(crate) fn check_iteration_timeout(timeout: Duration) -> Result<()> {
    if timeout.is_zero() {
        return Err(Error::usage("the iteration timeout must be longer than 0s")
            .with_hint("set [timeouts] iteration in longrun/config.toml, e.g. \"30m\""));
    }
    Ok(())
}
