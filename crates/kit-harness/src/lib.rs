//! kit's harness (layers 2 and 4 to 6 of the list in the repository's `src/lib.rs`): the
//! project's state ([`longrun`], [`templates`]), what a project holds ([`frozen`], [`goal`],
//! [`handoff`], [`cache`]), what runs on it ([`looprun`], [`hook`], [`fake_agent`],
//! [`schedule`]) and what reports on it ([`measure`], [`recall`], [`status`], [`doctor`],
//! [`report`], [`mine`]).
//!
//! Depends on `kit-core` and `kit-transcript`. It knows nothing of the course (`kit-course`),
//! which passes down what it needs (an identity in the sandbox's environment, the state folder a
//! sandbox keeps for its handoff key as a function the command edge hands to `handoff` and
//! `hook`): Cargo enforces that, as the course depends on the harness.

// An item is `pub` only where another kit crate or the integration tests use it; everything
// else is `pub(crate)`.
#![warn(unreachable_pub)]
// Terminal output goes through `term` and the writers the command edge hands down; the library
// prints nothing itself.
#![warn(clippy::print_stdout, clippy::print_stderr)]

pub mod cache;
pub mod doctor;
pub mod fake_agent;
pub mod frozen;
pub mod goal;
pub mod handoff;
pub mod hook;
pub mod longrun;
pub mod looprun;
pub mod measure;
pub mod mine;
pub mod recall;
pub mod report;
pub mod schedule;
pub mod status;
pub mod templates;

// The lower crates' modules under their old `crate::` paths (private: nothing is re-exported).
#[cfg(test)]
use kit_core::testing;
use kit_core::{atomic, clock, digest, duration, error, git, keys, proc, term, units};
use kit_core::{Error, Result};
use kit_transcript::{prices, transcript};
