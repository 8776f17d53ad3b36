//! kit: a harness for running a coding agent (Claude Code, Codex) unattended for hours, and the
//! course that teaches it. See `DESIGN.md` in the shared folder for the specification.
//!
//! kit is a Cargo workspace (`crates/README.md`). This package, `kit`, is the command edge: it
//! owns the binaries (`kit`, `fake-agent`), parses the command line ([`cli`]) and hands it to the
//! libraries ([`run`]); the libraries own every concept. Terminal output goes through
//! `kit_core::term`; the clock through `kit_core::clock`, so goldens can pin exact text.
//!
//! # Crates
//!
//! Each crate depends only on the ones before it in this list; Cargo enforces it.
//!
//! - `kit-core` (`crates/kit-core`): layer 1 below
//! - `kit-transcript` (`crates/kit-transcript`): `prices` and `transcript`
//! - `kit-harness` (`crates/kit-harness`): layers 2 (but `prices`) and 4 to 6; it knows nothing
//!   of the course
//! - `kit-course` (`crates/kit-course`): layer 7
//! - `kit` (this package, the repository root): layer 8, the binaries and the integration tests
//!
//! # Layers
//!
//! Each top-level module imports only from its own layer or the layers before it in this list,
//! and no two top-level modules import each other, directly or round a circle. Layers 1 to 6
//! are the harness, 7 the course: the harness knows nothing of the course, which passes down
//! what it needs (an identity in the sandbox's environment, the state folder a sandbox keeps for
//! its handoff key as a function the command edge hands to `handoff` and `hook`). Between
//! crates, Cargo enforces the order; within a crate (a crate's `lib.rs` brings the lower
//! crates' modules in under their `crate::` names), the unit test in `src/layering.rs` reads the
//! `crate::…` and `kit_…::` paths of every file of every crate and fails on a circle, on an
//! import from a later layer, on a module missing from the list, and on a circle between the
//! files of one folder.
//!
//! 1. base, kit's own infrastructure: `error`, `atomic`, `clock`, `duration`, `units`, `term`,
//!    `git`, `proc` (process trees, PATH, children under a time limit), `digest`, `keys`
//!    (per-user keys, HMAC), `testing` (what the unit tests share)
//! 2. the project's state: `longrun` (the folder, config, journal, history, lock), `prices`,
//!    `templates` (`kit/`: what `kit init` and the loop write from)
//! 3. reading agents' transcripts: `transcript`
//! 4. what a project holds: `frozen`, `goal`, `handoff`, `cache`
//! 5. what runs on it: `looprun`, `hook`, `fake_agent` (the scripted stand-in for an agent, and
//!    its scenarios), `schedule` (the timers that start the loop)
//! 6. what reports on it: `measure`, `recall`, `status`, `doctor`, `report`, `mine`
//! 7. the course and its rehearsals: `sandbox` (a sandbox's marker and environment),
//!    `embedded` (lessons, exercises, cases), `matcher`, `golden`, `rehearse`, `course`, `verify`
//! 8. the command line: `cli`, `run`

// Crate-private by default: an item is `pub` only where the binaries (`kit`, `fake-agent`) reach
// it; everything else is `pub(crate)`.
#![warn(unreachable_pub)]
// Terminal output goes through `term` and the writers the command edge (`run`) hands down; the
// library prints nothing itself.
#![warn(clippy::print_stdout, clippy::print_stderr)]

pub(crate) mod cli;
pub mod run;

// The libraries' modules under their old `crate::` paths (private: nothing is re-exported).
use kit_core::{duration, error, term, units};
use kit_course::{course, rehearse, sandbox, verify};
use kit_harness::{
    cache, doctor, frozen, goal, handoff, hook, longrun, looprun, measure, mine, recall, report,
    schedule, status,
};
use kit_transcript::transcript;

#[cfg(test)]
mod layering;
