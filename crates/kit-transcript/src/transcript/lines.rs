//! Reading a transcript file as a stream of JSON records with bounded memory, and counting the
//! damage found on the way (DESIGN §8): a partial last line, invalid UTF-8, a line longer than
//! the cap, an unparsable line, an unknown line type. Three kinds of damage are *repaired* and
//! counted: CRLF line ends, objects pretty-printed over several lines (ccusage skips these
//! silently; we read them), and invalid UTF-8 (the bad bytes are replaced by U+FFFD and the
//! line is read: the usage numbers and keys are ASCII, so a damaged tool output or file
//! content does not cost the line's tokens). Under `strict` the first damaged line is an error naming file:line.
//!
//! Lines are split with `memchr` over a reused buffer; the buffer grows only as far as the
//! longest line (up to the cap), so memory does not depend on the file's size. `.jsonl.zst`
//! files are decompressed as a stream.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{Error, IoContext, Result};

/// Default cap on one line (bytes). Longer lines are skipped without being held in memory.
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// How many examples of damage (path:line) a report keeps.
const MAX_EXAMPLES: usize = 20;

/// The kinds of damage a scan counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DamageKind {
    /// The last line of a file ends without a newline and does not parse (a live or cut file).
    Truncated,
    /// Repaired: the line is not valid UTF-8; the bad bytes were replaced by U+FFFD and the
    /// line read (if it then does not parse, it is also counted as malformed or truncated).
    InvalidUtf8,
    /// The line is longer than the cap.
    Oversized,
    /// The line is not a JSON object the reader understands.
    Malformed,
    /// A JSON object whose `type` this version does not know.
    UnknownType,
    /// Repaired: the line ended in CRLF.
    Crlf,
    /// Repaired: a JSON object pretty-printed over several lines, read whole.
    PrettyPrinted,
}

impl DamageKind {
    /// What is wrong with the line, without what the reader did about it (`--strict`'s error:
    /// under `--strict` nothing is repaired).
    pub(crate) fn fault(self) -> &'static str {
        let d = self.describe();
        d.split_once(" (").map_or(d, |(head, _)| head)
    }

    /// A short phrase for reports.
    pub fn describe(self) -> &'static str {
        match self {
            DamageKind::Truncated => "truncated last line",
            DamageKind::InvalidUtf8 => "invalid UTF-8 (read, bad bytes replaced)",
            DamageKind::Oversized => "line over the size cap",
            DamageKind::Malformed => "malformed JSON",
            DamageKind::UnknownType => "unknown line type",
            DamageKind::Crlf => "CRLF line end (read)",
            DamageKind::PrettyPrinted => "pretty-printed JSON object (read)",
        }
    }
}

/// One example of damage.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DamageExample {
    /// The file.
    pub path: PathBuf,
    /// 1-based line (the first line of a multi-line object).
    pub line: usize,
    /// What was wrong.
    pub kind: DamageKind,
}

/// Counts of damaged lines, per kind, with the first few examples.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Damage {
    /// Partial last lines skipped.
    pub truncated: u64,
    /// Lines with invalid UTF-8, read with the bad bytes replaced.
    pub invalid_utf8: u64,
    /// Lines skipped for exceeding the cap.
    pub oversized: u64,
    /// Lines skipped as malformed.
    pub malformed: u64,
    /// Lines skipped for an unknown `type`.
    pub unknown_type: u64,
    /// Lines read despite a CRLF end.
    pub crlf: u64,
    /// Multi-line objects read whole.
    pub pretty_printed: u64,
    /// The first examples, in scan order.
    pub examples: Vec<DamageExample>,
    /// Files and folders that could not be read (or not to the end), with the reason: a
    /// symlink loop, a permission, a cut `.zst` frame. They are skipped; the scan goes on.
    pub unreadable: Vec<Unreadable>,
}

/// A file or folder a scan could not read, and why (the operating system's words).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Unreadable {
    /// The file or folder.
    pub path: PathBuf,
    /// Why, e.g. `Too many levels of symbolic links (os error 40)`.
    pub reason: String,
}

impl Damage {
    /// Lines skipped (all kinds but the repaired ones).
    pub fn skipped(&self) -> u64 {
        self.truncated + self.oversized + self.malformed + self.unknown_type
    }

    /// Lines repaired and read.
    pub fn repaired(&self) -> u64 {
        self.crlf + self.pretty_printed + self.invalid_utf8
    }

    /// Note a file or folder that could not be read.
    pub fn add_unreadable(&mut self, path: &Path, reason: impl Into<String>) {
        self.unreadable.push(Unreadable { path: path.to_path_buf(), reason: reason.into() });
    }

    /// Count one damaged line.
    pub(crate) fn add(&mut self, kind: DamageKind, path: &Path, line: usize) {
        *self.slot(kind) += 1;
        if self.examples.len() < MAX_EXAMPLES {
            self.examples.push(DamageExample { path: path.to_path_buf(), line, kind });
        }
    }

    fn slot(&mut self, kind: DamageKind) -> &mut u64 {
        match kind {
            DamageKind::Truncated => &mut self.truncated,
            DamageKind::InvalidUtf8 => &mut self.invalid_utf8,
            DamageKind::Oversized => &mut self.oversized,
            DamageKind::Malformed => &mut self.malformed,
            DamageKind::UnknownType => &mut self.unknown_type,
            DamageKind::Crlf => &mut self.crlf,
            DamageKind::PrettyPrinted => &mut self.pretty_printed,
        }
    }

    /// Add another report's counts (examples kept up to the limit).
    pub fn merge(&mut self, other: &Damage) {
        self.truncated += other.truncated;
        self.invalid_utf8 += other.invalid_utf8;
        self.oversized += other.oversized;
        self.malformed += other.malformed;
        self.unknown_type += other.unknown_type;
        self.crlf += other.crlf;
        self.pretty_printed += other.pretty_printed;
        for e in &other.examples {
            if self.examples.len() >= MAX_EXAMPLES {
                break;
            }
            self.examples.push(e.clone());
        }
        self.unreadable.extend(other.unreadable.iter().cloned());
    }

    /// `(kind, count)` for every kind with a non-zero count, skipped kinds first.
    pub fn counts(&self) -> Vec<(DamageKind, u64)> {
        use DamageKind::*;
        [
            (Truncated, self.truncated),
            (Oversized, self.oversized),
            (Malformed, self.malformed),
            (UnknownType, self.unknown_type),
            (InvalidUtf8, self.invalid_utf8),
            (Crlf, self.crlf),
            (PrettyPrinted, self.pretty_printed),
        ]
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .collect()
    }
}

/// What a source parser says about one record.
pub enum Parsed {
    /// Understood (or deliberately ignored).
    Known,
    /// A JSON object with a `type` this version does not know.
    UnknownType,
}

/// How to read.
#[derive(Clone, Copy, Debug)]
pub struct ReadLimits {
    /// Fail on the first damaged line.
    pub strict: bool,
    /// Cap on one line, bytes.
    pub max_line_bytes: usize,
}

impl Default for ReadLimits {
    fn default() -> Self {
        ReadLimits { strict: false, max_line_bytes: MAX_LINE_BYTES }
    }
}

/// Open a transcript for reading, decompressing `.zst` as a stream. Only a regular file is
/// opened (see [`open_regular`]): a FIFO or a link to a device under a root is refused, never
/// waited on.
pub fn open(path: &Path) -> Result<Box<dyn Read + Send>> {
    let f = open_regular(path)?;
    if path.extension().is_some_and(|e| e == "zst") {
        let d = zstd::stream::read::Decoder::new(f).at(path)?;
        Ok(Box::new(d))
    } else {
        Ok(Box::new(f))
    }
}

/// Open `path` for reading only when it is a regular file: opening a FIFO would block until a
/// writer comes (`kit measure` or the hook would hang), and a device or folder is no transcript.
///
/// Errors: [`crate::Error::Io`] when it does not exist or cannot be read; [`crate::Error::Input`]
/// when it is not a regular file.
pub fn open_regular(path: &Path) -> Result<File> {
    let meta = std::fs::metadata(path).at(path)?;
    if !meta.is_file() {
        return Err(crate::Error::input(
            path,
            None,
            "not a regular file (a FIFO, device or folder); refused",
        ));
    }
    File::open(path).at(path)
}

/// One line from [`LineReader`].
pub enum Line<'a> {
    /// A line without its `\n`; `terminated` is false for a last line without one.
    Text { no: usize, bytes: &'a [u8], terminated: bool },
    /// A line over the cap, skipped without being held.
    TooLong { no: usize },
}

/// Splits a byte stream into lines with `memchr`, reusing one buffer.
pub struct LineReader<R> {
    r: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
    line_no: usize,
    max: usize,
}

const CHUNK: usize = 256 << 10;

impl<R: Read> LineReader<R> {
    /// A reader with a line cap of `max` bytes.
    pub fn new(r: R, max: usize) -> Self {
        LineReader { r, buf: vec![0; CHUNK], start: 0, end: 0, eof: false, line_no: 0, max }
    }

    fn fill(&mut self) -> io::Result<()> {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            let n = (self.buf.len() * 2).min(self.max + CHUNK).max(self.buf.len() + CHUNK);
            self.buf.resize(n, 0);
        }
        loop {
            match self.r.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Skip input up to and including the next newline.
    fn skip_rest_of_line(&mut self) -> io::Result<()> {
        loop {
            if let Some(i) = memchr::memchr(b'\n', &self.buf[self.start..self.end]) {
                self.start += i + 1;
                return Ok(());
            }
            self.start = 0;
            self.end = 0;
            if self.eof {
                return Ok(());
            }
            self.fill()?;
        }
    }

    /// The next line, or None at the end.
    pub fn next_line(&mut self) -> io::Result<Option<Line<'_>>> {
        let mut scanned = 0;
        loop {
            let hay = &self.buf[self.start + scanned..self.end];
            if let Some(i) = memchr::memchr(b'\n', hay) {
                let s = self.start;
                let e = s + scanned + i;
                self.start = e + 1;
                self.line_no += 1;
                if e - s > self.max {
                    return Ok(Some(Line::TooLong { no: self.line_no }));
                }
                return Ok(Some(Line::Text {
                    no: self.line_no,
                    bytes: &self.buf[s..e],
                    terminated: true,
                }));
            }
            scanned = self.end - self.start;
            if self.eof {
                if scanned == 0 {
                    return Ok(None);
                }
                let s = self.start;
                self.start = self.end;
                self.line_no += 1;
                return Ok(Some(Line::Text {
                    no: self.line_no,
                    bytes: &self.buf[s..self.end],
                    terminated: false,
                }));
            }
            if scanned > self.max {
                self.line_no += 1;
                let no = self.line_no;
                self.start = self.end;
                self.skip_rest_of_line()?;
                return Ok(Some(Line::TooLong { no }));
            }
            self.fill()?;
        }
    }
}

/// Read `path` record by record, calling `parse` on each JSON object's bytes (valid UTF-8: a
/// line that is not has its bad bytes replaced by U+FFFD and is counted as
/// [`DamageKind::InvalidUtf8`]; without its line end). Damage is counted into `damage`; under `limits.strict` the first
/// damaged line is returned as [`Error::Input`] naming file:line.
///
/// `parse` returns `Err` when the bytes are not an object it can read; the error decides
/// between *truncated* (EOF on the last line), the start of a pretty-printed object, and
/// *malformed*.
pub fn for_each_record(
    path: &Path,
    limits: ReadLimits,
    damage: &mut Damage,
    parse: impl FnMut(usize, &[u8]) -> std::result::Result<Parsed, serde_json::Error>,
) -> Result<()> {
    for_each_record_where(path, limits, damage, |_| true, parse)
}

/// [`for_each_record`], but a single-line record for which `wanted` is false is passed over
/// without being checked or parsed (a fast pre-filter, e.g. on the bytes of a search string).
/// Lines of a pretty-printed object are always gathered and the whole object is offered.
///
/// A file that cannot be opened or read to the end (a symlink loop, no permission, a cut or
/// garbage `.zst` frame) is noted in `damage.unreadable` and the records read before the
/// failure stay counted; under `limits.strict` it is an [`Error::Input`] naming the file.
pub fn for_each_record_where(
    path: &Path,
    limits: ReadLimits,
    damage: &mut Damage,
    wanted: impl Fn(&[u8]) -> bool,
    parse: impl FnMut(usize, &[u8]) -> std::result::Result<Parsed, serde_json::Error>,
) -> Result<()> {
    match read_records(path, limits, damage, wanted, parse) {
        Err(Error::Io { source, .. }) => {
            let reason = source.to_string();
            if limits.strict {
                return Err(Error::input(path, None, format!("cannot read: {reason}"))
                    .with_hint(STRICT_HINT));
            }
            damage.add_unreadable(path, reason);
            Ok(())
        }
        r => r,
    }
}

fn read_records(
    path: &Path,
    limits: ReadLimits,
    damage: &mut Damage,
    wanted: impl Fn(&[u8]) -> bool,
    mut parse: impl FnMut(usize, &[u8]) -> std::result::Result<Parsed, serde_json::Error>,
) -> Result<()> {
    let reader = open(path)?;
    let mut lines = LineReader::new(reader, limits.max_line_bytes);
    // A pretty-printed object being gathered: its first line number and its text so far.
    let mut pending: Option<(usize, Vec<u8>)> = None;
    let note = |damage: &mut Damage, kind: DamageKind, no: usize| -> Result<()> {
        if limits.strict {
            return Err(
                Error::input(path, Some(no), kind.fault().to_string()).with_hint(STRICT_HINT)
            );
        }
        damage.add(kind, path, no);
        Ok(())
    };
    // The repaired text of a line with invalid UTF-8, reused.
    let mut lossy = String::new();
    while let Some(line) = lines.next_line().at(path)? {
        let (no, mut bytes, terminated) = match line {
            Line::Text { no, bytes, terminated } => (no, bytes, terminated),
            Line::TooLong { no } => {
                note(damage, DamageKind::Oversized, no)?;
                continue;
            }
        };
        if let [head @ .., b'\r'] = bytes {
            bytes = head;
            note(damage, DamageKind::Crlf, no)?;
        }
        if pending.is_none() && !wanted(bytes) && trim_ascii(bytes) != b"{" {
            continue;
        }
        if simdutf8::basic::from_utf8(bytes).is_err() {
            note(damage, DamageKind::InvalidUtf8, no)?;
            lossy.clear();
            lossy.push_str(&String::from_utf8_lossy(bytes));
            bytes = lossy.as_bytes();
        }
        let trimmed = trim_ascii(bytes);
        if let Some((first, mut acc)) = pending.take() {
            if trimmed.starts_with(b"{\"") {
                // A compact object starts: what was gathered never closed.
                note(damage, DamageKind::Malformed, first)?;
            } else {
                acc.extend_from_slice(bytes);
                acc.push(b'\n');
                if bytes.first() == Some(&b'}') {
                    match parse(first, &acc) {
                        Ok(p) => {
                            note(damage, DamageKind::PrettyPrinted, first)?;
                            if let Parsed::UnknownType = p {
                                note(damage, DamageKind::UnknownType, first)?;
                            }
                            continue;
                        }
                        Err(e) if e.is_eof() => {}
                        Err(_) => {
                            note(damage, DamageKind::Malformed, first)?;
                            continue;
                        }
                    }
                }
                if acc.len() > limits.max_line_bytes {
                    note(damage, DamageKind::Oversized, first)?;
                } else {
                    pending = Some((first, acc));
                }
                continue;
            }
        }
        if trimmed.is_empty() {
            continue;
        }
        if trimmed == b"{" {
            pending = Some((no, b"{\n".to_vec()));
            continue;
        }
        match parse(no, bytes) {
            Ok(Parsed::Known) => {}
            Ok(Parsed::UnknownType) => note(damage, DamageKind::UnknownType, no)?,
            Err(e) if e.is_eof() && !terminated => note(damage, DamageKind::Truncated, no)?,
            Err(_) => note(damage, DamageKind::Malformed, no)?,
        }
    }
    if let Some((first, _)) = pending {
        note(damage, DamageKind::Truncated, first)?;
    }
    Ok(())
}

fn trim_ascii(b: &[u8]) -> &[u8] {
    let s = b.iter().position(|c| !c.is_ascii_whitespace()).unwrap_or(b.len());
    let e = b.iter().rposition(|c| !c.is_ascii_whitespace()).map_or(s, |i| i + 1);
    &b[s..e]
}

const STRICT_HINT: &str =
    "run without --strict to count and skip damaged lines and files (they are listed in the report)";

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(input: &[u8], max: usize) -> Vec<String> {
        let mut r = LineReader::new(input, max);
        let mut out = vec![];
        while let Some(l) = r.next_line().unwrap() {
            out.push(match l {
                Line::Text { no, bytes, terminated } => {
                    format!("{no}:{}:{}", String::from_utf8_lossy(bytes), terminated)
                }
                Line::TooLong { no } => format!("{no}:too long"),
            });
        }
        out
    }

    #[test]
    fn splits_lines_and_flags_the_unterminated_last_one() {
        assert_eq!(lines_of(b"a\nbb\n\nc", 100), ["1:a:true", "2:bb:true", "3::true", "4:c:false"]);
        assert_eq!(lines_of(b"", 100), Vec::<String>::new());
        assert_eq!(lines_of(b"x\n", 100), ["1:x:true"]);
    }

    #[test]
    fn skips_lines_over_the_cap_without_holding_them() {
        let mut input = b"ok\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', 3 * CHUNK));
        input.extend(b"\nafter\n");
        assert_eq!(lines_of(&input, CHUNK), ["1:ok:true", "2:too long", "3:after:true"]);
        // Under the cap, a long line comes through whole.
        let long = lines_of(&input, 4 * CHUNK);
        assert_eq!(long.len(), 3);
        assert!(long[1].len() > 3 * CHUNK);
    }
}
