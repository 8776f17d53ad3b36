//! Where the loop accepts done: the flake guard, then the review criteria (layered verification,
//! DESIGN §4 and §6). A check in which every criterion passed on a verified tree (see
//! `Check::all_pass`) is only a *candidate*; done is accepted when, in this order:
//!
//! 1. **Confirmation** (`[goal] confirm_runs` in config.toml, default 2): the criteria have run
//!    `confirm_runs` times in a row on the same tree and every criterion passed every time — the
//!    candidate's check is the first run, so the default runs them once more; 1 turns the guard
//!    off. Each extra run ends the strays and restores the frozen files like any check (a revert
//!    then refuses done: the tree changed under the criteria). The runs stop at the first failing
//!    one. A criterion that passed in one run and failed in another **flaps**: journaled `flap`,
//!    a line in the output, done refused, and the next prompt names it. The same criterion
//!    flapping a second time in this run stops the loop (exit 3, outcome `flapping`,
//!    "criterion goal.md:N flaps; fix the test or the environment") instead of burning the
//!    remaining iterations on luck; the run stays unfinished, so after the fix `kit loop` goes on.
//!    A clean confirmation is journaled (`confirm`) and says nothing.
//! 2. **The revert probe** ([`super::probe`]): the function criteria run on the run's start
//!    tree with the frozen files, in a scratch folder; each must fail. One that passes there
//!    refuses done ("the criteria pass without the work"), journaled `revert_probe` either way.
//!    Skipped for done at the run's first baseline (its tree is the start tree), which only
//!    `--allow-green-start` or a goal with no function criterion allows.
//! 3. **Reviews** (`- review:` items of goal.md, see [`crate::goal::review`]): only now, with the
//!    deterministic floor passing, each review's evaluator (`[review] evaluator`) judges it, one
//!    after the other. `pass` → the next one; `fail` (or a malformed answer) → done refused, the
//!    reason goes to the next prompt; `ask` → the loop stops (exit 3, outcome `review_ask`) with
//!    the evaluator's question, a decision for a human (`kit status` shows it); the run stays
//!    unfinished. A review can only refuse done: it never runs while a test fails.
//! 4. **Human criteria** (`- human:` items, see [`crate::looprun::ask`]): each must be approved by a
//!    person (`kit approve N`) for the tree as it is now. One not asked yet for this tree is
//!    asked (`asked`, numbered) and the loop stops "needs you" (exit 6, `needs_you`); one
//!    rejected on this tree refuses done, the person's note going to the next prompt.
//!
//! Journal events written here: `confirm`, `flap`, `revert_probe`, `review` (see the table in
//! [`crate::longrun::event`]).

use std::time::Duration;

use super::{end_strays, restore, Check, Outcome, Prepared, RunCtx, Tally};
use crate::error::{Error, Result, EXIT_CAP};
use crate::goal::review::{self, Verdict};
use crate::goal::Goal;
use crate::longrun::config::Config;
use crate::longrun::event::{self as ev, Event};
use crate::longrun::Project;

/// A criterion that flapped this many times in one run (since its last `flapping` stop, across
/// loop processes) stops the loop.
pub const FLAPS_TO_STOP: u32 = 2;

/// The settings of the layers above the candidate check, fixed at the start of the run.
#[derive(Debug)]
pub(super) struct Layers {
    confirm_runs: u32,
    evaluator: String,
    review_timeout: Duration,
    /// frozen.toml's `base_commit` (empty when there is none): where the evaluator's diff starts.
    base: String,
}

impl Layers {
    /// Read what the layers need from `cfg` and frozen.toml.
    ///
    /// Errors: [`Error::Input`] naming `goal.md:LINE` when the goal has a review criterion and
    /// config.toml sets no `[review] evaluator` (exit 2, before anything runs); a malformed
    /// frozen.toml as [`crate::frozen::manifest::Manifest::load`].
    pub(super) fn new(cfg: &Config, goal: &Goal, project: &Project) -> Result<Layers> {
        if let (Some(r), true) = (goal.reviews.first(), cfg.review.evaluator.trim().is_empty()) {
            return Err(Error::input(
                project.goal(),
                Some(r.line),
                "a review criterion needs an evaluator, and config.toml sets none",
            )
            .with_hint(
                "set [review] evaluator = \"COMMAND\" in longrun/config.toml (it must print \
                 VERDICT: pass|fail|ask REASON; see kit lesson 2), or remove the review",
            ));
        }
        let base = crate::frozen::manifest::Manifest::load(&project.frozen())?.base_commit;
        Ok(Layers {
            confirm_runs: cfg.goal.confirm_runs.max(1),
            evaluator: cfg.review.evaluator.clone(),
            review_timeout: cfg.review_timeout(),
            base,
        })
    }
}

impl RunCtx<'_> {
    /// `first` passed every criterion on a verified tree at `iteration`: confirm it, then run
    /// the reviews. Returns `done` when accepted, another outcome when the loop must stop
    /// (a criterion flapping again, a review that asks), or None when done is refused and the
    /// loop goes on (`tally.failures` then says why, for the next prompt).
    pub(super) fn accept_done(
        &mut self,
        p: &mut Prepared,
        tally: &mut Tally,
        iteration: u64,
        first: &Check,
        done: Outcome,
    ) -> Result<Option<Outcome>> {
        // A message no agent got yet (an answer to the agent's `kit ask`, a `kit tell` sent
        // during the last iteration) is a person's word for the agent: it hears it before the
        // run can end. (An agent that writes to the inbox itself keeps its run going, to a cap.)
        let unheard = crate::longrun::inbox::waiting(&self.project).unwrap_or(0);
        if unheard > 0 {
            let at = if iteration == 0 {
                "baseline".to_string()
            } else {
                format!("iteration {iteration}")
            };
            self.say(format!(
                "{at}: done waits: {unheard} message{} in {} (an answer to the agent's \
                 question, kit tell) reached no agent yet; the agent runs with {} first",
                if unheard == 1 { "" } else { "s" },
                crate::longrun::inbox::FILE,
                if unheard == 1 { "it" } else { "them" }
            ));
            return Ok(None);
        }
        let Some(outcome) = self.confirm(p, tally, iteration, first)? else {
            return Ok(None);
        };
        if outcome.is_some() {
            return Ok(outcome);
        }
        if let Some(o) = self.interrupted() {
            return Ok(Some(o));
        }
        if !tally.skip_probe && !self.revert_probe(p, tally, iteration)? {
            return Ok(self.interrupted());
        }
        match self.reviews(p, tally, iteration, first)? {
            Some(o) => Ok(o),
            None => self.humans(p, tally, iteration, done),
        }
    }

    /// The flake guard. Some(None) when confirmed, Some(Some(stop)) when the loop must stop,
    /// None when done is refused and the loop goes on.
    fn confirm(
        &mut self,
        p: &mut Prepared,
        tally: &mut Tally,
        iteration: u64,
        first: &Check,
    ) -> Result<Option<Option<Outcome>>> {
        let required = p.layers.confirm_runs;
        // (line, command, passed per run)
        let mut runs: Vec<(u64, String, Vec<bool>)> =
            first.views.iter().map(|v| (v.line, v.command.clone(), vec![v.passed])).collect();
        let mut made = 1;
        let mut changed = Vec::new();
        while made < required {
            made += 1;
            // Twin of `checks::check`'s run on a sealed journal; here each run's results are
            // kept apart to compare them.
            p.guard.seal_journal()?;
            let kit_len = super::journal_len(&self.project.journal());
            let stop = self.stop;
            let results = crate::goal::run_all(
                &p.goal,
                &self.project.root,
                p.settings.criterion_timeout,
                Some(&p.env),
                &|| stop.requested().is_some(),
            );
            end_strays()?;
            if super::cut_appends(&self.project.journal(), kit_len, &[])? {
                self.cheat(iteration, "confirm", "longrun/journal.jsonl", "journal_appended")?;
            }
            let late = restore(&p.guard)?;
            self.cheats(&late, iteration, "confirm")?;
            if self.stop.requested().is_some() {
                return Ok(Some(self.interrupted()));
            }
            for r in &results {
                if let Some(e) = runs.iter_mut().find(|e| e.0 == r.line as u64) {
                    e.2.push(r.passed);
                }
            }
            changed.extend(late.iter().map(super::describe_revert));
            if !late.is_empty() || results.iter().any(|r| !r.passed) {
                break;
            }
        }
        let flapping: Vec<&(u64, String, Vec<bool>)> =
            runs.iter().filter(|e| e.2.contains(&true) && e.2.contains(&false)).collect();
        let all_pass = flapping.is_empty() && changed.is_empty();
        self.journal(Event::Confirm(ev::Confirm {
            iteration,
            runs: made.into(),
            all_pass,
            required: required.into(),
        }))?;
        if all_pass {
            return Ok(Some(None));
        }
        let mut failures = Vec::new();
        let mut stop_on = None;
        for (line, command, passed) in flapping {
            let times = {
                let n = tally.flaps.entry(*line).or_insert(0);
                *n += 1;
                *n
            };
            self.journal(Event::Flap(ev::Flap {
                iteration,
                line: *line,
                criterion: command.clone(),
                runs: passed.clone(),
                times: times.into(),
            }))?;
            let shown: Vec<&str> =
                passed.iter().map(|&b| if b { "pass" } else { "fail" }).collect();
            self.say(format!(
                "iteration {iteration}: goal.md:{line} flaps ({} on the same tree): done refused",
                shown.join(", ")
            ));
            failures.push(format!(
                "goal.md:{line} `{command}` flaps: it passed and then failed on the same tree when \
                 kit ran the criteria again ({}). Kit never accepts done on a flapping criterion. \
                 Find what makes it nondeterministic (test order, time, randomness, a file outside \
                 git, the network, a leftover process) and make the code or the test deterministic.",
                shown.join(", ")
            ));
            if times >= FLAPS_TO_STOP && stop_on.is_none() {
                stop_on = Some((*line, times));
            }
        }
        if !changed.is_empty() {
            self.say(format!(
                "iteration {iteration}: reverted {} while the criteria ran again: done refused",
                changed.join(", ")
            ));
            failures.push(format!(
                "kit restored {} while it ran the criteria again: something the criteria start \
                 edits frozen files; done is refused until the tree stays as verified",
                changed.join(", ")
            ));
        }
        tally.failures = failures;
        if let Some((line, times)) = stop_on {
            return Ok(Some(Some(Outcome {
                name: "flapping",
                code: EXIT_CAP,
                reason: format!(
                    "criterion goal.md:{line} flaps; fix the test or the environment (it passed \
                     and failed on the same tree {times} times in this run); then kit loop goes \
                     on with run {}",
                    self.run_id()
                ),
            })));
        }
        Ok(None)
    }

    /// The revert probe (see [`super::probe`]): true when every function criterion fails on the
    /// run's start tree with the frozen files (or none is left to run); false when one passes
    /// there, and done is refused (`tally.failures` says why, for the next prompt).
    ///
    /// Errors: the probe's own (the start tree cannot be checked out): the loop stops, since no
    /// done could be proven after it.
    fn revert_probe(
        &mut self,
        p: &mut Prepared,
        tally: &mut Tally,
        iteration: u64,
    ) -> Result<bool> {
        if !p.goal.criteria.iter().any(|c| c.kind == crate::goal::Kind::Function) {
            return Ok(true);
        }
        let Some(tree) = tally.start_tree.clone() else {
            return Err(Error::internal(
                "the revert probe has no start tree for this run (git could not read the tree at its first baseline)",
            ));
        };
        let stop = self.stop;
        let probe = super::probe::run(
            &self.project.root,
            &tree,
            &p.guard,
            &p.goal,
            &p.env,
            p.settings.criterion_timeout,
            &tally.green_allowed,
            &|| stop.requested().is_some(),
        );
        end_strays()?;
        let probe = probe?;
        let refused = !probe.pass_without_work.is_empty();
        self.journal(Event::RevertProbe(ev::RevertProbe {
            iteration,
            tree: tree.clone(),
            results: probe
                .results
                .iter()
                .map(|r| ev::ProbeResult {
                    line: r.line as u64,
                    command: r.command.clone(),
                    passed: r.passed,
                    exit: r.exit,
                    timed_out: r.timed_out,
                    duration_ms: r.duration.as_millis() as u64,
                })
                .collect(),
            pass_without_work: probe.pass_without_work.iter().map(|&l| l as u64).collect(),
            exempt: probe.exempt.iter().map(|&l| l as u64).collect(),
            refused,
            wall_ms: probe.wall.as_millis() as u64,
            cpu_ms: probe.cpu.as_millis() as u64,
        }))?;
        if self.stop.requested().is_some() {
            return Ok(false);
        }
        if !refused {
            return Ok(true);
        }
        let named = probe
            .pass_without_work
            .iter()
            .map(|l| format!("goal.md:{l}"))
            .collect::<Vec<_>>()
            .join(", ");
        self.say(format!(
            "iteration {iteration}: done refused: the criteria pass without the work ({named} \
             pass{} on the run's start tree with the frozen files; revert probe)",
            if probe.pass_without_work.len() == 1 { "es" } else { "" }
        ));
        tally.failures = vec![format!(
            "The criteria pass without the work: kit ran the function criteria {named} on the \
             tree as it was when this run started, with the frozen files, and they passed there \
             too, so passing now proves nothing about your change. Kit never accepts done on \
             criteria that do not depend on the work. Do the work the End state asks for; if \
             the goal's tests cannot see it, say so in longrun/progress.md for the human."
        )];
        Ok(false)
    }

    // Same signature as `confirm` above: both are gates on a done the criteria reported.
    /// The review criteria, in goal order. None when all pass; Some(None) when one fails (done
    /// refused, the loop goes on); Some(Some(stop)) when one asks.
    fn reviews(
        &mut self,
        p: &mut Prepared,
        tally: &mut Tally,
        iteration: u64,
        first: &Check,
    ) -> Result<Option<Option<Outcome>>> {
        if p.goal.reviews.is_empty() {
            return Ok(None);
        }
        let goal_text = std::fs::read_to_string(self.project.goal()).unwrap_or_default();
        let dir = self.project.runs().join(format!("{iteration:03}.review"));
        let dir_rel = super::rel(&self.project, &dir);
        let inputs = review::Inputs {
            goal_text: &goal_text,
            criteria: &first.results,
            base: &p.layers.base,
            iteration,
            dir: &dir,
        };
        let mut refused = Vec::new();
        let mut asked = None;
        for r in p.goal.reviews.clone() {
            let res = review::run(
                &r,
                &p.layers.evaluator,
                &self.project.root,
                &inputs,
                p.layers.review_timeout,
            );
            end_strays()?;
            self.journal(Event::Review(ev::Review {
                iteration,
                line: r.line as u64,
                text: r.text.clone(),
                evaluator: res.evaluator.clone(),
                verdict: res.verdict.as_str().into(),
                reason: res.reason.clone(),
                exit: res.exit,
                timed_out: res.timed_out,
                duration_ms: res.duration_ms,
                dir: dir_rel.clone(),
            }))?;
            let reason = if res.reason.is_empty() {
                "no reason given".to_string()
            } else {
                res.reason.clone()
            };
            self.say(format!(
                "iteration {iteration}: review goal.md:{}: {} ({reason})",
                r.line,
                res.verdict.as_str()
            ));
            match res.verdict {
                Verdict::Pass => {}
                Verdict::Fail => refused.push(format!(
                    "review goal.md:{} (\"{}\") was judged fail by the evaluator: {reason}. Every \
                     test passes; this is what is still missing.",
                    r.line, r.text
                )),
                Verdict::Ask => {
                    asked = Some((r.line, reason));
                    break;
                }
            }
            if self.stop.requested().is_some() {
                return Ok(Some(self.interrupted()));
            }
        }
        // The evaluator runs in the tree: whatever it changed in a frozen file is put back.
        let after = restore(&p.guard)?;
        self.cheats(&after, iteration, "review")?;
        tally.reverts.extend(after.iter().map(super::describe_revert));
        if let Some((line, question)) = asked {
            return Ok(Some(Some(Outcome {
                name: "review_ask",
                code: EXIT_CAP,
                reason: format!(
                    "review goal.md:{line} asks a human: {question}; answer it in goal.md (the \
                     review's words, a constraint) or in the code, then kit loop goes on with run {}",
                    self.run_id()
                ),
            })));
        }
        if refused.is_empty() {
            return Ok(None);
        }
        tally.failures = refused;
        Ok(Some(None))
    }
}
