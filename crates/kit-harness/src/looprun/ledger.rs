//! After each iteration the loop adds the agent's API calls to the ledger
//! ([`crate::transcript::ledger`], issue 24), so that a loop's spend stays in the user's totals
//! after Claude Code deletes its transcripts. The calls are read from the transcript the agent
//! wrote, by the engine `kit measure` uses (not from the stream the cost cap follows), so a
//! call has the same key in the ledger and in its transcript and is never counted twice:
//!
//! - Claude Code (and the fake agent): the `session_id` of the stream's `system`/`init` lines,
//!   its transcript found under the Claude roots with its subagents;
//! - Codex: the stream's `thread.started` `thread_id`, its rollout under `$CODEX_HOME/sessions`.
//!
//! A command line is read as Claude Code. A failure to write the ledger never stops the loop: the
//! iteration prints a warning, and `kit measure --ledger` adds the calls later.
//!
//! Each call is kept with the transcript root it was read from (the `$CLAUDE_CONFIG_DIR` or
//! `$CODEX_HOME` the loop ran with), and counts only in a measurement of that root. The fake
//! agent is no exception: a course lab's loop, its `export` line in force, writes its calls to
//! the learner's ledger as a real agent would, and they complete the lab's `kit measure` (as the
//! golden `loop_adds_each_iteration_to_the_ledger` shows), never the learner's own.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use serde_json::Value;

use super::agent::{self, AgentSpec};
use crate::error::Result;
use crate::prices::PriceTable;
use crate::transcript::ledger::{self, Appended, SessionRef};
use crate::transcript::EngineOptions;

/// Add the calls of the sessions the agent's log `log` names to the ledger (priced, for the
/// ledger's `usd`, by `prices`). None when the log names no session or its transcript is not
/// found.
///
/// Errors: the ledger's folder cannot be named or written, or a transcript cannot be read.
pub(super) fn record(
    spec: &AgentSpec,
    log: &Path,
    prices: &PriceTable,
) -> Result<Option<Appended>> {
    let sessions: Vec<SessionRef> = if spec.is_codex() {
        agent::codex_thread_id(log)
            .and_then(|id| agent::codex_rollout(&agent::codex_home()?, &id))
            .map(SessionRef::Codex)
            .into_iter()
            .collect()
    } else {
        claude_sessions(log).into_iter().map(SessionRef::Claude).collect()
    };
    if sessions.is_empty() {
        return Ok(None);
    }
    let dir = ledger::default_dir()?;
    let engine = EngineOptions { prices, ..EngineOptions::standard() };
    let now = crate::clock::now().as_millisecond();
    let done = ledger::record_sessions(&dir, &sessions, engine, now)?;
    Ok((done.added + done.present > 0).then_some(done))
}

/// The session ids of a Claude Code stream-json log's `system`/`init` lines, in order, once
/// each. A session id is used as a file name: one with a `/` or starting with `.` is passed over.
fn claude_sessions(log: &Path) -> Vec<String> {
    let Ok(f) = File::open(log) else { return vec![] };
    let mut ids: Vec<String> = vec![];
    for line in BufReader::new(f).split(b'\n').map_while(|l| l.ok()) {
        let Ok(v) = serde_json::from_slice::<Value>(&line) else { continue };
        let field = |k: &str| v.get(k).and_then(Value::as_str);
        if field("type") != Some("system") || field("subtype") != Some("init") {
            continue;
        }
        if let Some(id) = field("session_id") {
            let safe = !id.is_empty() && !id.contains('/') && !id.starts_with('.');
            if safe && !ids.iter().any(|i| i == id) {
                ids.push(id.to_string());
            }
        }
    }
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_come_from_init_lines_once_each() {
        let d = tempfile::tempdir().unwrap();
        let log = d.path().join("agent.log");
        let lines = [
            r#"{"type":"system","subtype":"init","session_id":"s-1","model":"m"}"#,
            r#"{"type":"assistant","session_id":"s-1","message":{}}"#,
            "not json",
            r#"{"type":"system","subtype":"init","session_id":"s-1"}"#,
            r#"{"type":"system","subtype":"init","session_id":"../etc"}"#,
            r#"{"type":"system","subtype":"init","session_id":"s-2"}"#,
        ];
        std::fs::write(&log, lines.join("\n")).unwrap();
        assert_eq!(claude_sessions(&log), ["s-1", "s-2"]);
        assert!(claude_sessions(&d.path().join("none")).is_empty());
    }
}
