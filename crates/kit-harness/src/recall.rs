//! `kit recall QUERY [PATH…]` (DESIGN §9): search everything said in all transcripts — user
//! prompts, assistant text and thinking, tool input and tool output — of Claude Code and Codex,
//! and print session, time, role and a snippet with the match marked. "The agent forgot" is
//! often "it was said three sessions ago"; this finds where.
//!
//! Speed: a fixed query is first looked for in the raw bytes of each line (`memchr::memmem`);
//! only lines that contain it are parsed. That is sound because JSON writers used by both agents
//! escape only `"`, `\` and control characters, so a query without those appears verbatim in
//! the line when it appears in a decoded string. With `-i` the same holds for the query
//! matched ignoring case (a case-insensitive regex over the raw bytes, then over the text).
//! Files are searched in parallel.
//!
//! JSON output (`kit.recall/1`): each match has `snippet` and `match_start`/`match_end`, which
//! are UTF-8 **byte** offsets into `snippet` (end exclusive), not character offsets: they
//! differ as soon as the snippet holds a non-ASCII character (`…`, accents, CJK).

use std::borrow::Cow;
use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;
use serde::Serialize;

use crate::error::{Error, Result, EXIT_OK};
use crate::term::Theme;
use crate::transcript::discover::{self, Job};
use crate::transcript::line::{claude, codex, Raw};
use crate::transcript::lines::{self, Parsed};
use crate::transcript::{format_ts_ms, parse_ts_ms, Damage, ReadLimits, Source};

/// Who said it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The human's prompts.
    User,
    /// The model's text and thinking.
    Assistant,
    /// Tool calls' input and tool results.
    Tool,
}

impl Role {
    /// Parse `--role`. Errors: not user, assistant or tool.
    pub fn parse(s: &str) -> Result<Role> {
        match s {
            "user" => Ok(Role::User),
            "assistant" => Ok(Role::Assistant),
            "tool" => Ok(Role::Tool),
            o => Err(Error::usage(format!("unknown role `{o}`"))
                .with_hint("use --role user, --role assistant or --role tool")),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// What `kit recall` was asked, validated.
#[derive(Clone, Debug)]
pub struct RecallOptions {
    /// The text or regular expression.
    pub query: String,
    /// Roots, folders or files; empty = the default roots.
    pub paths: Vec<PathBuf>,
    /// QUERY is a regular expression.
    pub regex: bool,
    /// Match ignoring case (Unicode simple case folding), for a fixed string or a regex.
    pub ignore_case: bool,
    /// Only this role.
    pub role: Option<Role>,
    /// Only projects whose name or folder contains this.
    pub project: Option<String>,
    /// Only messages at or after this time (Unix ms).
    pub since_ms: Option<i64>,
    /// Print JSON.
    pub json: bool,
    /// Show at most this many matches (the newest).
    pub limit: usize,
    /// Fail on the first damaged line among those read.
    pub strict: bool,
}

/// One match.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Hit {
    /// Session id.
    pub session_id: String,
    /// Source.
    pub source: Source,
    /// Project (working directory, else folder name).
    pub project: String,
    /// When (RFC 3339).
    pub time: Option<String>,
    /// Who.
    pub role: Role,
    /// Text around the match, on one line (newlines and tabs become spaces).
    pub snippet: String,
    /// Where the match starts in `snippet`: a UTF-8 **byte** offset, not a character count
    /// (`snippet.as_bytes()[match_start..match_end]` is the match; in JavaScript, encode the
    /// snippet with `TextEncoder` before slicing; in Python, slice `snippet.encode()`).
    pub match_start: usize,
    /// Where the match ends in `snippet` (UTF-8 byte offset, exclusive).
    pub match_end: usize,
    /// The transcript.
    pub path: PathBuf,
    /// 1-based line in it.
    pub line: usize,
    #[serde(skip)]
    ts_ms: Option<i64>,
}

enum Matcher {
    /// A fixed string, found with memchr's memmem; `raw_safe` says the raw-line prefilter is
    /// sound for it.
    Fixed { finder: Box<memchr::memmem::Finder<'static>>, raw_safe: bool },
    /// A regular expression, or a fixed string matched ignoring case. `raw` is the same
    /// pattern over a line's raw bytes, present only where that prefilter is sound (a fixed
    /// string without `"`, `\` or control characters).
    Regex { re: regex::Regex, raw: Option<regex::bytes::Regex> },
}

impl Matcher {
    /// Errors: an empty query, or an invalid regular expression under `--regex`.
    fn new(q: &str, regex: bool, ignore_case: bool) -> Result<Matcher> {
        if q.is_empty() {
            return Err(Error::usage("the query is empty").with_hint("kit recall \"some words\""));
        }
        let raw_safe = !q.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20);
        if regex {
            let re =
                regex::RegexBuilder::new(q).case_insensitive(ignore_case).build().map_err(|e| {
                    Error::usage(format!("bad regular expression: {e}"))
                        .with_hint("drop --regex to search for the text as it is")
                })?;
            return Ok(Matcher::Regex { re, raw: None });
        }
        if ignore_case {
            // An escaped literal compiles unless it passes the regex size limit.
            let pattern = regex::escape(q);
            let re =
                regex::RegexBuilder::new(&pattern).case_insensitive(true).build().map_err(|e| {
                    Error::usage(format!("cannot match this query ignoring case: {e}"))
                        .with_hint("drop -i, or search for a shorter part of the text")
                })?;
            // Without the raw prefilter the search is still right, only slower.
            let raw = raw_safe
                .then(|| regex::bytes::RegexBuilder::new(&pattern).case_insensitive(true).build())
                .and_then(|r| r.ok());
            return Ok(Matcher::Regex { re, raw });
        }
        let finder = Box::new(memchr::memmem::Finder::new(q.as_bytes()).into_owned());
        Ok(Matcher::Fixed { finder, raw_safe })
    }

    /// Whether a raw line may hold a match (false only when it surely does not).
    fn may_match(&self, raw: &[u8]) -> bool {
        match self {
            Matcher::Fixed { finder, raw_safe: true } => finder.find(raw).is_some(),
            Matcher::Regex { raw: Some(r), .. } => r.is_match(raw),
            _ => true,
        }
    }

    /// The byte range of the first match in `text`.
    fn find(&self, text: &str) -> Option<(usize, usize)> {
        match self {
            Matcher::Fixed { finder, .. } => {
                finder.find(text.as_bytes()).map(|i| (i, i + finder.needle().len()))
            }
            Matcher::Regex { re, .. } => re.find(text).map(|m| (m.start(), m.end())),
        }
    }
}

/// The outcome of a search.
#[derive(Debug, Default)]
pub(crate) struct Found {
    /// The newest `limit` hits, oldest first.
    pub hits: Vec<Hit>,
    /// All hits counted.
    pub total: u64,
    /// Damage among the lines read.
    pub damage: Damage,
}

/// Search. Errors: a bad query, a missing PATH, I/O, or damage under `--strict`.
pub(crate) fn search(opts: &RecallOptions) -> Result<Found> {
    let m = Matcher::new(&opts.query, opts.regex, opts.ignore_case)?;
    let mut found = Found::default();
    let files: Vec<(PathBuf, Source, String, String)> =
        discover::discover(&opts.paths, &mut found.damage)?
            .into_iter()
            .flat_map(|job| {
                let source = job.source();
                let (sid, folder) = match &job {
                    Job::Claude(f) => (f.session_id.clone(), f.project_dir.clone()),
                    Job::Codex(p) => (discover::stem(p), String::new()),
                };
                job.files()
                    .into_iter()
                    .map(|p| (p.to_path_buf(), source, sid.clone(), folder.clone()))
                    .collect::<Vec<_>>()
            })
            .collect();
    let limits = ReadLimits { strict: opts.strict, ..Default::default() };
    // Collected per file, so that under `--strict` the error reported is the first in path
    // order, whichever thread met it first.
    let per_file: Vec<Result<(VecDeque<Hit>, u64, Damage)>> = files
        .par_iter()
        .map(|(path, source, sid, folder)| {
            search_file(opts, &m, limits, path, *source, sid, folder)
        })
        .collect();
    let mut all = vec![];
    for (r, (path, _, _, folder)) in per_file.into_iter().zip(&files) {
        let (hits, n, d) = r?;
        found.total += n;
        if !hits.is_empty() || in_scope(opts, path, folder) {
            found.damage.merge(&d);
        }
        all.extend(hits);
    }
    all.sort_by(|a, b| (a.ts_ms, &a.path, a.line).cmp(&(b.ts_ms, &b.path, b.line)));
    let skip = all.len().saturating_sub(opts.limit);
    found.hits = all.split_off(skip);
    Ok(found)
}

#[allow(clippy::too_many_arguments)]
fn search_file(
    opts: &RecallOptions,
    m: &Matcher,
    limits: ReadLimits,
    path: &Path,
    source: Source,
    sid: &str,
    folder: &str,
) -> Result<(VecDeque<Hit>, u64, Damage)> {
    let mut hits: VecDeque<Hit> = VecDeque::new();
    let mut total = 0u64;
    let mut damage = Damage::default();
    let mut session_id = sid.to_string();
    let mut project: Arc<str> = Arc::from(folder);
    let mut first = true;
    let wanted = |raw: &[u8]| m.may_match(raw) || (source == Source::Codex && is_meta_line(raw));
    lines::for_each_record_where(path, limits, &mut damage, wanted, |no, bytes| {
        let mut texts: Vec<(Role, Cow<'_, str>)> = vec![];
        let (ts, cwd) = match source {
            Source::Claude => {
                let line = claude::Line::parse(bytes)?;
                claude_texts(&line, &mut texts);
                (line.timestamp.as_deref().and_then(parse_ts_ms), line.cwd)
            }
            Source::Codex => {
                let line = codex::Envelope::parse(bytes)?;
                if let codex::Payload::SessionMeta(m) = &line.payload {
                    if first {
                        first = false;
                        if let Some(id) = &m.id {
                            session_id = id.to_string();
                        }
                        if let Some(cwd) = &m.cwd {
                            project = Arc::from(&**cwd);
                        }
                    }
                    return Ok(Parsed::Known);
                }
                codex_texts(&line.payload, &mut texts);
                (line.timestamp.as_deref().and_then(parse_ts_ms), None)
            }
        };
        if opts.since_ms.is_some_and(|s| ts.is_none_or(|t| t < s)) {
            return Ok(Parsed::Known);
        }
        let proj: Arc<str> = match cwd {
            Some(c) => Arc::from(&*c),
            None => project.clone(),
        };
        if let Some(p) = &opts.project {
            if !proj.contains(p.as_str()) && !folder.contains(p.as_str()) {
                return Ok(Parsed::Known);
            }
        }
        for (role, text) in texts {
            let text = &*text;
            if opts.role.is_some_and(|r| r != role) {
                continue;
            }
            let Some((s, e)) = m.find(text) else { continue };
            total += 1;
            let (snippet, ms, me) = snippet(text, s, e);
            hits.push_back(Hit {
                session_id: session_id.clone(),
                source,
                project: proj.to_string(),
                time: ts.map(format_ts_ms),
                role,
                snippet,
                match_start: ms,
                match_end: me,
                path: path.to_path_buf(),
                line: no,
                ts_ms: ts,
            });
            if hits.len() > opts.limit {
                hits.pop_front();
            }
        }
        Ok(Parsed::Known)
    })?;
    Ok((hits, total, damage))
}

/// Whether a file's damage belongs in the report under `--project` and `--since` (filters
/// apply to everything shown): its project folder names the project, and it was written at or
/// after `--since`. A file with a hit is always in scope.
fn in_scope(opts: &RecallOptions, path: &Path, folder: &str) -> bool {
    let project_ok = opts.project.as_deref().is_none_or(|p| folder.contains(p));
    let since_ok = opts.since_ms.is_none_or(|since| {
        std::fs::metadata(path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| jiff::Timestamp::try_from(t).ok())
            .is_none_or(|t| t.as_millisecond() >= since)
    });
    project_ok && since_ok
}

fn is_meta_line(raw: &[u8]) -> bool {
    memchr::memmem::find(raw, b"\"session_meta\"").is_some()
}

/// Texts of a Claude Code line with their roles (claude-code.md §3), read with the one line
/// model ([`claude::Line`], [`claude::Content`]).
fn claude_texts<'a>(line: &claude::Line<'a>, out: &mut Vec<(Role, Cow<'a, str>)>) {
    let role = match line.kind() {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        _ => return,
    };
    let Some(m) = &line.message else { return };
    match m.content() {
        claude::Content::Text(s) => out.push((role, s)),
        claude::Content::Blocks(blocks) => {
            for b in blocks {
                match b.kind() {
                    "text" => push_str(out, role, b.text),
                    "thinking" => push_str(out, Role::Assistant, b.thinking),
                    "tool_use" => {
                        push_str(out, Role::Tool, b.name);
                        push_all(out, Role::Tool, b.input);
                    }
                    "tool_result" => push_all(out, Role::Tool, b.content),
                    _ => {}
                }
            }
        }
        claude::Content::None => {}
    }
}

/// Texts of a Codex rollout line with their roles (codex.md §4), read with the one line model
/// ([`codex::Payload`]).
fn codex_texts<'a>(p: &codex::Payload<'a>, out: &mut Vec<(Role, Cow<'a, str>)>) {
    let codex::Payload::ResponseItem(p) = p else { return };
    match p.kind() {
        "message" => {
            let role = match p.role.as_deref() {
                Some("user") => Role::User,
                Some("assistant") => Role::Assistant,
                _ => return,
            };
            out.extend(codex::ResponseItem::texts(p.content).into_iter().map(|t| (role, t)));
        }
        "reasoning" => {
            for field in [p.summary, p.content] {
                let texts = codex::ResponseItem::texts(field);
                out.extend(texts.into_iter().map(|t| (Role::Assistant, t)));
            }
        }
        "function_call" => {
            push_str(out, Role::Tool, p.name);
            push_str(out, Role::Tool, p.arguments);
        }
        "custom_tool_call" => {
            push_str(out, Role::Tool, p.name);
            push_str(out, Role::Tool, p.input);
        }
        "function_call_output" | "custom_tool_call_output" => push_all(out, Role::Tool, p.output),
        "local_shell_call" => push_all(out, Role::Tool, p.action),
        _ => {}
    }
}

fn push_str<'a>(out: &mut Vec<(Role, Cow<'a, str>)>, role: Role, v: Option<Raw<'a>>) {
    if let Some(s) = v.and_then(|r| r.as_str()) {
        out.push((role, s));
    }
}

/// Every string inside `v` (tool input objects, result block lists: the tool's own shape).
fn push_all<'a>(out: &mut Vec<(Role, Cow<'a, str>)>, role: Role, v: Option<Raw<'a>>) {
    if let Some(r) = v {
        out.extend(r.strings().into_iter().map(|t| (role, t)));
    }
}

/// Up to 60 characters each side of `text[s..e]`, on one line; returns the snippet and the
/// match's byte range in it.
fn snippet(text: &str, s: usize, e: usize) -> (String, usize, usize) {
    const SIDE: usize = 60;
    let before: Vec<char> = text[..s].chars().rev().take(SIDE).collect();
    let after: String = text[e..].chars().take(SIDE).collect();
    let flat = |t: &str| t.replace(['\n', '\r', '\t'], " ");
    let mut head: String = before.into_iter().rev().collect();
    if head.len() < s {
        head.insert(0, '…');
    }
    let head = flat(&head);
    let mid = flat(&text[s..e]);
    let mut tail = flat(&after);
    if e + after.len() < text.len() {
        tail.push('…');
    }
    let ms = head.len();
    let me = ms + mid.len();
    (format!("{head}{mid}{tail}"), ms, me)
}

/// Run `kit recall`. Returns the exit code (0, matches or not: 1 means an internal error in kit).
pub fn run(theme: &Theme, opts: &RecallOptions, out: &mut dyn Write) -> Result<u8> {
    let found = search(opts)?;
    let io = |e| Error::io("stdout", e);
    if opts.json {
        let doc = serde_json::json!({
            "schema": "kit.recall/1",
            "query": opts.query,
            "total_matches": found.total,
            "matches": found.hits,
            "skipped_lines": found.damage.skipped(),
            "damage": found.damage,
        });
        let text =
            serde_json::to_string_pretty(&doc).map_err(|e| Error::internal(e.to_string()))?;
        writeln!(out, "{text}").map_err(io)?;
    } else {
        for h in &found.hits {
            let mark = if theme.color {
                format!(
                    "{}{}{}",
                    &h.snippet[..h.match_start],
                    theme.bold(&theme.warn(&h.snippet[h.match_start..h.match_end])),
                    &h.snippet[h.match_end..]
                )
            } else {
                format!(
                    "{}«{}»{}",
                    &h.snippet[..h.match_start],
                    &h.snippet[h.match_start..h.match_end],
                    &h.snippet[h.match_end..]
                )
            };
            let when = h.time.as_deref().map(|t| t.get(..16).unwrap_or(t).replace('T', " "));
            let line = format!(
                "{} {} {:<9} {}",
                theme.dim(&h.session_id.chars().take(8).collect::<String>()),
                theme.dim(&when.unwrap_or_else(|| "-".repeat(16))),
                h.role.name(),
                mark
            );
            writeln!(out, "{}", line.trim_end()).map_err(io)?;
        }
        let shown = found.hits.len() as u64;
        if found.total == 0 {
            writeln!(out, "no matches for `{}`", opts.query).map_err(io)?;
        } else if shown < found.total {
            writeln!(out, "{} matches, the newest {shown} shown (--limit N for more)", found.total)
                .map_err(io)?;
        } else {
            writeln!(out, "{}", crate::units::plural(found.total, "match")).map_err(io)?;
        }
        crate::measure::write_damage(theme, &found.damage, out).map_err(io)?;
    }
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippets_mark_the_match_on_one_line() {
        let (s, a, b) = snippet("first line\nthe cache expired here", 15, 20);
        assert_eq!(s, "first line the cache expired here");
        assert_eq!(&s[a..b], "cache");
        let long = format!("{}needle{}", "x".repeat(100), "y".repeat(100));
        let (s, a, b) = snippet(&long, 100, 106);
        assert!(s.starts_with('…') && s.ends_with('…'));
        assert_eq!(&s[a..b], "needle");
        assert_eq!(s.chars().count(), 60 + 6 + 60 + 2);
    }

    #[test]
    fn raw_prefilter_is_used_only_where_it_is_sound() {
        let m = Matcher::new("cache miss", false, false).unwrap();
        assert!(m.may_match(br#"{"text":"a cache miss"}"#));
        assert!(!m.may_match(br#"{"text":"a cache hit"}"#));
        let q = Matcher::new("say \"hi\"", false, false).unwrap();
        assert!(q.may_match(br#"{"text":"say \"hi\""}"#));
        assert!(Matcher::new("", false, false).is_err());
        assert!(Matcher::new("(", true, false).is_err());
    }

    #[test]
    fn ignore_case_matches_fixed_strings_and_regexes_and_keeps_the_prefilter() {
        let m = Matcher::new("Cache MISS", false, true).unwrap();
        // The raw prefilter still rules lines out, ignoring case.
        assert!(m.may_match(br#"{"text":"a cache miss"}"#));
        assert!(m.may_match(br#"{"text":"A CACHE MISS"}"#));
        assert!(!m.may_match(br#"{"text":"a cache hit"}"#));
        assert_eq!(m.find("after a CaChE mIsS here"), Some((8, 18)));
        // Regex metacharacters in a fixed query are literal.
        let dot = Matcher::new("a.b", false, true).unwrap();
        assert_eq!(dot.find("axb A.B"), Some((4, 7)));
        assert!(!dot.may_match(br#"{"text":"AXB"}"#));
        // Unicode case folding; the range is in bytes (É is two bytes).
        let e = Matcher::new("été", false, true).unwrap();
        assert!(e.may_match("{\"text\":\"ÉTÉ\"}".as_bytes()));
        assert_eq!(e.find("l'ÉTÉ"), Some((2, 7)));
        // A regex, with and without -i.
        let r = Matcher::new("ls -la$", true, true).unwrap();
        assert_eq!(r.find("run LS -LA"), Some((4, 10)));
        assert_eq!(Matcher::new("ls -la$", true, false).unwrap().find("run LS -LA"), None);
        // Without -i nothing changes: case matters.
        assert_eq!(Matcher::new("Cache", false, false).unwrap().find("cache"), None);
        // A query the raw line may hold escaped is searched without the prefilter.
        let q = Matcher::new("Say \"HI\"", false, true).unwrap();
        assert!(q.may_match(br#"{"text":"say \"hi\""}"#));
        assert_eq!(q.find(r#"say "hi""#), Some((0, 8)));
    }

    #[test]
    fn texts_come_with_their_roles() {
        let line = claude::Line::parse(
            br#"{"type":"assistant","message":{"content":[{"type":"text","text":"a"},{"type":"tool_use","input":{"command":"ls"}},{"type":"thinking","thinking":"t"}]}}"#,
        )
        .unwrap();
        let mut out = vec![];
        claude_texts(&line, &mut out);
        let got: Vec<(Role, &str)> = out.iter().map(|(r, t)| (*r, &**t)).collect();
        assert_eq!(got, [(Role::Assistant, "a"), (Role::Tool, "ls"), (Role::Assistant, "t")]);
        let line = codex::Envelope::parse(
            br#"{"type":"response_item","payload":{"type":"function_call_output","output":"ok"}}"#,
        )
        .unwrap();
        let mut out = vec![];
        codex_texts(&line.payload, &mut out);
        let got: Vec<(Role, &str)> = out.iter().map(|(r, t)| (*r, &**t)).collect();
        assert_eq!(got, [(Role::Tool, "ok")]);
    }
}
