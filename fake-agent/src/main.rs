//! The `fake-agent` binary: the fake agent of the library ([`kit_harness::fake_agent`]), which the
//! `kit` binary also is (`kit fake-agent …`).

fn main() -> std::process::ExitCode {
    kit_harness::fake_agent::main()
}
