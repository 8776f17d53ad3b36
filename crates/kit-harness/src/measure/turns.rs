//! `kit measure --turns ID`: one row per API call of one session (or its JSON), with gaps, resumes
//! after the prompt cache expired and the context against the compaction point. Its lines
//! ([`turn_lines`]) are shared with `kit report`.

use std::io::Write;

use serde_json::{json, Value};

use crate::error::{Error, Result, EXIT_OK};
use crate::term::Theme;
use crate::transcript::discover::{self, Job};
use crate::transcript::{
    claude, codex, ApiCall, Compaction, Damage, EngineOptions, SessionSummary,
};
use crate::units::secs;

use super::*;

pub(super) fn turns(
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
        return Ok(EXIT_OK);
    }
    write_turns(theme, &s, &calls, out).map_err(|e| Error::io("stdout", e))?;
    Ok(EXIT_OK)
}

pub(super) fn job_id(j: &Job) -> String {
    match j {
        Job::Claude(f) => f.session_id.clone(),
        Job::Codex(p) => discover::stem(p),
    }
}

/// One call of the `kit.measure.turns/1` document (`calls[]`).
pub(crate) fn call_json(c: &ApiCall, point: u64) -> Value {
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
pub(crate) const TURN_COLUMNS: [&str; 10] =
    ["#", "TIME", "GAP", "INPUT", "WRITE", "READ", "OUTPUT", "COST", "CTX", "NOTE"];

/// One line of the `--turns` table.
#[derive(Clone, Debug)]
pub(crate) enum TurnLine<'a> {
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
pub(crate) fn turn_lines<'a>(s: &'a SessionSummary, calls: &'a [ApiCall]) -> Vec<TurnLine<'a>> {
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
            c.gap_s.map(secs).unwrap_or_else(|| "-".into()),
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
pub(crate) fn compaction_text(k: &Compaction) -> String {
    let after = k.tokens_after.map(thousands).unwrap_or_else(|| "?".into());
    format!("compaction ({}): {} -> {} tokens", k.trigger, thousands(k.tokens_before), after)
}

/// The `--turns` table's last line: `total 331.8k tokens · $0.66 · 1 resume ($0.48 beyond a
/// warm cache)`.
pub(crate) fn turns_total_text(s: &SessionSummary) -> String {
    format!(
        "total {} tokens · {} · {} ({} beyond a warm cache)",
        tokens(s.tokens.total()),
        s.cost_usd.map(usd).unwrap_or_else(|| "unpriced".into()),
        plural(s.resumes, "resume"),
        usd(s.resume_premium_usd)
    )
}

pub(super) fn write_turns(
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
