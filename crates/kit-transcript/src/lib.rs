//! Reading agents' transcripts (layers 2 and 3 of the list in the repository's `src/lib.rs`):
//! the price table ([`prices`], `kit/prices.toml` with `config.toml`'s overrides) and the
//! transcript engine ([`transcript`]: Claude Code's and Codex's session files, discovered,
//! parsed, deduplicated, skimmed and summed).
//!
//! Depends on `kit-core` only.

// An item is `pub` only where another kit crate uses it; everything else is `pub(crate)`.
#![warn(unreachable_pub)]
// The library prints nothing itself.
#![warn(clippy::print_stdout, clippy::print_stderr)]

pub mod prices;
pub mod transcript;

// kit-core's modules under their old `crate::` paths (private: nothing is re-exported).
#[cfg(test)]
use kit_core::testing;
use kit_core::{atomic, digest, error, units, Error};
