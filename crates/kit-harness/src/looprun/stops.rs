//! Why a run stops before or after an iteration: the lock lost, Ctrl-C, `kit pause`, a cap
//! reached, an agent that cannot start, an iteration that met only permission denials.

use super::*;

impl RunCtx<'_> {
    /// Before each iteration: the lock still ours, no stop asked, no PAUSE file, no cap reached.
    pub(super) fn should_stop(&mut self, p: &Prepared, tally: &Tally) -> Result<Option<Outcome>> {
        self.lock.verify()?;
        if self.lock.take_repairs() > 0 {
            self.cheat(self.last_iteration, "after_agent", "longrun/.lock", "lock_replaced")?;
            self.say(format!(
                "iteration {}: longrun/.lock was deleted or replaced; kit locked it again",
                self.last_iteration
            ));
        }
        if let Some(o) = self.interrupted() {
            return Ok(Some(o));
        }
        if let Some(paused) = pause::read(&self.project) {
            return self.paused(&paused, false).map(Some);
        }
        let caps = self.caps(p, tally);
        let Some((which, used, limit, words)) = caps.into_iter().find(|c| c.1 >= c.2) else {
            return Ok(None);
        };
        self.cap_reached(which, used, limit, &words, tally).map(Some)
    }

    /// Journal `paused` and say how the run stops: before an iteration, or (`at_once`) after
    /// `kit pause --now` stopped the agent of the last one.
    pub(super) fn paused(&mut self, paused: &pause::Paused, at_once: bool) -> Result<Outcome> {
        let by = match paused {
            pause::Paused::Record(r) => json!(r),
            pause::Paused::ByHand => Value::Null,
        };
        self.journal(Event::Paused(ev::Paused {
            iteration: self.last_iteration,
            now: at_once,
            by: json!(by),
        }))?;
        let how = if at_once {
            format!(
                "; the agent of iteration {} was stopped at once and its criteria not run",
                self.last_iteration
            )
        } else {
            String::new()
        };
        Ok(Outcome {
            name: "paused",
            code: EXIT_PAUSED,
            reason: format!(
                "longrun/PAUSE exists (paused {}){how}; kit resume (or rm longrun/PAUSE), then \
                 kit loop goes on with run {} from iteration {}",
                paused.describe(),
                self.run_id(),
                self.last_iteration + 1
            ),
        })
    }

    /// Each cap as (`which`, used, limit, words), in the order they are checked.
    pub(super) fn caps(
        &self,
        p: &Prepared,
        tally: &Tally,
    ) -> [(&'static str, f64, f64, String); 4] {
        let s = &p.settings;
        let elapsed = p.wall_used();
        let iterations = self.spent().iterations + self.iterations_run;
        [
            (
                "iterations",
                iterations as f64,
                f64::from(s.max_iterations),
                format!("{iterations} of {} iterations used", s.max_iterations),
            ),
            (
                "wall",
                elapsed.as_secs_f64(),
                s.max_wall.as_secs_f64(),
                format!(
                    "wall time {} of {}",
                    format_duration(elapsed),
                    format_duration(s.max_wall)
                ),
            ),
            (
                "cost",
                tally.cost_usd,
                s.max_cost_usd,
                format!("cost ${:.2} of ${:.2}", tally.cost_usd, s.max_cost_usd),
            ),
            (
                "no_progress",
                f64::from(tally.no_progress),
                f64::from(s.max_no_progress),
                format!("{} iterations in a row without progress", tally.no_progress),
            ),
        ]
    }

    /// Journal the `cap` event and say how the run ends.
    pub(super) fn cap_reached(
        &mut self,
        which: &str,
        used: f64,
        limit: f64,
        words: &str,
        tally: &Tally,
    ) -> Result<Outcome> {
        self.journal(Event::Cap(ev::Cap { which: which.into(), used, limit }))?;
        Ok(Outcome {
            name: "cap",
            code: EXIT_CAP,
            reason: format!(
                "{which} cap reached ({words}); {} of {} criteria pass at best",
                tally.best, tally.total
            ),
        })
    }

    /// The run's first agent could not be started by `sh`: exit 126 (found but not executable)
    /// or 127 (command not found), with no frozen file touched and the tree as the baseline
    /// left it. Every later iteration would fail the same way, so the run ends at once.
    pub(super) fn agent_failed(
        &self,
        p: &Prepared,
        tally: &Tally,
        run: &AgentRun,
    ) -> Option<Outcome> {
        let e = &run.ended;
        let code = e.exit.filter(|c| *c == 126 || *c == 127)?;
        if self.iterations_run != 1
            || e.timed_out
            || e.interrupted
            || e.memory_killed
            || !run.reverts.is_empty()
            || tally.baseline_tree.is_none()
            || tree_state(&self.project.root, &self.excludes) != tally.baseline_tree
        {
            return None;
        }
        let what = if code == 127 { "command not found" } else { "found but not executable" };
        Some(Outcome {
            name: "agent_failed",
            code: EXIT_BAD_INPUT,
            reason: format!(
                "the agent `{}` exited {code} ({what}) in iteration {} without changing anything; its output is in {}; {AGENT_FAILED_NEXT}",
                p.settings.agent, self.last_iteration, run.log
            ),
        })
    }

    /// An iteration whose only effect was denied tool calls (the tree as before the agent, no
    /// revert, denials listed): the next would be denied the same, so the run stops (exit 3,
    /// outcome `denied`) naming the setting that allows them.
    pub(super) fn only_denied(&self, run: &AgentRun) -> Option<Outcome> {
        if run.denials.is_empty() || run.tree_unchanged != Some(true) || !run.reverts.is_empty() {
            return None;
        }
        Some(Outcome {
            name: "denied",
            code: EXIT_CAP,
            reason: format!(
                "iteration {} changed nothing and Claude Code denied {} tool call{} ({}); next: {}, then kit loop",
                self.last_iteration,
                run.denials.len(),
                if run.denials.len() == 1 { "" } else { "s" },
                run.denials.iter().map(|d| d.pattern()).collect::<Vec<_>>().join(", "),
                agent::denial_setting(&run.denials)
            ),
        })
    }

    /// The outcome when kit was asked to stop by hand.
    pub(super) fn interrupted(&self) -> Option<Outcome> {
        let sig = self.stop.requested()?;
        Some(Outcome {
            name: "interrupted",
            code: signals::EXIT_INTERRUPTED,
            reason: format!(
                "stopped by {}; the running processes were ended and the frozen files restored; kit loop goes on from iteration {}",
                sig.as_str(),
                self.last_iteration + 1
            ),
        })
    }
}
