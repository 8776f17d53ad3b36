//! The verified handoff (DESIGN §11). A handoff the agent writes about itself certifies nothing;
//! `kit handoff save` appends a stamp block that kit writes, and `kit handoff verify` checks it
//! against the repository and, optionally, against the session's transcript.
//!
//! `longrun/handoff.md` = the agent's summary, then the stamp block:
//!
//! ````markdown
//! <summary: what is done, what remains, next action>
//!
//! <!-- kit handoff stamp: written by `kit handoff save`; any edit makes `kit handoff verify` fail -->
//! ```toml kit-handoff-stamp
//! format_version = 2
//! stamp = "5d0c1f2a9b3e"          # id: HMAC-SHA256 of all below + the summary, 12 hex
//! time = "2026-10-01T09:00:00Z"   # kit::clock
//! commit = "<40 hex>"             # HEAD when saved
//! dirty = true                    # uncommitted changes at that moment
//! base_commit = "<40 hex>"        # frozen.toml base_commit, else HEAD
//! [files]                         # repo-relative path = sha256 hex, or "deleted"
//! "longrun/progress.md" = "…"
//! "src/lib.rs" = "…"
//! ```
//! ````
//!
//! Fingerprinted: the state files `goal.md`, `config.toml`, `frozen.toml`, `progress.md`,
//! `decisions.md` (those that exist) and every file changed since the base commit (tracked
//! changes and untracked, non-ignored files). Not fingerprinted, by design: `handoff.md` (it
//! holds the stamp itself) and `journal.jsonl` (kit appends to it on every hook firing, so it
//! changes after every save without anything being wrong).
//!
//! Three witnesses make the stamp hard to forge (QA finding F2):
//! - the stamp id is an HMAC-SHA256 of the block's fields and the summary under a per-user
//!   secret kept outside the repository ([`key`]): a block typed or edited by hand does not
//!   carry it, and `verify` never prints the id it expected (that would be a recipe); it says
//!   what differs instead;
//! - `save` journals a `handoff_saved` event with the stamp id and the sha256 of `handoff.md`
//!   and of the summary, which `verify` compares with the file (`kit loop` keeps these events
//!   when it cuts what the agent appended to the journal, as it keeps `hook` events);
//! - with `--transcript`/`--session`, the session must hold a Bash tool call that ran nothing
//!   but `kit handoff save` ([`command`]), did not fail (`is_error`), and whose result carries
//!   the exact line `save` prints with this stamp id.
//!
//! Under `KIT_FAKE_CLOCK` the id is deterministic for a given key.

pub mod command;
pub mod key;

pub use command::runs_handoff_save;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::error::{Error, IoContext, Result};
use crate::longrun::journal::Journal;
use crate::longrun::Project;

/// The stamp format this kit writes and checks. Format 1 had an unkeyed id anyone could
/// recompute; it no longer verifies.
pub const FORMAT_VERSION: u32 = 2;
/// The fence info string that opens the stamp block.
pub const FENCE: &str = "```toml kit-handoff-stamp";
/// The comment line kit writes before the block.
pub const MARKER: &str =
    "<!-- kit handoff stamp: written by `kit handoff save`; any edit makes `kit handoff verify` fail -->";
/// State files that are fingerprinted (in `longrun/`).
pub const FINGERPRINTED_STATE: [&str; 5] =
    ["goal.md", "config.toml", "frozen.toml", "progress.md", "decisions.md"];
/// Recorded instead of a hash for a file deleted since the base commit.
pub const DELETED: &str = "deleted";
/// Hex digits of a stamp id ([`Stamp::compute_id`]).
pub const ID_LEN: usize = 12;

/// The stamp block.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stamp {
    /// Format of the block.
    pub format_version: u32,
    /// The stamp id (12 hex digits).
    pub stamp: String,
    /// When it was saved (RFC 3339 UTC, kit clock).
    pub time: String,
    /// HEAD when it was saved.
    pub commit: String,
    /// Whether the tree had uncommitted changes.
    pub dirty: bool,
    /// The goal's base commit the changed files were listed against.
    pub base_commit: String,
    /// Repo-relative path → sha256 hex, or [`DELETED`].
    pub files: BTreeMap<String, String>,
}

impl Stamp {
    /// The id these fields and `summary` give under `key`: the first 12 hex digits of the
    /// HMAC-SHA256 ([`crate::keys::hmac_sha256`]) of a canonical text of the fields and the
    /// summary.
    pub fn compute_id(&self, key: &[u8], summary: &str) -> String {
        hex::encode(crate::keys::hmac_sha256(key, self.message(summary).as_bytes()))[..ID_LEN]
            .to_string()
    }

    /// Whether the block's own id, `self.stamp`, is [`Stamp::compute_id`]`(key, summary)`,
    /// compared in constant time ([`crate::keys::verify_hex`]).
    pub fn id_verifies(&self, key: &[u8], summary: &str) -> bool {
        self.stamp.len() == ID_LEN
            && crate::keys::verify_hex(key, self.message(summary).as_bytes(), &self.stamp)
    }

    /// The canonical text the id signs: the fields, one file per line, then the summary.
    fn message(&self, summary: &str) -> String {
        let mut msg = format!(
            "kit-handoff/{}\n{}\n{}\n{}\n{}\n",
            self.format_version, self.time, self.commit, self.dirty, self.base_commit
        );
        for (p, v) in &self.files {
            msg.push_str(&format!("{p}\0{v}\n"));
        }
        msg.push_str(summary.trim());
        msg
    }
}

/// A parsed `handoff.md`.
#[derive(Clone, Debug)]
pub struct Handoff {
    /// The summary (everything before the stamp block), trimmed.
    pub summary: String,
    /// The stamp, when the file has a block.
    pub stamp: Option<Stamp>,
    /// Text after the stamp block, trimmed (empty for a file `kit handoff save` wrote): the
    /// stamp must end the file, so [`check`] fails on it.
    pub trailing: String,
    /// 1-based line where `trailing` starts (0 when empty).
    pub trailing_line: usize,
    /// sha256 hex of the whole file as read.
    pub sha256: String,
}

/// Split `text` into summary and stamp block. `path` names the file in errors.
///
/// Errors: [`Error::Input`] with `handoff.md:LINE` when the block does not parse.
pub fn parse(path: &Path, text: &str) -> Result<Handoff> {
    let lines: Vec<&str> = text.lines().collect();
    let Some(open) = lines.iter().rposition(|l| l.trim_end() == FENCE) else {
        return Ok(Handoff {
            summary: text.trim().to_string(),
            stamp: None,
            trailing: String::new(),
            trailing_line: 0,
            sha256: sha256_hex(text.as_bytes()),
        });
    };
    let close = lines[open + 1..]
        .iter()
        .position(|l| l.trim_end() == "```")
        .map(|i| open + 1 + i)
        .ok_or_else(|| {
            Error::input(path, Some(open + 1), "the stamp block is not closed with ```")
        })?;
    let body = lines[open + 1..close].join("\n");
    let stamp: Stamp = toml::from_str(&body).map_err(|e| {
        let line = e.span().map(|s| open + 1 + crate::longrun::config::line_of(&body, s.start));
        Error::input(path, line, format!("stamp block: {}", e.message().trim()))
            .with_hint("kit handoff save (rewrites the block)")
    })?;
    let mut cut = open;
    if cut > 0 && lines[cut - 1].trim() == MARKER {
        cut -= 1;
    }
    let after = &lines[close + 1..];
    let (trailing, trailing_line) = match after.iter().position(|l| !l.trim().is_empty()) {
        Some(i) => (after[i..].join("\n").trim().to_string(), close + 2 + i),
        None => (String::new(), 0),
    };
    Ok(Handoff {
        summary: lines[..cut].join("\n").trim().to_string(),
        stamp: Some(stamp),
        trailing,
        trailing_line,
        sha256: sha256_hex(text.as_bytes()),
    })
}

pub use crate::digest::sha256_hex; // moved: crate::digest::sha256_hex (issue 11)

/// The stamp id of the handoff at `path`, if it has a block that parses (cheap; for the hook).
pub fn current_stamp_id(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    parse(path, &text).ok()?.stamp.map(|s| s.stamp)
}

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
/// Errors: [`Error::Io`] when the file cannot be read.
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

/// Options of `kit handoff save`.
#[derive(Clone, Debug)]
pub struct SaveOptions {
    /// Where kit runs.
    pub cwd: PathBuf,
    /// The summary piped on stdin (`None` when stdin is a terminal); empty means none.
    pub piped: Option<String>,
}

/// `kit handoff save`: write the summary (the piped text when there is one, else the file's
/// current body) and a fresh stamp block to `longrun/handoff.md` atomically; journal
/// `handoff_saved`; print one line with the stamp id.
///
/// Errors: [`Error::Usage`] outside an initialised repository or with no summary;
/// [`Error::Internal`] when git fails (e.g. no commit yet).
pub fn save(opts: &SaveOptions, out: &mut dyn Write) -> Result<u8> {
    let project = Project::discover_initialised(&opts.cwd)?;
    let path = project.handoff();
    let piped = opts.piped.as_deref().unwrap_or("");
    let summary = if piped.trim().is_empty() {
        match std::fs::read_to_string(&path) {
            Ok(text) => parse(&path, &text)
                .map(|h| {
                    if h.trailing.is_empty() {
                        h.summary
                    } else {
                        format!("{}\n\n{}", h.summary, h.trailing)
                    }
                })
                .unwrap_or_else(|_| text.trim().to_string()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(Error::io(&path, e)),
        }
    } else {
        piped.trim().to_string()
    };
    if summary.is_empty() || is_template(&summary) {
        return Err(Error::usage("no handoff summary to save: longrun/handoff.md holds no summary (only the template) and nothing came on stdin")
            .with_hint("write the summary and next action into longrun/handoff.md, or: echo \"…\" | kit handoff save"));
    }
    let key = key::load_or_create(&key::project_path(&project.root)?)?;
    let stamp = stamp_now(&project, &key, &summary)?;
    let block = toml::to_string(&stamp).map_err(|e| Error::internal(e.to_string()))?;
    let text = format!("{summary}\n\n{MARKER}\n{FENCE}\n{}```\n", block);
    crate::atomic::write_atomic(&path, text.as_bytes())?;
    Journal::new(project.journal()).append(
        "handoff_saved",
        json!({"stamp": stamp.stamp, "commit": stamp.commit, "dirty": stamp.dirty, "files": stamp.files.len(),
               "handoff_sha256": sha256_hex(text.as_bytes()), "summary_sha256": sha256_hex(summary.as_bytes())}),
    )?;
    writeln!(
        out,
        "handoff saved: stamp {} (commit {}{}, {} files fingerprinted) in longrun/handoff.md",
        stamp.stamp,
        &stamp.commit[..stamp.commit.len().min(7)],
        if stamp.dirty { ", dirty" } else { "" },
        stamp.files.len()
    )
    .map_err(|e| Error::io("stdout", e))?;
    Ok(0)
}

/// True when `text` is still the template `kit init` wrote.
fn is_template(text: &str) -> bool {
    crate::embedded::kit_file("templates/handoff.md").is_some_and(|t| t.trim() == text.trim())
}

fn stamp_now(project: &Project, key: &[u8], summary: &str) -> Result<Stamp> {
    let root = &project.root;
    let commit = git(root, &["rev-parse", "HEAD"])
        .map_err(|e| e.with_hint("commit once before saving a handoff"))?;
    let commit = commit.trim().to_string();
    let dirty = !git(root, &["status", "--porcelain"])?.trim().is_empty();
    let base_commit = base_commit(project).unwrap_or_else(|| commit.clone());
    let mut files = BTreeMap::new();
    for path in fingerprinted_paths(project, &base_commit)? {
        files.insert(path.clone(), fingerprint(&root.join(&path))?);
    }
    let mut stamp = Stamp {
        format_version: FORMAT_VERSION,
        stamp: String::new(),
        time: crate::clock::now_rfc3339(),
        commit,
        dirty,
        base_commit,
        files,
    };
    stamp.stamp = stamp.compute_id(key, summary);
    Ok(stamp)
}

/// The goal's base commit: `base_commit` in `longrun/frozen.toml`, when present.
fn base_commit(project: &Project) -> Option<String> {
    let text = std::fs::read_to_string(project.frozen()).ok()?;
    let v: toml::Value = toml::from_str(&text).ok()?;
    v.get("base_commit").and_then(|b| b.as_str()).map(str::to_string).filter(|s| !s.is_empty())
}

/// Repo-relative paths to fingerprint: existing state files, then files changed since `base`.
fn fingerprinted_paths(project: &Project, base: &str) -> Result<Vec<String>> {
    let mut out: Vec<String> = FINGERPRINTED_STATE
        .iter()
        .filter(|f| project.dir.join(f).is_file())
        .map(|f| format!("{}/{f}", crate::longrun::DIR))
        .collect();
    out.extend(changed_since(project, base)?);
    out.sort();
    out.dedup();
    Ok(out)
}

/// Files changed since `base` (tracked, in the working tree) and untracked non-ignored files,
/// outside `longrun/`.
fn changed_since(project: &Project, base: &str) -> Result<Vec<String>> {
    let root = &project.root;
    let tracked = git(root, &["diff", "--name-only", "-z", base, "--"])?;
    let untracked = git(root, &["ls-files", "--others", "--exclude-standard", "-z"])?;
    // Everything under longrun/ is left out here: its state files are fingerprinted by name
    // (FINGERPRINTED_STATE), handoff.md and journal.jsonl change by design, and the rest is
    // runtime (.hook/, .runs/, .lock, PAUSE) even where an older .gitignore does not say so.
    let longrun = format!("{}/", crate::longrun::DIR);
    Ok(tracked
        .split('\0')
        .chain(untracked.split('\0'))
        .filter(|p| !p.is_empty() && !p.starts_with(&longrun))
        .map(str::to_string)
        .collect())
}

/// sha256 hex of a file, or [`DELETED`] when it does not exist.
fn fingerprint(path: &Path) -> Result<String> {
    match std::fs::File::open(path) {
        Ok(f) => crate::digest::sha256_reader(f).at(path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(DELETED.to_string()),
        Err(e) => Err(Error::io(path, e)),
    }
}

fn git(root: &Path, args: &[&str]) -> Result<String> {
    crate::git::output_in(root, &[], args)
}

/// What [`check`] found: the checks that passed and the problems, one line each.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Checks that passed, e.g. `HEAD is still 1a2b3c4`.
    pub ok: Vec<String>,
    /// Problems, e.g. `lib.py changed since the handoff`; empty when the handoff verifies.
    pub problems: Vec<String>,
}

/// The checks of `kit handoff verify` without the transcript proof (DESIGN §11): nothing
/// follows the stamp block, the stamp id
/// matches its block and `summary`, HEAD is the stamp's commit, every fingerprint matches, and
/// no file changed since the base commit lacks a fingerprint. The hook's Stop check uses it too.
///
/// Errors: [`Error::Internal`] when git fails; [`Error::Io`] when a file cannot be read.
pub fn check(project: &Project, handoff: &Handoff, stamp: &Stamp) -> Result<Report> {
    let mut r = Report::default();
    if !handoff.trailing.is_empty() {
        let first = handoff.trailing.lines().next().unwrap_or("");
        r.problems.push(format!(
            "text after the stamp block (line {}: `{}`): the stamp must end the file, so this text is not covered by it",
            handoff.trailing_line,
            first.chars().take(60).collect::<String>()
        ));
    }
    check_id(project, handoff, stamp, &mut r)?;
    let head = git(&project.root, &["rev-parse", "HEAD"])?.trim().to_string();
    if head == stamp.commit {
        r.ok.push(format!("HEAD is still {}", short(&head)));
    } else {
        let count =
            git(&project.root, &["rev-list", "--count", &format!("{}..HEAD", stamp.commit)])
                .ok()
                .and_then(|s| s.trim().parse::<u64>().ok());
        r.problems.push(match count {
            Some(n) if n > 0 => format!(
                "HEAD moved: {n} new commit(s) since the handoff (saved at {}, HEAD is now {})",
                short(&stamp.commit),
                short(&head)
            ),
            _ => format!(
                "HEAD is {}, not the handoff's commit {}",
                short(&head),
                short(&stamp.commit)
            ),
        });
    }
    let mut mismatched = 0;
    for (p, want) in &stamp.files {
        let now = fingerprint(&project.root.join(p))?;
        if &now != want {
            mismatched += 1;
            r.problems.push(match (want.as_str(), now.as_str()) {
                (DELETED, _) => format!("{p} reappeared since the handoff"),
                (_, DELETED) => format!("{p} was deleted since the handoff"),
                _ => format!("{p} changed since the handoff"),
            });
        }
    }
    if mismatched == 0 {
        r.ok.push(format!("{} fingerprints match", stamp.files.len()));
    }
    for p in changed_since(project, &stamp.base_commit).unwrap_or_default() {
        if !stamp.files.contains_key(&p) {
            r.problems.push(format!(
                "{p} is new or changed since the handoff (it has no fingerprint in the stamp)"
            ));
        }
    }
    Ok(r)
}

/// The keyed stamp id and the journal's `handoff_saved` record, in `r`. Never names the id the
/// block should have carried: it says what differs instead.
fn check_id(project: &Project, handoff: &Handoff, stamp: &Stamp, r: &mut Report) -> Result<()> {
    let saved = saved_event(project, &stamp.stamp);
    let summary_edited = saved.as_ref().is_some_and(|e| {
        e.get("summary_sha256").and_then(Value::as_str)
            != Some(sha256_hex(handoff.summary.as_bytes()).as_str())
    });
    if stamp.format_version != FORMAT_VERSION {
        r.problems.push(format!(
            "stamp format {} is not format {FORMAT_VERSION} (its id is not keyed, anyone can recompute it): save again with kit handoff save",
            stamp.format_version
        ));
    } else {
        let path = key::project_path(&project.root)?;
        match key::load(&path)? {
            None => r.problems.push(format!(
                "no handoff key at {}: this stamp was not made by `kit handoff save` for this user (another user or machine, or written by hand)",
                path.display()
            )),
            Some(k) if stamp.id_verifies(&k, &handoff.summary) => {
                r.ok.push("stamp id is kit's keyed id of the block and the summary".into())
            }
            Some(_) => r.problems.push(format!(
                "stamp id {} is not kit's keyed id of this block and summary: {}",
                stamp.stamp,
                match &saved {
                    Some(_) if summary_edited => "the summary was edited after `kit handoff save`",
                    Some(_) => "the stamp block was edited after `kit handoff save`",
                    None => "written by hand (no `kit handoff save` journaled this stamp)",
                }
            )),
        }
    }
    match saved {
        None => r.problems.push(format!(
            "the journal (longrun/journal.jsonl) records no `kit handoff save` of stamp {}",
            stamp.stamp
        )),
        Some(e) if e.get("handoff_sha256").and_then(Value::as_str) == Some(handoff.sha256.as_str()) => {
            r.ok.push("the journal records this save (sha256 of handoff.md matches)".into())
        }
        Some(_) => r.problems.push(format!(
            "handoff.md is not the file `kit handoff save` wrote for stamp {} (its sha256 differs from the journal's): {}",
            stamp.stamp,
            if summary_edited { "the summary was edited" } else { "the stamp block or the text around it was edited" }
        )),
    }
    Ok(())
}

/// The last `handoff_saved` journal event of stamp `id` (a damaged journal reads as none).
fn saved_event(project: &Project, id: &str) -> Option<Value> {
    let read = crate::longrun::journal::read(&project.journal()).ok()?;
    read.events.into_iter().rev().find(|e| {
        e.get("event").and_then(Value::as_str) == Some("handoff_saved")
            && e.get("stamp").and_then(Value::as_str) == Some(id)
    })
}

/// [`check`] on the handoff of the `longrun/` folder at `longrun` (for the hook). `None` when
/// there is no handoff with a stamp block that parses.
///
/// Errors: as [`check`].
pub fn check_longrun(longrun: &Path) -> Result<Option<Report>> {
    let path = longrun.join("handoff.md");
    let Ok(text) = std::fs::read_to_string(&path) else { return Ok(None) };
    let Ok(handoff) = parse(&path, &text) else { return Ok(None) };
    let Some(stamp) = &handoff.stamp else { return Ok(None) };
    let root = longrun.parent().unwrap_or(longrun).to_path_buf();
    let project = Project { root, dir: longrun.to_path_buf() };
    check(&project, &handoff, stamp).map(Some)
}

/// Where `kit handoff verify` looks for the save in a transcript.
#[derive(Clone, Debug)]
pub enum ProofSource {
    /// A transcript file.
    Transcript(PathBuf),
    /// A session id (or prefix) under the Claude Code roots.
    Session(String),
}

/// Options of `kit handoff verify`.
#[derive(Clone, Debug)]
pub struct VerifyOptions {
    /// Where kit runs.
    pub cwd: PathBuf,
    /// Also prove the save in this session's transcript.
    pub proof: Option<ProofSource>,
}

/// `kit handoff verify`: print one line per check, then the verdict.
///
/// Errors: [`Error::Input`] naming `longrun/handoff.md` when it has no block, the block does not
/// parse, or any check fails (exit 2); [`Error::Usage`] outside an initialised repository.
pub fn verify(opts: &VerifyOptions, out: &mut dyn Write) -> Result<u8> {
    let project = Project::discover_initialised(&opts.cwd)?;
    let path = project.handoff();
    let shown = PathBuf::from(format!("{}/handoff.md", crate::longrun::DIR));
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(
                Error::input(&shown, None, "no handoff saved yet").with_hint("kit handoff save")
            )
        }
        Err(e) => return Err(Error::io(&path, e)),
    };
    let handoff = parse(&shown, &text)?;
    let Some(stamp) = handoff.stamp.clone() else {
        return Err(Error::input(&shown, None, "no stamp block: this handoff was not written by `kit handoff save` (a hand-written handoff proves nothing)")
            .with_hint("kit handoff save"));
    };
    let w =
        |out: &mut dyn Write, s: String| writeln!(out, "{s}").map_err(|e| Error::io("stdout", e));
    w(
        out,
        format!(
            "handoff stamp {} saved {} at commit {}",
            stamp.stamp,
            stamp.time,
            short(&stamp.commit)
        ),
    )?;
    let report = check(&project, &handoff, &stamp)?;
    for ok in &report.ok {
        w(out, format!("  ok   {ok}"))?;
    }
    let mut problems = report.problems;
    if let Some(src) = &opts.proof {
        let transcript = match src {
            ProofSource::Transcript(p) => p.clone(),
            ProofSource::Session(id) => crate::transcript::discover::find_session(id)?,
        };
        match prove_in_transcript(&transcript, &stamp.stamp)? {
            Some(p) => w(
                out,
                format!(
                    "  ok   transcript line {} runs `kit handoff save` ({}); its result on line {} carries stamp {}",
                    p.call_line, p.tool_use_id, p.result_line, stamp.stamp
                ),
            )?,
            None => problems.push(format!(
                "{} holds no tool call that ran `kit handoff save` with a result carrying stamp {}: not saved in that session",
                transcript.display(),
                stamp.stamp
            )),
        }
    }
    for p in &problems {
        w(out, format!("  FAIL {p}"))?;
    }
    if problems.is_empty() {
        w(out, format!("handoff {} verifies", stamp.stamp))?;
        Ok(0)
    } else {
        Err(Error::input(
            shown,
            None,
            format!("handoff {} does not verify ({} problem(s))", stamp.stamp, problems.len()),
        )
        .with_hint("update the summary in longrun/handoff.md, then kit handoff save"))
    }
}

fn short(commit: &str) -> &str {
    &commit[..commit.len().min(7)]
}

/// What a session resuming after a compaction (or a resume) is told: the handoff's summary and
/// its next action (from the handoff, else from `progress.md`). `None` when there is no handoff.
pub fn resume_context(longrun: &Path, source: &str) -> Option<String> {
    let path = longrun.join("handoff.md");
    let text = std::fs::read_to_string(&path).ok()?;
    let h = parse(&path, &text).ok()?;
    if h.summary.is_empty() || (h.stamp.is_none() && is_template(&h.summary)) {
        return None;
    }
    let stamp = match &h.stamp {
        Some(s) => format!("stamp {}, saved {} at commit {}", s.stamp, s.time, short(&s.commit)),
        None => "not stamped: written by hand, unverified".to_string(),
    };
    // The summary's own next action is already in it: repeat only one taken from progress.md.
    let next = match next_action(&h.summary) {
        Some(_) => String::new(),
        None => format!(
            "\n\nNext action: {}",
            std::fs::read_to_string(longrun.join("progress.md"))
                .ok()
                .and_then(|p| next_action(&p))
                .unwrap_or_else(|| "none given".to_string())
        ),
    };
    let mut summary = h.summary.clone();
    if summary.len() > MAX_SUMMARY {
        let mut cut = MAX_SUMMARY;
        while !summary.is_char_boundary(cut) {
            cut -= 1;
        }
        summary.truncate(cut);
        summary.push_str("\n[… cut; read longrun/handoff.md]");
    }
    let after = if source == "compact" { "a compaction" } else { "a resume" };
    Some(format!(
        "kit: this session continues after {after}. The last handoff (longrun/handoff.md, {stamp}):\n\n{summary}{next}\n\nRun `kit handoff verify` to check the handoff still matches the tree before relying on it."
    ))
}

/// Longest summary injected at SessionStart, bytes (Claude Code spills longer context to a file).
const MAX_SUMMARY: usize = 6000;

/// The next action in a Markdown text: the paragraph under a heading that says "next", or the
/// rest of a line starting `Next action:` / `- Next:`.
pub fn next_action(text: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim().trim_start_matches(['-', '*', ' ']);
        let lower = t.to_ascii_lowercase();
        if t.starts_with('#') && lower.contains("next") {
            let body: Vec<&str> = lines[i + 1..]
                .iter()
                .skip_while(|l| l.trim().is_empty())
                .take_while(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
                .map(|l| l.trim())
                .filter(|l| !is_placeholder(l))
                .collect();
            if !body.is_empty() {
                return Some(body.join(" "));
            }
        }
        for prefix in ["next action:", "next:"] {
            if lower.starts_with(prefix) {
                let rest = t[prefix.len()..].trim();
                if !rest.is_empty() && !is_placeholder(rest) {
                    return Some(rest.trim_matches('*').trim().to_string());
                }
            }
        }
    }
    None
}

/// True for template placeholder text: a line of `kit init`'s progress or handoff template, a
/// line wholly in parentheses (`(The one concrete step to take next.)`) or an HTML comment.
fn is_placeholder(line: &str) -> bool {
    let l = line.trim();
    (l.starts_with('(') && l.ends_with(')'))
        || (l.starts_with("<!--") && l.ends_with("-->"))
        || ["templates/progress.md", "templates/handoff.md"].iter().any(|t| {
            crate::embedded::kit_file(t).is_some_and(|t| {
                t.lines().any(|tl| tl.trim() == l && !l.starts_with('#') && !l.is_empty())
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_proof_is_found_in_plain_and_zstd_transcripts() {
        let call = json!({"message": {"content": [{"type": "tool_use", "name": "Bash", "id": "t1",
            "input": {"command": "kit handoff save <<'EOF'\nDone.\nEOF"}}]}});
        let result = json!({"message": {"content": [{"type": "tool_result", "tool_use_id": "t1",
            "content": "handoff saved: stamp 5d0c1f2a9b3e (commit 1a2b3c4, 3 files fingerprinted) in longrun/handoff.md"}]}});
        let text = format!("{{\"type\":\"progress\"}}\n{call}\nnot json\n{result}\n");
        let d = tempfile::tempdir().unwrap();
        let plain = d.path().join("s.jsonl");
        std::fs::write(&plain, &text).unwrap();
        let zst = d.path().join("s.jsonl.zst");
        std::fs::write(&zst, zstd::encode_all(text.as_bytes(), 3).unwrap()).unwrap();
        let want = Proof { tool_use_id: "t1".into(), call_line: 2, result_line: 4 };
        for p in [&plain, &zst] {
            assert_eq!(prove_in_transcript(p, "5d0c1f2a9b3e").unwrap().as_ref(), Some(&want));
            assert_eq!(prove_in_transcript(p, "000000000000").unwrap(), None);
        }
    }

    #[test]
    fn finds_the_stamp_in_output() {
        let line = "handoff saved: stamp 5d0c1f2a9b3e (commit 1a2b3c4, dirty, 3 files fingerprinted) in longrun/handoff.md";
        assert_eq!(stamp_in_output(&format!("x\n{line}\n")).as_deref(), Some("5d0c1f2a9b3e"));
        let clean = line.replace(", dirty", "");
        assert_eq!(stamp_in_output(&clean).as_deref(), Some("5d0c1f2a9b3e"));
        assert_eq!(stamp_in_output("kit handoff save stamp 5d0c1f2a9b3e"), None);
        assert_eq!(stamp_in_output(&format!("echo {line}")), None);
        assert_eq!(stamp_in_output("handoff saved: stamp 5d0c1f2a9b3e (commit abc)"), None);
        assert_eq!(stamp_in_output("stamp 5d0c1f2a9b3e0 too long"), None);
        assert_eq!(stamp_in_output("no stamp here"), None);
    }

    #[test]
    fn parse_splits_summary_and_block_and_names_bad_lines() {
        let text = format!(
            "Done: a.\n\n{MARKER}\n{FENCE}\nformat_version = 1\nstamp = \"x\"\ntime = \"t\"\ncommit = \"c\"\ndirty = false\nbase_commit = \"b\"\n[files]\n\"a\" = \"h\"\n```\n"
        );
        let h = parse(Path::new("handoff.md"), &text).unwrap();
        assert_eq!(h.summary, "Done: a.");
        assert_eq!(h.stamp.unwrap().files["a"], "h");
        let bad = text.replace("dirty = false", "dirty = maybe");
        match parse(Path::new("handoff.md"), &bad) {
            Err(Error::Input { line: Some(9), .. }) => {}
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn resume_context_names_the_next_action_once() {
        // QA F10: the summary's "Next action: W" was repeated after it.
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("handoff.md"), "Summary: v5\nNext action: W\n").unwrap();
        let text = resume_context(d.path(), "compact").unwrap();
        assert_eq!(text.matches("Next action: W").count(), 1, "{text}");
        std::fs::write(d.path().join("handoff.md"), "Summary: v5\n").unwrap();
        std::fs::write(d.path().join("progress.md"), "## Next action\nX\n").unwrap();
        let text = resume_context(d.path(), "resume").unwrap();
        assert!(text.contains("Summary: v5\n\nNext action: X\n\nRun"), "{text}");
    }

    #[test]
    fn next_action_from_heading_or_line() {
        assert_eq!(
            next_action("# Progress\n## Next action\n\nWrite the parser.\nThen test.\n\n## Done")
                .as_deref(),
            Some("Write the parser. Then test.")
        );
        assert_eq!(
            next_action("Done: x\nNext action: run the tests").as_deref(),
            Some("run the tests")
        );
        assert_eq!(next_action("nothing"), None);
        let template = crate::embedded::kit_file("templates/progress.md").unwrap();
        assert_eq!(next_action(template), None, "the template's placeholder is no next action");
        assert_eq!(next_action("## Next action\n(The one concrete step to take next.)\n"), None);
    }

    #[test]
    fn fuzz_mutated_stamp_blocks_never_panic() {
        let text = format!(
            "Done: a.\n\n{MARKER}\n{FENCE}\nformat_version = 1\nstamp = \"5d0c1f2a9b3e\"\ntime = \"2026-10-01T09:00:00Z\"\ncommit = \"c\"\ndirty = false\nbase_commit = \"b\"\n[files]\n\"a\" = \"h\"\n```\n"
        );
        let mut rng = crate::testing::Rng(42);
        let alphabet = b"`\"=[]#\n a0-";
        for _ in 0..2000 {
            let mut bytes = text.clone().into_bytes();
            for _ in 0..1 + rng.below(6) {
                if bytes.is_empty() {
                    break;
                }
                let i = rng.below(bytes.len());
                match rng.below(3) {
                    0 => bytes[i] = alphabet[rng.below(alphabet.len())],
                    1 => {
                        bytes.remove(i);
                    }
                    _ => bytes.truncate(i),
                }
            }
            let t = String::from_utf8_lossy(&bytes);
            match parse(Path::new("handoff.md"), &t) {
                Ok(h) => {
                    if let Some(s) = h.stamp {
                        let _ = s.compute_id(b"k", &h.summary);
                    }
                }
                Err(Error::Input { .. }) => {}
                Err(other) => panic!("{other:?}"),
            }
            let _ = stamp_in_output(&t);
            let _ = next_action(&t);
        }
    }
}
