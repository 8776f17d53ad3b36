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
//! - Lines are read with the one Claude Code line model, [`super::line::claude`]: what an
//!   assistant line bills ([`Line::call`], with the cache-write split) and what a typed prompt
//!   is are decided there, for every reader; message content is skimmed, never allocated.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use super::dedup::{call_key, CallKey, Held};
use super::line::claude::{Call, Line};
use super::lines::{self, Parsed};
use super::{
    parse_ts_ms, ApiCall, Builder, Compaction, EngineOptions, SessionSummary, Source, Stream,
};
use crate::error::Result;
use crate::prices::Usage;

use super::discover::SessionFiles;

/// A session read whole: its summary and the main conversation's API calls in order.
#[derive(Debug)]
pub struct SessionRead {
    /// The summary (subagents as sub-rows).
    pub summary: SessionSummary,
    /// The main conversation's calls, with gaps, resumes and costs.
    pub calls: Vec<ApiCall>,
    /// The dedup key of every call counted (main and subagents, in no order) with the
    /// timestamp of its first line, for deduplication across sessions ([`super::dedup`]).
    /// Calls without a `message.id` have none.
    pub keys: Vec<Held>,
    /// The subagents' calls, costed, in file order (for the ledger; their figures are in the
    /// summary's sub-rows).
    pub subagent_calls: Vec<ApiCall>,
}

/// Read a session's files. Errors: I/O, or the first damaged line under `strict`.
pub fn read(files: &SessionFiles, opts: EngineOptions<'_>) -> Result<SessionRead> {
    read_without(files, opts, &HashSet::new())
}

/// [`read`], leaving out the calls whose key is in `drop` (calls another session holds first,
/// [`super::dedup::losers`]): they are in no figure of the session, tokens, cost, context or
/// resumes; its lines still count for its time and turns. Errors: those of [`read`].
pub fn read_without(
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
    let mut subagent_calls = vec![];
    for (stream, path) in streams.zip(&files.subagents) {
        let mut stream = stream;
        let mut sub = b.summarise(&mut stream, false);
        sub.session_id = super::discover::stem(path);
        sub.path = path.clone();
        summary.absorb_subagent(sub);
        subagent_calls.extend(stream.calls);
    }
    summary.damage = std::mem::take(&mut b.damage);
    Ok(SessionRead { summary, calls: main.calls, keys, subagent_calls })
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
            let line = Line::parse(bytes)?;
            // Content that is not a string or a list of blocks damages the line as a whole.
            let prompt = match &line.message {
                Some(m) => m.is_prompt()?,
                None => false,
            };
            Ok(self.apply(line, prompt, stream, subagent, b))
        });
        b.damage = damage;
        r
    }

    fn apply(
        &mut self,
        line: Line<'_>,
        prompt: bool,
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
                if let Some(call) = line.call() {
                    let new = self.assistant(call, ts, stream, subagent);
                    if let (Some(context), true) = (new, self.pending_after) {
                        self.pending_after = false;
                        if let Some(c) = b.compactions.last_mut() {
                            c.tokens_after = Some(context);
                        }
                    }
                }
            }
            "user" => {
                if prompt
                    && !sidechain
                    && line.is_meta != Some(true)
                    && line.is_compact_summary != Some(true)
                {
                    b.turns += 1;
                }
            }
            "system" => {
                if line.is_compact_boundary() && !sidechain {
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

    /// Count one assistant line's call (a subagent file's lines are all sidechain). Returns
    /// the context of a new main-chain call.
    fn assistant(
        &mut self,
        call: Call<'_>,
        ts: Option<i64>,
        stream: usize,
        subagent: bool,
    ) -> Option<u64> {
        let sidechain = subagent || call.sidechain;
        let (model, usage, id) = (call.model, call.usage, call.id);
        let found = id.and_then(|id| {
            let key = key_of(id, call.request_id);
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
        let key = id.map(|id| key_of(id, call.request_id));
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
            id: key.as_deref().map(Arc::from),
        });
        if let (Some(id), Some(key)) = (id, key) {
            self.by_key.insert(key, (stream, idx));
            self.by_id.entry(id.to_string()).or_insert((stream, idx));
        }
        (stream == 0 && !sidechain).then_some(context)
    }
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
