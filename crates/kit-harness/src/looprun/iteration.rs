//! One iteration of the loop: the prompt, the agent run in its own process group under the
//! timeout and the memory cap, its usage priced, the frozen files restored, the criteria run.

use super::*;

/// End any process a criterion left running in the background (kit being a subreaper, it was
/// re-parented to kit), so nothing edits the tree after it was verified.
pub(super) fn end_strays() -> Result<()> {
    procs::end_tree(std::process::id() as i32, 0, Duration::from_secs(10)).map(|_| ()).map_err(
        |alive| Error::internal(format!("processes {alive:?} left by a criterion survive SIGKILL")),
    )
}

pub(super) fn describe_end(e: &agent::Ended, wall_cut: bool, enforcer: Enforcer) -> String {
    if e.interrupted {
        "stopped by hand".into()
    } else if e.cost_capped.is_some() {
        "stopped at the cost cap".into()
    } else if e.paused {
        "stopped at once by kit pause --now".into()
    } else if e.memory_killed {
        format!("killed at the memory cap by the {}", enforcer.name())
    } else if wall_cut {
        "stopped at the wall-time cap".into()
    } else if e.timed_out {
        "killed at the timeout".into()
    } else if let Some(code) = e.exit {
        format!("exited {code}")
    } else {
        format!("ended by signal {}", e.signal.unwrap_or(0))
    }
}

impl RunCtx<'_> {
    /// Step 4, once: prompt, agent, restore, criteria on a verified tree, progress.
    pub(super) fn iteration(
        &mut self,
        p: &mut Prepared,
        tally: &mut Tally,
    ) -> Result<Option<Outcome>> {
        // A question of the agent's still unanswered: no agent runs until a person answers.
        if let Some(o) = self.asks_waiting(tally)? {
            return Ok(Some(o));
        }
        let iteration = self.last_iteration + 1;
        self.last_iteration = iteration;
        self.iterations_run += 1;
        let run = self.run_agent(p, tally, iteration)?;
        tally.asks_to_check |= self.take_asks(iteration)?;
        tally.reverts.clear();
        tally.reverts.extend(run.reverts.iter().map(describe_revert));
        if let Some(o) = self.interrupted() {
            return Ok(Some(o));
        }
        if run.ended.paused {
            let paused = pause::read(&self.project).unwrap_or(pause::Paused::ByHand);
            return self.paused(&paused, true).map(Some);
        }
        if run.wall_cut {
            // The wall cap ended the agent; the criteria would only run past it.
            let [_, (which, used, limit, words), ..] = self.caps(p, tally);
            return self.cap_reached(which, used, limit, &words, tally).map(Some);
        }
        if let Some(by) = run.cost_cap {
            // The cost cap ended the agent (or Claude Code ended itself at the budget kit gave
            // it): the run stops here, as at the wall cap.
            return self.cost_cap_reached(p, tally, iteration, &run, by).map(Some);
        }
        if let Some(limit) = self.limit_of(p, &run) {
            if self.fall_back_on_limit(p, tally, iteration, &limit)? {
                return Ok(None);
            }
            return self.wait_out_limit(p, tally, iteration, &limit);
        }
        tally.limit_streak = 0;
        if let Some(o) = self.agent_failed(p, tally, &run) {
            return Ok(Some(o));
        }
        if let Some(o) = self.only_denied(&run) {
            return Ok(Some(o));
        }

        let c = self.check(p, iteration, "after_criteria")?;
        if let Some(o) = self.interrupted() {
            return Ok(Some(o));
        }
        if !c.late.is_empty() {
            self.say(format!(
                "iteration {iteration}: reverted {} (changed while the criteria ran)",
                list_reverts(&c.late)
            ));
        }
        tally.reverts.extend(c.late.iter().map(describe_revert));
        let (commit, dirty) = git_head(&self.project.root, &self.excludes);
        let closer = tally.seen_failures.insert(failure_fingerprint(&c.views));
        let progress = c.passed > tally.best || closer;
        tally.no_progress = if progress { 0 } else { tally.no_progress + 1 };
        tally.best = tally.best.max(c.passed);
        tally.failures = c.failures();
        self.journal(Event::Criteria(ev::Criteria {
            iteration,
            results: json!(c.results),
            passed: c.passed as u64,
            total: c.views.len() as u64,
            commit,
            dirty,
            verified: c.late.is_empty(),
            progress,
            no_progress: tally.no_progress.into(),
        }))?;
        self.say(format!(
            "iteration {iteration}: {} of {} criteria pass{}",
            c.passed,
            c.views.len(),
            if c.late.is_empty() { "" } else { " (not counted: the tree changed meanwhile)" }
        ));
        // The agent asked something in this iteration: the run stops for the answer.
        if let Some(o) = self.asks_waiting(tally)? {
            return Ok(Some(o));
        }
        if !c.all_pass() {
            self.fall_back_on_no_progress(p, tally, iteration)?;
            return Ok(None);
        }
        self.say(c.canary_line());
        let done = Outcome {
            name: "done",
            code: EXIT_OK,
            reason: format!(
                "every criterion passes ({} of {}) at iteration {iteration}",
                c.passed,
                c.views.len()
            ),
        };
        self.accept_done(p, tally, iteration, &c, done)
    }

    /// Write the prompt, run the agent under its timeout and memory cap, end its leftovers,
    /// restore the frozen files, journal `agent_end` (with usage and cost) and the cheats.
    /// Returns the reverts and how the agent ended.
    pub(super) fn run_agent(
        &mut self,
        p: &mut Prepared,
        tally: &mut Tally,
        iteration: u64,
    ) -> Result<AgentRun> {
        let nnn = format!("{iteration:03}");
        let prompt_file = self.project.runs().join(format!("{nnn}.prompt.md"));
        let log = self.project.runs().join(format!("{nnn}.log"));
        let (messages, new_messages) = self.inbox_for(iteration)?;
        let items: Vec<String> = messages.iter().map(inbox::Message::prompt_item).collect();
        let takeover = tally.takeover.take();
        let text = prompt::render(&prompt::PromptInput {
            iteration,
            root: &self.project.root,
            goal: &self.project.goal(),
            progress: &self.project.progress(),
            handoff: &self.project.handoff(),
            failures: &tally.failures,
            reverts: &tally.reverts,
            denials: &tally.denials,
            messages: &items,
            takeover: takeover.as_deref(),
        });
        // The last agent may have removed `longrun/.runs/` (`git clean -fdx`, `rm -rf longrun`).
        crate::atomic::create_dir_all(&self.project.runs())?;
        crate::atomic::write_atomic(&prompt_file, text.as_bytes())?;
        self.journal(Event::IterationStart(ev::IterationStart {
            iteration,
            prompt: rel(&self.project, &prompt_file),
        }))?;
        if !new_messages.is_empty() {
            self.journal(Event::Told(ev::Told {
                iteration,
                messages: new_messages.iter().map(inbox::Message::to_told).collect(),
            }))?;
            let n = new_messages.len();
            self.say(format!(
                "iteration {iteration}: the prompt carries {n} message{} from {}",
                if n == 1 { "" } else { "s" },
                inbox::FILE
            ));
        }
        let s = &p.settings;
        let remaining = s.max_wall.saturating_sub(p.wall_used());
        let timeout = s.timeout.min(remaining).max(Duration::from_secs(1));
        let pause_path = self.project.pause();
        let tree_before = tree_state(&self.project.root, &self.excludes);
        // Claude Code is given what is left of the run's budget as `--max-budget-usd`.
        let mut setup = s.setup.clone();
        if s.spec == AgentSpec::Claude {
            setup.max_budget_usd = agent::budget_arg(s.max_cost_usd - tally.cost_usd);
        }
        let launch = Launch {
            spec: &s.spec,
            setup: &setup,
            root: &self.project.root,
            prompt_file: &prompt_file,
            iteration,
            run_key: &self.run_key,
            log: &log,
            timeout,
            grace: s.grace,
            memory_max: s.memory_max,
            enforcer: p.enforcer,
            stop: Some(self.stop),
            pause_file: Some(&pause_path),
            longrun: Some(&self.project.dir),
            prices: Some(&p.prices),
            cost_cap: Some(agent::CostCap { spent_usd: tally.cost_usd, cap_usd: s.max_cost_usd }),
        };
        let journal = self.journal.clone();
        let log_rel = rel(&self.project, &log);
        let boot = procs::boot_id();
        let out = &mut *self.out;
        // The journal is append-only: from here on, what it holds must stay. Sealed before the
        // agent exists, so that nothing it did can be taken for kit's own record.
        p.guard.seal_journal()?;
        let mut start_record = None;
        let sealed_len = journal_len(&self.project.journal());
        let mut own = None;
        let ended = agent::run(&launch, &mut |started| {
            let record = Event::AgentStart(ev::AgentStart {
                iteration,
                pid: started.pid,
                pgid: started.pgid,
                starttime: started.starttime,
                boot_id: boot.clone(),
                command: started.command.clone(),
                log: log_rel.clone(),
            });
            // The agent already runs: its lines may come before or after this one, so kit
            // keeps the exact range of its own line rather than a length.
            own = Some(journal.append_at(&record)?.1);
            start_record = Some(record);
            let _ = writeln!(
                out,
                "iteration {iteration}: agent started (pid {}, pgid {})",
                started.pid, started.pgid
            );
            let _ = out.flush();
            Ok(())
        })?;
        // Restore before kit writes again: a journal the agent cut is put back first, and then
        // ends before this iteration's agent_start, which is written again.
        let forged = cut_appends(&self.project.journal(), sealed_len, own.as_slice())?;
        let reverts = restore(&p.guard)?;
        if forged {
            self.cheat(iteration, "after_agent", "longrun/journal.jsonl", "journal_appended")?;
            self.say(format!(
                "iteration {iteration}: removed lines the agent appended to longrun/journal.jsonl"
            ));
        }
        let journal_rel = rel_path(&self.project, &self.project.journal());
        if reverts.iter().any(|r| Path::new(&r.path) == journal_rel) {
            if let Some(record) = start_record {
                self.journal(record)?;
            }
        }
        let wall_cut = ended.timed_out && timeout < p.settings.timeout;
        let mut usage = agent::read_usage(&log, p.settings.spec.format());
        let errors = match &p.settings.spec {
            AgentSpec::Codex => {
                // The stream never names the model: config.toml's `-m`, else the rollout.
                if let Some(u) = usage.as_mut().filter(|u| u.model.is_none()) {
                    u.model = agent::codex_model(&log, &p.settings.setup);
                }
                agent::codex_errors(&log)
            }
            AgentSpec::FakeCodex(_) => {
                // The fake is given no `-m`: its rollout names the model.
                if let Some(u) = usage.as_mut().filter(|u| u.model.is_none()) {
                    u.model = agent::codex_thread_id(&log)
                        .and_then(|id| agent::codex_rollout_model(&agent::codex_home()?, &id));
                }
                agent::codex_errors(&log)
            }
            _ => Vec::new(),
        };
        let mut priced = usage.as_ref().map(|u| agent::price(u, &p.prices)).unwrap_or_default();
        // No final usage (the agent was killed, or crashed): what its stream showed it spend.
        let streamed = &ended.streamed;
        if usage.is_none() && streamed.api_calls > 0 {
            usage = Some(streamed.usage.clone());
            priced =
                agent::Priced { cost_usd: streamed.cost_usd, unpriced: streamed.unpriced.clone() };
        }
        if !priced.unpriced.is_empty() {
            self.journal(Event::Unpriced(ev::Unpriced {
                iteration,
                models: priced.unpriced.clone(),
                reported_cost_usd: usage.as_ref().and_then(|u| u.reported_cost_usd),
            }))?;
            self.say(format!(
                "iteration {iteration}: {} not in kit's price table: counted ${:.4} (the agent's own \
                 figure, 0 if it gave none), so the cost cap cannot be trusted; add \
                 [prices.\"MODEL\"] to longrun/config.toml{}",
                priced.unpriced.join(", "),
                priced.cost_usd,
                if matches!(p.settings.spec, AgentSpec::Codex) {
                    " or set [agent] model (passed as -m)"
                } else {
                    ""
                }
            ));
        }
        tally.cost_before = tally.cost_usd;
        tally.cost_usd += priced.cost_usd;
        self.journal(Event::AgentEnd(ev::AgentEnd {
            iteration,
            exit: ended.exit,
            signal: ended.signal,
            timed_out: ended.timed_out && !wall_cut,
            wall_cut,
            interrupted: ended.interrupted,
            paused: ended.paused,
            cost_capped: ended.cost_capped.is_some(),
            memory_killed: ended.memory_killed,
            enforcer: p.enforcer.name().into(),
            peak_rss_bytes: ended.peak_rss_bytes,
            leftovers_killed: ended.leftovers_killed.clone(),
            usage: json!(usage),
            cost_usd: priced.cost_usd,
            api_calls: ended.streamed.api_calls,
            duration_ms: ended.duration_ms,
            errors: errors.clone(),
        }))?;
        let cost = if priced.cost_usd > 0.0 {
            format!(", ${:.4}", priced.cost_usd)
        } else {
            String::new()
        };
        let said = match errors.last() {
            Some(e) => format!("; codex: {e}"),
            None => String::new(),
        };
        self.say(format!(
            "iteration {iteration}: agent {} after {}{cost}{said}",
            describe_end(&ended, wall_cut, p.enforcer),
            format_duration(Duration::from_millis(ended.duration_ms)),
        ));
        // The ledger (issue 24) is a courtesy to the user's totals: it never stops the loop.
        if let Err(e) = super::ledger::record(&p.settings.spec, &log, &p.prices) {
            self.say(format!(
                "iteration {iteration}: warning: the ledger was not written ({e}); \
                 kit measure --ledger adds these calls later"
            ));
        }
        let denials = match p.settings.spec {
            AgentSpec::Codex | AgentSpec::FakeCodex(_) => Vec::new(),
            _ => agent::read_denials(&log),
        };
        if !denials.is_empty() {
            self.journal(Event::PermissionDenials(ev::PermissionDenials {
                iteration,
                denials: json!(denials),
                setting: "agent.allowed_tools".into(),
                suggest: agent::denial_setting(&denials),
            }))?;
            self.say(format!(
                "iteration {iteration}: Claude Code denied {} tool call{}: {}; to allow: {}",
                denials.len(),
                if denials.len() == 1 { "" } else { "s" },
                denials.iter().map(|d| d.pattern()).collect::<Vec<_>>().join(", "),
                agent::denial_setting(&denials)
            ));
        }
        tally.denials = denials.iter().map(agent::Denial::describe).collect();
        self.cheats(&reverts, iteration, "after_agent")?;
        if !reverts.is_empty() {
            self.say(format!("iteration {iteration}: reverted {}", list_reverts(&reverts)));
        }
        if ended.log_recovered {
            self.cheat(iteration, "after_agent", &log_rel, "run_log_deleted")?;
            self.say(format!(
                "iteration {iteration}: the agent deleted {log_rel}; kit wrote it again from its open copy"
            ));
        }
        let tree_unchanged = tree_before
            .is_some()
            .then(|| tree_state(&self.project.root, &self.excludes) == tree_before);
        let cost_cap = if ended.cost_capped.is_some() {
            Some(CostCapBy::Kit)
        } else if p.settings.spec == AgentSpec::Claude && agent::stopped_at_budget(&log) {
            Some(CostCapBy::Claude)
        } else {
            None
        };
        Ok(AgentRun { reverts, ended, wall_cut, log: log_rel, denials, tree_unchanged, cost_cap })
    }

    /// The inbox's messages for `iteration`'s prompt, and those of them that are new (to be
    /// journaled as `told`): the messages an earlier attempt of this iteration number was given
    /// (a limit waited out, an agent switch), then those no `told` delivered yet (see
    /// [`inbox`]). An inbox that cannot be read delivers nothing this time, and says why.
    fn inbox_for(&mut self, iteration: u64) -> Result<(Vec<inbox::Message>, Vec<inbox::Message>)> {
        let messages = match inbox::read(&self.project) {
            Ok(m) => m,
            Err(e) => {
                self.say(format!("iteration {iteration}: no message delivered: {e}"));
                return Ok((Vec::new(), Vec::new()));
            }
        };
        if messages.is_empty() {
            return Ok((Vec::new(), Vec::new()));
        }
        let events = crate::longrun::journal::read(&self.project.journal())?.entries;
        let new = inbox::pending(&messages, &events);
        let mut all = inbox::for_iteration(&events, iteration);
        all.extend(new.iter().cloned());
        Ok((all, new))
    }

    /// The cost cap ended iteration `iteration`: journal `cost_cap` with the figures, say them,
    /// and stop as at any cap (`cap` `cost`, exit 3).
    fn cost_cap_reached(
        &mut self,
        p: &Prepared,
        tally: &Tally,
        iteration: u64,
        run: &AgentRun,
        by: CostCapBy,
    ) -> Result<Outcome> {
        let iteration_usd = tally.cost_usd - tally.cost_before;
        let at = run.ended.cost_capped.clone().unwrap_or_default();
        let s = &run.ended.streamed;
        self.journal(Event::CostCap(ev::CostCap {
            iteration,
            by: by.name().into(),
            spent_usd: tally.cost_before,
            iteration_usd,
            used: tally.cost_usd,
            limit: p.settings.max_cost_usd,
            api_calls: s.api_calls,
            at_stop: json!(at),
            source: s.source.into(),
        }))?;
        let calls = |n: u64| format!("{n} API call{}", if n == 1 { "" } else { "s" });
        let how = match by {
            CostCapBy::Kit => format!(
                "kit ended the agent's process group after {} (${:.2} this iteration, the last call ${:.2})",
                calls(at.api_calls),
                at.iteration_usd,
                at.last_call_usd
            ),
            CostCapBy::Claude => format!(
                "Claude Code stopped itself at --max-budget-usd after {} (${:.2} this iteration by kit's prices)",
                calls(s.api_calls),
                iteration_usd
            ),
        };
        self.say(format!(
            "iteration {iteration}: cost cap inside the iteration: ${:.2} spent of ${:.2}; {how}",
            tally.cost_usd, p.settings.max_cost_usd
        ));
        let [_, _, (which, used, limit, words), _] = self.caps(p, tally);
        self.cap_reached(which, used, limit, &words, tally)
    }
}

/// Who ended an iteration at the cost cap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CostCapBy {
    /// kit, reading the agent's spend as it streamed.
    Kit,
    /// Claude Code itself, at the `--max-budget-usd` kit passed.
    Claude,
}

impl CostCapBy {
    fn name(self) -> &'static str {
        match self {
            CostCapBy::Kit => "kit",
            CostCapBy::Claude => "claude",
        }
    }
}
