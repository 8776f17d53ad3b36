//! The `kit` binary: parse the command line, hand it to the library, map the outcome to an exit
//! code. Everything else lives in the library (`kit::run`).

use std::process::ExitCode;

fn main() -> ExitCode {
    kit::run::main_with_args(std::env::args_os())
}
