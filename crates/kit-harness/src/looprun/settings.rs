//! The settings of one run: config.toml, the `kit loop` flags and goal.md's budget combined
//! into the caps and limits the loop enforces, with where each came from (see the module doc of
//! [`super`]: caps; how flags, config.toml and the budget combine is
//! [`crate::longrun::caps`]'s, which `kit status` reads too).

use super::*;
use crate::longrun::caps::{Budget, PlannedCaps};

impl Settings {
    /// The effective caps with their sources, as the loop's second line prints them:
    /// `caps: iterations 5 (goal.md budget), wall 4h00m (config.toml), …`.
    pub(super) fn describe_caps(&self) -> String {
        let src =
            |k: &str| self.sources.iter().find(|(n, _)| *n == k).map_or("config.toml", |(_, s)| *s);
        format!(
            "caps: iterations {} ({}), wall {} ({}), cost ${:.2} ({}), no progress {} ({}); \
             iteration timeout {} ({}), memory {} ({})",
            self.max_iterations,
            src("iterations"),
            format_duration(self.max_wall),
            src("wall"),
            self.max_cost_usd,
            src("cost"),
            self.max_no_progress,
            src("no_progress"),
            format_duration(self.timeout),
            src("timeout"),
            format_size(self.memory_max),
            src("memory"),
        )
    }

    /// The caps as [`durable::plan`] weighs a run's budget against them.
    pub(super) fn limits(&self) -> durable::Limits {
        durable::Limits {
            iterations: u64::from(self.max_iterations),
            wall: self.max_wall,
            cost_usd: self.max_cost_usd,
            no_progress: self.max_no_progress,
        }
    }

    pub(super) fn resolve(cfg: &Config, opts: &LoopOptions, budget: &Budget) -> Result<Settings> {
        let agent = opts.agent.clone().unwrap_or_else(|| cfg.agent.command.clone());
        let spec = AgentSpec::parse(&agent)?;
        // Flags were checked by `LoopOptions::check`, config.toml by `Config::load`.
        let timeout = opts.timeout.unwrap_or_else(|| cfg.iteration_timeout());
        crate::longrun::caps::check_iteration_timeout(timeout)?;
        // The stricter of (flag, else config.toml) and the goal's budget wins; say which.
        let caps = PlannedCaps::resolve(cfg, opts.max_iterations, opts.max_wall, budget);
        let from = |flag: bool| if flag { "flag" } else { "config.toml" };
        let [iterations, wall, cost] = caps.sources;
        let sources = vec![
            ("iterations", iterations),
            ("wall", wall),
            ("cost", cost),
            ("no_progress", "config.toml"),
            ("timeout", from(opts.timeout.is_some())),
            ("memory", from(opts.memory_max.is_some())),
        ];
        Ok(Settings {
            spec,
            setup: agent::AgentSetup::new(&cfg.agent, &[]),
            agent,
            max_iterations: caps.iterations,
            max_wall: caps.wall,
            max_cost_usd: caps.cost_usd,
            max_no_progress: caps.no_progress,
            timeout,
            grace: cfg.grace(),
            criterion_timeout: cfg.criterion_timeout(),
            memory_max: opts.memory_max.unwrap_or_else(|| cfg.memory_max()),
            fallback: cfg.fallback(),
            fallback_after_wait: cfg.fallback_after_wait(),
            fallback_after_no_progress: cfg.fallback_after_no_progress(),
            position: 0,
            sources,
        })
    }
}
