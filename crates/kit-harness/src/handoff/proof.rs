//! The transcript witness: the line `kit handoff save` prints, and the search of a session's
//! transcript for the Bash tool call that printed it.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::error::{IoContext, Result};

use super::*;

/// The stamp id in the output of `kit handoff save`: only from the exact line [`save`] prints,
/// `handoff saved: stamp <12 hex> (commit <hex>[, dirty], <N> files fingerprinted) in
/// longrun/handoff.md`, alone on its line (surrounding whitespace aside). Other mentions of a
/// stamp (an `echo`, prose) do not count.
pub fn stamp_in_output(text: &str) -> Option<String> {
    text.lines().find_map(saved_line_stamp)
}

fn saved_line_stamp(line: &str) -> Option<String> {
    let rest = line.trim().strip_prefix("handoff saved: stamp ")?;
    let (id, rest) = rest.split_at_checked(12)?;
    let hex = |s: &str| !s.is_empty() && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if !hex(id) {
        return None;
    }
    let rest = rest.strip_prefix(" (commit ")?;
    let (commit, rest) = rest.split_once([',', ')'])?;
    if !hex(commit) {
        return None;
    }
    let rest = rest.strip_prefix(" dirty,").unwrap_or(rest);
    let (n, rest) = rest.trim_start().split_once(' ')?;
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    (rest == format!("files fingerprinted) in {}/handoff.md", crate::longrun::DIR))
        .then(|| id.to_string())
}

/// Where a transcript proves a save.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Proof {
    /// The `tool_use` id of the call.
    pub tool_use_id: String,
    /// 1-based line of the tool_use.
    pub call_line: usize,
    /// 1-based line of its tool_result carrying the stamp id.
    pub result_line: usize,
}

/// Search the transcript at `path` for a Bash tool call that ran `kit handoff save` (as
/// [`runs_handoff_save`] recognises it) and whose result is not an error (`is_error: true`)
/// and carries the line `save` prints with `stamp` ([`stamp_in_output`]). Reads the file as a
/// stream with the transcript engine's line reader (bounded memory, `.jsonl.zst` decompressed,
/// [`crate::transcript::lines`]); damaged lines and lines over its cap are skipped.
///
/// Errors: [`crate::Error::Io`] when the file cannot be read.
pub fn prove_in_transcript(path: &Path, stamp: &str) -> Result<Option<Proof>> {
    use crate::transcript::lines::{self, Line, LineReader};
    let mut r = LineReader::new(lines::open(path)?, lines::MAX_LINE_BYTES);
    let mut calls: BTreeMap<String, usize> = BTreeMap::new();
    let save = memchr::memmem::Finder::new(b"handoff save");
    let stamp_f = memchr::memmem::Finder::new(stamp.as_bytes());
    loop {
        let (n, line) = match r.next_line().at(path)? {
            None => return Ok(None),
            Some(Line::TooLong { .. }) => continue,
            Some(Line::Text { no, bytes, .. }) => (no, bytes),
        };
        let has_save = save.find(line).is_some();
        let has_stamp = !calls.is_empty() && stamp_f.find(line).is_some();
        if !has_save && !has_stamp {
            continue;
        }
        let Ok(v) = serde_json::from_slice::<Value>(line) else { continue };
        let Some(blocks) = v.pointer("/message/content").and_then(Value::as_array) else {
            continue;
        };
        for b in blocks {
            match b.get("type").and_then(Value::as_str) {
                Some("tool_use") if has_save => {
                    if b.get("name").and_then(Value::as_str) != Some("Bash") {
                        continue;
                    }
                    let cmd = b.pointer("/input/command").and_then(Value::as_str).unwrap_or("");
                    if runs_handoff_save(cmd) {
                        if let Some(id) = b.get("id").and_then(Value::as_str) {
                            calls.insert(id.to_string(), n);
                        }
                    }
                }
                Some("tool_result") if has_stamp => {
                    let id = b.get("tool_use_id").and_then(Value::as_str).unwrap_or("");
                    // A call has one result: a later line reusing its id proves nothing.
                    let Some(call_line) = calls.remove(id) else { continue };
                    if b.get("is_error").and_then(Value::as_bool) == Some(true) {
                        continue;
                    }
                    let text = match b.get("content") {
                        Some(Value::String(s)) => s.clone(),
                        Some(Value::Array(parts)) => parts
                            .iter()
                            .filter_map(|p| p.get("text").and_then(Value::as_str))
                            .collect::<Vec<_>>()
                            .join("\n"),
                        _ => String::new(),
                    };
                    if stamp_in_output(&text).as_deref() == Some(stamp) {
                        return Ok(Some(Proof {
                            tool_use_id: id.to_string(),
                            call_line,
                            result_line: n,
                        }));
                    }
                }
                _ => {}
            }
        }
    }
}
