//! The compaction point: how many tokens of context Claude Code lets a session reach before it
//! compacts automatically. The bands (50/70/85 %) are percentages of this number, so it must be
//! the real trigger, not the window size.
//!
//! Resolution order (DESIGN §10; formats/claude-code.md §4.5 "Practical rule for the tool"):
//! 1. `[context] compaction_point` in `longrun/config.toml` when it is not 0;
//! 2. `CLAUDE_CODE_AUTO_COMPACT_WINDOW` (a plain integer, 100,000–1,000,000, which Claude Code
//!    documents as the auto-compact window and lets take precedence);
//! 3. else a 200,000-token window less a 20,000-token output reserve less Claude Code's
//!    13,000-token buffer: 167,000 (confirmed on v2.1.3x by the real `preTokens` 167,094,
//!    167,117, 167,731 and 170,251);
//!
//! and then `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE` (1–100) as a lowering only:
//! `min(floor(effective window × pct / 100), point)` — Claude Code ignores values that would
//! raise the threshold.

/// The default context window of Claude Code models, in tokens.
pub const DEFAULT_WINDOW: u64 = 200_000;
/// Output reserve Claude Code subtracts from the window (`min(maxOutputTokens, 20,000)`), tokens.
pub const OUTPUT_RESERVE: u64 = 20_000;
/// Claude Code's auto-compact buffer below the effective window, tokens.
pub const AUTOCOMPACT_BUFFER: u64 = 13_000;
/// Environment variable naming the auto-compact window in tokens.
pub const WINDOW_VAR: &str = "CLAUDE_CODE_AUTO_COMPACT_WINDOW";
/// Environment variable lowering the trigger to a percentage of the effective window.
pub const PCT_VAR: &str = "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE";

/// A resolved compaction point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompactionPoint {
    /// Tokens of context at which Claude Code compacts.
    pub tokens: u64,
    /// Where the number came from, for messages (e.g. `default 200k − 20k − 13k`).
    pub source: String,
}

/// Resolve the compaction point from the config value (`0` = derive) and the environment
/// (`var` looks a variable up; pass `|k| std::env::var(k).ok()` in production). Values of the
/// variables that are not numbers or out of range are ignored, as Claude Code ignores them.
pub fn resolve(configured: u64, var: impl Fn(&str) -> Option<String>) -> CompactionPoint {
    if configured > 0 {
        return CompactionPoint {
            tokens: configured,
            source: "config.toml [context] compaction_point".into(),
        };
    }
    let window = var(WINDOW_VAR)
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|w| (100_000..=1_000_000).contains(w));
    let (effective, mut point, mut source) = match window {
        Some(w) => (w, w, format!("{WINDOW_VAR}={w}")),
        None => {
            let effective = DEFAULT_WINDOW - OUTPUT_RESERVE;
            (effective, effective - AUTOCOMPACT_BUFFER, "default 200k − 20k − 13k".to_string())
        }
    };
    let pct =
        var(PCT_VAR).and_then(|v| v.trim().parse::<u64>().ok()).filter(|p| (1..=100).contains(p));
    if let Some(p) = pct {
        let lowered = effective * p / 100;
        if lowered < point {
            point = lowered;
            source = format!("{source}, lowered by {PCT_VAR}={p}");
        }
    }
    CompactionPoint { tokens: point, source }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
    }

    #[test]
    fn resolution_table() {
        type Vars<'a> = &'a [(&'a str, &'a str)];
        let cases: &[(u64, Vars, u64)] = &[
            (0, &[], 167_000),
            (150_000, &[(WINDOW_VAR, "500000")], 150_000),
            (0, &[(WINDOW_VAR, "500000")], 500_000),
            (0, &[(WINDOW_VAR, "50000")], 167_000),
            (0, &[(WINDOW_VAR, "lots")], 167_000),
            (0, &[(PCT_VAR, "50")], 90_000),
            (0, &[(PCT_VAR, "95")], 167_000),
            (0, &[(PCT_VAR, "0")], 167_000),
            (0, &[(WINDOW_VAR, "400000"), (PCT_VAR, "50")], 200_000),
        ];
        for (configured, vars, want) in cases {
            assert_eq!(resolve(*configured, env(vars)).tokens, *want, "{configured} {vars:?}");
        }
    }
}
