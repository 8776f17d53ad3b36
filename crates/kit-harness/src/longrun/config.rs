//! `longrun/config.toml`: the human's settings for the loop, the hook and measurement.
//! Written once by `kit init` (from `kit/templates/config.toml`), then edited by hand; kit never
//! rewrites it. Every field has a default, so a file may hold only what it changes.
//!
//! Format, field by field (durations as `90s`/`15m`/`2h`, sizes as systemd's `MemoryMax=`):
//!
//! ```toml
//! format_version = 1          # checked: a newer file asks for a newer kit
//! [agent]
//! command = "claude"          # "claude" | "codex" | "fake:SCENARIO" | any command line
//! permissions = "allowlist"   # claude: "allowlist" (acceptEdits + allowed tools) | "skip"
//! allowed_tools = []          # claude: extra --allowedTools patterns, e.g. "Bash(make:*)"
//! setting_sources = "project,local" # claude: --setting-sources; "" reads all of them
//! sandbox = "workspace-write" # codex: --sandbox of codex exec
//! model = ""                  # --model / -m; "" = the CLI's default
//! fallback = []               # agents to go on with, in order, when the current one is stuck
//! fallback_after_wait = "30m" # … after a usage/rate limit whose wait is longer ("0s": any)
//! fallback_after_no_progress = 3 # … or after this many iterations without progress
//!                             #   (default: max_no_progress; at most max_no_progress)
//! [caps]                      # all on; none may be unlimited (DESIGN §6)
//! max_iterations = 10         # agent iterations per loop run
//! max_wall = "4h"             # wall time of one loop run
//! max_cost_usd = 25.0         # USD, from the agent's reported usage
//! max_no_progress = 3         # consecutive iterations without a new passing criterion or commit
//! [timeouts]
//! iteration = "30m"           # one agent iteration; then SIGTERM to its process group
//! grace = "10s"               # between SIGTERM and SIGKILL
//! criterion = "5m"            # one criterion command
//! [memory]
//! max = "4G"                  # MemoryMax of the agent's process tree
//! [goal]
//! required_level = 3          # kit loop refuses a goal rated below this
//! confirm_runs = 2            # passing runs of every criterion before done (1 = no re-run)
//! [review]                    # the evaluator of `- review:` criteria (goal::review)
//! evaluator = ""              # a command line (sh -c); "" = none (a review criterion is refused)
//! timeout = "10m"             # one evaluator run
//! [context]
//! compaction_point = 0        # tokens; 0 = derive (DESIGN §10)
//! bands = [50, 70, 85]        # % of the compaction point: checkpoint, handoff, wrap up
//! cache_ttl = "5m"            # prompt-cache TTL assumed when a transcript does not say
//! [notify]
//! command = ""                # sh -c in the repository root on done, cap, limit wait, pause; "" = none
//! timeout = "30s"             # then its process group is killed; its failure never stops the loop
//! [prices."claude-opus-4-6"]  # optional overrides, USD per million tokens
//! input = 5.0
//! ```

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use toml::Spanned;

use crate::duration::{parse_duration, parse_size};
use crate::error::{Error, Result};
use crate::prices::PriceOverride;

/// The config format this kit reads and writes.
pub const FORMAT_VERSION: u32 = 1;

/// Parsed `config.toml`. Durations and sizes are typed when the file is read ([`Dur`], [`Size`]),
/// each kept with its place in the file ([`Spanned`]) so that [`Config::load`]'s range checks
/// name its line; the defaults are the `Default` impls below, written once.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Version of this file's format; kit refuses a newer one.
    pub format_version: u32,
    /// Which agent the loop runs.
    pub agent: AgentConfig,
    /// The loop's caps.
    pub caps: Caps,
    /// Timeouts.
    pub timeouts: Timeouts,
    /// The agent's memory cap.
    pub memory: Memory,
    /// Goal requirements.
    pub goal: GoalConfig,
    /// The evaluator of the goal's `review` criteria.
    pub review: ReviewConfig,
    /// Context bands, compaction point and cache TTL.
    pub context: ContextConfig,
    /// Per-model price overrides (USD per million tokens), keyed by model id.
    pub prices: BTreeMap<String, PriceOverride>,
    /// The command run when the loop needs a person to know (`looprun::notify`).
    pub notify: NotifyConfig,
}

/// `[notify]`: a command kit runs when the loop ends done, stops at a cap, starts waiting for a
/// usage limit, or pauses (see `looprun::notify` for its environment and journal event).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NotifyConfig {
    /// Run through `sh -c` in the repository root; empty (the default): no notification.
    pub command: String,
    /// Its time limit, e.g. `"30s"`; then its process group is killed.
    pub timeout: Spanned<Dur>,
}

impl Default for NotifyConfig {
    fn default() -> Self {
        NotifyConfig { command: String::new(), timeout: at(Dur::secs(30)) }
    }
}

/// `[agent]`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentConfig {
    /// `"claude"`, `"codex"`, `"fake:SCENARIO"` or any command line (run through `sh -c`).
    pub command: String,
    /// Claude Code: `"allowlist"` (default: `--permission-mode acceptEdits` plus the
    /// `--allowedTools` patterns kit derives from the goal's criteria and [`Self::allowed_tools`])
    /// or `"skip"` (`--dangerously-skip-permissions`; as root kit sets `IS_SANDBOX=1`).
    pub permissions: String,
    /// Claude Code: extra `--allowedTools` patterns, e.g. `"Bash(npm install:*)"`.
    pub allowed_tools: Vec<String>,
    /// Claude Code: `--setting-sources` (default `"project,local"`: the host's user settings
    /// stay out); `""` passes no flag, so Claude Code reads all its settings.
    pub setting_sources: String,
    /// Codex: `--sandbox` of `codex exec` (`"workspace-write"` default, `"read-only"`,
    /// `"danger-full-access"`).
    pub sandbox: String,
    /// The model, passed as `--model` (Claude Code) or `-m` (Codex); `""`: the CLI's default.
    pub model: String,
    /// Agents to go on with, in order, each written as [`Self::command`] is, when the current
    /// one is stuck (see `looprun::fallback`): after a usage or rate limit whose wait is longer
    /// than [`Self::fallback_after_wait`], or [`Self::fallback_after_no_progress`] iterations in
    /// a row without progress. Empty (the default): no fallback.
    pub fallback: Vec<Spanned<String>>,
    /// The longest limit wait the loop accepts before it goes on with the next fallback agent,
    /// e.g. `"30m"`; `"0s"` never waits while a fallback is left.
    pub fallback_after_wait: Spanned<Dur>,
    /// Iterations in a row without progress after which the next fallback agent takes over
    /// (1 to `[caps] max_no_progress`; default: `max_no_progress`, so that the run goes on with
    /// the next agent where it would have stopped at the cap).
    pub fallback_after_no_progress: Option<Spanned<u32>>,
}

/// `[caps]`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Caps {
    /// Agent iterations per loop run (≥ 1).
    pub max_iterations: u32,
    /// Wall time of one loop run, e.g. `"4h"`.
    pub max_wall: Spanned<Dur>,
    /// USD, from the agent's reported usage priced by the price table.
    pub max_cost_usd: f64,
    /// Consecutive iterations without progress before the loop stops (≥ 1).
    pub max_no_progress: u32,
}

/// `[timeouts]`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Timeouts {
    /// One agent iteration, e.g. `"30m"`.
    pub iteration: Spanned<Dur>,
    /// Between SIGTERM and SIGKILL of the agent's process group, e.g. `"10s"`.
    pub grace: Spanned<Dur>,
    /// One criterion command, e.g. `"5m"`.
    pub criterion: Spanned<Dur>,
}

/// `[memory]`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Memory {
    /// MemoryMax of the agent's process tree, systemd syntax, e.g. `"4G"`.
    pub max: Spanned<Size>,
}

/// `[goal]`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GoalConfig {
    /// Minimum done-criterion level (0–4) for `kit loop` to start.
    pub required_level: u8,
    /// The flake guard: how many runs of the criteria must pass, all of them, before the loop
    /// accepts done — the run that found every criterion passing counts as the first, so the
    /// default 2 runs them once more on the same tree; 1 turns the guard off (≥ 1, at most 10).
    /// A criterion that passes in one run and fails in another is *flapping*: done is refused
    /// (see `looprun::confirm`).
    #[serde(default = "default_confirm_runs")]
    pub confirm_runs: u32,
}

fn default_confirm_runs() -> u32 {
    2
}

/// `[review]`: the evaluator, a command separate from the agent (the executor) and from kit's
/// prompt (the planner), that judges the goal's `review` criteria (see `goal::review` for what
/// it receives and the verdict it must print).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReviewConfig {
    /// A command line run through `sh -c` in the repository root; empty = none configured
    /// (a goal with a review criterion is then refused by `kit loop`, exit 2).
    pub evaluator: String,
    /// One evaluator run, e.g. `"10m"`; then its process group is killed and the verdict is fail.
    pub timeout: Spanned<Dur>,
}

impl Default for ReviewConfig {
    fn default() -> Self {
        ReviewConfig { evaluator: String::new(), timeout: at(Dur::secs(600)) }
    }
}

/// `[context]`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ContextConfig {
    /// Compaction point in tokens; 0 derives it (DESIGN §10).
    pub compaction_point: u64,
    /// Band thresholds in % of the compaction point, ascending: checkpoint, handoff, wrap up.
    pub bands: Vec<u8>,
    /// Prompt-cache TTL assumed when a transcript does not say, `"5m"` or `"1h"`.
    pub cache_ttl: Spanned<Dur>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            format_version: FORMAT_VERSION,
            agent: AgentConfig::default(),
            caps: Caps::default(),
            timeouts: Timeouts::default(),
            memory: Memory::default(),
            goal: GoalConfig::default(),
            review: ReviewConfig::default(),
            context: ContextConfig::default(),
            prices: BTreeMap::new(),
            notify: NotifyConfig::default(),
        }
    }
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            command: "claude".into(),
            permissions: "allowlist".into(),
            allowed_tools: Vec::new(),
            setting_sources: "project,local".into(),
            sandbox: "workspace-write".into(),
            model: String::new(),
            fallback: Vec::new(),
            fallback_after_wait: at(Dur::secs(30 * 60)),
            fallback_after_no_progress: None,
        }
    }
}

impl Default for Caps {
    fn default() -> Self {
        Caps {
            max_iterations: 10,
            max_wall: at(Dur::secs(4 * 3600)),
            max_cost_usd: 25.0,
            max_no_progress: 3,
        }
    }
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            iteration: at(Dur::secs(1800)),
            grace: at(Dur::secs(10)),
            criterion: at(Dur::secs(300)),
        }
    }
}

impl Default for Memory {
    fn default() -> Self {
        Memory { max: at(Size { bytes: 4 << 30, text: "4G".into() }) }
    }
}

impl Default for GoalConfig {
    fn default() -> Self {
        GoalConfig { required_level: 3, confirm_runs: default_confirm_runs() }
    }
}

impl Default for ContextConfig {
    fn default() -> Self {
        ContextConfig {
            compaction_point: 0,
            bands: vec![50, 70, 85],
            cache_ttl: at(Dur::secs(300)),
        }
    }
}

impl Config {
    /// Read and validate `path`. A missing file gives the defaults.
    ///
    /// Errors: [`Error::Input`] naming `config.toml:LINE` for TOML syntax, unknown keys, wrong
    /// types, a `format_version` newer than this kit, or an invalid duration, size or cap.
    pub fn load(path: &Path) -> Result<Config> {
        match crate::longrun::read_user_text(path, path)? {
            Some(text) => Config::parse(path, &text),
            None => Ok(Config::default()),
        }
    }

    /// Parse and validate config text; `path` is used in messages only.
    pub fn parse(path: &Path, text: &str) -> Result<Config> {
        let cfg: Config = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| line_of(text, s.start));
            Error::input(path, line, e.message().trim().to_string())
                .with_hint(format!("fix {} (kit init writes a commented example)", path.display()))
        })?;
        cfg.validate(path, text)?;
        Ok(cfg)
    }

    fn validate(&self, path: &Path, text: &str) -> Result<()> {
        let bad = |key: &str, msg: String| {
            let line = find_key_line(text, key);
            Err(Error::input(path, line, msg)
                .with_hint(format!("fix `{key}` in {}", path.display())))
        };
        let bad_at = |key: &str, pos: usize, msg: String| {
            Err(Error::input(path, Some(line_of(text, pos)), msg)
                .with_hint(format!("fix `{key}` in {}", path.display())))
        };
        if self.format_version > FORMAT_VERSION {
            return bad(
                "format_version",
                format!(
                    "format_version {} is newer than this kit understands ({FORMAT_VERSION}); update kit",
                    self.format_version
                ),
            );
        }
        // The same rule as the flags (`LoopOptions::check`): a cap or timeout of 0 would turn
        // it off, which caps may not be; only the grace period may be 0 (SIGKILL at once).
        for (key, v, may_be_zero) in [
            ("max_wall", &self.caps.max_wall, false),
            ("iteration", &self.timeouts.iteration, false),
            ("grace", &self.timeouts.grace, true),
            ("criterion", &self.timeouts.criterion, false),
            ("cache_ttl", &self.context.cache_ttl, false),
            ("timeout", &self.notify.timeout, false),
            ("timeout", &self.review.timeout, false),
        ] {
            if v.get_ref().0.is_zero() && !may_be_zero {
                let written = text.get(v.span()).unwrap_or("0");
                return bad_at(
                    key,
                    v.span().start,
                    format!("{key} = {written}: caps may not be off; give a value above 0"),
                );
            }
        }
        let max = &self.memory.max;
        if let Err(msg) =
            crate::duration::check_memory_cap(&max.get_ref().text, max.get_ref().bytes)
        {
            return bad_at("max", max.span().start, msg);
        }
        if self.caps.max_iterations == 0 {
            return bad(
                "max_iterations",
                "max_iterations must be at least 1 (caps may not be off)".into(),
            );
        }
        if self.caps.max_no_progress == 0 {
            return bad("max_no_progress", "max_no_progress must be at least 1".into());
        }
        if !(self.caps.max_cost_usd.is_finite() && self.caps.max_cost_usd > 0.0) {
            return bad("max_cost_usd", "max_cost_usd must be a positive number of USD".into());
        }
        if self.goal.required_level > 4 {
            return bad("required_level", "required_level is 0 to 4".into());
        }
        if !(1..=10).contains(&self.goal.confirm_runs) {
            return bad(
                "confirm_runs",
                "confirm_runs is 1 (no second run) to 10: the passing runs needed before done"
                    .into(),
            );
        }
        if self.agent.command.trim().is_empty() {
            return bad("command", "agent command is empty".into());
        }
        if !["allowlist", "skip"].contains(&self.agent.permissions.as_str()) {
            return bad(
                "permissions",
                format!(
                    "permissions = \"{}\": give \"allowlist\" (acceptEdits plus allowed_tools) or \"skip\" (--dangerously-skip-permissions)",
                    self.agent.permissions
                ),
            );
        }
        if !["workspace-write", "read-only", "danger-full-access"]
            .contains(&self.agent.sandbox.as_str())
        {
            return bad(
                "sandbox",
                format!(
                    "sandbox = \"{}\": give \"workspace-write\", \"read-only\" or \"danger-full-access\"",
                    self.agent.sandbox
                ),
            );
        }
        if let Some(t) = self.agent.allowed_tools.iter().find(|t| t.trim().is_empty()) {
            return bad("allowed_tools", format!("allowed_tools holds an empty pattern {t:?}"));
        }
        self.validate_fallback(path, text)?;
        let b = &self.context.bands;
        if b.is_empty()
            || b.windows(2).any(|w| w[0] >= w[1])
            || b.iter().any(|&x| x == 0 || x >= 100)
        {
            return bad("bands", "bands must be ascending percentages between 1 and 99".into());
        }
        Ok(())
    }

    /// `[agent] fallback`: each entry a spec as `command` is (no empty one, no `fake:` without a
    /// scenario, none twice), and `fallback_after_no_progress` from 1 to `max_no_progress`.
    fn validate_fallback(&self, path: &Path, text: &str) -> Result<()> {
        let bad_at = |key: &str, pos: usize, msg: String| {
            Err(Error::input(path, Some(line_of(text, pos)), msg)
                .with_hint(format!("fix `{key}` in {}", path.display())))
        };
        let a = &self.agent;
        for (i, spec) in a.fallback.iter().enumerate() {
            let s = spec.get_ref().trim();
            let pos = spec.span().start;
            if s.is_empty() {
                return bad_at("fallback", pos, format!("fallback entry {} is empty", i + 1));
            }
            if s == "fake:" || s == "fake-codex:" {
                return bad_at(
                    "fallback",
                    pos,
                    format!(
                        "fallback entry {} `{s}` needs a scenario name, e.g. \"{s}finish\"",
                        i + 1
                    ),
                );
            }
            if a.fallback[..i].iter().any(|o| o.get_ref().trim() == s) {
                return bad_at("fallback", pos, format!("fallback lists `{s}` twice"));
            }
        }
        if let Some(n) = &a.fallback_after_no_progress {
            let max = self.caps.max_no_progress;
            let v = *n.get_ref();
            if v == 0 || v > max {
                return bad_at(
                    "fallback_after_no_progress",
                    n.span().start,
                    format!(
                        "fallback_after_no_progress = {v}: give 1 to {max} (max_no_progress): \
                         past it the no-progress cap stops the run before any fallback"
                    ),
                );
            }
        }
        Ok(())
    }

    /// `[agent] fallback` as written, trimmed.
    pub fn fallback(&self) -> Vec<String> {
        self.agent.fallback.iter().map(|s| s.get_ref().trim().to_string()).collect()
    }
    /// The longest limit wait before the next fallback agent takes over.
    pub fn fallback_after_wait(&self) -> Duration {
        self.agent.fallback_after_wait.get_ref().0
    }
    /// Iterations in a row without progress before the next fallback agent takes over.
    pub fn fallback_after_no_progress(&self) -> u32 {
        self.agent
            .fallback_after_no_progress
            .as_ref()
            .map_or(self.caps.max_no_progress, |n| *n.get_ref())
    }

    /// Wall-time cap of one loop run.
    pub fn max_wall(&self) -> Duration {
        self.caps.max_wall.get_ref().0
    }
    /// Timeout of one agent iteration.
    pub fn iteration_timeout(&self) -> Duration {
        self.timeouts.iteration.get_ref().0
    }
    /// Grace period between SIGTERM and SIGKILL.
    pub fn grace(&self) -> Duration {
        self.timeouts.grace.get_ref().0
    }
    /// Timeout of one criterion command.
    pub fn criterion_timeout(&self) -> Duration {
        self.timeouts.criterion.get_ref().0
    }
    /// Memory cap in bytes.
    pub fn memory_max(&self) -> u64 {
        self.memory.max.get_ref().bytes
    }
    /// Time limit of the `[notify]` command.
    pub fn notify_timeout(&self) -> Duration {
        self.notify.timeout.get_ref().0
    }
    /// Timeout of one review evaluator run.
    pub fn review_timeout(&self) -> Duration {
        self.review.timeout.get_ref().0
    }
    /// Assumed cache TTL.
    pub fn cache_ttl(&self) -> Duration {
        self.context.cache_ttl.get_ref().0
    }
}

/// A default value, which stands nowhere in the file.
fn at<T>(value: T) -> Spanned<T> {
    Spanned::new(0..0, value)
}

/// A duration as config.toml writes it: a string [`parse_duration`] reads (`"90s"`, `"15m"`,
/// `"1h30m"`, bare seconds `"7"`; `humantime`'s syntax). A value it cannot read fails the
/// parse, and toml names its line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dur(pub Duration);

impl Dur {
    const fn secs(n: u64) -> Dur {
        Dur(Duration::from_secs(n))
    }
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Dur, D::Error> {
        let text = String::deserialize(d)?;
        parse_duration(&text).map(Dur).map_err(serde::de::Error::custom)
    }
}

impl Serialize for Dur {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&humantime::format_duration(self.0).to_string())
    }
}

/// A memory size as config.toml writes it, systemd's `MemoryMax=` syntax ([`parse_size`]):
/// the bytes, and the text as written (for messages).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Size {
    /// Bytes.
    pub bytes: u64,
    /// As written, e.g. `4G`.
    pub text: String,
}

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Size, D::Error> {
        let text = String::deserialize(d)?;
        let bytes = parse_size(&text).map_err(serde::de::Error::custom)?;
        Ok(Size { bytes, text })
    }
}

impl Serialize for Size {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

/// 1-based line number of byte offset `pos` in `text`.
pub fn line_of(text: &str, pos: usize) -> usize {
    text[..pos.min(text.len())].bytes().filter(|&b| b == b'\n').count() + 1
}

fn find_key_line(text: &str, key: &str) -> Option<usize> {
    text.lines()
        .position(|l| {
            let t = l.trim_start();
            t.strip_prefix(key).is_some_and(|r| r.trim_start().starts_with('='))
        })
        .map(|i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        let c = Config::parse(Path::new("config.toml"), "").unwrap();
        assert_eq!(c.caps.max_iterations, 10);
        assert_eq!(c.memory_max(), 4 << 30);
        // kit init's template sets every field to its default.
        let text = crate::templates::kit_file("templates/config.toml").unwrap();
        let t = Config::parse(Path::new("config.toml"), text).unwrap();
        assert_eq!(format!("{:?}", t.agent), format!("{:?}", AgentConfig::default()));
        assert_eq!(t.agent.setting_sources, "project,local");
        for (from_template, default) in [
            (t.max_wall(), c.max_wall()),
            (t.iteration_timeout(), c.iteration_timeout()),
            (t.grace(), c.grace()),
            (t.criterion_timeout(), c.criterion_timeout()),
            (t.notify_timeout(), c.notify_timeout()),
            (t.review_timeout(), c.review_timeout()),
            (t.cache_ttl(), c.cache_ttl()),
        ] {
            assert_eq!(from_template, default);
        }
        assert_eq!(t.memory_max(), c.memory_max());
        assert_eq!(c.goal.confirm_runs, 2);
        let c = Config::parse(Path::new("config.toml"), "[goal]\nrequired_level = 2\n").unwrap();
        assert_eq!(c.goal.confirm_runs, 2);
        assert!(c.review.evaluator.is_empty());
    }

    #[test]
    fn bad_values_are_named_with_what_is_accepted() {
        let msg =
            |text: &str| Config::parse(Path::new("config.toml"), text).unwrap_err().to_string();
        let m = msg("[caps]\nmax_wall = \"forever\"\n");
        assert!(m.contains("config.toml:2") && m.contains("`forever` is not a duration"), "{m}");
        assert!(m.contains("90s, 15m, 2h"), "{m}");
        let m = msg("[timeouts]\ncriterion = \"0\"\n");
        assert!(m.contains("criterion = \"0\": caps may not be off"), "{m}");
        let m = msg("[memory]\nmax = \"lots\"\n");
        assert!(m.contains("config.toml:2") && m.contains("`lots` is not a memory size"), "{m}");
    }

    #[test]
    fn the_fallback_agents_and_their_patience_are_read_with_defaults() {
        let p = Path::new("config.toml");
        // (text) → (fallback, after wait in seconds, after no progress)
        type Want<'a> = (Vec<&'a str>, u64, u32);
        let rows: Vec<(&str, Want)> = vec![
            ("", (vec![], 1800, 3)),
            ("[agent]\nfallback = [\"codex\", \" fake:finish \"]\n", (vec!["codex", "fake:finish"], 1800, 3)),
            (
                "[agent]\nfallback = [\"codex\"]\nfallback_after_wait = \"0s\"\nfallback_after_no_progress = 1\n",
                (vec!["codex"], 0, 1),
            ),
            ("[caps]\nmax_no_progress = 5\n[agent]\nfallback_after_wait = \"2h\"\n", (vec![], 7200, 5)),
            (
                "[caps]\nmax_no_progress = 5\n[agent]\nfallback = [\"sh ./a.sh\"]\nfallback_after_no_progress = 5\n",
                (vec!["sh ./a.sh"], 1800, 5),
            ),
        ];
        for (text, (fallback, wait, stalled)) in rows {
            let c = Config::parse(p, text).unwrap();
            assert_eq!(c.fallback(), fallback, "{text}");
            assert_eq!(c.fallback_after_wait(), Duration::from_secs(wait), "{text}");
            assert_eq!(c.fallback_after_no_progress(), stalled, "{text}");
        }
        let m = Config::parse(p, "[agent]\nfallback = [\"codex\", \"codex\"]\n").unwrap_err();
        assert!(m.to_string().contains("fallback lists `codex` twice"), "{m}");
        let m = Config::parse(p, "[agent]\nfallback_after_no_progress = 4\n").unwrap_err();
        assert!(m.to_string().contains("give 1 to 3 (max_no_progress)"), "{m}");
    }

    #[test]
    fn errors_name_the_line() {
        let cases = [
            ("format_version = 1\n[caps]\nmax_iterations = \"ten\"\n", 3),
            ("[caps]\nmax_wall = \"forever\"\n", 2),
            ("[timeouts]\niteration = \"1h\"\nbogus = 1\n", 3),
            ("format_version = 9\n", 1),
            ("[caps]\nmax_iterations = 0\n", 2),
            ("[memory]\nmax = \"lots\"\n", 2),
            ("[context]\nbands = [70, 50]\n", 2),
            ("[timeouts]\niteration = \"30m\"\ncriterion = \"0\"\n", 3),
            ("[caps]\nmax_wall = \"0s\"\n", 2),
            ("[memory]\nmax = \"1K\"\n", 2),
            ("[memory]\nmax = \"99999999999T\"\n", 2),
            ("[context]\ncache_ttl = \"0m\"\n", 2),
            ("[agent]\ncommand = \"claude\"\npermissions = \"yolo\"\n", 3),
            ("[agent]\nsandbox = \"write\"\n", 2),
            ("[agent]\nallowed_tools = [\"Bash(make:*)\", \" \"]\n", 2),
            ("[notify]\ncommand = \"true\"\ntimeout = \"soon\"\n", 3),
            ("[goal]\nconfirm_runs = 0\n", 2),
            ("[review]\nevaluator = \"x\"\ntimeout = \"never\"\n", 3),
            ("[agent]\nfallback = [\"codex\",\n  \"fake:\"]\n", 3),
            ("[agent]\nfallback = [\"codex\", \"  \"]\n", 2),
            ("[agent]\nfallback = \"codex\"\n", 2),
            ("[agent]\nfallback = [\"codex\",\n\"fake:finish\",\n\"codex\"]\n", 4),
            ("[agent]\nfallback_after_wait = \"soon\"\n", 2),
            ("[agent]\nfallback = [\"codex\"]\nfallback_after_no_progress = 0\n", 3),
            ("[caps]\nmax_no_progress = 2\n[agent]\nfallback_after_no_progress = 3\n", 4),
        ];
        for (text, line) in cases {
            match Config::parse(Path::new("config.toml"), text) {
                Err(Error::Input { line: Some(l), .. }) => assert_eq!(l, line, "{text}"),
                other => panic!("{text}: {other:?}"),
            }
        }
    }
}
