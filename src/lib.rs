//! kit: a harness for running a coding agent (Claude Code, Codex) unattended for hours, and the
//! course that teaches it. See `DESIGN.md` in the shared folder for the specification.
//!
//! The library owns every concept; `src/main.rs` is glue. Terminal output goes through
//! [`term`]; the clock through [`clock`], so goldens can pin exact text.
//!
//! # Layers
//!
//! Each top-level module imports only from its own layer or the layers before it in this list,
//! and no two top-level modules import each other, directly or round a circle. Layers 1 to 6
//! are the harness, 7 the course: the harness knows nothing of the course, which passes down
//! what it needs (an identity in the sandbox's environment, the state folder a sandbox keeps for
//! its handoff key as a function the command edge hands to `handoff` and `hook`). The unit test
//! in `src/layering.rs` reads the `crate::…` paths of every file and fails on a circle, on an
//! import from a later layer (naming the harness–course border when it is that one), on a
//! module missing from the list, and on a circle between the files of one folder.
//!
//! 1. base, kit's own infrastructure: `error`, `atomic`, `clock`, `duration`, `units`, `term`,
//!    `git`, `proc` (process trees, PATH, children under a time limit), `digest`, `keys`
//!    (per-user keys, HMAC), `testing` (unit tests only)
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

// Crate-private by default: an item is `pub` only where the binaries (`kit`, `fake-agent`) or
// the integration tests reach it through a `pub mod` above; everything else is `pub(crate)`.
#![warn(unreachable_pub)]
// Terminal output goes through `term` and the writers the command edge (`run`) hands down; the
// library prints nothing itself.
#![warn(clippy::print_stdout, clippy::print_stderr)]

pub(crate) mod atomic;
pub(crate) mod cache;
pub(crate) mod cli;
pub(crate) mod clock;
pub mod course;
pub(crate) mod digest;
pub(crate) mod doctor;
pub(crate) mod duration;
pub mod embedded;
pub(crate) mod error;
pub mod fake_agent;
pub mod frozen;
pub mod git;
pub mod goal;
pub mod golden;
pub mod handoff;
pub(crate) mod hook;
pub mod keys;
pub mod longrun;
pub mod looprun;
pub(crate) mod matcher;
pub(crate) mod measure;
pub(crate) mod mine;
pub mod prices;
pub mod proc;
pub(crate) mod recall;
pub mod rehearse;
pub(crate) mod report;
pub mod run;
pub(crate) mod sandbox;
pub(crate) mod schedule;
pub(crate) mod status;
pub mod templates;
pub(crate) mod term;
#[cfg(test)]
mod testing;
pub(crate) mod transcript;
pub(crate) mod units;
pub mod verify;

#[cfg(test)]
mod layering;

pub use error::{Error, Result};
