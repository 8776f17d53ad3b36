//! Scenario scripts (DESIGN §7): what the fake agent does on each invocation. The files live in
//! `fake-agent/scenarios/*.toml`, embedded in the binary ([`SCENARIOS`]); the format
//! is documented field by field in `fake-agent/scenarios/README.md` and on the types below.

use std::path::Path;

use serde::Deserialize;

use crate::error::{Error, IoContext, Result};

/// The scenario format this build reads.
pub(super) const FORMAT_VERSION: u32 = 1;

/// Model a scenario claims unless it names another (or `--model` does).
pub(super) const DEFAULT_MODEL: &str = "claude-sonnet-4-5-20250929";

/// One scenario file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Scenario {
    /// Version of the format; a newer file asks for a newer fake-agent.
    #[serde(default = "default_version")]
    pub format_version: u32,
    /// One line saying what the scenario rehearses.
    pub description: String,
    /// The API model id the fake claims in its output and transcript.
    #[serde(default = "default_model")]
    pub model: String,
    /// Cache TTL of the fake's cache writes: `"5m"` (default) or `"1h"`.
    #[serde(default = "default_ttl")]
    pub cache_ttl: String,
    /// What to do, by invocation; the first entry whose `when` matches is used.
    #[serde(default, rename = "call")]
    pub calls: Vec<Call>,
    /// Said (as the final text) on an invocation no `call` matches; nothing else happens.
    #[serde(default = "default_idle")]
    pub otherwise: String,
}

fn default_version() -> u32 {
    FORMAT_VERSION
}
fn default_model() -> String {
    DEFAULT_MODEL.into()
}
fn default_ttl() -> String {
    "5m".into()
}
fn default_idle() -> String {
    "Nothing left for me to do here.".into()
}

/// The steps of the invocations that `when` selects.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Call {
    /// Which invocations: `"2"`, `"1..3"` (inclusive), `"3.."`, or `"*"` (all). 1-based.
    pub when: String,
    /// The steps, in order.
    #[serde(default, rename = "step")]
    pub steps: Vec<Step>,
}

/// One step. In every text field `{{invocation}}` and `{{cwd}}` are replaced by their values.
/// Paths are relative to the working directory.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(tag = "do", rename_all = "snake_case", deny_unknown_fields)]
pub(super) enum Step {
    /// Assistant text; joins the next API call (or the final answer).
    Print { text: String },
    /// Create or overwrite a file (the `Write` tool).
    Write { path: String, content: String },
    /// Replace the first occurrence of `find` by `replace` (the `Edit` tool); a missing `find`
    /// is a failed tool call, as in Claude Code, and the run goes on.
    Patch { path: String, find: String, replace: String },
    /// Remove a file (`rm` through the `Bash` tool).
    Delete { path: String },
    /// Rename a file (`mv` through the `Bash` tool).
    Rename { from: String, to: String },
    /// Run a shell command (`sh -c`) through the `Bash` tool; its output is the tool result.
    /// With `if_hook_said`, only when the last `hook` step's reply contains that text (the
    /// agent doing what a hook asked), else the step is skipped.
    Run {
        command: String,
        #[serde(default)]
        if_hook_said: Option<String>,
    },
    /// A Claude Code hook event (formats/claude-code.md §5): the handlers configured for it in
    /// the settings files (`kit hook install` puts `kit hook claude` there; see `hooks.rs`), or
    /// only `command` when the step names one, each run as `sh -c` with the event JSON
    /// (`session_id`, `transcript_path`, `cwd`, `hook_event_name`, `permission_mode`; for
    /// `PostToolUse` the last tool call's `tool_name`, `tool_input`, `tool_response`,
    /// `tool_use_id`; for `Stop` `stop_hook_active`) on stdin. The context they give Claude
    /// (`additionalContext`, a Stop's block reason) is recorded as Claude Code records it (an
    /// `isMeta` `<system-reminder>` user line) and kept for `if_hook_said`.
    Hook {
        event: String,
        #[serde(default)]
        command: Option<String>,
        #[serde(default)]
        stop_hook_active: bool,
    },
    /// Sleep for real, `seconds` (fractions allowed), as a long `Bash` command would; with
    /// `until`, a path relative to the working folder, the sleep ends as soon as that file exists
    /// (polled every 20 ms), so a rehearsal that releases it does not wait the full time. The
    /// transcript records `seconds` either way.
    Sleep {
        seconds: f64,
        #[serde(default)]
        until: Option<String>,
    },
    /// Allocate and touch `mb` MiB in `step_mb` MiB steps, `pause_ms` apart, held until the
    /// process exits; then wait `hold_seconds`.
    Allocate {
        mb: u64,
        #[serde(default = "default_step_mb")]
        step_mb: u64,
        #[serde(default = "default_pause_ms")]
        pause_ms: u64,
        #[serde(default)]
        hold_seconds: f64,
    },
    /// Start `sh -c command` in the background, stdio on /dev/null. `detach = true` puts it in
    /// a new session (`setsid`: out of the agent's process group, as an escaping cheat would);
    /// `false` leaves it in the agent's process group.
    Spawn {
        command: String,
        #[serde(default = "default_true")]
        detach: bool,
    },
    /// Ignore SIGTERM from now on, so only SIGKILL ends this process.
    IgnoreSigterm {},
    /// Write the prompt this invocation received (`-p` or stdin), byte for byte, to `path`
    /// (its folder created): a test's window on what the agent was given. Not recorded as a
    /// tool call.
    SavePrompt { path: String },
    /// `calls` API calls (each a `Read` of `path`) whose context grows until the last one holds
    /// `to_pct` % of `compaction_point` tokens (default 0: the point of the scenario's model by
    /// [`crate::transcript::point::resolve`], the rule the hook uses — 167,000 for
    /// claude-opus-4-6, 200,000 (reactive) for claude-sonnet-4-5).
    GrowContext {
        to_pct: f64,
        #[serde(default = "default_grow_calls")]
        calls: u32,
        #[serde(default = "default_compaction_point")]
        compaction_point: u64,
        #[serde(default = "default_read_path")]
        path: String,
    },
    /// `calls` API calls (each a `Read` of `path`), `pause_ms` apart — a real wait, as an API
    /// call takes time, so that a loop reading the stream can end the agent between two calls —
    /// each costing `usd` by kit's price table for the scenario's model (uncached input tokens
    /// are added to reach it: a large file read once, not kept in the context).
    Spend {
        calls: u32,
        usd: f64,
        #[serde(default = "default_spend_pause_ms")]
        pause_ms: u64,
        #[serde(default = "default_read_path")]
        path: String,
    },
    /// Stop here with this exit status (a `result` with `is_error` when non-zero).
    Exit { code: u8 },
    /// Stop here as Claude Code does when the plan's usage limit is reached: a
    /// `rate_limit_event` with `status: "rejected"` and `resetsAt` `reset_minutes` after the
    /// kit clock's now (rounded up to the minute), a `<synthetic>` assistant line and a `result`
    /// with `is_error` whose text is `You've hit your limit · resets 3:10am (UTC)`; exit 1. The
    /// invocation counts as finished.
    Limit { reset_minutes: u64 },
    /// Crash here: no `result`, the process ends by `signal` (default 9, SIGKILL) mid-stream.
    /// The invocation counts as finished, so the next call goes on to the next `when`.
    Crash {
        #[serde(default = "default_signal")]
        signal: i32,
    },
}

fn default_signal() -> i32 {
    9
}
fn default_step_mb() -> u64 {
    50
}
fn default_pause_ms() -> u64 {
    100
}
fn default_true() -> bool {
    true
}
fn default_spend_pause_ms() -> u64 {
    250
}
fn default_grow_calls() -> u32 {
    4
}
fn default_compaction_point() -> u64 {
    0
}
fn default_read_path() -> String {
    "README.md".into()
}

impl Scenario {
    /// Load `name`: an embedded scenario (`finish`) or, if it ends in `.toml` or holds a `/`, a
    /// file. Returns the scenario and its short name (file stem).
    ///
    /// Errors: an unknown name (listing the embedded ones), an unreadable file, or a malformed
    /// one with its line.
    pub(super) fn load(name: &str) -> Result<(Scenario, String)> {
        if name.ends_with(".toml") || name.contains('/') {
            let path = Path::new(name);
            let text = std::fs::read_to_string(path).at(path)?;
            let stem = path.file_stem().map_or(name.into(), |s| s.to_string_lossy().into());
            return Ok((Self::parse(name, &text)?, stem));
        }
        let file = SCENARIOS.get_file(format!("{name}.toml")).ok_or_else(|| {
            Error::usage(format!("no scenario `{name}`; embedded: {}", names().join(", ")))
                .with_hint("fake-agent --scenario finish")
        })?;
        let text = file.contents_utf8().unwrap_or_default();
        Ok((Self::parse(&format!("fake-agent/scenarios/{name}.toml"), text)?, name.to_string()))
    }

    /// Parse a scenario's text; `origin` names it in errors.
    pub(super) fn parse(origin: &str, text: &str) -> Result<Scenario> {
        let s: Scenario = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| crate::longrun::config::line_of(text, s.start));
            Error::input(origin, line, e.message().to_string())
        })?;
        if s.format_version > FORMAT_VERSION {
            return Err(Error::input(
                origin,
                None,
                format!("format_version {} is newer than this fake-agent", s.format_version),
            )
            .with_hint("update kit (cargo install --path .)"));
        }
        for c in &s.calls {
            if parse_when(&c.when).is_none() {
                return Err(Error::input(
                    origin,
                    None,
                    format!("call when = {:?}: expected \"N\", \"N..M\", \"N..\" or \"*\"", c.when),
                ));
            }
        }
        if s.cache_ttl != "5m" && s.cache_ttl != "1h" {
            return Err(Error::input(origin, None, "cache_ttl must be \"5m\" or \"1h\""));
        }
        Ok(s)
    }

    /// The steps for invocation `n` (1-based), or `None` when no call matches.
    pub(super) fn steps_for(&self, n: u64) -> Option<&[Step]> {
        self.calls
            .iter()
            .find(|c| parse_when(&c.when).is_some_and(|(lo, hi)| lo <= n && n <= hi))
            .map(|c| c.steps.as_slice())
    }
}

/// `when` as an inclusive range of invocation numbers.
fn parse_when(when: &str) -> Option<(u64, u64)> {
    let w = when.trim();
    if w == "*" {
        return Some((1, u64::MAX));
    }
    match w.split_once("..") {
        None => w.parse().ok().filter(|n| *n >= 1).map(|n| (n, n)),
        Some((lo, "")) => lo.parse().ok().filter(|n| *n >= 1).map(|n| (n, u64::MAX)),
        Some((lo, hi)) => {
            let (lo, hi) = (lo.parse().ok()?, hi.parse().ok()?);
            (1 <= lo && lo <= hi).then_some((lo, hi))
        }
    }
}

/// `fake-agent/scenarios/`.
pub static SCENARIOS: include_dir::Dir<'static> =
    include_dir::include_dir!("$CARGO_MANIFEST_DIR/../../fake-agent/scenarios");

/// Names of the embedded scenarios (`fake-agent/scenarios/NAME.toml`), sorted.
pub fn names() -> Vec<String> {
    let mut v: Vec<String> = SCENARIOS
        .files()
        .filter_map(|f| {
            let p = f.path();
            (p.extension()? == "toml").then(|| p.file_stem().map(|s| s.to_string_lossy().into()))?
        })
        .collect();
    v.sort();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_embedded_scenario_parses() {
        let names = names();
        for required in ["finish", "cheat", "race", "hang", "hog", "lie", "stall"] {
            assert!(names.iter().any(|n| n == required), "missing scenario {required}");
        }
        for n in &names {
            let (s, _) = Scenario::load(n).unwrap_or_else(|e| panic!("{n}: {e}"));
            assert!(!s.description.is_empty(), "{n}");
        }
    }

    #[test]
    fn when_table() {
        assert_eq!(parse_when("2"), Some((2, 2)));
        assert_eq!(parse_when("1..3"), Some((1, 3)));
        assert_eq!(parse_when("3.."), Some((3, u64::MAX)));
        assert_eq!(parse_when("*"), Some((1, u64::MAX)));
        for bad in ["0", "3..1", "x", "", "-1", "1..x"] {
            assert_eq!(parse_when(bad), None, "{bad}");
        }
    }

    #[test]
    fn malformed_scenario_names_its_line() {
        let text = "description = \"x\"\n[[call]]\nwhen = \"1\"\n[[call.step]]\ndo = \"fly\"\n";
        match Scenario::parse("x.toml", text) {
            Err(Error::Input { line: Some(l), .. }) => assert!((4..=5).contains(&l), "{l}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn first_matching_call_wins() {
        let text = "description = \"x\"\n[[call]]\nwhen = \"1\"\n[[call.step]]\ndo = \"print\"\ntext = \"a\"\n[[call]]\nwhen = \"*\"\n";
        let s = Scenario::parse("x.toml", text).unwrap();
        assert_eq!(s.steps_for(1).map(|s| s.len()), Some(1));
        assert_eq!(s.steps_for(7).map(|s| s.len()), Some(0));
    }
}
