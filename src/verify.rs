//! `kit verify`: the instructors' proof that the kit works on this machine. It runs every case
//! of the embedded test catalogue (`tests/cases/*.md`, DESIGN §13) against this very binary,
//! each in its own temporary sandbox, with the same runner and matcher as `cargo test`, and ends
//! with the line `N passed, N failed`.

use std::io::Write;

use crate::error::{Error, IoContext, Result, EXIT_INTERNAL, EXIT_OK};
use crate::golden::{self, Binaries};
use crate::term::Theme;

/// Options of `kit verify`.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Only cases whose file name contains this text.
    pub filter: Option<String>,
    /// Print each failure's detail in full (otherwise the first 40 lines).
    pub verbose: bool,
}

/// The binaries to test: this executable and the `fake-agent` beside it, else a `fake-agent`
/// link to this executable (which is also the fake agent) in a temporary folder, returned so it
/// lives as long as the run. So the `kit` binary alone verifies the whole catalogue.
pub fn this_binaries() -> Result<(Binaries, Option<tempfile::TempDir>)> {
    let kit = std::env::current_exe()
        .map_err(|e| Error::internal(format!("cannot locate the kit binary: {e}")))?;
    let beside = kit.with_file_name(crate::rehearse::FAKE_AGENT);
    if beside.is_file() {
        return Ok((Binaries { kit, fake_agent: Some(beside) }, None));
    }
    let dir = tempfile::Builder::new()
        .prefix("kit-verify-bin-")
        .tempdir()
        .map_err(|e| Error::io("a temporary folder", e))?;
    let link = dir.path().join(crate::rehearse::FAKE_AGENT);
    std::os::unix::fs::symlink(&kit, &link).at(&link)?;
    Ok((Binaries { kit, fake_agent: Some(link) }, Some(dir)))
}

/// Run the catalogue; returns exit 0 when every case passed, 1 otherwise.
pub fn run(opts: &Options, theme: &Theme, out: &mut dyn Write) -> Result<u8> {
    let (bins, _bin_dir) = this_binaries()?;
    let mut files: Vec<_> = crate::embedded::CASES
        .files()
        .filter(|f| f.path().extension().is_some_and(|e| e == "md"))
        .collect();
    files.sort_by_key(|f| f.path());
    let (mut passed, mut failed) = (0usize, 0usize);
    let w = |e: std::io::Error| Error::io("stdout", e);
    for f in files {
        let origin = format!("tests/cases/{}", f.path().display());
        if opts.filter.as_deref().is_some_and(|x| !origin.contains(x)) {
            continue;
        }
        let text = f.contents_utf8().unwrap_or_default();
        let result = golden::parse(&origin, text)
            .and_then(|case| golden::run_case(&case, &bins, &golden::build_sandbox));
        let name =
            f.path().file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        match result {
            Ok(golden::Outcome { failure: None, .. }) => {
                passed += 1;
                writeln!(out, "{} {name}", theme.ok("ok  ")).map_err(w)?;
            }
            Ok(golden::Outcome { failure: Some(fl), .. }) => {
                failed += 1;
                writeln!(
                    out,
                    "{} {name}  ({origin}:{}: `{}`)",
                    theme.bad("FAIL"),
                    fl.line,
                    fl.command
                )
                .map_err(w)?;
                let limit = if opts.verbose { usize::MAX } else { 40 };
                for line in fl.detail.lines().take(limit) {
                    writeln!(out, "      {line}").map_err(w)?;
                }
            }
            Err(e) => {
                failed += 1;
                writeln!(out, "{} {name}  ({e})", theme.bad("FAIL")).map_err(w)?;
            }
        }
        out.flush().at(std::path::Path::new("stdout"))?;
    }
    if passed + failed == 0 {
        return Err(
            Error::usage("no case matched").with_hint("kit verify (without --case) runs them all")
        );
    }
    writeln!(out, "{passed} passed, {failed} failed").map_err(w)?;
    Ok(if failed == 0 { EXIT_OK } else { EXIT_INTERNAL })
}
