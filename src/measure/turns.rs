//! `kit measure --turns ID`: one row per API call of one session (or its JSON), with gaps, resumes
//! after the prompt cache expired and the context against the compaction point.

use std::io::Write;

use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::term::Theme;
use crate::transcript::discover::{self, Job};
use crate::transcript::{claude, codex, ApiCall, Damage, EngineOptions, SessionSummary};
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
        return Ok(0);
    }
    write_turns(theme, &s, &calls, out).map_err(|e| Error::io("stdout", e))?;
    Ok(0)
}

pub(super) fn job_id(j: &Job) -> String {
    match j {
        Job::Claude(f) => f.session_id.clone(),
        Job::Codex(p) => discover::stem(p),
    }
}

pub(super) fn call_json(c: &ApiCall, point: u64) -> Value {
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
    let head = format!(
        "{:>4} {:<8} {:>7} {:>7} {:>7} {:>8} {:>7} {:>8} {:>5}  {}",
        "#", "TIME", "GAP", "INPUT", "WRITE", "READ", "OUTPUT", "COST", "CTX", "NOTE"
    );
    writeln!(out, "{}", theme.bold(head.trim_end()))?;
    let mut compactions = s.compactions.iter().peekable();
    for (i, c) in calls.iter().enumerate() {
        while let Some(k) = compactions.next_if(|k| match (k.at_ms, c.ts_ms) {
            (Some(a), Some(t)) => a <= t,
            _ => false,
        }) {
            let after = k.tokens_after.map(thousands).unwrap_or_else(|| "?".into());
            writeln!(
                out,
                "{}",
                theme.warn(&format!(
                    "     -- compaction ({}): {} -> {} tokens",
                    k.trigger,
                    thousands(k.tokens_before),
                    after
                ))
            )?;
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
        let line = format!(
            "{:>4} {:<8} {:>7} {:>7} {:>7} {:>8} {:>7} {:>8} {:>5}  {}",
            i + 1,
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
            note.join(", ")
        );
        let line = line.trim_end();
        if c.resume {
            writeln!(out, "{}", theme.warn(line))?;
        } else {
            writeln!(out, "{line}")?;
        }
    }
    for k in compactions {
        writeln!(
            out,
            "     -- compaction ({}): {} -> {} tokens",
            k.trigger,
            thousands(k.tokens_before),
            k.tokens_after.map(thousands).unwrap_or_else(|| "?".into())
        )?;
    }
    writeln!(
        out,
        "total {} tokens · {} · {} ({} beyond a warm cache)",
        tokens(s.tokens.total()),
        s.cost_usd.map(usd).unwrap_or_else(|| "unpriced".into()),
        plural(s.resumes, "resume"),
        usd(s.resume_premium_usd)
    )?;
    Ok(())
}
