//! One fake Claude Code session: the ids, the clock, the token accounting, and the two records
//! of what happened — the `claude -p --output-format stream-json --verbose` events on stdout and
//! the transcript at `$CLAUDE_CONFIG_DIR/projects/<encoded cwd>/<session-id>.jsonl`.
//!
//! Shapes follow formats/claude-code.md: the transcript envelope of §2.1 (`parentUuid`, `uuid`,
//! `sessionId`, `timestamp`, `cwd`, `version`, `gitBranch`, …), one transcript line per content
//! block of an API response sharing `message.id` and `requestId` (§3.3, with the placeholder
//! `output_tokens` on all but the last line), `message.usage` with the 5m/1h split (§4.1), and the
//! stream-json `system/init` … `result` sequence of §7.
//!
//! Determinism: every id is derived from sha256 of the seed (`scenario:invocation:place`) and a
//! counter; times come from `crate::clock`. Under `KIT_FAKE_CLOCK` the session starts at the fake
//! time plus one minute per earlier invocation, and modelled durations (API latency, tool time,
//! sleeps) advance the virtual clock, so two runs print the same bytes.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::clock;
use crate::error::{IoContext, Result};
use crate::prices::{Lookup, PriceTable, Usage};

/// The Claude Code version the fake claims.
pub(super) const CLAUDE_CODE_VERSION: &str = "2.1.39";

/// Tokens of system prompt and tool definitions, already cached when a session starts.
const SYSTEM_CACHED_TOKENS: u64 = 12_800;
/// Tokens of environment, CLAUDE.md and reminders written to the cache by the first call.
const FIRST_CALL_EXTRA_TOKENS: u64 = 3_900;
/// The tools the fake reports in `init`.
const TOOLS: [&str; 8] = ["Task", "Bash", "Glob", "Grep", "Read", "Edit", "Write", "TodoWrite"];

/// Identity of a session: where it runs and what it claims.
pub(super) struct SessionSpec {
    /// Seed of every id: `scenario:invocation`.
    pub seed: String,
    /// What stdout carries (`--output-format`).
    pub output: OutputFormat,
    /// The invocation number (1-based).
    pub invocation: u64,
    /// Absolute working directory.
    pub cwd: PathBuf,
    /// Model id claimed, e.g. `claude-sonnet-4-5-20250929`; a `[1m]` suffix is shown in
    /// `system/init` and `modelUsage` only, transcript and assistant lines carry the bare id.
    pub model: String,
    /// `"5m"` or `"1h"`: which `cache_creation` bucket the writes go to.
    pub cache_ttl: String,
    /// Reported as `permissionMode`.
    pub permission_mode: String,
    /// The transcript file (set by [`Session::start_with`]); `None`: no transcript.
    pub transcript: Option<PathBuf>,
    /// Current git branch (`""` outside a repository).
    pub git_branch: String,
    /// `Some`: record as `codex exec` does (`fake-agent --codex`; see [`super::codex`]) instead
    /// of as Claude Code.
    pub codex: Option<super::codex::Mode>,
}

/// `claude -p --output-format`: what stdout carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum OutputFormat {
    /// `text` (Claude Code's default): the final answer only.
    Text,
    /// `json`: the `result` object only, on one line.
    Json,
    /// `stream-json`: every event as it happens, one per line, the `result` last.
    StreamJson,
}

impl OutputFormat {
    /// Parse `text`, `json` or `stream-json`.
    pub(super) fn parse(s: &str) -> Option<OutputFormat> {
        match s {
            "text" => Some(OutputFormat::Text),
            "json" => Some(OutputFormat::Json),
            "stream-json" => Some(OutputFormat::StreamJson),
            _ => None,
        }
    }
}

/// The recorder of one session.
pub(super) struct Session {
    spec: SessionSpec,
    session_id: String,
    counter: u64,
    last_uuid: Option<String>,
    start: Timestamp,
    offset: SignedDuration,
    /// Tokens in the context at the last API call (input + cache write + cache read).
    context: u64,
    /// Tokens added since the last API call (tool results, the previous answer).
    pending: u64,
    /// The context the next API call must reach (`grow_context`).
    aim: Option<u64>,
    /// What the next API call must cost, USD (`spend`).
    bill: Option<f64>,
    totals: Usage,
    cost_usd: f64,
    api_calls: u32,
    api_ms: u64,
    /// The last tool result: (tool_use id, its `toolUseResult`), for a `PostToolUse` hook.
    last_result: Option<(String, Value)>,
    /// The Codex recorder, in `--codex` mode (then nothing Claude-shaped is printed or written).
    codex: Option<super::codex::Rollout>,
    out: std::io::Stdout,
}

/// Tokens a text is worth, roughly (4 bytes a token; at least 1).
pub(super) fn tokens_of(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4).max(1)
}

impl Session {
    /// Start a session: print `system/init`, open the transcript that `transcript_for(session
    /// id)` names (none: no transcript), record the user prompt.
    pub(super) fn start_with(
        spec: SessionSpec,
        prompt: &str,
        transcript_for: impl FnOnce(&str) -> Option<PathBuf>,
    ) -> Result<Session> {
        let offset = if clock::is_fake() {
            SignedDuration::from_secs(60 * spec.invocation.saturating_sub(1) as i64)
        } else {
            SignedDuration::ZERO
        };
        let mut s = Session {
            session_id: String::new(),
            counter: 0,
            last_uuid: None,
            start: clock::now(),
            offset,
            context: 0,
            pending: 0,
            aim: None,
            bill: None,
            totals: Usage::default(),
            cost_usd: 0.0,
            api_calls: 0,
            api_ms: 0,
            last_result: None,
            codex: None,
            out: std::io::stdout(),
            spec,
        };
        s.session_id = s.uuid();
        if let Some(mode) = s.spec.codex.clone() {
            let now = s.now();
            let r = super::codex::Rollout::start(
                mode,
                &s.spec.seed,
                &s.spec.cwd,
                &s.spec.model,
                prompt,
                now,
            )?;
            s.session_id = r.thread_id().to_string();
            s.codex = Some(r);
            s.spec.output = OutputFormat::Text;
            s.pending = FIRST_CALL_EXTRA_TOKENS + tokens_of(prompt);
            s.context = SYSTEM_CACHED_TOKENS;
            return Ok(s);
        }
        s.spec.transcript = transcript_for(&s.session_id);
        if let Some(t) = &s.spec.transcript {
            if let Some(dir) = t.parent() {
                crate::atomic::create_dir_all(dir)?;
            }
            if t.exists() {
                std::fs::remove_file(t).at(t)?;
            }
        }
        let init = json!({
            "type": "system",
            "subtype": "init",
            "cwd": s.cwd_str(),
            "session_id": s.session_id,
            "tools": TOOLS,
            "mcp_servers": [],
            "model": s.spec.model,
            "permissionMode": s.spec.permission_mode,
            "slash_commands": ["compact", "context", "cost", "init", "review"],
            "apiKeySource": "none",
            "claude_code_version": CLAUDE_CODE_VERSION,
            "output_style": "default",
            "agents": ["general-purpose"],
            "skills": [],
            "plugins": [],
            "uuid": s.uuid(),
        });
        s.emit(&init)?;
        let mut line = s.envelope("user");
        line.insert("message".into(), json!({"role": "user", "content": prompt}));
        line.insert("permissionMode".into(), json!(s.spec.permission_mode));
        s.record(line)?;
        s.pending = FIRST_CALL_EXTRA_TOKENS + tokens_of(prompt);
        s.context = SYSTEM_CACHED_TOKENS;
        Ok(s)
    }

    /// The API model id this session claims.
    pub(super) fn model(&self) -> &str {
        &self.spec.model
    }

    /// The session id (a UUID).
    pub(super) fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The permission mode it reports (`--permission-mode`, default `default`).
    pub(super) fn permission_mode(&self) -> &str {
        &self.spec.permission_mode
    }

    /// The `toolUseResult` of tool call `id`, if it was the last result recorded.
    pub(super) fn last_tool_result(&self, id: &str) -> Option<&Value> {
        self.last_result.as_ref().filter(|(i, _)| i == id).map(|(_, v)| v)
    }

    /// The transcript file (in `--codex` mode the rollout), if one is written.
    pub(super) fn transcript(&self) -> Option<&Path> {
        match &self.codex {
            Some(r) => r.path(),
            None => self.spec.transcript.as_deref(),
        }
    }

    /// The file a loop reads this agent's spending from while it runs: in `--codex` mode the
    /// rollout, else the stream on stdout when stdout is a regular file (as `kit loop` gives it);
    /// None otherwise (a terminal, a pipe).
    pub(super) fn metered_file(&self) -> Option<PathBuf> {
        if let Some(r) = &self.codex {
            return r.path().map(Path::to_path_buf);
        }
        let out = std::fs::read_link("/proc/self/fd/1").ok()?;
        std::fs::metadata(&out).ok().filter(|m| m.is_file()).map(|_| out)
    }

    /// Record context a hook gave Claude, as Claude Code does: an `isMeta` user line holding a
    /// `<system-reminder>`. Its size joins the next call's cache write.
    pub(super) fn hook_context(&mut self, event: &str, text: &str) -> Result<()> {
        let content = format!(
            "<system-reminder>\n{event} hook additional context: {text}\n</system-reminder>"
        );
        let mut line = self.envelope("user");
        line.insert("isMeta".into(), json!(true));
        line.insert("message".into(), json!({"role": "user", "content": content}));
        self.record(line)?;
        self.pending += tokens_of(&content);
        Ok(())
    }

    /// The absolute working directory as text.
    pub(super) fn cwd_str(&self) -> String {
        self.spec.cwd.to_string_lossy().into_owned()
    }

    /// An absolute path for `rel` inside the working directory, as tool inputs show it.
    pub(super) fn abs(&self, rel: &str) -> String {
        self.spec.cwd.join(rel).to_string_lossy().into_owned()
    }

    /// Tokens in the context at the last API call.
    pub(super) fn context(&self) -> u64 {
        self.context
    }

    /// Make the next API call's context exactly `tokens` (input + cache write + cache read) if
    /// that is more than it would have anyway: the cache write grows to reach it.
    pub(super) fn aim_context(&mut self, tokens: u64) {
        self.aim = Some(tokens);
    }

    /// Make the next API call cost `usd` by kit's price table for this session's model (when
    /// it would cost less): uncached input tokens are added to it, and not kept in the context.
    pub(super) fn bill_next(&mut self, usd: f64) {
        self.bill = Some(usd);
    }

    /// Let `d` of modelled time pass (virtually, under a fake clock; not at all otherwise).
    pub(super) fn pass(&mut self, d: Duration) {
        if clock::is_fake() {
            clock::sleep(d);
        }
    }

    /// One API call whose response has `blocks` (text, tool_use), `stop_reason` on its last line.
    pub(super) fn api_call(&mut self, blocks: &[Value], stop_reason: &str) -> Result<()> {
        self.api_calls += 1;
        let output = blocks.iter().map(|b| tokens_of(&b.to_string())).sum::<u64>() + 9;
        let input = 1 + (self.digest("input")[0] as u64 % 8);
        let read = self.context;
        let write = match self.aim.take() {
            Some(aim) if aim > input + read + self.pending => aim - input - read,
            _ => self.pending,
        };
        let (w5, w1) = if self.spec.cache_ttl == "1h" { (0, write) } else { (write, 0) };
        let mut usage =
            Usage { input, cache_write_5m: w5, cache_write_1h: w1, cache_read: read, output };
        self.context = input + write + read;
        if let Some(usd) = self.bill.take() {
            usage.input += self.filler_for(&usage, usd);
        }
        let (input, usage) = (usage.input, usage);
        self.account(&usage);
        self.pending = output;
        let latency = 900 + output * 12;
        self.api_ms += latency;
        self.pass(Duration::from_millis(latency));
        if self.codex.is_some() {
            let now = self.now();
            return self.codex.as_mut().map_or(Ok(()), |r| r.response(blocks, &usage, now));
        }

        let msg_id = format!("msg_01{}", self.base62("msg", 22));
        let request_id = format!("req_011C{}", self.base62("req", 20));
        for (i, block) in blocks.iter().enumerate() {
            let last = i + 1 == blocks.len();
            let usage_json = json!({
                "input_tokens": input,
                "cache_creation_input_tokens": write,
                "cache_read_input_tokens": read,
                "cache_creation": {"ephemeral_5m_input_tokens": w5, "ephemeral_1h_input_tokens": w1},
                // The final count only on the last line of the response (formats §3.3).
                "output_tokens": if last { output } else { 1 },
                "service_tier": "standard",
            });
            let message = json!({
                // The API's bare id: Claude Code names the window suffix (`[1m]`) in
                // `system/init` and `modelUsage` only (real-clis.md §3).
                "model": self.spec.model.strip_suffix("[1m]").unwrap_or(&self.spec.model),
                "id": msg_id,
                "type": "message",
                "role": "assistant",
                "content": [block],
                "stop_reason": if last { json!(stop_reason) } else { Value::Null },
                "stop_sequence": null,
                "usage": usage_json,
            });
            let mut line = self.envelope("assistant");
            line.insert("message".into(), message.clone());
            line.insert("requestId".into(), json!(request_id));
            let uuid = line["uuid"].clone();
            self.record(line)?;
            self.emit(&json!({
                "type": "assistant",
                "message": message,
                "parent_tool_use_id": null,
                "session_id": self.session_id,
                "uuid": uuid,
            }))?;
            self.pass(Duration::from_millis(40));
        }
        Ok(())
    }

    /// The user line carrying a tool's result; its size joins the next call's cache write.
    pub(super) fn tool_result(
        &mut self,
        tool_use_id: &str,
        content: &str,
        is_error: bool,
        tool_use_result: Value,
    ) -> Result<()> {
        if self.codex.is_some() {
            let now = self.now();
            self.last_result = Some((tool_use_id.to_string(), tool_use_result));
            self.pending += tokens_of(content);
            return self
                .codex
                .as_mut()
                .map_or(Ok(()), |r| r.tool_output(tool_use_id, content, is_error, now));
        }
        let message = json!({
            "role": "user",
            "content": [{
                "tool_use_id": tool_use_id,
                "type": "tool_result",
                "content": content,
                "is_error": is_error,
            }],
        });
        let mut line = self.envelope("user");
        line.insert("message".into(), message.clone());
        line.insert("toolUseResult".into(), tool_use_result.clone());
        let uuid = line["uuid"].clone();
        self.record(line)?;
        self.last_result = Some((tool_use_id.to_string(), tool_use_result.clone()));
        self.emit(&json!({
            "type": "user",
            "message": message,
            "parent_tool_use_id": null,
            "session_id": self.session_id,
            "uuid": uuid,
            "tool_use_result": tool_use_result,
        }))?;
        self.pending += tokens_of(content);
        Ok(())
    }

    /// A fresh tool_use id, `toolu_01…`.
    pub(super) fn tool_id(&mut self) -> String {
        format!("toolu_01{}", self.base62("tool", 22))
    }

    /// Print the final `result` event (usage, cost, turns) and close the session.
    pub(super) fn finish(mut self, result_text: &str, exit_code: u8) -> Result<()> {
        if let Some(r) = self.codex.take() {
            return r.finish(result_text, self.now());
        }
        let is_error = exit_code != 0;
        let now = self.now();
        let duration_ms = now.duration_since(self.start).as_millis().max(0) as u64;
        let u = self.totals;
        let write = u.cache_write_5m + u.cache_write_1h;
        let mut result = json!({
            "type": "result",
            "subtype": if is_error { "error_during_execution" } else { "success" },
            "is_error": is_error,
            "duration_ms": duration_ms,
            "duration_api_ms": self.api_ms,
            "num_turns": self.api_calls,
            "stop_reason": "end_turn",
            "session_id": self.session_id,
            "total_cost_usd": self.cost_usd,
            "usage": {
                "input_tokens": u.input,
                "cache_creation_input_tokens": write,
                "cache_read_input_tokens": u.cache_read,
                "output_tokens": u.output,
                "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
                "service_tier": "standard",
                "cache_creation": {
                    "ephemeral_1h_input_tokens": u.cache_write_1h,
                    "ephemeral_5m_input_tokens": u.cache_write_5m,
                },
            },
            "modelUsage": {
                self.spec.model.clone(): {
                    "inputTokens": u.input,
                    "outputTokens": u.output,
                    "cacheReadInputTokens": u.cache_read,
                    "cacheCreationInputTokens": write,
                    "webSearchRequests": 0,
                    "costUSD": self.cost_usd,
                    "contextWindow": 200_000,
                    "maxOutputTokens": 64_000,
                },
            },
            "permission_denials": [],
            "uuid": self.uuid(),
        });
        let key = if is_error { "errors" } else { "result" };
        let text = if is_error { json!([result_text]) } else { json!(result_text) };
        result.as_object_mut().map(|m| m.insert(key.into(), text));
        match self.spec.output {
            OutputFormat::StreamJson => self.emit(&result),
            OutputFormat::Json => self.print(&result.to_string()),
            OutputFormat::Text => self.print(result_text),
        }
    }

    /// End as Claude Code does on the plan's usage limit (formats in `looprun::limits`): a
    /// rejected `rate_limit_event` with `resetsAt` `minutes` after now (rounded up to the
    /// minute), a `<synthetic>` assistant line with the text, and an error `result`.
    pub(super) fn limit_hit(mut self, minutes: u64) -> Result<()> {
        let now = self.now().as_second();
        let reset =
            (now + 60 * minutes as i64).div_euclid(60) * 60 + if now % 60 == 0 { 0 } else { 60 };
        if let Some(r) = self.codex.take() {
            return r.limit(reset, self.now());
        }
        let at = Timestamp::from_second(reset).unwrap_or_else(|_| self.now());
        let (h, m) = (at.strftime("%-I").to_string(), at.strftime("%M").to_string());
        let ampm = at.strftime("%P").to_string();
        let shown = if m == "00" { format!("{h}{ampm}") } else { format!("{h}:{m}{ampm}") };
        let text = format!("You've hit your limit · resets {shown} (UTC)");
        let uuid = self.uuid();
        self.emit(&json!({
            "type": "rate_limit_event",
            "rate_limit_info": {"status": "rejected", "resetsAt": reset, "rateLimitType": "five_hour", "overageStatus": "rejected", "overageDisabledReason": "org_level_disabled", "isUsingOverage": false},
            "uuid": uuid,
            "session_id": self.session_id,
        }))?;
        let message = json!({
            "id": format!("msg_01{}", self.base62("msg", 22)),
            "model": "<synthetic>",
            "role": "assistant",
            "type": "message",
            "stop_reason": "stop_sequence",
            "content": [{"type": "text", "text": text}],
            "usage": {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
        });
        let mut line = self.envelope("assistant");
        line.insert("message".into(), message.clone());
        line.insert("error".into(), json!("rate_limit"));
        line.insert("isApiErrorMessage".into(), json!(true));
        let uuid = line["uuid"].clone();
        self.record(line)?;
        self.emit(&json!({"type": "assistant", "message": message, "parent_tool_use_id": null, "session_id": self.session_id, "uuid": uuid, "error": "rate_limit"}))?;
        let result = json!({
            "type": "result",
            "subtype": "success",
            "is_error": true,
            "duration_ms": 0,
            "duration_api_ms": 0,
            "num_turns": 1,
            "result": text,
            "stop_reason": "stop_sequence",
            "session_id": self.session_id,
            "total_cost_usd": 0,
            "usage": {"input_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 0},
            "modelUsage": {},
            "permission_denials": [],
            "terminal_reason": "api_error",
            "api_error_status": 429,
            "uuid": self.uuid(),
        });
        match self.spec.output {
            OutputFormat::StreamJson => self.emit(&result),
            OutputFormat::Json => self.print(&result.to_string()),
            OutputFormat::Text => self.print(&text),
        }
    }

    /// Uncached input tokens that bring a call of usage `u` to cost `usd` (0 when it already
    /// does, or the model is not priced).
    fn filler_for(&self, u: &Usage, usd: f64) -> u64 {
        let Lookup::Priced(p) = PriceTable::embedded().lookup(&self.spec.model) else { return 0 };
        let short = usd - p.cost(u);
        if short <= 0.0 {
            return 0;
        }
        let mut filler = (short * 1e6 / p.rates_for(u).input).ceil() as u64;
        // Past the long-context threshold the rates change: price the call as it will be billed
        // (within a token's price of `usd`).
        let with = |f: u64| p.cost(&Usage { input: u.input + f, ..*u });
        while filler > 0 && with(filler) > usd + 1e-4 {
            filler = (filler as f64 * usd / with(filler)).floor() as u64;
        }
        filler
    }

    fn account(&mut self, u: &Usage) {
        let t = &mut self.totals;
        t.input += u.input;
        t.cache_write_5m += u.cache_write_5m;
        t.cache_write_1h += u.cache_write_1h;
        t.cache_read += u.cache_read;
        t.output += u.output;
        if let Lookup::Priced(p) = PriceTable::embedded().lookup(&self.spec.model) {
            self.cost_usd += p.cost(u);
        }
    }

    fn now(&self) -> Timestamp {
        clock::now().checked_add(self.offset).unwrap_or_else(|_| clock::now())
    }

    fn timestamp(&self) -> String {
        self.now().strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
    }

    /// The common fields of a transcript line (formats §2.1), chained to the previous line.
    fn envelope(&mut self, kind: &str) -> Map<String, Value> {
        let uuid = self.uuid();
        let mut m = Map::new();
        m.insert("parentUuid".into(), json!(self.last_uuid));
        m.insert("isSidechain".into(), json!(false));
        m.insert("userType".into(), json!("external"));
        m.insert("cwd".into(), json!(self.cwd_str()));
        m.insert("sessionId".into(), json!(self.session_id));
        m.insert("version".into(), json!(CLAUDE_CODE_VERSION));
        m.insert("gitBranch".into(), json!(self.spec.git_branch));
        m.insert("type".into(), json!(kind));
        m.insert("uuid".into(), json!(uuid));
        m.insert("timestamp".into(), json!(self.timestamp()));
        self.last_uuid = Some(uuid);
        m
    }

    /// Append one line to the transcript (whole line, fsync).
    fn record(&mut self, line: Map<String, Value>) -> Result<()> {
        match &self.spec.transcript {
            Some(path) => {
                crate::atomic::append_line(path, &Value::Object(line).to_string()).map(|_| ())
            }
            None => Ok(()),
        }
    }

    /// Print one stream-json event and flush, as `claude -p` streams them.
    fn emit(&mut self, event: &Value) -> Result<()> {
        if self.spec.output != OutputFormat::StreamJson {
            return Ok(());
        }
        self.print(&event.to_string())
    }

    fn print(&mut self, line: &str) -> Result<()> {
        let mut out = self.out.lock();
        writeln!(out, "{line}").and_then(|_| out.flush()).map_err(|e| crate::Error::io("stdout", e))
    }

    fn digest(&mut self, kind: &str) -> [u8; 32] {
        self.counter += 1;
        let mut h = Sha256::new();
        h.update(self.spec.seed.as_bytes());
        h.update(b"\0");
        h.update(kind.as_bytes());
        h.update(self.counter.to_le_bytes());
        h.finalize().into()
    }

    /// A version-4-shaped UUID from the seed.
    fn uuid(&mut self) -> String {
        let mut b = self.digest("uuid");
        b[6] = (b[6] & 0x0f) | 0x40;
        b[8] = (b[8] & 0x3f) | 0x80;
        let h = hex::encode(&b[..16]);
        format!("{}-{}-{}-{}-{}", &h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32])
    }

    /// `n` base-62 characters from the seed (the tails of `msg_…`, `req_…`, `toolu_…` ids).
    fn base62(&mut self, kind: &str, n: usize) -> String {
        const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
        let b = self.digest(kind);
        (0..n).map(|i| ALPHABET[b[i % 32] as usize % 62] as char).collect()
    }
}

/// The transcript path Claude Code would use for `cwd`: `<config>/projects/<encoded>/<id>.jsonl`
/// where `<config>` is the first entry of `$CLAUDE_CONFIG_DIR` (a comma list), else
/// `$HOME/.claude`, and `<encoded>` is `cwd` with every non-alphanumeric character turned into
/// `-` (formats §1). Claude Code shortens names over 200 characters with an undocumented hash;
/// the fake keeps 200 characters and appends `-` and 8 hex digits of sha256 of the path.
pub(super) fn transcript_path(cwd: &Path, session_id: &str) -> PathBuf {
    config_root().join("projects").join(encode_project(cwd)).join(format!("{session_id}.jsonl"))
}

/// Claude Code's configuration folder: the first entry of `$CLAUDE_CONFIG_DIR` (a comma list),
/// else `$HOME/.claude`.
pub(super) fn config_root() -> PathBuf {
    match std::env::var("CLAUDE_CONFIG_DIR").ok().filter(|s| !s.trim().is_empty()) {
        Some(list) => PathBuf::from(list.split(',').next().unwrap_or("").trim()),
        None => std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default().join(".claude"),
    }
}

/// Claude Code's project folder name for `cwd` (see [`transcript_path`]).
pub(super) fn encode_project(cwd: &Path) -> String {
    let full = cwd.to_string_lossy();
    let enc: String =
        full.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    if enc.len() <= 200 {
        return enc;
    }
    let hash = hex::encode(Sha256::digest(full.as_bytes()));
    format!("{}-{}", &enc[..200], &hash[..8])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_encoding_matches_the_documented_examples() {
        assert_eq!(encode_project(Path::new("/workspace")), "-workspace");
        assert_eq!(
            encode_project(Path::new("/home/marco/projects/spotter-worktrees/spotter-dov")),
            "-home-marco-projects-spotter-worktrees-spotter-dov"
        );
        assert_eq!(
            encode_project(Path::new("/Users/ryoppippi/ghq/github.com/ccusage/ccusage")),
            "-Users-ryoppippi-ghq-github-com-ccusage-ccusage"
        );
        let long = format!("/{}", "a".repeat(300));
        assert_eq!(encode_project(Path::new(&long)).len(), 209);
    }
}
