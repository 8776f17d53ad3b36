//! kit's integration tests: one test binary, a module per area (STYLE.md §9). Each test works in
//! its own temporary folder and starts the real `kit` (and `fake-agent`) binaries.

// A test may say on stderr why it skipped (the output of a passing test is captured).
#![allow(clippy::print_stderr)]

mod cache;
mod course;
mod fake_agent;
mod freeze;
mod goal;
mod golden;
mod handoff;
mod hook;
mod ledger;
mod r#loop;
mod measure;
mod mine;
mod notify;
mod race;
mod recall;
mod rehearse;
mod report;
mod schedule;
mod standalone;
mod trusted;
mod util;
