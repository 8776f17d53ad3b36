//! `kit rehearse` (DESIGN §14): the tour really runs the loop on the sample project, and `--all`
//! gets every scenario's expected outcome (issue 2's table).

use crate::util::kit;
use kit_harness::longrun::event::Event;

#[test]
fn rehearse_ends_done_at_iteration_1() {
    let d = tempfile::tempdir().unwrap();
    let out = kit(d.path()).args(["rehearse", "--keep", "sb"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("outcome: done at iteration 1 (as expected)"), "{text}");
    for step in [
        "[1/7]",
        "$ kit init",
        "$ kit goal check",
        "$ kit freeze tests tools",
        "$ kit loop --agent fake:finish",
        "$ kit status",
        "[7/7] kit measure",
    ] {
        assert!(text.contains(step), "{step} missing in:\n{text}");
    }

    // The journal the loop wrote says the same.
    let project = d.path().join("sb/project");
    let journal =
        kit_harness::longrun::journal::read(&project.join("longrun/journal.jsonl")).unwrap();
    let end = journal
        .entries
        .iter()
        .rev()
        .find_map(|e| match &e.event {
            Event::LoopEnd(l) => Some(l),
            _ => None,
        })
        .unwrap();
    assert_eq!((end.outcome.as_str(), end.iteration), ("done", 1));
    // The work is really done: the whole suite passes in the sandbox.
    let suite = std::process::Command::new("python3")
        .args(["-B", "-m", "unittest", "discover", "-s", "tests"])
        .current_dir(&project)
        .output()
        .unwrap();
    assert!(suite.status.success());
    // The fake agent's transcript stayed inside the sandbox.
    let projects = d.path().join("sb/home/.claude/projects");
    let sessions: Vec<_> = std::fs::read_dir(&projects).unwrap().flatten().collect();
    assert_eq!(sessions.len(), 1);
    assert!(!d.path().join(".home/.claude/projects").exists());
}

#[test]
fn rehearse_all_gets_every_expected_outcome() {
    let d = tempfile::tempdir().unwrap();
    let out = kit(d.path()).args(["rehearse", "--all"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("12 of 12 scenarios as expected"), "{text}");
    let ticks = text.lines().filter(|l| l.trim_start().starts_with("✓ ")).count();
    assert_eq!(ticks, 12, "{text}");
    for hook_scenario in ["bands    ", "forged   "] {
        assert!(text.contains(&format!("{hook_scenario} ok (")), "{hook_scenario}: {text}");
    }
    assert!(!text.contains('✗'), "{text}");
}

#[test]
fn rehearse_refuses_an_unknown_scenario_and_a_non_empty_keep_folder() {
    let d = tempfile::tempdir().unwrap();
    let out = kit(d.path()).args(["rehearse", "--scenario", "teleport"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no fake-agent scenario `teleport`")
            && err.contains("finish, cheat")
            && err.contains("bands, forged"),
        "{err}"
    );

    std::fs::create_dir(d.path().join("full")).unwrap();
    std::fs::write(d.path().join("full/mine.txt"), "keep me").unwrap();
    let out = kit(d.path()).args(["rehearse", "--keep", "full"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not empty"));
    assert_eq!(std::fs::read_to_string(d.path().join("full/mine.txt")).unwrap(), "keep me");
}

#[test]
fn rehearse_works_with_kit_alone_as_after_cargo_run() {
    // `cargo run -- rehearse` builds only `kit`: no fake-agent binary beside it.
    let d = tempfile::tempdir().unwrap();
    let bin = d.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let lone = bin.join("kit");
    std::fs::copy(crate::util::kit_bin(), &lone).unwrap();
    let work = d.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let out = std::process::Command::new(&lone)
        .args(["rehearse", "--keep", "sb"])
        .current_dir(&work)
        .env("NO_COLOR", "1")
        .env("KIT_FAKE_CLOCK", kit_course::golden::GOLDEN_CLOCK)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("outcome: done at iteration 1 (as expected)"), "{text}");
    let link = std::fs::read_link(work.join("sb/bin/fake-agent")).unwrap();
    assert_eq!(link, lone);
}

#[test]
fn rehearse_bands_runs_the_real_hook_from_the_installed_settings() {
    // The hook scenarios are real rehearsals: kit's hook installed in the sandbox's settings, the
    // fake agent starting `kit hook claude` from there. Without the installed entries the same
    // agent runs no hook at all, so the journal's `hook` events come from that process.
    let d = tempfile::tempdir().unwrap();
    let out =
        kit(d.path()).args(["rehearse", "--scenario", "bands", "--keep", "sb"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    let settings = std::fs::read_to_string(d.path().join("sb/home/.claude/settings.json")).unwrap();
    assert_eq!(settings.matches("\"kit hook claude\"").count(), 5, "{settings}");
    let project = d.path().join("sb/project");
    let journal =
        kit_harness::longrun::journal::read(&project.join("longrun/journal.jsonl")).unwrap();
    let actions: Vec<&str> = journal
        .entries
        .iter()
        .filter_map(|e| match &e.event {
            Event::Hook(h) => Some(h.action.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(actions, ["checkpoint", "handoff", "wrap_up", "stop_allowed"]);

    // Uninstalled, a second session of the same agent makes no hook fire.
    let mut uninstall = kit(&project);
    uninstall
        .args(["hook", "install", "--user", "--uninstall"])
        .env("CLAUDE_CONFIG_DIR", d.path().join("sb/home/.claude"));
    assert!(uninstall.output().unwrap().status.success());
    let before = journal.entries.len();
    let again = std::process::Command::new(crate::util::fake_agent_bin())
        .args(["--scenario", "bands", "-p", "again"])
        .current_dir(&project)
        .env("CLAUDE_CONFIG_DIR", d.path().join("sb/home/.claude"))
        .env("PATH", path_with(&crate::util::kit_bin()))
        .output()
        .unwrap();
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
    let journal =
        kit_harness::longrun::journal::read(&project.join("longrun/journal.jsonl")).unwrap();
    assert!(
        journal.entries[before..].iter().all(|e| !matches!(e.event, Event::Hook(_))),
        "{:?}",
        &journal.entries[before..]
    );
}

#[test]
fn rehearse_forged_catches_the_hand_written_handoff() {
    let d = tempfile::tempdir().unwrap();
    let out = kit(d.path()).args(["rehearse", "--scenario", "forged"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        text.contains("Stop blocked once, then let through once")
            && text.contains("handoff rejected by verify (exit 2) (as expected)"),
        "{text}"
    );
}

/// `$PATH` with the folder of `bin` first.
fn path_with(bin: &std::path::Path) -> std::ffi::OsString {
    let old = std::env::var_os("PATH").unwrap_or_default();
    let dirs = bin.parent().map(std::path::Path::to_path_buf).into_iter();
    std::env::join_paths(dirs.chain(std::env::split_paths(&old))).unwrap()
}
