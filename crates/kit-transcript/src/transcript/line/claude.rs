//! One line of a Claude Code transcript (`formats/claude-code.md` §2–§4), as every reader in
//! kit parses it: the engine, the hook's tail read, `kit recall` and `kit mine`.
//!
//! - [`Line::parse`] reads a line: first by skimming ([`crate::transcript::skim`]: only the
//!   fields below are looked at, strings are jumped over), and, when the line is anything but
//!   plain (escaped keys or strings where a plain one is read, damage), by serde, which reads the
//!   same [`Line`] or says why it cannot.
//! - [`Line::call`] says what an assistant line bills ([`Call`]); [`LoggedUsage::to_usage`] is
//!   the one rule for the cache-write split.
//! - `message.content`, `toolUseResult`, `permission_denials` and `attachment` stay [`Raw`]
//!   until a reader asks: [`Message::is_prompt`] (the engine's turns), [`Message::content`]
//!   (recall's texts, mine's tool calls and results).

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde::Deserialize;

use super::Raw;
use crate::prices::Usage;
use crate::transcript::skim;

/// One transcript line: the envelope fields kit reads (§2.1); everything else is skipped.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Line<'a> {
    /// `type`: `user`, `assistant`, `system`, `progress`, … (§2).
    #[serde(rename = "type", borrow)]
    pub ty: Option<Cow<'a, str>>,
    /// `subtype` of a `system` line, e.g. `compact_boundary` (§2.2).
    #[serde(borrow)]
    pub subtype: Option<Cow<'a, str>>,
    /// `timestamp`, ISO-8601 UTC with milliseconds (not unique, not monotonic: §2.3).
    #[serde(borrow)]
    pub timestamp: Option<Cow<'a, str>>,
    /// `isSidechain`: true in subagent transcripts and their replays.
    #[serde(rename = "isSidechain")]
    pub is_sidechain: Option<bool>,
    /// `isMeta`: injected text (caveats, reminders), not a human prompt.
    #[serde(rename = "isMeta")]
    pub is_meta: Option<bool>,
    /// `isCompactSummary`: the user line holding a compaction's summary.
    #[serde(rename = "isCompactSummary")]
    pub is_compact_summary: Option<bool>,
    /// `isApiErrorMessage`: a synthetic assistant line reporting an API error.
    #[serde(rename = "isApiErrorMessage")]
    pub is_api_error: Option<bool>,
    /// `requestId` (assistant lines): the HTTP request, part of the dedup key (§4.2).
    #[serde(rename = "requestId", borrow)]
    pub request_id: Option<Cow<'a, str>>,
    /// `cwd`: the working directory at that point.
    #[serde(borrow)]
    pub cwd: Option<Cow<'a, str>>,
    /// `message` of a user or assistant line (§3).
    #[serde(borrow)]
    pub message: Option<Message<'a>>,
    /// `compactMetadata` of a `compact_boundary` line.
    #[serde(rename = "compactMetadata")]
    pub compact: Option<CompactMeta>,
    /// `toolUseResult` of a tool-result user line (§3.4): the tool's own shape, see
    /// [`Line::tool_use_result`].
    #[serde(rename = "toolUseResult", borrow)]
    pub tool_use_result: Option<Raw<'a>>,
    /// `permission_denials` of a headless `result` line (§7), see [`Line::permission_denials`].
    #[serde(borrow)]
    pub permission_denials: Option<Raw<'a>>,
    /// `attachment` of an `attachment` line (2.1.197's hook blocks), see [`Line::attachment`].
    #[serde(borrow)]
    pub attachment: Option<Raw<'a>>,
}

/// `message` of a user or assistant line (§3).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Message<'a> {
    /// `message.id` (`msg_…`), shared by all lines of one API response.
    #[serde(borrow)]
    pub id: Option<Cow<'a, str>>,
    /// `message.model`, e.g. `claude-opus-4-6`; `<synthetic>` on lines Claude Code made up.
    #[serde(borrow)]
    pub model: Option<Cow<'a, str>>,
    /// `message.usage` (assistant lines).
    pub usage: Option<LoggedUsage>,
    /// `message.content`: a string or a list of blocks, see [`Message::content`].
    #[serde(borrow)]
    pub content: Option<Raw<'a>>,
}

/// `compactMetadata` (§2.2).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct CompactMeta {
    /// `auto` or `manual`.
    pub trigger: Option<String>,
    /// Context tokens at compaction time.
    #[serde(rename = "preTokens")]
    pub pre_tokens: Option<u64>,
    /// Context tokens after it (newer versions only).
    #[serde(rename = "postTokens")]
    pub post_tokens: Option<u64>,
}

/// `message.usage` as logged (§4.1), tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct LoggedUsage {
    /// Uncached input.
    pub input_tokens: Option<u64>,
    /// Cache writes, both TTLs.
    pub cache_creation_input_tokens: Option<u64>,
    /// Cache reads.
    pub cache_read_input_tokens: Option<u64>,
    /// Output (a placeholder on most lines of a response, §3.3).
    pub output_tokens: Option<u64>,
    /// The TTL split of the cache writes.
    pub cache_creation: Option<CacheCreation>,
}

/// `usage.cache_creation`: the cache writes by TTL.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct CacheCreation {
    /// Writes at the 5-minute TTL.
    pub ephemeral_5m_input_tokens: Option<u64>,
    /// Writes at the 1-hour TTL.
    pub ephemeral_1h_input_tokens: Option<u64>,
}

impl LoggedUsage {
    /// The cache writes as (5-minute, 1-hour) tokens: the one rule every reader uses.
    ///
    /// The total is `cache_creation_input_tokens`; the 1-hour part is
    /// `cache_creation.ephemeral_1h_input_tokens`, at most the total; the 5-minute part is the
    /// rest (the default TTL). Why the total wins over the split when they disagree: it is the
    /// field the context is defined by (claude-code.md §4.3: Claude Code's statusline computes
    /// `used_percentage` from `input_tokens + cache_creation_input_tokens +
    /// cache_read_input_tokens`, and ccusage's context and cost do the same), it is on every
    /// line of every version, while the split is a later, optional breakdown (§4.1: equal to
    /// the total on all 146 sample lines that carry it). So the hook's context and the
    /// engine's cost count the same tokens, and a split that adds up to more (or less) than
    /// the total changes only how the total is priced, never the total. Only when the total is
    /// missing is the split's sum taken as the total.
    pub(crate) fn cache_writes(&self) -> (u64, u64) {
        let split = self.cache_creation.unwrap_or_default();
        let w5 = split.ephemeral_5m_input_tokens.unwrap_or(0);
        let w1 = split.ephemeral_1h_input_tokens.unwrap_or(0);
        let total = self.cache_creation_input_tokens.unwrap_or(w5 + w1);
        let w1 = w1.min(total);
        (total - w1, w1)
    }

    /// As a billing record, the cache writes split by [`LoggedUsage::cache_writes`].
    pub(crate) fn to_usage(self) -> Usage {
        let (w5, w1) = self.cache_writes();
        Usage {
            input: self.input_tokens.unwrap_or(0),
            cache_write_5m: w5,
            cache_write_1h: w1,
            cache_read: self.cache_read_input_tokens.unwrap_or(0),
            output: self.output_tokens.unwrap_or(0),
        }
    }
}

/// What one assistant line bills: one line of an API response (§3.3; several lines share it).
#[derive(Clone, Debug, PartialEq)]
pub struct Call<'b> {
    /// `message.id`, when logged.
    pub id: Option<&'b str>,
    /// `requestId`, when logged.
    pub request_id: Option<&'b str>,
    /// `message.model`; `unknown` when missing.
    pub model: &'b str,
    /// The line's tokens.
    pub usage: Usage,
    /// The line says `isSidechain: true` (a subagent file's lines are sidechain whatever they
    /// say; the reader knows which file it reads).
    pub sidechain: bool,
}

/// The model of lines Claude Code writes itself (API errors, interruptions): no API call.
pub(crate) const SYNTHETIC_MODEL: &str = "<synthetic>";

impl<'a> Line<'a> {
    /// Parse one line (without its newline). Errors: serde's, when the line is not a JSON
    /// object of this shape (the caller counts it as damage).
    pub fn parse(bytes: &'a [u8]) -> serde_json::Result<Line<'a>> {
        match skim_line(bytes) {
            Some(l) => Ok(l),
            None => serde_json::from_slice(bytes),
        }
    }

    /// `type`, or "" when missing.
    pub fn kind(&self) -> &str {
        self.ty.as_deref().unwrap_or("")
    }

    /// Whether this is a `system/compact_boundary` line (§2.2; the words alone, in prose or a
    /// tool's input, are not).
    pub fn is_compact_boundary(&self) -> bool {
        self.kind() == "system" && self.subtype.as_deref() == Some("compact_boundary")
    }

    /// The API call an `assistant` line reports, if it reports one: a line with
    /// `message.usage`, not an API-error line (`isApiErrorMessage`), and not a `<synthetic>`
    /// model's (§2.1, §4.3 rule 2; ccusage skips them too). Sidechain lines are calls (they
    /// cost) with [`Call::sidechain`] set: the context of the main conversation leaves them
    /// out.
    pub fn call(&self) -> Option<Call<'_>> {
        if self.kind() != "assistant" || self.is_api_error == Some(true) {
            return None;
        }
        let m = self.message.as_ref()?;
        let usage = m.usage?;
        let model = m.model.as_deref().unwrap_or("unknown");
        if model == SYNTHETIC_MODEL {
            return None;
        }
        Some(Call {
            id: m.id.as_deref(),
            request_id: self.request_id.as_deref(),
            model,
            usage: usage.to_usage(),
            sidechain: self.is_sidechain == Some(true),
        })
    }

    /// `toolUseResult`, the fields mine reads (§3.4). None when absent or another shape.
    pub fn tool_use_result(&self) -> Option<ToolUseResult<'a>> {
        self.tool_use_result.and_then(|r| r.decode().ok())
    }

    /// `permission_denials` of a `result` line (§7); empty when absent. An entry that is not
    /// an object is skipped.
    pub fn permission_denials(&self) -> Vec<PermissionDenial<'a>> {
        let Some(raw) = self.permission_denials else { return vec![] };
        let items: Vec<Raw<'a>> = raw.decode().unwrap_or_default();
        items.iter().filter_map(|r| r.decode().ok()).collect()
    }

    /// `attachment` of an `attachment` line; None when absent or not an object.
    pub fn attachment(&self) -> Option<Attachment<'a>> {
        self.attachment.and_then(|r| r.decode().ok())
    }
}

/// `toolUseResult` of a Write or Edit (§3.4): `{type: "create"|"update", filePath, content,
/// originalFile}`. Fields stay raw: other tools put other shapes under the same names.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct ToolUseResult<'a> {
    /// `create` or `update`.
    #[serde(rename = "type", borrow)]
    pub ty: Option<Raw<'a>>,
    /// The file's new content.
    #[serde(borrow)]
    pub content: Option<Raw<'a>>,
    /// The file's content before (an update).
    #[serde(rename = "originalFile", borrow)]
    pub original_file: Option<Raw<'a>>,
}

/// One entry of a `result` line's `permission_denials` (§7).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct PermissionDenial<'a> {
    /// The tool refused, e.g. `Bash`.
    #[serde(borrow)]
    pub tool_name: Option<Raw<'a>>,
    /// The refused call's `tool_use` id.
    #[serde(borrow)]
    pub tool_use_id: Option<Raw<'a>>,
    /// The refused call's input (the tool's own shape).
    #[serde(borrow)]
    pub tool_input: Option<Raw<'a>>,
}

/// `attachment` of an `attachment` line (`formats/real-clis.md` §3): the fields of a hook's
/// block, `{type: "hook_blocking_error", hookEvent, …}`.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Attachment<'a> {
    /// e.g. `hook_blocking_error`.
    #[serde(rename = "type", borrow)]
    pub ty: Option<Raw<'a>>,
    /// The hook event, e.g. `Stop`.
    #[serde(rename = "hookEvent", borrow)]
    pub hook_event: Option<Raw<'a>>,
}

/// `message.content`, decoded (§3.1–§3.2).
#[derive(Clone, Debug, PartialEq)]
pub enum Content<'a> {
    /// A plain string (a typed prompt, a command echo, a compaction summary…).
    Text(Cow<'a, str>),
    /// A list of blocks; elements that are not objects are left out.
    Blocks(Vec<Block<'a>>),
    /// Missing, null, or anything else.
    None,
}

/// One content block: `text`, `thinking`, `tool_use` or `tool_result` (§3.2, §3.4), with the
/// fields of all four (each block has its own).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct Block<'a> {
    /// `text`, `thinking`, `tool_use`, `tool_result`, `image`, …
    #[serde(rename = "type", borrow)]
    pub ty: Option<Cow<'a, str>>,
    /// A text block's text.
    #[serde(borrow)]
    pub text: Option<Raw<'a>>,
    /// A thinking block's text.
    #[serde(borrow)]
    pub thinking: Option<Raw<'a>>,
    /// A tool_use block's id (`toolu_…`).
    #[serde(borrow)]
    pub id: Option<Raw<'a>>,
    /// A tool_use block's tool name.
    #[serde(borrow)]
    pub name: Option<Raw<'a>>,
    /// A tool_use block's input (the tool's own shape).
    #[serde(borrow)]
    pub input: Option<Raw<'a>>,
    /// A tool_result block's `tool_use_id`.
    #[serde(borrow)]
    pub tool_use_id: Option<Raw<'a>>,
    /// A tool_result block's content: a string or a list of blocks.
    #[serde(borrow)]
    pub content: Option<Raw<'a>>,
    /// A tool_result block's `is_error`.
    pub is_error: Option<Raw<'a>>,
}

impl<'a> Block<'a> {
    /// Read one element of a content list: skimmed, or by serde when the skimmer cannot (an
    /// escaped key or type). None when it is not a block (not an object, a `type` that is not
    /// a string).
    pub(crate) fn read(r: Raw<'a>) -> Option<Block<'a>> {
        let mut b = Block::default();
        let mut ok = true;
        let skimmed = skim::fields(r.bytes(), |k, v| match k {
            b"type" => b.ty = text(v, &mut ok),
            b"text" => b.text = raw(v),
            b"thinking" => b.thinking = raw(v),
            b"id" => b.id = raw(v),
            b"name" => b.name = raw(v),
            b"input" => b.input = raw(v),
            b"tool_use_id" => b.tool_use_id = raw(v),
            b"content" => b.content = raw(v),
            b"is_error" => b.is_error = raw(v),
            k => ok &= memchr::memchr(b'\\', k).is_none(),
        });
        match (skimmed, ok) {
            (Some(()), true) => Some(b),
            _ => r.decode().ok(),
        }
    }

    /// The block's `type`, or "".
    pub fn kind(&self) -> &str {
        self.ty.as_deref().unwrap_or("")
    }

    /// Whether a tool_result says `is_error: true`.
    pub fn is_error(&self) -> bool {
        self.is_error.is_some_and(|r| r.bytes() == b"true")
    }
}

impl<'a> Message<'a> {
    /// The content, decoded: a string, or the blocks that decode (a block with a field of an
    /// unexpected type is left out, as is anything not an object).
    pub fn content(&self) -> Content<'a> {
        let Some(raw) = self.content else { return Content::None };
        match raw.bytes().first() {
            Some(b'"') => raw.as_str().map_or(Content::None, Content::Text),
            Some(b'[') => {
                Content::Blocks(raw.elements().into_iter().filter_map(Block::read).collect())
            }
            _ => Content::None,
        }
    }

    /// Whether the content is a typed prompt's (§8.6): a string, or text blocks (images and
    /// documents allowed), none of them a `<command-…>`, `<local-command-…>` echo or an
    /// interruption notice; no tool_result. (The line's `isMeta` and `isCompactSummary` are
    /// the caller's to check.) Errors: serde's, when the content is a list whose elements are
    /// not blocks (the line is then damaged, as a whole).
    pub(crate) fn is_prompt(&self) -> serde_json::Result<bool> {
        let Some(raw) = self.content else { return Ok(false) };
        match skim_content(raw.bytes()) {
            Some(p) => Ok(p),
            None => raw.decode::<PromptFlag>().map(|c| c.0),
        }
    }
}

/// The fast path: the same [`Line`] built by skimming (see [`skim`]); None when the line is
/// anything but plain, and serde then reads it (or says why it cannot).
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
        b"toolUseResult" => l.tool_use_result = raw(v),
        b"permission_denials" => l.permission_denials = raw(v),
        b"attachment" => l.attachment = raw(v),
        _ => {}
    })?;
    if !ok {
        return None;
    }
    if let Some(m) = message.filter(|m| *m != b"null") {
        l.message = Some(skim_message(m)?);
    }
    if let Some(c) = compact.filter(|c| *c != b"null") {
        l.compact = Some(serde_json::from_slice(c).ok()?);
    }
    Some(l)
}

/// A skimmed value kept raw; JSON `null` is no value, as serde reads an `Option`.
fn raw(v: &[u8]) -> Option<Raw<'_>> {
    (v != b"null").then(|| Raw::from_bytes(v))
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
    let mut msg = Message::default();
    let mut usage = None;
    let mut ok = true;
    skim::fields(m, |k, v| match k {
        b"id" => msg.id = text(v, &mut ok),
        b"model" => msg.model = text(v, &mut ok),
        b"usage" => usage = Some(v),
        b"content" => msg.content = raw(v),
        _ => {}
    })?;
    if !ok {
        return None;
    }
    if let Some(u) = usage.filter(|u| *u != b"null") {
        msg.usage = Some(serde_json::from_slice(u).ok()?);
    }
    Some(msg)
}

/// [`Message::is_prompt`] by skimming; None when the content is not plain enough.
fn skim_content(c: &[u8]) -> Option<bool> {
    match c.first()? {
        b'"' => Some(is_prompt_head(skim::str_head(c)?)),
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
            ok.then_some(text && !other)
        }
        _ => Some(false),
    }
}

fn is_prompt_head(h: &[u8]) -> bool {
    !(h.starts_with(b"<command-")
        || h.starts_with(b"<local-command-")
        || h.starts_with(b"[Request interrupted"))
}

fn is_prompt_text(s: &str) -> bool {
    is_prompt_head(s.as_bytes())
}

/// [`Message::is_prompt`] by serde, for content the skimmer cannot walk.
struct PromptFlag(bool);

#[derive(Deserialize)]
struct PromptBlock<'a> {
    #[serde(rename = "type", borrow)]
    ty: Option<Cow<'a, str>>,
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
}

impl<'de> Deserialize<'de> for PromptFlag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = PromptFlag;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or a list of content blocks")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> std::result::Result<PromptFlag, E> {
                Ok(PromptFlag(is_prompt_text(s)))
            }
            fn visit_unit<E: de::Error>(self) -> std::result::Result<PromptFlag, E> {
                Ok(PromptFlag(false))
            }
            fn visit_map<A: de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<PromptFlag, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(PromptFlag(false))
            }
            fn visit_seq<A: SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<PromptFlag, A::Error> {
                let (mut text, mut other) = (false, false);
                while let Some(b) = seq.next_element::<PromptBlock<'de>>()? {
                    match b.ty.as_deref() {
                        Some("text") => match b.text.as_deref() {
                            Some(t) if !is_prompt_text(t) => other = true,
                            _ => text = true,
                        },
                        Some("image") | Some("document") => {}
                        _ => other = true,
                    }
                }
                Ok(PromptFlag(text && !other))
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
        let serde = l.message.as_ref().map_or(Ok(false), |m| m.is_prompt()).unwrap();
        let skimmed = Line::parse(line.as_bytes()).unwrap();
        let fast = skimmed.message.as_ref().map_or(Ok(false), |m| m.is_prompt()).unwrap();
        assert_eq!(serde, fast, "{line}");
        serde
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
        let u: LoggedUsage = serde_json::from_str(
            r#"{"input_tokens":47,"cache_creation_input_tokens":1115,"cache_read_input_tokens":26504,"output_tokens":173,"cache_creation":{"ephemeral_1h_input_tokens":1115,"ephemeral_5m_input_tokens":0}}"#,
        )
        .unwrap();
        let u = u.to_usage();
        assert_eq!((u.cache_write_5m, u.cache_write_1h, u.cache_read), (0, 1115, 26504));
        let old: LoggedUsage =
            serde_json::from_str(r#"{"input_tokens":1,"cache_creation_input_tokens":10}"#).unwrap();
        assert_eq!(old.to_usage().cache_write_5m, 10);
    }

    #[test]
    fn the_total_wins_when_the_split_disagrees_with_it() {
        let split = |total: Option<u64>, w5: u64, w1: u64| LoggedUsage {
            cache_creation_input_tokens: total,
            cache_creation: Some(CacheCreation {
                ephemeral_5m_input_tokens: Some(w5),
                ephemeral_1h_input_tokens: Some(w1),
            }),
            ..LoggedUsage::default()
        };
        // Agreeing: as logged.
        assert_eq!(split(Some(300), 100, 200).cache_writes(), (100, 200));
        // The split adds up to more than the total: the total holds, 1h first.
        assert_eq!(split(Some(300), 250, 200).cache_writes(), (100, 200));
        assert_eq!(split(Some(150), 0, 200).cache_writes(), (0, 150));
        // Less than the total: the rest is 5-minute writes.
        assert_eq!(split(Some(300), 10, 20).cache_writes(), (280, 20));
        // No total: the split's sum.
        assert_eq!(split(None, 10, 20).cache_writes(), (10, 20));
        assert_eq!(LoggedUsage::default().cache_writes(), (0, 0));
    }

    #[test]
    fn a_call_is_an_assistant_line_with_usage_from_a_real_model() {
        let line = |extra: &str, model: &str| {
            format!(
                r#"{{"type":"assistant"{extra},"requestId":"req_1","message":{{"id":"msg_1","model":"{model}","usage":{{"input_tokens":3,"cache_creation_input_tokens":5,"cache_read_input_tokens":7,"output_tokens":2}}}}}}"#
            )
        };
        let plain = line("", "claude-opus-4-6");
        let c = Line::parse(plain.as_bytes()).unwrap();
        let call = c.call().unwrap();
        assert_eq!(
            (call.id, call.request_id, call.model),
            (Some("msg_1"), Some("req_1"), "claude-opus-4-6")
        );
        assert_eq!(call.usage.summed_input(), 15);
        assert!(!call.sidechain);
        let side = line(r#","isSidechain":true"#, "m");
        assert!(Line::parse(side.as_bytes()).unwrap().call().unwrap().sidechain);
        let synthetic = line("", "<synthetic>");
        assert_eq!(Line::parse(synthetic.as_bytes()).unwrap().call(), None);
        let error = line(r#","isApiErrorMessage":true"#, "m");
        assert_eq!(Line::parse(error.as_bytes()).unwrap().call(), None);
    }

    #[test]
    fn content_blocks_decode_with_their_fields() {
        let l = Line::parse(
            br#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"Exit code 1"}],"is_error":true},"stray",{"type":"text","text":"a\nb"}]}}"#,
        )
        .unwrap();
        let Content::Blocks(b) = l.message.unwrap().content() else { panic!() };
        assert_eq!(b.len(), 2);
        assert_eq!((b[0].kind(), b[0].is_error()), ("tool_result", true));
        assert_eq!(super::super::text(b[0].tool_use_id).as_deref(), Some("t1"));
        assert_eq!(super::super::text(b[1].text).as_deref(), Some("a\nb"));
    }
}

#[cfg(test)]
mod skim_tests {
    use super::*;

    /// The fast path reads every real line, and reads it as serde does.
    #[test]
    fn skimming_agrees_with_serde_on_every_sample_line() {
        let dir = crate::testing::samples("claude-code");
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
                    let compact = l.compact.as_ref().map(|c| (c.trigger.clone(), c.pre_tokens));
                    let rest = (
                        (l.ty.clone(), l.subtype.clone(), l.timestamp.clone()),
                        (l.is_sidechain, l.is_meta, l.is_compact_summary, l.is_api_error),
                        (l.request_id.clone(), l.cwd.clone()),
                        m.and_then(|m| m.id.clone()),
                        m.and_then(|m| m.model.clone()),
                        m.and_then(|m| m.usage.map(|u| u.to_usage())),
                        m.map(|m| m.is_prompt().unwrap()),
                        m.map(|m| m.content()),
                        (l.tool_use_result, l.permission_denials, l.attachment),
                    );
                    format!("{compact:?} {rest:?}")
                };
                assert_eq!(key(&fast), key(&slow), "{line}");
                n += 1;
            }
        }
        assert!(n > 500, "{n} lines");
    }
}
