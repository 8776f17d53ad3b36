//! kit's course and its rehearsals (layer 7 of the list in the repository's `src/lib.rs`): a
//! sandbox's marker and environment ([`sandbox`]), the embedded lessons, exercises and cases
//! ([`embedded`]), goldens ([`matcher`], [`golden`]), rehearsals ([`rehearse`]), the course's
//! commands ([`course`]) and `kit verify` ([`verify`]).
//!
//! Depends on `kit-core`, `kit-transcript` and `kit-harness`; nothing below depends on it.

// An item is `pub` only where the `kit` package (binaries, command edge, integration tests)
// uses it; everything else is `pub(crate)`.
#![warn(unreachable_pub)]
// Terminal output goes through `term` and the writers the command edge hands down; the library
// prints nothing itself.
#![warn(clippy::print_stdout, clippy::print_stderr)]

pub mod course;
pub mod embedded;
pub mod golden;
pub mod matcher;
pub mod rehearse;
pub mod sandbox;
pub mod verify;

// The lower crates' modules under their old `crate::` paths (private: nothing is re-exported).
use kit_core::{atomic, clock, digest, duration, error, git, keys, proc, term, units};
use kit_core::{Error, Result};
use kit_harness::{fake_agent, longrun, looprun, templates};
