//! The settings of one run: config.toml, the `kit loop` flags and goal.md's budget combined
//! into the caps and limits the loop enforces, with where each came from (see the module doc of
//! [`super`]: caps), and the caps a plain `kit loop` would run with ([`planned_caps`], for
//! `kit status`).

use super::*;

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

    pub(super) fn resolve(
        cfg: &Config,
        opts: &LoopOptions,
        budget: &crate::goal::Budget,
    ) -> Result<Settings> {
        let agent = opts.agent.clone().unwrap_or_else(|| cfg.agent.command.clone());
        let spec = AgentSpec::parse(&agent)?;
        // Flags were checked by `LoopOptions::check`, config.toml by `Config::load`.
        let max_iterations = opts.max_iterations.unwrap_or(cfg.caps.max_iterations);
        let stricter_u32 = |a: u32, b: Option<u32>| b.map_or(a, |b| a.min(b));
        let stricter_dur = |a: Duration, b: Option<Duration>| b.map_or(a, |b| a.min(b));
        let max_cost_usd =
            budget.cost_usd.map_or(cfg.caps.max_cost_usd, |b| b.min(cfg.caps.max_cost_usd));
        let timeout = opts.timeout.unwrap_or_else(|| cfg.iteration_timeout());
        if timeout.is_zero() {
            return Err(Error::usage("the iteration timeout must be longer than 0s")
                .with_hint("set [timeouts] iteration in longrun/config.toml, e.g. \"30m\""));
        }
        // The stricter of (flag, else config.toml) and the goal's budget wins; say which.
        let from = |flag: bool| if flag { "flag" } else { "config.toml" };
        let max_wall_base = opts.max_wall.unwrap_or_else(|| cfg.max_wall());
        let sources = vec![
            (
                "iterations",
                if budget.iterations.is_some_and(|b| b < max_iterations) {
                    "goal.md budget"
                } else {
                    from(opts.max_iterations.is_some())
                },
            ),
            (
                "wall",
                if budget.wall.is_some_and(|b| b < max_wall_base) {
                    "goal.md budget"
                } else {
                    from(opts.max_wall.is_some())
                },
            ),
            (
                "cost",
                if budget.cost_usd.is_some_and(|b| b < cfg.caps.max_cost_usd) {
                    "goal.md budget"
                } else {
                    "config.toml"
                },
            ),
            ("no_progress", "config.toml"),
            ("timeout", from(opts.timeout.is_some())),
            ("memory", from(opts.memory_max.is_some())),
        ];
        Ok(Settings {
            spec,
            setup: agent::AgentSetup::new(&cfg.agent, &[]),
            agent,
            max_iterations: stricter_u32(max_iterations, budget.iterations),
            max_wall: stricter_dur(max_wall_base, budget.wall),
            max_cost_usd,
            max_no_progress: cfg.caps.max_no_progress,
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

/// The caps a `kit loop` with no flags would run with: the stricter of config.toml and the
/// goal's budget. What `kit status` shows before any run.
///
/// Errors: an agent command in config.toml that does not parse.
pub fn planned_caps(cfg: &Config, budget: &crate::goal::Budget) -> Result<PlannedCaps> {
    let s = Settings::resolve(cfg, &LoopOptions::default(), budget)?;
    let src = |k: &str| s.sources.iter().find(|(n, _)| *n == k).map_or("config.toml", |(_, v)| *v);
    Ok(PlannedCaps {
        iterations: s.max_iterations,
        wall: s.max_wall,
        cost_usd: s.max_cost_usd,
        no_progress: s.max_no_progress,
        sources: [src("iterations"), src("wall"), src("cost")],
    })
}

impl PlannedCaps {
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
