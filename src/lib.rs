//! kit: a harness for running a coding agent (Claude Code, Codex) unattended for hours, and the
//! course that teaches it. See `DESIGN.md` in the shared folder for the specification.
//!
//! The library owns every concept; `src/main.rs` is glue. Terminal output goes through
//! [`term`]; the clock through [`clock`], so goldens can pin exact text.

#![warn(clippy::print_stdout, clippy::print_stderr)]

pub mod atomic;
pub mod cache;
pub mod cli;
pub mod clock;
pub mod course;
pub mod doctor;
pub mod duration;
pub mod embedded;
pub mod error;
pub mod frozen;
pub mod git;
pub mod goal;
pub mod golden;
pub mod handoff;
pub mod hook;
pub mod longrun;
pub mod looprun;
pub mod matcher;
pub mod measure;
pub mod prices;
pub mod recall;
pub mod rehearse;
pub mod report;
pub mod run;
pub mod status;
pub mod term;
pub mod transcript;
pub mod verify;

pub use error::{Error, Result};
