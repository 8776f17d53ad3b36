//! `kit mine [PATH…] [--since WHEN] [--json] [--agent CMD] [--apply FILE [--only ID,…]]`
//! (issue 14): read past transcripts (Claude Code and Codex, the same roots and PATHs as
//! `kit measure`) and the journal of past loops, find the failures that recur, and propose for
//! each a rule for the project's instruction file (CLAUDE.md, AGENTS.md) in one sentence.
//!
//! When an agent fails the same way again and again, the fix belongs in the instructions it
//! reads at every start, not in a log nobody reads. The patterns ([`patterns`], each with a
//! documented threshold so that one occurrence is never a pattern): the same command failing
//! with the same error; tests weakened or deleted by the agent (tool calls, and the loop's
//! reverts: `cheat` events of `longrun/journal.jsonl`); a compaction spiral; resumes after the
//! prompt cache expired (the engine's resumes, DESIGN §8); permission denials; the same file
//! read many times in one session; Stop-hook blocks the agent did not act on.
//!
//! Deterministic: the rules are kit's own wording, the order is fixed (most occurrences first,
//! then kind, then id), and ids are hashes of what recurs. `--agent CMD` hands the findings
//! (`kit.mine/1` JSON on stdin) to the user's own command to word the rules; what it prints is
//! shown as proposals and never written. kit never runs text from a transcript (DESIGN §12):
//! the only command it starts is the user's CMD.
//!
//! "Accepted" is explicit and simple: nothing is written without `--apply FILE`, which appends
//! every rule listed (or those named by `--only`) that FILE does not hold yet — each rule one
//! line ending in the marker `<!-- kit mine: ID -->` — after printing the diff, atomically.
//! A second run finds the markers and adds nothing twice.

#[cfg(test)]
mod agree;
pub(crate) mod apply;
pub(crate) mod patterns;
pub(crate) mod read;

use std::io::Write;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::Serialize;

use crate::error::{Error, Result, EXIT_OK};
use crate::longrun::event::Event;
use crate::longrun::Project;
use crate::term::Theme;
use crate::transcript::discover::{self, Job};
use crate::transcript::{claude, codex, Damage, EngineOptions, Source};

pub(crate) use patterns::Finding;
use read::{Fact, What};

/// The JSON schema name.
pub(crate) const SCHEMA: &str = "kit.mine/1";

/// What `kit mine` was asked, validated.
#[derive(Clone, Debug, Default)]
pub struct MineOptions {
    /// Roots, project folders, transcript files, or `longrun/journal.jsonl` files; empty = the
    /// default roots.
    pub paths: Vec<PathBuf>,
    /// Where kit runs: the project whose journal is read, and the base of a relative `--apply`.
    pub cwd: PathBuf,
    /// Only sessions active, and journal events written, at or after this time (Unix ms).
    pub since_ms: Option<i64>,
    /// Print JSON.
    pub json: bool,
    /// A command to word the rules (run with `sh -c`, the findings on stdin).
    pub agent: Option<String>,
    /// Append the rules to this instruction file.
    pub apply: Option<PathBuf>,
    /// With `apply`: only these finding ids.
    pub only: Vec<String>,
}

/// Where one occurrence of a pattern was logged.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct Occurrence {
    /// The session's id; None for a journal event.
    pub session_id: Option<String>,
    /// `claude`, `codex` or `journal`.
    pub source: String,
    /// The transcript or journal file.
    pub path: PathBuf,
    /// 1-based line in it (0 when the line is not known).
    pub line: usize,
    /// What happened there, in a few words.
    pub detail: String,
}

/// One session's facts, with the engine's resumes placed on their lines.
#[derive(Clone, Debug)]
pub(crate) struct SessionFacts {
    /// Session id.
    pub session_id: String,
    /// Source.
    pub source: Source,
    /// Facts of all the session's files, in file then line order.
    pub facts: Vec<Fact>,
    /// Calls that re-wrote the context after the cache expired, and the tokens re-written.
    pub resumes: Vec<(Fact, u64)>,
    /// What those resumes cost beyond a warm cache (USD).
    pub resume_premium_usd: f64,
}

/// A journal that was read.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct JournalSummary {
    /// The file.
    pub path: PathBuf,
    /// Events read (after `--since`).
    pub events: usize,
    /// `cheat` events that reverted a file.
    pub reverts: usize,
    /// 1-based lines skipped as torn or malformed.
    pub skipped_lines: Vec<usize>,
}

/// The thresholds in force (see [`patterns`]).
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Thresholds {
    /// [`patterns::SAME_FAILURE_MIN_SESSIONS`].
    pub same_failure_min_sessions: usize,
    /// [`patterns::SAME_FAILURE_MIN_TIMES`].
    pub same_failure_min_times: usize,
    /// [`patterns::TEST_EDITS_MIN`].
    pub test_edits_min: usize,
    /// [`patterns::COMPACTIONS_MIN`].
    pub compactions_min: usize,
    /// [`patterns::RESUMES_MIN`].
    pub resumes_min: usize,
    /// [`patterns::DENIALS_MIN`].
    pub denials_min: usize,
    /// [`patterns::READS_MIN`].
    pub reads_min: usize,
    /// [`patterns::IGNORED_BLOCKS_MIN`].
    pub ignored_blocks_min: usize,
}

impl Thresholds {
    /// The constants of [`patterns`].
    pub(crate) fn current() -> Thresholds {
        use patterns::*;
        Thresholds {
            same_failure_min_sessions: SAME_FAILURE_MIN_SESSIONS,
            same_failure_min_times: SAME_FAILURE_MIN_TIMES,
            test_edits_min: TEST_EDITS_MIN,
            compactions_min: COMPACTIONS_MIN,
            resumes_min: RESUMES_MIN,
            denials_min: DENIALS_MIN,
            reads_min: READS_MIN,
            ignored_blocks_min: IGNORED_BLOCKS_MIN,
        }
    }
}

/// The `kit.mine/1` document.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Report {
    /// `kit.mine/1`.
    pub schema: &'static str,
    /// Sessions read.
    pub sessions: usize,
    /// Journals read.
    pub journals: Vec<JournalSummary>,
    /// The thresholds in force.
    pub thresholds: Thresholds,
    /// The findings, most occurrences first.
    pub findings: Vec<Finding>,
    /// Transcript lines skipped as damaged.
    pub skipped_lines: u64,
    /// The damage met in transcripts, as `kit measure` reports it.
    pub damage: Damage,
}

/// The text after `kit mine --help`'s options: what is written when, and the thresholds.
pub fn after_help() -> String {
    use patterns::*;
    format!(
        "Nothing is written without --apply. --apply FILE appends every rule listed (or those of \
         --only) once, each marked <!-- kit mine: ID --> so that a second run adds none twice, and \
         shows the diff first. --agent output is shown as proposals and never written.\n\n\
         Thresholds (one occurrence is never a pattern): the same failure in \
         {SAME_FAILURE_MIN_SESSIONS} sessions or {SAME_FAILURE_MIN_TIMES} times in one; \
         {TEST_EDITS_MIN} changes to tests or frozen files; {COMPACTIONS_MIN} compactions in one \
         session; {RESUMES_MIN} resumes after the cache expired; {DENIALS_MIN} denials of one \
         tool; {READS_MIN} reads of one file in one session; {IGNORED_BLOCKS_MIN} ignored Stop-hook \
         blocks."
    )
}

/// Whether a PATH is a loop journal rather than a transcript: a file `journal.jsonl` in a
/// folder `longrun`.
fn is_journal(p: &Path) -> bool {
    p.file_name().is_some_and(|n| n == "journal.jsonl")
        && p.parent().and_then(|d| d.file_name()).is_some_and(|n| n == crate::longrun::DIR)
}

/// Read everything `opts` selects and find the patterns.
///
/// Errors: a PATH that does not exist (exit 2); I/O on a journal named as a PATH. Damaged
/// transcript lines and journal lines are counted, never fatal.
pub(crate) fn mine(opts: &MineOptions) -> Result<Report> {
    let (journal_paths, transcript_paths): (Vec<PathBuf>, Vec<PathBuf>) =
        opts.paths.iter().cloned().partition(|p| is_journal(p));
    let mut damage = Damage::default();
    let jobs = if transcript_paths.is_empty() && !journal_paths.is_empty() {
        vec![]
    } else {
        discover::discover(&transcript_paths, &mut damage)?
    };
    let engine = EngineOptions::standard();
    let read: Vec<(Option<SessionFacts>, Damage)> =
        jobs.par_iter().map(|job| read_job(job, engine, opts.since_ms)).collect();
    let mut sessions = vec![];
    for (s, d) in read {
        damage.merge(&d);
        sessions.extend(s);
    }
    let mut journals = vec![];
    let mut reverts = vec![];
    let mut seen = std::collections::HashSet::new();
    let mut candidates: Vec<(PathBuf, bool)> =
        journal_paths.into_iter().map(|p| (p, true)).collect();
    if let Ok(p) = Project::discover(&opts.cwd) {
        candidates.push((p.journal(), false));
    }
    // A journal named as PATH is read as given, like the transcript PATHs; the project's is
    // absolute and shown relative to where kit runs.
    for (path, named) in candidates {
        let real = std::fs::canonicalize(&path);
        if !named && real.is_err() {
            continue;
        }
        if let Ok(r) = &real {
            if !seen.insert(r.clone()) {
                continue;
            }
        }
        let shown = shown_path(&path, &opts.cwd);
        let (summary, occ) = read_journal(&path, &shown, opts.since_ms)?;
        journals.push(summary);
        reverts.extend(occ);
    }
    let findings = patterns::find(&sessions, &reverts);
    Ok(Report {
        schema: SCHEMA,
        sessions: sessions.len(),
        journals,
        thresholds: Thresholds::current(),
        findings,
        skipped_lines: damage.skipped(),
        damage,
    })
}

/// A journal found in the project is shown relative to where kit runs when it is inside it.
fn shown_path(p: &Path, cwd: &Path) -> PathBuf {
    match p.strip_prefix(cwd) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.to_path_buf(),
        _ => p.to_path_buf(),
    }
}

/// One session: the engine's summary and calls (for resumes and `--since`), and this module's
/// pass for tool calls and results, with the damage met. No session when nothing of it is in
/// the `--since` window, or none of its files could be read (the damage says why).
fn read_job(
    job: &Job,
    engine: EngineOptions<'_>,
    since: Option<i64>,
) -> (Option<SessionFacts>, Damage) {
    let read = match job {
        Job::Claude(f) => claude::read(f, engine).map(|r| (r.summary, r.calls, f.main.clone())),
        Job::Codex(p) => codex::read(p, engine).map(|r| (r.summary, r.calls, Some(p.clone()))),
    };
    let (summary, calls, main) = match read {
        Ok(r) => r,
        Err(e) => {
            // Lenient reading turns I/O into damage; anything else is still only this session.
            let mut d = Damage::default();
            let path = job.files().first().map(|p| p.to_path_buf()).unwrap_or_default();
            d.add_unreadable(&path, e.to_string());
            return (None, d);
        }
    };
    let nothing_read = summary.api_calls == 0 && summary.start_ms.is_none();
    if nothing_read && !summary.damage.unreadable.is_empty() {
        return (None, summary.damage);
    }
    if since.is_some_and(|s| summary.end_ms.is_none_or(|e| e < s)) {
        // Outside the window: its damage is not reported either, as with `kit measure`.
        return (None, Damage::default());
    }
    let mut facts = vec![];
    let mut scratch = Damage::default();
    for f in job.files() {
        facts.extend(read::read_file(f, job.source(), &mut scratch));
    }
    let main_calls: Vec<&Fact> =
        facts.iter().filter(|f| f.what == What::Call && Some(&f.path) == main.as_ref()).collect();
    let mut resumes = vec![];
    for c in calls.iter().filter(|c| c.resume) {
        let at = main_calls.iter().find(|f| f.ts_ms.is_some() && f.ts_ms == c.ts_ms);
        let fact = match at {
            Some(f) => Fact { what: What::Call, ..(*f).clone() },
            None => Fact {
                path: main.clone().unwrap_or_default(),
                line: 0,
                ts_ms: c.ts_ms,
                what: What::Call,
            },
        };
        if since.is_none_or(|s| c.ts_ms.is_none_or(|t| t >= s)) {
            resumes.push((fact, c.usage.cache_write_5m + c.usage.cache_write_1h));
        }
    }
    facts.retain(|f| f.what != What::Call && since.is_none_or(|s| f.ts_ms.is_none_or(|t| t >= s)));
    let s = SessionFacts {
        session_id: summary.session_id.clone(),
        source: summary.source,
        facts,
        resumes,
        resume_premium_usd: summary.resume_premium_usd,
    };
    (Some(s), summary.damage)
}

/// Revert kinds that are not a change to a protected file (the journal, the lock, a run log).
const NOT_FILE_REVERTS: [&str; 3] = ["journal_appended", "lock_replaced", "run_log_deleted"];

/// Read a journal's `cheat` events as occurrences of edited tests or frozen files.
///
/// Errors: the file cannot be read ([`Error::Io`]; a missing file named as PATH is a usage
/// error). Torn or malformed lines are counted in the summary and skipped.
fn read_journal(
    path: &Path,
    shown: &Path,
    since: Option<i64>,
) -> Result<(JournalSummary, Vec<Occurrence>)> {
    // Only a regular file is opened: a FIFO named journal.jsonl would block the read forever.
    let read = crate::transcript::lines::open_regular(path).and_then(|mut f| {
        let mut b = vec![];
        std::io::Read::read_to_end(&mut f, &mut b).map(|_| b).map_err(|e| Error::io(path, e))
    });
    let bytes = match read {
        Ok(b) => b,
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::usage(format!("{}: no such file", shown.display())).with_hint(
                "give a longrun/journal.jsonl that exists, or run kit mine in the project",
            ))
        }
        Err(e) => return Err(e),
    };
    let mut summary =
        JournalSummary { path: shown.to_path_buf(), events: 0, reverts: 0, skipped_lines: vec![] };
    let mut occ = vec![];
    let read = crate::longrun::journal::parse(&bytes);
    summary.skipped_lines = read.skipped;
    for e in &read.entries {
        let ts =
            Some(e.ts.as_str()).filter(|t| !t.is_empty()).and_then(crate::transcript::parse_ts_ms);
        if since.is_some_and(|s| ts.is_none_or(|t| t < s)) {
            continue;
        }
        summary.events += 1;
        let Event::Cheat(c) = &e.event else { continue };
        let kind = if e.has("kind") { c.kind.as_str() } else { "changed" };
        if NOT_FILE_REVERTS.contains(&kind) || !e.has("path") {
            continue;
        }
        summary.reverts += 1;
        let iteration =
            if e.has("iteration") { format!(", iteration {}", c.iteration) } else { String::new() };
        occ.push(Occurrence {
            session_id: None,
            source: "journal".into(),
            path: shown.to_path_buf(),
            line: e.line,
            detail: format!(
                "{} {} (reverted by the loop{iteration})",
                c.path,
                kind.replace('_', " ")
            ),
        });
    }
    Ok((summary, occ))
}

/// Run `kit mine`. Returns the exit code: 0 (findings or not).
///
/// Errors: as [`mine`]; `--only` naming an id not found; `--agent`'s command failing to start
/// or exiting non-zero; `--apply`'s file not readable as UTF-8 or not writable.
pub fn run(theme: &Theme, opts: &MineOptions, out: &mut dyn Write) -> Result<u8> {
    let report = mine(opts)?;
    let io = |e| Error::io("stdout", e);
    if opts.json {
        let text =
            serde_json::to_string_pretty(&report).map_err(|e| Error::internal(e.to_string()))?;
        writeln!(out, "{text}").map_err(io)?;
        return Ok(EXIT_OK);
    }
    let chosen = choose(&report.findings, &opts.only)?;
    write_report(theme, &report, &chosen, opts, out).map_err(io)?;
    if let Some(cmd) = &opts.agent {
        apply::ask_agent(cmd, &report, &opts.cwd, out)?;
    }
    if let Some(file) = &opts.apply {
        apply::apply(file, &opts.cwd.join(file), &chosen, out)?;
    }
    Ok(EXIT_OK)
}

/// The findings `--only` keeps (all without it). Errors: an id that is not among them.
fn choose<'a>(findings: &'a [Finding], only: &[String]) -> Result<Vec<&'a Finding>> {
    if only.is_empty() {
        return Ok(findings.iter().collect());
    }
    for id in only {
        if !findings.iter().any(|f| &f.id == id) {
            let known: Vec<&str> = findings.iter().map(|f| f.id.as_str()).collect();
            let hint = if known.is_empty() {
                "kit mine found no patterns to apply".to_string()
            } else {
                format!("the ids found: {}", known.join(", "))
            };
            return Err(Error::usage(format!("--only: no finding `{id}`")).with_hint(hint));
        }
    }
    Ok(findings.iter().filter(|f| only.contains(&f.id)).collect())
}

/// How many places each finding lists in text (all are in `--json`).
const SHOWN_PLACES: usize = 4;

fn write_report(
    theme: &Theme,
    r: &Report,
    chosen: &[&Finding],
    opts: &MineOptions,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let mut read = vec![crate::units::plural(r.sessions as u64, "session")];
    for j in &r.journals {
        read.push(format!(
            "journal {} ({}, {})",
            j.path.display(),
            crate::units::plural(j.events as u64, "event"),
            crate::units::plural(j.reverts as u64, "revert")
        ));
    }
    writeln!(out, "read: {}", read.join(", "))?;
    if r.findings.is_empty() {
        writeln!(out, "no recurring failures (kit mine --help lists the thresholds)")?;
    }
    for f in chosen {
        writeln!(out)?;
        let sessions = match f.sessions.len() {
            0 => String::new(),
            n => format!(" in {}", crate::units::plural(n as u64, "session")),
        };
        writeln!(
            out,
            "{}  {}{sessions}",
            theme.bold(&f.id),
            crate::units::plural(f.count as u64, "time")
        )?;
        writeln!(out, "  {}", f.summary)?;
        let places: Vec<String> = f
            .occurrences
            .iter()
            .take(SHOWN_PLACES)
            .map(|o| {
                let at = if o.line > 0 {
                    format!("{}:{}", o.path.display(), o.line)
                } else {
                    o.path.display().to_string()
                };
                format!("{at} ({})", o.detail)
            })
            .collect();
        for (i, p) in places.iter().enumerate() {
            writeln!(out, "  {} {p}", if i == 0 { "at" } else { "  " })?;
        }
        let more = f.occurrences.len().saturating_sub(SHOWN_PLACES);
        if more > 0 {
            writeln!(out, "     and {more} more (kit mine --json lists them all)")?;
        }
        writeln!(out, "  rule: {}", f.rule)?;
    }
    if !r.findings.is_empty() && opts.apply.is_none() {
        writeln!(out)?;
        let n = crate::units::plural(chosen.len() as u64, "rule");
        // The same sources as this run (the paths, the agent that words the rules), or the
        // suggested command would mine elsewhere and write nothing (issue 22).
        let mut words = vec!["kit mine".to_string()];
        for p in &opts.paths {
            let p = p.to_string_lossy();
            words.push(shlex::try_quote(&p).map_or_else(|_| p.to_string(), |q| q.into_owned()));
        }
        if let Some(a) = &opts.agent {
            words.push(format!(
                "--agent {}",
                shlex::try_quote(a).map_or_else(|_| a.clone(), |q| q.into_owned())
            ));
        }
        writeln!(
            out,
            "next: {} --apply CLAUDE.md (or AGENTS.md) appends the {n}, after showing the diff; --only ID,… picks some",
            words.join(" ")
        )?;
    }
    crate::measure::write_damage(theme, &r.damage, out)?;
    for j in r.journals.iter().filter(|j| !j.skipped_lines.is_empty()) {
        writeln!(
            out,
            "{}",
            theme.warn(&format!(
                "damaged journal lines skipped: {} (lines {:?})",
                j.path.display(),
                j.skipped_lines
            ))
        )?;
    }
    Ok(())
}
