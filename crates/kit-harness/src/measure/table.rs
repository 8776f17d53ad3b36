//! The session table of `kit measure`: its columns, how they give way on a narrow terminal (display
//! widths, [`crate::units`]), the totals row, the legend and the damage report.

use std::io::Write;
use std::path::PathBuf;

use crate::term::Theme;
use crate::transcript::{Damage, SessionSummary, Source, Tokens};
use crate::units::{pad, secs, width};

use super::*;

/// The session table's columns in display order: header, width (characters), right-aligned.
/// SESSION's width is the longest unique id prefix (at least 8), set per table.
pub(crate) const COLUMNS: [(&str, usize, bool); 13] = [
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
pub(super) const SESSION: usize = 0;
pub(super) const PROJECT: usize = 1;

/// One step by which the session table gives way on a narrow terminal.
#[derive(Clone, Copy, Debug)]
pub(super) enum GiveWay {
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
pub(super) const GIVE_WAY: [GiveWay; 12] = [
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
pub(super) struct Layout {
    pub(super) widths: [Option<usize>; 13],
}

impl Layout {
    /// The widest layout that fits in `max` characters (all columns when `max` is None),
    /// giving way in [`GIVE_WAY`] order; SESSION is `session_w` wide. When even SESSION and
    /// COST do not fit, that is what is shown.
    pub(super) fn fit(session_w: usize, max: Option<usize>) -> Layout {
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
    pub(super) fn width(&self) -> usize {
        let shown: Vec<usize> = self.widths.iter().flatten().copied().collect();
        shown.iter().sum::<usize>() + shown.len().saturating_sub(1)
    }

    pub(super) fn shown(&self, i: usize) -> bool {
        self.widths[i].is_some()
    }

    /// One row; PROJECT text is cut to its width, numbers are never cut.
    fn row(&self, cells: &[String; 13]) -> String {
        let mut parts = vec![];
        for (i, (cell, w)) in cells.iter().zip(self.widths).enumerate() {
            let Some(w) = w else { continue };
            let cell = if i == PROJECT { clip(cell, w) } else { cell.clone() };
            parts.push(pad(&cell, w, COLUMNS[i].2));
        }
        parts.join(" ").trim_end().to_string()
    }

    /// Characters taken by SESSION and PROJECT (with the space between them), where a
    /// subagent's name is written.
    fn name_span(&self) -> usize {
        self.widths[SESSION].unwrap_or(0) + self.widths[PROJECT].map_or(0, |w| w + 1)
    }
}

pub(super) fn write_table(
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
    let w = ids.iter().map(|i| width(i)).max().unwrap_or(8).max(8);
    let layout = Layout::fit(w, max);
    writeln!(out, "{}", theme.bold(&layout.row(&COLUMNS.map(|c| c.0.to_string()))))?;
    let mut sum = empty_total();
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
            writeln!(out, "{}", theme.dim(&format!("{}{rest}", pad(&name, cut, false))))?;
        }
        add_row(&mut sum, s);
    }
    let mut t = session_cells(&sum);
    t[0] = "TOTAL".into();
    let n = scan.sessions.len();
    t[1] = format!("{n} sessions");
    if layout.widths[PROJECT].is_some_and(|pw| width(&t[1]) > pw) {
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
pub(super) fn join_within(items: &[&str], sep: &str, max: Option<usize>) -> Vec<String> {
    let mut lines: Vec<String> = vec![];
    for item in items {
        match lines.last_mut() {
            Some(l) if max.is_none_or(|m| width(l) + width(sep) + width(item) <= m) => {
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
pub(super) fn wrap(text: &str, max: Option<usize>) -> Vec<String> {
    let Some(max) = max else { return vec![text.to_string()] };
    let mut lines: Vec<String> = vec![];
    let mut cur = String::new();
    for word in text.split(' ') {
        let fits = width(&cur) + 1 + width(word) <= max;
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
pub(crate) fn write_damage(theme: &Theme, d: &Damage, out: &mut dyn Write) -> std::io::Result<()> {
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
pub(crate) fn unique_prefixes<'a>(
    ids: impl Iterator<Item = &'a str> + Clone,
    min: usize,
) -> Vec<String> {
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
pub(crate) fn session_cells(s: &SessionSummary) -> [String; 13] {
    let unpriced = if s.unpriced_models.is_empty() { "" } else { "*" };
    [
        s.session_id.chars().take(8).collect(),
        clip(project_name(&s.project), 13),
        s.start_ms.map(short_time).unwrap_or_default(),
        secs(s.duration_s),
        secs(s.active_s),
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

/// The totals row before any session is added to it (the type is `transcript`'s).
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

/// Adds session `s` to the totals row `sum`.
fn add_row(sum: &mut SessionSummary, s: &SessionSummary) {
    sum.duration_s += s.duration_s;
    sum.active_s += s.active_s;
    sum.turns += s.turns;
    sum.api_calls += s.api_calls;
    sum.compactions.extend(s.compactions.iter().cloned());
    sum.tokens.add(&s.tokens);
    sum.cache_hit_ratio = sum.tokens.cache_hit_ratio();
    sum.cost_usd = match (sum.cost_usd, s.cost_usd) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    };
    sum.resumes += s.resumes;
    sum.resume_tokens += s.resume_tokens;
    sum.resume_premium_usd += s.resume_premium_usd;
    sum.unpriced_models.extend(s.unpriced_models.iter().cloned());
}

/// The last component of a working directory, for narrow columns.
pub(crate) fn project_name(p: &str) -> &str {
    p.trim_end_matches('/').rsplit('/').next().filter(|s| !s.is_empty()).unwrap_or(p)
}

pub(super) fn short_time(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| t.strftime("%m-%d %H:%M").to_string())
        .unwrap_or_default()
}

/// `HH:MM:SS` (UTC) of Unix ms; the arithmetic of `%H:%M:%S` without a formatter, as the
/// `--turns` table (and `kit report`'s, a row per API call of every session) prints it often.
pub(super) fn clock_time(ms: i64) -> String {
    let s = ms.div_euclid(1000).rem_euclid(86_400);
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}
