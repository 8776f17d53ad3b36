//! `kit verify` counts and filters its cases (the cases themselves run one test each in
//! `tests/cases.rs`).

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
