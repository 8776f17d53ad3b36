//! Rebuild when an embedded folder changes: `include_dir!` does not tell cargo which files it
//! read, so a new exercise or case would otherwise be missing from the binary until some source
//! file changed.

// Cargo reads a build script's directives from its stdout.
#![allow(clippy::print_stdout)]

fn main() {
    for dir in
        ["kit", "lessons", "exercises", "fake-agent/scenarios", "tests/cases", "tests/fixtures"]
    {
        println!("cargo:rerun-if-changed={dir}");
    }
}
