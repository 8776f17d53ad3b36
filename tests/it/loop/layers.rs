//! Issue 13's layered verification: the flake guard (`confirm_runs`, a flapping criterion) and
//! review criteria judged by an evaluator command (see `kit_harness::looprun` `confirm`, `kit_harness::goal::review`).
//! The evaluators are small shell scripts kept in `.git/` (outside the work tree the agent edits).

use super::*;

/// The calc project with a review criterion and `evaluator` as `[review] evaluator`.
fn reviewed(fixed: bool, evaluator_script: &str) -> tempfile::TempDir {
    let d = project(fixed);
    let root = d.path();
    write(root, ".git/kit-eval.sh", evaluator_script);
    write(
        root,
        "longrun/goal.md",
        &GOAL.replace(
            "\n\n## Budget",
            "\n- review: `add` is written plainly, with no special cases\n\n## Budget",
        ),
    );
    write(
        root,
        "longrun/config.toml",
        &format!("{CONFIG}\n[review]\nevaluator = \"sh .git/kit-eval.sh\"\ntimeout = \"60s\"\n"),
    );
    kit_ok(root, &["freeze", "tests"]);
    d
}

fn outcome(root: &Path) -> String {
    events(root, "loop_end").pop().unwrap()["outcome"].as_str().unwrap_or_default().to_string()
}

#[test]
fn a_review_that_fails_never_yields_done_and_its_reason_reaches_the_prompt() {
    let d = reviewed(true, "cat > .git/kit-eval.stdin\necho thinking\necho 'VERDICT: fail — add has a special case for 0'\n");
    let root = d.path();
    let o = kit_loop(root, &["--agent", "true", "--max-iterations", "2", "--allow-green-start"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(3), "{t}");
    assert_eq!(outcome(root), "cap", "{t}");
    assert!(events(root, "loop_end").iter().all(|e| e["outcome"] != "done"));
    let reviews = events(root, "review");
    assert_eq!(reviews.len(), 3, "baseline and two iterations: {t}");
    for r in &reviews {
        assert_eq!(r["verdict"], "fail");
        assert_eq!(r["reason"], "add has a special case for 0");
        assert_eq!(r["line"], 9);
    }
    assert!(t.contains("review goal.md:9: fail (add has a special case for 0)"), "{t}");
    let prompt = read(root, "longrun/.runs/001.prompt.md");
    assert!(prompt.contains("add has a special case for 0"), "{prompt}");
    // The evaluator got the request on stdin.
    let req: Value = serde_json::from_str(read(root, ".git/kit-eval.stdin").trim()).unwrap();
    assert_eq!(req["line"], 9);
    assert!(std::path::Path::new(req["diff_file"].as_str().unwrap()).is_file());
}

#[test]
fn a_review_never_turns_a_failing_test_into_a_pass() {
    let d = reviewed(false, "touch .git/kit-eval.ran\necho 'VERDICT: pass'\n");
    let root = d.path();
    let o = kit_loop(root, &["--agent", "true", "--max-iterations", "1"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(3), "{t}");
    assert!(events(root, "review").is_empty(), "{t}");
    assert!(!root.join(".git/kit-eval.ran").exists(), "the evaluator ran while a test failed");
}

#[test]
fn a_passing_review_sees_the_agents_diff_and_done_follows() {
    let d = reviewed(
        false,
        "if grep -q '^+    return a + b' \"$KIT_REVIEW_DIFF\" && grep -q '\"passed\": true' \"$KIT_REVIEW_CRITERIA\"; then echo '{\"verdict\": \"pass\", \"reason\": \"plain sum\"}'; else echo 'VERDICT: fail no fix in the diff'; fi\n",
    );
    let root = d.path();
    write(root, "agent.sh", "sed -i 's/a - b/a + b/' calc.py\n");
    let o = kit_loop(root, &["--agent", "sh ./agent.sh"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert_eq!(last_line(&o), "done: every criterion passes (2 of 2) at iteration 1", "{t}");
    let verdicts: Vec<Value> =
        events(root, "review").iter().map(|e| e["verdict"].clone()).collect();
    assert_eq!(verdicts, ["pass"], "{t}");
    let confirm = events(root, "confirm").pop().unwrap();
    assert_eq!((confirm["runs"].as_u64(), confirm["all_pass"].as_bool()), (Some(2), Some(true)));
}

#[test]
fn a_review_that_asks_stops_the_loop_with_the_question() {
    let d = reviewed(true, "echo 'VERDICT: ask should add accept strings?'\n");
    let root = d.path();
    let o = kit_loop(root, &["--agent", "true", "--allow-green-start"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(3), "{t}");
    assert_eq!(outcome(root), "review_ask");
    assert!(last_line(&o).contains("should add accept strings?"), "{t}");
    assert!(events(root, "agent_start").is_empty());
    let st = text(&kit(root).arg("status").output().unwrap());
    assert!(
        st.contains("needs you: the review at goal.md:9 asks")
            && st.contains("should add accept strings?"),
        "{st}"
    );
}

#[test]
fn a_malformed_verdict_is_a_fail_and_a_review_without_evaluator_is_refused() {
    let d = reviewed(true, "echo 'looks fine to me'\n");
    let root = d.path();
    let o = kit_loop(root, &["--agent", "true", "--max-iterations", "1", "--allow-green-start"]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let r = events(root, "review").pop().unwrap();
    assert_eq!(r["verdict"], "fail");
    assert!(r["reason"].as_str().unwrap().contains("holds no verdict"), "{r}");

    let d = reviewed(true, "");
    write(d.path(), "longrun/config.toml", CONFIG);
    kit_ok(d.path(), &["freeze", "tests"]);
    let o = kit_loop(d.path(), &["--agent", "true", "--new-run"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("goal.md:9") && t.contains("[review] evaluator"), "{t}");
}

#[test]
fn a_flapping_criterion_never_yields_done_and_stops_the_loop_the_second_time() {
    let d = git_repo();
    let root = d.path();
    kit_course::rehearse::sample::write_sample_project(root).unwrap();
    write(root, ".git/info/exclude", "/.home/\n__pycache__/\n");
    kit_ok(root, &["init"]);
    write(root, "longrun/goal.md", kit_course::rehearse::sample::goal_text());
    write(root, "longrun/config.toml", CONFIG);
    kit_ok(root, &["freeze", "tests", "tools"]);
    let git = |args: &[&str]| {
        let s = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(root)
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(s.success(), "git {args:?}");
    };
    git(&["add", "-A"]);
    git(&["commit", "-qm", "rehearsal project"]);
    let o = kit_loop(root, &["--agent", "fake:flap"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(3), "{t}");
    assert_eq!(outcome(root), "flapping", "{t}");
    assert!(
        last_line(&o).contains("criterion goal.md:11 flaps; fix the test or the environment"),
        "{t}"
    );
    let flaps = events(root, "flap");
    assert_eq!(flaps.len(), 2, "{t}");
    for (i, f) in flaps.iter().enumerate() {
        assert_eq!(f["line"], 11);
        assert_eq!(f["runs"], serde_json::json!([true, false]));
        assert_eq!(f["times"], i + 1);
    }
    assert!(t.contains("goal.md:11 flaps (pass, fail on the same tree): done refused"), "{t}");
    let prompt = read(root, "longrun/.runs/002.prompt.md");
    assert!(prompt.contains("goal.md:11 `python3 -B tools/bench_durations.py` flaps"), "{prompt}");
    assert!(events(root, "confirm").iter().all(|c| c["all_pass"] == false));
    let st = text(&kit(root).arg("status").output().unwrap());
    assert!(
        st.contains("needs you: goal.md:11 `python3 -B tools/bench_durations.py` flapped"),
        "{st}"
    );
}

/// The flap count is the run's: a loop that flapped once and stopped (here at its iteration
/// cap; a kill or a `kit loop --ensure-alive` restart continues the run the same way) is
/// followed by one that stops on the criterion's second flap, not its third.
#[test]
fn a_continued_run_counts_the_flaps_of_the_loop_before() {
    let d = git_repo();
    let root = d.path();
    kit_course::rehearse::sample::write_sample_project(root).unwrap();
    write(root, ".git/info/exclude", "/.home/\n__pycache__/\n");
    kit_ok(root, &["init"]);
    write(root, "longrun/goal.md", kit_course::rehearse::sample::goal_text());
    write(root, "longrun/config.toml", CONFIG);
    kit_ok(root, &["freeze", "tests", "tools"]);
    for args in [&["add", "-A"][..], &["commit", "-qm", "rehearsal project"]] {
        let s = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(root)
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(s.success(), "git {args:?}");
    }
    let first = kit_loop(root, &["--agent", "fake:flap", "--max-iterations", "1"]);
    let t = text(&first);
    assert_eq!((first.status.code(), outcome(root).as_str()), (Some(3), "cap"), "{t}");
    assert_eq!(events(root, "flap").len(), 1, "{t}");

    let second = kit_loop(root, &["--agent", "fake:flap", "--max-iterations", "4"]);
    let t = text(&second);
    assert_eq!(second.status.code(), Some(3), "{t}");
    assert!(t.contains("loop: continuing run 1"), "{t}");
    assert_eq!(outcome(root), "flapping", "{t}");
    let flaps = events(root, "flap");
    assert_eq!(flaps.len(), 2, "stopped at the second flap of the run: {t}");
    assert_eq!(flaps[1]["times"], 2);
    assert!(last_line(&second).contains("2 times in this run"), "{t}");
    // The code iteration 1 wrote passes the second loop's baseline, whose flake guard meets the
    // second flap: the loop stops before any agent runs again.
    let end = events(root, "loop_end").pop().unwrap();
    assert_eq!((end["iterations"].as_u64(), end["run_iterations"].as_u64()), (Some(0), Some(1)));
}
