//! Claude Code transcripts (`~/.claude/projects/<project>/<session>.jsonl` and the session's
//! `<session>/subagents/*.jsonl`), per the format reference `formats/claude-code.md`.
//!
//! - One API response is logged as one line per content block, all sharing `message.id` and
//!   `requestId`; `output_tokens` is a placeholder on all but (sometimes) the last. Dedup
//!   (§4.2, as ccusage): key `message.id` + `requestId` (`message.id` alone when `requestId` is
//!   missing); among copies keep the non-sidechain one, then the one with the largest token
//!   total. A sidechain copy of a main-chain response (same `message.id`, another request id)
//!   is the same call.
//! - Context of a call = input + cache write + cache read (§4.3); compactions are
//!   `system/compact_boundary` lines (`compactMetadata.trigger`, `preTokens`, `postTokens`).
//! - A user turn is a typed prompt: a `user` line that is not meta, not a compaction summary,
//!   not a tool result and not a `<command-…>` echo (§8.6).
//! - Lines are parsed with borrowed serde structs; everything not needed (tool results, file
//!   contents, thinking) is skipped by serde without being allocated.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use serde::de::{self, Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde::Deserialize;

use super::dedup::{call_key, CallKey, Held};
use super::lines::{self, Parsed};
use super::skim;
use super::{
    parse_ts_ms, ApiCall, Builder, Compaction, EngineOptions, SessionSummary, Source, Stream,
};
use crate::error::Result;
use crate::prices::Usage;

use super::discover::SessionFiles;

/// A session read whole: its summary and the main conversation's API calls in order.
#[derive(Debug)]
pub(crate) struct SessionRead {
    /// The summary (subagents as sub-rows).
    pub summary: SessionSummary,
    /// The main conversation's calls, with gaps, resumes and costs.
    pub calls: Vec<ApiCall>,
    /// The dedup key of every call counted (main and subagents, in no order) with the
    /// timestamp of its first line, for deduplication across sessions ([`super::dedup`]).
    /// Calls without a `message.id` have none.
    pub keys: Vec<Held>,
}

/// Read a session's files. Errors: I/O, or the first damaged line under `strict`.
pub(crate) fn read(files: &SessionFiles, opts: EngineOptions<'_>) -> Result<SessionRead> {
    read_without(files, opts, &HashSet::new())
}

/// [`read`], leaving out the calls whose key is in `drop` (calls another session holds first,
/// [`super::dedup::losers`]): they are in no figure of the session, tokens, cost, context or
/// resumes; its lines still count for its time and turns. Errors: those of [`read`].
pub(crate) fn read_without(
    files: &SessionFiles,
    opts: EngineOptions<'_>,
    drop: &HashSet<CallKey>,
) -> Result<SessionRead> {
    let first = files.all().next().cloned().unwrap_or_default();
    let mut b = Builder::new(opts, Source::Claude, files.session_id.clone(), first);
    let mut st = State::default();
    if let Some(main) = &files.main {
        st.streams.push(Stream::default());
        st.read_file(main, 0, false, &mut b)?;
    } else {
        st.streams.push(Stream::default());
    }
    for (i, p) in files.subagents.iter().enumerate() {
        st.streams.push(Stream::default());
        st.read_file(p, i + 1, true, &mut b)?;
    }
    if b.project.is_empty() {
        b.project = files.project_dir.clone();
    }
    let keys = st.keys(drop);
    let mut streams = std::mem::take(&mut st.streams).into_iter();
    let mut main = streams.next().unwrap_or_default();
    let mut summary = b.summarise(&mut main, true);
    for (stream, path) in streams.zip(&files.subagents) {
        let mut stream = stream;
        let mut sub = b.summarise(&mut stream, false);
        sub.session_id = super::discover::stem(path);
        sub.path = path.clone();
        summary.absorb_subagent(sub);
    }
    summary.damage = std::mem::take(&mut b.damage);
    Ok(SessionRead { summary, calls: main.calls, keys })
}

#[derive(Default)]
struct State {
    streams: Vec<Stream>,
    /// `message.id` + `requestId` → (stream, call index).
    by_key: HashMap<String, (usize, usize)>,
    /// `message.id` → (stream, call index), for the sidechain fallback.
    by_id: HashMap<String, (usize, usize)>,
    models: HashMap<String, Arc<str>>,
    /// A compaction waits for the next main call's context as its "after".
    pending_after: bool,
}

impl State {
    /// The keys of the calls read, after taking out (from the streams) the calls in `drop`.
    fn keys(&mut self, drop: &HashSet<CallKey>) -> Vec<Held> {
        let mut keys = Vec::with_capacity(self.by_key.len());
        let mut dropped: Vec<Vec<usize>> = vec![vec![]; self.streams.len()];
        for (text, &(s, i)) in &self.by_key {
            let key = call_key(text);
            if drop.contains(&key) {
                dropped[s].push(i);
            } else {
                let c = &self.streams[s].calls[i];
                keys.push(Held {
                    key,
                    ts_ms: c.ts_ms.unwrap_or(i64::MAX),
                    tokens: total(&c.usage),
                });
            }
        }
        for (stream, mut gone) in self.streams.iter_mut().zip(dropped) {
            if gone.is_empty() {
                continue;
            }
            gone.sort_unstable();
            let mut idx = 0;
            stream.calls.retain(|_| {
                let keep = gone.binary_search(&idx).is_err();
                idx += 1;
                keep
            });
        }
        // The maps point into the streams, which just changed.
        self.by_key.clear();
        self.by_id.clear();
        keys
    }

    fn read_file(
        &mut self,
        path: &Path,
        stream: usize,
        subagent: bool,
        b: &mut Builder<'_>,
    ) -> Result<()> {
        let limits = b.limits();
        let mut damage = std::mem::take(&mut b.damage);
        let r = lines::for_each_record(path, limits, &mut damage, |_, bytes| {
            let line = match skim_line(bytes) {
                Some(l) => l,
                None => serde_json::from_slice::<Line<'_>>(bytes)?,
            };
            Ok(self.apply(line, stream, subagent, b))
        });
        b.damage = damage;
        r
    }

    fn apply(
        &mut self,
        line: Line<'_>,
        stream: usize,
        subagent: bool,
        b: &mut Builder<'_>,
    ) -> Parsed {
        let ts = line.timestamp.as_deref().and_then(parse_ts_ms);
        if !subagent {
            if let Some(t) = ts {
                b.clock.tick(t);
            }
            if b.project.is_empty() {
                if let Some(cwd) = &line.cwd {
                    b.project = cwd.to_string();
                }
            }
        }
        let sidechain = subagent || line.is_sidechain == Some(true);
        let Some(ty) = line.ty.as_deref() else { return Parsed::UnknownType };
        match ty {
            "assistant" => {
                if let Some(m) = line.message {
                    if line.is_api_error != Some(true) {
                        let new =
                            self.assistant(m, line.request_id.as_deref(), ts, stream, sidechain);
                        if let (Some(context), true) = (new, self.pending_after) {
                            self.pending_after = false;
                            if let Some(c) = b.compactions.last_mut() {
                                c.tokens_after = Some(context);
                            }
                        }
                    }
                }
            }
            "user" => {
                let prompt = line.message.and_then(|m| m.content).is_some_and(|c| c.prompt);
                if prompt
                    && !sidechain
                    && line.is_meta != Some(true)
                    && line.is_compact_summary != Some(true)
                {
                    b.turns += 1;
                }
            }
            "system" => {
                if line.subtype.as_deref() == Some("compact_boundary") && !sidechain {
                    let m = line.compact.unwrap_or_default();
                    b.compactions.push(Compaction {
                        at: ts.map(super::format_ts_ms),
                        trigger: m.trigger.unwrap_or_else(|| "unknown".into()),
                        tokens_before: m.pre_tokens.unwrap_or(0),
                        tokens_after: m.post_tokens,
                        at_ms: ts,
                    });
                    self.pending_after = m.post_tokens.is_none();
                }
            }
            t if KNOWN_TYPES.contains(&t) => {}
            _ => return Parsed::UnknownType,
        }
        Parsed::Known
    }

    fn assistant(
        &mut self,
        m: Message<'_>,
        request_id: Option<&str>,
        ts: Option<i64>,
        stream: usize,
        sidechain: bool,
    ) -> Option<u64> {
        let raw = m.usage?;
        let model = m.model.as_deref().unwrap_or("unknown");
        if model == "<synthetic>" {
            return None;
        }
        let usage = raw.to_usage();
        let id = m.id.as_deref();
        let found = id.and_then(|id| {
            let key = key_of(id, request_id);
            self.by_key.get(&key).copied().or_else(|| {
                // Sidechain fallback: same message id, one copy main and one sidechain.
                self.by_id
                    .get(id)
                    .copied()
                    .filter(|&(s, i)| self.streams[s].calls[i].sidechain != sidechain)
            })
        });
        if let Some((s, i)) = found {
            let c = &mut self.streams[s].calls[i];
            let better = (c.sidechain && !sidechain)
                || (c.sidechain == sidechain && total(&usage) > total(&c.usage));
            if better {
                c.usage = usage;
                c.context_tokens =
                    if sidechain && s == 0 { 0 } else { super::context_from_usage(&usage) };
                c.sidechain = sidechain;
            }
            return None;
        }
        let model = match self.models.get(model) {
            Some(a) => a.clone(),
            None => {
                let a: Arc<str> = Arc::from(model);
                self.models.insert(model.to_string(), a.clone());
                a
            }
        };
        let context = super::context_from_usage(&usage);
        let calls = &mut self.streams[stream].calls;
        let idx = calls.len();
        calls.push(ApiCall {
            ts_ms: ts,
            model,
            usage,
            reasoning: 0,
            context_tokens: if sidechain && stream == 0 { 0 } else { context },
            gap_s: None,
            resume: false,
            resume_premium_usd: 0.0,
            cost_usd: None,
            sidechain,
        });
        if let Some(id) = id {
            self.by_key.insert(key_of(id, request_id), (stream, idx));
            self.by_id.entry(id.to_string()).or_insert((stream, idx));
        }
        (stream == 0 && !sidechain).then_some(context)
    }
}

/// The fast path: the same [`Line`] built by skimming (see [`super::skim`]); None when the
/// line is anything but plain, and serde then reads it (or says why it cannot).
fn skim_line(bytes: &[u8]) -> Option<Line<'_>> {
    let mut l = Line::default();
    let (mut message, mut compact) = (None, None);
    let mut ok = true;
    skim::fields(bytes, |k, v| match k {
        b"type" => l.ty = text(v, &mut ok),
        b"subtype" => l.subtype = text(v, &mut ok),
        b"timestamp" => l.timestamp = text(v, &mut ok),
        b"isSidechain" => l.is_sidechain = flag(v, &mut ok),
        b"isMeta" => l.is_meta = flag(v, &mut ok),
        b"isCompactSummary" => l.is_compact_summary = flag(v, &mut ok),
        b"isApiErrorMessage" => l.is_api_error = flag(v, &mut ok),
        b"requestId" => l.request_id = text(v, &mut ok),
        b"cwd" => l.cwd = text(v, &mut ok),
        b"message" => message = Some(v),
        b"compactMetadata" => compact = Some(v),
        _ => {}
    })?;
    if !ok {
        return None;
    }
    match l.ty.as_deref() {
        Some("assistant") | Some("user") => {
            if let Some(m) = message.filter(|m| *m != b"null") {
                l.message = Some(skim_message(m)?);
            }
        }
        Some("system") => {
            if let Some(c) = compact.filter(|c| *c != b"null") {
                l.compact = Some(serde_json::from_slice(c).ok()?);
            }
        }
        _ => {}
    }
    Some(l)
}

fn flag(v: &[u8], ok: &mut bool) -> Option<bool> {
    match v {
        b"true" => Some(true),
        b"false" => Some(false),
        b"null" => None,
        _ => {
            *ok = false;
            None
        }
    }
}

fn text<'a>(v: &'a [u8], ok: &mut bool) -> Option<Cow<'a, str>> {
    if v == b"null" {
        return None;
    }
    let s = skim::plain_str(v).map(Cow::Borrowed);
    *ok &= s.is_some();
    s
}

fn skim_message(m: &[u8]) -> Option<Message<'_>> {
    let mut msg = Message { id: None, model: None, usage: None, content: None };
    let (mut usage, mut content) = (None, None);
    let mut ok = true;
    skim::fields(m, |k, v| match k {
        b"id" => {
            msg.id = skim::plain_str(v).map(Cow::Borrowed).or_else(|| {
                ok &= v == b"null";
                None
            })
        }
        b"model" => {
            msg.model = skim::plain_str(v).map(Cow::Borrowed).or_else(|| {
                ok &= v == b"null";
                None
            })
        }
        b"usage" => usage = Some(v),
        b"content" => content = Some(v),
        _ => {}
    })?;
    if !ok {
        return None;
    }
    if let Some(u) = usage.filter(|u| *u != b"null") {
        msg.usage = Some(serde_json::from_slice(u).ok()?);
    }
    if let Some(c) = content {
        msg.content = Some(skim_content(c)?);
    }
    Some(msg)
}

fn skim_content(c: &[u8]) -> Option<Content> {
    match c.first()? {
        b'"' => Some(Content { prompt: is_prompt_head(skim::str_head(c)?) }),
        b'[' => {
            let (mut text, mut other, mut ok) = (false, false, true);
            skim::elements(c, |e| {
                let (mut ty, mut head) = (None, None);
                let r = skim::fields(e, |k, v| match k {
                    b"type" => ty = skim::plain_str(v),
                    b"text" => head = skim::str_head(v),
                    _ => {}
                });
                ok &= r.is_some();
                match ty {
                    Some("text") => match head {
                        Some(h) if !is_prompt_head(h) => other = true,
                        _ => text = true,
                    },
                    Some("image") | Some("document") => {}
                    _ => other = true,
                }
            })?;
            ok.then_some(Content { prompt: text && !other })
        }
        _ => Some(Content::default()),
    }
}

fn is_prompt_head(h: &[u8]) -> bool {
    !(h.starts_with(b"<command-")
        || h.starts_with(b"<local-command-")
        || h.starts_with(b"[Request interrupted"))
}

fn key_of(id: &str, request_id: Option<&str>) -> String {
    match request_id {
        Some(r) => format!("{id}\u{0}{r}"),
        None => id.to_string(),
    }
}

fn total(u: &Usage) -> u64 {
    u.summed_input() + u.output
}

/// Line types seen in real files (claude-code.md §2; 2.1.197's `queue-operation`, `attachment`,
/// `last-prompt` and `mode`, written after `--resume`, real-clis.md §3; `permission-mode` and
/// `ai-title`, which the same builds write beside `mode`); anything else is counted as unknown.
/// None of them carries usage.
const KNOWN_TYPES: &[&str] = &[
    "file-history-snapshot",
    "queue-operation",
    "progress",
    "summary",
    "turn_end",
    "attachment",
    "custom-title",
    "agent-name",
    "tag",
    "last-prompt",
    "pr-link",
    "mode",
    "permission-mode",
    "ai-title",
];

#[derive(Default, Deserialize)]
struct Line<'a> {
    #[serde(rename = "type", borrow)]
    ty: Option<Cow<'a, str>>,
    #[serde(borrow)]
    subtype: Option<Cow<'a, str>>,
    #[serde(borrow)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(rename = "isSidechain")]
    is_sidechain: Option<bool>,
    #[serde(rename = "isMeta")]
    is_meta: Option<bool>,
    #[serde(rename = "isCompactSummary")]
    is_compact_summary: Option<bool>,
    #[serde(rename = "isApiErrorMessage")]
    is_api_error: Option<bool>,
    #[serde(rename = "requestId", borrow)]
    request_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    cwd: Option<Cow<'a, str>>,
    #[serde(borrow)]
    message: Option<Message<'a>>,
    #[serde(rename = "compactMetadata")]
    compact: Option<CompactMeta>,
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    model: Option<Cow<'a, str>>,
    usage: Option<RawUsage>,
    content: Option<Content>,
}

#[derive(Default, Deserialize)]
struct CompactMeta {
    trigger: Option<String>,
    #[serde(rename = "preTokens")]
    pre_tokens: Option<u64>,
    #[serde(rename = "postTokens")]
    post_tokens: Option<u64>,
}

/// `message.usage` as logged (claude-code.md §4.1).
#[derive(Clone, Copy, Debug, Default, Deserialize)]
pub(crate) struct RawUsage {
    /// Uncached input.
    pub input_tokens: Option<u64>,
    /// Cache writes, both TTLs.
    pub cache_creation_input_tokens: Option<u64>,
    /// Cache reads.
    pub cache_read_input_tokens: Option<u64>,
    /// Output (a placeholder on most lines of a response).
    pub output_tokens: Option<u64>,
    /// The TTL split of the cache writes.
    pub cache_creation: Option<CacheCreation>,
}

/// `usage.cache_creation`.
#[derive(Clone, Copy, Debug, Default, Deserialize)]
pub(crate) struct CacheCreation {
    /// Writes at the 1-hour TTL (the 5-minute part is the rest of
    /// `cache_creation_input_tokens`, see [`RawUsage::to_usage`]).
    pub ephemeral_1h_input_tokens: Option<u64>,
}

impl RawUsage {
    /// As a billing record. The cache-write total is `cache_creation_input_tokens`; the 1-hour
    /// part comes from the split, the rest is 5-minute (the default TTL).
    pub(crate) fn to_usage(self) -> Usage {
        let writes = self.cache_creation_input_tokens.unwrap_or(0);
        let w1h =
            self.cache_creation.and_then(|c| c.ephemeral_1h_input_tokens).unwrap_or(0).min(writes);
        Usage {
            input: self.input_tokens.unwrap_or(0),
            cache_write_5m: writes - w1h,
            cache_write_1h: w1h,
            cache_read: self.cache_read_input_tokens.unwrap_or(0),
            output: self.output_tokens.unwrap_or(0),
        }
    }
}

/// What `message.content` says about a user line: whether it is a typed prompt.
#[derive(Default)]
struct Content {
    prompt: bool,
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow)]
    ty: Option<Cow<'a, str>>,
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
}

fn is_prompt_text(s: &str) -> bool {
    !(s.starts_with("<command-")
        || s.starts_with("<local-command-")
        || s.starts_with("[Request interrupted"))
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Content;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or a list of content blocks")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> std::result::Result<Content, E> {
                Ok(Content { prompt: is_prompt_text(s) })
            }
            fn visit_unit<E: de::Error>(self) -> std::result::Result<Content, E> {
                Ok(Content::default())
            }
            fn visit_map<A: de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<Content, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Content::default())
            }
            fn visit_seq<A: SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<Content, A::Error> {
                let (mut text, mut other) = (false, false);
                while let Some(b) = seq.next_element::<Block<'de>>()? {
                    match b.ty.as_deref() {
                        Some("text") => match b.text.as_deref() {
                            Some(t) if !is_prompt_text(t) => other = true,
                            _ => text = true,
                        },
                        Some("image") | Some("document") => {}
                        _ => other = true,
                    }
                }
                Ok(Content { prompt: text && !other })
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user_is_prompt(line: &str) -> bool {
        let l: Line<'_> = serde_json::from_str(line).unwrap();
        l.message.and_then(|m| m.content).is_some_and(|c| c.prompt)
    }

    #[test]
    fn typed_prompts_are_told_from_other_user_lines() {
        let cases = [
            (r#"{"type":"user","message":{"role":"user","content":"ls -la"}}"#, true),
            (r#"{"type":"user","message":{"content":[{"type":"text","text":"fix it"}]}}"#, true),
            (
                r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":"x"}]}}"#,
                false,
            ),
            (
                r#"{"type":"user","message":{"content":"<command-name>/compact</command-name>"}}"#,
                false,
            ),
            (
                r#"{"type":"user","message":{"content":"<local-command-stdout>ok</local-command-stdout>"}}"#,
                false,
            ),
            (
                r#"{"type":"user","message":{"content":[{"type":"text","text":"[Request interrupted by user]"}]}}"#,
                false,
            ),
            (r#"{"type":"user","message":{"content":null}}"#, false),
        ];
        for (line, want) in cases {
            assert_eq!(user_is_prompt(line), want, "{line}");
        }
    }

    #[test]
    fn usage_splits_cache_writes_by_ttl() {
        let u: RawUsage = serde_json::from_str(
            r#"{"input_tokens":47,"cache_creation_input_tokens":1115,"cache_read_input_tokens":26504,"output_tokens":173,"cache_creation":{"ephemeral_1h_input_tokens":1115,"ephemeral_5m_input_tokens":0}}"#,
        )
        .unwrap();
        let u = u.to_usage();
        assert_eq!((u.cache_write_5m, u.cache_write_1h, u.cache_read), (0, 1115, 26504));
        let old: RawUsage =
            serde_json::from_str(r#"{"input_tokens":1,"cache_creation_input_tokens":10}"#).unwrap();
        assert_eq!(old.to_usage().cache_write_5m, 10);
    }
}

#[cfg(test)]
mod skim_tests {
    use super::*;

    /// The Claude Code samples copied into the repository (`tests/fixtures/samples`).
    fn samples() -> Option<std::path::PathBuf> {
        let p = crate::testing::samples("claude-code");
        p.is_dir().then_some(p)
    }

    /// The fast path reads every real line, and reads it as serde does.
    #[test]
    fn skimming_agrees_with_serde_on_every_sample_line() {
        let dir = samples().expect("the shared samples folder");
        let mut n = 0;
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if !p.to_string_lossy().ends_with(".jsonl") || p.to_string_lossy().contains("hook_logs")
            {
                continue;
            }
            for line in std::fs::read_to_string(&p).unwrap().lines() {
                let fast = skim_line(line.as_bytes()).unwrap_or_else(|| panic!("{p:?}: {line}"));
                let slow: Line<'_> = serde_json::from_str(line).unwrap();
                let key = |l: &Line<'_>| {
                    let m = l.message.as_ref();
                    let head = (l.ty.clone(), l.subtype.clone(), l.timestamp.clone());
                    let compact = l.compact.as_ref().map(|c| (c.trigger.clone(), c.pre_tokens));
                    let rest = (
                        l.subtype.clone(),
                        l.timestamp.clone(),
                        l.is_sidechain,
                        l.is_meta,
                        l.is_compact_summary,
                        l.request_id.clone(),
                        l.cwd.clone(),
                        m.and_then(|m| m.id.clone()),
                        m.and_then(|m| m.model.clone()),
                        m.and_then(|m| m.usage.map(|u| u.to_usage())),
                        m.and_then(|m| m.content.as_ref().map(|c| c.prompt)),
                    );
                    (format!("{head:?}"), format!("{compact:?}"), format!("{rest:?}"))
                };
                let (a, b) = (key(&fast), key(&slow));
                // The skimmer reads a message only for user and assistant lines.
                if matches!(slow.ty.as_deref(), Some("user") | Some("assistant")) {
                    assert_eq!(a, b, "{line}");
                } else {
                    assert_eq!((a.0, a.1), (b.0, b.1), "{line}");
                }
                n += 1;
            }
        }
        assert!(n > 500, "{n} lines");
    }
}
