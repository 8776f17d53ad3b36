//! `longrun/journal.jsonl`: kit's append-only event log and the loop's checkpoint (DESIGN §3).
//! Only kit writes it. One JSON object per line, each with `ts` (RFC 3339 UTC, from the
//! [`crate::clock`]) and `event` (a snake_case name), plus event fields. Lines are appended whole
//! with fsync ([`crate::atomic::append_line`]); a reader skips a torn or malformed line and
//! counts it, so a loop killed at any instant loses at most the line it was writing.
//!
//! The events are one type, [`Event`] (see [`super::event`] for the format's rules): this is
//! their one writer.

use std::path::{Path, PathBuf};

use serde_json::Value;

pub use super::event::{Entry, Event};
use crate::error::{Error, Result};

/// Appends events to one journal file.
#[derive(Clone, Debug)]
pub struct Journal {
    path: PathBuf,
}

/// What [`read`] found in a journal.
#[derive(Debug, Default)]
pub struct JournalRead {
    /// Entries in file order, each with its line number ([`Entry::line`]); a line this kit does
    /// not read as one of its events is an [`Event::Unknown`], kept as written.
    pub entries: Vec<Entry>,
    /// 1-based line numbers of lines that were not a JSON object (torn, malformed).
    pub skipped: Vec<usize>,
}

impl Journal {
    /// A journal at `path` (created on first append).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Journal { path: path.into() }
    }

    /// The journal file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Append `event`, stamped `ts` from the clock. Returns the entry written.
    ///
    /// Errors: [`Error::Io`] naming the journal when it cannot be appended to.
    pub fn append(&self, event: &Event) -> Result<Entry> {
        self.append_at(event).map(|(e, _)| e)
    }

    /// [`Journal::append`], also returning the byte range the line occupies in the file (exact
    /// even when another process appends at the same instant).
    pub fn append_at(&self, event: &Event) -> Result<(Entry, std::ops::Range<u64>)> {
        let entry = Entry::new(crate::clock::now_rfc3339(), event.clone());
        let line =
            serde_json::to_string(&entry.to_value()).map_err(|e| Error::internal(e.to_string()))?;
        let at = crate::atomic::append_line(&self.path, &line)?;
        Ok((entry, at))
    }
}

/// Read every event of the journal at `path`; a missing file reads as empty. Never fails on a
/// line: a torn or malformed one is skipped and counted ([`JournalRead::skipped`]), an unknown
/// or newer event reads as [`Event::Unknown`].
///
/// Errors: [`Error::Io`] naming the journal when it exists but cannot be read.
pub fn read(path: &Path) -> Result<JournalRead> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(JournalRead::default()),
        Err(e) => return Err(Error::io(path, e)),
    };
    Ok(parse(&bytes))
}

/// Read journal text already in memory, as [`read`] does.
pub fn parse(bytes: &[u8]) -> JournalRead {
    let mut out = JournalRead::default();
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Value>(line) {
            Ok(v @ Value::Object(_)) => {
                out.entries.push(Entry { line: i + 1, ..Entry::from_value(v) })
            }
            _ => out.skipped.push(i + 1),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::longrun::event::{LoopEnd, LoopStart};

    #[test]
    fn append_then_read_skips_torn_lines() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("journal.jsonl");
        let j = Journal::new(&p);
        j.append(&Event::LoopStart(LoopStart { pid: 1, ..LoopStart::default() })).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&p)
            .and_then(|mut f| std::io::Write::write_all(&mut f, b"{\"ts\":\"x\",\"ev"))
            .unwrap();
        j.append(&Event::LoopEnd(LoopEnd { outcome: "done".into(), ..LoopEnd::default() }))
            .unwrap();
        let r = read(&p).unwrap();
        assert_eq!(r.entries.len(), 2);
        assert_eq!(r.skipped, vec![2]);
        assert!(matches!(&r.entries[1].event, Event::LoopEnd(e) if e.outcome == "done"));
        assert_eq!(r.entries.iter().map(|e| e.line).collect::<Vec<_>>(), [1, 3]);
    }
}
