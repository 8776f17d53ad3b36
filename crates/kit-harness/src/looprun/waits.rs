//! Waiting out a usage or rate limit the agent reported (see [`super::limits`] for how one is
//! recognised): the sleep until the reset, bounded by the wall cap and interruptible, journaled
//! as `limit_wait` / `limit_resume`.

use super::*;

impl RunCtx<'_> {
    /// The limit the agent's run ended on, if it ended by itself (a timeout, the memory cap, a
    /// pause or a stop is never a limit) and its output says so ([`limits::classify_log`]).
    pub(super) fn limit_of(&self, p: &Prepared, run: &AgentRun) -> Option<limits::Limit> {
        let e = &run.ended;
        if e.timed_out || e.memory_killed || e.interrupted || e.paused || run.wall_cut {
            return None;
        }
        let dialect = match p.settings.spec.format() {
            agent::OutputFormat::ClaudeStreamJson => limits::Dialect::Claude,
            agent::OutputFormat::CodexJson => limits::Dialect::Codex,
            agent::OutputFormat::Detect => limits::Dialect::Either,
        };
        let log = self.project.root.join(&run.log);
        let mut limit = limits::classify_log(&log, dialect, crate::clock::now())?;
        // Codex's text may give no reset ("try again later"); its rollout's last rate-limit
        // snapshot then does, when a window is at 100 %.
        if p.settings.spec.is_codex() && limit.kind == limits::Kind::Usage && limit.until.is_none()
        {
            limit.until = agent::codex_last_rate_limits(&log)
                .and_then(|r| limits::codex_reset_from_rate_limits(&r));
        }
        Some(limit)
    }

    /// Wait out `limit` after iteration `iteration`: journal `limit_wait`, sleep on the kit
    /// clock until the reset (plus a margin) or for the backoff, bounded by the wall cap and cut
    /// short by `kit pause` or a stop signal, journal `limit_resume`, and give the iteration
    /// number back so the next one retries it. Returns the outcome when the run stops.
    pub(super) fn wait_out_limit(
        &mut self,
        p: &mut Prepared,
        tally: &mut Tally,
        iteration: u64,
        limit: &limits::Limit,
    ) -> Result<Option<Outcome>> {
        tally.limit_streak += 1;
        let now = crate::clock::now();
        let (want, backoff) = limits::wait_for(limit, now, tally.limit_streak);
        let remaining = p.settings.max_wall.saturating_sub(p.wall_used());
        let beyond = want > remaining;
        let wait = want.min(remaining);
        let agent = match p.settings.spec {
            AgentSpec::Claude => "claude",
            AgentSpec::Codex => "codex",
            AgentSpec::Fake(_) => "fake",
            AgentSpec::FakeCodex(_) => "fake-codex",
            AgentSpec::Shell(_) => "command",
        };
        self.journal(Event::LimitWait(ev::LimitWait {
            iteration,
            agent: agent.into(),
            kind: limit.kind.name().into(),
            until: limit.until.map(crate::clock::format_ts),
            wait_s: wait.as_secs(),
            backoff,
            message: limit.message.clone(),
        }))?;
        let what = match limit.kind {
            limits::Kind::Usage => "usage limit",
            limits::Kind::Rate => "rate limit",
        };
        let line = match (limit.until, beyond) {
            (Some(t), false) => format!(
                "loop: {what} reached; waiting until {} ({}), bounded by the wall cap",
                limits::describe_until(t),
                limits::describe_wait(wait)
            ),
            (Some(t), true) => format!(
                "loop: {what} reached; it resets at {}, after the wall cap ends: waiting out the remaining {}",
                limits::describe_until(t),
                limits::describe_wait(wait)
            ),
            (None, _) => format!(
                "loop: {what} reached, no reset time given; backing off {}, bounded by the wall cap",
                limits::describe_wait(wait)
            ),
        };
        self.say(line.clone());
        let env = [
            ("KIT_OUTCOME", line),
            ("KIT_RUN_ID", self.run_id().to_string()),
            ("KIT_ITERATION", iteration.to_string()),
        ];
        notify::fire(&self.project, &self.journal, "limit", &env);
        let stop = self.stop;
        let pause_file = self.project.pause();
        let step =
            if crate::clock::is_fake() { Duration::from_secs(60) } else { Duration::from_secs(1) };
        let (slept, cut) =
            limits::sleep_interruptibly(wait, step, &mut |d| crate::clock::sleep(d), &mut || {
                if stop.requested().is_some() {
                    Some("interrupted")
                } else if pause_file.exists() {
                    Some("paused")
                } else {
                    None
                }
            });
        if crate::clock::is_fake() {
            p.waited += slept;
            self.waited += slept;
        }
        let cut = cut.or(beyond.then_some("wall"));
        self.journal(Event::LimitResume(ev::LimitResume {
            iteration,
            waited_s: slept.as_secs(),
            cut_short: cut.map(str::to_string),
        }))?;
        // Not an iteration: the next one has the same number.
        self.iterations_run = self.iterations_run.saturating_sub(1);
        self.last_iteration = iteration - 1;
        match cut {
            Some("interrupted") => Ok(self.interrupted()),
            Some("paused") => {
                let paused = pause::read(&self.project).unwrap_or(pause::Paused::ByHand);
                self.paused(&paused, false).map(Some)
            }
            Some(_) => {
                let [_, (which, used, limit_s, words), ..] = self.caps(p, tally);
                let mut o = self.cap_reached(which, used, limit_s, &words, tally)?;
                if let Some(t) = limit.until {
                    o.reason = format!(
                        "{}; the {what} resets at {}, after the wall cap ends",
                        o.reason,
                        limits::describe_until(t)
                    );
                }
                Ok(Some(o))
            }
            None => {
                self.say(format!(
                    "loop: waited {} for the {what}; retrying iteration {iteration}",
                    limits::describe_wait(slept)
                ));
                Ok(None)
            }
        }
    }

    /// The run's last loop process stopped while waiting out a limit (`w`, its `limit_wait`;
    /// see [`durable::pending_limit`]): when the recorded reset is still ahead on the kit clock,
    /// wait out the rest of it before the agent runs again (a real agent would only meet the
    /// limit again), bounded by the wall cap like any wait. A backoff without a reset time is
    /// not repeated: the time the loop was down counts for it.
    pub(super) fn finish_pending_wait(
        &mut self,
        p: &mut Prepared,
        tally: &mut Tally,
        w: &crate::longrun::event::LimitWait,
    ) -> Result<Option<Outcome>> {
        let until = w
            .until
            .as_deref()
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
            .filter(|t| *t > crate::clock::now());
        let Some(until) = until else { return Ok(None) };
        let iteration = w.iteration;
        let kind = match w.kind.as_str() {
            "rate" => limits::Kind::Rate,
            _ => limits::Kind::Usage,
        };
        self.say(format!(
            "loop: the run's last loop stopped while waiting for the {} limit until {}; \
             waiting out the rest before iteration {iteration}",
            kind.name(),
            limits::describe_until(until)
        ));
        let message = w.message.clone();
        let limit = limits::Limit { kind, until: Some(until), message };
        self.wait_out_limit(p, tally, iteration, &limit)
    }
}
