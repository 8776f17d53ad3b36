//! Claude Code's command hooks, as the fake agent runs them (formats/claude-code.md §5): the
//! handlers come from the settings files Claude Code reads, not from the scenario, so that
//! `kit hook install` is what makes `kit hook claude` run — as with the real agent.
//!
//! Settings read, in this order, entries merging across them (§5.1): `<config>/settings.json`
//! (`<config>` = the first entry of `$CLAUDE_CONFIG_DIR`, else `~/.claude`), then
//! `<project>/.claude/settings.json` and `<project>/.claude/settings.local.json`, where
//! `<project>` is the git top level of the working directory (else the directory itself). A
//! missing file counts as empty; one that is not valid JSON is skipped with a note on stderr, as
//! Claude Code reports a broken settings file and goes on.
//!
//! Matchers (§5.1): omitted, `""` or `"*"` match everything; letters, digits, `_`, `-`, spaces,
//! `,` and `|` form an exact list; anything else is an unanchored regex. They apply to the tool
//! name (`PreToolUse`, `PostToolUse`), `source` (`SessionStart`) and `trigger` (`PreCompact`);
//! other events take no matcher. Identical commands run once.
//!
//! Each handler is `sh -c command` in the working directory, the event JSON on stdin,
//! `CLAUDE_PROJECT_DIR` and `CLAUDECODE=1` in its environment, killed after its `timeout`
//! (seconds; default 600, 30 for `UserPromptSubmit`). Claude Code runs matching handlers in
//! parallel; the fake runs them one after the other, in settings order, so that its transcript
//! is deterministic. Output (§5.4–5.5): exit 0 with stdout starting with `{` is JSON
//! (`hookSpecificOutput.additionalContext`, `decision:"block"` + `reason`); plain stdout is
//! context for `UserPromptSubmit` and `SessionStart` only; exit 2 blocks with the JSON `reason`,
//! else stderr; any other status is a non-blocking error.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

/// One command handler from a settings file.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Handler {
    /// The shell command (`sh -c`).
    pub command: String,
    /// Longest it may run.
    pub timeout: Duration,
}

/// What the handlers of one event said.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Reply {
    /// Text given to Claude (`additionalContext`, plain stdout where it counts, a Stop's block
    /// reason), one entry per handler that gave some.
    pub context: Vec<String>,
    /// The block reason when a handler blocked (`decision:"block"` or exit 2).
    pub blocked: Option<String>,
    /// Everything the handlers printed on stdout, in order.
    pub stdout: String,
    /// Handlers that failed (exit status other than 0 and 2, a timeout, a failed start).
    pub errors: Vec<String>,
}

/// The settings files Claude Code would read for a session in `cwd`, in merge order.
pub(super) fn settings_files(cwd: &Path) -> Vec<PathBuf> {
    let project = git_toplevel(cwd).unwrap_or_else(|| cwd.to_path_buf());
    vec![
        super::session::config_root().join("settings.json"),
        project.join(".claude/settings.json"),
        project.join(".claude/settings.local.json"),
    ]
}

/// The project folder (`CLAUDE_PROJECT_DIR`): the git top level of `cwd`, else `cwd`.
pub(super) fn project_dir(cwd: &Path) -> PathBuf {
    git_toplevel(cwd).unwrap_or_else(|| cwd.to_path_buf())
}

/// The handlers configured for `event` whose matcher accepts `subject` (the tool name, source
/// or trigger; `None` for events that take no matcher), read from `files`. Returns the handlers
/// and one note per settings file that could not be used.
pub(super) fn configured(
    files: &[PathBuf],
    event: &str,
    subject: Option<&str>,
) -> (Vec<Handler>, Vec<String>) {
    let mut handlers: Vec<Handler> = Vec::new();
    let mut notes = Vec::new();
    for file in files {
        let text = match std::fs::read_to_string(file) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                notes.push(format!("{}: {e}; its hooks are skipped", file.display()));
                continue;
            }
        };
        if text.trim().is_empty() {
            continue;
        }
        let settings: Value = match serde_json::from_str(&text) {
            Ok(v) => v,
            Err(e) => {
                notes.push(format!(
                    "{}:{}:{}: not valid JSON ({e}); its hooks are skipped",
                    file.display(),
                    e.line(),
                    e.column()
                ));
                continue;
            }
        };
        let groups = settings.pointer(&format!("/hooks/{event}")).and_then(Value::as_array);
        for group in groups.into_iter().flatten() {
            let matcher = group.get("matcher").and_then(Value::as_str).unwrap_or("");
            if let Some(subject) = subject {
                if !matches(matcher, subject) {
                    continue;
                }
            }
            let list = group.get("hooks").and_then(Value::as_array);
            for h in list.into_iter().flatten() {
                if h.get("type").and_then(Value::as_str).unwrap_or("command") != "command" {
                    continue;
                }
                let Some(command) = h.get("command").and_then(Value::as_str) else { continue };
                let timeout = h
                    .get("timeout")
                    .and_then(Value::as_f64)
                    .filter(|t| *t > 0.0)
                    .map_or(default_timeout(event), Duration::from_secs_f64);
                if handlers.iter().all(|x| x.command != command) {
                    handlers.push(Handler { command: command.to_string(), timeout });
                }
            }
        }
    }
    (handlers, notes)
}

/// Claude Code's default command-hook timeout for `event` (formats §5.1, 2026 docs).
fn default_timeout(event: &str) -> Duration {
    Duration::from_secs(if event == "UserPromptSubmit" { 30 } else { 600 })
}

/// Does `matcher` accept `subject`? (formats §5.1)
pub(super) fn matches(matcher: &str, subject: &str) -> bool {
    if matcher.is_empty() || matcher == "*" {
        return true;
    }
    let exact_list = matcher.chars().all(|c| c.is_ascii_alphanumeric() || "_- ,|".contains(c));
    if exact_list {
        return matcher.split(['|', ',']).map(str::trim).any(|m| m == subject);
    }
    regex::Regex::new(matcher).is_ok_and(|re| re.is_match(subject))
}

/// Run `handlers` for `event` with `input` (the event JSON) on their stdin, in `cwd`.
pub(super) fn run(handlers: &[Handler], event: &str, input: &Value, cwd: &Path) -> Reply {
    let mut reply = Reply::default();
    let stdin = input.to_string();
    let project = project_dir(cwd);
    for h in handlers {
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(&h.command)
            .current_dir(cwd)
            .env("CLAUDE_PROJECT_DIR", &project)
            .env("CLAUDECODE", "1");
        let ran = match run_one(cmd, stdin.as_bytes(), h.timeout) {
            Ok(r) => r,
            Err(e) => {
                reply.errors.push(format!("{event} hook `{}`: {e}", h.command));
                continue;
            }
        };
        reply.stdout.push_str(&ran.stdout);
        let json: Option<Value> = ran
            .stdout
            .trim_start()
            .starts_with('{')
            .then(|| serde_json::from_str(ran.stdout.trim()).ok())
            .flatten();
        let reason = json.as_ref().and_then(|j| j.get("reason")).and_then(Value::as_str);
        match ran.code {
            Some(0) => {
                if let Some(j) = &json {
                    if j.get("decision").and_then(Value::as_str) == Some("block") {
                        reply.blocked = Some(reason.unwrap_or("").to_string());
                    }
                    let extra =
                        j.pointer("/hookSpecificOutput/additionalContext").and_then(Value::as_str);
                    if let Some(text) = extra {
                        reply.context.push(text.to_string());
                    } else if event == "Stop" && reply.blocked.is_some() {
                        // A blocked Stop: Claude continues with the reason.
                        reply.context.push(reason.unwrap_or("").to_string());
                    }
                } else if matches!(event, "UserPromptSubmit" | "SessionStart")
                    && !ran.stdout.trim().is_empty()
                {
                    reply.context.push(ran.stdout.trim_end().to_string());
                }
            }
            Some(2) => {
                let why = reason.map_or_else(|| ran.stderr.trim().to_string(), str::to_string);
                if matches!(event, "Stop" | "SubagentStop" | "PostToolUse" | "PreToolUse") {
                    // Claude sees it (formats §5.4).
                    reply.context.push(why.clone());
                }
                reply.blocked = Some(why);
            }
            other => {
                let status =
                    other.map_or("a timeout or signal".to_string(), |c| format!("exit {c}"));
                let first = ran.stderr.lines().next().unwrap_or("").to_string();
                reply.errors.push(format!("{event} hook error ({status}): {first}"));
            }
        }
    }
    reply
}

/// A finished handler.
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Run `cmd` with `input` on stdin, collecting stdout and stderr, killed after `limit` with
/// its own process group (whatever it started holds the pipes too).
fn run_one(mut cmd: Command, input: &[u8], limit: Duration) -> std::io::Result<Ran> {
    let how = crate::proc::Spawn { input: Some(input), merge: false, own_group: true };
    let done = crate::proc::spawn(&mut cmd, how)?.wait(limit, None)?;
    // A timed-out handler's output is discarded (formats §5.4).
    if done.timed_out {
        return Ok(Ran { code: None, stdout: String::new(), stderr: String::new() });
    }
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    Ok(Ran { code: done.code, stdout: text(&done.stdout), stderr: text(&done.stderr) })
}

/// The git top level holding `cwd` (a folder with `.git`), without running git.
fn git_toplevel(cwd: &Path) -> Option<PathBuf> {
    cwd.ancestors().find(|d| d.join(".git").exists()).map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matchers_as_claude_code_reads_them() {
        for (matcher, subject, yes) in [
            ("", "Bash", true),
            ("*", "Read", true),
            ("Bash", "Bash", true),
            ("Bash", "BashOutput", false),
            ("Write|Edit", "Edit", true),
            ("Write, Edit", "Edit", true),
            ("manual|auto", "auto", true),
            ("compact|resume", "startup", false),
            ("mcp__.*", "mcp__github__search", true),
            ("^Bas", "Bash", true),
            ("Notebook.*", "Read", false),
        ] {
            assert_eq!(matches(matcher, subject), yes, "{matcher:?} {subject:?}");
        }
    }

    #[test]
    fn handlers_merge_across_files_deduplicated_and_filtered() {
        let d = tempfile::tempdir().unwrap();
        let user = d.path().join("user.json");
        let project = d.path().join("project.json");
        let broken = d.path().join("broken.json");
        std::fs::write(
            &user,
            r#"{"hooks": {"PostToolUse": [
                {"matcher": "*", "hooks": [{"type": "command", "command": "kit hook claude", "timeout": 10}]},
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "only-bash"}]}
            ], "Stop": [{"hooks": [{"type": "command", "command": "kit hook claude"}]}]}}"#,
        )
        .unwrap();
        std::fs::write(
            &project,
            r#"{"model": "opus", "hooks": {"PostToolUse": [
                {"hooks": [{"type": "command", "command": "kit hook claude"},
                           {"type": "prompt", "prompt": "not a command"},
                           {"type": "command", "command": "lint"}]}
            ]}}"#,
        )
        .unwrap();
        std::fs::write(&broken, "{\"hooks\": ").unwrap();
        let files = [user, d.path().join("missing.json"), project, broken];
        let (hs, notes) = configured(&files, "PostToolUse", Some("Read"));
        let cmds: Vec<&str> = hs.iter().map(|h| h.command.as_str()).collect();
        assert_eq!(cmds, ["kit hook claude", "lint"]);
        assert_eq!(hs[0].timeout, Duration::from_secs(10));
        assert_eq!(hs[1].timeout, Duration::from_secs(600));
        assert_eq!(notes.len(), 1);
        assert!(notes[0].contains("broken.json:1:") && notes[0].contains("skipped"), "{notes:?}");
        let (hs, _) = configured(&files, "PostToolUse", Some("Bash"));
        assert_eq!(hs.len(), 3);
        let (hs, _) = configured(&files, "UserPromptSubmit", None);
        assert!(hs.is_empty());
    }

    #[test]
    fn replies_follow_the_exit_code_and_json_rules() {
        let d = tempfile::tempdir().unwrap();
        let h = |c: &str| Handler { command: c.into(), timeout: Duration::from_secs(60) };
        let input = serde_json::json!({"hook_event_name": "Stop"});
        let block = r#"echo '{"decision": "block", "reason": "save the handoff first"}'"#;
        let r = run(&[h(block)], "Stop", &input, d.path());
        assert_eq!(r.blocked.as_deref(), Some("save the handoff first"));
        assert_eq!(r.context, ["save the handoff first"]);
        let r = run(&[h("echo stop here >&2; exit 2")], "Stop", &input, d.path());
        assert_eq!(r.blocked.as_deref(), Some("stop here"));
        let r = run(&[h("echo oops >&2; exit 1")], "Stop", &input, d.path());
        assert_eq!((r.blocked, r.context.len()), (None, 0));
        assert!(r.errors[0].contains("exit 1") && r.errors[0].contains("oops"), "{:?}", r.errors);
        let ctx = r#"echo '{"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "checkpoint now"}}'"#;
        let r = run(&[h(ctx), h("echo plain")], "PostToolUse", &input, d.path());
        assert_eq!(r.context, ["checkpoint now"]);
        assert!(r.stdout.contains("plain"));
        let r = run(&[h("echo plain")], "SessionStart", &input, d.path());
        assert_eq!(r.context, ["plain"]);
        // A handler past its timeout is killed with what it started; its output is discarded.
        let slow =
            Handler { command: "echo early; sleep 60".into(), timeout: Duration::from_millis(300) };
        let r = run(&[slow], "Stop", &input, d.path());
        assert!(r.stdout.is_empty() && r.errors[0].contains("timeout"), "{r:?}");
        // The event JSON really is on stdin, and the environment says it is Claude Code.
        let r = run(&[h("cat; echo \" $CLAUDECODE\"")], "Stop", &input, d.path());
        assert!(r.stdout.contains("\"hook_event_name\":\"Stop\"") && r.stdout.ends_with(" 1\n"));
    }
}
