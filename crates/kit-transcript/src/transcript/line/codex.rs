//! One line of a Codex rollout (`formats/codex.md` §2–§5), as every reader in kit parses it:
//! the engine, `kit recall` and `kit mine`.
//!
//! The envelope is `{timestamp, type, payload}`; [`Envelope`]'s deserializer reads the payload
//! according to `type` in one pass. The large free-form parts (message content, tool arguments
//! and outputs) stay [`Raw`] until a reader asks, so the engine skips them without allocating.
//! [`Cumulative`] is the one rule for which `token_count` records are API calls and what each
//! bills (§5.1).

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;

use super::Raw;
use crate::prices::Usage;

/// One rollout line.
pub struct Envelope<'a> {
    /// `timestamp`, UTC with milliseconds.
    pub timestamp: Option<Cow<'a, str>>,
    /// The payload, by `type`.
    pub payload: Payload<'a>,
}

/// A line's payload, by the envelope's `type` (§2).
pub enum Payload<'a> {
    /// `session_meta` (§3).
    SessionMeta(SessionMeta<'a>),
    /// `turn_context`: the settings of the next requests.
    TurnContext(TurnContext<'a>),
    /// `event_msg` (§5).
    Event(EventMsg<'a>),
    /// `response_item` (§4).
    ResponseItem(ResponseItem<'a>),
    /// `compacted`: a compaction checkpoint (its replacement history is skipped).
    Compacted,
    /// A known type kit does not need.
    Other,
    /// A type this version does not know.
    Unknown,
}

/// `session_meta` (§3): only the fields kit reads.
#[derive(Deserialize)]
pub struct SessionMeta<'a> {
    /// The session (thread) id.
    #[serde(borrow)]
    pub id: Option<Cow<'a, str>>,
    /// The working directory.
    #[serde(borrow)]
    pub cwd: Option<Cow<'a, str>>,
}

/// `turn_context`.
#[derive(Deserialize)]
pub struct TurnContext<'a> {
    /// The model of the next requests.
    #[serde(borrow)]
    pub model: Option<Cow<'a, str>>,
    /// The working directory.
    #[serde(borrow)]
    pub cwd: Option<Cow<'a, str>>,
}

/// `event_msg` (§5).
#[derive(Deserialize)]
pub struct EventMsg<'a> {
    /// e.g. `token_count`, `user_message`, `task_started`, `item_completed`.
    #[serde(rename = "type", borrow)]
    pub ty: Option<Cow<'a, str>>,
    /// `token_count`'s usage; None (`info: null`) on rate-limit-only records.
    pub info: Option<Info>,
    /// `item_completed`'s item (0.171, `formats/real-clis.md` §6).
    #[serde(borrow)]
    pub item: Option<Item<'a>>,
}

/// `token_count.info` (§5.1).
#[derive(Clone, Copy, Deserialize)]
pub struct Info {
    /// The thread's cumulative usage.
    pub total_token_usage: Option<Counters>,
    /// The last response's usage (or a context estimate after a compaction).
    pub last_token_usage: Option<Counters>,
    /// The model's context window (tokens).
    pub model_context_window: Option<i64>,
}

/// An `item_completed` item: `{type, id, command, status, aggregated_output | stdout/stderr,
/// exit_code}` for a `CommandExecution`; `{type: "UserMessage", …}` for a prompt.
#[derive(Deserialize)]
pub struct Item<'a> {
    /// `UserMessage`, `AgentMessage`, `CommandExecution`, …
    #[serde(rename = "type", borrow)]
    pub ty: Option<Cow<'a, str>>,
    /// The item id (a command's is its tool call's `call_id`).
    #[serde(borrow)]
    pub id: Option<Raw<'a>>,
    /// A command: a string or an argv.
    #[serde(borrow)]
    pub command: Option<Raw<'a>>,
    /// `cmd` (some builds).
    #[serde(borrow)]
    pub cmd: Option<Raw<'a>>,
    /// `completed`, `failed`, `declined`, …
    #[serde(borrow)]
    pub status: Option<Raw<'a>>,
    /// The command's output, as the item logs it.
    #[serde(borrow)]
    pub aggregated_output: Option<Raw<'a>>,
    /// Its stderr.
    #[serde(borrow)]
    pub stderr: Option<Raw<'a>>,
    /// Its formatted output.
    #[serde(borrow)]
    pub formatted_output: Option<Raw<'a>>,
    /// Its stdout.
    #[serde(borrow)]
    pub stdout: Option<Raw<'a>>,
    /// Its exit code.
    #[serde(borrow)]
    pub exit_code: Option<Raw<'a>>,
}

/// `response_item` (§4): the model-visible conversation, with the fields of every kind kit
/// reads (each kind has its own).
#[derive(Deserialize)]
pub struct ResponseItem<'a> {
    /// `message`, `reasoning`, `function_call`, `function_call_output`, `custom_tool_call`,
    /// `custom_tool_call_output`, `local_shell_call`, `compaction`, …
    #[serde(rename = "type", borrow)]
    pub ty: Option<Cow<'a, str>>,
    /// A message's role: `user`, `assistant`, `developer`, `system`.
    #[serde(borrow)]
    pub role: Option<Cow<'a, str>>,
    /// A message's content items, or a reasoning item's content.
    #[serde(borrow)]
    pub content: Option<Raw<'a>>,
    /// A reasoning item's summary.
    #[serde(borrow)]
    pub summary: Option<Raw<'a>>,
    /// A tool call's name.
    #[serde(borrow)]
    pub name: Option<Raw<'a>>,
    /// A function call's arguments (JSON encoded as a string).
    #[serde(borrow)]
    pub arguments: Option<Raw<'a>>,
    /// A custom tool call's input (e.g. an `apply_patch` patch).
    #[serde(borrow)]
    pub input: Option<Raw<'a>>,
    /// The call id pairing a call with its output.
    #[serde(borrow)]
    pub call_id: Option<Raw<'a>>,
    /// A call output's output: a string or a list of content items.
    #[serde(borrow)]
    pub output: Option<Raw<'a>>,
    /// A local shell call's action (`{type: "exec", command: […]}`).
    #[serde(borrow)]
    pub action: Option<Raw<'a>>,
}

impl<'a> ResponseItem<'a> {
    /// The item's `type`, or "".
    pub fn kind(&self) -> &str {
        self.ty.as_deref().unwrap_or("")
    }

    /// Whether it is a server-side compaction (§6).
    pub(crate) fn is_compaction(&self) -> bool {
        matches!(self.kind(), "compaction" | "context_compaction")
    }

    /// The `text` of each element of a list field (message content, reasoning summary).
    pub fn texts(field: Option<Raw<'a>>) -> Vec<Cow<'a, str>> {
        #[derive(Deserialize)]
        struct Part<'a> {
            #[serde(borrow)]
            text: Option<Raw<'a>>,
        }
        let items = field.map(|r| r.elements()).unwrap_or_default();
        items
            .iter()
            .filter_map(|r| r.decode::<Part<'a>>().ok())
            .filter_map(|p| p.text.and_then(|t| t.as_str()))
            .collect()
    }
}

/// `TokenUsage` (§5.1); newer builds add `cache_write_input_tokens`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct Counters {
    /// Input, cached and written included.
    pub input_tokens: i64,
    /// Cached input (cache reads).
    pub cached_input_tokens: i64,
    /// Cache writes (≈0.153 on).
    pub cache_write_input_tokens: i64,
    /// Output, reasoning included.
    pub output_tokens: i64,
    /// Reasoning output.
    pub reasoning_output_tokens: i64,
    /// All of it.
    pub total_tokens: i64,
}

impl Counters {
    fn fields(&self) -> [i64; 5] {
        [
            self.input_tokens,
            self.cached_input_tokens,
            self.cache_write_input_tokens,
            self.output_tokens,
            self.reasoning_output_tokens,
        ]
    }

    fn decreased_from(&self, prev: &Counters) -> bool {
        self.fields().iter().zip(prev.fields()).any(|(a, b)| *a < b)
    }

    fn minus(&self, o: &Counters) -> Counters {
        Counters {
            input_tokens: self.input_tokens - o.input_tokens,
            cached_input_tokens: self.cached_input_tokens - o.cached_input_tokens,
            cache_write_input_tokens: self.cache_write_input_tokens - o.cache_write_input_tokens,
            output_tokens: self.output_tokens - o.output_tokens,
            reasoning_output_tokens: self.reasoning_output_tokens - o.reasoning_output_tokens,
            total_tokens: self.total_tokens - o.total_tokens,
        }
    }

    /// A context-size estimate: all categories 0, only `total_tokens` set.
    pub(crate) fn is_estimate(&self) -> bool {
        self.input_tokens == 0 && self.output_tokens == 0 && self.total_tokens > 0
    }

    /// `total_tokens`, else input + output.
    pub(crate) fn total(&self) -> i64 {
        if self.total_tokens > 0 {
            self.total_tokens
        } else {
            self.input_tokens + self.output_tokens
        }
    }

    /// As a billing record: OpenAI's input holds the cached and written tokens, so uncached
    /// input = input − cached − written (each part at most what is left); cache writes have no
    /// TTL split (all 5-minute); output holds reasoning.
    pub(crate) fn to_usage(self) -> Usage {
        let input = self.input_tokens.max(0) as u64;
        let cached = (self.cached_input_tokens.max(0) as u64).min(input);
        let writes = (self.cache_write_input_tokens.max(0) as u64).min(input - cached);
        Usage {
            input: input - cached - writes,
            cache_write_5m: writes,
            cache_write_1h: 0,
            cache_read: cached,
            output: self.output_tokens.max(0) as u64,
        }
    }
}

/// The thread's cumulative usage as `token_count` records report it, and the one rule for
/// which record is an API call (§5.1, §10.2): a record counts only when the cumulative
/// changed (0.104-era builds echo each record after the next `turn_context`, and
/// post-compaction records carry an estimate with the cumulative unchanged), and it bills the
/// difference from the previous cumulative, so the calls add up to the file's last cumulative.
/// A cumulative that goes down (`fill_to_context_window`) re-baselines without billing.
#[derive(Clone, Copy, Debug, Default)]
pub struct Cumulative {
    prev: Counters,
}

impl Cumulative {
    /// The next record's cumulative: what it bills when it is an API call, None when not.
    pub fn next(&mut self, total: Counters) -> Option<Counters> {
        if total == self.prev {
            return None; // an echo, or a context estimate
        }
        let prev = std::mem::replace(&mut self.prev, total);
        if total.decreased_from(&prev) {
            return None; // overwritten cumulative: re-baseline, bill nothing
        }
        Some(total.minus(&prev))
    }
}

/// Line types of the rollout envelope (§2, §8).
pub(crate) const KNOWN_TYPES: &[&str] = &[
    "session_meta",
    "response_item",
    "event_msg",
    "turn_context",
    "compacted",
    "token_usage_record",
    "world_state",
    "inter_agent_communication",
    "inter_agent_communication_metadata",
    "retained_context",
    "security_risk_score",
    "realtime_item",
];

impl<'a> Envelope<'a> {
    /// Parse one line. Errors: serde's, when it is not a JSON object of this shape.
    pub fn parse(bytes: &'a [u8]) -> serde_json::Result<Envelope<'a>> {
        serde_json::from_slice(bytes)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Envelope<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Envelope<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a rollout line {timestamp, type, payload}")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<Self::Value, A::Error> {
                let mut timestamp: Option<Cow<'a, str>> = None;
                let mut ty: Option<Cow<'a, str>> = None;
                let mut payload: Option<Payload<'a>> = None;
                // A payload met before `type` (never seen in real files) is kept raw and read
                // once the type is known.
                let mut early: Option<Raw<'a>> = None;
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    match &*key {
                        "timestamp" => timestamp = map.next_value()?,
                        "type" => ty = map.next_value()?,
                        "payload" => match ty.as_deref() {
                            Some(t) => payload = Some(read_payload(t, &mut map)?),
                            None => early = Some(map.next_value()?),
                        },
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                let Some(t) = ty else {
                    return Ok(Envelope { timestamp, payload: Payload::Unknown });
                };
                let payload = match (payload, early) {
                    (Some(p), _) => p,
                    (None, Some(raw)) => {
                        let mut de = serde_json::Deserializer::from_slice(raw.bytes());
                        payload_of(&t, &mut de).map_err(de::Error::custom)?
                    }
                    (None, None) if KNOWN_TYPES.contains(&&*t) => Payload::Other,
                    (None, None) => Payload::Unknown,
                };
                Ok(Envelope { timestamp, payload })
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

fn read_payload<'de: 'a, 'a, A: MapAccess<'de>>(
    ty: &str,
    map: &mut A,
) -> std::result::Result<Payload<'a>, A::Error> {
    Ok(match ty {
        "session_meta" => Payload::SessionMeta(map.next_value()?),
        "turn_context" => Payload::TurnContext(map.next_value()?),
        "event_msg" => Payload::Event(map.next_value()?),
        "response_item" => Payload::ResponseItem(map.next_value()?),
        "compacted" => {
            map.next_value::<IgnoredAny>()?;
            Payload::Compacted
        }
        t => {
            map.next_value::<IgnoredAny>()?;
            if KNOWN_TYPES.contains(&t) {
                Payload::Other
            } else {
                Payload::Unknown
            }
        }
    })
}

/// A payload read on its own (it came before `type`).
fn payload_of<'de: 'a, 'a, D: Deserializer<'de>>(
    ty: &str,
    d: D,
) -> std::result::Result<Payload<'a>, D::Error> {
    Ok(match ty {
        "session_meta" => Payload::SessionMeta(Deserialize::deserialize(d)?),
        "turn_context" => Payload::TurnContext(Deserialize::deserialize(d)?),
        "event_msg" => Payload::Event(Deserialize::deserialize(d)?),
        "response_item" => Payload::ResponseItem(Deserialize::deserialize(d)?),
        "compacted" => Payload::Compacted,
        t if KNOWN_TYPES.contains(&t) => Payload::Other,
        _ => Payload::Unknown,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_reads_payload_by_type_in_one_pass() {
        let l = Envelope::parse(
            br#"{"timestamp":"2026-02-23T11:54:52.353Z","type":"turn_context","payload":{"model":"gpt-5.3-codex","cwd":"/w"}}"#,
        )
        .unwrap();
        assert!(
            matches!(l.payload, Payload::TurnContext(TurnContext { model: Some(ref m), .. }) if m == "gpt-5.3-codex")
        );
        let l = Envelope::parse(br#"{"payload":{"model":"m"},"type":"turn_context"}"#).unwrap();
        assert!(
            matches!(l.payload, Payload::TurnContext(TurnContext { model: Some(ref m), .. }) if m == "m")
        );
        let l = Envelope::parse(br#"{"type":"brand_new","payload":{}}"#).unwrap();
        assert!(matches!(l.payload, Payload::Unknown));
    }

    #[test]
    fn only_a_changed_cumulative_is_a_call() {
        let c = |input: i64, cached: i64, out: i64| Counters {
            input_tokens: input,
            cached_input_tokens: cached,
            output_tokens: out,
            total_tokens: input + out,
            ..Counters::default()
        };
        let mut cum = Cumulative::default();
        let d = cum.next(c(100, 40, 5)).unwrap();
        assert_eq!(d.to_usage().input, 60);
        assert_eq!(cum.next(c(100, 40, 5)), None, "an echo");
        let d = cum.next(c(250, 140, 9)).unwrap();
        assert_eq!((d.input_tokens, d.cached_input_tokens, d.output_tokens), (150, 100, 4));
        assert_eq!(cum.next(c(10, 0, 0)), None, "a re-baseline");
        assert_eq!(cum.next(c(30, 0, 1)).unwrap().input_tokens, 20);
    }

    #[test]
    fn response_items_keep_their_free_form_parts_raw() {
        let l = Envelope::parse(
            br#"{"type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"ls\"}","call_id":"c1"}}"#,
        )
        .unwrap();
        let Payload::ResponseItem(r) = l.payload else { panic!() };
        assert_eq!(r.kind(), "function_call");
        assert_eq!(r.arguments.and_then(|a| a.as_str()).as_deref(), Some(r#"{"cmd":"ls"}"#));
        let l = Envelope::parse(
            br#"{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"},{"type":"input_image","image_url":"x"}]}}"#,
        )
        .unwrap();
        let Payload::ResponseItem(r) = l.payload else { panic!() };
        assert_eq!(ResponseItem::texts(r.content), ["hi"]);
    }
}
