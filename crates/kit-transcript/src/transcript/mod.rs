//! The transcript engine (DESIGN §8): one reader for Claude Code JSONL and Codex rollouts that
//! turns a session's files into per-API-call records ([`ApiCall`]) and a [`SessionSummary`]:
//! start, end, wall and active time, user turns, API calls, compactions, tokens by kind,
//! cache hit ratio, cost, peak context against the compaction point, and resumes after the
//! prompt cache expired with their premium over a warm cache.
//!
//! `kit measure`, `kit recall`, the context-band hook and `kit cache` all stand on it. Files are
//! streamed line by line ([`lines`]); only one session's calls are held at a time. The hook,
//! which runs on every tool call, reads only the end of the live transcript ([`tail`]); where
//! the transcripts are, and Claude Code's configuration roots, is [`discover`]'s.
//!
//! Facts used here come from the format reference `formats/claude-code.md` (§4.2 dedup, §4.3 context,
//! §4.5 compaction point) and the format reference `formats/codex.md` (§5.1, §10 token accounting).

pub mod claude;
pub mod codex;
pub mod dedup;
pub mod discover;
pub mod ledger;
pub mod line;
pub mod lines;
pub mod point;
pub mod skim;
pub mod tail;

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;

pub use lines::{Damage, ReadLimits};

use crate::prices::{Lookup, PriceTable, Usage};

/// Gaps between consecutive lines longer than this are idle time, not active time (seconds).
/// 30 minutes: longer than any single tool run or model response in the samples, shorter than
/// a lunch break; the 4 h 11 min gap of the spotter sample is idle, the 6 min ones are not.
pub(crate) const IDLE_THRESHOLD_S: i64 = 30 * 60;

/// Prompt-cache TTLs (seconds) of Anthropic's two cache-write kinds.
pub const TTL_5M_S: i64 = 5 * 60;
/// One-hour cache TTL (seconds).
pub(crate) const TTL_1H_S: i64 = 60 * 60;

/// Claude Code's default context window (tokens) when the transcript does not show a larger one.
pub(crate) const DEFAULT_WINDOW: u64 = 200_000;

/// Which agent wrote a transcript.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// Claude Code (`~/.claude/projects/<project>/<session>.jsonl`).
    Claude,
    /// OpenAI Codex CLI (`~/.codex/sessions/YYYY/MM/DD/rollout-….jsonl`).
    Codex,
}

impl Source {
    /// `claude` or `codex`.
    pub fn name(self) -> &'static str {
        match self {
            Source::Claude => "claude",
            Source::Codex => "codex",
        }
    }
}

/// Token counts by kind, summed over API calls. Categories are disjoint: `input` is uncached
/// input (for Codex: input − cached − cache write); `reasoning` is informational and already
/// inside `output`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Tokens {
    /// Uncached input tokens.
    pub input_tokens: u64,
    /// Cache write tokens, both TTLs.
    pub cache_write_tokens: u64,
    /// Cache write tokens at the 5-minute TTL.
    pub cache_write_5m_tokens: u64,
    /// Cache write tokens at the 1-hour TTL.
    pub cache_write_1h_tokens: u64,
    /// Cache read tokens.
    pub cache_read_tokens: u64,
    /// Output tokens (reasoning included).
    pub output_tokens: u64,
    /// Reasoning tokens (Codex; part of output).
    pub reasoning_tokens: u64,
}

impl Tokens {
    /// Add one call's usage.
    pub(crate) fn add_usage(&mut self, u: &Usage, reasoning: u64) {
        self.input_tokens += u.input;
        self.cache_write_tokens += u.cache_write_5m + u.cache_write_1h;
        self.cache_write_5m_tokens += u.cache_write_5m;
        self.cache_write_1h_tokens += u.cache_write_1h;
        self.cache_read_tokens += u.cache_read;
        self.output_tokens += u.output;
        self.reasoning_tokens += reasoning;
    }

    /// Add another sum.
    pub fn add(&mut self, o: &Tokens) {
        self.input_tokens += o.input_tokens;
        self.cache_write_tokens += o.cache_write_tokens;
        self.cache_write_5m_tokens += o.cache_write_5m_tokens;
        self.cache_write_1h_tokens += o.cache_write_1h_tokens;
        self.cache_read_tokens += o.cache_read_tokens;
        self.output_tokens += o.output_tokens;
        self.reasoning_tokens += o.reasoning_tokens;
    }

    /// All tokens billed: input + cache writes + cache reads + output.
    pub fn total(&self) -> u64 {
        self.input_tokens + self.cache_write_tokens + self.cache_read_tokens + self.output_tokens
    }

    /// Cache reads over all input-side tokens (0–1), None without input.
    pub fn cache_hit_ratio(&self) -> Option<f64> {
        let all = self.input_tokens + self.cache_write_tokens + self.cache_read_tokens;
        (all > 0).then(|| self.cache_read_tokens as f64 / all as f64)
    }
}

/// The context of a request (tokens): input + cache writes + cache reads, output excluded
/// (claude-code.md §4.3, the statusline's `used_percentage` rule).
pub(crate) fn context_from_usage(u: &Usage) -> u64 {
    u.summed_input()
}

/// Environment settings that move Claude Code's auto-compaction point (claude-code.md §4.5).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompactionOverrides {
    /// `CLAUDE_CODE_AUTO_COMPACT_WINDOW` (tokens, 100,000–1,000,000).
    pub auto_compact_window: Option<u64>,
    /// `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE` (1–100): can only lower the point.
    pub pct_override: Option<u64>,
    /// `CLAUDE_CODE_MAX_OUTPUT_TOKENS`: the output reserve (capped at 20,000).
    pub max_output_tokens: Option<u64>,
}

impl CompactionOverrides {
    /// Read the three variables from this process's environment (unparsable values ignored).
    pub(crate) fn from_env() -> Self {
        Self::from_vars(|k| std::env::var(k).ok())
    }

    /// Read the three variables through `var` (the hook's own environment, a rehearsal's
    /// none); unparsable values and a percentage outside 1–100 are ignored, as Claude Code
    /// ignores them.
    pub(crate) fn from_vars(var: impl Fn(&str) -> Option<String>) -> Self {
        let num = |k: &str| var(k).and_then(|v| v.trim().parse::<u64>().ok());
        CompactionOverrides {
            auto_compact_window: num("CLAUDE_CODE_AUTO_COMPACT_WINDOW"),
            pct_override: num("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE").filter(|p| (1..=100).contains(p)),
            max_output_tokens: num("CLAUDE_CODE_MAX_OUTPUT_TOKENS"),
        }
    }
}

/// Output reserve Claude Code keeps below the window (tokens).
const OUTPUT_RESERVE: u64 = 20_000;
/// Buffer below the effective window where auto-compaction fires (tokens).
const COMPACT_BUFFER: u64 = 13_000;

/// Where Claude Code auto-compacts a context `window` (tokens), after overrides.
///
/// `window − min(max_output, 20,000) − 13,000`: 167,000 for a 200K window, confirmed by real
/// 2.1.3x `preTokens` of 167,094–170,251 (claude-code.md §4.5). An auto-compact window caps
/// the window first (clamped to 100K–1M); a percentage override can only lower the point.
pub(crate) fn compaction_point(window: u64, o: &CompactionOverrides) -> u64 {
    let mut window = window;
    if let Some(w) = o.auto_compact_window {
        window = window.min(w.clamp(100_000, 1_000_000));
    }
    let reserve = o.max_output_tokens.unwrap_or(OUTPUT_RESERVE).min(OUTPUT_RESERVE);
    let effective = window.saturating_sub(reserve);
    let default = effective.saturating_sub(COMPACT_BUFFER);
    match o.pct_override {
        Some(p) => (effective * p / 100).min(default),
        None => default,
    }
}

/// Codex's auto-compaction point from the rollout's `model_context_window` (tokens).
///
/// The rollout reports the *effective* window, 95% of the raw one (272,000 → 258,400); Codex
/// compacts at 90% of the raw window (codex.md §12): 258,400 → 244,800.
pub fn codex_compaction_point(model_context_window: u64) -> u64 {
    let raw = (model_context_window * 100 + 47) / 95;
    raw * 9 / 10
}

/// One API call (one model response), after deduplication.
#[derive(Clone, Debug, PartialEq)]
pub struct ApiCall {
    /// When the response was logged (Unix ms), if the line had a timestamp.
    pub ts_ms: Option<i64>,
    /// The model id as logged.
    pub model: Arc<str>,
    /// Tokens of this call by kind.
    pub usage: Usage,
    /// Reasoning tokens (inside `usage.output`).
    pub reasoning: u64,
    /// The context this request carried (tokens), see [`context_from_usage`]; for Codex the
    /// response's `last_token_usage.total_tokens`.
    pub context_tokens: u64,
    /// Seconds since the previous API call of the same agent, None for the first.
    pub gap_s: Option<f64>,
    /// Whether this call re-wrote the context after the cache TTL in force had expired (a gap
    /// past the TTL and a cold cache by [`is_rewrite`]).
    pub resume: bool,
    /// The premium of a resume over a warm cache (USD): the re-written tokens at the write
    /// rate minus the same tokens at the read rate. 0 when not a resume or unpriced.
    pub resume_premium_usd: f64,
    /// Cost in USD, None when the model is unpriced.
    pub cost_usd: Option<f64>,
    /// From a subagent (sidechain) rather than the main conversation.
    pub sidechain: bool,
    /// The call's dedup key as text (Claude: `message.id` NUL `requestId`, or `message.id`
    /// alone; [`dedup`]), kept for the ledger (`kit measure --ledger`); None for Codex and for
    /// a Claude call without a `message.id`.
    pub id: Option<Arc<str>>,
}

/// One compaction.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Compaction {
    /// When (RFC 3339), if known.
    pub at: Option<String>,
    /// `auto`, `manual`, or `unknown` (Codex does not log it).
    pub trigger: String,
    /// Context tokens just before.
    pub tokens_before: u64,
    /// Context tokens just after (Claude's `postTokens`, else the next call's context).
    pub tokens_after: Option<u64>,
    /// When, as Unix ms.
    #[serde(skip)]
    pub at_ms: Option<i64>,
}

/// Everything measured about one session (or one subagent of it).
#[derive(Clone, Debug, Serialize)]
pub struct SessionSummary {
    /// Session id (Claude: the file name, a UUID; Codex: `session_meta.id`).
    pub session_id: String,
    /// `claude` or `codex`.
    pub source: Source,
    /// The project: the working directory when logged, else the project folder's name.
    pub project: String,
    /// The main transcript file.
    pub path: PathBuf,
    /// First timestamp (RFC 3339).
    pub start: Option<String>,
    /// Last timestamp (RFC 3339).
    pub end: Option<String>,
    /// Wall time from start to end (seconds).
    pub duration_s: f64,
    /// Wall time minus idle gaps longer than [`IDLE_THRESHOLD_S`] (seconds).
    pub active_s: f64,
    /// Prompts typed by the user (not tool results, meta lines or command echoes).
    pub turns: u64,
    /// API calls after deduplication (subagents included).
    pub api_calls: u64,
    /// Compactions, in order.
    pub compactions: Vec<Compaction>,
    /// Tokens by kind (subagents included).
    #[serde(flatten)]
    pub tokens: Tokens,
    /// Cache reads over input-side tokens (0–1).
    pub cache_hit_ratio: Option<f64>,
    /// Cost in USD of the priced calls (subagents included); None if no call was priced.
    pub cost_usd: Option<f64>,
    /// The largest context of a main-conversation call (tokens).
    pub peak_context_tokens: u64,
    /// That peak as a percentage of the compaction point.
    pub peak_context_pct: f64,
    /// The compaction point used (tokens).
    pub compaction_point: u64,
    /// API calls that re-wrote the context after the cache had expired.
    pub resumes: u64,
    /// Tokens re-written by those calls.
    pub resume_tokens: u64,
    /// What those calls cost (USD).
    pub resume_cost_usd: f64,
    /// What they cost beyond a warm cache (USD).
    pub resume_premium_usd: f64,
    /// Models without a price (their calls are not in `cost_usd`).
    pub unpriced_models: BTreeSet<String>,
    /// Models used.
    pub models: BTreeSet<String>,
    /// Subagents of this session (Claude `<session>/subagents/*.jsonl`), one row each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub subagents: Vec<SessionSummary>,
    /// Damage met in this session's files.
    #[serde(skip)]
    pub damage: Damage,
    /// Last timestamp as Unix ms (for sorting and `--since`).
    #[serde(skip)]
    pub end_ms: Option<i64>,
    /// First timestamp as Unix ms.
    #[serde(skip)]
    pub start_ms: Option<i64>,
}

/// What a reader needs besides the files.
#[derive(Clone, Copy)]
pub struct EngineOptions<'a> {
    /// Prices.
    pub prices: &'a PriceTable,
    /// Damage handling.
    pub limits: ReadLimits,
    /// Compaction point overrides.
    pub overrides: CompactionOverrides,
}

impl<'a> EngineOptions<'a> {
    /// Embedded prices, lenient reading, overrides from the environment.
    pub fn standard() -> EngineOptions<'static> {
        EngineOptions {
            prices: PriceTable::embedded(),
            limits: ReadLimits::default(),
            overrides: CompactionOverrides::from_env(),
        }
    }
}

/// Wall and active time from a stream of timestamps in file order (not assumed monotonic).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Clock {
    first: Option<i64>,
    last: Option<i64>,
    active_ms: i64,
}

impl Clock {
    /// Note a line's timestamp (Unix ms).
    pub(crate) fn tick(&mut self, t: i64) {
        match self.last {
            None => {
                self.first = Some(t);
                self.last = Some(t);
            }
            Some(last) => {
                if t > last {
                    let d = t - last;
                    if d <= IDLE_THRESHOLD_S * 1000 {
                        self.active_ms += d;
                    }
                    self.last = Some(t);
                }
                if self.first.is_some_and(|f| t < f) {
                    self.first = Some(t);
                }
            }
        }
    }
}

/// Parse an RFC 3339 timestamp into Unix ms (fast path for `YYYY-MM-DDTHH:MM:SS.mmmZ`).
pub fn parse_ts_ms(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() == 24 && b[4] == b'-' && b[10] == b'T' && b[19] == b'.' && b[23] == b'Z' {
        let n = |r: std::ops::Range<usize>| -> Option<i64> {
            let mut v = 0i64;
            for &c in &b[r] {
                if !c.is_ascii_digit() {
                    return None;
                }
                v = v * 10 + (c - b'0') as i64;
            }
            Some(v)
        };
        let (y, mo, d) = (n(0..4)?, n(5..7)?, n(8..10)?);
        let (h, mi, sec, ms) = (n(11..13)?, n(14..16)?, n(17..19)?, n(20..23)?);
        if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
            return None;
        }
        let days = days_from_civil(y, mo, d);
        return Some(((days * 24 + h) * 60 + mi) * 60_000 + sec * 1000 + ms);
    }
    s.parse::<jiff::Timestamp>().ok().map(|t| t.as_millisecond())
}

// Howard Hinnant's days_from_civil: days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Format Unix ms as RFC 3339 UTC with milliseconds.
pub fn format_ts_ms(ms: i64) -> String {
    match jiff::Timestamp::from_millisecond(ms) {
        Ok(t) => t.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(),
        Err(_) => ms.to_string(),
    }
}

/// Whether a call re-wrote the context rather than reading it from a warm cache: its cache
/// read is under 90% of the previous call's context (a warm cache serves nearly all of it; a
/// cold one at most a shared system/tool prefix) and its cache write is at least a quarter of
/// that context (the rest is written again, not only the new turn's tail).
///
/// A gap past the TTL alone is not enough: Claude Code's 1-hour writes, or a cache another
/// request kept warm, make a call after an 8-minute gap read 150k tokens and write 3.4k — the
/// cache was warm, nothing was re-written. `prev_context` is the previous call's context
/// (tokens); 0 (unknown) never makes a resume.
pub(crate) fn is_rewrite(u: &Usage, prev_context: u64) -> bool {
    let writes = u.cache_write_5m + u.cache_write_1h;
    prev_context > 0 && u.cache_read < prev_context * 9 / 10 && writes >= prev_context / 4
}

/// One agent's calls of a session in log order, with the per-call derivations applied by
/// [`Stream::finish`]: gap, TTL in force, resume and its premium, cost.
#[derive(Debug, Default)]
pub(crate) struct Stream {
    /// Calls in order.
    pub(crate) calls: Vec<ApiCall>,
}

/// Per-session accumulator the source readers fill and [`Builder::finish`] turns into a
/// [`SessionSummary`].
pub(crate) struct Builder<'a> {
    opts: EngineOptions<'a>,
    prices: HashMap<Arc<str>, Lookup<'a>>,
    /// Identity.
    pub(crate) session_id: String,
    /// Source.
    pub(crate) source: Source,
    /// Project.
    pub(crate) project: String,
    /// Main file.
    pub(crate) path: PathBuf,
    /// Wall/active time of the main conversation.
    pub(crate) clock: Clock,
    /// User turns.
    pub(crate) turns: u64,
    /// Compactions.
    pub(crate) compactions: Vec<Compaction>,
    /// Codex: the point from the rollout's window.
    pub(crate) point_override: Option<u64>,
    /// Damage.
    pub(crate) damage: Damage,
}

impl<'a> Builder<'a> {
    /// A new accumulator.
    pub(crate) fn new(
        opts: EngineOptions<'a>,
        source: Source,
        session_id: String,
        path: PathBuf,
    ) -> Self {
        Builder {
            opts,
            prices: HashMap::new(),
            session_id,
            source,
            project: String::new(),
            path,
            clock: Clock::default(),
            turns: 0,
            compactions: vec![],
            point_override: None,
            damage: Damage::default(),
        }
    }

    /// How to read this session's files.
    pub(crate) fn limits(&self) -> ReadLimits {
        self.opts.limits
    }

    fn price(&mut self, model: &Arc<str>) -> Lookup<'a> {
        if let Some(p) = self.prices.get(model) {
            return p.clone();
        }
        let p = self.opts.prices.lookup(model);
        self.prices.insert(model.clone(), p.clone());
        p
    }

    /// Apply the per-call derivations to `stream` (in place) and summarise it.
    /// `main` says whether this is the main conversation (context, compactions, turns apply).
    pub(crate) fn summarise(&mut self, stream: &mut Stream, main: bool) -> SessionSummary {
        let mut tokens = Tokens::default();
        let mut cost = 0.0;
        let mut priced = false;
        let mut unpriced = BTreeSet::new();
        let mut models = BTreeSet::new();
        let mut peak = 0u64;
        let mut peak_model: Option<Arc<str>> = None;
        let mut prev_ts: Option<i64> = None;
        let mut prev_ctx = 0u64;
        let mut ttl_s = TTL_5M_S;
        let (mut resumes, mut resume_tokens, mut resume_cost, mut resume_premium) =
            (0u64, 0u64, 0.0, 0.0);
        let mut clock = Clock::default();
        for c in stream.calls.iter_mut() {
            tokens.add_usage(&c.usage, c.reasoning);
            if !models.contains(&*c.model) {
                models.insert(c.model.to_string());
            }
            let lookup = self.price(&c.model);
            let price = match lookup {
                Lookup::Priced(p) => Some(p),
                Lookup::Free => None,
                Lookup::Unpriced => {
                    unpriced.insert(c.model.to_string());
                    None
                }
            };
            c.cost_usd = match lookup {
                Lookup::Priced(p) => Some(p.cost(&c.usage)),
                Lookup::Free => Some(0.0),
                Lookup::Unpriced => None,
            };
            if let (Some(x), Some(_)) = (c.cost_usd, price) {
                cost += x;
                priced = true;
            }
            if let Some(t) = c.ts_ms {
                clock.tick(t);
                c.gap_s = prev_ts.map(|p| (t - p) as f64 / 1000.0);
                let writes = c.usage.cache_write_5m + c.usage.cache_write_1h;
                let expired = prev_ts.is_some_and(|p| t - p > ttl_s * 1000);
                if expired && is_rewrite(&c.usage, prev_ctx) {
                    c.resume = true;
                    resumes += 1;
                    resume_tokens += writes;
                    if let (Some(p), Some(x)) = (price, c.cost_usd) {
                        let r = p.rates_for(&c.usage);
                        c.resume_premium_usd = (c.usage.cache_write_5m as f64
                            * (r.cache_write_5m - r.cache_read)
                            + c.usage.cache_write_1h as f64 * (r.cache_write_1h - r.cache_read))
                            / 1e6;
                        resume_cost += x;
                        resume_premium += c.resume_premium_usd;
                    }
                }
                prev_ts = Some(t);
                prev_ctx = c.context_tokens;
                // The TTL in force for the next call: the kind of the latest writes.
                if writes > 0 {
                    ttl_s = if c.usage.cache_write_1h > c.usage.cache_write_5m {
                        TTL_1H_S
                    } else {
                        TTL_5M_S
                    };
                }
            }
            if !(main && c.sidechain) && (peak_model.is_none() || c.context_tokens > peak) {
                peak = peak.max(c.context_tokens);
                peak_model = Some(c.model.clone());
            }
        }
        let clock = if main { self.clock } else { clock };
        let point = match self.point_override {
            Some(p) => p,
            // The one rule (point.rs), on the model of the peak call and the peak itself.
            None => {
                point::resolve(&point::PointInputs {
                    model: peak_model.as_deref().map(str::to_string),
                    observed: peak,
                    env: point::PointEnv {
                        overrides: self.opts.overrides,
                        ..point::PointEnv::from_env()
                    },
                    ..point::PointInputs::default()
                })
                .tokens
            }
        };
        let (start_ms, end_ms) = (clock.first, clock.last);
        SessionSummary {
            session_id: self.session_id.clone(),
            source: self.source,
            project: self.project.clone(),
            path: self.path.clone(),
            start: start_ms.map(format_ts_ms),
            end: end_ms.map(format_ts_ms),
            duration_s: match (start_ms, end_ms) {
                (Some(a), Some(b)) => (b - a) as f64 / 1000.0,
                _ => 0.0,
            },
            active_s: clock.active_ms as f64 / 1000.0,
            turns: if main { self.turns } else { 0 },
            api_calls: stream.calls.len() as u64,
            compactions: if main { self.compactions.clone() } else { vec![] },
            cache_hit_ratio: tokens.cache_hit_ratio(),
            tokens,
            cost_usd: priced.then_some(cost),
            peak_context_tokens: peak,
            peak_context_pct: if point > 0 { peak as f64 * 100.0 / point as f64 } else { 0.0 },
            compaction_point: point,
            resumes,
            resume_tokens,
            resume_cost_usd: resume_cost,
            resume_premium_usd: resume_premium,
            unpriced_models: unpriced,
            models,
            subagents: vec![],
            damage: Damage::default(),
            end_ms,
            start_ms,
        }
    }
}

impl SessionSummary {
    /// Fold a subagent's row into this session's totals (tokens, calls, cost, models) and keep
    /// it as a sub-row. Context, compactions and resumes stay the main conversation's.
    pub(crate) fn absorb_subagent(&mut self, sub: SessionSummary) {
        self.tokens.add(&sub.tokens);
        self.api_calls += sub.api_calls;
        self.cost_usd = match (self.cost_usd, sub.cost_usd) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        self.unpriced_models.extend(sub.unpriced_models.iter().cloned());
        self.models.extend(sub.models.iter().cloned());
        self.cache_hit_ratio = self.tokens.cache_hit_ratio();
        self.subagents.push(sub);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compaction_point_table() {
        let none = CompactionOverrides::default();
        let cases: &[(u64, CompactionOverrides, u64)] = &[
            (200_000, none, 167_000),
            (1_000_000, none, 967_000),
            (
                200_000,
                CompactionOverrides { pct_override: Some(50), ..none },
                90_000, // floor(180,000 × 50%)
            ),
            (
                200_000,
                CompactionOverrides { pct_override: Some(95), ..none },
                167_000, // can only lower
            ),
            (
                1_000_000,
                CompactionOverrides { auto_compact_window: Some(400_000), ..none },
                367_000,
            ),
            (200_000, CompactionOverrides { max_output_tokens: Some(8_000), ..none }, 179_000),
        ];
        for (window, o, want) in cases {
            assert_eq!(compaction_point(*window, o), *want, "{window} {o:?}");
        }
        assert_eq!(codex_compaction_point(258_400), 244_800);
    }

    #[test]
    fn timestamps_parse_fast_and_slow_paths_alike() {
        for s in
            ["2026-02-12T20:30:28.504Z", "1999-12-31T23:59:59.999Z", "2024-02-29T00:00:00.000Z"]
        {
            let slow = s.parse::<jiff::Timestamp>().unwrap().as_millisecond();
            assert_eq!(parse_ts_ms(s), Some(slow), "{s}");
            assert_eq!(format_ts_ms(slow), s);
        }
        assert_eq!(parse_ts_ms("2026-02-12T20:30:28Z"), Some(1_770_928_228_000));
        assert_eq!(parse_ts_ms("yesterday"), None);
    }

    #[test]
    fn a_warm_cache_after_a_gap_is_not_a_resume() {
        let u = |read, write| Usage { cache_read: read, cache_write_5m: write, ..Usage::default() };
        // QA's case: 8 minutes after a 153k context, 150k read and 3.4k written.
        assert!(!is_rewrite(&u(150_000, 3_400), 153_000));
        // The 4-hour gap of the spotter sample: nothing read, the whole context written.
        assert!(is_rewrite(&u(0, 82_720), 82_000));
        // A cold cache still serving the 12k shared prefix of a small context.
        assert!(is_rewrite(&u(12_000, 6_295), 18_053));
        // After a compaction the context is small: written, but not a re-write of the old one.
        assert!(!is_rewrite(&u(0, 30_000), 160_000));
        assert!(!is_rewrite(&u(0, 30_000), 0));
        // Through the summary: only the third call, after a cold gap, is a resume.
        let call = |min: i64, read, write| ApiCall {
            ts_ms: Some(min * 60_000),
            model: Arc::from("claude-sonnet-4-5-20250929"),
            usage: u(read, write),
            reasoning: 0,
            context_tokens: read + write,
            gap_s: None,
            resume: false,
            resume_premium_usd: 0.0,
            cost_usd: None,
            sidechain: false,
            id: None,
        };
        let mut stream = Stream {
            calls: vec![call(0, 140_000, 13_000), call(8, 150_000, 3_400), call(20, 0, 154_000)],
        };
        let opts = EngineOptions::standard();
        let mut b = Builder::new(opts, Source::Claude, "s".into(), PathBuf::from("s.jsonl"));
        let s = b.summarise(&mut stream, true);
        let flags: Vec<bool> = stream.calls.iter().map(|c| c.resume).collect();
        assert_eq!(flags, [false, false, true]);
        assert_eq!((s.resumes, s.resume_tokens), (1, 154_000));
    }

    #[test]
    fn active_time_drops_idle_gaps_and_tolerates_disorder() {
        let mut c = Clock::default();
        for t in
            [0, 60_000, 59_000, 120_000, 120_000 + 4 * 3_600_000, 120_000 + 4 * 3_600_000 + 5_000]
        {
            c.tick(t);
        }
        assert_eq!(c.first, Some(0));
        assert_eq!(c.active_ms, 125_000);
    }
}
