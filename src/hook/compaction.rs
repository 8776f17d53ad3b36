//! The compaction point the hook's bands are percentages of: how many tokens of context Claude
//! Code lets a session reach before it compacts automatically.
//!
//! Resolution (DESIGN §10): `[context] compaction_point` in `longrun/config.toml` when it is not
//! 0; else the transcript engine's [`crate::transcript::compaction_point`] on a 200,000-token
//! window with `CLAUDE_CODE_AUTO_COMPACT_WINDOW`, `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE` and
//! `CLAUDE_CODE_MAX_OUTPUT_TOKENS` applied (200k − 20k − 13k = 167,000 by default;
//! formats/claude-code.md §4.5), so the hook and `kit measure` agree on every percentage.

use crate::transcript::{compaction_point, CompactionOverrides};

/// The context window the hook assumes, tokens (the transcript does not say; formats §4.4).
pub const DEFAULT_WINDOW: u64 = 200_000;

/// A resolved compaction point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompactionPoint {
    /// Tokens of context at which Claude Code compacts.
    pub tokens: u64,
    /// Where the number came from, for messages (e.g. `default 200k − 20k − 13k`).
    pub source: String,
}

/// Resolve the compaction point from the config value (`0` = derive) and the environment
/// (`var` looks a variable up; the hook passes the process environment, the rehearsal none).
/// Unparsable values are ignored, as Claude Code ignores them.
pub fn resolve(configured: u64, var: impl Fn(&str) -> Option<String>) -> CompactionPoint {
    if configured > 0 {
        return CompactionPoint {
            tokens: configured,
            source: "config.toml [context] compaction_point".into(),
        };
    }
    let o = CompactionOverrides::from_vars(var);
    let tokens = compaction_point(DEFAULT_WINDOW, &o);
    let source = if o == CompactionOverrides::default() {
        "default 200k − 20k − 13k".to_string()
    } else {
        let mut set = vec![];
        if let Some(w) = o.auto_compact_window {
            set.push(format!("CLAUDE_CODE_AUTO_COMPACT_WINDOW={w}"));
        }
        if let Some(p) = o.pct_override {
            set.push(format!("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE={p}"));
        }
        if let Some(m) = o.max_output_tokens {
            set.push(format!("CLAUDE_CODE_MAX_OUTPUT_TOKENS={m}"));
        }
        format!("200k window with {}", set.join(", "))
    };
    CompactionPoint { tokens, source }
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
        let w = "CLAUDE_CODE_AUTO_COMPACT_WINDOW";
        let p = "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE";
        let cases: &[(u64, Vars, u64)] = &[
            (0, &[], 167_000),
            (150_000, &[(w, "120000")], 150_000),
            (0, &[(w, "120000")], 87_000),
            (0, &[(w, "500000")], 167_000),
            (0, &[(w, "lots")], 167_000),
            (0, &[(p, "50")], 90_000),
            (0, &[(p, "95")], 167_000),
            (0, &[(p, "0")], 167_000),
        ];
        for (configured, vars, want) in cases {
            assert_eq!(resolve(*configured, env(vars)).tokens, *want, "{configured} {vars:?}");
        }
        assert_eq!(resolve(0, env(&[])).source, "default 200k − 20k − 13k");
    }
}
