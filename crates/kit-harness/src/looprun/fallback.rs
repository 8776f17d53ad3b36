//! The fallback agent (issue 24): `[agent] fallback = ["codex", "fake:finish"]` in config.toml
//! lists the agents a run goes on with, in order, when the current one is stuck:
//!
//! - **a limit too far away**: the agent stopped on a usage or rate limit (see [`super::limits`])
//!   whose wait — until the reset plus the margin, or the backoff — is longer than `[agent]
//!   fallback_after_wait` (default 30m; `"0s"` never waits). The next agent retries the same
//!   iteration number at once: the limited attempt counted as no iteration, as a waited-out one
//!   does. A wait within the patience is waited out as without a fallback.
//! - **no progress**: `[agent] fallback_after_no_progress` iterations in a row without progress
//!   (default `[caps] max_no_progress`: where the run would stop at the cap, it goes on with the
//!   next agent instead). The next iteration runs the next agent.
//!
//! Each switch is journaled as `agent_switch` (`from`, `to`, `why`, `reason`, …), said on a line,
//! and starts the no-progress count again, for the new agent. Its first prompt says whom it
//! takes over from and why (`{{takeover}}` in the prompt), above the files every prompt carries
//! — progress.md, the last handoff (longrun/handoff.md) and the criteria's failures — which are
//! the state handed across. A run continued by a later loop process goes on with the agent of
//! its last `agent_switch` ([`RunCtx::resume_agent`]). When the list is used up the last agent
//! stays: its limits are waited out and the no-progress cap stops the run as before. A run never
//! goes back to an earlier agent, even after its limit resets.

use super::*;

/// Every agent of `[agent] fallback` must be startable, as the first one is
/// ([`AgentSpec::check_installed`]), before anything runs.
///
/// Errors: [`Error::Usage`] naming the agent, as [`AgentSpec::parse`] and `check_installed` do,
/// with where it is listed.
pub(super) fn check_installed(settings: &Settings, root: &Path) -> Result<()> {
    for spec in &settings.fallback {
        let named = |e: Error| match e {
            Error::Usage { msg, hint } => Error::Usage {
                msg: format!("[agent] fallback in longrun/config.toml: {msg}"),
                hint,
            },
            other => other,
        };
        AgentSpec::parse(spec).and_then(|s| s.check_installed(root)).map_err(named)?;
    }
    Ok(())
}

impl Settings {
    /// `fallback: codex, then fake:finish (after a limit wait over 30m, or 3 iterations without
    /// progress)`; None without a fallback.
    pub(super) fn describe_fallback(&self) -> Option<String> {
        if self.fallback.is_empty() {
            return None;
        }
        Some(format!(
            "fallback: {} (after a limit wait over {}, or {} iteration{} without progress)",
            self.fallback.iter().map(|a| format!("`{a}`")).collect::<Vec<_>>().join(", then "),
            limits::describe_wait(self.fallback_after_wait),
            self.fallback_after_no_progress,
            if self.fallback_after_no_progress == 1 { "" } else { "s" }
        ))
    }

    /// The next agent of the list and its place (1-based), if one is left.
    fn next_agent(&self) -> Option<(usize, &str)> {
        self.fallback.get(self.position).map(|a| (self.position + 1, a.as_str()))
    }

    /// Run on with the agent at `position` (1-based in `fallback`; 0: the first agent).
    fn take_agent(&mut self, position: usize, spec: &str) -> Result<()> {
        self.spec = AgentSpec::parse(spec)?;
        self.agent = spec.to_string();
        self.position = position;
        Ok(())
    }
}

impl RunCtx<'_> {
    /// After `limit` ended iteration `iteration`: when a fallback agent is left and the wait
    /// would pass `[agent] fallback_after_wait`, switch to it and return true; the caller then
    /// retries the iteration under its number. False: wait as usual.
    pub(super) fn fall_back_on_limit(
        &mut self,
        p: &mut Prepared,
        tally: &mut Tally,
        iteration: u64,
        limit: &limits::Limit,
    ) -> Result<bool> {
        if p.settings.next_agent().is_none() {
            return Ok(false);
        }
        let (want, backoff) = limits::wait_for(limit, crate::clock::now(), tally.limit_streak + 1);
        if want <= p.settings.fallback_after_wait {
            return Ok(false);
        }
        let what = match limit.kind {
            limits::Kind::Usage => "usage limit",
            limits::Kind::Rate => "rate limit",
        };
        let when = match (limit.until, backoff) {
            (Some(t), _) => format!(
                "which resets at {} (a wait of {})",
                limits::describe_until(t),
                limits::describe_wait(want)
            ),
            (None, _) => format!("with no reset time (backoff {})", limits::describe_wait(want)),
        };
        let reason = format!(
            "The agent `{}` stopped on its {what}, {when}: longer than the {} the run waits \
             ([agent] fallback_after_wait).",
            p.settings.agent,
            limits::describe_wait(p.settings.fallback_after_wait)
        );
        let until = limit.until.map(crate::clock::format_ts);
        self.switch_agent(p, tally, iteration, "limit", reason, until, true)?;
        // Not an iteration: the next agent retries it under the same number.
        tally.limit_streak = 0;
        self.iterations_run = self.iterations_run.saturating_sub(1);
        self.last_iteration = iteration - 1;
        Ok(true)
    }

    /// After iteration `iteration`'s criteria: when `[agent] fallback_after_no_progress`
    /// iterations in a row made no progress and a fallback agent is left, the next iteration
    /// runs it.
    pub(super) fn fall_back_on_no_progress(
        &mut self,
        p: &mut Prepared,
        tally: &mut Tally,
        iteration: u64,
    ) -> Result<()> {
        let n = tally.no_progress;
        if n < p.settings.fallback_after_no_progress || p.settings.next_agent().is_none() {
            return Ok(());
        }
        let reason = format!(
            "The agent `{}` made no progress in {n} iteration{} in a row ([agent] \
             fallback_after_no_progress): the criteria failed the same way.",
            p.settings.agent,
            if n == 1 { "" } else { "s" }
        );
        self.switch_agent(p, tally, iteration + 1, "no_progress", reason, None, false)
    }

    /// Journal `agent_switch` and go on with the next agent of the list.
    #[allow(clippy::too_many_arguments)]
    fn switch_agent(
        &mut self,
        p: &mut Prepared,
        tally: &mut Tally,
        iteration: u64,
        why: &str,
        reason: String,
        until: Option<String>,
        retry: bool,
    ) -> Result<()> {
        let Some((position, next)) = p.settings.next_agent() else { return Ok(()) };
        let next = next.to_string();
        let from = p.settings.agent.clone();
        self.journal(Event::AgentSwitch(ev::AgentSwitch {
            iteration,
            from: from.clone(),
            to: next.clone(),
            why: why.into(),
            reason: reason.clone(),
            until,
            retry,
            position: position as u64,
        }))?;
        p.settings.take_agent(position, &next)?;
        tally.no_progress = 0;
        tally.takeover = Some(reason.clone());
        self.say(format!(
            "loop: {} iteration {iteration} runs `{next}` (fallback {position} of {}): {}",
            if retry { "switching agents;" } else { "switching agents:" },
            p.settings.fallback.len(),
            reason.trim_end_matches('.')
        ));
        Ok(())
    }

    /// A continued run goes on with the agent of its last `agent_switch`, when config.toml
    /// still lists it as a fallback; otherwise with the first agent, saying so.
    pub(super) fn resume_agent(
        &mut self,
        p: &mut Prepared,
        events: &[crate::longrun::event::Entry],
    ) -> Result<()> {
        let Some(s) = events.iter().rev().find_map(|e| match &e.event {
            Event::AgentSwitch(s) => Some(s.clone()),
            _ => None,
        }) else {
            return Ok(());
        };
        match p.settings.fallback.iter().position(|a| *a == s.to) {
            Some(i) => {
                p.settings.take_agent(i + 1, &s.to)?;
                self.say(format!(
                    "loop: the run goes on with `{}` (fallback {} of {}, since iteration {})",
                    s.to,
                    i + 1,
                    p.settings.fallback.len(),
                    s.iteration
                ));
            }
            None => self.say(format!(
                "loop: the run had switched to `{}`, which [agent] fallback no longer lists; \
                 going on with `{}`",
                s.to, p.settings.agent
            )),
        }
        Ok(())
    }
}
