//! Reading the end of a Claude Code transcript, backwards, to find the current context.
//!
//! The hook runs on every prompt and tool call, so its cost must not grow with the transcript:
//! this reader seeks to the end and reads 64 KiB blocks backwards until it finds the last
//! main-chain assistant line that carries `message.usage` (formats/claude-code.md §4.3), and
//! gives up after [`MAX_TAIL_BYTES`]. Only lines that can matter are parsed as JSON: a cheap
//! substring test skips the rest (progress lines, tool results).
//!
//! Context = `input_tokens + cache_creation_input_tokens + cache_read_input_tokens` of that line
//! (output excluded, as the statusline documents). Sidechain lines, the `<synthetic>` model and
//! `isApiErrorMessage` lines are skipped. A `system/compact_boundary` line found *after* it
//! means the context was compacted since; the context is then `postTokens` where the boundary
//! carries it, else unknown until the next API call.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use jiff::Timestamp;

use crate::error::{IoContext, Result};
use crate::transcript::line::claude::Line;

/// Block size of one backwards read, bytes.
pub(crate) const BLOCK: usize = 64 * 1024;
/// How far back from the end the reader looks before it gives up, bytes.
pub(crate) const MAX_TAIL_BYTES: u64 = 32 * 1024 * 1024;

/// One main-chain API call, as its assistant line reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiCall {
    /// `message.model`, e.g. `claude-opus-4-6`.
    pub model: String,
    /// Uncached input tokens.
    pub input: u64,
    /// Cache-write tokens at the 5-minute TTL, and at the 1-hour TTL: the line's
    /// `cache_creation_input_tokens` split by the line model's one rule
    /// ([`crate::transcript::line::claude::LoggedUsage::cache_writes`]).
    pub cache_write_5m: u64,
    /// Cache-write tokens at the 1-hour TTL.
    pub cache_write_1h: u64,
    /// Cache-read tokens.
    pub cache_read: u64,
    /// Output tokens as the line logs them (a placeholder on all but, sometimes, the last
    /// line of a response: claude-code.md §3.3).
    pub output: u64,
    /// The line's `timestamp`, when it parses.
    pub timestamp: Option<Timestamp>,
}

impl ApiCall {
    /// Context in tokens: input + cache writes + cache reads.
    pub fn context(&self) -> u64 {
        self.input + self.cache_write_5m + self.cache_write_1h + self.cache_read
    }
}

/// A `system/compact_boundary` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compaction {
    /// `compactMetadata.trigger`: `auto` or `manual`.
    pub trigger: String,
    /// `compactMetadata.preTokens`.
    pub pre_tokens: Option<u64>,
    /// `compactMetadata.postTokens` (newer versions only).
    pub post_tokens: Option<u64>,
    /// The line's `timestamp`.
    pub timestamp: Option<Timestamp>,
}

/// What the end of a transcript says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tail {
    /// The last main-chain API call with usage, if one was found within [`MAX_TAIL_BYTES`].
    pub last_call: Option<ApiCall>,
    /// The latest compaction boundary written after `last_call` (or anywhere in the scanned
    /// tail when there is no call).
    pub compaction_after: Option<Compaction>,
    /// Bytes read from the file.
    pub bytes_read: u64,
}

impl Tail {
    /// Current context in tokens: the last call's, or after a compaction its `postTokens`
    /// (else 0: unknown until the next call, which the bands treat as empty). `None` when the
    /// transcript holds no call at all.
    pub fn context(&self) -> Option<u64> {
        match (&self.compaction_after, &self.last_call) {
            (Some(c), _) => Some(c.post_tokens.unwrap_or(0)),
            (None, Some(call)) => Some(call.context()),
            (None, None) => None,
        }
    }
}

/// Read the tail of the transcript at `path`.
///
/// Errors: [`crate::Error::Io`] when the file cannot be opened or read. Malformed, partial and
/// unknown lines are skipped, never an error.
pub fn read_tail(path: &Path) -> Result<Tail> {
    scan_back(path, None, MAX_TAIL_BYTES)
}

/// The tail as it stood at `at`: the last main-chain API call whose `timestamp` is at or
/// before `at`, and a compaction boundary between it and `at`. Lines logged after `at` (and,
/// with `at` given, lines without a timestamp) are passed over; the whole file may be read
/// (no [`MAX_TAIL_BYTES`] limit: `kit cache --at` asks about any moment of a session).
///
/// Errors: as [`read_tail`].
pub fn read_tail_at(path: &Path, at: Timestamp) -> Result<Tail> {
    scan_back(path, Some(at), u64::MAX)
}

fn scan_back(path: &Path, at: Option<Timestamp>, max_bytes: u64) -> Result<Tail> {
    let mut f = open_regular(path)?;
    let len = f.metadata().at(path)?.len();
    let mut tail = Tail::default();
    let mut start = len;
    // `buf` holds file[start..end] where everything after `end` has been looked at.
    let mut buf: Vec<u8> = Vec::new();
    loop {
        while let Some(nl) = memchr::memrchr(b'\n', &buf) {
            if look_at(&buf[nl + 1..], at, &mut tail) {
                return Ok(tail);
            }
            buf.truncate(nl);
        }
        if start == 0 {
            look_at(&buf, at, &mut tail);
            return Ok(tail);
        }
        if len - start >= max_bytes {
            return Ok(tail);
        }
        let n = (start as usize).min(BLOCK);
        start -= n as u64;
        let mut block = vec![0u8; n + buf.len()];
        f.seek(SeekFrom::Start(start)).at(path)?;
        f.read_exact(&mut block[..n]).at(path)?;
        tail.bytes_read += n as u64;
        block[n..].copy_from_slice(&buf);
        buf = block;
    }
}

/// Open `path` only when it is a regular file; see [`crate::transcript::lines::open_regular`].
pub fn open_regular(path: &Path) -> Result<File> {
    crate::transcript::lines::open_regular(path)
}

/// Look at one complete line; true when it is the last API call (the search is over). With
/// `at`, a line logged after `at` (or without a timestamp) is passed over.
///
/// Speed: most lines are passed over by a substring test, before any parsing; a line that
/// passes is read with the one line model ([`Line::parse`], which skims), and what counts as
/// a boundary or a main-chain call is the model's rule ([`Line::is_compact_boundary`],
/// [`Line::call`]).
fn look_at(line: &[u8], at: Option<Timestamp>, tail: &mut Tail) -> bool {
    let after_at = |ts: Option<Timestamp>| at.is_some_and(|at| ts.is_none_or(|t| t > at));
    let finder = |needle: &[u8]| memchr::memmem::find(line, needle).is_some();
    let stamp = |l: &Line<'_>| l.timestamp.as_deref().and_then(|t| t.parse().ok());
    if finder(b"compact_boundary") {
        // Only a real `system` line with subtype compact_boundary counts: the words also occur
        // in prose and tool inputs (`grep compact_boundary`) of assistant lines.
        if let Ok(l) = Line::parse(line) {
            if l.is_compact_boundary() {
                let ts = stamp(&l);
                if tail.compaction_after.is_none() && !after_at(ts) {
                    let m = l.compact.unwrap_or_default();
                    tail.compaction_after = Some(Compaction {
                        trigger: m.trigger.unwrap_or_default(),
                        pre_tokens: m.pre_tokens,
                        post_tokens: m.post_tokens,
                        timestamp: ts,
                    });
                }
                return false;
            }
        }
    }
    if !(finder(b"\"assistant\"") && finder(b"\"usage\"")) {
        return false;
    }
    let Ok(l) = Line::parse(line) else { return false };
    let Some(call) = l.call().filter(|c| !c.sidechain) else { return false };
    let timestamp = stamp(&l);
    if after_at(timestamp) {
        return false;
    }
    let u = call.usage;
    tail.last_call = Some(ApiCall {
        model: call.model.to_string(),
        input: u.input,
        cache_write_5m: u.cache_write_5m,
        cache_write_1h: u.cache_write_1h,
        cache_read: u.cache_read,
        output: u.output,
        timestamp,
    });
    true
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    use crate::testing::Rng;

    fn samples() -> std::path::PathBuf {
        crate::testing::samples("claude-code")
    }

    fn sample(name: &str) -> Tail {
        read_tail(&samples().join(name)).unwrap()
    }

    #[test]
    fn real_transcripts_give_the_context_of_their_last_call() {
        // fasthooks ends with a manual /compact: last context 21,331, preTokens 21,558
        // (formats §4.3); until the next call the context is unknown (0).
        let t = sample("fasthooks_sample_main_transcript.jsonl");
        let call = t.last_call.clone().unwrap();
        assert_eq!(call.model, "claude-haiku-4-5-20251001");
        assert_eq!(call.context(), 21_331);
        let c = t.compaction_after.clone().unwrap();
        assert_eq!((c.trigger.as_str(), c.pre_tokens), ("manual", Some(21_558)));
        assert_eq!(t.context(), Some(0));
        // spotter_tool_heavy writes the 1-hour cache.
        let t = sample("spotter_tool_heavy.jsonl");
        assert!(t.last_call.unwrap().cache_write_1h > 0);
    }

    #[test]
    fn a_boundary_after_the_last_call_is_seen() {
        let d = tempfile::tempdir().unwrap();
        let src = std::fs::read_to_string(
            samples().join("spotter_4d5611e5-241a-462a-8d15-5122611a9569.L641-L801.excerpt.jsonl"),
        )
        .unwrap();
        // Cut the excerpt right after its compact_boundary line (file line 754 = excerpt 114).
        let lines: Vec<&str> = src.lines().collect();
        let cut = lines.iter().position(|l| l.contains("\"compact_boundary\"")).unwrap();
        let p = d.path().join("t.jsonl");
        std::fs::write(&p, lines[..=cut].join("\n") + "\n").unwrap();
        let t = read_tail(&p).unwrap();
        assert_eq!(t.last_call.as_ref().unwrap().context(), 164_831);
        let c = t.compaction_after.as_ref().unwrap();
        assert_eq!((c.trigger.as_str(), c.pre_tokens), ("auto", Some(170_251)));
        assert_eq!(t.context(), Some(0));
        std::fs::write(&p, lines[..cut].join("\n") + "\n").unwrap();
        assert_eq!(read_tail(&p).unwrap().context(), Some(164_831));
    }

    #[test]
    fn partial_last_line_and_sidechains_are_skipped() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("t.jsonl");
        let call = |side: bool, n: u64| {
            format!(
                r#"{{"type":"assistant","isSidechain":{side},"timestamp":"2026-10-01T08:00:00Z","message":{{"model":"claude-opus-4-6","usage":{{"input_tokens":{n},"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}}}}"#
            )
        };
        let text = format!(
            "{}\n{}\n{{\"type\":\"assistant\",\"message\":{{\"usa",
            call(false, 7),
            call(true, 9)
        );
        std::fs::write(&p, text).unwrap();
        assert_eq!(read_tail(&p).unwrap().context(), Some(7));
        std::fs::write(&p, "").unwrap();
        assert_eq!(read_tail(&p).unwrap(), Tail::default());
    }

    #[test]
    fn the_words_compact_boundary_in_an_assistant_line_are_not_a_boundary() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("t.jsonl");
        let call = |n: u64, text: &str| {
            serde_json::json!({"type": "assistant", "message": {"model": "m",
                "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": text}}],
                "usage": {"input_tokens": n, "cache_read_input_tokens": 0}}})
            .to_string()
        };
        let text = format!(
            "{}\n{}\n{{\"type\":\"user\",\"message\":{{\"content\":\"the compact_boundary line\"}}}}\n",
            call(100, "ls"),
            call(150_000, "grep compact_boundary t.jsonl")
        );
        std::fs::write(&p, text).unwrap();
        let t = read_tail(&p).unwrap();
        assert_eq!(t.compaction_after, None);
        assert_eq!(t.context(), Some(150_000));
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("fifo.jsonl");
        nix::unistd::mkfifo(&p, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(matches!(read_tail(&p), Err(crate::Error::Input { .. })));
        assert!(matches!(read_tail(d.path()), Err(crate::Error::Input { .. })));
    }

    #[test]
    fn cost_does_not_grow_with_the_file() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("big.jsonl");
        let filler = format!("{{\"type\":\"progress\",\"data\":\"{}\"}}\n", "x".repeat(1000));
        let call = r#"{"type":"assistant","message":{"model":"m","usage":{"input_tokens":5,"cache_read_input_tokens":10}}}"#;
        let mut text = filler.repeat(5000);
        text.push_str(call);
        text.push('\n');
        text.push_str(&filler.repeat(3));
        std::fs::write(&p, text).unwrap();
        let t = read_tail(&p).unwrap();
        assert_eq!(t.context(), Some(15));
        assert!(t.bytes_read <= BLOCK as u64, "read {} bytes", t.bytes_read);
    }

    #[test]
    fn fuzz_damaged_transcripts_never_panic() {
        // Cuts, flipped bytes and spliced lines of a real transcript: always a Tail, never a
        // panic; and the context found is always one the file really holds or none.
        let src = std::fs::read(
            samples().join("spotter_4d5611e5-241a-462a-8d15-5122611a9569.L641-L801.excerpt.jsonl"),
        )
        .unwrap();
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("t.jsonl");
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..300 {
            let mut bytes = src[..rng.below(src.len()) + 1].to_vec();
            for _ in 0..rng.below(20) {
                let i = rng.below(bytes.len());
                bytes[i] = rng.next() as u8;
            }
            if rng.below(3) == 0 {
                let at = rng.below(bytes.len());
                let from = rng.below(src.len());
                let n = rng.below(4000);
                let splice = src[from..(from + n).min(src.len())].to_vec();
                bytes.splice(at..at, splice);
            }
            std::fs::write(&p, &bytes).unwrap();
            let t = read_tail(&p).unwrap();
            if let Some(c) = t.last_call {
                assert!(c.context() < 10_000_000, "{c:?}");
            }
        }
    }
}
