//! One line model per transcript format (STYLE 14): [`claude`] for Claude Code's JSONL
//! (`formats/claude-code.md`), [`codex`] for Codex rollouts (`formats/codex.md`). Every reader
//! of transcripts parses a line with these types and nothing else: the engine
//! ([`super::claude`], [`super::codex`]), the hook's backwards tail read ([`super::tail`]),
//! `kit recall` ([`crate::recall`]) and `kit mine` ([`crate::mine::read`]). So a field is named,
//! and a figure derived (the cache-write split, what counts as an API call), in one place; the
//! test `readers_agree` (in this module) feeds one shared fixture to all four and demands the
//! same figures.
//!
//! The types borrow from the line's bytes. What only some readers need — message content, tool
//! inputs and results — is kept as [`Raw`] JSON and decoded on demand, so the engine and the
//! hook pay for none of it.

pub(crate) mod claude;
pub(crate) mod codex;

#[cfg(test)]
mod agree;

use std::borrow::Cow;

use serde::{Deserialize, Deserializer};

/// A JSON value kept as its raw bytes (the exact slice of the line), decoded on demand with
/// [`Raw::decode`]. Built by serde (through `serde_json::value::RawValue`, which checks it is
/// one JSON value) or by the skimmer ([`super::skim`], which checks only its brackets and
/// strings; a decode then reports what the skimmer did not check).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Raw<'a>(&'a [u8]);

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
    pub(crate) fn decode<T: Deserialize<'a>>(&self) -> serde_json::Result<T> {
        serde_json::from_slice(self.0)
    }

    /// The value as free-form JSON (tool inputs and results, whose shape is the tool's own).
    /// `Null` when it does not decode.
    pub(crate) fn value(&self) -> serde_json::Value {
        self.decode().unwrap_or(serde_json::Value::Null)
    }

    /// The value as a string, when it is one (escapes decoded; borrowed when it has none).
    pub(crate) fn as_str(&self) -> Option<Cow<'a, str>> {
        if self.0.first() != Some(&b'"') {
            return None;
        }
        match self.decode::<&'a str>() {
            Ok(s) => Some(Cow::Borrowed(s)),
            Err(_) => self.decode::<String>().ok().map(Cow::Owned),
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Raw<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let r = <&'de serde_json::value::RawValue>::deserialize(d)?;
        Ok(Raw(r.get().as_bytes()))
    }
}

/// A raw field's text: None when absent or not a string (escapes decoded).
pub(crate) fn text(field: Option<Raw<'_>>) -> Option<Cow<'_, str>> {
    field.and_then(|r| r.as_str())
}
