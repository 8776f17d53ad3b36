//! `fake-agent`: a scripted stand-in for `claude -p` (DESIGN §7). Scaffolding until the
//! scenarios land: it only reports that it has none.

use std::process::ExitCode;

fn main() -> ExitCode {
    eprintln!("fake-agent: no scenarios in this build yet");
    ExitCode::from(2)
}
