//! Where the loop stops for a person ("needs you", exit 6; see [`crate::looprun::ask`]): a question the
//! agent asked with `kit ask` during an iteration, or a `- human:` criterion of goal.md not yet
//! approved for the tree every other criterion passes on. Either way the run stays unfinished:
//! after `kit approve N` (or `kit reject N --note WHY`) `kit loop` goes on with it.
//!
//! Journal events written here: `asked` (a spooled question, a human criterion asked for),
//! `approval` (a spooled one, never counting), `needs_you`.

use super::*;
use crate::error::EXIT_NEEDS_YOU;
use crate::looprun::ask::{self, HumanState};

impl RunCtx<'_> {
    /// Journal what `kit ask` and `kit approve` spooled while the agent of `iteration` ran
    /// (see [`ask::take_spool`]), saying each. Returns whether anything was journaled.
    pub(super) fn take_asks(&mut self, iteration: u64) -> Result<bool> {
        let said = ask::take_spool(&self.project, &self.journal, iteration)?;
        let any = !said.is_empty();
        for line in said {
            self.say(line);
        }
        Ok(any)
    }

    /// Stop "needs you" when a question the agent asked (`kit ask`) has no answer that counts.
    /// The journal is read only when `tally.asks_to_check` says questions may have come in (at
    /// the start of a loop process, after an iteration whose agent asked); it is cleared.
    pub(super) fn asks_waiting(&mut self, tally: &mut Tally) -> Result<Option<Outcome>> {
        if !std::mem::take(&mut tally.asks_to_check) {
            return Ok(None);
        }
        let entries = crate::longrun::journal::read(&self.project.journal())?.entries;
        let waiting: Vec<ask::Decision> = ask::decisions(&entries)
            .into_iter()
            .filter(|d| d.line.is_none() && d.answer.is_none())
            .collect();
        let Some(first) = waiting.first() else { return Ok(None) };
        let n = first.number;
        let more = if waiting.len() > 1 {
            format!(" ({} questions wait: kit status lists them)", waiting.len())
        } else {
            String::new()
        };
        let reason = format!(
            "the agent asks #{n}: {}{more}; answer with kit approve {n} [--note TEXT] or kit \
             reject {n} --note WHY, then kit loop goes on with run {}",
            first.text,
            self.run_id()
        );
        self.needs_you(waiting.iter().map(|d| d.number).collect(), reason).map(Some)
    }

    /// The `- human:` criteria, once everything else accepted done at `iteration`: `done` when
    /// each is approved for the tree as it is; "needs you" when one is not asked yet or not
    /// answered (each such is asked, numbered); None when a person rejected one on this tree
    /// (done refused, their note in `tally.failures` for the next prompt).
    pub(super) fn humans(
        &mut self,
        p: &Prepared,
        tally: &mut Tally,
        iteration: u64,
        done: Outcome,
    ) -> Result<Option<Outcome>> {
        if p.goal.humans.is_empty() {
            return Ok(Some(done));
        }
        let entries = crate::longrun::journal::read(&self.project.journal())?.entries;
        let decisions = ask::decisions(&entries);
        let tree = tree_state(&self.project.root, &self.excludes);
        let (commit, _) = git_head(&self.project.root, &self.excludes);
        let mut next = ask::next_number(&entries);
        let mut waiting = Vec::new();
        let mut rejected = Vec::new();
        for h in &p.goal.humans {
            match ask::human_state(&decisions, h, tree.as_deref()) {
                HumanState::Approved(a) => self.say(format!(
                    "iteration {iteration}: goal.md:{} (human) approved by {} for this tree",
                    h.line, a.by
                )),
                HumanState::Rejected(a) => rejected.push(format!(
                    "A person ({}) rejected goal.md:{} (human: {}) on this tree: \"{}\". Every \
                     test passes; this is what is still missing.",
                    a.by, h.line, h.text, a.note
                )),
                HumanState::Pending(n) => waiting.push((n, h)),
                HumanState::NotAsked => {
                    self.journal(Event::Asked(ev::Asked {
                        number: next,
                        text: h.text.clone(),
                        line: Some(h.line as u64),
                        from: "kit".into(),
                        iteration,
                        tree: tree.clone(),
                        commit: commit.clone(),
                    }))?;
                    waiting.push((next, h));
                    next += 1;
                }
            }
        }
        if !rejected.is_empty() {
            self.say(format!(
                "iteration {iteration}: done refused: a person rejected {} human criteri{} on \
                 this tree",
                rejected.len(),
                if rejected.len() == 1 { "on" } else { "a" }
            ));
            tally.failures = rejected;
            return Ok(None);
        }
        let Some((n, h)) = waiting.first() else { return Ok(Some(done)) };
        let others = if waiting.len() > 1 {
            let rest: Vec<String> = waiting[1..].iter().map(|(n, _)| format!("#{n}")).collect();
            format!(" (and {})", rest.join(", "))
        } else {
            String::new()
        };
        let reason = format!(
            "{} and goal.md:{} (human: {}) waits for a person: look at the work, then kit approve \
             {n}{others} (or kit reject {n} --note WHY); kit loop then goes on with run {}",
            done.reason,
            h.line,
            h.text,
            self.run_id()
        );
        self.needs_you(waiting.iter().map(|(n, _)| *n).collect(), reason).map(Some)
    }

    /// Journal `needs_you` and make the outcome (exit 6).
    fn needs_you(&mut self, pending: Vec<u64>, reason: String) -> Result<Outcome> {
        self.journal(Event::NeedsYou(ev::NeedsYou {
            iteration: self.last_iteration,
            pending,
            reason: reason.clone(),
        }))?;
        Ok(Outcome { name: "needs_you", code: EXIT_NEEDS_YOU, reason })
    }
}
