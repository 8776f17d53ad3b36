//! "Since you last looked": what the journal holds after the mark a person left, and the mark.
//!
//! The mark is `longrun/.runs/status-seen.json` (runtime, gitignored with `.runs/`), written
//! atomically: `{"seen_at": RFC 3339 UTC (kit clock), "events": how many journal events the
//! status that wrote it had read, "last_ts": the `ts` of the last of them}`. Only these move it:
//! - `kit status` with stdout on a terminal (a person looked), unless `--no-mark`;
//! - `kit status --mark` (a script or a test asking for it), text or JSON;
//! - `kit status --watch` when it ends (not at each refresh), unless `--no-mark`.
//!
//! A status written to a pipe or a file (goldens, `kit status | grep`, `--json` for a program)
//! reads the mark but never moves it, so its output does not depend on who ran it before. When
//! there is no mark, or it does not match the journal (a new journal, events fewer than it says,
//! another `ts` at its place), the summary covers the last run from its start instead.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::longrun::event::{Entry, Event};
use crate::longrun::history::History;
use crate::longrun::Project;

/// The mark file of `project`.
pub(crate) fn mark_path(project: &Project) -> PathBuf {
    project.runs().join("status-seen.json")
}

/// What the mark file holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Mark {
    /// When the person looked, RFC 3339 UTC.
    pub seen_at: String,
    /// Journal events read then.
    pub events: usize,
    /// The `ts` of the last of them (checks that the journal is the same one).
    pub last_ts: Option<String>,
}

impl Mark {
    /// The mark for having seen all of `h` now.
    pub(crate) fn now(h: &History) -> Mark {
        Mark {
            seen_at: crate::clock::now_rfc3339(),
            events: h.entries.len(),
            last_ts: h.entries.last().and_then(ts).map(str::to_string),
        }
    }

    /// Read the mark at `path`; None when missing or unreadable (a damaged mark is no mark).
    pub(crate) fn read(path: &Path) -> Option<Mark> {
        serde_json::from_slice(&std::fs::read(path).ok()?).ok()
    }

    /// Write it atomically to `path`, creating its folder.
    ///
    /// Errors: [`crate::Error::Io`] naming the file.
    pub(crate) fn write(&self, path: &Path) -> crate::Result<()> {
        if let Some(dir) = path.parent() {
            crate::atomic::create_dir_all(dir)?;
        }
        let text =
            serde_json::to_string(self).map_err(|e| crate::Error::internal(e.to_string()))?;
        crate::atomic::write_atomic(path, format!("{text}\n").as_bytes())
    }

    /// True when `h` is the journal this mark was taken on (append-only: its first `events`
    /// events are still there, the last of them with the same `ts`).
    pub(crate) fn fits(&self, h: &History) -> bool {
        match self.events {
            0 => true,
            n => h.entries.len() >= n && ts(&h.entries[n - 1]) == self.last_ts.as_deref(),
        }
    }
}

/// What happened in the journal after a point (the mark, or the last run's start).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub(crate) struct Since {
    /// `mark` (since the person last looked) or `run` (since the last run started: no mark).
    pub from: &'static str,
    /// When: the mark's `seen_at`, or the run's start, RFC 3339.
    pub at: String,
    /// The run the summary starts in (`from: run`), else null.
    pub run: Option<u64>,
    /// Distinct agent iterations started (a limited iteration retried under the same number
    /// counts once).
    pub iterations: u64,
    /// The first and last of them.
    pub iteration_range: Option<[u64; 2]>,
    /// Reverts (`cheat` events).
    pub reverts: u64,
    /// Usage or rate limits waited out (`limit_wait` events).
    pub limit_waits: u64,
    /// Seconds waited for them (`limit_resume` `waited_s`; a wait not resumed yet counts its
    /// `wait_s`).
    pub limit_waited_s: f64,
    /// Criteria flagged as flapping (`flap` events).
    pub flaps: u64,
    /// Review verdicts (`review` events): pass, fail, ask.
    pub reviews: Reviews,
    /// Loop processes that ended, with their outcome, in order.
    pub loops_ended: Vec<String>,
    /// Journal events in the span.
    pub events: usize,
    /// Whether this status moved the mark to now (see the module doc).
    pub marked: bool,
    /// Index in the journal's events where the span starts.
    #[serde(skip)]
    pub start: usize,
}

/// Review verdicts counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Reviews {
    /// `pass`.
    pub pass: u64,
    /// `fail`.
    pub fail: u64,
    /// `ask`.
    pub ask: u64,
}

impl Since {
    /// The summary of `h` after `mark` when it fits the journal, else from the start of the
    /// journal's last run (`run_start`: its index and number, its start time); None when there
    /// is neither (no loop has run and nobody looked).
    pub(crate) fn of(
        h: &History,
        mark: Option<&Mark>,
        run_start: Option<(usize, u64, &str)>,
    ) -> Option<Since> {
        let mut s = match (mark.filter(|m| m.fits(h)), run_start) {
            (Some(m), _) => {
                Since { from: "mark", at: m.seen_at.clone(), start: m.events, ..Since::default() }
            }
            (None, Some((i, id, at))) => Since {
                from: "run",
                at: at.to_string(),
                run: Some(id),
                start: i,
                ..Since::default()
            },
            (None, None) => return None,
        };
        let span = &h.entries[s.start.min(h.entries.len())..];
        s.events = span.len();
        let mut seen = std::collections::BTreeSet::new();
        let mut waiting: Option<f64> = None;
        for e in span {
            match &e.event {
                Event::IterationStart(i) if e.has("iteration") => {
                    seen.insert(i.iteration);
                }
                Event::Cheat(_) => s.reverts += 1,
                Event::LimitWait(w) => {
                    s.limit_waits += 1;
                    s.limit_waited_s += waiting.take().unwrap_or(0.0);
                    waiting = Some(w.wait_s as f64);
                }
                Event::LimitResume(r) => {
                    waiting = None;
                    s.limit_waited_s += r.waited_s as f64;
                }
                Event::Flap(_) => s.flaps += 1,
                Event::Review(r) => match r.verdict.as_str() {
                    "pass" => s.reviews.pass += 1,
                    "fail" => s.reviews.fail += 1,
                    "ask" => s.reviews.ask += 1,
                    _ => {}
                },
                Event::LoopEnd(l) => s.loops_ended.push(if e.has("outcome") {
                    l.outcome.clone()
                } else {
                    "?".to_string()
                }),
                _ => {}
            }
        }
        s.limit_waited_s += waiting.unwrap_or(0.0);
        s.iterations = seen.len() as u64;
        s.iteration_range = seen.first().zip(seen.last()).map(|(a, b)| [*a, *b]);
        Some(s)
    }

    /// Whether `kit status` prints it: after a mark always; without one (`from: run`) only
    /// when the run holds what no other line shows (limit waits, flaps, reviews), since its
    /// iterations and reverts are on the `run:` and `reverts:` lines already.
    pub(crate) fn worth_a_line(&self) -> bool {
        let r = self.reviews;
        self.from == "mark" || self.limit_waits + self.flaps + r.pass + r.fail + r.ask > 0
    }

    /// The label, e.g. `since you last looked at 08:10 UTC` (the date too when it was not
    /// today, UTC, by the kit clock) or `since run 2 started at 2026-10-01T09:00:00Z`.
    pub(crate) fn label(&self) -> String {
        match self.from {
            "mark" => format!("since you last looked at {}", short_time(&self.at)),
            _ => format!(
                "since run {} started at {}",
                self.run.map_or_else(|| "?".into(), |r| r.to_string()),
                self.at
            ),
        }
    }

    /// What happened, e.g. `3 iterations (5–7), 1 revert, 2 limit waits (1h05m), 1 flap, 2
    /// reviews (1 ask)`; `nothing new` when the span holds nothing of that.
    pub(crate) fn describe(&self) -> String {
        let plural =
            |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let mut parts = Vec::new();
        if self.iterations > 0 || self.from == "run" {
            let mut t = plural(self.iterations, "iteration", "iterations");
            if let Some([a, b]) = self.iteration_range.filter(|_| self.from == "mark") {
                t.push_str(&if a == b { format!(" ({a})") } else { format!(" ({a}–{b})") });
            }
            parts.push(t);
        }
        if self.reverts > 0 {
            parts.push(plural(self.reverts, "revert", "reverts"));
        }
        if self.limit_waits > 0 {
            parts.push(format!(
                "{} ({})",
                plural(self.limit_waits, "limit wait", "limit waits"),
                crate::units::format_duration(std::time::Duration::from_secs_f64(
                    self.limit_waited_s.max(0.0)
                ))
            ));
        }
        if self.flaps > 0 {
            parts.push(plural(self.flaps, "flap", "flaps"));
        }
        let r = self.reviews;
        let reviews = r.pass + r.fail + r.ask;
        if reviews > 0 {
            let mut how = Vec::new();
            for (n, v) in [(r.pass, "pass"), (r.fail, "fail"), (r.ask, "ask")] {
                if n > 0 {
                    how.push(format!("{n} {v}"));
                }
            }
            parts.push(format!("{} ({})", plural(reviews, "review", "reviews"), how.join(", ")));
        }
        if self.from == "mark" && !self.loops_ended.is_empty() {
            parts.push(format!("loop ended: {}", self.loops_ended.join(", ")));
        }
        if parts.is_empty() {
            "nothing new".into()
        } else {
            parts.join(", ")
        }
    }
}

/// `08:10 UTC` when `ts` is today (UTC, kit clock), else `2026-10-01 08:10 UTC`; `ts` as given
/// when it does not parse.
fn short_time(ts: &str) -> String {
    let Ok(t) = ts.parse::<jiff::Timestamp>() else { return ts.to_string() };
    let day = |t: jiff::Timestamp| t.strftime("%Y-%m-%d").to_string();
    if day(t) == day(crate::clock::now()) {
        t.strftime("%H:%M UTC").to_string()
    } else {
        t.strftime("%Y-%m-%d %H:%M UTC").to_string()
    }
}

/// An entry's `ts`, None when its line had none.
fn ts(e: &Entry) -> Option<&str> {
    Some(e.ts.as_str()).filter(|t| !t.is_empty())
}

/// The start of the journal's last run for [`Since::of`]: its first event's index, its number
/// and its start time.
pub(crate) fn run_start(h: &History) -> Option<(usize, u64, String)> {
    crate::longrun::durable::last_run(h).map(|r| (r.first_event, r.id, r.started.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::longrun::event::fixture;
    use serde_json::json;

    fn journal() -> History {
        let ev = vec![
            fixture(
                "loop_start",
                json!({"ts":"2026-10-01T09:00:00Z","run":1,"run_started":"2026-10-01T09:00:00Z"}),
            ),
            fixture("iteration_start", json!({"ts":"2026-10-01T09:00:01Z","iteration":1})),
            fixture("cheat", json!({"ts":"2026-10-01T09:00:02Z","iteration":1})),
            fixture("iteration_start", json!({"ts":"2026-10-01T09:10:00Z","iteration":2})),
            fixture("limit_wait", json!({"ts":"2026-10-01T09:10:01Z","iteration":2,"wait_s":3900})),
            fixture(
                "limit_resume",
                json!({"ts":"2026-10-01T10:15:01Z","iteration":2,"waited_s":3900}),
            ),
            fixture("iteration_start", json!({"ts":"2026-10-01T10:15:02Z","iteration":2})),
            fixture(
                "flap",
                json!({"ts":"2026-10-01T10:20:00Z","line":7,"criterion":"t","runs":[true,false]}),
            ),
            fixture(
                "review",
                json!({"ts":"2026-10-01T10:20:01Z","line":9,"verdict":"ask","reason":"?"}),
            ),
            fixture("iteration_start", json!({"ts":"2026-10-01T10:20:02Z","iteration":3})),
            fixture("loop_end", json!({"ts":"2026-10-01T10:30:00Z","outcome":"cap"})),
        ];
        History::from_events(ev, vec![])
    }

    #[test]
    fn without_a_mark_the_last_run_is_summarised_and_a_retried_iteration_counts_once() {
        let h = journal();
        let s = Since::of(&h, None, Some((0, 1, "2026-10-01T09:00:00Z"))).unwrap();
        assert_eq!(s.label(), "since run 1 started at 2026-10-01T09:00:00Z");
        assert_eq!(
            s.describe(),
            "3 iterations, 1 revert, 1 limit wait (1h05m), 1 flap, 1 review (1 ask)"
        );
        assert_eq!(s.iteration_range, Some([1, 3]));
        assert!(s.worth_a_line());
        let plain = Since { from: "run", iterations: 3, reverts: 1, ..Since::default() };
        assert!(!plain.worth_a_line());
        assert!(Since::of(&History::default(), None, None).is_none());
    }

    #[test]
    fn after_a_mark_only_what_came_later_counts() {
        let h = journal();
        let first = History::from_entries(h.entries[..6].to_vec(), vec![]);
        let mut m = Mark::now(&first);
        m.seen_at = "2026-10-01T10:16:00Z".into();
        assert!(m.fits(&h));
        let s = Since::of(&h, Some(&m), Some((0, 1, "x"))).unwrap();
        assert_eq!(s.from, "mark");
        assert_eq!(s.describe(), "2 iterations (2–3), 1 flap, 1 review (1 ask), loop ended: cap");
        // Seen everything: nothing new.
        let all = Mark::now(&h);
        assert_eq!(Since::of(&h, Some(&all), None).unwrap().describe(), "nothing new");
    }

    #[test]
    fn a_mark_from_another_journal_falls_back_to_the_run() {
        let h = journal();
        let other =
            Mark { seen_at: "x".into(), events: 3, last_ts: Some("2020-01-01T00:00:00Z".into()) };
        assert!(!other.fits(&h));
        let too_far = Mark { seen_at: "x".into(), events: 99, last_ts: None };
        assert!(!too_far.fits(&h));
        let s = Since::of(&h, Some(&other), Some((0, 1, "2026-10-01T09:00:00Z"))).unwrap();
        assert_eq!(s.from, "run");
    }

    #[test]
    fn the_mark_round_trips_atomically_and_a_damaged_one_is_none() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(".runs/status-seen.json");
        let m =
            Mark { seen_at: "2026-10-01T09:00:00Z".into(), events: 4, last_ts: Some("t".into()) };
        m.write(&p).unwrap();
        assert_eq!(Mark::read(&p), Some(m));
        std::fs::write(&p, "{\"seen_at\":").unwrap();
        assert_eq!(Mark::read(&p), None);
    }

    #[test]
    fn the_time_of_a_mark_is_short_today_and_dated_otherwise() {
        let today = crate::clock::now();
        let ts = crate::clock::format_ts(today);
        assert!(
            short_time(&ts).ends_with(" UTC") && short_time(&ts).len() == 9,
            "{}",
            short_time(&ts)
        );
        assert_eq!(short_time("2001-02-03T04:05:06Z"), "2001-02-03 04:05 UTC");
        assert_eq!(short_time("garbage"), "garbage");
    }
}
