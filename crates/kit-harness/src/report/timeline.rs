//! A loop's iterations as rows, read from the journal's events as `kit status` reads them
//! ([`History`]; event fields as `looprun` documents them). One row per baseline and
//! per `iteration_start`, in journal order; later events carrying the same `iteration` attach
//! to it: `agent_end` (duration, cost, how the agent ended), `criteria` (passing, progress,
//! commit), `cheat` (what kit reverted), `cap` (the cap reached after it).
//!
//! Limit waits and flaps are shown when the journal has them: any event whose name holds
//! `limit` (a usage or rate limit waited out) or `flap` (a criterion that passed and failed
//! across runs) is attached to its iteration with its fields, whatever kit version wrote it.

use serde_json::Value;

use crate::longrun::event::{AgentEnd, Entry, Event};
use crate::longrun::history::History;

/// One row of the timeline.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Row {
    /// The run it belongs to: 1 for the journal's first `loop_start`.
    pub run: usize,
    /// The iteration number; 0 for a baseline.
    pub iteration: u64,
    /// When it started (RFC 3339, the journal's `ts`).
    pub started: Option<String>,
    /// The agent's wall time (ms), from `agent_end.duration_ms`.
    pub duration_ms: Option<u64>,
    /// What the agent cost (USD), from `agent_end.cost_usd`.
    pub cost_usd: Option<f64>,
    /// How the agent ended: `exit 0`, `timed out`, `memory cap`, `signal 9`.
    pub agent: Option<String>,
    /// Criteria passing and their number after it.
    pub passed: Option<(u64, u64)>,
    /// Whether it made progress (`criteria.progress`).
    pub progress: Option<bool>,
    /// The commit the criteria ran on.
    pub commit: Option<String>,
    /// Files kit reverted in it: (path, kind).
    pub reverts: Vec<(String, String)>,
    /// Limit waits journaled in it, each as `event: fields`.
    pub waits: Vec<String>,
    /// Flaps journaled in it, each as `event: fields`.
    pub flaps: Vec<String>,
    /// A cap reached after it: `cost 2.1 of 2`.
    pub cap: Option<String>,
}

/// The rows of every run in `h`, in journal order.
pub(crate) fn rows(h: &History) -> Vec<Row> {
    let mut rows: Vec<Row> = vec![];
    let mut run = 0;
    for e in &h.entries {
        let it = e.event.iteration().unwrap_or(0);
        let ts = Some(e.ts.clone()).filter(|t| !t.is_empty());
        match &e.event {
            Event::LoopStart(_) => run += 1,
            Event::Baseline(_) => {
                rows.push(Row { run, iteration: 0, started: ts, ..Row::default() });
                criteria(rows.last_mut(), e);
            }
            Event::IterationStart(_) => {
                rows.push(Row { run, iteration: it, started: ts, ..Row::default() })
            }
            _ => {}
        }
        let at = rows.iter().rposition(|r| r.run == run && r.iteration == it);
        let last = rows.iter().rposition(|r| r.run == run);
        let row = at.map(|i| &mut rows[i]);
        match &e.event {
            Event::AgentEnd(a) => {
                if let Some(r) = row {
                    r.duration_ms = e.has("duration_ms").then_some(a.duration_ms);
                    r.cost_usd = e.has("cost_usd").then_some(a.cost_usd);
                    r.agent = Some(agent_end(a));
                }
            }
            Event::Criteria(_) => criteria(row, e),
            Event::Cheat(c) => {
                // A revert before the first iteration belongs to the baseline (or, before it,
                // is not shown as a row: status counts it in its reverts).
                if let Some(r) = row {
                    let s = |k: &str, v: &str| if e.has(k) { v.to_string() } else { "?".into() };
                    r.reverts.push((s("path", &c.path), s("kind", &c.kind)));
                }
            }
            Event::Cap(c) => {
                if let Some(r) = last.map(|i| &mut rows[i]) {
                    let which = if e.has("which") { c.which.as_str() } else { "?" };
                    let n = |k: &str, x: f64| if e.has(k) { num(x) } else { "null".into() };
                    r.cap =
                        Some(format!("{which} {} of {}", n("used", c.used), n("limit", c.limit)));
                }
            }
            // Shown with their fields as written, whatever kit version wrote them: this kit's
            // `limit_wait`, `limit_resume` and `flap`, and a newer kit's events of the kind.
            Event::LimitWait(_) | Event::LimitResume(_) | Event::Flap(_) | Event::Unknown(_) => {
                let n = e.name();
                if !(n.contains("limit") || n.contains("flap")) {
                    continue;
                }
                let text = format!("{n}: {}", fields(e));
                if let Some(r) = at.or(last).map(|i| &mut rows[i]) {
                    if n.contains("flap") {
                        r.flaps.push(text);
                    } else {
                        r.waits.push(text);
                    }
                }
            }
            _ => {}
        }
    }
    rows
}

fn criteria(row: Option<&mut Row>, e: &Entry) {
    let Some(r) = row else { return };
    let (passed, total, progress, commit) = match &e.event {
        Event::Baseline(b) => (b.passed, b.total, None, &b.commit),
        Event::Criteria(c) => (c.passed, c.total, Some(c.progress), &c.commit),
        _ => return,
    };
    if e.has("passed") && e.has("total") {
        r.passed = Some((passed, total));
    }
    r.progress = progress.filter(|_| e.has("progress"));
    r.commit = Some(commit.clone()).filter(|_| e.has("commit"));
}

fn agent_end(e: &AgentEnd) -> String {
    if e.timed_out {
        "timed out".into()
    } else if e.memory_killed {
        "memory cap".into()
    } else if e.cost_capped {
        "cost cap".into()
    } else if e.wall_cut {
        "wall cap".into()
    } else if e.interrupted {
        "interrupted".into()
    } else if let Some(s) = e.signal {
        format!("signal {s}")
    } else {
        match e.exit {
            Some(c) => format!("exit {c}"),
            None => "ended".into(),
        }
    }
}

/// A number as the journal holds it, without a trailing `.0`.
fn num(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x}")
    }
}

/// An entry's fields as written but `ts` and `event`, as `k=v` pairs.
fn fields(e: &Entry) -> String {
    let v = e.to_value();
    let Some(o) = v.as_object() else { return v.to_string() };
    o.iter()
        .filter(|(k, _)| *k != "ts" && *k != crate::longrun::event::TAG)
        .map(|(k, v): (&String, &Value)| match v.as_str() {
            Some(s) => format!("{k}={s}"),
            None => format!("{k}={v}"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::longrun::event::{fixture, newer_fixture};
    use serde_json::json;

    #[test]
    fn events_attach_to_their_iteration_in_each_run() {
        let ev = vec![
            fixture("loop_start", json!({"ts":"t0"})),
            fixture("baseline", json!({"passed":0,"total":2,"commit":"c0"})),
            fixture("iteration_start", json!({"iteration":1,"ts":"t1"})),
            fixture("agent_end", json!({"iteration":1,"exit":0,"cost_usd":0.5,"duration_ms":1200})),
            fixture("cheat", json!({"iteration":1,"path":"tests/t.py","kind":"modified"})),
            fixture(
                "criteria",
                json!({"iteration":1,"passed":1,"total":2,"progress":true,"commit":"c1"}),
            ),
            fixture("limit_wait", json!({"iteration":1,"until":"03:10"})),
            fixture("cap", json!({"which":"iterations","used":1,"limit":1})),
            fixture("loop_start", json!({"ts":"t2"})),
            fixture("baseline", json!({"passed":1,"total":2})),
            fixture("iteration_start", json!({"iteration":2})),
            fixture("agent_end", json!({"iteration":2,"timed_out":true})),
            newer_fixture("criterion_flap", json!({"iteration":2,"line":9})),
        ];
        let r = rows(&History::from_events(ev, vec![]));
        assert_eq!(r.len(), 4);
        assert_eq!((r[0].run, r[0].iteration, r[0].passed), (1, 0, Some((0, 2))));
        assert_eq!(r[1].reverts, vec![("tests/t.py".to_string(), "modified".to_string())]);
        assert_eq!(
            (r[1].cost_usd, r[1].duration_ms, r[1].agent.as_deref()),
            (Some(0.5), Some(1200), Some("exit 0"))
        );
        assert_eq!((r[1].passed, r[1].progress), (Some((1, 2)), Some(true)));
        assert_eq!(r[1].waits, vec!["limit_wait: iteration=1 until=03:10".to_string()]);
        assert_eq!(r[1].cap.as_deref(), Some("iterations 1 of 1"));
        assert_eq!((r[2].run, r[2].iteration), (2, 0));
        assert_eq!(r[3].agent.as_deref(), Some("timed out"));
        assert_eq!(r[3].flaps.len(), 1);
    }
}
