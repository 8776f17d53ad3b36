//! The fake agent as `codex exec --json` (`fake-agent --codex …`): the same scenario steps,
//! recorded as Codex records them — the `--json` event stream on stdout and a rollout at
//! `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-YYYY-MM-DDThh-mm-ss-<thread_id>.jsonl`.
//!
//! Shapes (formats/codex.md; real-clis.md §2, §6): the stream is `thread.started` (`thread_id`),
//! `turn.started`, `item.started` / `item.completed` for `agent_message`, `command_execution`
//! (`command`, `aggregated_output`, `exit_code`, `status`) and `file_change` (`changes: [{path,
//! kind}]`, `status`) items with synthetic ids `item_<n>`, and `turn.completed` with the thread's
//! cumulative `usage {input_tokens, cached_input_tokens, output_tokens}` (cached ⊂ input; §14.2).
//! At the plan's usage limit (`limit` step) it prints codex's `UsageLimitReachedError` text as an
//! `error` event and a `turn.failed` and exits 1 (§14.3); without a reset in the text, as codex
//! says it when the server sent no reset time, so the reset is only in the rollout.
//!
//! The rollout: `session_meta` (`originator: "codex_exec"`), `event_msg/task_started`,
//! `turn_context` (with the model: the stream never names it), the user turn as an
//! `event_msg/item_completed` `UserMessage` (0.171), per API call the `response_item`s
//! (`message`, `function_call` / `function_call_output`) and an `event_msg/token_count` with the
//! cumulative `total_token_usage`, the call's `last_token_usage` and `rate_limits` (`primary` /
//! `secondary` `{used_percent, window_minutes, resets_at}`; at the limit, `primary` at 100 % with
//! the reset), then `event_msg/task_complete`. The line timestamps are UTC with milliseconds; the
//! folders and the file name use local time, as codex does (§1).
//!
//! Deterministic: the thread id is a UUIDv7 whose time is the session's start on the kit clock
//! and whose random bits come from sha256 of the seed; item and call ids are counters.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use jiff::{tz::TimeZone, Timestamp};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::error::Result;
use crate::prices::Usage;

/// The codex version the fake claims in `session_meta`.
pub(super) const CODEX_VERSION: &str = "0.171.0";

/// The model a fake Codex session claims unless `-m` names one (priced by kit's table).
pub(super) const CODEX_MODEL: &str = "gpt-5.3-codex";

/// The context window reported in `task_started` and `token_count` (gpt-5 codex models).
const CONTEXT_WINDOW: u64 = 272_000;

/// codex's `UsageLimitReachedError` text when the server gave no reset time (openai/codex
/// `codex-rs/core/src/error.rs`; see `looprun::limits`).
pub(super) const USAGE_LIMIT_TEXT: &str = "You've hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/codex/settings/usage to purchase more credits or try again later.";

/// How a fake Codex session runs: what `codex exec` was asked.
#[derive(Clone, Debug)]
pub(super) struct Mode {
    /// `--json`: the event stream on stdout (else only the final message).
    pub json: bool,
    /// `--sandbox` (reported in `turn_context`; default `read-only`, as codex's).
    pub sandbox: String,
    /// Where the rollout goes: `$CODEX_HOME`, else `~/.codex`.
    pub home: PathBuf,
    /// `--ephemeral`: write no rollout.
    pub ephemeral: bool,
}

/// `$CODEX_HOME`, else `$HOME/.codex`.
pub(super) fn codex_home() -> PathBuf {
    match std::env::var_os("CODEX_HOME").filter(|v| !v.is_empty()) {
        Some(h) => PathBuf::from(h),
        None => std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default().join(".codex"),
    }
}

/// What a tool call becomes in the stream.
enum Pending {
    /// A `command_execution` item (already started).
    Command { item: String, command: String },
    /// A `file_change` item (`kind` `add` or `update`).
    File { item: String, path: String, kind: &'static str },
}

/// The recorder of one fake Codex session.
pub(super) struct Rollout {
    mode: Mode,
    thread_id: String,
    turn_id: String,
    path: Option<PathBuf>,
    seed: String,
    items: u64,
    calls: u64,
    /// Cumulative (input incl. cached, cached, output).
    total: (u64, u64, u64),
    pending: HashMap<String, Pending>,
    /// tool_use id → the codex `call_id` of its `function_call`.
    pending_calls: HashMap<String, String>,
    last_message: Option<String>,
    start: Timestamp,
    out: std::io::Stdout,
}

/// A UUIDv7-shaped id: 48 bits of milliseconds since the epoch, then bits from `digest`.
pub(super) fn uuid_v7(at: Timestamp, digest: &[u8; 32]) -> String {
    let ms = at.as_millisecond().max(0) as u64;
    let mut b = [0u8; 16];
    b[..6].copy_from_slice(&ms.to_be_bytes()[2..]);
    b[6..].copy_from_slice(&digest[..10]);
    b[6] = (b[6] & 0x0f) | 0x70;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = hex::encode(b);
    format!("{}-{}-{}-{}-{}", &h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32])
}

/// The rollout file codex writes for `thread_id` started at `at`:
/// `HOME/sessions/YYYY/MM/DD/rollout-YYYY-MM-DDThh-mm-ss-<thread_id>.jsonl`, in local time.
pub(super) fn rollout_path(home: &Path, at: Timestamp, thread_id: &str) -> PathBuf {
    let local = at.to_zoned(TimeZone::system());
    home.join("sessions")
        .join(local.strftime("%Y").to_string())
        .join(local.strftime("%m").to_string())
        .join(local.strftime("%d").to_string())
        .join(format!("rollout-{}-{thread_id}.jsonl", local.strftime("%Y-%m-%dT%H-%M-%S")))
}

fn stamp(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// `sh`-quote `s` for the `command` codex shows (`bash -lc '…'`).
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

impl Rollout {
    /// Start: print `thread.started` and `turn.started`; write the rollout's header, the turn's
    /// start and the user's prompt.
    ///
    /// Errors: the rollout cannot be created ([`crate::Error::Io`]).
    pub(super) fn start(
        mode: Mode,
        seed: &str,
        cwd: &Path,
        model: &str,
        prompt: &str,
        now: Timestamp,
    ) -> Result<Rollout> {
        let mut h = Sha256::new();
        h.update(seed.as_bytes());
        h.update(b"\0codex-thread");
        let thread_id = uuid_v7(now, &h.finalize().into());
        let path = (!mode.ephemeral).then(|| rollout_path(&mode.home, now, &thread_id));
        if let Some(p) = &path {
            if let Some(dir) = p.parent() {
                crate::atomic::create_dir_all(dir)?;
            }
            if p.exists() {
                std::fs::remove_file(p).map_err(|e| crate::Error::io(p, e))?;
            }
        }
        let mut r = Rollout {
            turn_id: String::new(),
            mode,
            thread_id,
            path,
            seed: seed.to_string(),
            items: 0,
            calls: 0,
            total: (0, 0, 0),
            pending: HashMap::new(),
            pending_calls: HashMap::new(),
            last_message: None,
            start: now,
            out: std::io::stdout(),
        };
        let mut h = Sha256::new();
        h.update(r.seed.as_bytes());
        h.update(b"\0codex-turn");
        r.turn_id = uuid_v7(now, &h.finalize().into());
        let cwd = cwd.to_string_lossy().into_owned();
        r.emit(&json!({"type": "thread.started", "thread_id": r.thread_id}))?;
        r.emit(&json!({"type": "turn.started"}))?;
        r.record(
            now,
            "session_meta",
            json!({
                "id": r.thread_id,
                "timestamp": stamp(now),
                "cwd": cwd,
                "originator": "codex_exec",
                "cli_version": CODEX_VERSION,
                "source": "exec",
                "model_provider": "openai",
            }),
        )?;
        r.record(now, "event_msg", json!({"type": "task_started", "turn_id": r.turn_id, "model_context_window": CONTEXT_WINDOW}))?;
        r.record(
            now,
            "turn_context",
            json!({
                "turn_id": r.turn_id,
                "cwd": cwd,
                "approval_policy": "never",
                "sandbox_policy": {"type": r.mode.sandbox},
                "model": model,
                "effort": "medium",
                "summary": "auto",
            }),
        )?;
        r.record(now, "response_item", json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]}))?;
        let id = format!("user_{}", r.turn_id);
        r.record(now, "event_msg", json!({"type": "item_completed", "thread_id": r.thread_id, "turn_id": r.turn_id, "item": {"type": "UserMessage", "id": id, "content": [{"type": "text", "text": prompt}]}}))?;
        Ok(r)
    }

    /// The thread id (also the rollout's name and `session_meta.id`).
    pub(super) fn thread_id(&self) -> &str {
        &self.thread_id
    }

    /// The rollout file, unless `--ephemeral`.
    pub(super) fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// One API call answered with `blocks` (Claude-shaped: `text` and `tool_use`), using `u`:
    /// its items, then the `token_count` with the new cumulative.
    pub(super) fn response(&mut self, blocks: &[Value], u: &Usage, now: Timestamp) -> Result<()> {
        for b in blocks {
            match b["type"].as_str() {
                Some("text") => {
                    let text = b["text"].as_str().unwrap_or_default().to_string();
                    self.record(now, "response_item", json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}))?;
                    let item = self.item_id();
                    self.record(now, "event_msg", json!({"type": "item_completed", "thread_id": self.thread_id, "turn_id": self.turn_id, "item": {"type": "AgentMessage", "id": item, "content": [{"type": "Text", "text": text}]}}))?;
                    self.emit(&json!({"type": "item.completed", "item": {"id": item, "type": "agent_message", "text": text}}))?;
                    self.last_message = Some(text);
                }
                Some("tool_use") => self.tool_call(b, now)?,
                _ => {}
            }
        }
        let input = u.input + u.cache_write_5m + u.cache_write_1h + u.cache_read;
        let last = (input, u.cache_read, u.output);
        self.total = (self.total.0 + last.0, self.total.1 + last.1, self.total.2 + last.2);
        self.calls += 1;
        let used = 5.0 + self.calls as f64;
        let rate_limits = self.rate_limits(used);
        let info = self.info(last);
        self.record(
            now,
            "event_msg",
            json!({"type": "token_count", "info": info, "rate_limits": rate_limits}),
        )
    }

    fn usage_json((input, cached, output): (u64, u64, u64)) -> Value {
        json!({"input_tokens": input, "cached_input_tokens": cached, "output_tokens": output, "reasoning_output_tokens": 0, "total_tokens": input + output})
    }

    fn info(&self, last: (u64, u64, u64)) -> Value {
        json!({"total_token_usage": Self::usage_json(self.total), "last_token_usage": Self::usage_json(last), "model_context_window": CONTEXT_WINDOW})
    }

    /// A `rate_limits` snapshot: the five-hour window at `used` %, resetting 5 h after the
    /// session's start, the weekly one at a fifth of that, resetting a week after it.
    fn rate_limits(&self, used: f64) -> Value {
        let five = self.start.as_second() + 5 * 3600;
        let week = self.start.as_second() + 7 * 86_400;
        json!({
            "limit_id": "codex",
            "limit_name": null,
            "primary": {"used_percent": used, "window_minutes": 300, "resets_at": five},
            "secondary": {"used_percent": (used / 5.0).floor(), "window_minutes": 10080, "resets_at": week},
            "credits": {"has_credits": false, "unlimited": false, "balance": null},
            "plan_type": "plus",
        })
    }

    fn tool_call(&mut self, b: &Value, now: Timestamp) -> Result<()> {
        let id = b["id"].as_str().unwrap_or_default().to_string();
        let input = &b["input"];
        let s = |k: &str| input[k].as_str().unwrap_or_default().to_string();
        let item = self.item_id();
        let call_id = format!("call_{}", self.short("call"));
        let (pending, args) = match b["name"].as_str() {
            Some("Write") | Some("Edit") => {
                let path = s("file_path");
                let kind = if b["name"] == "Write" && !Path::new(&path).exists() {
                    "add"
                } else {
                    "update"
                };
                let patch = format!(
                    "*** Begin Patch\n*** {} File: {path}\n*** End Patch",
                    if kind == "add" { "Add" } else { "Update" }
                );
                (Pending::File { item, path, kind }, ("apply_patch", json!({"input": patch})))
            }
            Some("Read") => {
                let command = format!("sed -n '1,20p' {}", quote(&s("file_path")));
                (
                    Pending::Command { item, command: command.clone() },
                    ("exec_command", json!({"cmd": command})),
                )
            }
            _ => {
                let command = s("command");
                (
                    Pending::Command { item, command: command.clone() },
                    ("exec_command", json!({"cmd": command})),
                )
            }
        };
        self.record(now, "response_item", json!({"type": "function_call", "name": args.0, "arguments": args.1.to_string(), "call_id": call_id}))?;
        if let Pending::Command { item, command } = &pending {
            let shown = format!("/bin/bash -lc {}", quote(command));
            self.emit(&json!({"type": "item.started", "item": {"id": item, "type": "command_execution", "command": shown, "aggregated_output": "", "exit_code": null, "status": "in_progress"}}))?;
        }
        self.pending_calls.insert(id.clone(), call_id);
        self.pending.insert(id, pending);
        Ok(())
    }

    /// The result of tool call `tool_use_id`: its `function_call_output` in the rollout, its
    /// item completed on the stream.
    pub(super) fn tool_output(
        &mut self,
        tool_use_id: &str,
        content: &str,
        is_error: bool,
        now: Timestamp,
    ) -> Result<()> {
        let call_id = self.pending_calls.remove(tool_use_id).unwrap_or_default();
        self.record(
            now,
            "response_item",
            json!({"type": "function_call_output", "call_id": call_id, "output": content}),
        )?;
        match self.pending.remove(tool_use_id) {
            Some(Pending::Command { item, command }) => {
                let exit = if !is_error {
                    0
                } else {
                    content
                        .strip_prefix("Error: Exit code ")
                        .and_then(|r| r.split_whitespace().next())
                        .and_then(|c| c.parse::<i64>().ok())
                        .unwrap_or(1)
                };
                let output = if is_error { content.strip_prefix("Error: ").unwrap_or(content) } else { content };
                let shown = format!("/bin/bash -lc {}", quote(&command));
                self.emit(&json!({"type": "item.completed", "item": {"id": item, "type": "command_execution", "command": shown, "aggregated_output": output, "exit_code": exit, "status": if exit == 0 { "completed" } else { "failed" }}}))
            }
            Some(Pending::File { item, path, kind }) => self.emit(&json!({"type": "item.completed", "item": {"id": item, "type": "file_change", "changes": [{"path": path, "kind": kind}], "status": if is_error { "failed" } else { "completed" }}})),
            None => Ok(()),
        }
    }

    /// The turn's end: `task_complete` in the rollout, `turn.completed` with the cumulative
    /// usage on the stream (or, without `--json`, the final message).
    pub(super) fn finish(mut self, text: &str, now: Timestamp) -> Result<()> {
        let last = self.last_message.clone().unwrap_or_else(|| text.to_string());
        self.record(
            now,
            "event_msg",
            json!({"type": "task_complete", "turn_id": self.turn_id, "last_agent_message": last}),
        )?;
        let (input, cached, output) = self.total;
        self.emit(&json!({"type": "turn.completed", "usage": {"input_tokens": input, "cached_input_tokens": cached, "output_tokens": output}}))?;
        if !self.mode.json {
            self.print(text)?;
        }
        Ok(())
    }

    /// The plan's usage limit, resetting at `reset` (unix seconds): a `token_count` whose
    /// `primary` window is at 100 % with that reset, then the `error` and `turn.failed` events
    /// (stderr without `--json`).
    pub(super) fn limit(mut self, reset: i64, now: Timestamp) -> Result<()> {
        let mut rate_limits = self.rate_limits(100.0);
        rate_limits["primary"]["resets_at"] = json!(reset);
        let info = if self.calls == 0 { Value::Null } else { self.info((0, 0, 0)) };
        self.record(
            now,
            "event_msg",
            json!({"type": "token_count", "info": info, "rate_limits": rate_limits}),
        )?;
        self.emit(&json!({"type": "error", "message": USAGE_LIMIT_TEXT}))?;
        self.emit(&json!({"type": "turn.failed", "error": {"message": USAGE_LIMIT_TEXT}}))?;
        if !self.mode.json {
            let _ = writeln!(std::io::stderr(), "ERROR: {USAGE_LIMIT_TEXT}");
        }
        Ok(())
    }

    fn item_id(&mut self) -> String {
        self.items += 1;
        format!("item_{}", self.items - 1)
    }

    fn short(&mut self, kind: &str) -> String {
        let mut h = Sha256::new();
        h.update(self.seed.as_bytes());
        h.update(kind.as_bytes());
        h.update(self.items.to_le_bytes());
        h.update(self.calls.to_le_bytes());
        hex::encode(&h.finalize()[..12])
    }

    fn record(&mut self, now: Timestamp, ty: &str, payload: Value) -> Result<()> {
        match &self.path {
            Some(p) => {
                let line = json!({"timestamp": stamp(now), "type": ty, "payload": payload});
                crate::atomic::append_line(p, &line.to_string()).map(|_| ())
            }
            None => Ok(()),
        }
    }

    fn emit(&mut self, event: &Value) -> Result<()> {
        if !self.mode.json {
            return Ok(());
        }
        self.print(&event.to_string())
    }

    fn print(&mut self, line: &str) -> Result<()> {
        let mut out = self.out.lock();
        writeln!(out, "{line}").and_then(|_| out.flush()).map_err(|e| crate::Error::io("stdout", e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_ids_are_uuid_v7_in_time_order() {
        let t = Timestamp::from_second(1_790_000_000).unwrap();
        let a = uuid_v7(t, &[0xff; 32]);
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "7");
        assert!(matches!(&a[19..20], "8" | "9" | "a" | "b"), "{a}");
        let later = uuid_v7(Timestamp::from_second(1_790_000_001).unwrap(), &[0; 32]);
        assert!(later > a);
        let p = rollout_path(Path::new("/h"), t, &a);
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with("rollout-20") && name.ends_with(&format!("-{a}.jsonl")), "{name}");
        assert!(p.starts_with("/h/sessions"));
    }

    #[test]
    fn quoting_survives_quotes() {
        assert_eq!(quote("echo 'a'"), r"'echo '\''a'\'''");
    }
}
