//! The compaction point per model and window, resolved as Claude Code 2.1.197 does
//! (formats/real-clis.md §4, formats/claude-code.md §4.4–4.5). One function, [`resolve`], used by
//! the context-band hook, by `kit measure` (`peak_context_pct`) and quoted in lesson 3.
//!
//! The rule, in order:
//!
//! 1. `[context] compaction_point` in `longrun/config.toml`, when not 0, wins.
//! 2. The **window** (tokens): a model named with the `[1m]` suffix (`claude-opus-4-8[1m]`, as
//!    `system/init` and SessionStart name it) has 1,000,000; so have the models that always run at
//!    1M on the Anthropic API (Opus 4.7 and later, Opus 5, Sonnet 5, Fable 5); every other model
//!    200,000. Transcript lines carry the bare model (`claude-opus-4-8`, no suffix), so a context
//!    observed above 200,000 means the window is 1,000,000 whatever the name says.
//!    `CLAUDE_CODE_DISABLE_1M_CONTEXT=1` forces 200,000 (and counts as a model default below).
//! 3. The **auto-compact window**, which makes compaction proactive: `CLAUDE_CODE_AUTO_COMPACT_WINDOW`
//!    (takes precedence), else the `autoCompactWindow` setting, else the model's default:
//!    200,000 for claude-opus-4-6 and claude-sonnet-4-6 on a 200k window, 967,000 for
//!    claude-sonnet-5, 200,000 for a model id Claude Code does not know (anything not
//!    `claude-{opus,sonnet,haiku,fable}-…` / `claude-3…`, and no model at all). It is clamped to
//!    100,000–1,000,000 and capped at the window. Proactive point =
//!    `auto window − min(max_output, 20,000) − 13,000` ([`super::compaction_point`]; 167,000 on
//!    200k), lowered (never raised) by `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`.
//! 4. Without an auto-compact window (claude-sonnet-4-5, claude-haiku-4-5, `[1m]` models, the
//!    1M-only models), or with `DISABLE_AUTO_COMPACT=1` / `DISABLE_COMPACT=1` / the setting
//!    `autoCompactEnabled: false`, Claude Code compacts only **reactively**, when the API refuses
//!    the prompt: the point is then the window itself (claude-sonnet-4-5 was seen compacting at
//!    199,052 after a 400 "prompt is too long"; `claude-opus-4-8[1m]` ran to 951,005 without).

use super::{compaction_point, CompactionOverrides, DEFAULT_WINDOW};

/// The window of the 1M models (tokens).
pub(crate) const WINDOW_1M: u64 = 1_000_000;

/// Everything the compaction point depends on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PointInputs {
    /// `[context] compaction_point` of config.toml (0 = derive).
    pub configured: u64,
    /// The model, as best known: with its `[1m]` suffix where `system/init` or SessionStart
    /// gave it, else the transcript's bare `message.model`. None when unknown.
    pub model: Option<String>,
    /// The largest context seen in the session so far (tokens; 0 = none).
    pub observed: u64,
    /// The `CLAUDE_*` variables that move the point.
    pub env: PointEnv,
    /// The `autoCompactWindow` setting (tokens), from Claude Code's settings files.
    pub setting_window: Option<u64>,
    /// The `autoCompactEnabled` setting is `false`.
    pub setting_disabled: bool,
}

/// The environment variables of [`PointInputs`] (unparsable values are ignored, as Claude Code
/// ignores them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PointEnv {
    /// `CLAUDE_CODE_AUTO_COMPACT_WINDOW`, `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`,
    /// `CLAUDE_CODE_MAX_OUTPUT_TOKENS`.
    pub overrides: CompactionOverrides,
    /// `CLAUDE_CODE_DISABLE_1M_CONTEXT=1`.
    pub disable_1m: bool,
    /// `DISABLE_AUTO_COMPACT=1` or `DISABLE_COMPACT=1`.
    pub disable_auto: bool,
}

impl PointEnv {
    /// Read the variables through `var`.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> PointEnv {
        let on = |k: &str| var(k).is_some_and(|v| matches!(v.trim(), "1" | "true"));
        PointEnv {
            overrides: CompactionOverrides::from_vars(&var),
            disable_1m: on("CLAUDE_CODE_DISABLE_1M_CONTEXT"),
            disable_auto: on("DISABLE_AUTO_COMPACT") || on("DISABLE_COMPACT"),
        }
    }

    /// This process's environment.
    pub(crate) fn from_env() -> PointEnv {
        PointEnv::from_vars(|k| std::env::var(k).ok())
    }
}

/// How Claude Code reaches the point.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Trigger {
    /// Claude Code compacts on its own at the point.
    Proactive,
    /// No proactive point: it compacts when the API refuses the prompt, at the window.
    Reactive,
    /// Set in config.toml.
    Configured,
}

/// A resolved compaction point.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Point {
    /// Tokens of context at which the session compacts.
    pub tokens: u64,
    /// The context window assumed (tokens).
    pub window: u64,
    /// Proactive, reactive or configured.
    pub trigger: Trigger,
    /// Where it came from, one phrase for messages (e.g. `claude-opus-4-6: 200k − 20k − 13k`).
    pub source: String,
}

/// The model without its `[1m]` suffix and date stamp, lower case: `claude-sonnet-4-5`.
fn family(model: &str) -> String {
    let m = model.trim().to_ascii_lowercase();
    let m = m.strip_suffix("[1m]").unwrap_or(&m).to_string();
    // Drop a trailing -YYYYMMDD date.
    match m.rsplit_once('-') {
        Some((head, tail)) if tail.len() == 8 && tail.bytes().all(|b| b.is_ascii_digit()) => {
            head.to_string()
        }
        _ => m,
    }
}

fn has_1m_suffix(model: &str) -> bool {
    model.trim().to_ascii_lowercase().ends_with("[1m]")
}

/// Models that always run at 1M on the Anthropic API (claude-code.md §4.4, D-model).
fn always_1m(f: &str) -> bool {
    let opus_minor = f.strip_prefix("claude-opus-4-").and_then(|r| r.parse::<u32>().ok());
    opus_minor.is_some_and(|n| n >= 7)
        || f.starts_with("claude-opus-5")
        || f.starts_with("claude-sonnet-5")
        || f.starts_with("claude-fable-5")
}

/// Whether Claude Code knows the model id (unknown ids get the 200k default auto window).
fn known(f: &str) -> bool {
    ["claude-opus-", "claude-sonnet-", "claude-haiku-", "claude-fable-", "claude-3"]
        .iter()
        .any(|p| f.starts_with(p))
}

fn k(tokens: u64) -> String {
    if tokens.is_multiple_of(1000) {
        format!("{}k", tokens / 1000)
    } else {
        crate::units::thousands(tokens)
    }
}

/// Resolve the compaction point (the rule is this module's doc). Never fails.
pub fn resolve(i: &PointInputs) -> Point {
    let model = i.model.as_deref().unwrap_or("");
    let f = family(model);
    let name = if model.is_empty() { "no model known".to_string() } else { model.to_string() };
    let mut window = if (has_1m_suffix(model) || always_1m(&f)) && !i.env.disable_1m {
        WINDOW_1M
    } else {
        DEFAULT_WINDOW
    };
    let mut inferred = false;
    if i.observed > window {
        window = WINDOW_1M;
        inferred = true;
    }
    if i.configured > 0 {
        return Point {
            tokens: i.configured,
            window,
            trigger: Trigger::Configured,
            source: "config.toml [context] compaction_point".into(),
        };
    }
    let o = i.env.overrides;
    // Where a proactive window comes from, if anywhere.
    let auto: Option<(u64, String)> = if let Some(w) = o.auto_compact_window {
        Some((w, format!("CLAUDE_CODE_AUTO_COMPACT_WINDOW={w}")))
    } else if let Some(w) = i.setting_window {
        Some((w, format!("autoCompactWindow setting {}", k(w))))
    } else if f.starts_with("claude-sonnet-5") && window == WINDOW_1M {
        Some((967_000, format!("{name}: default auto window 967k")))
    } else if window == DEFAULT_WINDOW
        && !inferred
        && (i.env.disable_1m || f == "claude-opus-4-6" || f == "claude-sonnet-4-6" || !known(&f))
    {
        let why =
            if known(&f) || i.env.disable_1m { "" } else { " (an id Claude Code does not know)" };
        Some((DEFAULT_WINDOW, format!("{name}{why}: 200k")))
    } else {
        None
    };
    let disabled = i.env.disable_auto || i.setting_disabled;
    match auto {
        Some((w, src)) if !disabled => {
            let capped = w.clamp(100_000, WINDOW_1M).min(window);
            let plain = CompactionOverrides { auto_compact_window: None, ..o };
            let tokens = compaction_point(capped, &plain);
            let mut source = format!("{src} − {}k − 13k", reserve(&o) / 1000);
            if let Some(p) = o.pct_override {
                source.push_str(&format!(", CLAUDE_AUTOCOMPACT_PCT_OVERRIDE={p}"));
            }
            Point { tokens, window, trigger: Trigger::Proactive, source }
        }
        _ => {
            let why = if disabled {
                "auto-compaction disabled".to_string()
            } else if inferred {
                format!("{name}, context seen above 200k: 1M window")
            } else {
                format!("{name}: {} window, no auto-compact window", k(window))
            };
            Point {
                tokens: window,
                window,
                trigger: Trigger::Reactive,
                source: format!("reactive at the window ({why})"),
            }
        }
    }
}

fn reserve(o: &CompactionOverrides) -> u64 {
    o.max_output_tokens.unwrap_or(20_000).min(20_000)
}

/// The `autoCompactWindow` and `autoCompactEnabled` settings from Claude Code's settings files
/// (`<config root>/settings.json`, `<project>/.claude/settings.json`, then
/// `<project>/.claude/settings.local.json`; a later file wins). Missing or broken files count as
/// empty. Returns (window in tokens, disabled).
pub fn settings(files: &[std::path::PathBuf]) -> (Option<u64>, bool) {
    let (mut window, mut disabled) = (None, false);
    for f in files {
        let Ok(text) = std::fs::read(f) else { continue };
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(&text) else { continue };
        if let Some(w) = v.get("autoCompactWindow").and_then(serde_json::Value::as_u64) {
            window = Some(w);
        }
        if let Some(e) = v.get("autoCompactEnabled").and_then(serde_json::Value::as_bool) {
            disabled = !e;
        }
    }
    (window, disabled)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> PointEnv {
        let pairs: Vec<(String, String)> =
            pairs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
        PointEnv::from_vars(move |k| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))
    }

    #[test]
    fn models_by_env_and_settings() {
        use Trigger::*;
        let w = "CLAUDE_CODE_AUTO_COMPACT_WINDOW";
        let p = "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE";
        type Row<'a> = (&'a str, u64, &'a [(&'a str, &'a str)], Option<u64>, u64, Trigger);
        let rows: &[Row] = &[
            // model, observed, env, autoCompactWindow setting → point, trigger
            ("claude-opus-4-6", 0, &[], None, 167_000, Proactive),
            ("claude-sonnet-4-6", 150_000, &[], None, 167_000, Proactive),
            ("claude-sonnet-4-6[1m]", 0, &[], None, 1_000_000, Reactive),
            ("claude-opus-4-6", 250_000, &[], None, 1_000_000, Reactive), // was [1m]
            ("claude-opus-4-8[1m]", 150_000, &[], None, 1_000_000, Reactive),
            ("claude-opus-4-8", 150_000, &[], None, 1_000_000, Reactive), // always 1M
            ("claude-sonnet-5", 0, &[], None, 934_000, Proactive),        // 967k − 33k
            ("claude-sonnet-4-5-20250929", 0, &[], None, 200_000, Reactive),
            ("claude-haiku-4-5-20251001", 0, &[], None, 200_000, Reactive),
            ("gpt-5-codex", 0, &[], None, 167_000, Proactive), // unknown id
            ("", 0, &[], None, 167_000, Proactive),
            ("claude-sonnet-4-5", 0, &[(w, "150000")], None, 117_000, Proactive),
            ("claude-opus-4-8[1m]", 0, &[(w, "500000")], None, 467_000, Proactive),
            ("claude-opus-4-8[1m]", 0, &[], Some(400_000), 367_000, Proactive),
            ("claude-opus-4-8[1m]", 0, &[(w, "500000")], Some(400_000), 467_000, Proactive),
            ("claude-opus-4-6", 0, &[(w, "500000")], None, 167_000, Proactive), // capped
            ("claude-opus-4-6", 0, &[(w, "lots")], None, 167_000, Proactive),
            ("claude-opus-4-6", 0, &[(p, "50")], None, 90_000, Proactive),
            ("claude-opus-4-6", 0, &[(p, "95")], None, 167_000, Proactive), // only lowers
            ("claude-sonnet-4-5", 0, &[(p, "50")], None, 200_000, Reactive), // proactive only
            (
                "claude-opus-4-6",
                0,
                &[("CLAUDE_CODE_MAX_OUTPUT_TOKENS", "8000")],
                None,
                179_000,
                Proactive,
            ),
            (
                "claude-opus-4-8[1m]",
                0,
                &[("CLAUDE_CODE_DISABLE_1M_CONTEXT", "1")],
                None,
                167_000,
                Proactive,
            ),
            ("claude-opus-4-6", 0, &[("DISABLE_AUTO_COMPACT", "1")], None, 200_000, Reactive),
        ];
        for (model, observed, vars, setting, want, trigger) in rows {
            let i = PointInputs {
                model: Some(model.to_string()).filter(|m| !m.is_empty()),
                observed: *observed,
                env: env(vars),
                setting_window: *setting,
                ..PointInputs::default()
            };
            let got = resolve(&i);
            assert_eq!(
                (got.tokens, got.trigger),
                (*want, *trigger),
                "{model} {observed} {vars:?} {setting:?}: {got:?}"
            );
        }
        let i = PointInputs {
            configured: 150_000,
            model: Some("claude-opus-4-8[1m]".into()),
            ..PointInputs::default()
        };
        assert_eq!(resolve(&i).tokens, 150_000);
        assert_eq!(resolve(&i).trigger, Trigger::Configured);
        let off = PointInputs {
            model: Some("claude-opus-4-6".into()),
            setting_disabled: true,
            ..PointInputs::default()
        };
        assert_eq!(resolve(&off).trigger, Trigger::Reactive);
        let d = PointInputs { model: Some("claude-opus-4-6".into()), ..PointInputs::default() };
        assert_eq!(resolve(&d).source, "claude-opus-4-6: 200k − 20k − 13k");
    }

    #[test]
    fn settings_files_merge_later_wins() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a.json");
        let b = d.path().join("b.json");
        std::fs::write(&a, r#"{"autoCompactWindow": 300000, "autoCompactEnabled": false}"#)
            .unwrap();
        std::fs::write(&b, r#"{"autoCompactWindow": 500000, "autoCompactEnabled": true}"#).unwrap();
        assert_eq!(settings(&[a.clone(), b.clone()]), (Some(500_000), false));
        assert_eq!(settings(&[a.clone(), d.path().join("missing.json")]), (Some(300_000), true));
        std::fs::write(&b, "{broken").unwrap();
        assert_eq!(settings(&[b]), (None, false));
    }
}
