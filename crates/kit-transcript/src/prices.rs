//! The price table (DESIGN §9): USD per million tokens per model, embedded from
//! `kit/prices.toml` (its `date` and `source` say where the figures come from), with per-model
//! overrides from `config.toml`. A model that is not in the table is *unpriced*: callers report
//! it as such and never count it as $0.
//!
//! Lookup of a model id: first a context-window suffix is taken off ([`strip_window`]: Claude
//! Code names its default model `claude-opus-4-8[1m]` in `system/init`, `modelUsage` and
//! config, while transcript lines carry the bare `claude-opus-4-8`, `formats/real-clis.md` §3);
//! then the exact id, then the id without a trailing `-YYYYMMDD` date
//! (`claude-sonnet-4-5-20250929` → `claude-sonnet-4-5`); nothing looser, so that
//! `claude-opus-4-60` is never priced as `claude-opus-4`. `<synthetic>` (Claude Code's placeholder for a local
//! API error) costs nothing and is not unpriced.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// A price override for one model, USD per million tokens; unset fields keep the table's value.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PriceOverride {
    /// Uncached input.
    pub input: Option<f64>,
    /// Output (and reasoning).
    pub output: Option<f64>,
    /// Cache write with a 5-minute TTL.
    pub cache_write_5m: Option<f64>,
    /// Cache write with a 1-hour TTL.
    pub cache_write_1h: Option<f64>,
    /// Cache read.
    pub cache_read: Option<f64>,
    /// `false` for a provider that bills no cache writes (OpenAI); see [`ModelPrice`].
    pub cache_writes: Option<bool>,
}

/// Rates in USD per million tokens.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct Rates {
    /// Uncached input.
    pub input: f64,
    /// Output (reasoning included).
    pub output: f64,
    /// Cache write, 5-minute TTL.
    pub cache_write_5m: f64,
    /// Cache write, 1-hour TTL.
    pub cache_write_1h: f64,
    /// Cache read.
    pub cache_read: f64,
}

/// Rates for requests whose summed input exceeds `above_tokens`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct LongContext {
    /// Threshold on one request's input + cache write + cache read tokens.
    pub above_tokens: u64,
    /// The rates that then apply to the whole request.
    #[serde(flatten)]
    pub rates: Rates,
}

/// One model's prices.
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct ModelPrice {
    /// Model id as the API reports it, without a date suffix.
    pub id: String,
    /// Standard rates.
    #[serde(flatten)]
    pub rates: Rates,
    /// Long-context tier, if the model has one.
    #[serde(default)]
    pub long_context: Option<LongContext>,
    /// False for a provider that bills no cache writes (OpenAI: a prompt is billed as uncached
    /// input, and what it finds cached at the cache-read rate; `kit/prices.toml` then repeats
    /// the input rate in the two write fields). Messages then speak of uncached input, not of
    /// cache writes. Default true (Anthropic).
    #[serde(default = "bills_cache_writes")]
    pub cache_writes: bool,
}

fn bills_cache_writes() -> bool {
    true
}

/// Token counts of one API request (or a sum of requests, when no tier applies).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// Uncached input tokens.
    pub input: u64,
    /// Cache write tokens at the 5-minute TTL.
    pub cache_write_5m: u64,
    /// Cache write tokens at the 1-hour TTL.
    pub cache_write_1h: u64,
    /// Cache read tokens.
    pub cache_read: u64,
    /// Output tokens (reasoning included, as billed).
    pub output: u64,
}

impl Usage {
    /// Summed input of the request: input + cache writes + cache reads (tokens).
    pub fn summed_input(&self) -> u64 {
        self.input + self.cache_write_5m + self.cache_write_1h + self.cache_read
    }
}

impl ModelPrice {
    /// Rates that apply to one request with this usage (the long-context tier per request).
    pub fn rates_for(&self, u: &Usage) -> &Rates {
        match &self.long_context {
            Some(lc) if u.summed_input() > lc.above_tokens => &lc.rates,
            _ => &self.rates,
        }
    }

    /// Cost in USD of one request.
    pub fn cost(&self, u: &Usage) -> f64 {
        let r = self.rates_for(u);
        (u.input as f64 * r.input
            + u.cache_write_5m as f64 * r.cache_write_5m
            + u.cache_write_1h as f64 * r.cache_write_1h
            + u.cache_read as f64 * r.cache_read
            + u.output as f64 * r.output)
            / 1e6
    }
}

/// The price table.
#[derive(Clone, Debug, Deserialize)]
pub struct PriceTable {
    /// Format of `prices.toml`.
    pub format_version: u32,
    /// The date the figures were read, `YYYY-MM-DD`.
    pub date: String,
    /// Where they were read.
    pub source: String,
    /// Models.
    #[serde(rename = "model")]
    pub models: Vec<ModelPrice>,
}

/// The result of a lookup.
#[derive(Clone, Debug, PartialEq)]
pub enum Lookup<'a> {
    /// A priced model.
    Priced(&'a ModelPrice),
    /// `<synthetic>`: no API call was made; costs nothing.
    Free,
    /// Not in the table: report it, never count it as $0.
    Unpriced,
}

const EMBEDDED: &str = include_str!("../../../kit/prices.toml");

impl PriceTable {
    /// The embedded table (parsed once).
    pub fn embedded() -> &'static PriceTable {
        static T: OnceLock<PriceTable> = OnceLock::new();
        // The embedded file is tested below; a parse failure is a build defect.
        T.get_or_init(|| toml::from_str(EMBEDDED).expect("kit/prices.toml parses"))
    }

    /// A copy of this table with `config.toml` overrides applied (a new model id is added when
    /// all five rates are given).
    pub fn with_overrides(&self, overrides: &BTreeMap<String, PriceOverride>) -> PriceTable {
        let mut t = self.clone();
        for (id, o) in overrides {
            let idx = t.models.iter().position(|m| &m.id == id);
            let m = match idx {
                Some(i) => &mut t.models[i],
                None => {
                    let (Some(i), Some(out), Some(w5), Some(w1), Some(r)) =
                        (o.input, o.output, o.cache_write_5m, o.cache_write_1h, o.cache_read)
                    else {
                        continue;
                    };
                    t.models.push(ModelPrice {
                        id: id.clone(),
                        rates: Rates {
                            input: i,
                            output: out,
                            cache_write_5m: w5,
                            cache_write_1h: w1,
                            cache_read: r,
                        },
                        long_context: None,
                        cache_writes: o.cache_writes.unwrap_or(true),
                    });
                    continue;
                }
            };
            m.cache_writes = o.cache_writes.unwrap_or(m.cache_writes);
            let r = &mut m.rates;
            r.input = o.input.unwrap_or(r.input);
            r.output = o.output.unwrap_or(r.output);
            r.cache_write_5m = o.cache_write_5m.unwrap_or(r.cache_write_5m);
            r.cache_write_1h = o.cache_write_1h.unwrap_or(r.cache_write_1h);
            r.cache_read = o.cache_read.unwrap_or(r.cache_read);
        }
        t
    }

    /// Find the prices of `model` (see the module doc for the matching rules).
    pub fn lookup(&self, model: &str) -> Lookup<'_> {
        let model = strip_window(model);
        if model == "<synthetic>" {
            return Lookup::Free;
        }
        if let Some(m) = self.models.iter().find(|m| m.id == model) {
            return Lookup::Priced(m);
        }
        let undated = strip_date(model);
        match self.models.iter().find(|m| m.id == undated) {
            Some(m) => Lookup::Priced(m),
            None => Lookup::Unpriced,
        }
    }
}

/// `model` without a trailing context-window suffix in brackets: `claude-opus-4-8[1m]` →
/// `claude-opus-4-8`, `claude-sonnet-4-5[200k]` → `claude-sonnet-4-5`; any other id as given.
/// The window does not change the price on Anthropic's current models (the >200K tier of
/// Sonnet 4/4.5 is priced per request from its tokens, [`ModelPrice::rates_for`]). The one
/// place kit takes the suffix off before a price lookup.
pub fn strip_window(model: &str) -> &str {
    match model.strip_suffix(']').and_then(|m| m.rsplit_once('[')) {
        Some((head, window))
            if !head.is_empty()
                && !window.is_empty()
                && window.bytes().all(|b| b.is_ascii_alphanumeric()) =>
        {
            head
        }
        _ => model,
    }
}

fn strip_date(model: &str) -> &str {
    match model.rsplit_once('-') {
        Some((head, tail)) if tail.len() == 8 && tail.bytes().all(|b| b.is_ascii_digit()) => head,
        _ => model,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_table_parses_and_is_dated() {
        let t = PriceTable::embedded();
        assert!(t.models.len() >= 10);
        assert_eq!(t.date.len(), 10);
        for m in &t.models {
            let r = &m.rates;
            assert!(r.input > 0.0 && r.output > r.input && r.cache_read < r.input, "{}", m.id);
        }
    }

    #[test]
    fn lookup_table() {
        let t = PriceTable::embedded();
        let id = |m: &str| match t.lookup(m) {
            Lookup::Priced(p) => p.id.clone(),
            Lookup::Free => "free".into(),
            Lookup::Unpriced => "unpriced".into(),
        };
        assert_eq!(id("claude-opus-4-6"), "claude-opus-4-6");
        assert_eq!(id("claude-sonnet-4-5-20250929"), "claude-sonnet-4-5");
        assert_eq!(id("claude-haiku-4-5-20251001"), "claude-haiku-4-5");
        assert_eq!(id("claude-opus-4-20250514"), "claude-opus-4");
        assert_eq!(id("<synthetic>"), "free");
        assert_eq!(id("gpt-6-astra"), "unpriced");
        assert_eq!(id("claude-opus-4-60"), "unpriced");
        // Claude Code's default model, with and without its window suffix (real-clis.md §3).
        assert_eq!(id("claude-opus-4-8"), "claude-opus-4-8");
        assert_eq!(id("claude-opus-4-8[1m]"), "claude-opus-4-8");
        assert_eq!(id("claude-sonnet-4-5-20250929[1m]"), "claude-sonnet-4-5");
        assert_eq!(id("claude-opus-5-5[1m]"), "claude-opus-5-5");
        // A suffix never makes an unknown model priced.
        assert_eq!(id("claude-opus-4-7[1m]"), "unpriced");
        assert_eq!(id("[1m]"), "unpriced");
    }

    #[test]
    fn window_suffixes_are_stripped_and_nothing_else() {
        assert_eq!(strip_window("claude-opus-4-8[1m]"), "claude-opus-4-8");
        assert_eq!(strip_window("claude-opus-4-8"), "claude-opus-4-8");
        assert_eq!(strip_window("m[200k]"), "m");
        assert_eq!(strip_window("[1m]"), "[1m]");
        assert_eq!(strip_window("m[]"), "m[]");
        assert_eq!(strip_window("m[1 m]"), "m[1 m]");
        assert_eq!(strip_window("m]"), "m]");
    }

    #[test]
    fn the_default_model_costs_its_published_rates() {
        // claude-opus-4-8: $5 input, $25 output (its model page), cache writes 1.25x / 2x and
        // reads 0.1x input (the pricing page's prompt-caching multipliers), read 2026-12-02.
        let Lookup::Priced(p) = PriceTable::embedded().lookup("claude-opus-4-8[1m]") else {
            panic!()
        };
        let u = Usage {
            input: 1_000_000,
            cache_write_5m: 1_000_000,
            cache_write_1h: 1_000_000,
            cache_read: 1_000_000,
            output: 1_000_000,
        };
        assert!((p.cost(&u) - (5.0 + 6.25 + 10.0 + 0.5 + 25.0)).abs() < 1e-9);
        // A 1M-window request past 200K tokens stays at the standard rates.
        assert_eq!(p.long_context, None);
    }

    #[test]
    fn opus_4_6_resend_of_150k_at_5m_write_rate() {
        // The worked check of issue 4: 150,000 tokens re-written at the 5-minute rate.
        let Lookup::Priced(p) = PriceTable::embedded().lookup("claude-opus-4-6") else { panic!() };
        let u = Usage { cache_write_5m: 150_000, ..Usage::default() };
        assert!((p.cost(&u) - 0.9375).abs() < 1e-9);
    }

    #[test]
    fn models_of_4_6_and_later_have_no_long_context_tier() {
        // Anthropic serves the 4.6 models' 1M window at their standard rates (pricing page,
        // read 2026-11-29); the >200K tier belongs to Sonnet 4 and 4.5.
        let t = PriceTable::embedded();
        for id in ["claude-opus-4-6", "claude-sonnet-4-6", "claude-opus-5", "claude-opus-4-8"] {
            let Lookup::Priced(p) = t.lookup(id) else { panic!("{id}") };
            assert_eq!(p.long_context, None, "{id}");
        }
        let Lookup::Priced(p) = t.lookup("gpt-5.3-codex") else { panic!() };
        assert_eq!((p.rates.input, p.rates.cache_read, p.rates.output), (1.75, 0.175, 14.0));
    }

    #[test]
    fn long_context_tier_applies_per_request() {
        let Lookup::Priced(p) = PriceTable::embedded().lookup("claude-sonnet-4-5") else {
            panic!()
        };
        let small = Usage { input: 200_000, ..Usage::default() };
        let big = Usage { input: 150_000, cache_read: 60_000, ..Usage::default() };
        assert!((p.cost(&small) - 0.6).abs() < 1e-9);
        assert!((p.cost(&big) - (150_000.0 * 6.0 + 60_000.0 * 0.6) / 1e6).abs() < 1e-9);
    }
}
