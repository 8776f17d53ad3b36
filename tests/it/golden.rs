//! Runs every golden case of the kit test catalogue (`tests/cases/*.md`) against the real
//! binaries, with the same matcher the exercises use. All failures are reported together.

use std::path::Path;

use crate::util::{fake_agent_bin, kit_bin};

#[test]
fn catalogue_cases_match_their_goldens() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|e| e == "md"));
    files.sort();
    let filter = std::env::var("KIT_CASE").ok();
    let bins = kit::golden::Binaries { kit: kit_bin(), fake_agent: Some(fake_agent_bin()) };
    let mut failures = Vec::new();
    let mut ran = 0;
    for path in &files {
        let origin =
            path.strip_prefix(env!("CARGO_MANIFEST_DIR")).unwrap_or(path).display().to_string();
        if filter.as_deref().is_some_and(|f| !origin.contains(f)) {
            continue;
        }
        let text = std::fs::read_to_string(path).unwrap();
        let case = match kit::golden::parse(&origin, &text) {
            Ok(c) => c,
            Err(e) => {
                failures.push(format!("{origin}: {e}"));
                continue;
            }
        };
        ran += 1;
        match kit::golden::run_case(&case, &bins, &kit::golden::build_sandbox) {
            Ok(o) => {
                if let Some(f) = o.failure {
                    failures.push(format!("{origin}:{}: `{}`\n{}", f.line, f.command, f.detail));
                }
            }
            Err(e) => failures.push(format!("{origin}: {e}")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {ran} cases failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn kit_verify_runs_the_embedded_catalogue_and_counts() {
    let d = tempfile::tempdir().unwrap();
    let out = crate::util::kit(d.path()).args(["verify", "--case", "cli_help"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.ends_with("1 passed, 0 failed\n"), "{text}");
    let none =
        crate::util::kit(d.path()).args(["verify", "--case", "no-such-case"]).output().unwrap();
    assert_eq!(none.status.code(), Some(2));
}
