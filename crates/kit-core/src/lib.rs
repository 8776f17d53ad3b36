//! kit's base (layer 1 of the list in the repository's `src/lib.rs`): the infrastructure every
//! other kit crate builds on and which knows nothing of them. Errors and exit codes
//! ([`error`]), atomic writes ([`atomic`]), the clock ([`clock`]), durations and sizes
//! ([`duration`], [`units`]), the terminal ([`term`]), git ([`git`]), processes ([`proc`]:
//! process trees, PATH, children under a time limit), digests ([`digest`]), per-user keys and
//! HMAC ([`keys`]), and what the unit tests of every crate share ([`testing`]).
//!
//! Depends on no other kit crate.

// An item is `pub` only where another kit crate uses it; everything else is `pub(crate)`.
#![warn(unreachable_pub)]
// Terminal output goes through `term` and the writers the command edge hands down; the library
// prints nothing itself.
#![warn(clippy::print_stdout, clippy::print_stderr)]

pub mod atomic;
pub mod clock;
pub mod digest;
pub mod duration;
pub mod error;
pub mod git;
pub mod keys;
pub mod proc;
pub mod signals;
pub mod term;
#[doc(hidden)]
pub mod testing;
pub mod units;

pub use error::{Error, Result};
