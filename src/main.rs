//! The `kit` binary: parse the command line, hand it to the library, map the outcome to an exit
//! code. Everything else lives in the library (`kit::run`).
//!
//! Started under the name `fake-agent` (a link to this binary), it is the fake agent instead,
//! busybox-style: `kit rehearse` makes such a link when the `fake-agent` binary was not built
//! beside `kit` (as with `cargo run`, which builds only the binary it runs).

use std::path::Path;
use std::process::ExitCode;

#[path = "../fake-agent/src/main.rs"]
mod fake_agent;

fn main() -> ExitCode {
    let argv0 = std::env::args_os().next().unwrap_or_default();
    if Path::new(&argv0).file_name().is_some_and(|n| n == kit::rehearse::FAKE_AGENT) {
        return fake_agent::main();
    }
    kit::run::main_with_args(std::env::args_os())
}
