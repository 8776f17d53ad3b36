//! The `kit` binary: parse the command line, hand it to the library, map the outcome to an exit
//! code. Everything else lives in the libraries (`kit::run`, the command edge, and the crates it calls).
//!
//! The `kit` binary alone is the whole kit: it is also the fake agent, as `kit fake-agent …` (a
//! hidden word, how `agent = "fake:NAME"` runs it when no `fake-agent` binary sits beside `kit`)
//! and when started under the name `fake-agent` (a link to this binary), busybox-style:
//! `kit rehearse` and `kit verify` make such a link when the `fake-agent` binary was not built
//! beside `kit` (as with `cargo run`, which builds only the binary it runs).

use std::path::Path;
use std::process::ExitCode;

use kit_course::rehearse;
use kit_harness::fake_agent;

fn main() -> ExitCode {
    let argv0 = std::env::args_os().next().unwrap_or_default();
    if Path::new(&argv0).file_name().is_some_and(|n| n == rehearse::FAKE_AGENT) {
        return fake_agent::main();
    }
    if std::env::args_os().nth(1).is_some_and(|a| a == rehearse::FAKE_AGENT) {
        return fake_agent::main_with_args(std::env::args_os().skip(2));
    }
    kit::run::main_with_args(std::env::args_os())
}
