//! Codex CLI rollouts (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-…-<uuid>.jsonl[.zst]`), per
//! the format reference `formats/codex.md`.
//!
//! Token accounting (§5.1, §10.2): `event_msg/token_count` records carry the thread's
//! *cumulative* `total_token_usage`; which record is an API call and what it bills is the
//! line model's rule ([`super::line::codex::Cumulative`]: only a changed cumulative, billing
//! the difference), so the session's totals equal the file's last cumulative exactly. Cached
//! input is part of OpenAI's input (and cache writes, newer builds, too); reasoning is part of
//! output. The model is the latest `turn_context.model`.
//!
//! User turns: an `event_msg/user_message` (0.1xx builds) or, from 0.171, an
//! `event_msg/item_completed` whose `item.type` is `UserMessage` (0.171 writes no
//! `user_message` any more; `formats/real-clis.md` §6). A build that logs one prompt both ways
//! within a turn counts it once (see [`Prompt`]).
//!
//! Lines are read with the one Codex line model, [`super::line::codex`]: the payload is parsed
//! according to `type` in one pass, and the large parts of `response_item`s stay raw.

use std::path::Path;
use std::sync::Arc;

use super::line::codex::{Cumulative, Envelope, Info, Payload};
use super::lines::{self, Parsed};
use super::{
    codex_compaction_point, parse_ts_ms, ApiCall, Builder, Compaction, EngineOptions,
    SessionSummary, Source, Stream,
};
use crate::error::Result;

/// A rollout read whole: its summary and its API calls in order.
#[derive(Debug)]
pub struct SessionRead {
    /// The summary.
    pub summary: SessionSummary,
    /// The calls, with gaps and costs.
    pub calls: Vec<ApiCall>,
}

/// Read one rollout. Errors: I/O, or the first damaged line under `strict`.
pub fn read(path: &Path, opts: EngineOptions<'_>) -> Result<SessionRead> {
    let mut b = Builder::new(opts, Source::Codex, id_from_name(path), path.to_path_buf());
    let mut st = State::default();
    let mut damage = std::mem::take(&mut b.damage);
    lines::for_each_record(path, b.limits(), &mut damage, |_, bytes| {
        let line = Envelope::parse(bytes)?;
        Ok(st.apply(line, &mut b))
    })?;
    b.damage = damage;
    if let Some(w) = st.window {
        b.point_override = Some(codex_compaction_point(w));
    } else {
        b.point_override = Some(codex_compaction_point(DEFAULT_CODEX_WINDOW));
    }
    let mut summary = b.summarise(&mut st.stream, true);
    summary.damage = std::mem::take(&mut b.damage);
    Ok(SessionRead { summary, calls: st.stream.calls })
}

/// The effective window Codex reports for GPT-5-class models (tokens): 272,000 × 95%.
pub(super) const DEFAULT_CODEX_WINDOW: u64 = 258_400;

/// The session id from a rollout's file name: the UUID after `rollout-YYYY-MM-DDThh-mm-ss-`.
fn id_from_name(path: &Path) -> String {
    let stem = super::discover::stem(path);
    match stem.strip_prefix("rollout-") {
        Some(rest) if rest.len() > 20 && rest.as_bytes()[19] == b'-' => rest[20..].to_string(),
        _ => stem,
    }
}

#[derive(Default)]
struct State {
    stream: Stream,
    seen_meta: bool,
    model: Option<Arc<str>>,
    cumulative: Cumulative,
    last_context: u64,
    /// A compaction waits for the next real record's context as its "after".
    open_compaction: bool,
    /// The last token record was a real response (not an echo or estimate).
    fresh_context: bool,
    window: Option<u64>,
    /// How the last counted prompt of the current turn was logged, if it was.
    prompt: Option<Prompt>,
}

/// How a user prompt is logged: the legacy `user_message` event, or 0.171's `UserMessage`
/// item. The two kinds met within one turn (no `task_started` or token record between them)
/// are one prompt logged twice; two of the same kind are two prompts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Prompt {
    Event,
    Item,
}

impl State {
    fn apply(&mut self, line: Envelope<'_>, b: &mut Builder<'_>) -> Parsed {
        let ts = line.timestamp.as_deref().and_then(parse_ts_ms);
        if let Some(t) = ts {
            b.clock.tick(t);
        }
        match line.payload {
            Payload::SessionMeta(m) => {
                if !self.seen_meta {
                    self.seen_meta = true;
                    if let Some(id) = m.id {
                        b.session_id = id.into_owned();
                    }
                    if let Some(cwd) = m.cwd {
                        b.project = cwd.into_owned();
                    }
                }
            }
            Payload::TurnContext(c) => {
                if let Some(m) = c.model {
                    if self.model.as_deref() != Some(&*m) {
                        self.model = Some(Arc::from(&*m));
                    }
                }
                if b.project.is_empty() {
                    if let Some(cwd) = c.cwd {
                        b.project = cwd.into_owned();
                    }
                }
            }
            Payload::Event(e) => match e.ty.as_deref() {
                Some("user_message") => self.prompt(Prompt::Event, b),
                Some("item_completed")
                    if e.item.and_then(|i| i.ty).as_deref() == Some("UserMessage") =>
                {
                    self.prompt(Prompt::Item, b)
                }
                Some("task_started") => self.prompt = None,
                Some("token_count") => {
                    if let Some(info) = e.info {
                        self.prompt = None;
                        self.token_count(info, ts);
                        if let (true, Some(c)) = (self.open_compaction, b.compactions.last_mut()) {
                            if c.tokens_after.is_none() && self.fresh_context {
                                c.tokens_after = Some(self.last_context);
                                self.open_compaction = false;
                            }
                        }
                    }
                }
                Some("context_compacted") => self.compaction(ts, b),
                _ => {}
            },
            Payload::Compacted => self.compaction(ts, b),
            Payload::ResponseItem(r) => {
                if r.is_compaction() {
                    self.compaction(ts, b);
                }
            }
            Payload::Other => {}
            Payload::Unknown => return Parsed::UnknownType,
        }
        Parsed::Known
    }

    fn prompt(&mut self, kind: Prompt, b: &mut Builder<'_>) {
        match self.prompt {
            // The same prompt, logged the other way too.
            Some(k) if k != kind => self.prompt = None,
            _ => {
                b.turns += 1;
                self.prompt = Some(kind);
            }
        }
    }

    fn compaction(&mut self, ts: Option<i64>, b: &mut Builder<'_>) {
        if self.open_compaction {
            return; // the same compaction, logged again (`compacted` then `context_compacted`)
        }
        self.open_compaction = true;
        b.compactions.push(Compaction {
            at: ts.map(super::format_ts_ms),
            trigger: "unknown".into(),
            tokens_before: self.last_context,
            tokens_after: None,
            at_ms: ts,
        });
    }
}

impl State {
    fn token_count(&mut self, info: Info, ts: Option<i64>) {
        if let Some(w) = info.model_context_window.filter(|w| *w > 0) {
            self.window = Some(w as u64);
        }
        self.fresh_context = false;
        let Some(total) = info.total_token_usage else { return };
        let Some(d) = self.cumulative.next(total) else { return };
        let usage = d.to_usage();
        let context = match info.last_token_usage {
            Some(l) if !l.is_estimate() => l.total().max(0) as u64,
            _ => super::context_from_usage(&usage) + usage.output,
        };
        self.last_context = context;
        self.fresh_context = true;
        let model = self.model.clone().unwrap_or_else(|| Arc::from("unknown"));
        self.stream.calls.push(ApiCall {
            ts_ms: ts,
            model,
            usage,
            reasoning: d.reasoning_output_tokens.max(0) as u64,
            context_tokens: context,
            // The fields no reader of a Codex rollout knows, as the ledger leaves them too.
            gap_s: None,
            resume: false,
            resume_premium_usd: 0.0,
            cost_usd: None,
            sidechain: false,
            id: None,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_id_comes_from_the_file_name_when_there_is_no_meta() {
        let p =
            Path::new("/x/rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl");
        assert_eq!(id_from_name(p), "019c8a59-e9dd-71f0-9ae3-4079fe9726a9");
        assert_eq!(id_from_name(Path::new("/x/other.jsonl")), "other");
    }

    #[test]
    fn user_turns_are_counted_from_events_or_items_once_each() {
        let ev = r#"{"type":"event_msg","payload":{"type":"user_message","message":"hi"}}"#;
        let item = r#"{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"UserMessage","id":"i","content":[]}}}"#;
        let agent = r#"{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"AgentMessage","id":"a","content":[]}}}"#;
        let start = r#"{"type":"event_msg","payload":{"type":"task_started","turn_id":"t"}}"#;
        let tokens = r#"{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":1}}}}"#;
        let cases: &[(&str, &[&str], u64)] = &[
            ("0.1xx: user_message events", &[start, ev, tokens, start, ev, tokens], 2),
            ("0.171: UserMessage items", &[start, item, agent, tokens, start, item], 2),
            ("one prompt logged both ways", &[start, ev, item, tokens], 1),
            ("both ways, item first", &[start, item, ev], 1),
            ("two prompts in one turn, same way", &[start, item, item], 2),
            ("a legacy turn, then a new one", &[start, ev, tokens, start, item], 2),
            ("agent items are not turns", &[start, agent, agent], 0),
        ];
        for (name, lines, want) in cases {
            let d = tempfile::tempdir().unwrap();
            let p = d.path().join("rollout.jsonl");
            std::fs::write(&p, lines.join("\n") + "\n").unwrap();
            let opts = EngineOptions {
                limits: lines::ReadLimits { strict: true, ..Default::default() },
                ..EngineOptions::standard()
            };
            let s = read(&p, opts).unwrap().summary;
            assert_eq!(s.turns, *want, "{name}");
        }
    }
}
