//! `kit measure` (DESIGN §9, lesson 7): one row per session and a totals row, or one row per
//! API call of a session (`--turns`), or the same as JSON (`kit.measure/1`). Without measuring,
//! "the session got expensive" and "the agent forgot" are impressions; this turns them into
//! tokens, dollars, minutes, compactions and resumes after the prompt cache expired.
//!
//! Sessions are read in parallel (rayon), one session's calls in memory at a time per thread.
//! An API call logged in several sessions' files (a resumed or forked session copies earlier
//! calls) is counted once, in the first session that holds it ([`crate::transcript::dedup`]).
//!
//! Here: the options and the scan; the parts, each re-exported here, are `json.rs` (the
//! `kit.measure/1` document), `table.rs` (the session table) and `turns.rs` (`--turns`, and its
//! lines as `kit report` shows them).

use std::collections::HashSet;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;

use crate::error::{Error, Result, EXIT_OK};
use crate::term::Theme;
use crate::transcript::dedup::{self, CallKey, Held};
use crate::transcript::discover::{self, Job};
use crate::transcript::ledger::Collected;
use crate::transcript::{claude, codex, ApiCall, Damage, EngineOptions, SessionSummary, Source};
use crate::units::{clip, plural, thousands, tokens, usd};

mod json;
pub mod ledger;
mod table;
mod turns;

pub(crate) use json::*;
pub(crate) use table::*;
pub(crate) use turns::*;

/// What `kit measure` was asked, validated.
#[derive(Clone, Debug, Default)]
pub struct MeasureOptions {
    /// Roots, project folders or files; empty = the default roots.
    pub paths: Vec<PathBuf>,
    /// Show this session's API calls (id or prefix).
    pub turns: Option<String>,
    /// Print JSON.
    pub json: bool,
    /// Only sessions whose last activity is at or after this time (Unix ms).
    pub since_ms: Option<i64>,
    /// Only this source.
    pub source: Option<Source>,
    /// Only projects whose name or folder contains this text.
    pub project: Option<String>,
    /// Fail on the first damaged line.
    pub strict: bool,
    /// The terminal's width (characters) the session table must fit in; None: no limit.
    pub width: Option<usize>,
    /// What to do with the ledger ([`ledger`]); None: nothing.
    pub ledger: Option<ledger::LedgerUse>,
}

/// Parse `--source`. Errors: anything but `claude` or `codex`.
pub fn parse_source(s: &str) -> Result<Source> {
    match s {
        "claude" => Ok(Source::Claude),
        "codex" => Ok(Source::Codex),
        other => Err(Error::usage(format!("unknown source `{other}`"))
            .with_hint("use --source claude or --source codex")),
    }
}

/// Parse `--since`: `YYYY-MM-DD` (UTC midnight), an RFC 3339 time, or a duration back from now
/// (`7d`, `12h`). Returns Unix ms. Errors: none of these.
pub fn parse_since(s: &str) -> Result<i64> {
    let t = s.trim();
    if let Ok(ts) = t.parse::<jiff::Timestamp>() {
        return Ok(ts.as_millisecond());
    }
    if let Ok(d) = t.parse::<jiff::civil::Date>() {
        if let Ok(z) = d.to_zoned(jiff::tz::TimeZone::UTC) {
            return Ok(z.timestamp().as_millisecond());
        }
    }
    if let Ok(d) = crate::duration::parse_duration(t) {
        return Ok(crate::clock::now().as_millisecond() - d.as_millis() as i64);
    }
    Err(Error::usage(format!("`{s}` is not a date, a time or a duration"))
        .with_hint("write e.g. --since 2026-02-12, --since 2026-02-12T20:00:00Z or --since 7d"))
}

/// The outcome of a scan.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    /// Sessions, oldest first.
    pub sessions: Vec<SessionSummary>,
    /// Damage over all files read.
    pub damage: Damage,
    /// Files read.
    pub files: usize,
    /// Where sessions were looked for: the PATHs given, else the default roots.
    pub looked_in: Vec<PathBuf>,
    /// What the ledger needs of the scan (empty unless `MeasureOptions::ledger` is set).
    pub collected: Collected,
}

/// Find and read the sessions `opts` selects.
///
/// Errors: a missing PATH, I/O, or the first damaged line under `--strict`.
pub(crate) fn scan(opts: &MeasureOptions, engine: EngineOptions<'_>) -> Result<Scan> {
    scan_with(opts, engine, |_, _| ()).map(|(scan, _)| scan)
}

/// [`scan`], and `each` applied to every session kept with its main conversation's API calls
/// (as `--turns` lists them), on the thread that read it, so a caller can render a session
/// while its calls are in memory and hold only what `each` returns. The outputs are in the
/// order of `Scan::sessions`. Used by `kit report`, so its figures are the very ones of
/// `kit measure`.
///
/// Errors: those of [`scan`].
pub(crate) fn scan_with<T, F>(
    opts: &MeasureOptions,
    engine: EngineOptions<'_>,
    each: F,
) -> Result<(Scan, Vec<T>)>
where
    T: Send,
    F: Fn(&SessionSummary, &[ApiCall]) -> T + Sync,
{
    let mut damage = Damage::default();
    let jobs = select_jobs(opts, &mut damage)?;
    let files = jobs.iter().map(|j| j.files().len()).sum();
    let progress = Progress::new(jobs.len() as u64);
    let no_drops = HashSet::new();
    let read_one = |job: &Job, drop: &HashSet<CallKey>| {
        read_job(job, engine, drop).map(|(s, calls, keys, subs)| {
            let shown = !nothing_read(&s) && keep(opts, &s);
            let t = shown.then(|| each(&s, &calls));
            let got = match &opts.ledger {
                Some(l) => crate::transcript::ledger::collect(&s, &calls, &subs, shown && l.append),
                None => Collected::default(),
            };
            (s, t, keys, got)
        })
    };
    // Collected per job, so that under `--strict` the error reported is the first in path
    // order, whichever thread met it first.
    let read: Vec<Result<Read<T>>> = jobs
        .par_iter()
        .map(|job| {
            let r = read_one(job, &no_drops);
            progress.tick();
            r
        })
        .collect();
    progress.finish();
    let mut read = read.into_iter().collect::<Result<Vec<_>>>()?;
    // Tree-wide dedup: the sessions holding a copy of a call an earlier session holds are
    // read again without it.
    let held = read
        .iter_mut()
        .enumerate()
        .flat_map(|(n, r)| std::mem::take(&mut r.2).into_iter().map(move |h| (n as u32, h)));
    let drops = dedup::losers(held, &path_ranks(&jobs));
    let again: Vec<(usize, Result<Read<T>>)> = drops
        .par_iter()
        .map(|(&n, drop)| (n as usize, read_one(&jobs[n as usize], drop)))
        .collect();
    for (n, r) in again {
        read[n] = r?;
    }
    let mut sessions = vec![];
    let mut collected = Collected::default();
    // Filters apply to the damage report too: a folder outside `--project` is not reported.
    damage
        .unreadable
        .retain(|u| opts.project.as_deref().is_none_or(|p| u.path.to_string_lossy().contains(p)));
    for (s, t, _, got) in read {
        collected.merge(got);
        // A session whose files could not be read at all is only a line in the damage report
        // (it has no dates, so only `--project` can filter it).
        if nothing_read(&s) {
            if keep(&MeasureOptions { since_ms: None, ..opts.clone() }, &s) {
                damage.merge(&s.damage);
            }
            continue;
        }
        if let Some(t) = t {
            damage.merge(&s.damage);
            sessions.push((s, t));
        }
    }
    sessions
        .sort_by(|(a, _), (b, _)| (a.start_ms, &a.session_id).cmp(&(b.start_ms, &b.session_id)));
    let looked_in = if opts.paths.is_empty() {
        let (c, x) = discover::default_roots()?;
        c.into_iter().chain(x).collect()
    } else {
        opts.paths.clone()
    };
    let (sessions, outputs) = sessions.into_iter().unzip();
    Ok((Scan { sessions, damage, files, looked_in, collected }, outputs))
}

/// One job as the scan holds it: its summary, what `each` made of it (when it is shown), its
/// calls' keys for the tree-wide dedup, and what the ledger needs of it.
type Read<T> = (SessionSummary, Option<T>, Vec<Held>, Collected);

/// A job's summary, main calls, call keys and subagents' calls.
type JobRead = (SessionSummary, Vec<ApiCall>, Vec<Held>, Vec<ApiCall>);

/// One job read whole (without the calls in `drop`): its summary, main calls, call keys and
/// subagents' calls.
fn read_job(job: &Job, engine: EngineOptions<'_>, drop: &HashSet<CallKey>) -> Result<JobRead> {
    match job {
        Job::Claude(f) => claude::read_without(f, engine, drop)
            .map(|r| (r.summary, r.calls, r.keys, r.subagent_calls)),
        Job::Codex(p) => codex::read(p, engine).map(|r| (r.summary, r.calls, vec![], vec![])),
    }
}

/// Each job's place in the order of its first file's path (the tie-break of
/// [`dedup::losers`]).
fn path_ranks(jobs: &[Job]) -> Vec<u32> {
    let path = |j: &Job| j.files().first().map(|p| p.to_path_buf()).unwrap_or_default();
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_cached_key(|&i| path(&jobs[i]));
    let mut rank = vec![0u32; jobs.len()];
    for (r, i) in order.into_iter().enumerate() {
        rank[i] = r as u32;
    }
    rank
}

/// A session whose files could not be read at all: no call, no dated line, and unreadable
/// files in its damage.
fn nothing_read(s: &SessionSummary) -> bool {
    s.api_calls == 0 && s.start_ms.is_none() && !s.damage.unreadable.is_empty()
}

fn select_jobs(opts: &MeasureOptions, damage: &mut Damage) -> Result<Vec<Job>> {
    let mut jobs = discover::discover(&opts.paths, damage)?;
    jobs.retain(|j| opts.source.is_none_or(|s| j.source() == s));
    if let Some(since) = opts.since_ms {
        // A file last written before `since` cannot hold activity after it.
        jobs.retain(|j| {
            j.files().iter().any(|f| {
                std::fs::metadata(f)
                    .and_then(|m| m.modified())
                    .map(|t| {
                        jiff::Timestamp::try_from(t).map_or(true, |t| t.as_millisecond() >= since)
                    })
                    .unwrap_or(true)
            })
        });
    }
    Ok(jobs)
}

fn keep(opts: &MeasureOptions, s: &SessionSummary) -> bool {
    if let Some(p) = &opts.project {
        let folder = s.path.parent().and_then(|d| d.file_name()).map(|n| n.to_string_lossy());
        if !s.project.contains(p.as_str()) && !folder.is_some_and(|f| f.contains(p.as_str())) {
            return false;
        }
    }
    if let Some(since) = opts.since_ms {
        // A session without a dated line cannot be shown to be recent.
        if s.end_ms.is_none_or(|e| e < since) {
            return false;
        }
    }
    true
}

/// A progress bar on stderr, shown only on a terminal and only once a scan takes a moment.
struct Progress {
    bar: ProgressBar,
    start: Instant,
    shown: AtomicBool,
    term: bool,
}

impl Progress {
    fn new(len: u64) -> Self {
        let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::hidden());
        if let Ok(style) = ProgressStyle::with_template("{bar:30} {pos}/{len} sessions {elapsed}") {
            bar.set_style(style);
        }
        Progress {
            bar,
            start: Instant::now(),
            shown: AtomicBool::new(false),
            term: crate::term::stderr_is_term(),
        }
    }

    fn tick(&self) {
        self.bar.inc(1);
        if self.term
            && self.start.elapsed() > Duration::from_millis(400)
            && !self.shown.swap(true, Ordering::Relaxed)
        {
            self.bar.set_draw_target(crate::term::progress_target());
        }
    }

    fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// Run `kit measure`. Returns the exit code.
pub fn run(theme: &Theme, opts: &MeasureOptions, out: &mut dyn Write) -> Result<u8> {
    let engine = EngineOptions {
        limits: crate::transcript::ReadLimits { strict: opts.strict, ..Default::default() },
        ..EngineOptions::standard()
    };
    if let Some(id) = &opts.turns {
        return turns(theme, opts, id, engine, out);
    }
    let mut scan = scan(opts, engine)?;
    let collected = std::mem::take(&mut scan.collected);
    let led = match &opts.ledger {
        Some(l) => Some(ledger::apply(l, &mut scan, collected, opts, engine)?),
        None => None,
    }
    .filter(|o| o.worth_saying());
    // An empty table names every place read, the ledger too (its calls may all be too old).
    if let Some(l) = opts.ledger.as_ref().filter(|l| l.read) {
        scan.looked_in.push(l.dir.clone());
    }
    if opts.json {
        let mut doc = to_json(&scan);
        if let (Some(o), Some(d)) = (&led, doc.as_object_mut()) {
            d.insert("ledger".into(), serde_json::to_value(o).unwrap_or_default());
        }
        let text =
            serde_json::to_string_pretty(&doc).map_err(|e| Error::internal(e.to_string()))?;
        writeln!(out, "{text}").map_err(|e| Error::io("stdout", e))?;
    } else {
        write_table(theme, &scan, opts.width, out).map_err(|e| Error::io("stdout", e))?;
        for line in led.iter().flat_map(|o| o.lines()) {
            writeln!(out, "{line}").map_err(|e| Error::io("stdout", e))?;
        }
    }
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::secs;

    #[test]
    fn columns_give_way_in_the_defined_order() {
        let shown = |max: Option<usize>| {
            let l = Layout::fit(8, max);
            let names: Vec<&str> = (0..13).filter(|&i| l.shown(i)).map(|i| COLUMNS[i].0).collect();
            (names.join(" "), l.width())
        };
        let all = "SESSION PROJECT START (UTC) WALL ACTIVE TURNS CALLS TOKENS HIT CTX CMP RES COST";
        assert_eq!(shown(None), (all.to_string(), 100));
        assert_eq!(shown(Some(100)), (all.to_string(), 100));
        assert_eq!(shown(Some(99)).0, all.replace(" ACTIVE", ""));
        assert_eq!(
            shown(Some(80)),
            ("SESSION PROJECT START (UTC) WALL TOKENS CTX CMP RES COST".into(), 74)
        );
        assert_eq!(shown(Some(60)), ("SESSION PROJECT TOKENS CTX CMP RES COST".into(), 54));
        assert_eq!(Layout::fit(8, Some(50)).widths[PROJECT], Some(8));
        assert_eq!(shown(Some(40)), ("SESSION TOKENS CTX CMP RES COST".into(), 40));
        assert_eq!(shown(Some(1)), ("SESSION COST".into(), 17));
        // A longer SESSION (unique prefixes) takes its room from the other columns.
        assert_eq!(Layout::fit(12, Some(60)).width(), 58);
    }

    #[test]
    fn prose_lines_break_at_words() {
        assert_eq!(wrap("a bb ccc dd", Some(5)), ["a bb", "  ccc", "  dd"]);
        assert_eq!(wrap("a bb ccc", None), ["a bb ccc"]);
        assert_eq!(wrap("toolongword x", Some(4)), ["toolongword", "  x"]);
        assert_eq!(join_within(&["ab", "cd", "ef"], " · ", Some(7)), ["ab · cd", "ef"]);
    }

    #[test]
    fn number_formats() {
        for ms in [0, 1_770_928_228_504, -1, 86_399_999] {
            let t = jiff::Timestamp::from_millisecond(ms).unwrap();
            assert_eq!(clock_time(ms), t.strftime("%H:%M:%S").to_string(), "{ms}");
        }
        assert_eq!(tokens(950), "950");
        assert_eq!(tokens(233_344), "233.3k");
        assert_eq!(tokens(1_927_379), "1.9M");
        assert_eq!(usd(0.4756), "$0.48");
        assert_eq!(usd(0.0012), "$0.0012");
        assert_eq!(thousands(170_251), "170,251");
        assert_eq!(thousands(100), "100");
        assert_eq!(secs(15_060.0), "4h11m");
        assert_eq!(secs(125.0), "2m05s");
        assert_eq!(clip("4d5611e5-241a", 8), "4d5611e…");
        assert_eq!(project_name("/home/dev/src/proj-x/"), "proj-x");
    }

    #[test]
    fn session_ids_are_cut_to_unique_prefixes() {
        let ids = ["spotter_tool_heavy", "spotter_4d5611e5", "4d5611e5-241a-462a", "s"];
        assert_eq!(
            unique_prefixes(ids.into_iter(), 8),
            ["spotter_t", "spotter_4", "4d5611e5", "s"]
        );
    }

    #[test]
    fn since_accepts_dates_times_and_durations() {
        assert_eq!(parse_since("2026-02-12").unwrap(), 1_770_854_400_000);
        assert_eq!(parse_since("2026-02-12T20:30:28.504Z").unwrap(), 1_770_928_228_504);
        assert!(parse_since("7d").is_ok());
        assert!(parse_since("last tuesday").is_err());
    }
}
