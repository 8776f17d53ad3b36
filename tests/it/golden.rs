//! `kit verify` counts and filters its cases (the cases themselves run one test each in
//! `tests/cases.rs`).

use std::path::Path;

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

/// A checkout in a temporary folder, holding `files` (path, text): enough for `--bless`.
fn checkout(files: &[(&str, &str)]) -> (tempfile::TempDir, kit_course::verify::Checkout) {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("Cargo.toml"), "[package]\nname = \"kit\"\n").unwrap();
    for dir in ["tests/cases", "exercises", "lessons"] {
        std::fs::create_dir_all(d.path().join(dir)).unwrap();
    }
    for (path, text) in files {
        let p = d.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let found =
        kit_course::verify::Checkout::find_from(&d.path().join("tests/cases"), Path::new("/"));
    (d, found.unwrap())
}

fn bins() -> kit_course::golden::Binaries {
    kit_course::golden::Binaries {
        kit: crate::util::kit_bin(),
        fake_agent: Some(crate::util::fake_agent_bin()),
    }
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// `--bless` (and `KIT_GOLDEN=overwrite`) rewrites a failing catalogue case in the checkout: the
/// wrong line becomes what kit printed, the wildcards that still match and the prose stay.
#[test]
fn bless_fixes_a_wrong_expected_line_and_keeps_wildcards() {
    let origin = "tests/cases/bless_me.md";
    let text = "+++\nname = \"bless_me\"\n+++\n\nProse before.\n\n```console\n$ kit cache --model \
                claude-sonnet-4-5 --context 100000 --idle 2h\nthis line is wrong\n...\n```\n\n\
                Prose after.\n";
    let (d, co) = checkout(&[(origin, text)]);
    let job = kit_course::verify::Job::Catalogue(origin.into(), leak(text.into()));
    let v = job.check_or_bless(&bins(), Some(&co));
    assert!(v.failure.is_some(), "the wrong line must fail first");
    let path = d.path().join(origin);
    assert_eq!(v.blessed.as_deref(), Some(path.as_path()));
    let new = std::fs::read_to_string(&path).unwrap();
    assert!(!new.contains("this line is wrong"), "{new}");
    assert!(new.contains("\n...\n```\n\nProse after.\n"), "the wildcard stays: {new}");
    assert!(new.starts_with("+++\nname = \"bless_me\"\n+++\n\nProse before.\n"), "{new}");
    // The blessed file passes as it is, and blessing it again changes nothing.
    let again = kit_course::verify::Job::Catalogue(origin.into(), leak(new.clone()));
    let v = again.check_or_bless(&bins(), Some(&co));
    assert!(v.failure.is_none() && v.blessed.is_none(), "{:?}", v.failure);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), new);
}

/// An exercise's golden is blessed against its solution; its "start fails" case never is (that
/// would make the exercise pass before the learner works).
#[test]
fn bless_rewrites_an_exercise_golden_but_never_a_start_fails_case() {
    let mut ex = kit_course::course::exercise::load_all().unwrap().remove(0);
    let origin = ex.golden_origin();
    let text = "```console\n$ echo solved\nnot yet\n```\n";
    ex.golden = leak(text.into());
    let (d, co) = checkout(&[(&origin, text)]);
    let path = d.path().join(&origin);
    let v = kit_course::verify::Job::Solution(ex.clone()).check_or_bless(&bins(), Some(&co));
    assert_eq!(v.blessed.as_deref(), Some(path.as_path()), "{:?}", v.failure);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "```console\n$ echo solved\nsolved\n```\n");
    // `$ echo solved` passes on the start too: the start-fails case fails, and stays as it is.
    std::fs::write(&path, text.replace("not yet", "solved")).unwrap();
    ex.golden = leak(text.replace("not yet", "solved"));
    let v = kit_course::verify::Job::StartFails(ex).check_or_bless(&bins(), Some(&co));
    let (_, detail) = v.failure.expect("a start that passes fails its case");
    assert!(detail.contains("never rewrites a \"start fails\" case"), "{detail}");
    assert!(v.blessed.is_none());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text.replace("not yet", "solved"));
}

/// Outside a checkout (an installed binary, run from a folder that is not one), `--bless` says
/// why it cannot write and what to do.
#[test]
fn bless_outside_a_checkout_names_the_fix() {
    let d = tempfile::tempdir().unwrap();
    let e = kit_course::verify::Checkout::find_from(d.path(), &d.path().join("gone")).unwrap_err();
    let text = e.to_string();
    assert!(text.contains("--bless rewrites the course's source files"), "{text}");
    assert!(text.contains("is a kit checkout"), "{text}");
}

/// `--junit FILE` writes one test case per case, with the failure's text.
#[test]
fn junit_report_has_one_testcase_per_case() {
    let d = tempfile::tempdir().unwrap();
    let out = crate::util::kit(d.path())
        .args(["verify", "--case", "cli_", "--junit", "report.xml", "--jobs", "2"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    let xml = std::fs::read_to_string(d.path().join("report.xml")).unwrap();
    assert_eq!(xml.matches("<testcase ").count(), 2, "{xml}");
    assert!(xml.contains("name=\"cli_help_lists_the_commands\" classname=\"catalogue\""), "{xml}");
    let origin = "tests/cases/x.md";
    let job = kit_course::verify::Job::Catalogue(origin.into(), "```console\n$ echo hi\nho\n```\n");
    let v = job.check(&bins());
    let path = d.path().join("fail.xml");
    kit_course::verify::write_junit(&path, &[job], &[v]).unwrap();
    let xml = std::fs::read_to_string(&path).unwrap();
    assert!(xml.contains("<failure message=\"x: tests/cases/x.md:2: `echo hi`\""), "{xml}");
    assert!(xml.contains("+ hi"), "{xml}");
}
