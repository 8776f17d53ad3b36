//! What `kit mine` takes from one session's transcript files: the facts a failure pattern is
//! made of, each with the file and 1-based line where it was logged. The transcript engine
//! ([`crate::transcript`]) reads tokens, compactions and resumes; this pass reads what the engine
//! skips — tool calls with their inputs and tool results with their errors — the way
//! [`crate::recall`] walks every message. Lines are read with the one line model
//! ([`crate::transcript::line`]), which also decides what an API call is; tool inputs and
//! outputs, whose shape is each tool's own, are walked as free-form JSON.
//!
//! Shapes, from the format references:
//! - Claude Code (`formats/claude-code.md` §3.1, §3.4, §5.5, §7): `tool_use` blocks
//!   `{id, name, input}` on assistant lines; `tool_result` blocks `{tool_use_id, content,
//!   is_error}` on user lines, a Bash failure's content starting `Exit code N`; `toolUseResult`
//!   `{type: "create"|"update", filePath}` for Write; `system/compact_boundary`; a `result` line
//!   (headless stream, as in `longrun/.runs/NNN.log`) with `permission_denials: [{tool_name,
//!   tool_use_id, tool_input}]`; a Stop hook's block reason reaches the model as a user message
//!   starting `Stop hook feedback:`, and 2.1.197 logs hook blocks as `attachment` lines of
//!   `attachment.type: "hook_blocking_error"` (`formats/real-clis.md` §3) with `hookName`,
//!   `hookEvent`, `toolUseID` and `blockingError` (the object Claude Code's bundled code builds,
//!   as quoted in public analyses of it).
//! - Codex (`formats/codex.md` §4, §7): `function_call {name, arguments (a JSON string),
//!   call_id}` and `local_shell_call {action.command}`, answered by `function_call_output
//!   {call_id, output}` whose text carries `Process exited with code N` (exec_command),
//!   `Exit code: N` (shell_command) or is a JSON object with `metadata.exit_code` (shell);
//!   `custom_tool_call` `apply_patch` with `*** Update File:` / `*** Delete File:` lines;
//!   `compacted`; `event_msg/token_count` (one per API call, where the engine's resumes are).

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::transcript::line::claude::{self, Block, Content};
use crate::transcript::line::{codex, text, Raw};
use crate::transcript::lines::{self, Parsed};
use crate::transcript::{parse_ts_ms, Damage, ReadLimits, Source};

/// A command (Bash, exec_command) that failed: a tool result marked `is_error`, or a non-zero
/// exit code.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Failure {
    /// The command as the agent wrote it.
    pub command: String,
    /// The error text (the result's content or output).
    pub error: String,
}

/// One fact, where it was logged.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Fact {
    /// The transcript file (main or subagent).
    pub path: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// Unix ms of the line, if it had a timestamp.
    pub ts_ms: Option<i64>,
    /// What happened.
    pub what: What,
}

/// The kinds of fact.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum What {
    /// A shell command failed.
    Failed(Failure),
    /// A tool call was refused by the harness (a permission or sandbox denial): the tool's name
    /// and the first line of the refusal.
    Denied { tool: String, detail: String },
    /// A test file was weakened (an edit, overwrite or patch with fewer assertions, or one that
    /// cannot fail or skips, see [`weakens`]), or deleted, moved or changed in place by a shell
    /// command: its path, and what was done to it in a few words (`rm tests/a.py`).
    TestEdit { file: String, how: String },
    /// A file was read (Read, or a shell `cat`/`sed -n`/`head`/`tail`/`nl`).
    Read { file: String },
    /// The context was compacted.
    Compaction,
    /// A Stop hook blocked and the agent answered without a single tool call before stopping
    /// again (or before the next prompt).
    IgnoredStopBlock,
    /// The first line of an API call with this timestamp (to place the engine's resumes).
    Call,
}

/// Strings in a tool's error that mean the harness refused the call, not that it ran and
/// failed, matched ignoring case. Claude Code `-p`: "Claude requested permissions to use Bash,
/// but you haven't granted it yet" / "… require approval" (`formats/real-clis.md` §2); the user
/// answering no at the prompt, "The user doesn't want to proceed with this tool use" (a
/// tool_result prefix public transcript analyses report). Codex:
/// its read-only sandbox, "Read-only file system" (same section); a declined approval, which
/// codex-rs normalises to "exec command rejected by user" / "patch rejected by user"; a
/// sandbox refusal, "sandbox denied exec error"; its guardian's "This action was rejected due
/// to unacceptable risk." (the strings of codex-rs's tool runtime and its tests).
pub(crate) const DENIAL_MARKERS: [&str; 8] = [
    "haven't granted",
    "doesn't want to proceed with this tool use",
    "require approval",
    "requires approval",
    "read-only file system",
    "rejected by user",
    "sandbox denied",
    "rejected due to unacceptable risk",
];

/// The facts of one file, in line order. Damage is counted into `damage` (the engine counts
/// the same damage on its own pass, so callers may discard this one).
pub(crate) fn read_file(path: &Path, source: Source, damage: &mut Damage) -> Vec<Fact> {
    let mut st = Pass { path: path.to_path_buf(), ..Pass::default() };
    let limits = ReadLimits::default();
    let _ = lines::for_each_record(path, limits, damage, |no, bytes| {
        match triage(bytes, source) {
            Triage::Skip => return Ok(Parsed::Known),
            Triage::Compaction(ts) => {
                st.push(no, ts, What::Compaction);
                return Ok(Parsed::Known);
            }
            Triage::Parse => {}
        }
        match source {
            Source::Claude => {
                let line = claude::Line::parse(bytes)?;
                let ts = line.timestamp.as_deref().and_then(parse_ts_ms);
                st.claude(no, ts, &line);
            }
            Source::Codex => {
                let line = codex::Envelope::parse(bytes)?;
                let ts = line.timestamp.as_deref().and_then(parse_ts_ms);
                st.codex(no, ts, &line.payload);
            }
        }
        Ok(Parsed::Known)
    });
    st.close_block();
    st.facts
}

/// What to do with a line before parsing it.
#[derive(Debug, PartialEq)]
enum Triage {
    /// It holds nothing this pass reads.
    Skip,
    /// A Codex `compacted` line (often megabytes of replacement history): only its type and
    /// time matter.
    Compaction(Option<i64>),
    /// Parse it.
    Parse,
}

/// Sort a line by its top-level `type` (and a Codex payload's `type`) with the skimmer
/// ([`crate::transcript::skim`]), without decoding the rest: most bytes of a transcript are
/// progress lines, tool output and file contents this pass does not need. A line the skimmer
/// cannot walk is parsed, so serde decides about it.
fn triage(bytes: &[u8], source: Source) -> Triage {
    use crate::transcript::skim;
    let (mut ty, mut payload, mut ts) = (None, None, None);
    if skim::fields(bytes, |k, v| match k {
        b"type" => ty = skim::plain_str(v),
        b"payload" => payload = Some(v),
        b"timestamp" => ts = skim::plain_str(v),
        _ => {}
    })
    .is_none()
    {
        return Triage::Parse;
    }
    let has = |needle: &[u8]| memchr::memmem::find(bytes, needle).is_some();
    match (source, ty) {
        (Source::Claude, Some("progress" | "file-history-snapshot" | "queue-operation")) => {
            Triage::Skip
        }
        // A tool result matters only as an error or as a Write's overwrite; prompts and hook
        // feedback have no tool_result block.
        (Source::Claude, Some("user"))
            if has(b"\"tool_result\"")
                && !has(b"\"is_error\":true")
                && !has(b"\"is_error\": true")
                && !has(b"\"update\"")
                && !has(b"Stop hook feedback") =>
        {
            Triage::Skip
        }
        (Source::Codex, Some("compacted")) => Triage::Compaction(ts.and_then(parse_ts_ms)),
        (Source::Codex, Some("session_meta" | "turn_context")) => Triage::Skip,
        (Source::Codex, Some(kind @ ("response_item" | "event_msg"))) => {
            let mut inner = None;
            if let Some(p) = payload {
                let _ = skim::fields(p, |k, v| {
                    if k == b"type" {
                        inner = skim::plain_str(v);
                    }
                });
            }
            let wanted = match (kind, inner) {
                (_, None) => true,
                ("response_item", Some(t)) => matches!(
                    t,
                    "function_call"
                        | "local_shell_call"
                        | "custom_tool_call"
                        | "function_call_output"
                        | "custom_tool_call_output"
                ),
                (_, Some(t)) => matches!(t, "token_count" | "item_completed"),
            };
            if wanted {
                Triage::Parse
            } else {
                Triage::Skip
            }
        }
        _ => Triage::Parse,
    }
}

#[derive(Default)]
struct Pass {
    path: PathBuf,
    facts: Vec<Fact>,
    /// Tool calls waiting for their result: id → (tool name, command or file path).
    pending: HashMap<String, (String, String)>,
    /// Tool use ids already counted as denied (a stream's `result` repeats its tool results').
    denied: std::collections::HashSet<String>,
    /// A Stop hook block not yet closed: (line, ts, whether a tool call followed, whether the
    /// agent answered at all).
    block: Option<(usize, Option<i64>, bool, bool)>,
    /// Dedup keys of API calls already placed.
    calls: std::collections::HashSet<String>,
    /// Codex's cumulative usage, to tell API calls from echoes.
    cumulative: codex::Cumulative,
    /// Codex call ids whose result was read (from either of the two shapes).
    resolved: std::collections::HashSet<String>,
    /// The working directory of the latest line (Claude's `cwd`), to show paths in it relative.
    cwd: String,
}

impl Pass {
    fn push(&mut self, line: usize, ts_ms: Option<i64>, what: What) {
        self.facts.push(Fact { path: self.path.clone(), line, ts_ms, what });
    }

    fn close_block(&mut self) {
        if let Some((line, ts, false, _)) = self.block.take() {
            self.push(line, ts, What::IgnoredStopBlock);
        }
    }

    fn claude(&mut self, no: usize, ts: Option<i64>, line: &claude::Line<'_>) {
        if let Some(cwd) = line.cwd.as_deref() {
            if cwd != self.cwd {
                self.cwd = cwd.to_string();
            }
        }
        match line.kind() {
            "assistant" => {
                // The engine's calls: the line model's main-chain calls, one per dedup key
                // (`message.id` + `requestId`, DESIGN §8).
                if let Some(c) = line.call().filter(|c| !c.sidechain) {
                    let key = c.id.map(|id| format!("{id}\u{0}{}", c.request_id.unwrap_or("")));
                    if key.is_none_or(|k| self.calls.insert(k)) {
                        self.push(no, ts, What::Call);
                    }
                }
                if let Some(b) = &mut self.block {
                    b.3 = true;
                }
                let content = line.message.as_ref().map_or(Content::None, |m| m.content());
                if let Content::Blocks(blocks) = content {
                    for b in blocks.iter().filter(|b| b.kind() == "tool_use") {
                        if let Some(b) = &mut self.block {
                            b.2 = true;
                        }
                        self.claude_tool_use(no, ts, b);
                    }
                }
            }
            "user" => self.claude_user(no, ts, line),
            "system" if line.is_compact_boundary() && line.is_sidechain != Some(true) => {
                self.push(no, ts, What::Compaction);
            }
            "result" => {
                for d in line.permission_denials() {
                    let tool = text(d.tool_name).unwrap_or(Cow::Borrowed("a tool")).into_owned();
                    let id = text(d.tool_use_id).unwrap_or_default().into_owned();
                    if id.is_empty() || self.denied.insert(id) {
                        let input = d.tool_input.map(|r| r.value()).unwrap_or_default();
                        let detail = input["command"]
                            .as_str()
                            .or(input["file_path"].as_str())
                            .map(|s| format!("{tool} {s}"))
                            .unwrap_or_else(|| format!("{tool} denied"));
                        self.push(no, ts, What::Denied { tool, detail: first_line(&detail) });
                    }
                }
            }
            "attachment" => {
                if let Some(a) = line.attachment() {
                    let stop =
                        matches!(text(a.hook_event).as_deref(), Some("Stop" | "SubagentStop"));
                    if text(a.ty).as_deref() == Some("hook_blocking_error") && stop {
                        self.open_block(no, ts);
                    }
                }
            }
            _ => {}
        }
    }

    /// A Stop block starts; the same block logged twice before the agent answered (an
    /// `attachment` and the `Stop hook feedback` message) is one block.
    fn open_block(&mut self, no: usize, ts: Option<i64>) {
        if self.block.is_some_and(|b| !b.3) {
            return;
        }
        self.close_block();
        self.block = Some((no, ts, false, false));
    }

    fn claude_tool_use(&mut self, no: usize, ts: Option<i64>, b: &Block<'_>) {
        let name = text(b.name).unwrap_or_default();
        let name = &*name;
        // A tool's input is the tool's own shape: read as free-form JSON.
        let input = &b.input.map(|r| r.value()).unwrap_or_default();
        let id = text(b.id).unwrap_or_default().into_owned();
        let file = input["file_path"].as_str().or(input["notebook_path"].as_str());
        let rel = file.map(|f| relative(f, &self.cwd));
        let file = rel.as_deref();
        match (name, file) {
            ("Read", Some(f)) => self.push(no, ts, What::Read { file: f.to_string() }),
            ("Edit" | "MultiEdit", Some(f)) if is_test_path(f) => {
                let pairs: Vec<(&str, &str)> = match input["edits"].as_array() {
                    Some(edits) => edits
                        .iter()
                        .map(|e| (str_of(&e["old_string"]), str_of(&e["new_string"])))
                        .collect(),
                    None => vec![(str_of(&input["old_string"]), str_of(&input["new_string"]))],
                };
                let old: String = pairs.iter().map(|p| p.0).collect::<Vec<_>>().join("\n");
                let new: String = pairs.iter().map(|p| p.1).collect::<Vec<_>>().join("\n");
                if let Some(why) = weakens(&old, &new) {
                    let how = format!("{} {f}{why}", name.to_lowercase());
                    self.push(no, ts, What::TestEdit { file: f.to_string(), how });
                }
            }
            ("Write", Some(f)) if is_test_path(f) => {
                // Only an overwrite of an existing test counts; its result says which and holds
                // the original.
                self.pending.insert(id, ("Write".into(), f.to_string()));
            }
            ("Bash", _) => {
                let cmd = input["command"].as_str().unwrap_or_default();
                self.shell(no, ts, cmd);
                self.pending.insert(id, ("Bash".into(), cmd.to_string()));
            }
            _ => {
                self.pending.insert(id, (name.to_string(), String::new()));
            }
        }
    }

    /// What a shell command says by itself: a read, or a change to a test file.
    fn shell(&mut self, no: usize, ts: Option<i64>, cmd: &str) {
        if let Some(f) = shell_read(cmd) {
            self.push(no, ts, What::Read { file: f });
        }
        if let Some((file, verb)) = shell_test_edit(cmd) {
            let how = format!("{verb} {file}");
            self.push(no, ts, What::TestEdit { file, how });
        }
    }

    fn claude_user(&mut self, no: usize, ts: Option<i64>, line: &claude::Line<'_>) {
        let content = line.message.as_ref().map_or(Content::None, |m| m.content());
        let mut texts: Vec<Cow<'_, str>> = vec![];
        let mut prompt = false;
        match content {
            Content::Text(s) => {
                texts.push(s);
                prompt = true;
            }
            Content::Blocks(blocks) => {
                for b in &blocks {
                    match b.kind() {
                        "text" => {
                            if let Some(t) = text(b.text) {
                                texts.push(t);
                                prompt = true;
                            }
                        }
                        "tool_result" => self.claude_result(no, ts, line, b),
                        _ => {}
                    }
                }
            }
            Content::None => {}
        }
        if texts.iter().any(|t| t.trim_start().starts_with("Stop hook feedback")) {
            self.open_block(no, ts);
            return;
        }
        let typed = prompt
            && line.is_meta != Some(true)
            && line.is_compact_summary != Some(true)
            && !texts.iter().any(|t| t.trim_start().starts_with('<'));
        if typed && line.is_sidechain != Some(true) {
            self.close_block();
        }
    }

    fn claude_result(
        &mut self,
        no: usize,
        ts: Option<i64>,
        line: &claude::Line<'_>,
        b: &Block<'_>,
    ) {
        let id = text(b.tool_use_id).unwrap_or_default().into_owned();
        let Some((tool, arg)) = self.pending.remove(&id) else { return };
        if tool == "Write" {
            let r = line.tool_use_result().unwrap_or_default();
            if !arg.is_empty() && text(r.ty).as_deref() == Some("update") {
                // Without the original, an overwrite of a test counts: it cannot be shown safe.
                let why = match text(r.original_file) {
                    Some(orig) => weakens(&orig, &text(r.content).unwrap_or_default()),
                    None => Some(String::new()),
                };
                if let Some(why) = why {
                    let how = format!("overwrite {arg}{why}");
                    self.push(no, ts, What::TestEdit { file: arg, how });
                }
            }
            return;
        }
        if !b.is_error() {
            return;
        }
        let text = flatten(&b.content.map(|r| r.value()).unwrap_or_default());
        if is_denial(&text) {
            if self.denied.insert(id) {
                self.push(no, ts, What::Denied { tool, detail: error_line(&text) });
            }
        } else if tool == "Bash" && !arg.is_empty() {
            self.push(no, ts, What::Failed(Failure { command: arg, error: text }));
        }
    }

    fn codex(&mut self, no: usize, ts: Option<i64>, payload: &codex::Payload<'_>) {
        match payload {
            codex::Payload::ResponseItem(p) => self.codex_item(no, ts, p),
            codex::Payload::Event(e) => match e.ty.as_deref() {
                Some("item_completed") => {
                    if let Some(item) =
                        e.item.as_ref().filter(|i| i.ty.as_deref() == Some("CommandExecution"))
                    {
                        self.codex_command_item(no, ts, item);
                    }
                }
                // The engine's calls: the records the line model's rule counts.
                Some("token_count") => {
                    let total = e.info.and_then(|i| i.total_token_usage);
                    if total.is_some_and(|t| self.cumulative.next(t).is_some()) {
                        self.push(no, ts, What::Call);
                    }
                }
                _ => {}
            },
            codex::Payload::Compacted => self.push(no, ts, What::Compaction),
            _ => {}
        }
    }

    fn codex_item(&mut self, no: usize, ts: Option<i64>, p: &codex::ResponseItem<'_>) {
        let call_id = text(p.call_id).unwrap_or_default().into_owned();
        match p.kind() {
            "function_call" => {
                let name = text(p.name).unwrap_or_default().into_owned();
                let args: Value = text(p.arguments)
                    .and_then(|a| serde_json::from_str(&a).ok())
                    .unwrap_or(Value::Null);
                let cmd = codex_command(&args);
                if let Some(c) = &cmd {
                    self.shell(no, ts, c);
                }
                self.pending.insert(call_id, (name, cmd.unwrap_or_default()));
            }
            "local_shell_call" => {
                let action = p.action.map(|r| r.value()).unwrap_or_default();
                let cmd = codex_command(&action).unwrap_or_default();
                self.shell(no, ts, &cmd);
                self.pending.insert(call_id, ("local_shell".into(), cmd));
            }
            "custom_tool_call" => {
                let name = text(p.name).unwrap_or(Cow::Borrowed("custom tool")).into_owned();
                self.pending.insert(call_id, (name, String::new()));
                let input = text(p.input).unwrap_or_default();
                for (file, how) in patch_test_edits(&input) {
                    self.push(no, ts, What::TestEdit { file, how });
                }
            }
            "function_call_output" | "custom_tool_call_output" => {
                let Some((tool, cmd)) = self.pending.remove(&call_id) else { return };
                let text = flatten(&p.output.map(|r| r.value()).unwrap_or_default());
                self.resolved.insert(call_id);
                let (exit, body) = codex_exit(&text);
                if is_denial(&body) {
                    self.push(no, ts, What::Denied { tool, detail: error_line(&body) });
                } else if exit.is_some_and(|e| e != 0) && !cmd.is_empty() {
                    self.push(no, ts, What::Failed(Failure { command: cmd, error: body }));
                }
            }
            _ => {}
        }
    }
}

/// `path` relative to `cwd` when it lies inside it (Claude Code logs absolute paths).
fn relative(path: &str, cwd: &str) -> String {
    let cwd = cwd.trim_end_matches('/');
    match path.strip_prefix(cwd).and_then(|r| r.strip_prefix('/')) {
        Some(r) if !cwd.is_empty() && !r.is_empty() => r.to_string(),
        _ => path.to_string(),
    }
}

impl Pass {
    /// A newer Codex's `event_msg/item_completed` `CommandExecution` item (0.171: `{id,
    /// command, status, aggregated_output | stdout/stderr, exit_code}`, `formats/real-clis.md`
    /// §6 and the rollouts public parsers test on). Its `id` is the tool call's `call_id` when
    /// both are logged: a call already answered by its `function_call_output` is not counted
    /// twice, and an answered item makes a later output of the same call ignored.
    fn codex_command_item(&mut self, no: usize, ts: Option<i64>, item: &codex::Item<'_>) {
        let id = text(item.id).unwrap_or_default().into_owned();
        if !id.is_empty() && !self.resolved.insert(id.clone()) {
            return;
        }
        let called = self.pending.remove(&id);
        let value = |r: Option<Raw<'_>>| r.map(|r| r.value()).unwrap_or_default();
        let cmd = command_of(&value(item.cmd), &value(item.command))
            .or(called.as_ref().map(|c| c.1.clone()))
            .unwrap_or_default();
        if called.is_none() {
            self.shell(no, ts, &cmd);
        }
        let output = [item.aggregated_output, item.stderr, item.formatted_output, item.stdout]
            .into_iter()
            .filter_map(text)
            .find(|t| !t.trim().is_empty())
            .unwrap_or_default()
            .into_owned();
        let status = text(item.status).unwrap_or_default();
        let tool = called.map(|c| c.0).unwrap_or_else(|| "exec_command".into());
        if status == "declined" || is_denial(&output) {
            let detail =
                if output.is_empty() { format!("{tool} declined") } else { error_line(&output) };
            self.push(no, ts, What::Denied { tool, detail });
        } else if item.exit_code.and_then(|r| r.decode::<i64>().ok()).is_some_and(|e| e != 0)
            && !cmd.is_empty()
        {
            self.push(no, ts, What::Failed(Failure { command: cmd, error: output }));
        }
    }
}

/// The command line of a Codex tool call's arguments: `cmd` or `command`, a string or an argv
/// (`["bash", "-lc", "…"]` gives the script).
fn codex_command(args: &Value) -> Option<String> {
    command_of(&args["cmd"], &args["command"])
}

/// [`codex_command`] of a `cmd` and a `command` field (`cmd` first).
fn command_of(cmd: &Value, command: &Value) -> Option<String> {
    let c = if cmd.is_null() { command } else { cmd };
    match c {
        Value::String(s) => Some(s.clone()),
        Value::Array(a) => {
            let parts: Vec<&str> = a.iter().filter_map(Value::as_str).collect();
            match parts.as_slice() {
                [sh, flag, script] if sh.ends_with("sh") && flag.starts_with('-') => {
                    Some(script.to_string())
                }
                _ => (!parts.is_empty()).then(|| parts.join(" ")),
            }
        }
        _ => None,
    }
}

/// The exit code of a Codex tool output and its body without the headers Codex puts first.
fn codex_exit(text: &str) -> (Option<i64>, String) {
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        if v.is_object() {
            let exit = v["metadata"]["exit_code"].as_i64();
            return (exit, v["output"].as_str().unwrap_or_default().to_string());
        }
    }
    let mut exit = None;
    let mut body = vec![];
    let mut in_output = false;
    for l in text.lines() {
        if in_output {
            body.push(l);
            continue;
        }
        let t = l.trim();
        if let Some(n) = t
            .strip_prefix("Process exited with code")
            .or_else(|| t.strip_prefix("Exit code:"))
            .and_then(|n| n.trim().parse::<i64>().ok())
        {
            exit = Some(n);
        } else if t == "Output:" {
            in_output = true;
        } else if !(t.starts_with("Chunk ID:")
            || t.starts_with("Wall time:")
            || t.starts_with("Original token count:"))
        {
            body.push(l);
        }
    }
    (exit, body.join("\n"))
}

/// Text that asserts or declares a test: removing some weakens a test.
const ASSERTION_MARKERS: [&str; 8] =
    ["assert", "expect(", "should", "#[test]", "def test", "func Test", "it(\"", "test(\""];

/// Text that makes a test pass whatever the code does, or skips it: adding some weakens a test.
const NEUTERING_MARKERS: [&str; 10] = [
    "assert True",
    "assertTrue(True)",
    "expect(true)",
    "unittest.skip",
    "pytest.mark.skip",
    "@skip",
    "#[ignore]",
    ".skip(",
    "xit(",
    "t.Skip(",
];

fn count(text: &str, markers: &[&str]) -> usize {
    markers.iter().map(|m| text.matches(m).count()).sum()
}

/// Whether changing a test's text from `old` to `new` weakens it: fewer assertions or tests
/// ([`ASSERTION_MARKERS`]), or more that assert nothing or skip ([`NEUTERING_MARKERS`]).
/// Adding tests or assertions is the agent's job and does not count. Returns the reason, e.g.
/// ` (3 -> 1 assertions)`, or None.
pub(crate) fn weakens(old: &str, new: &str) -> Option<String> {
    let (a, b) = (count(old, &ASSERTION_MARKERS), count(new, &ASSERTION_MARKERS));
    if b < a {
        return Some(format!(" ({a} -> {b} assertions)"));
    }
    let (x, y) = (count(old, &NEUTERING_MARKERS), count(new, &NEUTERING_MARKERS));
    (y > x).then(|| " (an assertion that cannot fail, or a skip)".to_string())
}

/// The test files an `apply_patch` input deletes, or updates so that they are weaker (its `-`
/// and `+` lines compared by [`weakens`]), with how.
fn patch_test_edits(input: &str) -> Vec<(String, String)> {
    let mut out = vec![];
    let mut cur: Option<(String, String, String)> = None;
    let finish = |cur: &mut Option<(String, String, String)>, out: &mut Vec<(String, String)>| {
        if let Some((f, old, new)) = cur.take() {
            if let Some(why) = weakens(&old, &new) {
                out.push((f.clone(), format!("patch {f}{why}")));
            }
        }
    };
    for l in input.lines() {
        if l.starts_with("*** ") {
            finish(&mut cur, &mut out);
            if let Some(f) = l.strip_prefix("*** Delete File: ").map(str::trim) {
                if is_test_path(f) {
                    out.push((f.to_string(), format!("delete {f}")));
                }
            } else if let Some(f) = l.strip_prefix("*** Update File: ").map(str::trim) {
                if is_test_path(f) {
                    cur = Some((f.to_string(), String::new(), String::new()));
                }
            }
        } else if let Some((_, old, new)) = &mut cur {
            if let Some(r) = l.strip_prefix('-') {
                old.push_str(r);
                old.push('\n');
            } else if let Some(a) = l.strip_prefix('+') {
                new.push_str(a);
                new.push('\n');
            }
        }
    }
    finish(&mut cur, &mut out);
    out
}

fn str_of(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

/// Whether a tool error is the harness refusing the call ([`DENIAL_MARKERS`]).
pub(crate) fn is_denial(text: &str) -> bool {
    let t = text.to_lowercase();
    DENIAL_MARKERS.iter().any(|m| t.contains(m))
}

/// Every string of a result's content (a string, or a list of text blocks), joined by lines.
fn flatten(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(a) => a
            .iter()
            .filter_map(|b| b["text"].as_str().or(b.as_str()))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn first_line(s: &str) -> String {
    s.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or_default().to_string()
}

/// The first line of an error that says what went wrong: without Claude Code's `Exit code N`
/// header and `<tool_use_error>` tags.
pub(crate) fn error_line(text: &str) -> String {
    let t = text.replace("<tool_use_error>", "").replace("</tool_use_error>", "");
    t.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .find(|l| {
            !(l.strip_prefix("Exit code ").is_some_and(|n| n.trim().parse::<i64>().is_ok())
                || l.starts_with("Error: Exit code "))
        })
        .unwrap_or_default()
        .to_string()
}

/// Folder names that hold tests.
const TEST_DIRS: [&str; 6] = ["test", "tests", "__tests__", "spec", "specs", "testdata"];

/// Whether a path names a test file: under a `test`/`tests`/`__tests__`/`spec` folder, or named
/// like one (`test_*.py`, `*_test.py`, `*_test.go`, `*.test.ts`, `*.spec.js`, `*_spec.rb`,
/// `conftest.py`).
pub(crate) fn is_test_path(p: &str) -> bool {
    let p = p.trim_matches(|c| c == '"' || c == '\'');
    let parts: Vec<&str> = p.split('/').filter(|s| !s.is_empty()).collect();
    let Some((name, dirs)) = parts.split_last() else { return false };
    if dirs.iter().any(|d| TEST_DIRS.contains(d)) {
        return true;
    }
    let stem = name.split('.').next().unwrap_or(name);
    (name.starts_with("test_") && name.contains('.'))
        || stem.ends_with("_test")
        || stem.ends_with("_spec")
        || name.contains(".test.")
        || name.contains(".spec.")
        || *name == "conftest.py"
}

/// The words of a shell command split at blanks and at `;`, `|`, `&`, with quotes dropped: a
/// rough split, good enough to spot a verb and a path (kit never runs it).
fn words(cmd: &str) -> Vec<String> {
    let mut out = vec![];
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    for c in cmd.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => quote = Some(c),
            (None, c) if c.is_whitespace() || matches!(c, ';' | '|' | '&' | '>' | '<') => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                if !c.is_whitespace() {
                    out.push(c.to_string());
                }
            }
            (None, c) => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The file a plain read command reads: `cat F`, `head … F`, `tail … F`, `nl … F`,
/// `sed -n '…' F`, `less F` — one command, no pipe or redirection.
pub(crate) fn shell_read(cmd: &str) -> Option<String> {
    let w = words(cmd);
    if w.iter().any(|x| matches!(x.as_str(), ";" | "|" | "&" | ">" | "<")) || w.len() < 2 {
        return None;
    }
    let verb = w[0].as_str();
    let ok = match verb {
        "cat" | "head" | "tail" | "nl" | "less" | "more" | "bat" => true,
        "sed" => w.get(1).is_some_and(|f| f == "-n"),
        _ => false,
    };
    let last = w.last()?;
    (ok && !last.starts_with('-') && w.len() <= 5).then(|| last.clone())
}

/// A shell command that changes a test file: `rm`, `git rm`, `mv`, `truncate`, `sed -i`,
/// `perl -i`, or a redirection `>`/`>>` into it. Returns the first test
/// path it names and the verb.
pub(crate) fn shell_test_edit(cmd: &str) -> Option<(String, String)> {
    let w = words(cmd);
    let mut verb: Option<String> = None;
    let mut redirect = false;
    for (i, x) in w.iter().enumerate() {
        let start = i == 0 || matches!(w[i - 1].as_str(), ";" | "|" | "&");
        if start {
            let next = w.get(i + 1).map(String::as_str).unwrap_or_default();
            verb = match (x.as_str(), next) {
                ("rm" | "mv" | "truncate" | "unlink", _) => Some(x.clone()),
                ("git", "rm" | "mv") => Some(format!("git {next}")),
                ("sed", f) if f.starts_with("-i") || f == "--in-place" => Some("sed -i".into()),
                ("perl", f) if f.starts_with('-') && f.contains('i') => Some("perl -i".into()),
                _ => None,
            };
        }
        if x == ">" {
            redirect = true;
            continue;
        }
        let changed = verb.is_some() || redirect;
        if changed && i > 0 && is_test_path(x) && !x.starts_with('-') {
            let how = if redirect { "redirect".to_string() } else { verb.clone()? };
            return Some((x.clone(), how));
        }
        redirect = false;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts_of(source: Source, lines: &[&str]) -> Vec<(usize, What)> {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("s.jsonl");
        std::fs::write(&p, lines.join("\n") + "\n").unwrap();
        let mut damage = Damage::default();
        read_file(&p, source, &mut damage)
            .into_iter()
            .filter(|f| f.what != What::Call)
            .map(|f| (f.line, f.what))
            .collect()
    }

    #[test]
    fn a_headless_result_repeats_denials_the_tool_results_already_gave() {
        let facts = facts_of(
            Source::Claude,
            &[
                r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"git push"}}]}}"#,
                r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":"Claude requested permissions to use Bash, but you haven't granted it yet."}]}}"#,
                r#"{"type":"result","subtype":"success","is_error":false,"permission_denials":[{"tool_name":"Bash","tool_use_id":"t1","tool_input":{"command":"git push"}},{"tool_name":"Write","tool_use_id":"t2","tool_input":{"file_path":"/a/b.txt"}}]}"#,
            ],
        );
        let denied: Vec<(usize, String)> = facts
            .into_iter()
            .filter_map(|(l, w)| match w {
                What::Denied { tool, .. } => Some((l, tool)),
                _ => None,
            })
            .collect();
        assert_eq!(denied, [(2, "Bash".to_string()), (3, "Write".to_string())]);
    }

    #[test]
    fn a_stop_block_is_ignored_only_when_no_tool_call_answers_it() {
        let block = r#"{"type":"user","isMeta":true,"message":{"content":"Stop hook feedback:\nsave the handoff"}}"#;
        let attachment = r#"{"type":"attachment","attachment":{"type":"hook_blocking_error","hookName":"Stop","hookEvent":"Stop","blockingError":{"blockingError":"save the handoff"}}}"#;
        let tool_block = r#"{"type":"attachment","attachment":{"type":"hook_blocking_error","hookName":"PreToolUse:Bash","hookEvent":"PreToolUse"}}"#;
        let text = r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"Done."}]}}"#;
        let tool = r#"{"type":"assistant","message":{"id":"m2","content":[{"type":"tool_use","id":"t","name":"Bash","input":{"command":"kit handoff save"}}]}}"#;
        let prompt = r#"{"type":"user","message":{"content":"next task"}}"#;
        let ignored = |lines: &[&str]| -> Vec<usize> {
            facts_of(Source::Claude, lines)
                .into_iter()
                .filter(|(_, w)| *w == What::IgnoredStopBlock)
                .map(|(l, _)| l)
                .collect()
        };
        assert_eq!(ignored(&[block, text]), [1]);
        assert_eq!(ignored(&[block, tool, text]), Vec::<usize>::new());
        assert_eq!(ignored(&[attachment, block, text, prompt]), [1], "one block logged twice");
        assert_eq!(ignored(&[block, text, block, text]), [1, 3]);
        assert_eq!(ignored(&[tool_block, text]), Vec::<usize>::new(), "not a Stop hook");
    }

    #[test]
    fn codex_command_items_count_once_beside_their_function_call() {
        let call = r#"{"type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"make tset\"}","call_id":"c1"}}"#;
        let output = r#"{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"Process exited with code 2\nOutput:\nmake: *** No rule to make target 'tset'.  Stop."}}"#;
        let item = r#"{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"CommandExecution","id":"c1","command":"make tset","status":"failed","aggregated_output":"make: *** No rule to make target 'tset'.  Stop.","exit_code":2}}}"#;
        let alone = r#"{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"CommandExecution","id":"i9","command":["/bin/bash","-lc","pytest -q"],"status":"failed","stderr":"bash: line 1: pytest: command not found","exit_code":127}}}"#;
        let declined = r#"{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"CommandExecution","id":"i10","command":"rm -rf build","status":"declined","aggregated_output":"exec command rejected by user","exit_code":-1}}}"#;
        let failed = |lines: &[&str]| -> Vec<(usize, String)> {
            facts_of(Source::Codex, lines)
                .into_iter()
                .filter_map(|(l, w)| match w {
                    What::Failed(f) => Some((l, f.command)),
                    What::Denied { tool, .. } => Some((l, format!("denied {tool}"))),
                    _ => None,
                })
                .collect()
        };
        assert_eq!(failed(&[call, output, item]), [(2, "make tset".to_string())]);
        assert_eq!(failed(&[call, item, output]), [(2, "make tset".to_string())]);
        assert_eq!(
            failed(&[alone, declined]),
            [(1, "pytest -q".to_string()), (2, "denied exec_command".to_string())]
        );
    }

    #[test]
    fn only_edits_that_weaken_a_test_count() {
        let cases: &[(&str, &str, bool)] = &[
            ("assert parse('9') == 9", "assert True", true),
            ("self.assertEqual(a, 1)\nself.assertEqual(b, 2)", "self.assertEqual(a, 1)", true),
            (
                "def test_a():\n    assert f()",
                "@unittest.skip('later')\ndef test_a():\n    assert f()",
                true,
            ),
            ("assert f() == 1", "assert f() == 2", false),
            ("assert f() == 1", "assert f() == 1\nassert g() == 2", false),
            ("", "def test_new():\n    assert new() == 3", false),
        ];
        for (old, new, want) in cases {
            assert_eq!(weakens(old, new).is_some(), *want, "{old:?} -> {new:?}");
        }
        let patch = "*** Begin Patch\n*** Update File: tests/test_a.py\n@@\n-    assert f() == 1\n+    pass\n*** Update File: tests/test_b.py\n@@\n+    assert g() == 2\n*** Delete File: tests/test_c.py\n*** Update File: src/a.py\n-    assert x\n*** End Patch\n";
        assert_eq!(
            patch_test_edits(patch),
            [
                (
                    "tests/test_a.py".to_string(),
                    "patch tests/test_a.py (1 -> 0 assertions)".to_string()
                ),
                ("tests/test_c.py".to_string(), "delete tests/test_c.py".to_string()),
            ]
        );
    }

    #[test]
    fn lines_are_sorted_before_they_are_parsed() {
        use Triage::*;
        let cases: &[(Source, &str, Triage)] = &[
            (Source::Claude, r#"{"type":"progress","data":{"type":"hook_progress"}}"#, Skip),
            (
                Source::Claude,
                r#"{"type":"user","message":{"content":[{"type":"tool_result","content":"ok","is_error":false}]}}"#,
                Skip,
            ),
            (
                Source::Claude,
                r#"{"type":"user","message":{"content":[{"type":"tool_result","content":"x","is_error":true}]}}"#,
                Parse,
            ),
            (Source::Claude, r#"{"type":"user","message":{"content":"make it pass"}}"#, Parse),
            (Source::Claude, r#"{"type":"assistant","message":{}}"#, Parse),
            (Source::Claude, r#"{"type":"user", broken"#, Parse),
            (
                Source::Codex,
                r#"{"timestamp":"2026-09-03T08:00:01.000Z","type":"compacted","payload":{"message":""}}"#,
                Compaction(Some(1_788_422_401_000)),
            ),
            (
                Source::Codex,
                r#"{"type":"response_item","payload":{"type":"reasoning","summary":[]}}"#,
                Skip,
            ),
            (
                Source::Codex,
                r#"{"type":"response_item","payload":{"type":"function_call_output","call_id":"c"}}"#,
                Parse,
            ),
            (
                Source::Codex,
                r#"{"type":"event_msg","payload":{"type":"agent_message","message":"hi"}}"#,
                Skip,
            ),
            (
                Source::Codex,
                r#"{"type":"event_msg","payload":{"type":"token_count","info":null}}"#,
                Parse,
            ),
        ];
        for (source, line, want) in cases {
            assert_eq!(&triage(line.as_bytes(), *source), want, "{line}");
        }
    }

    #[test]
    fn test_paths_table() {
        let cases = [
            ("tests/test_durations.py", true),
            ("/repo/tests/helpers.py", true),
            ("src/parser_test.go", true),
            ("web/app.test.ts", true),
            ("spec/models/user_spec.rb", true),
            ("conftest.py", true),
            ("test_x.py", true),
            ("src/contest.py", false),
            ("src/testing.rs", false),
            ("latest/notes.md", false),
            ("README.md", false),
            ("", false),
        ];
        for (p, want) in cases {
            assert_eq!(is_test_path(p), want, "{p}");
        }
    }

    #[test]
    fn shell_reads_and_test_edits_table() {
        assert_eq!(shell_read("cat src/lib.rs").as_deref(), Some("src/lib.rs"));
        assert_eq!(shell_read("sed -n '1,200p' src/lib.rs").as_deref(), Some("src/lib.rs"));
        assert_eq!(shell_read("nl -ba src/a.py").as_deref(), Some("src/a.py"));
        assert_eq!(shell_read("cat a | grep x"), None);
        assert_eq!(shell_read("sed -i s/a/b/ f"), None);
        assert_eq!(shell_read("ls src"), None);
        let e = |c: &str| shell_test_edit(c);
        assert_eq!(e("rm tests/test_a.py"), Some(("tests/test_a.py".into(), "rm".into())));
        assert_eq!(e("cd x && git rm -q tests/t.py"), Some(("tests/t.py".into(), "git rm".into())));
        assert_eq!(
            e("sed -i 's/9/8/' tests/test_a.py"),
            Some(("tests/test_a.py".into(), "sed -i".into()))
        );
        assert_eq!(
            e("echo pass > tests/test_a.py"),
            Some(("tests/test_a.py".into(), "redirect".into()))
        );
        assert_eq!(e("python3 -m unittest tests/test_a.py"), None);
        assert_eq!(e("cat tests/test_a.py > /tmp/copy"), None);
        assert_eq!(e("rm -rf build"), None);
    }

    #[test]
    fn error_lines_drop_the_exit_header() {
        assert_eq!(
            error_line("Exit code 127\n/bin/bash: line 1: python: command not found"),
            "/bin/bash: line 1: python: command not found"
        );
        assert_eq!(
            error_line("<tool_use_error>File does not exist.</tool_use_error>"),
            "File does not exist."
        );
        let (exit, body) = codex_exit(
            "Chunk ID: 4f2a\nWall time: 0.1 seconds\nProcess exited with code 2\nOriginal token count: 9\nOutput:\nmake: *** No rule to make target 'tset'.  Stop.\n",
        );
        assert_eq!(exit, Some(2));
        assert_eq!(error_line(&body), "make: *** No rule to make target 'tset'.  Stop.");
        let (exit, body) =
            codex_exit(r#"{"output":"boom\n","metadata":{"exit_code":1,"duration_seconds":0.2}}"#);
        assert_eq!((exit, body.as_str()), (Some(1), "boom\n"));
        assert_eq!(codex_exit("Exit code: 0\nWall time: 1s\nOutput:\nok").0, Some(0));
        assert!(is_denial(
            "Claude requested permissions to use Bash, but you haven't granted it yet."
        ));
        assert!(is_denial("touch: cannot touch 'x': Read-only file system"));
        assert!(is_denial("exec command rejected by user"));
        assert!(is_denial("patch rejected by user"));
        assert!(!is_denial("No such file or directory"));
    }
}
