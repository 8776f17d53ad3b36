//! `kit hook rehearse`: drive the real hook code ([`super::handle`]) through the three bands,
//! the Stop block and a compaction, with a synthetic transcript in a temporary folder, and print
//! what fired and why. Nothing is spent: no agent, no API call. The run checks itself: if the
//! hook does not fire exactly as DESIGN §10 says, it ends with an error.
//!
//! The compaction point is claude-opus-4-6's (167,000 tokens, the model of the synthetic
//! transcript): the user's `CLAUDE_*` variables and settings are not consulted, so the rehearsal
//! prints the same on every machine.

use std::io::Write;

use serde_json::{json, Value};

use super::{handle, Action, HookEnv, Outcome};
use crate::error::{Error, IoContext, Result, EXIT_OK};
use crate::units::thousands;

const MODEL: &str = "claude-opus-4-6";
const SESSION: &str = "00000000-0000-4000-8000-rehearsal000";

/// One scripted step: write a line to the transcript, then send an event.
struct Step {
    /// Context of the API call appended first (None: append nothing).
    context: Option<u64>,
    /// Append a compact_boundary line (after the call, if any).
    boundary: bool,
    /// The event JSON's name and extra fields.
    event: &'static str,
    extra: Value,
    /// The actions this step must produce.
    expect: &'static [Action],
}

/// Run the rehearsal, printing to `out`.
///
/// Errors: [`Error::Internal`] when a step does not fire as expected, or the temporary folder
/// cannot be written.
pub fn run(out: &mut dyn Write) -> Result<u8> {
    let dir = tempfile::tempdir()
        .map_err(|e| Error::internal(format!("cannot create a temporary folder: {e}")))?;
    let root = dir.path();
    let longrun = root.join(crate::longrun::DIR);
    crate::atomic::create_dir_all(&longrun)?;
    let transcript = root.join(format!("{SESSION}.jsonl"));
    std::fs::write(&transcript, "").at(&transcript)?;
    let no_vars = |_: &str| None;
    let env = HookEnv {
        now: crate::clock::now(),
        var: &no_vars,
        cwd: root.to_path_buf(),
        own_state_dir: crate::handoff::key::no_own_state_dir,
    };
    let point = super::compaction::resolve(0, &no_vars, Some(MODEL), 0, None);
    let w =
        |out: &mut dyn Write, s: String| writeln!(out, "{s}").map_err(|e| Error::io("stdout", e));
    w(out, "kit hook rehearse: the real hook, a synthetic transcript in a temporary folder; nothing is spent".into())?;
    w(
        out,
        format!(
            "compaction point {} tokens ({}); bands 50/70/85 %",
            thousands(point.tokens),
            point.source
        ),
    )?;
    w(out, String::new())?;
    let at = |pct: f64| (point.tokens as f64 * pct / 100.0).round() as u64;
    let steps = [
        Step {
            context: Some(at(24.0)),
            boundary: false,
            event: "UserPromptSubmit",
            extra: json!({"prompt": "go on"}),
            expect: &[],
        },
        Step {
            context: Some(at(49.0)),
            boundary: false,
            event: "PostToolUse",
            extra: bash("cargo test"),
            expect: &[],
        },
        Step {
            context: Some(at(50.0)),
            boundary: false,
            event: "PostToolUse",
            extra: bash("cargo test"),
            expect: &[Action::Checkpoint],
        },
        Step {
            context: Some(at(62.0)),
            boundary: false,
            event: "PostToolUse",
            extra: bash("cargo build"),
            expect: &[],
        },
        Step {
            context: Some(at(70.0)),
            boundary: false,
            event: "PostToolUse",
            extra: bash("git diff"),
            expect: &[Action::Handoff],
        },
        Step {
            context: Some(at(85.0)),
            boundary: false,
            event: "PostToolUse",
            extra: bash("cargo test"),
            expect: &[Action::WrapUp],
        },
        Step {
            context: Some(at(86.0)),
            boundary: false,
            event: "Stop",
            extra: json!({"stop_hook_active": false}),
            expect: &[Action::StopBlocked],
        },
        Step {
            context: None,
            boundary: false,
            event: "Stop",
            extra: json!({"stop_hook_active": true}),
            expect: &[Action::StopAllowed],
        },
        Step {
            context: None,
            boundary: false,
            event: "PreCompact",
            extra: json!({"trigger": "auto", "custom_instructions": ""}),
            expect: &[Action::Compaction],
        },
        Step {
            context: None,
            boundary: true,
            event: "PostToolUse",
            extra: bash("ls"),
            expect: &[],
        },
        Step {
            context: Some(at(22.0)),
            boundary: false,
            event: "PostToolUse",
            extra: bash("ls"),
            expect: &[],
        },
        Step {
            context: Some(at(51.0)),
            boundary: false,
            event: "PostToolUse",
            extra: bash("cargo test"),
            expect: &[Action::Checkpoint],
        },
    ];
    w(out, format!("{:<17} {:>9} {:>6}  what the hook did", "event", "context", "%"))?;
    // On a terminal the last column wraps at word boundaries under itself; piped, lines stay
    // whole (one line per event, for grep and goldens).
    let width = {
        use std::io::IsTerminal;
        std::io::stdout().is_terminal().then(crate::term::columns).flatten()
    };
    let mut failures = Vec::new();
    let mut n = 0u32;
    for step in &steps {
        if let Some(ctx) = step.context {
            n += 1;
            append(&transcript, &assistant_line(n, ctx))?;
        }
        if step.boundary {
            append(&transcript, &boundary_line(at(86.0)))?;
            w(
                out,
                format!(
                    "{:<17} {:>9} {:>6}  (transcript: auto compaction, compact_boundary written)",
                    "", "", ""
                ),
            )?;
        }
        let mut ev = json!({
            "session_id": SESSION,
            "transcript_path": transcript,
            "cwd": root,
            "hook_event_name": step.event,
        });
        if let (Some(obj), Some(extra)) = (ev.as_object_mut(), step.extra.as_object()) {
            obj.extend(extra.clone());
        }
        let o = handle(ev.to_string().as_bytes(), &env);
        let (ctx, pct) = match (o.context, o.pct) {
            (Some(c), Some(p)) => (thousands(c), format!("{p:.1}")),
            _ => ("–".into(), "–".into()),
        };
        let label = match step.extra.get("stop_hook_active") {
            Some(Value::Bool(true)) => format!("{} (again)", step.event),
            _ => step.event.to_string(),
        };
        w(out, hang(&format!("{label:<17} {ctx:>9} {pct:>6}  {}", describe(&o)), width))?;
        let got: Vec<Action> = o.firings.iter().map(|f| f.action).collect();
        if got != step.expect {
            failures.push(format!(
                "{label} at {pct}%: expected {:?}, the hook did {got:?}",
                step.expect
            ));
        }
    }
    w(out, String::new())?;
    if failures.is_empty() {
        w(out, "each band fired once, the Stop was blocked once and never twice, the compaction was not blocked, and the bands re-armed after it".into())?;
        Ok(EXIT_OK)
    } else {
        for f in &failures {
            w(out, format!("unexpected: {f}"))?;
        }
        Err(Error::internal(format!(
            "the hook rehearsal did not go as DESIGN §10 says ({} step(s))",
            failures.len()
        )))
    }
}

/// The width of the first three columns: where a wrapped last column goes on.
const LEFT: usize = 17 + 1 + 9 + 1 + 6 + 2;

/// `line` wrapped at word boundaries to `width` (none: as it is), continuation lines indented
/// to the last column.
fn hang(line: &str, width: Option<usize>) -> String {
    let Some(width) = width.filter(|w| *w > LEFT + 20) else { return line.to_string() };
    let mut out = String::new();
    let mut cur = String::new();
    for word in line.split(' ') {
        let len = console::measure_text_width(&cur);
        if len > LEFT && len + 1 + console::measure_text_width(word) > width {
            out.push_str(cur.trim_end());
            out.push('\n');
            cur = " ".repeat(LEFT);
        } else if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
    }
    out.push_str(&cur);
    out
}

fn bash(command: &str) -> Value {
    json!({"tool_name": "Bash", "tool_input": {"command": command}, "tool_response": {"stdout": "", "stderr": ""}})
}

fn describe(o: &Outcome) -> String {
    let reply = match &o.stdout {
        Some(v) if v.get("decision").is_some() => "replied decision \"block\" with a reason",
        Some(v) if v.get("hookSpecificOutput").is_some() => "replied additionalContext",
        Some(_) => "replied systemMessage",
        None => "",
    };
    if o.firings.is_empty() {
        return match &o.note {
            Some(n) if o.context.is_none() => format!("nothing ({n})"),
            _ => "nothing".into(),
        };
    }
    let fired: Vec<String> = o
        .firings
        .iter()
        .map(|f| match f.band {
            Some(b) => format!("{} ({b}%): {}", f.action.name(), f.why),
            None => format!("{}: {}", f.action.name(), f.why),
        })
        .collect();
    if reply.is_empty() {
        fired.join("; ")
    } else {
        format!("{}; {reply}", fired.join("; "))
    }
}

fn append(path: &std::path::Path, line: &str) -> Result<()> {
    crate::atomic::append_line(path, line).map(|_| ())
}

fn assistant_line(n: u32, context: u64) -> String {
    let read = context.saturating_sub(2_003);
    json!({
        "type": "assistant", "isSidechain": false, "sessionId": SESSION,
        "uuid": format!("00000000-0000-4000-8000-{n:012}"),
        "timestamp": crate::clock::now_rfc3339(),
        "requestId": format!("req_rehearsal{n:04}"),
        "message": {
            "model": MODEL, "id": format!("msg_rehearsal{n:04}"), "role": "assistant",
            "content": [{"type": "text", "text": "working"}],
            "usage": {"input_tokens": 3, "cache_creation_input_tokens": 2_000, "cache_read_input_tokens": read,
                      "cache_creation": {"ephemeral_5m_input_tokens": 2_000, "ephemeral_1h_input_tokens": 0},
                      "output_tokens": 120}
        }
    })
    .to_string()
}

fn boundary_line(pre: u64) -> String {
    json!({
        "type": "system", "subtype": "compact_boundary", "parentUuid": null, "sessionId": SESSION,
        "content": "Conversation compacted", "timestamp": crate::clock::now_rfc3339(),
        "compactMetadata": {"trigger": "auto", "preTokens": pre}
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_row_wraps_at_words_under_the_last_column() {
        let why = "checkpoint (50%): 50.0% ≥ 50% for the first time since the last compaction";
        let row = format!("{:<17} {:>9} {:>6}  {why}", "PostToolUse", "83,500", "50.0");
        assert_eq!(hang(&row, None), row);
        let got = hang(&row, Some(70));
        let lines: Vec<&str> = got.lines().collect();
        assert!(lines.len() > 1, "{got}");
        assert!(lines.iter().all(|l| console::measure_text_width(l) <= 70), "{got}");
        let indent = " ".repeat(LEFT);
        assert!(lines[1..].iter().all(|l| l.starts_with(&indent) && !l[LEFT..].starts_with(' ')));
        let words = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
        assert_eq!(words(&got), words(&row));
        assert!(got.starts_with("PostToolUse          83,500   50.0  checkpoint"), "{got}");
    }
}
