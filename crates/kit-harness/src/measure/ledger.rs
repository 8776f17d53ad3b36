//! What `kit measure` does with the ledger ([`crate::transcript::ledger`], issue 24): append the
//! calls of the sessions it shows (`--ledger`), and, on a scan of the default roots, add the
//! calls only the ledger holds (their transcripts are gone) to the figures, each API call counted
//! once. Only the calls read from the roots measured are added ([`Ledger::completing`]): the
//! ledger completes those roots with what was deleted from them, and a call from another root (a
//! course lab's `.home`, where a fake agent wrote it) is not part of this measurement.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{MeasureOptions, Scan};
use crate::error::Result;
use crate::transcript::dedup::CallKey;
use crate::transcript::ledger::{
    append, read, summarise_records, Appended, Collected, Ledger, Record,
};
use crate::transcript::{EngineOptions, SessionSummary, Source};

/// What `kit measure` does with the ledger.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LedgerUse {
    /// The ledger's folder.
    pub dir: PathBuf,
    /// Add the calls of the sessions shown (`--ledger`).
    pub append: bool,
    /// Count the calls only the ledger holds (a scan of the default roots).
    pub read: bool,
    /// The ids of the roots measured ([`crate::transcript::ledger::default_root_ids`]): only
    /// the calls read from one of them are counted. Empty unless `read`.
    pub roots: HashSet<String>,
}

/// What the ledger added to a scan.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub(crate) struct FromLedger {
    /// API calls counted from the ledger only (their transcripts are gone).
    pub calls: u64,
    /// Rows made of them alone (sessions whose transcripts are all gone).
    pub sessions: u64,
    /// Their tokens.
    pub tokens: u64,
}

/// Add to `scan` the calls of `ledger` read from one of the roots measured (`roots`, ids) that
/// no live transcript holds (`live`) and that pass `opts`' filters: a session still shown gets
/// them in its figures (tokens, calls, cost, models); the others become rows of their own,
/// measured by the engine from the calls alone (no turns, compactions or time between calls are
/// known; `path` is the ledger's folder).
pub(crate) fn merge(
    scan: &mut Scan,
    ledger: &Ledger,
    roots: &HashSet<String>,
    live: &HashSet<CallKey>,
    opts: &MeasureOptions,
    engine: EngineOptions<'_>,
    dir: &Path,
) -> FromLedger {
    let mut groups: BTreeMap<(Source, &str), Vec<&Record>> = BTreeMap::new();
    for r in ledger.completing(roots) {
        let (Some(source), Some(k)) = (r.source(), r.key()) else { continue };
        if live.contains(&k)
            || opts.source.is_some_and(|s| s != source)
            || opts.project.as_deref().is_some_and(|p| !r.project.contains(p))
        {
            continue;
        }
        groups.entry((source, r.session.as_str())).or_default().push(r);
    }
    let mut got = FromLedger::default();
    for ((source, session), mut recs) in groups {
        recs.sort_by_key(|r| r.ts_ms().unwrap_or(i64::MAX));
        let s = summarise_records(&recs, source, session, engine, dir);
        if let Some(row) =
            scan.sessions.iter_mut().find(|x| x.source == source && x.session_id == session)
        {
            fold(row, &s);
        } else if opts.since_ms.is_none_or(|since| s.end_ms.is_some_and(|e| e >= since)) {
            got.sessions += 1;
            scan.sessions.push(s);
        } else {
            continue;
        }
        got.calls += recs.len() as u64;
        got.tokens += recs.iter().map(|r| r.tokens()).sum::<u64>();
    }
    scan.sessions.sort_by(|a, b| (a.start_ms, &a.session_id).cmp(&(b.start_ms, &b.session_id)));
    got
}

/// Add a ledger-only part of a session to its live row.
fn fold(row: &mut SessionSummary, s: &SessionSummary) {
    row.tokens.add(&s.tokens);
    row.api_calls += s.api_calls;
    row.cost_usd = match (row.cost_usd, s.cost_usd) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    };
    row.unpriced_models.extend(s.unpriced_models.iter().cloned());
    row.models.extend(s.models.iter().cloned());
    row.cache_hit_ratio = row.tokens.cache_hit_ratio();
}

/// What the ledger did in one `kit measure`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub(crate) struct Outcome {
    /// The ledger's folder.
    pub dir: PathBuf,
    /// What `--ledger` appended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub appended: Option<Appended>,
    /// What the ledger added to the figures.
    pub ledger_only: FromLedger,
    /// Damaged ledger lines skipped.
    pub skipped_lines: u64,
    /// Ledger files read.
    pub files: usize,
}

impl Outcome {
    /// Whether there is anything to say (an append, or calls from the ledger, or damage).
    pub(crate) fn worth_saying(&self) -> bool {
        self.appended.is_some() || self.ledger_only.calls > 0 || self.skipped_lines > 0
    }

    /// The lines `kit measure` prints under its table.
    pub(crate) fn lines(&self) -> Vec<String> {
        use crate::units::{plural, thousands};
        let dir = self.dir.display();
        let mut v = vec![];
        if let Some(a) = &self.appended {
            v.push(format!(
                "ledger: {} added to {dir} ({} already there)",
                plural(a.added, "API call"),
                thousands(a.present)
            ));
        }
        let f = &self.ledger_only;
        if f.calls > 0 {
            let rows = if f.sessions > 0 {
                format!("; {} only there", plural(f.sessions, "session"))
            } else {
                String::new()
            };
            v.push(format!(
                "ledger: {} only in the ledger (their transcripts are gone){rows}",
                plural(f.calls, "API call")
            ));
        }
        if self.skipped_lines > 0 {
            v.push(format!(
                "ledger: {} skipped (cut by a killed writer?); see kit measure --strict",
                plural(self.skipped_lines, "damaged line")
            ));
        }
        v
    }
}

/// Apply `use_` to a finished scan: append its records, then read the ledger and merge.
///
/// Errors: those of [`append`] and [`read`].
pub(crate) fn apply(
    use_: &LedgerUse,
    scan: &mut Scan,
    collected: Collected,
    opts: &MeasureOptions,
    engine: EngineOptions<'_>,
) -> Result<Outcome> {
    let mut outcome = Outcome { dir: use_.dir.clone(), ..Outcome::default() };
    if use_.append {
        let now = crate::clock::now().as_millisecond();
        outcome.appended = Some(append(&use_.dir, collected.records, now)?);
    }
    if use_.read {
        if let Some(ledger) = read(&use_.dir, opts.strict)? {
            let live: HashSet<CallKey> = collected.live.into_iter().collect();
            outcome.skipped_lines = ledger.damage.skipped();
            outcome.files = ledger.files;
            outcome.ledger_only = merge(scan, &ledger, &use_.roots, &live, opts, engine, &use_.dir);
        }
    }
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::ledger::testing::rec;
    use crate::transcript::parse_ts_ms;

    #[test]
    fn merge_counts_each_call_once() {
        let d = tempfile::tempdir().unwrap();
        let live_call = rec("claude", "s", "msg_1", "2026-02-12T20:30:28.504Z", 5);
        let gone_same = rec("claude", "s", "msg_2", "2026-02-12T20:31:00.000Z", 5);
        let gone_other = rec("claude", "old", "msg_3", "2025-11-02T10:00:00.000Z", 5);
        let led = Ledger {
            records: vec![live_call.clone(), gone_same.clone(), gone_other.clone()],
            ..Ledger::default()
        };
        let engine = EngineOptions::standard();
        let mut row = summarise_records(&[&live_call], Source::Claude, "s", engine, d.path());
        row.start_ms = Some(1);
        let live: HashSet<CallKey> = [live_call.key().unwrap()].into();
        // (case, --since, calls from the ledger, rows of their own, rows shown)
        let since = parse_ts_ms("2026-01-01T00:00:00.000Z");
        for (name, since, calls, own, rows) in [
            ("all time", None, 2, 1, 2),
            ("since January: the old session is left out", since, 1, 0, 1),
        ] {
            let mut scan = Scan { sessions: vec![row.clone()], ..Scan::default() };
            let opts = MeasureOptions { since_ms: since, ..MeasureOptions::default() };
            let got = merge(&mut scan, &led, &HashSet::new(), &live, &opts, engine, d.path());
            assert_eq!(
                (got.calls, got.sessions, scan.sessions.len()),
                (calls, own, rows),
                "{name}"
            );
            let s = scan.sessions.iter().find(|s| s.session_id == "s").unwrap();
            assert_eq!(s.api_calls, 2, "{name}: the live row gets its gone call");
            assert_eq!(s.tokens.total(), live_call.tokens() + gone_same.tokens());
        }
        // A filter on the source or the project applies to the ledger's calls too.
        let mut scan = Scan::default();
        let opts = MeasureOptions { project: Some("other".into()), ..MeasureOptions::default() };
        assert_eq!(
            merge(&mut scan, &led, &HashSet::new(), &live, &opts, engine, d.path()).calls,
            0
        );
    }

    #[test]
    fn only_the_calls_of_the_roots_measured_complete_them() {
        let d = tempfile::tempdir().unwrap();
        let at = |root: Option<&str>, session: &str, id: &str| Record {
            root: root.map(str::to_string),
            ..rec("claude", session, id, "2026-02-12T20:30:28.504Z", 5)
        };
        let led = Ledger {
            records: vec![
                at(Some("mine"), "gone", "msg_1"),
                at(Some("lab"), "fake", "msg_2"),
                at(None, "old", "msg_3"),
                // The same call copied into two roots measured together: counted once.
                at(Some("mine"), "copied", "msg_4"),
                at(Some("also-mine"), "copied", "msg_4"),
                // A call of the lab's that is also in a root measured: that root's.
                at(Some("lab"), "both", "msg_5"),
                at(Some("mine"), "both", "msg_5"),
            ],
            ..Ledger::default()
        };
        let engine = EngineOptions::standard();
        // (case, roots measured, sessions from the ledger, in order)
        let cases: [(&str, &[&str], &[&str]); 4] = [
            ("my roots", &["mine", "also-mine"], &["both", "copied", "gone", "old"]),
            ("one of them", &["mine"], &["both", "copied", "gone", "old"]),
            ("the lab's", &["lab"], &["both", "fake", "old"]),
            ("another", &["elsewhere"], &["old"]),
        ];
        for (name, roots, want) in cases {
            let roots: HashSet<String> = roots.iter().map(|r| r.to_string()).collect();
            let mut scan = Scan::default();
            let opts = MeasureOptions::default();
            let got = merge(&mut scan, &led, &roots, &HashSet::new(), &opts, engine, d.path());
            let mut ids: Vec<&str> = scan.sessions.iter().map(|s| s.session_id.as_str()).collect();
            ids.sort();
            assert_eq!(ids, want, "{name}");
            assert_eq!((got.calls, got.sessions), (want.len() as u64, want.len() as u64), "{name}");
        }
    }

    #[test]
    fn since_takes_days_weeks_and_dates() {
        let now = crate::clock::now().as_millisecond();
        let day = 86_400_000;
        // (text, how far back from now in ms, or the exact Unix ms)
        for (text, back) in [("90d", 90 * day), ("12w", 84 * day), ("36h", 36 * day / 24)] {
            let got = crate::measure::parse_since(text).unwrap();
            // The clock moves between the two readings: a minute is plenty.
            assert!((now - back - got).abs() < 60_000, "{text}: {got}");
        }
        assert_eq!(crate::measure::parse_since("2026-09-01").unwrap(), 1_788_220_800_000);
        for bad in ["last quarter", "2026-13-01", "90x"] {
            assert!(crate::measure::parse_since(bad).is_err(), "{bad}");
        }
    }
}
