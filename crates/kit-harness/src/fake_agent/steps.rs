//! Performing a scenario's steps on the working tree, each recorded as the API call and tool
//! call Claude Code would have made for it (`Write`, `Edit`, `Read`, `Bash`).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

use crate::error::{Error, Result};

use super::hooks;
use super::scenario::Step;
use super::session::Session;

/// How an invocation ended.
pub(super) struct Ending {
    /// The final answer (the `result` text).
    pub text: String,
    /// The process exit status.
    pub code: u8,
    /// How it ends besides a plain `result`.
    pub how: How,
}

/// How an invocation ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum How {
    /// The `result` event.
    Result,
    /// The usage limit (`limit` step): reset this many minutes from now.
    Limit(u64),
    /// A crash by this signal (`crash` step).
    Crash(i32),
}

/// Runs steps against one working directory, holding what must outlive a step (memory).
pub(super) struct Runner<'a> {
    session: &'a mut Session,
    cwd: PathBuf,
    invocation: u64,
    /// Text said since the last API call; it leads the next one.
    said: Vec<String>,
    /// Memory held until the process exits (`allocate`).
    held: Vec<Vec<u8>>,
    /// What the last `hook` step's handlers printed and gave Claude (for `if_hook_said`).
    hook_reply: String,
    /// The last tool call: (tool_use id, tool name, tool input), for `PostToolUse`.
    last_tool: Option<(String, String, Value)>,
    /// The prompt this invocation received (`save_prompt`).
    prompt: String,
}

impl<'a> Runner<'a> {
    /// A runner for `session` in `cwd`, invocation `invocation`, given `prompt`.
    pub(super) fn new(session: &'a mut Session, cwd: &Path, invocation: u64, prompt: &str) -> Self {
        Runner {
            session,
            cwd: cwd.to_path_buf(),
            invocation,
            said: Vec::new(),
            held: Vec::new(),
            hook_reply: String::new(),
            last_tool: None,
            prompt: prompt.to_string(),
        }
    }

    /// Run `steps` in order, then the final answer. `otherwise` is the answer when nothing was
    /// said.
    pub(super) fn run(&mut self, steps: &[Step], otherwise: &str) -> Result<Ending> {
        for step in steps {
            match step {
                Step::Exit { code } => return self.answer(otherwise, *code),
                Step::Limit { reset_minutes } => {
                    return Ok(Ending {
                        text: String::new(),
                        code: 1,
                        how: How::Limit(*reset_minutes),
                    })
                }
                Step::Crash { signal } => {
                    return Ok(Ending { text: String::new(), code: 1, how: How::Crash(*signal) })
                }
                _ => {}
            }
            self.step(step)?;
        }
        self.answer(otherwise, 0)
    }

    fn answer(&mut self, otherwise: &str, code: u8) -> Result<Ending> {
        let text =
            if self.said.is_empty() { otherwise.to_string() } else { self.said.join("\n\n") };
        self.said.clear();
        self.session.api_call(&[json!({"type": "text", "text": text})], "end_turn")?;
        // Memory stays held until here: the process is about to end.
        self.held.clear();
        Ok(Ending { text, code, how: How::Result })
    }

    fn fill(&self, s: &str) -> String {
        s.replace("{{invocation}}", &self.invocation.to_string())
            .replace("{{cwd}}", &self.cwd.to_string_lossy())
    }

    fn step(&mut self, step: &Step) -> Result<()> {
        match step {
            Step::Print { text } => {
                let t = self.fill(text);
                self.said.push(t);
                Ok(())
            }
            Step::Write { path, content } => self.write(&self.fill(path), &self.fill(content)),
            Step::Patch { path, find, replace } => {
                self.patch(&self.fill(path), &self.fill(find), &self.fill(replace))
            }
            Step::Delete { path } => {
                let path = self.fill(path);
                let full = self.cwd.join(&path);
                self.bash(&format!("rm {path}"), "Remove the file", |_| {
                    let err = std::fs::remove_file(&full).err();
                    (String::new(), err.map(|e| format!("rm: cannot remove '{path}': {e}")))
                })
            }
            Step::Rename { from, to } => {
                let (from, to) = (self.fill(from), self.fill(to));
                let (a, b) = (self.cwd.join(&from), self.cwd.join(&to));
                self.bash(&format!("mv {from} {to}"), "Rename the file", |_| {
                    let err = std::fs::rename(&a, &b).err();
                    (String::new(), err.map(|e| format!("mv: cannot move '{from}' to '{to}': {e}")))
                })
            }
            Step::Run { command, if_hook_said } => {
                if if_hook_said.as_ref().is_some_and(|t| !self.hook_reply.contains(t.as_str())) {
                    return Ok(());
                }
                let command = self.fill(command);
                self.bash(&command, "Run the command", |cwd| run_shell(cwd, &command))
            }
            Step::Hook { event, command, stop_hook_active } => {
                let command = command.as_ref().map(|c| self.fill(c));
                self.hook(event, command.as_deref(), *stop_hook_active)
            }
            Step::Sleep { seconds, until } => {
                let d = Duration::from_secs_f64(seconds.max(0.0));
                let id = self.call_tool(
                    "Bash",
                    json!({"command": format!("sleep {seconds}"), "description": "Wait", "timeout": 600000}),
                )?;
                match until {
                    None => std::thread::sleep(d),
                    Some(path) => {
                        let file = self.cwd.join(self.fill(path));
                        let end = std::time::Instant::now() + d;
                        while !file.exists() && std::time::Instant::now() < end {
                            std::thread::sleep(Duration::from_millis(20).min(d));
                        }
                    }
                }
                self.session.pass(d);
                self.session.tool_result(&id, "", false, bash_result("", ""))
            }
            Step::Allocate { mb, step_mb, pause_ms, hold_seconds } => {
                self.allocate(*mb, *step_mb, *pause_ms, *hold_seconds)
            }
            Step::Spawn { command, detach } => self.spawn(&self.fill(command), *detach),
            Step::IgnoreSigterm {} => ignore_sigterm(),
            Step::SavePrompt { path } => {
                let file = self.cwd.join(self.fill(path));
                if let Some(dir) = file.parent() {
                    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
                }
                std::fs::write(&file, &self.prompt).map_err(|e| Error::io(&file, e))
            }
            Step::GrowContext { to_pct, calls, compaction_point, path } => {
                self.grow(*to_pct, *calls, *compaction_point, &self.fill(path))
            }
            Step::Spend { calls, usd, pause_ms, path } => {
                self.spend(*calls, *usd, *pause_ms, &self.fill(path))
            }
            Step::Exit { .. } | Step::Limit { .. } | Step::Crash { .. } => Ok(()),
        }
    }

    /// One API call made of what was said so far and one tool_use; returns the tool_use id.
    fn call_tool(&mut self, name: &str, input: Value) -> Result<String> {
        let id = self.session.tool_id();
        let mut blocks: Vec<Value> =
            self.said.drain(..).map(|t| json!({"type": "text", "text": t})).collect();
        blocks.push(json!({"type": "tool_use", "id": id, "name": name, "input": input}));
        self.session.api_call(&blocks, "tool_use")?;
        self.last_tool = Some((id.clone(), name.to_string(), input));
        Ok(id)
    }

    fn write(&mut self, path: &str, content: &str) -> Result<()> {
        let abs = self.session.abs(path);
        let id = self.call_tool("Write", json!({"file_path": abs, "content": content}))?;
        let full = self.cwd.join(path);
        let existed = full.exists();
        let res = full
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|_| std::fs::write(&full, content));
        self.session.pass(Duration::from_millis(30));
        match res {
            Ok(()) => {
                let (kind, text) = if existed {
                    ("update", format!("The file {abs} has been updated."))
                } else {
                    ("create", format!("File created successfully at: {abs}"))
                };
                let r = json!({"type": kind, "filePath": abs, "content": content, "structuredPatch": [], "originalFile": null});
                self.session.tool_result(&id, &text, false, r)
            }
            Err(e) => {
                let text = format!("<tool_use_error>{e}</tool_use_error>");
                self.session.tool_result(&id, &text, true, json!(format!("Error: {e}")))
            }
        }
    }

    fn patch(&mut self, path: &str, find: &str, replace: &str) -> Result<()> {
        let abs = self.session.abs(path);
        let input = json!({"file_path": abs, "old_string": find, "new_string": replace, "replace_all": false});
        let id = self.call_tool("Edit", input)?;
        let full = self.cwd.join(path);
        self.session.pass(Duration::from_millis(30));
        let original = match std::fs::read_to_string(&full) {
            Ok(t) => t,
            Err(_) => {
                let text = "<tool_use_error>File does not exist.</tool_use_error>";
                return self.session.tool_result(
                    &id,
                    text,
                    true,
                    json!("Error: File does not exist."),
                );
            }
        };
        if !original.contains(find) {
            let text = "<tool_use_error>String to replace not found in file.\nString: ".to_string()
                + find
                + "</tool_use_error>";
            return self.session.tool_result(
                &id,
                &text,
                true,
                json!("Error: String to replace not found in file."),
            );
        }
        let updated = original.replacen(find, replace, 1);
        if let Err(e) = std::fs::write(&full, &updated) {
            let text = format!("<tool_use_error>{e}</tool_use_error>");
            return self.session.tool_result(&id, &text, true, json!(format!("Error: {e}")));
        }
        let r = json!({"filePath": abs, "oldString": find, "newString": replace, "originalFile": original, "structuredPatch": [], "userModified": false, "replaceAll": false});
        self.session.tool_result(&id, &format!("The file {abs} has been updated."), false, r)
    }

    /// A `Bash` tool call: record the call, perform `effect` (its output and, if it failed, the
    /// error text), record the result.
    fn bash(
        &mut self,
        command: &str,
        what: &str,
        effect: impl FnOnce(&Path) -> (String, Option<String>),
    ) -> Result<()> {
        let id = self.call_tool("Bash", json!({"command": command, "description": what}))?;
        let (stdout, err) = effect(&self.cwd);
        // Modelled as 300 ms under a fake clock, so that the output stays deterministic.
        self.session.pass(Duration::from_millis(300));
        match err {
            None => self.session.tool_result(&id, &stdout, false, bash_result(&stdout, "")),
            Some(e) => {
                let text = format!("Error: {e}");
                self.session.tool_result(&id, &text, true, bash_result(&stdout, &e))
            }
        }
    }

    /// A hook event: run the handlers configured for it (or `command`) with the event JSON on
    /// stdin, as Claude Code does (see `hooks.rs`); record the context they give Claude.
    fn hook(&mut self, event: &str, command: Option<&str>, stop_hook_active: bool) -> Result<()> {
        let mut input = json!({
            "session_id": self.session.session_id(),
            "transcript_path": self.session.transcript(),
            "cwd": self.session.cwd_str(),
            "hook_event_name": event,
            "permission_mode": self.session.permission_mode(),
        });
        let mut subject = None;
        if matches!(event, "PreToolUse" | "PostToolUse") {
            if let Some((id, name, tool_input)) = &self.last_tool {
                input["tool_name"] = json!(name);
                input["tool_input"] = tool_input.clone();
                input["tool_use_id"] = json!(id);
                if event == "PostToolUse" {
                    input["tool_response"] =
                        self.session.last_tool_result(id).cloned().unwrap_or(Value::Null);
                }
                subject = Some(name.clone());
            }
        }
        match event {
            "Stop" | "SubagentStop" => input["stop_hook_active"] = json!(stop_hook_active),
            "SessionStart" => {
                input["source"] = json!("startup");
                subject = Some("startup".into());
            }
            "PreCompact" => {
                input["trigger"] = json!("auto");
                input["custom_instructions"] = json!("");
                subject = Some("auto".into());
            }
            "UserPromptSubmit" => input["prompt"] = json!(""),
            _ => {}
        }
        let handlers = match command {
            Some(c) => vec![hooks::Handler {
                command: c.to_string(),
                timeout: std::time::Duration::from_secs(600),
            }],
            None => {
                let files = hooks::settings_files(&self.cwd);
                let (handlers, notes) = hooks::configured(&files, event, subject.as_deref());
                for n in notes {
                    eprintln_note(&n);
                }
                handlers
            }
        };
        let reply = hooks::run(&handlers, event, &input, &self.cwd);
        for e in &reply.errors {
            eprintln_note(e);
        }
        self.hook_reply = reply.stdout.clone();
        for text in &reply.context {
            self.hook_reply.push('\n');
            self.hook_reply.push_str(text);
            self.session.hook_context(event, text)?;
        }
        Ok(())
    }

    fn allocate(&mut self, mb: u64, step_mb: u64, pause_ms: u64, hold: f64) -> Result<()> {
        let step_mb = step_mb.max(1);
        let command = format!("python3 -c 'load the whole index: {mb} MB in {step_mb} MB steps'");
        let id =
            self.call_tool("Bash", json!({"command": command, "description": "Load the data"}))?;
        let mut total = 0;
        while total < mb {
            let n = step_mb.min(mb - total);
            // A non-zero fill writes every page, so the memory is resident, not just reserved.
            self.held.push(vec![0xA5u8; (n as usize) << 20]);
            total += n;
            std::thread::sleep(Duration::from_millis(pause_ms));
            self.session.pass(Duration::from_millis(pause_ms));
        }
        let hold = Duration::from_secs_f64(hold.max(0.0));
        std::thread::sleep(hold);
        self.session.pass(hold);
        let text = format!("loaded {total} MB");
        self.session.tool_result(&id, &text, false, bash_result(&text, ""))
    }

    fn spawn(&mut self, command: &str, detach: bool) -> Result<()> {
        let input = json!({"command": command, "description": "Start in the background", "run_in_background": true});
        let id = self.call_tool("Bash", input)?;
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(command)
            .current_dir(&self.cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if detach {
            new_session(&mut cmd);
        }
        let res = cmd.spawn();
        match res {
            Ok(child) => {
                // Not waited for: it outlives this call (and maybe this process).
                std::mem::forget(child);
                let text = "Command running in background with ID: bash_1";
                self.session.tool_result(&id, text, false, json!({"stdout": "", "stderr": "", "interrupted": false, "isImage": false, "backgroundTaskId": "bash_1"}))
            }
            Err(e) => {
                let text = format!("Error: {e}");
                self.session.tool_result(&id, &text, true, bash_result("", &text))
            }
        }
    }

    /// `calls` `Read` calls of `path`, each costing `usd`, `pause_ms` of real time before each
    /// (the API's latency: the events of one call are printed, then nothing until the next).
    ///
    /// Under `kit loop` (`KIT_RUN_KEY` set) each call after the first also waits until the loop
    /// has read the last one ([`ReadByLoop`]): the pause is then the time kit has to act on a
    /// call it has seen, however late a loaded machine let it read, so that "stopped within one
    /// API call" does not depend on the scheduler.
    fn spend(&mut self, calls: u32, usd: f64, pause_ms: u64, path: &str) -> Result<()> {
        let excerpt = read_excerpt(&self.cwd.join(path));
        let pause = Duration::from_millis(pause_ms);
        let watch = std::env::var_os("KIT_RUN_KEY")
            .and(self.session.metered_file())
            .and_then(|f| ReadByLoop::watch(&f));
        for i in 0..calls {
            if let Some(w) = watch.as_ref().filter(|_| i > 0) {
                w.wait(READ_BY_LOOP_PATIENCE);
            }
            std::thread::sleep(pause);
            if let Some(w) = &watch {
                w.drain();
            }
            self.session.pass(pause);
            self.session.bill_next(usd);
            let abs = self.session.abs(path);
            let id = self.call_tool("Read", json!({"file_path": abs}))?;
            let r = json!({"type": "text", "file": {"filePath": abs, "content": excerpt, "numLines": excerpt.lines().count(), "startLine": 1, "totalLines": excerpt.lines().count()}});
            self.session.tool_result(&id, &excerpt, false, r)?;
        }
        Ok(())
    }

    fn grow(&mut self, to_pct: f64, calls: u32, point: u64, path: &str) -> Result<()> {
        let calls = calls.max(1) as u64;
        let start = self.session.context();
        let point = if point > 0 {
            point
        } else {
            // The hook's rule, for the model this fake claims (no CLAUDE_* variables: the
            // fake's transcript is the same on every machine).
            crate::transcript::point::resolve(&crate::transcript::point::PointInputs {
                model: Some(self.session.model().to_string()),
                ..Default::default()
            })
            .tokens
        };
        let target = ((to_pct / 100.0) * point as f64).floor() as u64;
        let excerpt = read_excerpt(&self.cwd.join(path));
        for i in 1..=calls {
            let want = start + target.saturating_sub(start) * i / calls;
            self.session.aim_context(want);
            let abs = self.session.abs(path);
            let id = self.call_tool("Read", json!({"file_path": abs}))?;
            let r = json!({"type": "text", "file": {"filePath": abs, "content": excerpt, "numLines": excerpt.lines().count(), "startLine": 1, "totalLines": excerpt.lines().count()}});
            self.session.tool_result(&id, &excerpt, false, r)?;
        }
        Ok(())
    }
}

/// How long [`ReadByLoop::wait`] waits for the loop to read (a loop polls every 25 ms; a
/// stopped or starved one is given up on, and the calls go on at their pace).
const READ_BY_LOOP_PATIENCE: Duration = Duration::from_secs(30);

/// An inotify watch for reads of the file a loop meters this agent from: a read that returns
/// bytes raises `IN_ACCESS` (inotify(7)), a read at the end of the file none.
struct ReadByLoop {
    inotify: nix::sys::inotify::Inotify,
}

impl ReadByLoop {
    fn watch(file: &Path) -> Option<ReadByLoop> {
        use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
        let inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC).ok()?;
        inotify.add_watch(file, AddWatchFlags::IN_ACCESS).ok()?;
        Some(ReadByLoop { inotify })
    }

    /// Forget the reads seen so far (of what was written before).
    fn drain(&self) {
        while self.inotify.read_events().is_ok_and(|e| !e.is_empty()) {}
    }

    /// Wait until the file is read (since the last [`drain`](Self::drain)), at most `patience`.
    fn wait(&self, patience: Duration) {
        let until = std::time::Instant::now() + patience;
        while std::time::Instant::now() < until {
            if self.inotify.read_events().is_ok_and(|e| !e.is_empty()) {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// A note on stderr, as Claude Code reports a hook error or a broken settings file and goes on.
fn eprintln_note(msg: &str) {
    let _ = writeln!(std::io::stderr(), "fake-agent: {msg}");
}

/// Run `sh -c command` in `cwd`: (its output, the error text if it failed).
fn run_shell(cwd: &Path, command: &str) -> (String, Option<String>) {
    let out = match Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
    {
        Ok(o) => o,
        Err(e) => return (String::new(), Some(format!("cannot run sh: {e}"))),
    };
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    let text = text.trim_end().to_string();
    if out.status.success() {
        return (text, None);
    }
    let code = out.status.code().map_or("a signal".into(), |c| c.to_string());
    (text.clone(), Some(format!("Exit code {code}\n{text}")))
}

fn bash_result(stdout: &str, stderr: &str) -> Value {
    json!({"stdout": stdout, "stderr": stderr, "interrupted": false, "isImage": false})
}

/// The first lines of a file, numbered like the `Read` tool's output.
fn read_excerpt(path: &Path) -> String {
    let mut text = String::new();
    if let Ok(f) = std::fs::File::open(path) {
        let _ = f.take(2048).read_to_string(&mut text);
    }
    if text.is_empty() {
        return "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>".into();
    }
    text.lines().take(20).enumerate().map(|(i, l)| format!("{:>6}\t{l}\n", i + 1)).collect()
}

/// Make `cmd`'s child the leader of a new session (`setsid`), out of our process group.
#[allow(unsafe_code)]
fn new_session(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child before exec and calls only setsid(2), which
    // is async-signal-safe; it touches no memory shared with the parent.
    unsafe {
        cmd.pre_exec(|| nix::unistd::setsid().map(|_| ()).map_err(std::io::Error::from));
    }
}

/// Ignore SIGTERM from now on.
#[allow(unsafe_code)]
fn ignore_sigterm() -> Result<()> {
    use nix::sys::signal::{signal, SigHandler, Signal};
    // SAFETY: installing SIG_IGN runs no handler code, so no async-signal-safety rule applies.
    unsafe { signal(Signal::SIGTERM, SigHandler::SigIgn) }
        .map(|_| ())
        .map_err(|e| Error::internal(format!("cannot ignore SIGTERM: {e}")))
}
