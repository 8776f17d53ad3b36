//! Rebuild when an embedded folder changes: `include_dir!` does not tell cargo which files it
//! read, so a new lesson, exercise or case would otherwise be missing from the binary until some
//! source file changed. The folders sit at the repository root (`embedded.rs`).

// Cargo reads a build script's directives from its stdout.
#![allow(clippy::print_stdout)]

fn main() {
    for dir in ["lessons", "exercises", "tests/cases", "tests/fixtures"] {
        println!("cargo:rerun-if-changed=../../{dir}");
    }
}
