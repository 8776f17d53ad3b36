//! `kit measure` (DESIGN §9, lesson 7): one row per session and a totals row, or one row per
//! API call of a session (`--turns`), or the same as JSON (`kit.measure/1`). Without measuring,
//! "the session got expensive" and "the agent forgot" are impressions; this turns them into
//! tokens, dollars, minutes, compactions and resumes after the prompt cache expired.
//!
//! Sessions are read in parallel (rayon), one session's calls in memory at a time per thread.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;
use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::term::Theme;
use crate::transcript::discover::{self, Job};
use crate::transcript::{
    claude, codex, ApiCall, Compaction, Damage, EngineOptions, SessionSummary, Source, Tokens,
};

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
pub struct Scan {
    /// Sessions, oldest first.
    pub sessions: Vec<SessionSummary>,
    /// Damage over all files read.
    pub damage: Damage,
    /// Files read.
    pub files: usize,
    /// Where sessions were looked for: the PATHs given, else the default roots.
    pub looked_in: Vec<PathBuf>,
}

/// Find and read the sessions `opts` selects.
///
/// Errors: a missing PATH, I/O, or the first damaged line under `--strict`.
pub fn scan(opts: &MeasureOptions, engine: EngineOptions<'_>) -> Result<Scan> {
    scan_with(opts, engine, |_, _| ()).map(|(scan, _)| scan)
}

/// [`scan`], and `each` applied to every session kept with its main conversation's API calls
/// (as `--turns` lists them), on the thread that read it, so a caller can render a session
/// while its calls are in memory and hold only what `each` returns. The outputs are in the
/// order of `Scan::sessions`. Used by `kit report`, so its figures are the very ones of
/// `kit measure`.
///
/// Errors: those of [`scan`].
pub fn scan_with<T, F>(
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
    // Collected per job, so that under `--strict` the error reported is the first in path
    // order, whichever thread met it first.
    let read: Vec<Result<(SessionSummary, Option<T>)>> = jobs
        .par_iter()
        .map(|job| {
            let r = match job {
                Job::Claude(f) => claude::read(f, engine).map(|r| (r.summary, r.calls)),
                Job::Codex(p) => codex::read(p, engine).map(|r| (r.summary, r.calls)),
            };
            progress.tick();
            r.map(|(s, calls)| {
                let shown = !nothing_read(&s) && keep(opts, &s);
                let t = shown.then(|| each(&s, &calls));
                (s, t)
            })
        })
        .collect();
    progress.finish();
    let mut sessions = vec![];
    // Filters apply to the damage report too: a folder outside `--project` is not reported.
    damage
        .unreadable
        .retain(|u| opts.project.as_deref().is_none_or(|p| u.path.to_string_lossy().contains(p)));
    for r in read {
        let (s, t) = r?;
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
    Ok((Scan { sessions, damage, files, looked_in }, outputs))
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
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
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
    let scan = scan(opts, engine)?;
    if opts.json {
        let doc = to_json(&scan);
        let text =
            serde_json::to_string_pretty(&doc).map_err(|e| Error::internal(e.to_string()))?;
        writeln!(out, "{text}").map_err(|e| Error::io("stdout", e))?;
    } else {
        write_table(theme, &scan, opts.width, out).map_err(|e| Error::io("stdout", e))?;
    }
    Ok(0)
}

/// The `kit.measure/1` document.
pub fn to_json(scan: &Scan) -> Value {
    let sessions: Vec<Value> = scan.sessions.iter().map(session_json).collect();
    let mut tokens = Tokens::default();
    let (mut cost, mut priced) = (0.0, false);
    let (mut calls, mut turns, mut cmp, mut res) = (0, 0, 0, 0);
    let (mut premium, mut dur, mut active) = (0.0, 0.0, 0.0);
    let mut unpriced = std::collections::BTreeSet::new();
    for s in &scan.sessions {
        tokens.add(&s.tokens);
        if let Some(c) = s.cost_usd {
            cost += c;
            priced = true;
        }
        calls += s.api_calls;
        turns += s.turns;
        cmp += s.compactions.len();
        res += s.resumes;
        premium += s.resume_premium_usd;
        dur += s.duration_s;
        active += s.active_s;
        unpriced.extend(s.unpriced_models.iter().cloned());
    }
    let mut totals = serde_json::to_value(tokens).unwrap_or(Value::Null);
    let t = totals.as_object_mut();
    if let Some(t) = t {
        t.insert("sessions".into(), json!(scan.sessions.len()));
        t.insert("cost_usd".into(), if priced { json!(cost) } else { Value::Null });
        t.insert("cache_hit_ratio".into(), json!(tokens.cache_hit_ratio()));
        t.insert("api_calls".into(), json!(calls));
        t.insert("turns".into(), json!(turns));
        t.insert("compactions".into(), json!(cmp));
        t.insert("resumes".into(), json!(res));
        t.insert("resume_premium_usd".into(), json!(premium));
        t.insert("duration_s".into(), json!(dur));
        t.insert("active_s".into(), json!(active));
        t.insert("unpriced_models".into(), json!(unpriced));
    }
    json!({
        "schema": "kit.measure/1",
        "sessions": sessions,
        "totals": totals,
        "files": scan.files,
        "skipped_lines": scan.damage.skipped(),
        "repaired_lines": scan.damage.repaired(),
        "damage": scan.damage,
    })
}

/// One session of the `kit.measure/1` document (`sessions[]`).
pub fn session_json(s: &SessionSummary) -> Value {
    let mut v = serde_json::to_value(s).unwrap_or(Value::Null);
    if let Some(o) = v.as_object_mut() {
        let events = o.remove("compactions").unwrap_or(Value::Null);
        o.insert("compactions".into(), json!(s.compactions.len()));
        o.insert("compaction_events".into(), events);
        o.insert("skipped_lines".into(), json!(s.damage.skipped()));
        if let Some(subs) = o.get_mut("subagents").and_then(|x| x.as_array_mut()) {
            for (sub, v) in s.subagents.iter().zip(subs.iter_mut()) {
                *v = session_json(sub);
            }
        }
    }
    v
}

/// The session table's columns in display order: header, width (characters), right-aligned.
/// SESSION's width is the longest unique id prefix (at least 8), set per table.
pub const COLUMNS: [(&str, usize, bool); 13] = [
    ("SESSION", 8, false),
    ("PROJECT", 13, false),
    ("START (UTC)", 11, false),
    ("WALL", 7, true),
    ("ACTIVE", 7, true),
    ("TURNS", 5, true),
    ("CALLS", 6, true),
    ("TOKENS", 7, true),
    ("HIT", 4, true),
    ("CTX", 4, true),
    ("CMP", 4, true),
    ("RES", 4, true),
    ("COST", 8, true),
];
const SESSION: usize = 0;
const PROJECT: usize = 1;

/// One step by which the session table gives way on a narrow terminal.
#[derive(Clone, Copy, Debug)]
enum GiveWay {
    /// Leave the column out.
    Drop(usize),
    /// Cut the column to this many characters.
    Shorten(usize, usize),
}

/// The order in which columns give way when the table is wider than the terminal, least
/// needed first: ACTIVE, HIT, TURNS, CALLS, WALL, START, then PROJECT cut to 8 characters,
/// then PROJECT, CMP, RES, CTX and TOKENS. SESSION (the handle for `--turns`) and COST stay.
/// At 80 columns the table keeps SESSION PROJECT START WALL TOKENS CTX CMP RES COST (74
/// characters), at 60 SESSION PROJECT TOKENS CTX CMP RES COST (54).
const GIVE_WAY: [GiveWay; 12] = [
    GiveWay::Drop(4),
    GiveWay::Drop(8),
    GiveWay::Drop(5),
    GiveWay::Drop(6),
    GiveWay::Drop(3),
    GiveWay::Drop(2),
    GiveWay::Shorten(PROJECT, 8),
    GiveWay::Drop(PROJECT),
    GiveWay::Drop(10),
    GiveWay::Drop(11),
    GiveWay::Drop(9),
    GiveWay::Drop(7),
];

/// Which columns are shown and how wide: `None` for a column left out.
#[derive(Clone, Debug, PartialEq)]
struct Layout {
    widths: [Option<usize>; 13],
}

impl Layout {
    /// The widest layout that fits in `max` characters (all columns when `max` is None),
    /// giving way in [`GIVE_WAY`] order; SESSION is `session_w` wide. When even SESSION and
    /// COST do not fit, that is what is shown.
    fn fit(session_w: usize, max: Option<usize>) -> Layout {
        let mut widths = COLUMNS.map(|(_, w, _)| Some(w));
        widths[SESSION] = Some(session_w);
        let mut l = Layout { widths };
        let Some(max) = max else { return l };
        for step in GIVE_WAY {
            if l.width() <= max {
                break;
            }
            match step {
                GiveWay::Drop(i) => l.widths[i] = None,
                GiveWay::Shorten(i, n) => l.widths[i] = l.widths[i].map(|w| w.min(n)),
            }
        }
        l
    }

    /// The width of a full row: the columns and one space between each two.
    fn width(&self) -> usize {
        let shown: Vec<usize> = self.widths.iter().flatten().copied().collect();
        shown.iter().sum::<usize>() + shown.len().saturating_sub(1)
    }

    fn shown(&self, i: usize) -> bool {
        self.widths[i].is_some()
    }

    /// One row; PROJECT text is cut to its width, numbers are never cut.
    fn row(&self, cells: &[String; 13]) -> String {
        let mut parts = vec![];
        for (i, (cell, w)) in cells.iter().zip(self.widths).enumerate() {
            let Some(w) = w else { continue };
            let cell = if i == PROJECT { clip(cell, w) } else { cell.clone() };
            parts.push(if COLUMNS[i].2 { format!("{cell:>w$}") } else { format!("{cell:<w$}") });
        }
        parts.join(" ").trim_end().to_string()
    }

    /// Characters taken by SESSION and PROJECT (with the space between them), where a
    /// subagent's name is written.
    fn name_span(&self) -> usize {
        self.widths[SESSION].unwrap_or(0) + self.widths[PROJECT].map_or(0, |w| w + 1)
    }
}

fn write_table(
    theme: &Theme,
    scan: &Scan,
    max: Option<usize>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    if scan.sessions.is_empty() {
        writeln!(out, "no sessions found")?;
        let places: Vec<String> = scan.looked_in.iter().map(|p| p.display().to_string()).collect();
        writeln!(out, "  looked in: {}", places.join(", "))?;
        return write_damage(theme, &scan.damage, out);
    }
    let ids = unique_prefixes(scan.sessions.iter().map(|s| s.session_id.as_str()), 8);
    let w = ids.iter().map(|i| i.chars().count()).max().unwrap_or(8).max(8);
    let layout = Layout::fit(w, max);
    writeln!(out, "{}", theme.bold(&layout.row(&COLUMNS.map(|c| c.0.to_string()))))?;
    let mut sum = SessionSummary::empty_total();
    for (s, id) in scan.sessions.iter().zip(&ids) {
        let mut cells = session_cells(s);
        cells[0] = id.clone();
        writeln!(out, "{}", layout.row(&cells))?;
        for sub in &s.subagents {
            let mut c = session_cells(sub);
            for i in [0, 1, 2, 3, 4, 5, 9, 10] {
                c[i] = String::new();
            }
            // The name takes the SESSION and PROJECT columns; in SESSION alone (PROJECT left
            // out) it loses its indent and `agent-`: `↳a2898e3` fits 8 characters.
            let cut = layout.name_span();
            let name = if cut >= 12 {
                clip(&format!("  ↳ {}", sub.session_id), cut)
            } else {
                let id = sub.session_id.strip_prefix("agent-").unwrap_or(&sub.session_id);
                clip(&format!("↳{id}"), cut)
            };
            let rest = layout.row(&c);
            let rest = rest.get(cut..).unwrap_or("");
            writeln!(out, "{}", theme.dim(&format!("{name:<cut$}{rest}")))?;
        }
        sum.add_row(s);
    }
    let mut t = session_cells(&sum);
    t[0] = "TOTAL".into();
    let n = scan.sessions.len();
    t[1] = format!("{n} sessions");
    if layout.widths[PROJECT].is_some_and(|pw| t[1].chars().count() > pw) {
        t[1] = n.to_string();
    }
    t[2] = String::new();
    t[9] = String::new();
    writeln!(out, "{}", theme.bold(&layout.row(&t)))?;
    let legend: Vec<&str> = [
        (8, "HIT cache reads / input"),
        (9, "CTX peak context / compaction point"),
        (10, "CMP compactions"),
        (11, "RES resumes"),
    ]
    .into_iter()
    .filter(|(i, _)| layout.shown(*i))
    .map(|(_, text)| text)
    .collect();
    for line in join_within(&legend, " · ", max).iter().flat_map(|l| wrap(l, max)) {
        writeln!(out, "{}", theme.dim(&line))?;
    }
    if sum.resumes > 0 {
        let text = format!(
            "resumes: {} re-wrote {} tokens (cache expired): {} over a warm cache",
            plural(sum.resumes, "call"),
            thousands(sum.resume_tokens),
            usd(sum.resume_premium_usd)
        );
        for line in wrap(&text, max) {
            writeln!(out, "{line}")?;
        }
    }
    if !sum.unpriced_models.is_empty() {
        let names: Vec<_> = sum.unpriced_models.iter().cloned().collect();
        let text = format!("unpriced models (not in COST, marked *): {}", names.join(", "));
        for line in wrap(&text, max) {
            writeln!(out, "{}", theme.warn(&line))?;
        }
    }
    write_damage(theme, &scan.damage, out)
}

/// `items` joined by `sep`, in as few lines of at most `max` characters as fit (an item
/// longer than `max` gets a line of its own).
fn join_within(items: &[&str], sep: &str, max: Option<usize>) -> Vec<String> {
    let mut lines: Vec<String> = vec![];
    for item in items {
        match lines.last_mut() {
            Some(l)
                if max.is_none_or(|m| {
                    l.chars().count() + sep.chars().count() + item.chars().count() <= m
                }) =>
            {
                l.push_str(sep);
                l.push_str(item);
            }
            _ => lines.push(item.to_string()),
        }
    }
    lines
}

/// `text` broken at spaces into lines of at most `max` characters, continuation lines
/// indented by two spaces (a word longer than a line is not cut).
fn wrap(text: &str, max: Option<usize>) -> Vec<String> {
    let Some(max) = max else { return vec![text.to_string()] };
    let mut lines: Vec<String> = vec![];
    let mut cur = String::new();
    for word in text.split(' ') {
        let fits = cur.chars().count() + 1 + word.chars().count() <= max;
        if cur.trim().is_empty() {
            cur.push_str(word);
        } else if fits {
            cur.push(' ');
            cur.push_str(word);
        } else {
            lines.push(std::mem::replace(&mut cur, format!("  {word}")));
        }
    }
    lines.push(cur);
    lines
}

/// Print the damage report (nothing when there is none).
pub fn write_damage(theme: &Theme, d: &Damage, out: &mut dyn Write) -> std::io::Result<()> {
    if !d.unreadable.is_empty() {
        writeln!(
            out,
            "{}",
            theme.warn(&format!(
                "unreadable files or folders: {} skipped (or read only up to the failure)",
                d.unreadable.len()
            ))
        )?;
        for u in &d.unreadable {
            writeln!(out, "  {}: {}", u.path.display(), u.reason)?;
        }
    }
    if d.skipped() + d.repaired() == 0 {
        return Ok(());
    }
    let parts: Vec<String> =
        d.counts().iter().map(|(k, n)| format!("{n} {}", k.describe())).collect();
    writeln!(
        out,
        "{}",
        theme.warn(&format!(
            "damaged lines: {} skipped, {} repaired ({})",
            d.skipped(),
            d.repaired(),
            parts.join(", ")
        ))
    )?;
    for e in d.examples.iter().take(5) {
        writeln!(out, "  {}:{}: {}", e.path.display(), e.line, e.kind.describe())?;
    }
    Ok(())
}

/// The shortest prefix of each id (at least `min` characters) that no other id shares, so
/// that the SESSION column tells file-named sessions apart and can be passed to `--turns`.
pub fn unique_prefixes<'a>(ids: impl Iterator<Item = &'a str> + Clone, min: usize) -> Vec<String> {
    let all: Vec<&str> = ids.collect();
    all.iter()
        .map(|id| {
            let chars: Vec<char> = id.chars().collect();
            let mut n = min.min(chars.len());
            loop {
                let p: String = chars[..n].iter().collect();
                let shared = all.iter().any(|o| o != id && o.starts_with(&p));
                if !shared || n >= chars.len() {
                    return p;
                }
                n += 1;
            }
        })
        .collect()
}

/// The cells of a session's row in the session table, under [`COLUMNS`].
pub fn session_cells(s: &SessionSummary) -> [String; 13] {
    let unpriced = if s.unpriced_models.is_empty() { "" } else { "*" };
    [
        s.session_id.chars().take(8).collect(),
        clip(project_name(&s.project), 13),
        s.start_ms.map(short_time).unwrap_or_default(),
        dur(s.duration_s),
        dur(s.active_s),
        s.turns.to_string(),
        s.api_calls.to_string(),
        tokens(s.tokens.total()),
        s.cache_hit_ratio.map(|r| format!("{:.0}%", r * 100.0)).unwrap_or_else(|| "-".into()),
        if s.peak_context_tokens > 0 { format!("{:.0}%", s.peak_context_pct) } else { "-".into() },
        s.compactions.len().to_string(),
        s.resumes.to_string(),
        match s.cost_usd {
            Some(c) => format!("{}{unpriced}", usd(c)),
            None if s.unpriced_models.is_empty() => "-".into(),
            None => "unpriced".into(),
        },
    ]
}

impl SessionSummary {
    fn empty_total() -> SessionSummary {
        SessionSummary {
            session_id: String::new(),
            source: Source::Claude,
            project: String::new(),
            path: PathBuf::new(),
            start: None,
            end: None,
            duration_s: 0.0,
            active_s: 0.0,
            turns: 0,
            api_calls: 0,
            compactions: vec![],
            tokens: Tokens::default(),
            cache_hit_ratio: None,
            cost_usd: None,
            peak_context_tokens: 0,
            peak_context_pct: 0.0,
            compaction_point: 0,
            resumes: 0,
            resume_tokens: 0,
            resume_cost_usd: 0.0,
            resume_premium_usd: 0.0,
            unpriced_models: Default::default(),
            models: Default::default(),
            subagents: vec![],
            damage: Damage::default(),
            end_ms: None,
            start_ms: None,
        }
    }

    fn add_row(&mut self, s: &SessionSummary) {
        self.duration_s += s.duration_s;
        self.active_s += s.active_s;
        self.turns += s.turns;
        self.api_calls += s.api_calls;
        self.compactions.extend(s.compactions.iter().cloned());
        self.tokens.add(&s.tokens);
        self.cache_hit_ratio = self.tokens.cache_hit_ratio();
        self.cost_usd = match (self.cost_usd, s.cost_usd) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        self.resumes += s.resumes;
        self.resume_tokens += s.resume_tokens;
        self.resume_premium_usd += s.resume_premium_usd;
        self.unpriced_models.extend(s.unpriced_models.iter().cloned());
    }
}

fn turns(
    theme: &Theme,
    opts: &MeasureOptions,
    id: &str,
    engine: EngineOptions<'_>,
    out: &mut dyn Write,
) -> Result<u8> {
    let jobs = select_jobs(opts, &mut Damage::default())?;
    let by_name: Vec<&Job> = jobs.iter().filter(|j| job_id(j).contains(id)).collect();
    let mut found: Vec<(SessionSummary, Vec<ApiCall>)> = vec![];
    for job in by_name {
        let (s, calls) = match job {
            Job::Claude(f) => claude::read(f, engine).map(|r| (r.summary, r.calls))?,
            Job::Codex(p) => codex::read(p, engine).map(|r| (r.summary, r.calls))?,
        };
        if s.session_id.starts_with(id) || job_id(job).starts_with(id) {
            found.push((s, calls));
        }
    }
    let (s, calls) = match found.len() {
        1 => found.remove(0),
        0 => {
            return Err(Error::usage(format!("no session `{id}`"))
                .with_hint("run `kit measure` to list sessions and their ids"))
        }
        _ => {
            let first = &found[0].0.session_id;
            if found.iter().all(|(s, _)| &s.session_id == first) {
                // One id, several transcripts: the same session id in different projects (a
                // copied or replayed transcript). Only its file tells them apart.
                let places: Vec<_> = found
                    .iter()
                    .map(|(s, _)| format!("{} ({})", s.project, s.path.display()))
                    .collect();
                return Err(Error::usage(format!(
                    "`{id}` matches {} sessions with the same id {first}, in different projects: {}",
                    found.len(),
                    places.join("; ")
                ))
                .with_hint(format!(
                    "name the transcript to pick one: kit measure --turns {id} {}",
                    found[0].0.path.display()
                )));
            }
            let ids: Vec<_> = found.iter().map(|(s, _)| s.session_id.clone()).collect();
            return Err(Error::usage(format!(
                "`{id}` matches {} sessions: {}",
                ids.len(),
                ids.join(", ")
            ))
            .with_hint("give more of the session id"));
        }
    };
    if opts.json {
        let rows: Vec<Value> = calls.iter().map(|c| call_json(c, s.compaction_point)).collect();
        let doc = json!({
            "schema": "kit.measure.turns/1",
            "session": session_json(&s),
            "calls": rows,
        });
        let text =
            serde_json::to_string_pretty(&doc).map_err(|e| Error::internal(e.to_string()))?;
        writeln!(out, "{text}").map_err(|e| Error::io("stdout", e))?;
        return Ok(0);
    }
    write_turns(theme, &s, &calls, out).map_err(|e| Error::io("stdout", e))?;
    Ok(0)
}

fn job_id(j: &Job) -> String {
    match j {
        Job::Claude(f) => f.session_id.clone(),
        Job::Codex(p) => discover::stem(p),
    }
}

/// One call of the `kit.measure.turns/1` document (`calls[]`).
pub fn call_json(c: &ApiCall, point: u64) -> Value {
    json!({
        "time": c.ts_ms.map(crate::transcript::format_ts_ms),
        "gap_s": c.gap_s,
        "model": &*c.model,
        "input_tokens": c.usage.input,
        "cache_write_tokens": c.usage.cache_write_5m + c.usage.cache_write_1h,
        "cache_write_5m_tokens": c.usage.cache_write_5m,
        "cache_write_1h_tokens": c.usage.cache_write_1h,
        "cache_read_tokens": c.usage.cache_read,
        "output_tokens": c.usage.output,
        "reasoning_tokens": c.reasoning,
        "cost_usd": c.cost_usd,
        "context_tokens": c.context_tokens,
        "context_pct": if point > 0 { c.context_tokens as f64 * 100.0 / point as f64 } else { 0.0 },
        "resume": c.resume,
        "resume_premium_usd": c.resume_premium_usd,
        "sidechain": c.sidechain,
    })
}

/// The headers of the `--turns` table's columns, in order (NOTE last).
pub const TURN_COLUMNS: [&str; 10] =
    ["#", "TIME", "GAP", "INPUT", "WRITE", "READ", "OUTPUT", "COST", "CTX", "NOTE"];

/// One line of the `--turns` table.
#[derive(Clone, Debug)]
pub enum TurnLine<'a> {
    /// An API call: its cells under [`TURN_COLUMNS`] (NOTE included, possibly empty).
    Call {
        /// The call.
        call: &'a ApiCall,
        /// The text of each column.
        cells: Box<[String; 10]>,
    },
    /// A compaction, between the calls before and after it.
    Compaction(&'a Compaction),
}

/// The `--turns` table of a session as lines: its calls in order, each compaction after the
/// last call logged at or before it (the ones without a time at the end). `kit measure
/// --turns` prints these; `kit report` shows the same cells.
pub fn turn_lines<'a>(s: &'a SessionSummary, calls: &'a [ApiCall]) -> Vec<TurnLine<'a>> {
    let mut lines = Vec::with_capacity(calls.len() + s.compactions.len());
    let mut compactions = s.compactions.iter().peekable();
    for (i, c) in calls.iter().enumerate() {
        while let Some(k) = compactions.next_if(|k| match (k.at_ms, c.ts_ms) {
            (Some(a), Some(t)) => a <= t,
            _ => false,
        }) {
            lines.push(TurnLine::Compaction(k));
        }
        let mut note = vec![];
        if c.resume {
            note.push(format!("resume +{}", usd(c.resume_premium_usd)));
        }
        if c.sidechain {
            note.push("sidechain".to_string());
        }
        if c.cost_usd.is_none() {
            note.push(format!("unpriced {}", c.model));
        }
        let cells = [
            (i + 1).to_string(),
            c.ts_ms.map(clock_time).unwrap_or_default(),
            c.gap_s.map(dur).unwrap_or_else(|| "-".into()),
            tokens(c.usage.input),
            tokens(c.usage.cache_write_5m + c.usage.cache_write_1h),
            tokens(c.usage.cache_read),
            tokens(c.usage.output),
            c.cost_usd.map(usd).unwrap_or_else(|| "?".into()),
            if s.compaction_point > 0 {
                format!("{:.0}%", c.context_tokens as f64 * 100.0 / s.compaction_point as f64)
            } else {
                "-".into()
            },
            note.join(", "),
        ];
        lines.push(TurnLine::Call { call: c, cells: Box::new(cells) });
    }
    lines.extend(compactions.map(TurnLine::Compaction));
    lines
}

/// A compaction as the `--turns` table writes it: `compaction (auto): 167,094 -> 31,205 tokens`.
pub fn compaction_text(k: &Compaction) -> String {
    let after = k.tokens_after.map(thousands).unwrap_or_else(|| "?".into());
    format!("compaction ({}): {} -> {} tokens", k.trigger, thousands(k.tokens_before), after)
}

/// The `--turns` table's last line: `total 331.8k tokens · $0.66 · 1 resume ($0.48 beyond a
/// warm cache)`.
pub fn turns_total_text(s: &SessionSummary) -> String {
    format!(
        "total {} tokens · {} · {} ({} beyond a warm cache)",
        tokens(s.tokens.total()),
        s.cost_usd.map(usd).unwrap_or_else(|| "unpriced".into()),
        plural(s.resumes, "resume"),
        usd(s.resume_premium_usd)
    )
}

fn write_turns(
    theme: &Theme,
    s: &SessionSummary,
    calls: &[ApiCall],
    out: &mut dyn Write,
) -> std::io::Result<()> {
    writeln!(
        out,
        "{} {} · {} · {} API calls · compaction point {} tokens",
        theme.bold("session"),
        s.session_id,
        project_name(&s.project),
        calls.len(),
        thousands(s.compaction_point)
    )?;
    let row = |c: &[String; 10]| {
        format!(
            "{:>4} {:<8} {:>7} {:>7} {:>7} {:>8} {:>7} {:>8} {:>5}  {}",
            c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9]
        )
    };
    writeln!(out, "{}", theme.bold(row(&TURN_COLUMNS.map(String::from)).trim_end()))?;
    let mut calls_done = calls.is_empty();
    for line in turn_lines(s, calls) {
        match line {
            TurnLine::Compaction(k) => {
                // Compactions after the last call (no time to place them by) print plain.
                let text = format!("     -- {}", compaction_text(k));
                if calls_done {
                    writeln!(out, "{text}")?;
                } else {
                    writeln!(out, "{}", theme.warn(&text))?;
                }
            }
            TurnLine::Call { call, cells } => {
                let text = row(&cells);
                let text = text.trim_end();
                if call.resume {
                    writeln!(out, "{}", theme.warn(text))?;
                } else {
                    writeln!(out, "{text}")?;
                }
                calls_done = cells[0] == calls.len().to_string();
            }
        }
    }
    writeln!(out, "{}", turns_total_text(s))?;
    Ok(())
}

/// `1 call`, `2 calls`, `3 matches`.
pub fn plural(n: u64, word: &str) -> String {
    match (n, word.ends_with("ch")) {
        (1, _) => format!("1 {word}"),
        (_, true) => format!("{n} {word}es"),
        _ => format!("{n} {word}s"),
    }
}

/// The last component of a working directory, for narrow columns.
pub fn project_name(p: &str) -> &str {
    p.trim_end_matches('/').rsplit('/').next().filter(|s| !s.is_empty()).unwrap_or(p)
}

/// Cut `s` to `n` characters, marking a cut with `…`.
pub fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// Tokens compactly: `950`, `12.3k`, `4.5M`.
pub fn tokens(n: u64) -> String {
    if n < 1000 {
        n.to_string()
    } else if n < 1_000_000 {
        format!("{:.1}k", n as f64 / 1e3)
    } else if n < 1_000_000_000 {
        format!("{:.1}M", n as f64 / 1e6)
    } else {
        format!("{:.1}G", n as f64 / 1e9)
    }
}

/// Dollars: `$0.04`, `$12.30`, `$0.0012` for sub-cent amounts.
pub fn usd(x: f64) -> String {
    if x != 0.0 && x.abs() < 0.01 {
        format!("${x:.4}")
    } else {
        format!("${x:.2}")
    }
}

/// `1,234,567`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A duration as the tables print it: `0s`, `45s`, `2m05s`, `4h11m`, `5d03h`.
pub fn dur(s: f64) -> String {
    if s <= 0.0 {
        return "0s".into();
    }
    let secs = s.round() as u64;
    if secs < 60 {
        format!("{secs}s")
    } else if secs < 3600 {
        format!("{}m{:02}s", secs / 60, secs % 60)
    } else if secs < 100 * 3600 {
        format!("{}h{:02}m", secs / 3600, secs % 3600 / 60)
    } else {
        format!("{}d{:02}h", secs / 86_400, secs % 86_400 / 3600)
    }
}

fn short_time(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| t.strftime("%m-%d %H:%M").to_string())
        .unwrap_or_default()
}

/// `HH:MM:SS` (UTC) of Unix ms; the arithmetic of `%H:%M:%S` without a formatter, as the
/// `--turns` table (and `kit report`'s, a row per API call of every session) prints it often.
fn clock_time(ms: i64) -> String {
    let s = ms.div_euclid(1000).rem_euclid(86_400);
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(dur(15_060.0), "4h11m");
        assert_eq!(dur(125.0), "2m05s");
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
