//! The ledger (issue 24): every API call `kit measure --ledger` (or the loop, after each
//! iteration) has read, kept as a few numbers under the user's data folder, so that the totals
//! of last quarter survive Claude Code deleting transcripts after 30 days (`cleanupPeriodDays`).
//! `kit measure` (default roots) reads the ledger beside the live transcripts and counts each
//! API call once: a call in both is the transcript's; a call only in the ledger (its transcript
//! is gone) is added, to its live session's row or to a row of its own.
//!
//! The ledger completes the roots being measured, and only those: each call remembers the
//! transcript root it was read from (the Claude Code config folder, `$CLAUDE_CONFIG_DIR` or
//! `~/.claude`, or the Codex home, `$CODEX_HOME` or `~/.codex`; [`root_of`]), and `kit measure`
//! adds a call only the ledger holds when its root is one it measures now ([`Ledger::completing`]).
//! One ledger serves every root a user's shells point at: a course lab's `.home/.claude`, where
//! the fake agents of its loops write, adds nothing to the totals of `~/.claude`, nor the other
//! way round. A call written before roots were recorded (no `root`) completes every measurement,
//! as it always did.
//!
//! Where: `$KIT_LEDGER_DIR`, else `$XDG_DATA_HOME/kit/ledger`, else
//! `~/.local/share/kit/ledger` (the XDG Base Directory spec's data folder, as toktrack and
//! ccusage users keep their history; [`dir_in`]).
//!
//! Format (`kit.ledger/1`): one JSON object per line, in one file per calendar month (UTC) of
//! the call's timestamp, `YYYY-MM.jsonl`; a line is
//!
//! ```json
//! {"agent":"claude","session":"4d5611e5-…","project":"spotter","root":"9c0f5e6a1d2b3c4d",
//!  "msg":"msg_01…","req":"req_01…","model":"claude-opus-4-5-20251101",
//!  "ts":"2026-02-12T20:30:28.504Z","in":3,"cw5m":0,"cw1h":3400,"cr":150000,"out":120,
//!  "usd":0.0951}
//! ```
//!
//! - `agent` `claude`|`codex`; `session` the session id; `project` the project's *name* (the
//!   last part of the working directory, as the session table shows it: no other path);
//! - `root`: the transcript root the call was read from, as an id, not a path: the first 16 hex
//!   digits of the SHA-256 of the root folder's canonical path ([`root_id`]). Absent in lines
//!   written before kit recorded it; such a line belongs to every root;
//! - the dedup key: Claude's `msg` (`message.id`) and `req` (`requestId`, absent when the line
//!   has none), the very key of the transcript engine ([`crate::transcript::dedup`]); Codex's
//!   `seq`, the call's place (1-based) among the rollout's counted `token_count` records, with
//!   the session id (a rollout only grows, so the place of a call never changes);
//! - `model` as logged; `ts` the call's time (RFC 3339, UTC, ms; absent when the line had
//!   none); tokens as the engine models them: `in` uncached input, `cw5m`/`cw1h` cache writes
//!   by TTL, `cr` cache reads, `out` output (reasoning included), `reason` reasoning (Codex,
//!   absent when 0);
//! - `usd`: the call's cost by the price table of the kit that wrote it (absent when unpriced),
//!   for whoever reads the ledger with `jq`. kit itself re-prices the tokens at read time with
//!   the current table, as it prices live transcripts: a call then costs the same whether it is
//!   read from its transcript or from the ledger, and a corrected price applies to old calls.
//!
//! No prompt, response, tool or file text is written. Plain JSON lines, not compressed: 300
//! bytes per API call on the bench tree, 65 with zstd -3 (BENCHMARKS.md, "The ledger"), so
//! about 110 MB a year for a heavy user (1,000 calls a day) against 24 MB compressed. Plain wins
//! all the same: a month file is appended to in place with one `write` (a compressed one would
//! be rewritten, or kept as a second, uncompressed tail with a compaction step and its own
//! failure modes), `grep` and `jq` read it, and it is a few percent of the transcripts it
//! outlives. Reading it costs about 9 µs of CPU per call (BENCHMARKS.md).
//!
//! Writers: appends take an exclusive `flock` on `<dir>/.lock` (fs4), so two writers (a loop and
//! `kit measure --ledger`) never interleave or both add one call; readers take it shared. A
//! batch is one `write` on an `O_APPEND` file and one `fdatasync`. A writer killed mid-write
//! leaves a torn last line: the next writer starts on a new line (the fragment stays a line of
//! its own) and readers count it as damaged and skip it, never losing the records before it.
//! Appending the same calls again adds nothing: before a batch is written, the keys of its
//! months' files are read, and only calls not there yet (or with a larger token total, a copy
//! that was cut mid-response when first seen) are appended; readers keep, per key, the copy
//! with the largest token total. A key is the call's id within its root: the same call read
//! from two roots (a transcript copied into a course lab) is a line for each, so that each root
//! is completed on its own; a measurement of both still counts it once.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use fs4::fs_std::FileExt;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::dedup::{call_key, CallKey};
use super::discover::{self, Job};
use super::lines::DamageKind;
use super::{
    claude, codex, codex_compaction_point, context_from_usage, format_ts_ms, parse_ts_ms, ApiCall,
    Builder, Damage, EngineOptions, SessionSummary, Source, Stream,
};
use crate::error::{Error, IoContext, Result};
use crate::prices::Usage;

/// The variable that names the ledger's folder (tests, or a ledger on another disk).
pub const DIR_VAR: &str = "KIT_LEDGER_DIR";

/// The lock file inside the ledger's folder.
const LOCK: &str = ".lock";

/// The ledger's folder from the environment `var` looks up: `$KIT_LEDGER_DIR`, else
/// `$XDG_DATA_HOME/kit/ledger`, else `$HOME/.local/share/kit/ledger`. A variable that is empty
/// or not an absolute path is passed over, as the XDG spec says of `XDG_DATA_HOME`.
///
/// Errors: [`Error::Usage`] when none gives an absolute path.
pub fn dir_in(var: impl Fn(&str) -> Option<String>) -> Result<PathBuf> {
    let abs = |k: &str| var(k).map(PathBuf::from).filter(|p| p.is_absolute());
    if let Some(d) = abs(DIR_VAR) {
        return Ok(d);
    }
    if let Some(d) = abs("XDG_DATA_HOME") {
        return Ok(d.join("kit").join("ledger"));
    }
    if let Some(h) = abs("HOME") {
        return Ok(h.join(".local/share/kit/ledger"));
    }
    Err(Error::usage(
        "neither KIT_LEDGER_DIR, XDG_DATA_HOME nor HOME is an absolute path: kit has nowhere to keep its ledger",
    )
    .with_hint("export HOME=/path/to/your/home (or KIT_LEDGER_DIR=/path), then run the command again"))
}

/// [`dir_in`] on this process's environment.
pub fn default_dir() -> Result<PathBuf> {
    dir_in(|k| std::env::var(k).ok())
}

/// One API call as the ledger keeps it (the line format is in the module's docs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// `claude` or `codex`.
    pub agent: String,
    /// The session id.
    pub session: String,
    /// The project's name.
    pub project: String,
    /// The transcript root's id ([`root_id`]); None in lines written before kit recorded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
    /// Claude: `message.id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub msg: Option<String>,
    /// Claude: `requestId`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub req: Option<String>,
    /// Codex: the call's place among the rollout's counted records (1-based).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// The model as logged.
    pub model: String,
    /// When (RFC 3339, UTC, ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ts: Option<String>,
    /// Uncached input tokens.
    #[serde(rename = "in", default)]
    pub input: u64,
    /// Cache write tokens, 5-minute TTL.
    #[serde(default)]
    pub cw5m: u64,
    /// Cache write tokens, 1-hour TTL.
    #[serde(default)]
    pub cw1h: u64,
    /// Cache read tokens.
    #[serde(default)]
    pub cr: u64,
    /// Output tokens (reasoning included).
    #[serde(default)]
    pub out: u64,
    /// Reasoning tokens (part of `out`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reason: u64,
    /// Cost (USD) by the writer's price table; None when unpriced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usd: Option<f64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Record {
    /// The source, None for an agent this version does not know.
    pub fn source(&self) -> Option<Source> {
        match self.agent.as_str() {
            "claude" => Some(Source::Claude),
            "codex" => Some(Source::Codex),
            _ => None,
        }
    }

    /// The dedup key's text: Claude `msg` NUL `req` (or `msg`), as the transcript engine keys a
    /// call; Codex `codex` NUL session NUL `seq`. None when the record has no id.
    pub fn key_text(&self) -> Option<String> {
        match (self.source()?, &self.msg, &self.req, self.seq) {
            (Source::Claude, Some(m), Some(r), _) => Some(format!("{m}\u{0}{r}")),
            (Source::Claude, Some(m), None, _) => Some(m.clone()),
            (Source::Codex, _, _, Some(n)) => Some(codex_key_text(&self.session, n)),
            _ => None,
        }
    }

    /// The [`CallKey`] of [`Record::key_text`].
    pub fn key(&self) -> Option<CallKey> {
        self.key_text().map(|t| call_key(&t))
    }

    /// The call's place in the ledger: its key within its root. None when it has no key.
    fn slot(&self) -> Option<Slot> {
        self.key().map(|k| (k, self.root.clone()))
    }

    /// The call's tokens by kind.
    pub fn usage(&self) -> Usage {
        Usage {
            input: self.input,
            cache_write_5m: self.cw5m,
            cache_write_1h: self.cw1h,
            cache_read: self.cr,
            output: self.out,
        }
    }

    /// The token total (input, cache writes and reads, output): the larger copy of a key wins.
    pub fn tokens(&self) -> u64 {
        let u = self.usage();
        u.summed_input() + u.output
    }

    pub fn ts_ms(&self) -> Option<i64> {
        self.ts.as_deref().and_then(parse_ts_ms)
    }

    /// The engine's view of the call, ready for [`Builder::summarise`].
    pub fn to_call(&self, source: Source) -> ApiCall {
        let usage = self.usage();
        let context = match source {
            Source::Claude => context_from_usage(&usage),
            // A Codex call's context is its request's total, output included (codex.md §5.1).
            Source::Codex => context_from_usage(&usage) + usage.output,
        };
        ApiCall {
            ts_ms: self.ts_ms(),
            model: Arc::from(self.model.as_str()),
            usage,
            reasoning: self.reason,
            context_tokens: context,
            gap_s: None,
            resume: false,
            resume_premium_usd: 0.0,
            cost_usd: None,
            sidechain: false,
            id: None,
        }
    }
}

/// A call's place in the ledger: its key, and its root's id (None: a line without one).
type Slot = (CallKey, Option<String>);

fn codex_key_text(session: &str, seq: u64) -> String {
    format!("codex\u{0}{session}\u{0}{seq}")
}

/// What a scan gathered for the ledger: the keys of every call read (whether its session is
/// shown or not), and the records of the calls of the sessions shown, when appending.
#[derive(Debug, Default)]
pub struct Collected {
    /// Keys of the calls in live transcripts.
    pub live: Vec<CallKey>,
    /// Records to append.
    pub records: Vec<Record>,
}

impl Collected {
    /// Add another session's.
    pub fn merge(&mut self, o: Collected) {
        self.live.extend(o.live);
        self.records.extend(o.records);
    }
}

/// The keys (and, with `records`, the records) of one session's calls: `main` its main
/// conversation's, `subs` its subagents'. A Claude call without a `message.id` has no key and
/// is not recorded (nothing could tell a second copy of it from a new call).
pub fn collect(s: &SessionSummary, main: &[ApiCall], subs: &[ApiCall], records: bool) -> Collected {
    let mut got = Collected::default();
    let project = project_name(&s.project);
    let root = records.then(|| root_id(&root_of(s.source, &s.path)));
    for (n, c) in main.iter().chain(subs).enumerate() {
        let (msg, req, seq) = match s.source {
            Source::Claude => {
                let Some(id) = &c.id else { continue };
                got.live.push(call_key(id));
                match id.split_once('\u{0}') {
                    Some((m, r)) => (Some(m.to_string()), Some(r.to_string()), None),
                    None => (Some(id.to_string()), None, None),
                }
            }
            Source::Codex => {
                let seq = n as u64 + 1;
                got.live.push(call_key(&codex_key_text(&s.session_id, seq)));
                (None, None, Some(seq))
            }
        };
        if records {
            got.records.push(Record {
                agent: s.source.name().to_string(),
                session: s.session_id.clone(),
                project: project.to_string(),
                root: root.clone(),
                msg,
                req,
                seq,
                model: c.model.to_string(),
                ts: c.ts_ms.map(format_ts_ms),
                input: c.usage.input,
                cw5m: c.usage.cache_write_5m,
                cw1h: c.usage.cache_write_1h,
                cr: c.usage.cache_read,
                out: c.usage.output,
                reason: c.reasoning,
                // Nano-dollars are plenty, and spare the line float noise (0.00765864999…).
                usd: c.cost_usd.map(|x| (x * 1e9).round() / 1e9),
            });
        }
    }
    got
}

/// The month file (`YYYY-MM.jsonl`) of a call at `ts_ms` (UTC); a call without a time goes to
/// the month of `now_ms`.
pub fn month_file(ts_ms: Option<i64>, now_ms: i64) -> String {
    let ms = ts_ms.unwrap_or(now_ms);
    match jiff::Timestamp::from_millisecond(ms) {
        Ok(t) => t.strftime("%Y-%m.jsonl").to_string(),
        Err(_) => "undated.jsonl".into(),
    }
}

fn is_ledger_file(name: &str) -> bool {
    let stem = name.strip_suffix(".jsonl.zst").or_else(|| name.strip_suffix(".jsonl"));
    match stem {
        Some("undated") => true,
        Some(s) => {
            let b = s.as_bytes();
            b.len() == 7
                && b[4] == b'-'
                && b.iter().enumerate().all(|(i, c)| i == 4 || c.is_ascii_digit())
        }
        None => false,
    }
}

/// Hold `<dir>/.lock`: exclusive to write, shared to read. Released when the file is dropped.
fn lock(dir: &Path, exclusive: bool) -> Result<File> {
    let path = dir.join(LOCK);
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .at(&path)?;
    if exclusive {
        FileExt::lock_exclusive(&f).at(&path)?;
    } else {
        FileExt::lock_shared(&f).at(&path)?;
    }
    Ok(f)
}

/// What [`append`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Appended {
    /// Calls written.
    pub added: u64,
    /// Calls the ledger already held (with as many tokens).
    pub present: u64,
}

/// Append `records` to the ledger in `dir` (created if missing), each to its month's file,
/// leaving out those the ledger already holds (same key, no more tokens) and repeats within
/// `records`. `now_ms` places calls without a time.
///
/// Errors: [`Error::Io`] naming the file when the folder cannot be made, locked, read or
/// written; what was written before the failure stays (every line is whole or torn at the end).
pub fn append(dir: &Path, records: Vec<Record>, now_ms: i64) -> Result<Appended> {
    let mut done = Appended::default();
    if records.is_empty() {
        return Ok(done);
    }
    crate::atomic::create_dir_all(dir)?;
    let _lock = lock(dir, true)?;
    let mut months: BTreeMap<String, Vec<Record>> = BTreeMap::new();
    for r in records {
        months.entry(month_file(r.ts_ms(), now_ms)).or_default().push(r);
    }
    for (name, recs) in months {
        let path = dir.join(&name);
        let mut have: HashMap<Slot, u64> = HashMap::new();
        let mut damage = Damage::default();
        for f in [path.clone(), dir.join(format!("{name}.zst"))] {
            if f.exists() {
                read_file(&f, false, &mut damage, &mut |r| {
                    if let Some(k) = r.slot() {
                        let t = have.entry(k).or_default();
                        *t = (*t).max(r.tokens());
                    }
                })?;
            }
        }
        let mut buf = Vec::new();
        for r in recs {
            let Some(k) = r.slot() else { continue };
            let tokens = r.tokens();
            match have.get(&k) {
                Some(&t) if t >= tokens => done.present += 1,
                _ => {
                    have.insert(k, tokens);
                    serde_json::to_writer(&mut buf, &r)
                        .map_err(|e| Error::internal(e.to_string()))?;
                    buf.push(b'\n');
                    done.added += 1;
                }
            }
        }
        if !buf.is_empty() {
            append_bytes(&path, &buf)?;
        }
    }
    Ok(done)
}

/// Append whole lines with one `write` on an `O_APPEND` descriptor, then `fdatasync`; a file
/// that does not end in a newline (a torn line) gets one first.
fn append_bytes(path: &Path, lines: &[u8]) -> Result<()> {
    use std::io::{Seek, SeekFrom};
    let new = !path.exists();
    let mut f = OpenOptions::new().create(true).append(true).read(true).open(path).at(path)?;
    let len = f.metadata().at(path)?.len();
    let mut torn = false;
    if len > 0 {
        let mut last = [0u8; 1];
        f.seek(SeekFrom::Start(len - 1)).at(path)?;
        f.read_exact(&mut last).at(path)?;
        torn = last[0] != b'\n';
    }
    let mut buf = Vec::with_capacity(lines.len() + 1);
    if torn {
        buf.push(b'\n');
    }
    buf.extend_from_slice(lines);
    f.write_all(&buf).at(path)?;
    f.sync_data().at(path)?;
    if new {
        if let Some(d) = path.parent().and_then(|d| File::open(d).ok()) {
            let _ = d.sync_all(); // best effort: the folder's entry for the new file
        }
    }
    Ok(())
}

/// Read one ledger file, calling `each` on every record. A line that is not a record is
/// counted in `damage` (truncated when it is the last and has no newline) and skipped; under
/// `strict` it is an [`Error::Input`] naming file:line.
fn read_file(
    path: &Path,
    strict: bool,
    damage: &mut Damage,
    each: &mut dyn FnMut(Record),
) -> Result<()> {
    let mut r = BufReader::with_capacity(1 << 16, crate::transcript::lines::open(path)?);
    let mut line = Vec::new();
    let mut no = 0;
    loop {
        line.clear();
        if r.read_until(b'\n', &mut line).at(path)? == 0 {
            return Ok(());
        }
        no += 1;
        let whole = line.last() == Some(&b'\n');
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        if text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Record>(text) {
            Ok(rec) => each(rec),
            Err(e) => {
                let kind = if whole { DamageKind::Malformed } else { DamageKind::Truncated };
                if strict {
                    return Err(Error::input(path, Some(no), format!("not a ledger record: {e}"))
                        .with_hint("a line cut by a killed writer is skipped without --strict"));
                }
                damage.add(kind, path, no);
            }
        }
    }
}

/// The ledger as read: one record per key and root (the copy with the most tokens), in file
/// order.
#[derive(Debug, Default)]
pub struct Ledger {
    /// The records.
    pub records: Vec<Record>,
    /// Damaged lines skipped.
    pub damage: Damage,
    /// Files read.
    pub files: usize,
}

impl Ledger {
    /// The records that complete a measurement of the roots `roots` (ids, [`root_id`]): those
    /// read from one of them, and those written before kit recorded a root; one per key (the
    /// copy with the most tokens), in file order. A call read from a root not measured (a
    /// course lab's, when measuring `~/.claude`) is not part of the measurement.
    pub fn completing(&self, roots: &HashSet<String>) -> Vec<&Record> {
        let mut got: Vec<&Record> = vec![];
        let mut at: HashMap<CallKey, usize> = HashMap::new();
        for r in &self.records {
            let Some(k) = r.key() else { continue };
            if r.root.as_ref().is_some_and(|id| !roots.contains(id)) {
                continue;
            }
            match at.get(&k) {
                Some(&i) if r.tokens() > got[i].tokens() => got[i] = r,
                Some(_) => {}
                None => {
                    at.insert(k, got.len());
                    got.push(r);
                }
            }
        }
        got
    }
}

/// The folder of the transcript root a transcript file lives under: for Claude Code the
/// folder holding `projects/` (`<root>/projects/<project>/<session>.jsonl`, a subagent deeper),
/// for Codex the one holding `sessions/` or `archived_sessions/` (`$CODEX_HOME`). A file
/// outside these layouts (a copy measured by its path) is its own folder's.
pub fn root_of(source: Source, file: &Path) -> PathBuf {
    let names: &[&str] = match source {
        Source::Claude => &["projects"],
        Source::Codex => &["sessions", "archived_sessions"],
    };
    file.ancestors()
        .skip(1)
        .find(|a| a.file_name().is_some_and(|n| names.iter().any(|x| n == *x)))
        .and_then(Path::parent)
        .or_else(|| file.parent())
        .unwrap_or(file)
        .to_path_buf()
}

/// A transcript root's id as the ledger writes it: the first 16 hex digits of the SHA-256 of the
/// folder's canonical path (its longest existing part resolved, links and `..` included, the
/// rest as written), so that `~/.claude` named through a link or with a trailing `/` is the
/// same root, and no path is written in the ledger.
pub fn root_id(root: &Path) -> String {
    use std::path::Component;
    let abs = std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
    let parts: Vec<Component> = abs.components().collect();
    // The longest part that exists is resolved; below it nothing exists, so no link can be
    // there and `..` is taken lexically.
    let canonical = (1..=parts.len())
        .rev()
        .find_map(|n| {
            let mut p = parts[..n].iter().collect::<PathBuf>().canonicalize().ok()?;
            for c in &parts[n..] {
                match c {
                    Component::ParentDir => {
                        p.pop();
                    }
                    Component::Normal(x) => p.push(x),
                    _ => {}
                }
            }
            Some(p)
        })
        .unwrap_or(abs);
    let hex = crate::digest::sha256_hex(canonical.as_os_str().as_encoded_bytes());
    hex[..16].to_string()
}

/// The ids of the roots `kit measure` reads by default ([`discover::default_roots`]): each
/// `$CLAUDE_CONFIG_DIR` folder (else `~/.claude`) and `$CODEX_HOME` (else `~/.codex`).
///
/// Errors: those of [`discover::default_roots`].
pub fn default_root_ids() -> Result<HashSet<String>> {
    let (claude, codex) = discover::default_roots()?;
    Ok(claude.iter().chain(&codex).filter_map(|d| d.parent()).map(root_id).collect())
}

/// One ledger file's records with their places, and its damage.
type FileRead = (Vec<(Slot, Record)>, Damage);

/// Read the ledger in `dir`; None when the folder does not exist.
///
/// Errors: [`Error::Io`] naming the file that cannot be read; under `strict` the first damaged
/// line.
pub fn read(dir: &Path, strict: bool) -> Result<Option<Ledger>> {
    let names = match std::fs::read_dir(dir) {
        Ok(rd) => {
            let mut v: Vec<PathBuf> = rd
                .filter_map(|e| e.ok())
                .filter(|e| is_ledger_file(&e.file_name().to_string_lossy()))
                .map(|e| e.path())
                .collect();
            v.sort();
            v
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(dir, e)),
    };
    // A reader that cannot create the lock (a read-only folder) reads without it.
    let _lock = lock(dir, false).ok();
    let mut led = Ledger { files: names.len(), ..Ledger::default() };
    // Files are parsed in parallel (a month each), then deduplicated in file order.
    let per_file: Vec<Result<FileRead>> = names
        .par_iter()
        .map(|path| {
            let (mut got, mut damage) = (vec![], Damage::default());
            read_file(path, strict, &mut damage, &mut |rec| {
                if let Some(k) = rec.slot() {
                    got.push((k, rec));
                }
            })?;
            Ok((got, damage))
        })
        .collect();
    let mut at: HashMap<Slot, usize> = HashMap::new();
    for r in per_file {
        let (got, damage) = r?;
        led.damage.merge(&damage);
        for (k, rec) in got {
            match at.get(&k) {
                Some(&i) => {
                    if rec.tokens() > led.records[i].tokens() {
                        led.records[i] = rec;
                    }
                }
                None => {
                    at.insert(k, led.records.len());
                    led.records.push(rec);
                }
            }
        }
    }
    Ok(Some(led))
}

/// The project's name: the last part of a working directory (as `kit measure` shows it).
fn project_name(p: &str) -> &str {
    p.trim_end_matches('/').rsplit('/').next().filter(|s| !s.is_empty()).unwrap_or(p)
}

/// A session the ledger should record (the loop's iteration ran it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionRef {
    /// A Claude Code session id: its transcript is looked for under the Claude roots.
    Claude(String),
    /// A Codex rollout file.
    Codex(PathBuf),
}

/// Append the calls of `sessions` to the ledger in `dir`: each is found (a Claude session under
/// the roots of [`discover::claude_roots`], with its subagents), read by the engine, and its
/// calls appended as `kit measure --ledger` would. A session whose transcript is not found is
/// passed over (it may be a Claude Code run with `--no-session-persistence`).
///
/// Errors: the roots cannot be named ([`discover::claude_roots`]), a transcript cannot be read,
/// or those of [`append`].
pub fn record_sessions(
    dir: &Path,
    sessions: &[SessionRef],
    engine: EngineOptions<'_>,
    now_ms: i64,
) -> Result<Appended> {
    let mut records = vec![];
    for s in sessions {
        let mut damage = Damage::default();
        let jobs = match s {
            SessionRef::Codex(p) => vec![Job::Codex(p.clone())],
            SessionRef::Claude(id) => {
                let mut jobs = vec![];
                for root in discover::claude_roots()? {
                    let Ok(dirs) = std::fs::read_dir(root.join("projects")) else { continue };
                    for d in dirs.flatten() {
                        if d.path().join(format!("{id}.jsonl")).is_file() {
                            jobs.extend(
                                discover::discover(&[d.path()], &mut damage)?
                                    .into_iter()
                                    .filter(|j| matches!(j, Job::Claude(f) if f.session_id == *id)),
                            );
                        }
                    }
                }
                jobs
            }
        };
        for job in jobs {
            let (summary, main, subs) = match &job {
                Job::Claude(f) => {
                    let r = claude::read(f, engine)?;
                    (r.summary, r.calls, r.subagent_calls)
                }
                Job::Codex(p) => {
                    let r = codex::read(p, engine)?;
                    (r.summary, r.calls, vec![])
                }
            };
            records.extend(collect(&summary, &main, &subs, true).records);
        }
    }
    append(dir, records, now_ms)
}

/// One session measured by the engine from its ledger records alone (`recs`, in time order; a
/// session whose transcripts are gone, or the part of one that only the ledger holds): its
/// tokens, calls, cost and models, its start and end from the calls' times. No turns,
/// compactions or idle time between calls are known; `dir` (the ledger's folder) is the row's
/// path; a Codex session gets the compaction point its reader assumes for a rollout that gives
/// no window. `recs` may be empty (a summary of nothing).
pub fn summarise_records(
    recs: &[&Record],
    source: Source,
    session: &str,
    engine: EngineOptions<'_>,
    dir: &Path,
) -> SessionSummary {
    let mut b = Builder::new(engine, source, session.to_string(), dir.to_path_buf());
    b.project = recs.first().map(|r| r.project.clone()).unwrap_or_default();
    if source == Source::Codex {
        b.point_override = Some(codex_compaction_point(codex::DEFAULT_CODEX_WINDOW));
    }
    for t in recs.iter().filter_map(|r| r.ts_ms()) {
        b.clock.tick(t);
    }
    let mut stream = Stream { calls: recs.iter().map(|r| r.to_call(source)).collect() };
    b.summarise(&mut stream, true)
}

/// What the tests of kit's crates share about the ledger (not part of kit's interface).
#[doc(hidden)]
pub mod testing {
    use super::Record;

    /// A record of `agent`'s session with id `id` (Claude: `msg`; Codex: `seq`) at `ts`.
    ///
    /// Panics when a Codex `id` is not a whole number.
    pub fn rec(agent: &str, session: &str, id: &str, ts: &str, out: u64) -> Record {
        Record {
            agent: agent.into(),
            session: session.into(),
            project: "proj".into(),
            root: None,
            msg: (agent == "claude").then(|| id.to_string()),
            req: (agent == "claude").then(|| format!("req_{id}")),
            seq: (agent == "codex").then(|| id.parse().unwrap()),
            model: "claude-sonnet-4-5-20250929".into(),
            ts: Some(ts.into()),
            input: 10,
            cw5m: 0,
            cw1h: 100,
            cr: 1000,
            out,
            reason: 0,
            usd: Some(0.01),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testing::rec;
    use super::*;

    #[test]
    fn records_alone_make_a_session_with_its_calls_times_and_project() {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (
            rec("codex", "s", "1", "2026-02-12T20:30:28.504Z", 5),
            rec("codex", "s", "2", "2026-02-12T20:31:00.000Z", 7),
        );
        let s =
            summarise_records(&[&a, &b], Source::Codex, "s", EngineOptions::standard(), d.path());
        assert_eq!((s.api_calls, s.project.as_str(), s.path.as_path()), (2, "proj", d.path()));
        assert_eq!((s.start_ms, s.end_ms), (a.ts_ms(), b.ts_ms()));
        assert_eq!(s.tokens.total(), a.tokens() + b.tokens());
        let none = summarise_records(&[], Source::Claude, "x", EngineOptions::standard(), d.path());
        assert_eq!((none.api_calls, none.project.as_str()), (0, ""));
    }

    #[test]
    fn the_folder_follows_the_xdg_data_home_and_the_override() {
        let p = |vars: &[(&str, &str)]| {
            let vars: Vec<(String, String)> =
                vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            dir_in(|k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())).ok()
        };
        type Vars<'a> = &'a [(&'a str, &'a str)];
        let cases: &[(Vars, Option<&str>)] = &[
            (&[("HOME", "/h")], Some("/h/.local/share/kit/ledger")),
            (&[("XDG_DATA_HOME", "/d"), ("HOME", "/h")], Some("/d/kit/ledger")),
            (&[("XDG_DATA_HOME", "rel"), ("HOME", "/h")], Some("/h/.local/share/kit/ledger")),
            (&[(DIR_VAR, "/l"), ("XDG_DATA_HOME", "/d")], Some("/l")),
            (&[(DIR_VAR, ""), ("HOME", "/h")], Some("/h/.local/share/kit/ledger")),
            (&[("HOME", "")], None),
        ];
        for (vars, want) in cases {
            assert_eq!(p(vars), want.map(PathBuf::from), "{vars:?}");
        }
    }

    #[test]
    fn keys_are_the_engines() {
        let c = rec("claude", "s", "msg_1", "2026-02-12T20:30:28.504Z", 5);
        assert_eq!(c.key_text().as_deref(), Some("msg_1\u{0}req_msg_1"));
        assert_eq!(Record { req: None, ..c.clone() }.key_text().as_deref(), Some("msg_1"));
        assert_eq!(Record { msg: None, ..c.clone() }.key(), None);
        let x = rec("codex", "t", "3", "2026-02-12T20:30:28.504Z", 5);
        assert_eq!(x.key_text().as_deref(), Some("codex\u{0}t\u{0}3"));
        assert_eq!(Record { agent: "other".into(), ..c }.key(), None);
    }

    #[test]
    fn month_files_are_utc_months() {
        let ms = |s: &str| parse_ts_ms(s);
        assert_eq!(month_file(ms("2026-02-28T23:59:59.999Z"), 0), "2026-02.jsonl");
        assert_eq!(month_file(ms("2026-03-01T00:00:00.000Z"), 0), "2026-03.jsonl");
        assert_eq!(month_file(None, ms("2026-10-01T09:00:00.000Z").unwrap()), "2026-10.jsonl");
        for (name, ok) in [
            ("2026-02.jsonl", true),
            ("2026-02.jsonl.zst", true),
            ("undated.jsonl", true),
            (".lock", false),
            ("2026-2.jsonl", false),
            ("notes.jsonl", false),
        ] {
            assert_eq!(is_ledger_file(name), ok, "{name}");
        }
    }

    #[test]
    fn appending_twice_adds_nothing_and_a_larger_copy_wins() {
        let d = tempfile::tempdir().unwrap();
        let a = rec("claude", "s", "msg_1", "2026-02-12T20:30:28.504Z", 5);
        let b = rec("codex", "t", "1", "2026-03-01T00:00:00.000Z", 7);
        // (case, batch, added, present)
        let cases: Vec<(&str, Vec<Record>, u64, u64)> = vec![
            ("first", vec![a.clone(), b.clone()], 2, 0),
            ("the same again", vec![a.clone(), b.clone()], 0, 2),
            ("a repeat within one batch", vec![a.clone(), a.clone()], 0, 2),
            (
                "a cut copy first seen, then the whole one",
                vec![Record { out: 50, ..a.clone() }],
                1,
                0,
            ),
            ("the cut copy again", vec![a.clone()], 0, 1),
        ];
        for (name, batch, added, present) in cases {
            let got = append(d.path(), batch, 0).unwrap();
            assert_eq!((got.added, got.present), (added, present), "{name}");
        }
        let led = read(d.path(), true).unwrap().unwrap();
        assert_eq!(led.files, 2);
        let outs: Vec<u64> = led.records.iter().map(|r| r.out).collect();
        assert_eq!(outs, [50, 7], "one record per key, the larger copy");
        assert!(read(&d.path().join("none"), false).unwrap().is_none());
    }

    #[test]
    fn a_call_is_kept_once_per_root() {
        let d = tempfile::tempdir().unwrap();
        let at = |root: Option<&str>, out: u64| Record {
            root: root.map(str::to_string),
            ..rec("claude", "s", "msg_1", "2026-02-12T20:30:28.504Z", out)
        };
        // (case, batch, added, present)
        let cases: Vec<(&str, Vec<Record>, u64, u64)> = vec![
            ("from a lab", vec![at(Some("lab"), 5)], 1, 0),
            ("the same call from my root", vec![at(Some("mine"), 5)], 1, 0),
            ("again from either", vec![at(Some("lab"), 5), at(Some("mine"), 5)], 0, 2),
            ("a line without a root is a place of its own", vec![at(None, 5)], 1, 0),
        ];
        for (name, batch, added, present) in cases {
            let got = append(d.path(), batch, 0).unwrap();
            assert_eq!((got.added, got.present), (added, present), "{name}");
        }
        let led = read(d.path(), true).unwrap().unwrap();
        assert_eq!(led.records.len(), 3);
        let roots = |ids: &[&str]| ids.iter().map(|r| r.to_string()).collect::<HashSet<_>>();
        // Completing both roots, or one, or none: the call once, with the larger copy.
        for ids in [&["lab", "mine"][..], &["mine"], &["elsewhere"]] {
            assert_eq!(led.completing(&roots(ids)).len(), 1, "{ids:?}");
        }
        let led = Ledger { records: vec![at(Some("lab"), 9), at(Some("mine"), 5)], ..led };
        assert_eq!(led.completing(&roots(&["lab", "mine"]))[0].out, 9);
        assert_eq!(led.completing(&roots(&["mine"]))[0].out, 5);
        assert!(led.completing(&roots(&["elsewhere"])).is_empty());
    }

    #[test]
    fn a_transcript_belongs_to_the_folder_above_projects_or_sessions() {
        let cases = [
            (Source::Claude, "/h/.claude/projects/-home-me-x/s.jsonl", "/h/.claude"),
            (
                Source::Claude,
                "/h/.claude/projects/-home-me-x/s/subagents/agent-a.jsonl",
                "/h/.claude",
            ),
            (Source::Claude, "/lab/.home/.claude/projects/p/s.jsonl", "/lab/.home/.claude"),
            (Source::Codex, "/h/.codex/sessions/2026/02/23/rollout-x.jsonl", "/h/.codex"),
            (Source::Codex, "/h/.codex/archived_sessions/rollout-x.jsonl", "/h/.codex"),
            (Source::Codex, "/sessions/c/sessions/2026/02/23/r.jsonl", "/sessions/c"),
            (Source::Claude, "/tmp/copy/s.jsonl", "/tmp/copy"),
            (Source::Codex, "/h/.claude/projects/p/r.jsonl", "/h/.claude/projects/p"),
        ];
        for (source, file, root) in cases {
            assert_eq!(root_of(source, Path::new(file)), Path::new(root), "{file}");
        }
    }

    #[test]
    fn a_root_has_one_id_however_it_is_named() {
        let d = tempfile::tempdir().unwrap();
        let real = d.path().join("real");
        std::fs::create_dir_all(real.join(".claude")).unwrap();
        std::os::unix::fs::symlink(&real, d.path().join("link")).unwrap();
        let id = |p: &Path| root_id(p);
        let claude = real.join(".claude");
        assert_eq!(id(&claude).len(), 16);
        for same in [
            d.path().join("link/.claude"),
            PathBuf::from(format!("{}/", claude.display())),
            real.join("x/../.claude"),
        ] {
            assert_eq!(id(&same), id(&claude), "{}", same.display());
        }
        // A root that does not exist (deleted) keeps its id, through the link too.
        assert_eq!(id(&d.path().join("link/gone")), id(&real.join("gone")));
        assert_ne!(id(&real.join("gone")), id(&claude));
    }

    #[test]
    fn a_torn_last_line_loses_nothing_before_or_after_it() {
        let d = tempfile::tempdir().unwrap();
        let a = rec("claude", "s", "msg_1", "2026-02-12T20:30:28.504Z", 5);
        let b = rec("claude", "s", "msg_2", "2026-02-12T20:31:00.000Z", 5);
        append(d.path(), vec![a.clone()], 0).unwrap();
        let file = d.path().join("2026-02.jsonl");
        let whole = std::fs::read_to_string(&file).unwrap();
        // A writer killed halfway through its line.
        let line = serde_json::to_string(&b).unwrap();
        std::fs::write(&file, format!("{whole}{}", &line[..line.len() / 2])).unwrap();
        let led = read(d.path(), false).unwrap().unwrap();
        assert_eq!((led.records.len(), led.damage.truncated), (1, 1));
        assert!(read(d.path(), true).is_err(), "strict names the line");
        // The next writer starts a new line: the torn one stays apart, b is whole.
        assert_eq!(append(d.path(), vec![b.clone()], 0).unwrap().added, 1);
        let led = read(d.path(), false).unwrap().unwrap();
        assert_eq!(led.records, [a, b]);
        assert_eq!((led.damage.malformed, led.damage.truncated), (1, 0));
        let text = std::fs::read_to_string(&file).unwrap();
        assert_eq!(text.lines().count(), 3);
    }

    #[test]
    fn two_writers_at_once_add_each_call_once() {
        let d = tempfile::tempdir().unwrap();
        let batch: Vec<Record> = (0..200)
            .map(|i| rec("claude", "s", &format!("msg_{i}"), "2026-02-12T20:30:28.504Z", 5))
            .collect();
        let added: u64 = std::thread::scope(|sc| {
            let hs: Vec<_> = (0..4)
                .map(|_| sc.spawn(|| append(d.path(), batch.clone(), 0).unwrap().added))
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(added, 200);
        let text = std::fs::read_to_string(d.path().join("2026-02.jsonl")).unwrap();
        assert_eq!(text.lines().count(), 200);
    }
}
