//! Rebuild when an embedded folder changes: `include_dir!` does not tell cargo which files it
//! read, so a new template or fake-agent scenario would otherwise be missing from the binary
//! until some source file changed. The folders sit at the repository root (`templates.rs`,
//! `fake_agent/scenario.rs`).

// Cargo reads a build script's directives from its stdout.
#![allow(clippy::print_stdout)]

fn main() {
    for dir in ["kit", "fake-agent/scenarios"] {
        println!("cargo:rerun-if-changed=../../{dir}");
    }
}
