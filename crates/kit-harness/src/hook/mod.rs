//! `kit hook claude`: the context-band hook for Claude Code (DESIGN §10).
//!
//! Claude Code runs it as a command hook on `UserPromptSubmit`, `PostToolUse`, `Stop`,
//! `PreCompact` and `SessionStart`, with the event JSON on stdin (formats/claude-code.md §5.3).
//! It measures the context from the transcript's tail ([`tail`]), divides it by the compaction
//! point ([`compaction`]) and acts once per band per session ([`state`]):
//!
//! | band (config `context.bands`) | what the agent is told (`additionalContext`) |
//! |---|---|
//! | first (50 %) | checkpoint: bring `longrun/progress.md` up to date |
//! | middle (70 %) | handoff: run `kit handoff save` now |
//! | last (85 %) | wrap up: finish the step, save the handoff, stop; a `Stop` with no handoff proven saved in this session is blocked once (`decision:"block"` + `reason`), never when `stop_hook_active` |
//!
//! `PreCompact` is never blocked (only journaled). `SessionStart` with source `compact` or
//! `resume` injects the handoff's summary and next action. `UserPromptSubmit` after an idle gap
//! longer than the cache TTL warns the user (`systemMessage`) what re-writing the context costs
//! against a clean start from the handoff. Every firing is a `hook` event in the journal.
//!
//! Output follows formats §5.4–5.5: exit 0 always, and at most one JSON object on stdout. Any
//! problem — malformed stdin, a missing or empty transcript, an unreadable config — is one line on
//! stderr (Claude Code shows it in the debug log only) and no decision: a broken hook must not
//! break the user's session. Without a `longrun/` folder the hook only measures.

pub(crate) mod compaction;
pub mod install;
pub mod rehearse;
pub(crate) mod state;
use crate::transcript::tail;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use jiff::Timestamp;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::cache;
use crate::handoff;
use crate::longrun::config::Config;
use crate::longrun::journal::{Event, Journal};
use crate::prices::{Lookup, PriceTable};
use state::HookState;

/// The hook events kit answers; others are ignored (exit 0, no output).
pub(crate) const EVENTS: [&str; 5] =
    ["UserPromptSubmit", "PostToolUse", "Stop", "PreCompact", "SessionStart"];

/// The fields of the hook's stdin JSON that kit reads (formats §5.3); unknown fields are ignored.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct HookInput {
    /// Claude Code session id.
    pub session_id: String,
    /// The session's transcript (`~/.claude/projects/<project>/<session>.jsonl`).
    pub transcript_path: Option<PathBuf>,
    /// The session's working directory.
    pub cwd: Option<PathBuf>,
    /// The event, e.g. `PostToolUse`.
    pub hook_event_name: String,
    /// SessionStart: `startup`, `resume`, `clear`, `compact` or `fork`.
    pub source: Option<String>,
    /// PostToolUse: the tool's name, e.g. `Bash`.
    pub tool_name: Option<String>,
    /// PostToolUse: the tool's input (`{command, …}` for Bash).
    pub tool_input: Option<Value>,
    /// PostToolUse: the tool's result (`{stdout, stderr, …}` for Bash).
    pub tool_response: Option<Value>,
    /// Stop: true when Claude is already continuing because of a Stop hook.
    pub stop_hook_active: bool,
    /// PreCompact: `manual` or `auto`.
    pub trigger: Option<String>,
    /// SessionStart (on source `compact`): the model, with its window suffix
    /// (`claude-opus-4-8[1m]`; real-clis.md §5).
    pub model: Option<String>,
    /// PostToolUse: the id of the `tool_use` block that ran.
    pub tool_use_id: Option<String>,
    /// Stop: the text of the last assistant message.
    pub last_assistant_message: Option<String>,
}

/// What the hook process sees besides stdin: the time, the environment and the directory it
/// runs in. Production uses [`HookEnv::process`]; the rehearsal builds its own.
pub(crate) struct HookEnv<'a> {
    /// The current time (the kit clock).
    pub now: Timestamp,
    /// Looks up an environment variable.
    pub var: &'a dyn Fn(&str) -> Option<String>,
    /// The process's working directory (used when the input has no `cwd`).
    pub cwd: PathBuf,
    /// Where a project that keeps its own state folder keeps the handoff key (the Stop check
    /// verifies the handoff with it).
    pub own_state_dir: handoff::key::OwnStateDir,
}

impl HookEnv<'_> {
    /// The real process environment.
    pub(crate) fn process(
        cwd: PathBuf,
        own_state_dir: handoff::key::OwnStateDir,
    ) -> HookEnv<'static> {
        HookEnv { now: crate::clock::now(), var: &|k| std::env::var(k).ok(), cwd, own_state_dir }
    }
}

/// The kind of one firing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Action {
    /// First band: update progress.md.
    Checkpoint,
    /// Middle band: run `kit handoff save`.
    Handoff,
    /// Last band: finish, save the handoff, stop.
    WrapUp,
    /// A Stop blocked at the last band for want of a proven handoff.
    StopBlocked,
    /// A Stop at the last band let through: the handoff was proven saved (or the Stop hook
    /// already continued once).
    StopAllowed,
    /// Idle longer than the cache TTL before a prompt.
    IdleWarning,
    /// A compaction is starting (PreCompact) or was seen in the transcript.
    Compaction,
    /// The handoff's summary was injected after a compaction or resume.
    ContextInjected,
    /// A `kit handoff save` tool call of this session was recorded.
    HandoffSeen,
    /// The transcript did not yet hold the event's API call after the wait bound: measured
    /// as it stood.
    TranscriptLate,
}

impl Action {
    /// The name journaled in the `action` field.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Action::Checkpoint => "checkpoint",
            Action::Handoff => "handoff",
            Action::WrapUp => "wrap_up",
            Action::StopBlocked => "stop_blocked",
            Action::StopAllowed => "stop_allowed",
            Action::IdleWarning => "idle_warning",
            Action::Compaction => "compaction",
            Action::ContextInjected => "context_injected",
            Action::HandoffSeen => "handoff_seen",
            Action::TranscriptLate => "transcript_late",
        }
    }
}

/// One thing the hook did, as journaled (`hook` event) and as the rehearsal prints it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Firing {
    /// What it did.
    pub action: Action,
    /// The band (percent) it concerns, if any.
    pub band: Option<u8>,
    /// Why, in one line.
    pub why: String,
}

/// The outcome of one hook run.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Outcome {
    /// The JSON object to print on stdout, if any.
    pub stdout: Option<Value>,
    /// One line for stderr (a note: Claude Code puts it in the debug log).
    pub note: Option<String>,
    /// What fired.
    pub firings: Vec<Firing>,
    /// The context in tokens, when measured.
    pub context: Option<u64>,
    /// The context in percent of the compaction point, when measured.
    pub pct: Option<f64>,
}

/// `kit hook claude`: read the event on `stdin`, answer on `out`, notes on `err`; `cwd` and
/// `own_state_dir` as in [`HookEnv`]. Always returns exit code 0 (a hook that fails must not
/// break the session).
pub fn run_claude(
    stdin: &mut dyn Read,
    out: &mut dyn Write,
    err: &mut dyn Write,
    cwd: PathBuf,
    own_state_dir: handoff::key::OwnStateDir,
) -> u8 {
    let mut input = Vec::new();
    let outcome = match stdin.read_to_end(&mut input) {
        Ok(_) => {
            // A bug must not break the session either: a panic becomes a one-line note, exit 0.
            std::panic::set_hook(Box::new(|_| {}));
            let env = HookEnv::process(cwd, own_state_dir);
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handle(&input, &env)))
                .unwrap_or_else(|p| {
                    let what = p
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| p.downcast_ref::<String>().cloned())
                        .unwrap_or_default();
                    note(format!("internal error ({what}); nothing done"))
                })
        }
        Err(e) => Outcome { note: Some(format!("cannot read stdin: {e}")), ..Outcome::default() },
    };
    if let Some(v) = &outcome.stdout {
        let _ = writeln!(out, "{v}");
    }
    if let Some(n) = &outcome.note {
        let _ = writeln!(err, "kit hook: {n}");
    }
    crate::error::EXIT_OK
}

/// Handle one event (the bytes of stdin). Never fails: problems become [`Outcome::note`].
pub(crate) fn handle(input: &[u8], env: &HookEnv) -> Outcome {
    let mut input: HookInput = match serde_json::from_slice(input) {
        Ok(i) => i,
        Err(e) => return note(format!("stdin is not hook event JSON ({e}); nothing done")),
    };
    if input.session_id.trim().is_empty() {
        input.session_id = "unknown-session".into();
    }
    if !EVENTS.contains(&input.hook_event_name.as_str()) {
        return Outcome::default();
    }
    let cwd = input.cwd.clone().unwrap_or_else(|| env.cwd.clone());
    let project = find_longrun(&cwd)
        .or_else(|| (env.var)("CLAUDE_PROJECT_DIR").and_then(|d| find_longrun(Path::new(&d))));
    let config = match &project {
        Some(p) => match Config::load(&p.join("config.toml")) {
            Ok(c) => c,
            Err(e) => return note(format!("{e}; nothing done")),
        },
        None => Config::default(),
    };
    let mut run = Run {
        input: &input,
        env,
        project: project.as_deref(),
        config: &config,
        outcome: Outcome::default(),
    };
    run.dispatch();
    run.outcome
}

fn note(msg: String) -> Outcome {
    Outcome { note: Some(msg), ..Outcome::default() }
}

use crate::longrun::find_longrun;

struct Run<'a> {
    input: &'a HookInput,
    env: &'a HookEnv<'a>,
    project: Option<&'a Path>,
    config: &'a Config,
    outcome: Outcome,
}

/// The context measured for one event.
struct Measured {
    context: u64,
    point: u64,
    /// Claude Code has no proactive point here: it compacts when the API refuses the prompt.
    reactive: bool,
    pct: f64,
    tail: tail::Tail,
}

/// Longest the hook waits for the transcript to hold the event's API call (Claude Code flushes
/// its transcript every 100 ms; real-clis.md §3).
pub(crate) const FLUSH_WAIT: Duration = Duration::from_millis(300);
/// Step of that wait.
pub(crate) const FLUSH_STEP: Duration = Duration::from_millis(10);
/// How much of the transcript's end is searched for the event's call, bytes.
pub(crate) const FLUSH_SEARCH_BYTES: u64 = 256 * 1024;

/// What the event says the transcript must hold once flushed: the quoted `tool_use_id` of a
/// PostToolUse, or the JSON-escaped end (up to 1,000 characters) of a Stop's
/// `last_assistant_message`. None when the event names nothing to wait for.
pub(crate) fn flush_needle(input: &HookInput) -> Option<Vec<u8>> {
    match input.hook_event_name.as_str() {
        "PostToolUse" => {
            let id = input.tool_use_id.as_deref().filter(|i| !i.trim().is_empty())?;
            Some(serde_json::to_string(id).ok()?.into_bytes())
        }
        "Stop" => {
            let text = input.last_assistant_message.as_deref()?.trim_end();
            if text.is_empty() {
                return None;
            }
            let chars: Vec<char> = text.chars().collect();
            let end: String = chars[chars.len().saturating_sub(1000)..].iter().collect();
            let quoted = serde_json::to_string(&end).ok()?;
            // Without the quotes: the text sits inside a longer JSON string on the line.
            Some(quoted.as_bytes()[1..quoted.len() - 1].to_vec())
        }
        _ => None,
    }
}

/// Whether the last [`FLUSH_SEARCH_BYTES`] of `path` hold `needle`. A missing or unreadable
/// file holds nothing.
pub(crate) fn tail_holds(path: &Path, needle: &[u8]) -> bool {
    use std::io::{Seek, SeekFrom};
    let Ok(mut f) = tail::open_regular(path) else { return false };
    let Ok(len) = f.metadata().map(|m| m.len()) else { return false };
    let start = len.saturating_sub(FLUSH_SEARCH_BYTES);
    if f.seek(SeekFrom::Start(start)).is_err() {
        return false;
    }
    let mut buf = Vec::with_capacity((len - start) as usize);
    if f.take(FLUSH_SEARCH_BYTES).read_to_end(&mut buf).is_err() {
        return false;
    }
    memchr::memmem::find(&buf, needle).is_some()
}

/// The variable that sets the wait bound in milliseconds (default [`FLUSH_WAIT`]; for slow disks,
/// and for tests that append the line from another thread).
pub(crate) const FLUSH_WAIT_VAR: &str = "KIT_HOOK_FLUSH_WAIT_MS";

/// Wait, at most `bound` in [`FLUSH_STEP`] steps (virtual steps under `KIT_FAKE_CLOCK`, so a
/// golden never sleeps), until the transcript holds `needle`. Returns false when the bound passed
/// without it.
pub(crate) fn wait_for_flush(path: &Path, needle: &[u8], bound: Duration) -> bool {
    let start = std::time::Instant::now();
    let mut waited = Duration::ZERO;
    loop {
        if tail_holds(path, needle) {
            return true;
        }
        if waited >= bound || start.elapsed() >= bound {
            return false;
        }
        crate::clock::sleep(FLUSH_STEP);
        waited += FLUSH_STEP;
    }
}

impl Run<'_> {
    fn dispatch(&mut self) {
        match self.input.hook_event_name.as_str() {
            "SessionStart" => self.session_start(),
            "PreCompact" => self.pre_compact(),
            _ => self.measured_event(),
        }
    }

    fn measure(&mut self, st: &mut HookState) -> Option<Measured> {
        let Some(path) = &self.input.transcript_path else {
            self.outcome.note = Some("the event has no transcript_path; nothing done".into());
            return None;
        };
        let bound = (self.env.var)(FLUSH_WAIT_VAR)
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map_or(FLUSH_WAIT, Duration::from_millis);
        let late = match flush_needle(self.input) {
            Some(needle) => !wait_for_flush(path, &needle, bound),
            None => false,
        };
        let tail = match tail::read_tail(path) {
            Ok(t) => t,
            Err(e) => {
                let why = match &e {
                    crate::Error::Io { source, .. }
                        if source.kind() == std::io::ErrorKind::NotFound =>
                    {
                        format!("transcript {} not found", path.display())
                    }
                    other => other.to_string(),
                };
                self.outcome.note = Some(format!("{why}; nothing done"));
                return None;
            }
        };
        let Some(context) = tail.context() else {
            self.outcome.note = Some(format!(
                "transcript {} has no API call with usage yet; nothing done",
                path.display()
            ));
            return None;
        };
        let point = self.point(st, &tail, context);
        let pct = context as f64 * 100.0 / point.tokens as f64;
        self.outcome.context = Some(context);
        self.outcome.pct = Some(pct);
        let m = Measured {
            context,
            point: point.tokens,
            reactive: point.trigger == compaction::Trigger::Reactive,
            pct,
            tail,
        };
        if late {
            let what = match self.input.hook_event_name.as_str() {
                "Stop" => "the Stop's last assistant message",
                _ => "the PostToolUse tool_use_id",
            };
            let why = format!(
                "the transcript did not hold {what} after {} ms; measured as it stood (one API call late, at most)",
                bound.as_millis()
            );
            self.fire(Action::TranscriptLate, None, why, &m);
        }
        Some(m)
    }

    /// The compaction point of this session: remembered in the state, resolved again
    /// ([`compaction::resolve`]) when the model changed or the context passed the window.
    fn point(&mut self, st: &mut HookState, tail: &tail::Tail, context: u64) -> compaction::Point {
        let model = st
            .model
            .clone()
            .or_else(|| tail.last_call.as_ref().map(|c| c.model.clone()))
            .filter(|m| !m.is_empty());
        st.peak = st.peak.max(context);
        let configured = self.config.context.compaction_point;
        if let Some(p) = &st.point {
            let same = st.point_model == model
                && (p.trigger == compaction::Trigger::Configured) == (configured > 0)
                && (configured == 0 || p.tokens == configured);
            if same && st.peak <= p.window {
                return p.clone();
            }
        }
        let project = (self.env.var)("CLAUDE_PROJECT_DIR")
            .map(PathBuf::from)
            .or_else(|| self.project.and_then(Path::parent).map(Path::to_path_buf))
            .unwrap_or_else(|| self.input.cwd.clone().unwrap_or_else(|| self.env.cwd.clone()));
        let p = compaction::resolve(
            configured,
            self.env.var,
            model.as_deref(),
            st.peak,
            Some(&project),
        );
        st.point = Some(p.clone());
        st.point_model = model;
        p
    }

    fn measured_event(&mut self) {
        let mut st = match self.project {
            Some(longrun) => HookState::load(longrun, &self.input.session_id),
            None => HookState::default(),
        };
        let loaded = st.clone();
        let Some(m) = self.measure(&mut st) else { return };
        let Some(longrun) = self.project else {
            self.outcome.note = Some(format!(
                "context {} tokens, {:.1}% of the compaction point ({}{}); no longrun/ folder, so only measured",
                crate::units::thousands(m.context),
                m.pct,
                crate::units::thousands(m.point),
                if m.reactive { ", reactive" } else { "" }
            ));
            return;
        };
        let before = st.clone();
        st.rearm_above(m.pct);
        if let Some(c) = &m.tail.compaction_after {
            // The transcript shows a compaction after the last call: everything re-arms.
            st.rearm_above(-1.0);
            if before.fired != st.fired {
                self.fire(
                    Action::Compaction,
                    None,
                    format!("{} compaction seen in the transcript; bands re-armed", c.trigger),
                    &m,
                );
            }
        }
        let mut context_msgs: Vec<String> = Vec::new();
        let mut user_msgs: Vec<String> = Vec::new();
        match self.input.hook_event_name.as_str() {
            "PostToolUse" => self.record_handoff_call(&mut st, &m),
            "UserPromptSubmit" => {
                if let Some(w) = self.idle_warning(&m) {
                    user_msgs.push(w);
                }
            }
            _ => {}
        }
        let bands = &self.config.context.bands;
        let last = bands.last().copied().unwrap_or(85);
        if self.input.hook_event_name == "Stop" {
            if m.pct >= f64::from(last) {
                self.stop_check(&mut st, &m, last);
            }
        } else if let Some(band) = st.crossed(bands, m.pct) {
            let (action, text) = band_message(bands, band, &m);
            context_msgs.push(text.clone());
            user_msgs.push(format!(
                "kit: context at {:.0}% of the compaction point — {}",
                m.pct,
                action_summary(action)
            ));
            self.fire(
                action,
                Some(band),
                format!("{:.1}% ≥ {band}% for the first time since the last compaction", m.pct),
                &m,
            );
        }
        if st != loaded {
            if let Err(e) = st.save(longrun) {
                self.outcome.note = Some(format!("cannot save hook state: {e}"));
            }
        }
        if self.outcome.stdout.is_none() && (!context_msgs.is_empty() || !user_msgs.is_empty()) {
            let mut obj = serde_json::Map::new();
            if !context_msgs.is_empty() {
                obj.insert(
                    "hookSpecificOutput".into(),
                    json!({"hookEventName": self.input.hook_event_name, "additionalContext": context_msgs.join("\n\n")}),
                );
            }
            if !user_msgs.is_empty() {
                obj.insert("systemMessage".into(), Value::String(user_msgs.join("\n")));
            }
            self.outcome.stdout = Some(Value::Object(obj));
        }
    }

    /// Stop at or above the last band: block once unless a handoff was proven saved.
    fn stop_check(&mut self, st: &mut HookState, m: &Measured, last: u8) {
        if !st.fired.contains(&last) {
            st.crossed(&self.config.context.bands, m.pct);
        }
        if self.input.stop_hook_active {
            let why = "stop_hook_active: Claude is already continuing because of a Stop hook; never block twice".to_string();
            self.fire(Action::StopAllowed, Some(last), why, m);
            return;
        }
        if st.stop_blocked {
            return;
        }
        let mut stale: Vec<String> = Vec::new();
        if let Some(stamp) = self.proven_handoff(st) {
            // Proven saved, but it must also still match the tree, as `kit handoff verify` checks.
            match self.project.map(|p| handoff::check_longrun(p, self.env.own_state_dir)) {
                Some(Ok(Some(report))) if report.problems.is_empty() => {
                    self.fire(
                        Action::StopAllowed,
                        Some(last),
                        format!("handoff {stamp} was proven saved in this session and verifies"),
                        m,
                    );
                    return;
                }
                Some(Ok(Some(report))) => stale = report.problems,
                Some(Err(e)) => stale = vec![e.to_string()],
                _ => stale = vec!["the handoff cannot be read".into()],
            }
        }
        st.stop_blocked = true;
        let (reason, why) = if stale.is_empty() {
            (
                format!(
                    "{STOP_HEAD} the context is at {:.0}% of the compaction point ({} of {} tokens) and no handoff was proven saved in this session. {STOP_REASON}",
                    m.pct,
                    crate::units::thousands(m.context),
                    crate::units::thousands(m.point)
                ),
                "no `kit handoff save` with the current stamp in this session".to_string(),
            )
        } else {
            (
                format!(
                    "{STOP_HEAD} the context is at {:.0}% of the compaction point ({} of {} tokens) and the handoff saved in this session is out of date ({}). Run `kit handoff save` again. {STOP_REASON}",
                    m.pct,
                    crate::units::thousands(m.context),
                    crate::units::thousands(m.point),
                    stale.join("; ")
                ),
                format!("the handoff saved in this session is out of date: {}", stale.join("; ")),
            )
        };
        self.outcome.stdout = Some(json!({"decision": "block", "reason": reason}));
        self.fire(Action::StopBlocked, Some(last), why, m);
    }

    /// The stamp id of `longrun/handoff.md` when this session is known to have saved it: seen
    /// by a PostToolUse of this hook, or found in the transcript (then remembered).
    fn proven_handoff(&mut self, st: &mut HookState) -> Option<String> {
        let longrun = self.project?;
        let stamp = handoff::current_stamp_id(&longrun.join("handoff.md"))?;
        if st.handoff_stamp.as_deref() == Some(stamp.as_str()) {
            return Some(stamp);
        }
        let transcript = self.input.transcript_path.as_ref()?;
        match handoff::prove_in_transcript(transcript, &stamp) {
            Ok(Some(_)) => {
                st.handoff_stamp = Some(stamp.clone());
                Some(stamp)
            }
            _ => None,
        }
    }

    /// PostToolUse of a Bash call that ran `kit handoff save`: remember the stamp it printed.
    fn record_handoff_call(&mut self, st: &mut HookState, m: &Measured) {
        if self.input.tool_name.as_deref() != Some("Bash") {
            return;
        }
        let command =
            self.input.tool_input.as_ref().and_then(|i| i.get("command")).and_then(Value::as_str);
        if !command.is_some_and(handoff::runs_handoff_save) {
            return;
        }
        if self
            .input
            .tool_response
            .as_ref()
            .and_then(|r| r.get("interrupted"))
            .and_then(Value::as_bool)
            == Some(true)
        {
            return;
        }
        let response = match &self.input.tool_response {
            Some(Value::String(s)) => s.clone(),
            Some(v) => v
                .get("stdout")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| v.to_string()),
            None => String::new(),
        };
        if let Some(stamp) = handoff::stamp_in_output(&response) {
            if st.handoff_stamp.as_deref() != Some(stamp.as_str()) {
                st.handoff_stamp = Some(stamp.clone());
                self.fire(
                    Action::HandoffSeen,
                    None,
                    format!("`kit handoff save` printed stamp {stamp}"),
                    m,
                );
            }
        }
    }

    /// The idle warning for a prompt after a gap longer than the cache TTL.
    fn idle_warning(&mut self, m: &Measured) -> Option<String> {
        let call = m.tail.last_call.as_ref()?;
        if m.tail.compaction_after.is_some() {
            return None;
        }
        let last = call.timestamp?;
        let idle = self.env.now.duration_since(last);
        let idle = Duration::try_from(idle).ok()?;
        let ttl = if call.cache_write_1h > 0 {
            cache::Ttl::OneHour
        } else if call.cache_write_5m > 0 {
            cache::Ttl::FiveMinutes
        } else {
            cache::Ttl::from_duration(self.config.cache_ttl())
        };
        if idle <= ttl.duration() {
            return None;
        }
        let table = PriceTable::embedded().with_overrides(&self.config.prices);
        let idle_s = crate::units::format_idle(idle);
        let text = match table.lookup(&call.model) {
            Lookup::Priced(price) => {
                let c = cache::compare(price, m.context, ttl, cache::DEFAULT_HANDOFF_TOKENS, idle);
                let resends = if price.cache_writes {
                    format!("re-writes {} tokens of context", crate::units::thousands(m.context))
                } else {
                    format!(
                        "sends {} tokens of context again as uncached input",
                        crate::units::thousands(m.context)
                    )
                };
                format!(
                    "kit: idle {idle_s}, longer than the {} cache TTL: this message {resends} ({} on {}); a clean start from the handoff (~{} tokens) would cost {}.",
                    ttl.label(),
                    crate::units::usd4(c.resend_usd),
                    call.model,
                    crate::units::thousands(c.handoff_tokens),
                    crate::units::usd4(c.clean_usd)
                )
            }
            _ => format!(
                "kit: idle {idle_s}, longer than the {} cache TTL: this message re-writes {} tokens of context (model {} is unpriced); a clean start from the handoff re-writes ~{} tokens.",
                ttl.label(),
                crate::units::thousands(m.context),
                call.model,
                crate::units::thousands(cache::DEFAULT_HANDOFF_TOKENS)
            ),
        };
        self.fire(Action::IdleWarning, None, format!("idle {idle_s} > {} TTL", ttl.label()), m);
        Some(text)
    }

    fn pre_compact(&mut self) {
        // Never blocked: a blocked compaction near the limit surfaces a context-limit error.
        let Some(longrun) = self.project else { return };
        let mut st = HookState::load(longrun, &self.input.session_id);
        let before = st.clone();
        st.rearm_above(-1.0);
        if st != before {
            if let Err(e) = st.save(longrun) {
                self.outcome.note = Some(format!("cannot save hook state: {e}"));
            }
        }
        let trigger = self.input.trigger.clone().unwrap_or_else(|| "unknown".into());
        self.journal(
            Action::Compaction,
            None,
            &format!("{trigger} compaction starting; bands re-armed"),
            None,
            None,
        );
    }

    fn session_start(&mut self) {
        // The model with its window suffix is known here (and in `system/init`) only:
        // transcript lines carry the bare id. Remember it for the compaction point.
        if let (Some(longrun), Some(model)) = (self.project, self.input.model.as_deref()) {
            if !model.trim().is_empty() {
                if let Err(e) = state::remember_model(longrun, &self.input.session_id, model) {
                    self.outcome.note = Some(format!("cannot save hook state: {e}"));
                }
            }
        }
        let source = self.input.source.clone().unwrap_or_default();
        if source != "compact" && source != "resume" {
            return;
        }
        let Some(longrun) = self.project else { return };
        if source == "compact" {
            let mut st = HookState::load(longrun, &self.input.session_id);
            if st.rearm_above(-1.0) {
                if let Err(e) = st.save(longrun) {
                    self.outcome.note = Some(format!("cannot save hook state: {e}"));
                }
            }
        }
        let Some(text) = handoff::resume_context(longrun, &source) else {
            self.outcome.note =
                Some("no longrun/handoff.md to inject after the ".to_string() + &source);
            return;
        };
        self.outcome.stdout = Some(json!({
            "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}
        }));
        self.journal(
            Action::ContextInjected,
            None,
            &format!("after {source}: handoff summary and next action injected"),
            None,
            None,
        );
    }

    fn fire(&mut self, action: Action, band: Option<u8>, why: String, m: &Measured) {
        self.journal(action, band, &why, Some(m.context), Some(m.pct));
    }

    fn journal(
        &mut self,
        action: Action,
        band: Option<u8>,
        why: &str,
        context: Option<u64>,
        pct: Option<f64>,
    ) {
        self.outcome.firings.push(Firing { action, band, why: why.to_string() });
        let Some(longrun) = self.project else { return };
        let event = Event::Hook(crate::longrun::event::Hook {
            hook_event: self.input.hook_event_name.clone(),
            session: self.input.session_id.clone(),
            action: action.name().into(),
            band,
            context,
            pct: pct.map(|p| (p * 10.0).round() / 10.0),
            why: why.to_string(),
        });
        if let Err(e) = Journal::new(longrun.join("journal.jsonl")).append(&event) {
            self.outcome.note = Some(format!("cannot journal: {e}"));
        }
    }
}

fn band_message(bands: &[u8], band: u8, m: &Measured) -> (Action, String) {
    let action = if Some(&band) == bands.first() && bands.len() > 1 {
        Action::Checkpoint
    } else if Some(&band) == bands.last() {
        Action::WrapUp
    } else {
        Action::Handoff
    };
    let head = format!(
        "kit: the context is at {:.0}% of the compaction point ({} of {} tokens).",
        m.pct,
        crate::units::thousands(m.context),
        crate::units::thousands(m.point)
    );
    let body = match action {
        Action::Checkpoint => CHECKPOINT,
        Action::Handoff => HANDOFF,
        _ => WRAP_UP,
    };
    (action, format!("{head} {body}"))
}

fn action_summary(action: Action) -> &'static str {
    match action {
        Action::Checkpoint => "asked the agent to checkpoint longrun/progress.md",
        Action::Handoff => "asked the agent to run `kit handoff save` now",
        _ => "asked the agent to wrap up: finish the step, save the handoff, stop",
    }
}

const CHECKPOINT: &str = "Checkpoint: bring longrun/progress.md up to date now (done, remaining, next action), then continue.";
const HANDOFF: &str = "Save a handoff now: write your summary and the next action into longrun/handoff.md (or pass them in a here-document: kit handoff save <<'EOF' … EOF), then run `kit handoff save` as a command on its own, not chained with other commands; it stamps the file with the commit and file fingerprints.";
const WRAP_UP: &str = "Compaction is near. Wrap up: finish the current step only, update longrun/progress.md, run `kit handoff save`, then stop.";
/// How a Stop block's reason starts: Claude Code labels any block "Stop hook error occurred",
/// so the reason says it is deliberate (real-clis.md §5).
pub(crate) const STOP_HEAD: &str = "kit blocked this stop on purpose (not an error):";
const STOP_REASON: &str = "Before stopping: update longrun/progress.md, then run `kit handoff save` as a command (so this session's transcript holds the proof), then stop.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fuzz_hook_input_never_panics_nor_blocks_on_garbage() {
        // Mutated event JSON for every event, in a folder with longrun/ and a real transcript:
        // the hook never panics, and a block only ever comes from a Stop.
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("longrun")).unwrap();
        // 27,666 tokens of 30,000: past the wrap-up band, so a Stop can block.
        std::fs::write(
            d.path().join("longrun/config.toml"),
            "[context]\ncompaction_point = 30000\n",
        )
        .unwrap();
        let t = d.path().join("t.jsonl");
        std::fs::copy(crate::testing::samples("claude-code").join("spotter_tool_heavy.jsonl"), &t)
            .unwrap();
        let no_vars = |_: &str| None;
        let env = HookEnv {
            now: crate::clock::now(),
            var: &no_vars,
            cwd: d.path().to_path_buf(),
            own_state_dir: crate::handoff::key::no_own_state_dir,
        };
        let mut rng = crate::testing::Rng(7);
        let mut blocks = 0;
        let alphabet = b"{}[]\":,0a \\";
        for i in 0..600 {
            let event = EVENTS[i % EVENTS.len()];
            let base = json!({"session_id": "s", "transcript_path": t, "cwd": d.path(),
                "hook_event_name": event, "stop_hook_active": false, "source": "compact",
                "tool_name": "Bash", "tool_input": {"command": "kit handoff save"},
                "tool_response": {"stdout": "handoff saved: stamp 5d0c1f2a9b3e"}})
            .to_string();
            let mut bytes = base.into_bytes();
            for _ in 0..rng.below(4) {
                let j = rng.below(bytes.len());
                bytes[j] = alphabet[rng.below(alphabet.len())];
            }
            let o = handle(&bytes, &env);
            if let Some(v) = &o.stdout {
                if v.get("decision").is_some() {
                    assert!(String::from_utf8_lossy(&bytes).contains("\"Stop\""), "{v}");
                    blocks += 1;
                }
            }
        }
        assert!(blocks >= 1, "the unmutated Stop events must block");
    }
}
