//! One line model per transcript format (STYLE 14): [`claude`] for Claude Code's JSONL
//! (`formats/claude-code.md`), [`codex`] for Codex rollouts (`formats/codex.md`). Every reader
//! of transcripts parses a line with these types and nothing else: the engine
//! ([`super::claude`], [`super::codex`]), the hook's backwards tail read ([`super::tail`]),
//! `kit recall` ([`crate::recall`]) and `kit mine` ([`crate::mine::read`]). So a field is named,
//! and a figure derived (the cache-write split, what counts as an API call), in one place; the
//! tests in `mine::agree` feed one shared fixture to all four and demand the same figures.
//!
//! The types borrow from the line's bytes. What only some readers need — message content, tool
//! inputs and results — is kept as [`Raw`] JSON and decoded on demand, so the engine and the
//! hook pay for none of it.

pub mod claude;
pub mod codex;

use std::borrow::Cow;

use serde::{Deserialize, Deserializer};

use super::skim;

/// A JSON value kept as its raw bytes (the exact slice of the line), decoded on demand with
/// [`Raw::decode`]. Built by serde (through `serde_json::value::RawValue`, which checks it is
/// one JSON value) or by the skimmer ([`super::skim`], which checks only its brackets and
/// strings; a decode then reports what the skimmer did not check).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Raw<'a>(&'a [u8]);

impl<'a> Raw<'a> {
    /// The value's bytes as they appear in the line.
    pub(crate) fn from_bytes(b: &'a [u8]) -> Raw<'a> {
        Raw(b)
    }

    /// The raw bytes.
    pub(crate) fn bytes(&self) -> &'a [u8] {
        self.0
    }

    /// Decode the value as `T`. Errors: the value is not a `T` (serde's message).
    pub fn decode<T: Deserialize<'a>>(&self) -> serde_json::Result<T> {
        serde_json::from_slice(self.0)
    }

    /// The value as free-form JSON (tool inputs and results, whose shape is the tool's own).
    /// `Null` when it does not decode.
    pub fn value(&self) -> serde_json::Value {
        self.decode().unwrap_or(serde_json::Value::Null)
    }

    /// The value as a string, when it is one (escapes decoded; borrowed when it has none).
    pub fn as_str(&self) -> Option<Cow<'a, str>> {
        if self.0.first() != Some(&b'"') {
            return None;
        }
        match skim::plain_str(self.0) {
            Some(s) => Some(Cow::Borrowed(s)),
            None => self.decode::<String>().ok().map(Cow::Owned),
        }
    }

    /// The elements of an array value (skimmed; by serde when the skimmer cannot walk it).
    /// Empty when the value is not an array.
    pub(crate) fn elements(&self) -> Vec<Raw<'a>> {
        if self.0.first() != Some(&b'[') {
            return vec![];
        }
        let mut out = vec![];
        match skim::elements(self.0, |e| out.push(Raw(e))) {
            Some(()) => out,
            None => self.decode().unwrap_or_default(),
        }
    }

    /// Every string inside the value, in the order a `serde_json::Value` walk gives them
    /// (arrays in order, object members by key): tool inputs and results, whose shape is the
    /// tool's own. Skimmed; walked as a `Value` when the skimmer cannot (escaped or repeated
    /// keys, damage).
    pub fn strings(&self) -> Vec<Cow<'a, str>> {
        let mut out = vec![];
        if walk(self.0, &mut out).is_none() {
            out.clear();
            walk_value(self.value(), &mut out);
        }
        out
    }
}

fn walk<'a>(b: &'a [u8], out: &mut Vec<Cow<'a, str>>) -> Option<()> {
    match b.first() {
        Some(b'"') => out.push(Raw(b).as_str()?),
        Some(b'[') => {
            let mut items = vec![];
            skim::elements(b, |e| items.push(e))?;
            for e in items {
                walk(e, out)?;
            }
        }
        Some(b'{') => {
            let mut members = vec![];
            skim::fields(b, |k, v| members.push((k, v)))?;
            if members.iter().any(|(k, _)| memchr::memchr(b'\\', k).is_some()) {
                return None;
            }
            // `Value`'s map orders by key (serde_json without `preserve_order`).
            members.sort_by(|a, b| a.0.cmp(b.0));
            if members.windows(2).any(|w| w[0].0 == w[1].0) {
                return None;
            }
            for (_, v) in members {
                walk(v, out)?;
            }
        }
        _ => {}
    }
    Some(())
}

fn walk_value(v: serde_json::Value, out: &mut Vec<Cow<'_, str>>) {
    use serde_json::Value;
    match v {
        Value::String(s) => out.push(Cow::Owned(s)),
        Value::Array(a) => a.into_iter().for_each(|x| walk_value(x, out)),
        Value::Object(o) => o.into_iter().for_each(|(_, x)| walk_value(x, out)),
        _ => {}
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Raw<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let r = <&'de serde_json::value::RawValue>::deserialize(d)?;
        Ok(Raw(r.get().as_bytes()))
    }
}

/// A raw field's text: None when absent or not a string (escapes decoded).
pub fn text(field: Option<Raw<'_>>) -> Option<Cow<'_, str>> {
    field.and_then(|r| r.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_come_in_the_order_of_a_value_walk() {
        for json in [
            r#"{"z":"last","a":["one",{"m":"two","b":"three"}],"n":1,"t":true}"#,
            r#""a \"quoted\" line\n""#,
            r#"[{"type":"text","text":"x"},"y",null,3]"#,
            r#"{"dup":"first","dup":"second"}"#,
            r#"{"k\u0065y":"escaped key","a":"b"}"#,
            "42",
        ] {
            let raw = Raw::from_bytes(json.as_bytes());
            let mut want = vec![];
            walk_value(raw.value(), &mut want);
            assert_eq!(raw.strings(), want, "{json}");
        }
        let raw = Raw::from_bytes(br#"{"z":"last","a":["one",{"m":"two","b":"three"}]}"#);
        assert_eq!(raw.strings(), ["one", "three", "two", "last"]);
    }

    #[test]
    fn plain_strings_are_borrowed_and_escaped_ones_decoded() {
        assert!(matches!(Raw::from_bytes(br#""plain""#).as_str(), Some(Cow::Borrowed("plain"))));
        assert_eq!(Raw::from_bytes(br#""a\tb""#).as_str().as_deref(), Some("a\tb"));
        assert_eq!(Raw::from_bytes(b"12").as_str(), None);
        assert_eq!(Raw::from_bytes(br#"["a",{"b":1}]"#).elements().len(), 2);
        assert!(Raw::from_bytes(br#"{"a":1}"#).elements().is_empty());
    }
}
