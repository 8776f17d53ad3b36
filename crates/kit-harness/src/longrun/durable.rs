//! Durable runs: a *run* is one attempt at the goal with one budget, and it may span several
//! loop processes. The journal is its checkpoint (DESIGN §3): a `kit loop` on a folder whose
//! last run is unfinished continues that run, with the iterations, wall time and cost it already
//! spent counted against its caps; a finished run is only followed by a new one on
//! `kit loop --new-run`.
//!
//! How the journal marks runs: every loop process writes one `loop_start`. Since durable runs,
//! it carries `run` (the run's number, 1, 2, …), `run_started` (the run's first `loop_start`
//! time), `resumed` (true when this process continues a run) and `spent` (what the run had
//! spent before this process: `iterations`, `wall_s`, `cost_usd`, `no_progress`). A `loop_start`
//! without `run` (an older kit's journal) starts a run of its own, numbered after the ones
//! before it, so an old journal reads as it always did: one run per loop process.
//!
//! When a run is **finished** (decided by [`plan`]):
//! - its last `loop_end` says `done`: the criteria passed; nothing is left to do;
//! - or one of its caps is reached *under the caps the next `kit loop` would run with* (flags,
//!   config.toml, goal.md budget): its budget is spent. Raising a cap (`--max-iterations 12`
//!   after a run that used 8 of 8) continues the same run with what it has left; `--new-run`
//!   starts a new run with the whole budget.
//!
//! Anything else is **unfinished** and continues: a loop killed (SIGKILL, a crash, a reboot:
//! no `loop_end`), stopped by hand (`interrupted`), paused (`kit pause`: `paused`), refused
//! (a bad goal or config fixed since: `refused`), an agent that could not start
//! (`agent_failed`), or an internal `error`.
//!
//! Spent wall time is the sum over the run's loop processes of each one's `loop_end` `wall_s`
//! (measured by the loop itself), or, for a process that was killed, the time from its
//! `loop_start` to its last journal line: a killed loop loses at most the wall time of the
//! iteration in flight.
//!
//! Besides the budget, a continued run gets back the counters a loop process used to keep in
//! memory only: the usage-limit backoff streak ([`limit_streak`]: a loop killed or restarted by
//! `kit loop --ensure-alive` mid-backoff backs off longer next time, not from one minute again)
//! and the flaps per criterion ([`flaps`]: a criterion's second flap stops the run even when the
//! first was in an earlier loop process).

use std::time::Duration;

use serde::Serialize;

use crate::longrun::event::{Entry, Event, LimitWait, LoopEnd};
use crate::longrun::history::History;

/// What a run has spent so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Spent {
    /// Agent iterations started (one killed in flight counts: it was started).
    pub iterations: u64,
    /// Wall time, seconds (see the module doc).
    pub wall_s: f64,
    /// USD, from the agents' reported usage as the loop priced it (`agent_end` `cost_usd`).
    pub cost_usd: f64,
    /// Consecutive iterations without progress at the run's last check.
    pub no_progress: u32,
}

impl Spent {
    /// Wall time as a [`Duration`].
    pub fn wall(&self) -> Duration {
        Duration::from_secs_f64(self.wall_s.max(0.0))
    }

    /// `3 iterations, 4m05s, $0.12` for people.
    pub fn describe(&self) -> String {
        format!(
            "{} iteration{}, {} and ${:.2}",
            self.iterations,
            if self.iterations == 1 { "" } else { "s" },
            crate::units::format_duration(self.wall()),
            self.cost_usd.max(0.0)
        )
    }
}

/// One run as the journal shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunView {
    /// Its number: 1 for the journal's first run.
    pub id: u64,
    /// Its first `loop_start` time, RFC 3339.
    pub started: String,
    /// Its first `loop_start`'s `run_key` (random, one per run; absent in journals of older
    /// kits): the agent's `KIT_RUN_KEY`, so that what a scripted agent remembers belongs to one
    /// run.
    pub key: Option<String>,
    /// Loop processes that took part in it (1 when it was never resumed).
    pub loops: u64,
    /// What it spent, up to the journal's last line (a loop still running counts until now
    /// only in [`RunView::spent_until`]).
    pub spent: Spent,
    /// Its last `loop_end`, if its last loop process ended (None: killed, or still running).
    pub last_end: Option<LoopEnd>,
    /// Index in [`History::entries`] of its first `loop_start`.
    #[serde(skip)]
    pub first_event: usize,
}

impl RunView {
    /// `done`, `cap`, `paused`, … from the last `loop_end`; `killed` when the last loop process
    /// never wrote one.
    pub fn last_outcome(&self) -> &str {
        self.last_end.as_ref().map_or("killed", |e| e.outcome.as_str())
    }

    /// The run's entries, from its first `loop_start` to the end of the journal.
    pub fn events<'h>(&self, h: &'h History) -> &'h [Entry] {
        &h.entries[self.first_event.min(h.entries.len())..]
    }
}

/// The caps a loop would run with, for deciding whether a run's budget is spent.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    /// Agent iterations.
    pub iterations: u64,
    /// Wall time.
    pub wall: Duration,
    /// USD.
    pub cost_usd: f64,
    /// Consecutive iterations without progress.
    pub no_progress: u32,
}

/// What the next `kit loop` does with the journal's runs.
#[derive(Clone, Debug, PartialEq)]
pub enum Plan {
    /// Start run `id` with a fresh budget; `after` is the run before it, if any.
    New {
        /// The new run's number.
        id: u64,
        /// The run before it (finished, or abandoned by `--new-run`).
        after: Option<RunView>,
    },
    /// Continue this unfinished run with what it spent.
    Continue(RunView),
    /// The last run is finished; a new one needs `--new-run`.
    Finished {
        /// The finished run.
        run: RunView,
        /// Why, in words: `done: every criterion passes …` or `its iterations cap is reached
        /// (8 of 8 iterations used)`.
        reason: String,
        /// The flag to give: `kit loop --new-run`, and for a cap how to raise it instead.
        next: String,
    },
}

/// Every run in the journal, in order.
pub fn runs(h: &History) -> Vec<RunView> {
    let mut out: Vec<RunView> = Vec::new();
    let n = h.entries.len();
    // Per run: the loop processes' (start index, end index exclusive) spans.
    let mut spans: Vec<Vec<(usize, usize)>> = Vec::new();
    for (i, e) in h.entries.iter().enumerate() {
        let Event::LoopStart(start) = &e.event else { continue };
        if let Some(last) = spans.last_mut().and_then(|s| s.last_mut()) {
            last.1 = i;
        }
        let id = start.run;
        let continues = id.is_some() && out.last().map(|r| r.id) == id;
        if continues {
            if let (Some(r), Some(s)) = (out.last_mut(), spans.last_mut()) {
                r.loops += 1;
                s.push((i, n));
            }
            continue;
        }
        let next = out.last().map_or(1, |r| r.id + 1);
        out.push(RunView {
            id: id.filter(|&n| n >= next).unwrap_or(next),
            started: start.run_started.clone().unwrap_or_else(|| e.ts.clone()),
            key: start.run_key.clone(),
            loops: 1,
            spent: Spent::default(),
            last_end: None,
            first_event: i,
        });
        spans.push(vec![(i, n)]);
    }
    for (r, spans) in out.iter_mut().zip(&spans) {
        for &(from, to) in spans {
            let mut events = &h.entries[from..to];
            // A loop process's lines end at its `loop_end`; a `loop_end` after that comes from a
            // later process refused before its own `loop_start`, and does not belong to this run.
            if let Some(at) = events.iter().position(|e| matches!(e.event, Event::LoopEnd(_))) {
                events = &events[..=at];
            }
            let mut end = None;
            for e in events {
                match &e.event {
                    Event::IterationStart(_) => r.spent.iterations += 1,
                    // A limited iteration is retried under its number: it was no iteration.
                    Event::LimitWait(_) => {
                        r.spent.iterations = r.spent.iterations.saturating_sub(1)
                    }
                    // An agent switch on a limit retries the iteration too; any switch starts
                    // the no-progress count again, for the next agent (`looprun::fallback`).
                    Event::AgentSwitch(s) => {
                        if s.retry {
                            r.spent.iterations = r.spent.iterations.saturating_sub(1);
                        }
                        r.spent.no_progress = 0;
                    }
                    Event::AgentEnd(a) => r.spent.cost_usd += a.cost_usd,
                    Event::Criteria(c) => r.spent.no_progress = c.no_progress as u32,
                    Event::LoopEnd(l) => end = Some(l.clone()),
                    _ => {}
                }
            }
            let measured = end.as_ref().and_then(|e| e.wall_s);
            r.spent.wall_s += measured.unwrap_or_else(|| {
                let first = events.first().and_then(Entry::time);
                // Lines the next loop process writes before its own `loop_start` are not this
                // one's time.
                let last = events
                    .iter()
                    .rev()
                    .filter(|e| !is_next_loops_line(&e.event))
                    .find_map(Entry::time);
                match (first, last) {
                    (Some(a), Some(b)) => b.duration_since(a).as_secs_f64().max(0.0),
                    _ => 0.0,
                }
            });
            r.last_end = end;
        }
    }
    out
}

/// Events a loop process journals before its `loop_start`: after a killed loop they follow its
/// last line, and do not measure its wall time.
fn is_next_loops_line(e: &Event) -> bool {
    matches!(e, Event::LockTakeover(_) | Event::Recovered(_) | Event::MemoryCap(_))
}

/// The journal's last run, if any.
pub fn last_run(h: &History) -> Option<RunView> {
    runs(h).pop()
}

/// Decide what a `kit loop` running with `limits` does: continue the last run, refuse because
/// it is finished, or (no run yet, or `new_run`) start a new one. See the module doc for what
/// finished means.
pub fn plan(h: &History, limits: &Limits, new_run: bool) -> Plan {
    let Some(last) = last_run(h) else { return Plan::New { id: 1, after: None } };
    if new_run {
        return Plan::New { id: last.id + 1, after: Some(last) };
    }
    if let Some(why) = finished(&last, limits) {
        let (reason, next) = why;
        return Plan::Finished { run: last, reason, next };
    }
    Plan::Continue(last)
}

/// The limit backoff streak at the end of `events` (a run's, [`RunView::events`]): the
/// `limit_wait`s since the last iteration that did not end on a limit. An `agent_end` followed,
/// before the next `iteration_start` / `agent_start` / `loop_start`, by no `limit_wait` ends the
/// streak, as the loop's own reset does; a loop killed while waiting (or restarted by
/// `kit loop --ensure-alive`) leaves the streak standing, so its successor backs off longer.
pub fn limit_streak(events: &[Entry]) -> u32 {
    let mut streak = 0u32;
    let mut ended_plainly = false;
    for e in events {
        match e.event {
            Event::AgentEnd(_) => ended_plainly = true,
            Event::LimitWait(_) => {
                streak = streak.saturating_add(1);
                ended_plainly = false;
            }
            Event::IterationStart(_) | Event::AgentStart(_) | Event::LoopStart(_)
                if ended_plainly =>
            {
                streak = 0;
                ended_plainly = false;
            }
            _ => {}
        }
    }
    if ended_plainly {
        0
    } else {
        streak
    }
}

/// The `limit_wait` a run's last loop process stopped in (killed, interrupted, paused or at a
/// reboot while waiting out a usage or rate limit): the last `limit_wait` of `events` (a run's)
/// with no `iteration_start` or `agent_start` after it. A loop continuing the run retries that
/// iteration under its own number, after waiting out what is left of the reset it recorded.
pub fn pending_limit(events: &[Entry]) -> Option<&LimitWait> {
    let mut pending = None;
    for e in events {
        match &e.event {
            Event::LimitWait(w) => pending = Some(w),
            Event::IterationStart(_) | Event::AgentStart(_) => pending = None,
            _ => {}
        }
    }
    pending
}

/// Flaps per goal.md line in `events` (a run's) since its last `loop_end` of outcome
/// `flapping`: that stop told a person to fix the criterion, so the count starts afresh after
/// it; any other restart (a kill, `--ensure-alive`, a pause) keeps counting, as one loop
/// process would have.
pub fn flaps(events: &[Entry]) -> std::collections::HashMap<u64, u32> {
    let mut out = std::collections::HashMap::new();
    for e in events {
        match &e.event {
            Event::Flap(f) if e.has("line") => *out.entry(f.line).or_insert(0) += 1,
            Event::LoopEnd(l) if l.outcome == "flapping" => out.clear(),
            _ => {}
        }
    }
    out
}

/// Why `run` is finished under `limits` (reason, next step), or None when it is not.
pub fn finished(run: &RunView, limits: &Limits) -> Option<(String, String)> {
    let new_run = format!("kit loop --new-run starts run {} with a fresh budget", run.id + 1);
    if run.last_outcome() == "done" {
        let reason = run
            .last_end
            .as_ref()
            .filter(|e| !e.reason.is_empty())
            .map_or("every criterion passes", |e| e.reason.as_str());
        return Some((format!("run {} is done: {reason}", run.id), new_run));
    }
    let s = &run.spent;
    let caps: [(&str, bool, String, &str); 4] = [
        (
            "iterations",
            s.iterations >= limits.iterations,
            format!("{} of {} iterations used", s.iterations, limits.iterations),
            "--max-iterations, and goal.md's `- iterations:` if it is lower",
        ),
        (
            "wall",
            s.wall() >= limits.wall,
            format!(
                "wall time {} of {}",
                crate::units::format_duration(s.wall()),
                crate::units::format_duration(limits.wall)
            ),
            "--max-wall, and goal.md's `- wall:` if it is lower",
        ),
        (
            "cost",
            s.cost_usd >= limits.cost_usd,
            format!("cost ${:.2} of ${:.2}", s.cost_usd, limits.cost_usd),
            "[caps] max_cost_usd in longrun/config.toml, and goal.md's `- cost:` if it is lower",
        ),
        (
            "no_progress",
            s.no_progress >= limits.no_progress,
            format!("{} iterations in a row without progress", s.no_progress),
            "[caps] max_no_progress in longrun/config.toml",
        ),
    ];
    let (which, _, words, raise) = caps.into_iter().find(|c| c.1)?;
    Some((
        format!("run {} reached its {which} cap ({words})", run.id),
        format!("{new_run}, or raise the cap ({raise}) to continue run {}", run.id),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::longrun::event::fixture;
    use serde_json::{json, Value};

    fn en(events: &[Value]) -> Vec<Entry> {
        events.iter().cloned().map(Entry::from_value).collect()
    }

    fn limits(iterations: u64) -> Limits {
        Limits { iterations, wall: Duration::from_secs(3600), cost_usd: 10.0, no_progress: 3 }
    }

    fn h(events: Vec<Value>) -> History {
        History::from_events(events, vec![])
    }

    #[test]
    fn the_backoff_streak_and_the_flaps_are_rebuilt_from_the_run() {
        let limited = |i: u64| {
            vec![
                fixture("iteration_start", json!({"iteration":i})),
                fixture("agent_start", json!({"iteration":i})),
                fixture("agent_end", json!({"iteration":i})),
                fixture("limit_wait", json!({"iteration":i,"backoff":true})),
                fixture("limit_resume", json!({"iteration":i})),
            ]
        };
        let mut ev = vec![fixture("loop_start", json!({"run":1}))];
        ev.extend(limited(1));
        ev.extend(limited(1));
        assert_eq!(limit_streak(&en(&ev)), 2);
        // Killed while waiting, restarted: the streak stands.
        ev.push(fixture("loop_start", json!({"run":1,"resumed":true})));
        ev.extend(limited(1));
        assert_eq!(limit_streak(&en(&ev)), 3);
        // An iteration that ends without a limit resets it, even before the next starts.
        ev.extend([
            fixture("iteration_start", json!({"iteration":1})),
            fixture("agent_end", json!({"iteration":1})),
        ]);
        assert_eq!(limit_streak(&en(&ev)), 0);
        ev.push(fixture("criteria", json!({"iteration":1})));
        ev.extend(limited(2));
        assert_eq!(limit_streak(&en(&ev)), 1);
        // An agent killed in flight (no agent_end) neither adds nor resets.
        ev.extend([
            fixture("iteration_start", json!({"iteration":2})),
            fixture("agent_start", json!({"iteration":2})),
            fixture("loop_start", json!({"run":1})),
        ]);
        assert_eq!(limit_streak(&en(&ev)), 1);

        let f = |line: u64| fixture("flap", json!({"line":line}));
        let mut ev = vec![f(7), fixture("loop_end", json!({"outcome":"interrupted"})), f(7), f(9)];
        assert_eq!(flaps(&en(&ev)), [(7, 2), (9, 1)].into_iter().collect());
        ev.push(fixture("loop_end", json!({"outcome":"flapping"})));
        assert!(flaps(&en(&ev)).is_empty(), "a flapping stop starts the count afresh");
        ev.push(f(9));
        assert_eq!(flaps(&en(&ev)), [(9, 1)].into_iter().collect());
    }

    #[test]
    fn an_old_journal_reads_as_one_run_per_loop_process() {
        let j = h(vec![
            fixture("loop_start", json!({"ts":"2026-10-01T09:00:00Z"})),
            fixture("iteration_start", json!({"iteration":1})),
            fixture("loop_end", json!({"outcome":"cap","ts":"2026-10-01T09:00:30Z"})),
            fixture("loop_start", json!({"ts":"2026-10-01T10:00:00Z"})),
            fixture("iteration_start", json!({"iteration":2})),
            fixture("agent_end", json!({"iteration":2,"cost_usd":0.5})),
        ]);
        let rs = runs(&j);
        assert_eq!(rs.iter().map(|r| r.id).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(rs[0].spent.wall_s, 30.0, "from the timestamps of an old loop_end");
        assert_eq!(rs[0].last_outcome(), "cap");
        assert_eq!((rs[1].spent.iterations, rs[1].spent.cost_usd), (1, 0.5));
        assert_eq!(rs[1].last_outcome(), "killed");
        assert_eq!(rs[1].started, "2026-10-01T10:00:00Z");
    }

    #[test]
    fn a_run_spans_the_loop_processes_that_continue_it() {
        let j = h(vec![
            fixture("loop_start", json!({"run":1,"ts":"2026-10-01T09:00:00Z"})),
            fixture("iteration_start", json!({"iteration":1})),
            fixture("agent_end", json!({"iteration":1,"cost_usd":0.25})),
            fixture("criteria", json!({"iteration":1,"no_progress":1})),
            fixture("iteration_start", json!({"iteration":2,"ts":"2026-10-01T09:10:00Z"})),
            // killed here: no loop_end; its wall runs to its last line
            fixture("loop_start", json!({"run":1,"resumed":true,"ts":"2026-10-01T11:00:00Z"})),
            fixture("iteration_start", json!({"iteration":3})),
            fixture("loop_end", json!({"outcome":"paused","wall_s":5.5})),
        ]);
        let rs = runs(&j);
        assert_eq!(rs.len(), 1);
        let r = &rs[0];
        assert_eq!((r.id, r.loops, r.spent.iterations), (1, 2, 3));
        assert_eq!(r.spent.wall_s, 600.0 + 5.5);
        assert_eq!((r.spent.cost_usd, r.spent.no_progress), (0.25, 1));
        assert_eq!(r.last_outcome(), "paused");
        assert!(matches!(plan(&j, &limits(8), false), Plan::Continue(ref c) if c.id == 1));
        assert!(matches!(plan(&j, &limits(8), true), Plan::New { id: 2, .. }));
    }

    #[test]
    fn done_or_a_cap_reached_under_the_next_caps_is_finished() {
        let done = h(vec![
            fixture("loop_start", json!({"run":4})),
            fixture(
                "loop_end",
                json!({"outcome":"done","reason":"every criterion passes (2 of 2) at iteration 0, before any agent ran"}),
            ),
        ]);
        match plan(&done, &limits(8), false) {
            Plan::Finished { run, reason, next } => {
                assert_eq!(run.id, 4);
                assert!(reason.starts_with("run 4 is done: every criterion passes"), "{reason}");
                assert_eq!(next, "kit loop --new-run starts run 5 with a fresh budget");
            }
            other => panic!("{other:?}"),
        }
        // A later loop refused before its own loop_start does not reopen the run.
        let mut refused_after = done.entries.clone();
        refused_after.push(Entry::from_value(fixture("loop_end", json!({"outcome":"refused"}))));
        let refused_after = History::from_entries(refused_after, vec![]);
        assert!(matches!(plan(&refused_after, &limits(8), false), Plan::Finished { .. }));
        let capped = h(vec![
            fixture("loop_start", json!({"run":1})),
            fixture("iteration_start", json!({"iteration":1})),
            fixture("iteration_start", json!({"iteration":2})),
            fixture("loop_end", json!({"outcome":"cap"})),
        ]);
        match plan(&capped, &limits(2), false) {
            Plan::Finished { reason, next, .. } => {
                assert_eq!(reason, "run 1 reached its iterations cap (2 of 2 iterations used)");
                assert!(next.contains("raise the cap (--max-iterations, and goal.md's `- iterations:` if it is lower) to continue run 1"));
            }
            other => panic!("{other:?}"),
        }
        // The same run under a raised cap has iterations left: it continues.
        assert!(matches!(plan(&capped, &limits(3), false), Plan::Continue(_)));
        for outcome in ["interrupted", "paused", "refused", "agent_failed", "error"] {
            let j = h(vec![
                fixture("loop_start", json!({"run":1})),
                fixture("loop_end", json!({"outcome":outcome})),
            ]);
            assert!(matches!(plan(&j, &limits(2), false), Plan::Continue(_)), "{outcome}");
        }
        assert!(matches!(plan(&h(vec![]), &limits(2), false), Plan::New { id: 1, after: None }));
    }
}
