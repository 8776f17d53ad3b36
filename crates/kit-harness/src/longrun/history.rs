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
    /// Every event, in order.
    pub events: Vec<Value>,
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
        Ok(History::from_events(r.events, r.skipped))
    }

    /// Build from events already read.
    pub fn from_events(events: Vec<Value>, skipped: Vec<usize>) -> History {
        let mut h = History { skipped, ..History::default() };
        for (i, e) in events.iter().enumerate() {
            let it = e.get("iteration").and_then(Value::as_u64).unwrap_or(0);
            match event_name(e) {
                "iteration_start" => h.last_iteration = h.last_iteration.max(it),
                "loop_start" => {
                    h.run_start = Some(i);
                    let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or_default().into();
                    h.open_run = Some(super::lock::Holder {
                        pid: e.get("pid").and_then(Value::as_u64).unwrap_or(0) as u32,
                        host: s("host"),
                        started: s("ts"),
                        command: s("command"),
                    });
                }
                "loop_end" => h.open_run = None,
                "agent_start" => {
                    h.unfinished = Some(Unfinished {
                        iteration: it,
                        pgid: e.get("pgid").and_then(Value::as_i64).unwrap_or(0) as i32,
                        starttime: e.get("starttime").and_then(Value::as_u64).unwrap_or(0),
                        boot_id: e.get("boot_id").and_then(Value::as_str).map(str::to_string),
                    })
                }
                "agent_end" | "recovered"
                    if h.unfinished.as_ref().is_some_and(|u| u.iteration == it) =>
                {
                    h.unfinished = None;
                }
                _ => {}
            }
        }
        h.events = events;
        h
    }

    /// Events of the current (last) run, from its `loop_start` on; all events if none.
    pub fn current_run(&self) -> &[Value] {
        &self.events[self.run_start.unwrap_or(0)..]
    }

    /// The last event named `name`, in the whole journal.
    pub fn last(&self, name: &str) -> Option<&Value> {
        self.events.iter().rev().find(|e| event_name(e) == name)
    }

    /// The last event of any of `names`.
    pub fn last_of(&self, names: &[&str]) -> Option<&Value> {
        self.events.iter().rev().find(|e| names.contains(&event_name(e)))
    }
}

/// The `event` field of a journal line.
pub fn event_name(e: &Value) -> &str {
    e.get("event").and_then(Value::as_str).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_agent_start_without_its_end_is_unfinished() {
        let ev = vec![
            json!({"event":"loop_start"}),
            json!({"event":"iteration_start","iteration":4}),
            json!({"event":"agent_start","iteration":4,"pgid":77,"starttime":9}),
            json!({"event":"agent_end","iteration":4}),
            json!({"event":"iteration_start","iteration":5}),
            json!({"event":"agent_start","iteration":5,"pgid":88,"starttime":10,"boot_id":"b"}),
        ];
        let h = History::from_events(ev, vec![]);
        assert_eq!(h.last_iteration, 5);
        assert_eq!(
            h.unfinished,
            Some(Unfinished { iteration: 5, pgid: 88, starttime: 10, boot_id: Some("b".into()) })
        );
        assert_eq!(h.current_run().len(), 6);
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
