//! The journal read back as the loop's checkpoint (DESIGN §3): what a resumed loop and
//! `kit status` rebuild from `longrun/journal.jsonl`, and nothing else.
//!
//! - iteration numbers keep counting across runs of the same loop: the next one is one more
//!   than the highest `iteration_start` ever journaled;
//! - an `agent_start` with no `agent_end` for the same iteration names a process group that a
//!   killed loop left behind;
//! - [`History::current_run`] is everything from the last `loop_start` on: the last loop
//!   process. A *run* in the budget's sense may span several of them (a killed or paused loop
//!   continued by the next one); [`super::durable`] reads those from the same events.
//!
//! Criterion results are read from the JSON kit wrote (`criteria.results`), leniently, so that a
//! journal written by an older kit still reads.

use serde::Serialize;
use serde_json::Value;

use super::event::{Entry, Event};

/// One criterion's result as journaled in a `baseline` or `criteria` event.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CriterionView {
    /// goal.md line of the criterion.
    pub line: u64,
    /// `function`, `regression` or `limit`.
    pub kind: String,
    /// The command as written.
    pub command: String,
    /// Whether it passed.
    pub passed: bool,
    /// Its exit status, if it exited.
    pub exit: Option<i64>,
    /// Killed at the criterion timeout.
    pub timed_out: bool,
    /// Expectations its output did not meet.
    pub missing: Vec<String>,
    /// The last lines of its output.
    pub output_tail: String,
}

impl CriterionView {
    /// Read one result object; missing fields take their defaults.
    pub fn from_value(v: &Value) -> CriterionView {
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
        let strings = |x: Option<&Value>| -> Vec<String> {
            match x {
                Some(Value::Array(a)) => a
                    .iter()
                    .map(|e| e.as_str().map_or_else(|| e.to_string(), str::to_string))
                    .collect(),
                Some(Value::String(t)) => vec![t.clone()],
                _ => vec![],
            }
        };
        let output_tail = match v.get("output_tail") {
            Some(Value::Array(_)) => strings(v.get("output_tail")).join("\n"),
            Some(Value::String(t)) => t.clone(),
            _ => String::new(),
        };
        CriterionView {
            line: v.get("line").and_then(Value::as_u64).unwrap_or(0),
            kind: s("kind"),
            command: s("command"),
            passed: v.get("passed").and_then(Value::as_bool).unwrap_or(false),
            exit: v.get("exit").and_then(Value::as_i64),
            timed_out: v.get("timed_out").and_then(Value::as_bool).unwrap_or(false),
            missing: strings(v.get("missing")),
            output_tail,
        }
    }

    /// All results of an event's `results` array.
    pub fn all(results: &Value) -> Vec<CriterionView> {
        results
            .as_array()
            .map(|a| a.iter().map(CriterionView::from_value).collect())
            .unwrap_or_default()
    }

    /// A Markdown block for the next prompt saying why this criterion failed.
    pub fn failure_block(&self) -> String {
        let mut why = Vec::new();
        if self.timed_out {
            why.push("it was killed at the criterion timeout".to_string());
        } else if let Some(code) = self.exit {
            why.push(format!("it exited {code}"));
        }
        if !self.missing.is_empty() {
            why.push(format!("its output lacked {}", self.missing.join(", ")));
        }
        let mut s = format!(
            "- {} (goal.md line {}): `{}` failed: {}.",
            self.kind,
            self.line,
            self.command,
            if why.is_empty() { "it did not meet its expectation".into() } else { why.join("; ") }
        );
        let tail = self.output_tail.trim_end();
        if !tail.is_empty() {
            s.push_str("\n  Last lines of its output:\n\n```\n");
            s.push_str(tail);
            s.push_str("\n```");
        }
        s
    }
}

/// An agent that was started and never seen to end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unfinished {
    /// Its iteration.
    pub iteration: u64,
    /// Its process group.
    pub pgid: i32,
    /// Its main process's start time (clock ticks since boot).
    pub starttime: u64,
    /// The boot it ran under.
    pub boot_id: Option<String>,
}

/// What the journal says, as the loop and `kit status` need it.
#[derive(Clone, Debug, Default)]
pub struct History {
    /// Every entry, in order.
    pub entries: Vec<Entry>,
    /// Torn or malformed lines skipped (1-based line numbers).
    pub skipped: Vec<usize>,
    /// Highest iteration number ever started (0: none).
    pub last_iteration: u64,
    /// Index in `events` of the last `loop_start`, if any.
    pub run_start: Option<usize>,
    /// The last agent started and never ended, if any.
    pub unfinished: Option<Unfinished>,
    /// The holder (`pid`, `host`, `command`) of the last `loop_start` with no `loop_end` after
    /// it: a loop that is still running or was killed.
    pub open_run: Option<super::lock::Holder>,
}

impl History {
    /// Read the journal at `path` (a missing file reads as empty).
    ///
    /// Errors: [`crate::Error::Io`] when it exists but cannot be read.
    pub fn read(path: &std::path::Path) -> crate::Result<History> {
        let r = crate::longrun::journal::read(path)?;
        Ok(History::from_entries(r.entries, r.skipped))
    }

    /// Build from journal lines already parsed as JSON (tests, fixtures).
    pub fn from_events(events: Vec<Value>, skipped: Vec<usize>) -> History {
        History::from_entries(events.into_iter().map(Entry::from_value).collect(), skipped)
    }

    /// Build from entries already read.
    pub fn from_entries(entries: Vec<Entry>, skipped: Vec<usize>) -> History {
        let mut h = History { skipped, ..History::default() };
        for (i, e) in entries.iter().enumerate() {
            match &e.event {
                Event::IterationStart(s) => h.last_iteration = h.last_iteration.max(s.iteration),
                Event::LoopStart(s) => {
                    h.run_start = Some(i);
                    h.open_run = Some(super::lock::Holder {
                        pid: s.pid,
                        host: s.host.clone(),
                        started: e.ts.clone(),
                        command: s.command.clone(),
                    });
                }
                Event::LoopEnd(_) => h.open_run = None,
                Event::AgentStart(s) => {
                    h.unfinished = Some(Unfinished {
                        iteration: s.iteration,
                        pgid: s.pgid,
                        starttime: s.starttime,
                        boot_id: s.boot_id.clone(),
                    })
                }
                Event::AgentEnd(_) | Event::Recovered(_)
                    if h.unfinished
                        .as_ref()
                        .is_some_and(|u| Some(u.iteration) == e.event.iteration()) =>
                {
                    h.unfinished = None;
                }
                _ => {}
            }
        }
        h.entries = entries;
        h
    }

    /// Entries of the current (last) run, from its `loop_start` on; all entries if none.
    pub fn run_entries(&self) -> &[Entry] {
        &self.entries[self.run_start.unwrap_or(0)..]
    }

    /// The last entry whose event `pick` returns Some for, in the whole journal, with what it
    /// returned: `h.last_where(|e| match e { Event::Notify(n) => Some(n), _ => None })`.
    pub fn last_where<'h, T: 'h>(&'h self, pick: impl FnMut(&'h Event) -> Option<T>) -> Option<T> {
        self.entries.iter().rev().map(|e| &e.event).find_map(pick)
    }

    /// The entries this kit does not read as its events ([`Event::Unknown`]): a newer kit's,
    /// or lines whose fields do not fit. Readers skip them; status and report count them.
    pub fn unknown(&self) -> impl Iterator<Item = (&Entry, &super::event::Unknown)> {
        self.entries.iter().filter_map(|e| match &e.event {
            Event::Unknown(u) => Some((e, u)),
            _ => None,
        })
    }
}

/// What `kit status` says while the loop waits: `waiting for the usage limit until 03:10 UTC`
/// (or `… for the rate limit (backoff 4m)`) when the last `limit_wait` in `events` (the journal)
/// has no `limit_resume` or `loop_end` after it; None otherwise.
pub fn limit_waiting(events: &[Entry]) -> Option<String> {
    let last = events.iter().rev().find_map(|e| match &e.event {
        Event::LimitWait(w) => Some(Some(w)),
        Event::LimitResume(_) | Event::LoopEnd(_) => Some(None),
        _ => None,
    })??;
    let kind = if last.kind.is_empty() { "usage" } else { last.kind.as_str() };
    Some(match last.until.as_deref().and_then(|t| t.parse::<jiff::Timestamp>().ok()) {
        Some(t) => {
            format!("waiting for the {kind} limit until {}", crate::units::describe_until(t))
        }
        None => format!(
            "waiting for the {kind} limit (backoff {})",
            crate::units::describe_wait(std::time::Duration::from_secs(last.wait_s))
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::longrun::event::fixture;
    use serde_json::json;

    #[test]
    fn an_agent_start_without_its_end_is_unfinished() {
        let ev = vec![
            fixture("loop_start", json!({})),
            fixture("iteration_start", json!({"iteration":4})),
            fixture("agent_start", json!({"iteration":4,"pgid":77,"starttime":9})),
            fixture("agent_end", json!({"iteration":4})),
            fixture("iteration_start", json!({"iteration":5})),
            fixture("agent_start", json!({"iteration":5,"pgid":88,"starttime":10,"boot_id":"b"})),
        ];
        let h = History::from_events(ev, vec![]);
        assert_eq!(h.last_iteration, 5);
        assert_eq!(
            h.unfinished,
            Some(Unfinished { iteration: 5, pgid: 88, starttime: 10, boot_id: Some("b".into()) })
        );
        assert_eq!(h.run_entries().len(), 6);
    }

    #[test]
    fn a_limit_wait_without_its_resume_is_waiting() {
        let en = |v: &[Value]| -> Vec<Entry> { v.iter().cloned().map(Entry::from_value).collect() };
        let w = fixture(
            "limit_wait",
            json!({"kind":"usage","until":"2026-10-01T03:10:00Z","wait_s":7440}),
        );
        let r = fixture("limit_resume", json!({"waited_s":7440}));
        assert_eq!(
            limit_waiting(&en(std::slice::from_ref(&w))).as_deref(),
            Some("waiting for the usage limit until 03:10 UTC")
        );
        assert_eq!(limit_waiting(&en(&[w.clone(), r])), None);
        let b = fixture("limit_wait", json!({"kind":"rate","until":null,"wait_s":240}));
        assert_eq!(
            limit_waiting(&en(&[b])).as_deref(),
            Some("waiting for the rate limit (backoff 4m)")
        );
    }

    #[test]
    fn criterion_results_read_leniently() {
        let v = json!([
            {"line":7,"kind":"function","command":"python3 t.py","passed":false,"exit":1,
             "missing":["Ran 3 tests"],"output_tail":"FAILED (errors=1)"},
            {"passed":true,"output_tail":["a","b"]}
        ]);
        let all = CriterionView::all(&v);
        assert_eq!(all[0].missing, vec!["Ran 3 tests".to_string()]);
        assert!(all[0]
            .failure_block()
            .contains("`python3 t.py` failed: it exited 1; its output lacked Ran 3 tests."));
        assert_eq!(all[1].output_tail, "a\nb");
        assert!(all[1].passed);
    }
}
