//! The decisions for a person that the journal holds (`asked` and `approval` events, see
//! `looprun::ask` for how they are made): read here, in the state layer, so that `kit status`
//! lists what waits for a person without importing the loop.

use serde::Serialize;

use crate::longrun::event::{Entry, Event};
use crate::longrun::history::History;
use crate::longrun::Project;

/// An answer to a decision, from an `approval` event.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Answer {
    /// `approved` or `rejected`.
    pub verdict: String,
    /// The note (may be empty).
    pub note: String,
    /// Who gave it.
    pub by: String,
    /// When it was journaled (RFC 3339).
    pub at: String,
    /// The working tree's id it was given on.
    pub tree: Option<String>,
    /// Why it does not count; None when it counts.
    pub why: Option<String>,
}

impl Answer {
    /// Whether the verdict is `approved`.
    pub fn approved(&self) -> bool {
        self.verdict == "approved"
    }
}

/// A decision as the journal tells it: its question and its last counting answer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Decision {
    /// Its number (`kit approve N`).
    pub number: u64,
    /// The question, or the human criterion's text.
    pub text: String,
    /// The goal.md line of a human criterion; None for `kit ask`.
    pub line: Option<u64>,
    /// Who asked.
    pub from: String,
    /// The working tree's id when asked.
    pub tree: Option<String>,
    /// The last answer that counts, if any.
    pub answer: Option<Answer>,
    /// Answers that do not count (given from inside an agent iteration) since the last one that
    /// counts, in order.
    pub not_counted: Vec<Answer>,
}

/// Every decision of the journal `entries`, in number order, each with its last counting answer.
/// An `approval` journaled between an `agent_start` and its `agent_end` (or `recovered`), or
/// written with `counts` false, goes to `not_counted` whatever else it says.
pub fn decisions(entries: &[Entry]) -> Vec<Decision> {
    let mut out: Vec<Decision> = Vec::new();
    let mut agent_running: Option<u64> = None;
    for e in entries {
        match &e.event {
            Event::AgentStart(s) => agent_running = Some(s.iteration),
            Event::AgentEnd(_) | Event::Recovered(_) => agent_running = None,
            Event::Asked(a) => out.push(Decision {
                number: a.number,
                text: a.text.clone(),
                line: a.line,
                from: a.from.clone(),
                tree: a.tree.clone(),
                answer: None,
                not_counted: Vec::new(),
            }),
            Event::Approval(a) => {
                let Some(d) = out.iter_mut().rev().find(|d| d.number == a.number) else {
                    continue;
                };
                let why = match (agent_running, a.counts) {
                    (Some(i), _) => Some(format!(
                        "journaled while iteration {i}'s agent ran: an agent cannot approve itself"
                    )),
                    (None, false) => {
                        Some(a.why.clone().unwrap_or_else(|| "marked as not counting".into()))
                    }
                    (None, true) => None,
                };
                let answer = Answer {
                    verdict: a.verdict.clone(),
                    note: a.note.clone(),
                    by: a.by.clone(),
                    at: e.ts.clone(),
                    tree: a.tree.clone(),
                    why: why.clone(),
                };
                if why.is_some() {
                    d.not_counted.push(answer);
                } else {
                    d.answer = Some(answer);
                    d.not_counted.clear();
                }
            }
            _ => {}
        }
    }
    out
}

/// Whether decision `i` of `all` is superseded: a human criterion asked again later (for another
/// tree) waits under its newer number, so only that one is answered.
pub fn superseded(all: &[Decision], i: usize) -> bool {
    let d = &all[i];
    d.line.is_some() && all[i + 1..].iter().any(|l| l.line == d.line && l.text == d.text)
}

impl Decision {
    /// What it asks, in words: `goal.md:14 (human: …) waits for your approval`, `the agent
    /// asks: …`, or `ada asks: …` for a question asked from a shell.
    pub fn what(&self) -> String {
        match self.line {
            Some(line) => format!("goal.md:{line} (human: {}) waits for your approval", self.text),
            None if self.from == "agent" => format!("the agent asks: {}", self.text),
            None => format!("{} asks: {}", self.from, self.text),
        }
    }
}

/// The number the next `asked` gets: one more than the highest so far.
pub fn next_number(entries: &[Entry]) -> u64 {
    entries
        .iter()
        .filter_map(|e| match &e.event {
            Event::Asked(a) => Some(a.number),
            _ => None,
        })
        .max()
        .unwrap_or(0)
        + 1
}

/// A run whose last loop stopped "needs you" is not finished, even when its caps are reached
/// (it stopped for a person at its last iteration): the next `kit loop` goes on with it, its
/// baseline decides (done after an approval), and no agent runs past the cap. Every other plan
/// is returned as it is.
pub fn after_needs_you(plan: crate::longrun::durable::Plan) -> crate::longrun::durable::Plan {
    use crate::longrun::durable::Plan;
    match plan {
        Plan::Finished { run, .. } if run.last_outcome() == "needs_you" => Plan::Continue(run),
        plan => plan,
    }
}

/// The git settings (local config entries, hooks: see [`crate::git::local_settings`]) that a loop journaled as
/// added during one of its runs (`git_config_changed`) and that are still in place: `kit approve`
/// refuses while any is, since a hook or an alias the agent planted runs `kit approve` in the
/// person's name when they next use git.
pub fn planted_git_settings(project: &Project, h: &History) -> Vec<String> {
    let added: Vec<&String> = h
        .entries
        .iter()
        .filter_map(|e| match &e.event {
            Event::GitConfigChanged(g) => Some(&g.added),
            _ => None,
        })
        .flatten()
        .collect();
    if added.is_empty() {
        return Vec::new();
    }
    let now = crate::git::local_settings(&project.root);
    let mut out: Vec<String> = added.into_iter().filter(|a| now.contains(a)).cloned().collect();
    out.sort();
    out.dedup();
    out
}
