//! `kit cache`: the idle-time arithmetic of DESIGN §10. Anthropic's prompt cache keeps a
//! context warm for its TTL (5 minutes, or 1 hour when written with the 1-hour TTL); the first
//! message after a longer idle gap re-writes the whole context at the cache-write rate. The
//! alternative is a clean start from the handoff, which writes only the handoff-sized context.
//! This module prices both with the embedded price table (DESIGN §9) and says which is cheaper.
//! For a provider that bills no cache writes (OpenAI, `cache_writes = false` in the table) the
//! cold message sends the context again as uncached input, and the messages say so.
//!
//! The clean start is [`DEFAULT_HANDOFF_TOKENS`] unless `--handoff` says otherwise: a fresh
//! Claude Code session re-reads its system prompt and tool definitions (about 20,000 tokens,
//! formats/claude-code.md §4.5 `/context` breakdown: 3.2k + 17.9k) plus the handoff and state
//! files (a few thousand tokens).

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use jiff::Timestamp;

use crate::error::{Error, Result, EXIT_OK};
use crate::prices::{Lookup, ModelPrice, PriceTable, Usage};
use crate::units::{format_duration, format_idle};
use crate::units::{thousands, usd4};

/// Tokens of a clean start from a handoff, when not given: system prompt and tools (≈20k) plus
/// the handoff and state files (≈5k).
pub(crate) const DEFAULT_HANDOFF_TOKENS: u64 = 25_000;

/// The two prompt-cache TTLs Anthropic offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ttl {
    /// 5 minutes (cache writes at 1.25× input).
    FiveMinutes,
    /// 1 hour (cache writes at 2× input).
    OneHour,
}

impl Ttl {
    /// Parse `5m` or `1h` (also `300s`, `60m`…: any duration equal to one of them).
    pub fn parse(s: &str) -> Result<Ttl> {
        match crate::duration::parse_duration(s) {
            Ok(d) if d == Duration::from_secs(300) => Ok(Ttl::FiveMinutes),
            Ok(d) if d == Duration::from_secs(3600) => Ok(Ttl::OneHour),
            _ => Err(Error::usage(format!("cache TTL `{s}` is not 5m or 1h"))
                .with_hint("use --ttl 5m or --ttl 1h (the two TTLs the API offers)")),
        }
    }

    /// The TTL closest to `d` (≥ 1 h → 1 h, else 5 m).
    pub(crate) fn from_duration(d: Duration) -> Ttl {
        if d >= Duration::from_secs(3600) {
            Ttl::OneHour
        } else {
            Ttl::FiveMinutes
        }
    }

    /// Its length.
    pub(crate) fn duration(self) -> Duration {
        match self {
            Ttl::FiveMinutes => Duration::from_secs(300),
            Ttl::OneHour => Duration::from_secs(3600),
        }
    }

    /// `5m` or `1h`.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Ttl::FiveMinutes => "5m",
            Ttl::OneHour => "1h",
        }
    }

    /// `Usage` of writing `tokens` to the cache at this TTL.
    pub(crate) fn write(self, tokens: u64) -> Usage {
        match self {
            Ttl::FiveMinutes => Usage { cache_write_5m: tokens, ..Usage::default() },
            Ttl::OneHour => Usage { cache_write_1h: tokens, ..Usage::default() },
        }
    }
}

/// The two costs of the next message after an idle gap.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Comparison {
    /// True when the gap is within the TTL (the context is still cached).
    pub warm: bool,
    /// USD of resending the context: a cache read when warm, a cache write when cold.
    pub resend_usd: f64,
    /// USD of starting clean: the handoff tokens written to the cache.
    pub clean_usd: f64,
    /// Tokens of the clean start.
    pub handoff_tokens: u64,
    /// What resending counts as (`Usage` of one request).
    pub resend: Usage,
}

/// Price the next message after `idle` with `context` tokens cached at `ttl`, against a clean
/// start of `handoff_tokens`. Each is priced as one request (the long-context tier applies per
/// request, DESIGN §9).
pub(crate) fn compare(
    price: &ModelPrice,
    context: u64,
    ttl: Ttl,
    handoff_tokens: u64,
    idle: Duration,
) -> Comparison {
    let warm = idle <= ttl.duration();
    let send = |tokens: u64| {
        if price.cache_writes {
            ttl.write(tokens)
        } else {
            Usage { input: tokens, ..Usage::default() }
        }
    };
    let resend =
        if warm { Usage { cache_read: context, ..Usage::default() } } else { send(context) };
    Comparison {
        warm,
        resend_usd: price.cost(&resend),
        clean_usd: price.cost(&send(handoff_tokens)),
        handoff_tokens,
        resend,
    }
}

/// How the cold message's tokens are billed, as the messages name it: `5m cache write`, or
/// `uncached input` for a provider that bills no cache writes.
pub(crate) fn cold_billing(price: &ModelPrice, ttl: Ttl) -> String {
    if price.cache_writes {
        format!("{} cache write", ttl.label())
    } else {
        "uncached input".to_string()
    }
}

/// What the cold message does to the context, in words: `re-writes` it to the cache, or, for a
/// provider that bills no cache writes, `sends … again as uncached input`.
fn cold_verb(price: &ModelPrice) -> (&'static str, &'static str) {
    if price.cache_writes {
        ("re-writes", "")
    } else {
        ("sends", " again as uncached input")
    }
}

/// Where `kit cache` takes its numbers from.
#[derive(Clone, Debug)]
pub enum Source {
    /// Given on the command line.
    Given {
        /// Model id.
        model: String,
        /// Context, tokens.
        context: u64,
        /// Idle time.
        idle: Duration,
    },
    /// Read from a transcript's tail: model, context and the time of the last API call.
    Transcript {
        /// The transcript file.
        path: PathBuf,
        /// The moment to evaluate (default: now).
        at: Option<Timestamp>,
    },
}

/// Options of `kit cache`, validated.
#[derive(Clone, Debug)]
pub struct CacheOptions {
    /// Where the numbers come from.
    pub source: Source,
    /// TTL (default: the transcript's, else config `context.cache_ttl`, else 5m).
    pub ttl: Option<Ttl>,
    /// Clean-start tokens (default [`DEFAULT_HANDOFF_TOKENS`]).
    pub handoff: Option<u64>,
    /// Where kit runs (for `longrun/config.toml` price overrides and TTL).
    pub cwd: PathBuf,
}

/// Run `kit cache`.
///
/// Errors: [`Error::Usage`] for an unpriced model; [`Error::Input`] for a transcript with no API
/// call; [`Error::Io`] for an unreadable transcript.
pub fn run(opts: &CacheOptions, out: &mut dyn Write) -> Result<u8> {
    let config = match crate::longrun::find_longrun(&opts.cwd) {
        Some(dir) => crate::longrun::config::Config::load(&dir.join("config.toml"))?,
        None => crate::longrun::config::Config::default(),
    };
    let (model, context, idle, ttl, origin) = match &opts.source {
        Source::Given { model, context, idle } => (
            model.clone(),
            *context,
            *idle,
            opts.ttl.unwrap_or(Ttl::from_duration(config.cache_ttl())),
            None,
        ),
        Source::Transcript { path, at } => {
            let tail = match at {
                Some(t) => crate::transcript::tail::read_tail_at(path, *t),
                None => crate::transcript::tail::read_tail(path),
            }
            .map_err(|e| transcript_error(path, e))?;
            let call = tail.last_call.clone().ok_or_else(|| no_call(path, *at))?;
            let last = call
                .timestamp
                .ok_or_else(|| Error::input(path, None, "the last API call has no timestamp"))?;
            let at = at.unwrap_or_else(crate::clock::now);
            let idle = Duration::try_from(at.duration_since(last)).unwrap_or(Duration::ZERO);
            let ttl = opts.ttl.unwrap_or(if call.cache_write_1h > 0 {
                Ttl::OneHour
            } else if call.cache_write_5m > 0 {
                Ttl::FiveMinutes
            } else {
                Ttl::from_duration(config.cache_ttl())
            });
            let context = tail.context().unwrap_or(0);
            let origin =
                format!("last API call {} in {}", crate::clock::format_ts(last), path.display());
            (call.model, context, idle, ttl, Some(origin))
        }
    };
    let table = PriceTable::embedded().with_overrides(&config.prices);
    let Lookup::Priced(price) = table.lookup(&model) else {
        return Err(Error::usage(format!("model `{model}` is not in the price table")).with_hint(format!(
            "add [prices.\"{model}\"] with input, output, cache_write_5m, cache_write_1h and cache_read to longrun/config.toml"
        )));
    };
    let handoff = opts.handoff.unwrap_or(DEFAULT_HANDOFF_TOKENS);
    let c = compare(price, context, ttl, handoff, idle);
    print_report(
        out,
        price,
        &model,
        context,
        idle,
        ttl,
        &c,
        origin.as_deref(),
        opts.handoff.is_none(),
    )
    .map_err(|e| Error::io("stdout", e))?;
    Ok(EXIT_OK)
}

/// A transcript that cannot be read, as a usage-level error (exit 2) naming the file and what
/// to run instead.
fn transcript_error(path: &std::path::Path, e: Error) -> Error {
    match e {
        Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
            Error::input(path, None, "no such transcript")
                .with_hint("kit measure lists the sessions; then kit cache --session ID")
        }
        Error::Io { source, .. } => Error::input(path, None, format!("cannot read it: {source}"))
            .with_hint("kit measure lists the sessions; then kit cache --session ID"),
        other => other,
    }
}

/// The error for a transcript without an API call (at or before `at`): names a Codex rollout
/// as such, since `kit cache` reads Claude Code transcripts only.
fn no_call(path: &std::path::Path, at: Option<Timestamp>) -> Error {
    let first = std::fs::File::open(path).ok().and_then(|f| {
        use std::io::BufRead;
        std::io::BufReader::new(f).lines().next()?.ok()
    });
    let codex = first
        .and_then(|l| serde_json::from_str::<serde_json::Value>(&l).ok())
        .is_some_and(|v| v.get("type").and_then(|t| t.as_str()) == Some("session_meta"));
    if codex {
        return Error::input(path, Some(1), "a Codex rollout: kit cache reads Claude Code transcripts only (Codex has no cache TTL to reason about)")
            .with_hint("kit measure PATH shows a Codex session's tokens and cost");
    }
    match at {
        Some(t) => Error::input(
            path,
            None,
            format!("no main-chain API call with usage at or before --at {}", crate::clock::format_ts(t)),
        )
        .with_hint(format!(
            "pick a later --at: kit measure --turns {} lists the session's API calls and their times",
            path.file_stem().map_or("SESSION".into(), |s| s.to_string_lossy())
        )),
        None => Error::input(path, None, "no main-chain API call with usage in this transcript's tail")
            .with_hint("kit measure lists the sessions with API calls; then kit cache --session ID"),
    }
}

#[allow(clippy::too_many_arguments)]
fn print_report(
    out: &mut dyn Write,
    price: &ModelPrice,
    model: &str,
    context: u64,
    idle: Duration,
    ttl: Ttl,
    c: &Comparison,
    origin: Option<&str>,
    default_handoff: bool,
) -> std::io::Result<()> {
    let idle_s = format_idle(idle);
    let ttl_s = ttl.label();
    let (verb, how) = cold_verb(price);
    writeln!(
        out,
        "{model} · {} tokens of context · idle {idle_s} · cache TTL {}",
        thousands(context),
        ttl.label()
    )?;
    if let Some(o) = origin {
        writeln!(out, "from the {o}")?;
    }
    writeln!(out)?;
    writeln!(out, "timeline")?;
    let row = |out: &mut dyn Write, from: &str, to: &str, what: String| {
        writeln!(out, "  {from:<5} → {to:<7} {what}")
    };
    if c.warm {
        let left = format_duration(ttl.duration() - idle);
        row(
            out,
            "0s",
            ttl_s,
            format!("warm: at {idle_s} the context is still cached ({left} left)"),
        )?;
        row(
            out,
            ttl_s,
            "…",
            format!("cold: after {ttl_s} the next message {verb} the whole context{how}"),
        )?;
    } else {
        row(
            out,
            "0s",
            ttl_s,
            "warm: the next message would have read the context from the cache".into(),
        )?;
        row(
            out,
            ttl_s,
            &idle_s,
            format!(
                "cold: the cache expired at {ttl_s}; the next message {verb} the whole context{how}"
            ),
        )?;
    }
    writeln!(out)?;
    let cold_rate = |tokens: u64| {
        let rates = price.rates_for(&ttl.write(tokens));
        if price.cache_writes {
            rate_of(rates, ttl)
        } else {
            rates.input
        }
    };
    let (resend_what, resend_rate) = if c.warm {
        ("cache read".to_string(), price.rates_for(&c.resend).cache_read)
    } else {
        (cold_billing(price, ttl), cold_rate(context))
    };
    let clean_rate = cold_rate(c.handoff_tokens);
    writeln!(out, "next message after {idle_s} idle")?;
    writeln!(
        out,
        "  resend the context        {:>9} tokens × ${}/M ({resend_what})  {}",
        thousands(context),
        fmt_rate(resend_rate),
        usd4(c.resend_usd)
    )?;
    writeln!(
        out,
        "  clean start from handoff  {:>9} tokens × ${}/M ({})  {}",
        thousands(c.handoff_tokens),
        fmt_rate(clean_rate),
        cold_billing(price, ttl),
        usd4(c.clean_usd)
    )?;
    if default_handoff {
        writeln!(
            out,
            "  (handoff size: the default {} tokens; --handoff TOKENS sets it)",
            thousands(DEFAULT_HANDOFF_TOKENS)
        )?;
    }
    writeln!(out)?;
    let diff = (c.resend_usd - c.clean_usd).abs();
    if c.clean_usd < c.resend_usd {
        writeln!(
            out,
            "clean start is cheaper by {} ({:.0}% less than resending)",
            usd4(diff),
            diff * 100.0 / c.resend_usd
        )?;
    } else if c.resend_usd < c.clean_usd {
        writeln!(
            out,
            "resending is cheaper by {} ({:.0}% less than a clean start){}",
            usd4(diff),
            diff * 100.0 / c.clean_usd,
            if c.warm { "; the cache is still warm" } else { "" }
        )?;
    } else {
        writeln!(out, "both cost the same")?;
    }
    Ok(())
}

fn rate_of(r: &crate::prices::Rates, ttl: Ttl) -> f64 {
    match ttl {
        Ttl::FiveMinutes => r.cache_write_5m,
        Ttl::OneHour => r.cache_write_1h,
    }
}

fn fmt_rate(r: f64) -> String {
    format!("{r:.2}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opus() -> &'static ModelPrice {
        match PriceTable::embedded().lookup("claude-opus-4-6") {
            Lookup::Priced(p) => p,
            _ => panic!("opus 4.6 is priced"),
        }
    }

    #[test]
    fn worked_check_of_issue_4() {
        let c = compare(opus(), 150_000, Ttl::FiveMinutes, 25_000, Duration::from_secs(7200));
        assert!(!c.warm);
        assert!((c.resend_usd - 0.9375).abs() < 1e-12);
        assert!((c.clean_usd - 0.15625).abs() < 1e-12);
        assert_eq!(usd4(c.resend_usd), "$0.9375");
        assert_eq!(usd4(c.clean_usd), "$0.1563");
    }

    #[test]
    fn warm_cache_reads_and_one_hour_writes() {
        let c = compare(opus(), 150_000, Ttl::FiveMinutes, 25_000, Duration::from_secs(240));
        assert!(c.warm);
        assert!((c.resend_usd - 0.075).abs() < 1e-12);
        let c = compare(opus(), 150_000, Ttl::OneHour, 25_000, Duration::from_secs(7200));
        assert!((c.resend_usd - 1.5).abs() < 1e-12);
        assert!((c.clean_usd - 0.25).abs() < 1e-12);
        // Opus 4.6 serves its 1M window at flat rates (kit/prices.toml, pricing page read
        // 2026-11-29): 250k tokens re-written cost the standard 5-minute write rate.
        let c = compare(opus(), 250_000, Ttl::FiveMinutes, 25_000, Duration::from_secs(7200));
        assert!((c.resend_usd - 250_000.0 * 6.25 / 1e6).abs() < 1e-12);
    }

    #[test]
    fn openai_models_resend_as_uncached_input() {
        let codex = match PriceTable::embedded().lookup("gpt-5-codex") {
            Lookup::Priced(p) => p,
            _ => panic!("gpt-5-codex is priced"),
        };
        assert!(!codex.cache_writes && opus().cache_writes);
        let c = compare(codex, 150_000, Ttl::FiveMinutes, 25_000, Duration::from_secs(7200));
        assert_eq!(c.resend, Usage { input: 150_000, ..Usage::default() });
        assert!((c.resend_usd - 150_000.0 * 1.25 / 1e6).abs() < 1e-12);
        assert!((c.clean_usd - 25_000.0 * 1.25 / 1e6).abs() < 1e-12);
        assert_eq!(cold_billing(codex, Ttl::FiveMinutes), "uncached input");
        assert_eq!(cold_billing(opus(), Ttl::OneHour), "1h cache write");
        let mut text = Vec::new();
        print_report(
            &mut text,
            codex,
            "gpt-5-codex",
            150_000,
            Duration::from_secs(3 * 86_400 + 4 * 3600),
            Ttl::FiveMinutes,
            &c,
            None,
            true,
        )
        .unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(!text.contains("write"), "{text}");
        assert!(text.contains("idle 3d 4h") && text.contains("(uncached input)"), "{text}");
        assert!(
            text.contains("the next message sends the whole context again as uncached input"),
            "{text}"
        );
    }

    #[test]
    fn ttl_parsing() {
        for (text, ttl) in [
            ("5m", Ttl::FiveMinutes),
            ("300s", Ttl::FiveMinutes),
            ("1h", Ttl::OneHour),
            ("60m", Ttl::OneHour),
        ] {
            assert_eq!(Ttl::parse(text).unwrap(), ttl, "{text}");
        }
        assert!(Ttl::parse("10m").is_err() && Ttl::parse("soon").is_err());
    }
}
