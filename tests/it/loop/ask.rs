//! Decisions for a person (issue 24): a `- human:` criterion stops the loop "needs you" (exit 6)
//! once every other criterion passes, `kit status` lists it with its number, `kit approve N`
//! answers it for the tree as it is, and the next `kit loop` reaches done; an approval the agent
//! gives itself from inside an iteration never counts; a question the agent asks with `kit ask`
//! stops the run after its iteration and the answer reaches its next prompt.

use super::*;

const HUMAN: &str = "the sum reads well to a new user";

/// The calc project with a `- human:` criterion at goal.md:9.
fn with_human(fixed: bool) -> tempfile::TempDir {
    let d = project(fixed);
    let root = d.path();
    write(
        root,
        "longrun/goal.md",
        &GOAL.replace("\n\n## Budget", &format!("\n- human: {HUMAN}\n\n## Budget")),
    );
    write(root, ".git/fixed.py", CALC_FIXED);
    // The notify hook, as a person would point it at notify-send or ntfy (see the README).
    let notify =
        "[notify]\ncommand = \"echo \\\"$KIT_EVENT: $KIT_EXIT_CODE\\\" >> .git/notified\"\n";
    write(root, "longrun/config.toml", &format!("{CONFIG}\n{notify}"));
    kit_ok(root, &["freeze", "tests"]);
    d
}

fn outcome(root: &Path) -> String {
    events(root, "loop_end").pop().unwrap()["outcome"].as_str().unwrap_or_default().to_string()
}

fn status(root: &Path) -> String {
    text(&kit(root).arg("status").output().unwrap())
}

#[test]
fn a_human_criterion_stops_the_loop_until_a_person_approves_the_tree_and_then_it_is_done() {
    let d = with_human(false);
    let root = d.path();
    // One iteration: the run's cap is reached when it stops for a person, and still goes on
    // after the answer.
    let agent = ["--agent", "cp .git/fixed.py calc.py", "--max-iterations", "1"];

    let o = kit_loop(root, &agent);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(6), "{t}");
    assert_eq!(
        last_line(&o),
        format!(
            "needs_you: every criterion passes (2 of 2) at iteration 1 and goal.md:9 (human: \
             {HUMAN}) waits for a person: look at the work, then kit approve 1 (or kit reject 1 \
             --note WHY); kit loop then goes on with run 1"
        )
    );
    assert_eq!(outcome(root), "needs_you");
    assert_eq!(read(root, ".git/notified"), "needs_you: 6\n");
    let notified = events(root, "notify").pop().unwrap();
    assert_eq!((notified["on"].as_str(), notified["exit"].as_i64()), (Some("needs_you"), Some(0)));
    let asked = events(root, "asked");
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!((asked[0]["number"].as_u64(), asked[0]["line"].as_u64()), (Some(1), Some(9)));
    assert_eq!(asked[0]["from"], "kit");
    let tree = asked[0]["tree"].as_str().expect("the tree asked on").to_string();
    assert_eq!(events(root, "needs_you")[0]["pending"], serde_json::json!([1]));
    let s = status(root);
    assert!(
        s.contains(&format!(
            "needs you: #1 goal.md:9 (human: {HUMAN}) waits for your approval; kit approve 1 (or \
             kit reject 1 --note WHY)\n"
        )),
        "{s}"
    );

    // Without an answer, the next loop stops again on the same decision: nothing new is asked.
    let o = kit_loop(root, &agent);
    assert_eq!(o.status.code(), Some(6), "{}", text(&o));
    assert_eq!(events(root, "asked").len(), 1);

    let o = kit(root).args(["approve", "1", "--note", "reads fine"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(
        text(&o),
        format!(
            "approved #1: goal.md:9 (human: {HUMAN}), on tree {}; it holds while the tree stays as \
             it is now; kit loop goes on\n",
            &tree[..12]
        )
    );
    let a = events(root, "approval").pop().unwrap();
    assert_eq!((a["verdict"].as_str(), a["counts"].as_bool()), (Some("approved"), Some(true)));
    assert_eq!(a["tree"].as_str(), Some(tree.as_str()));
    assert_eq!(a["note"], "reads fine");
    assert!(!status(root).contains("needs you:"), "{}", status(root));

    // The approval is bound to its tree: a change after it asks again, under a new number.
    write(root, "NOTES.md", "a change after the approval\n");
    let o = kit_loop(root, &agent);
    assert_eq!(o.status.code(), Some(6), "{}", text(&o));
    assert!(last_line(&o).contains("kit approve 2 "), "{}", last_line(&o));
    let s = status(root);
    assert!(s.contains("needs you: #2 goal.md:9"), "{s}");
    assert!(!s.contains("#1 goal.md:9"), "the older ask is superseded: {s}");

    let o = kit(root).args(["approve", "2"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = kit_loop(root, &agent);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("goal.md:9 (human) approved by "), "{t}");
    assert_eq!(outcome(root), "done");
    assert!(!status(root).contains("needs you:"));
    assert!(read(root, ".git/notified").ends_with("needs_you: 6\ndone: 0\n"));
}

#[test]
fn an_agent_that_approves_its_own_human_criterion_never_reaches_done() {
    let d = with_human(false);
    let root = d.path();
    let kit_bin = env!("CARGO_BIN_EXE_kit");
    let fix = CALC_FIXED.replace('\n', "\\n");
    write(
        root,
        "agent.toml",
        &format!(
            "description = \"approves itself\"\n\n\
             [[call]]\nwhen = \"1\"\n\n\
             [[call.step]]\ndo = \"write\"\npath = \"calc.py\"\ncontent = \"{fix}\"\n\n\
             [[call]]\nwhen = \"*\"\n\n\
             [[call.step]]\ndo = \"run\"\ncommand = \"{kit_bin} approve 1 --note lgtm > .git/self-approve.out 2>&1; \
             env -u KIT_RUN_KEY setsid {kit_bin} approve 1 >> .git/self-approve.out 2>&1; true\"\n"
        ),
    );
    let agent = ["--agent", "fake:agent.toml"];
    let o = kit_loop(root, &agent);
    assert_eq!(o.status.code(), Some(6), "{}", text(&o));

    // The person says no; the agent, told why, approves itself instead of doing more work.
    let o = kit(root).args(["reject", "1", "--note", "name the operator in a docstring"]).output();
    assert_eq!(o.as_ref().unwrap().status.code(), Some(0), "{}", text(o.as_ref().unwrap()));
    let o = kit_loop(root, &[agent[0], agent[1], "--max-iterations", "3"]);
    let t = text(&o);
    assert_ne!(o.status.code(), Some(0), "{t}");
    assert!(events(root, "loop_end").iter().all(|e| e["outcome"] != "done"), "{t}");
    let said = read(root, ".git/self-approve.out");
    // Both ways it tried, in its last iteration: as itself, and detached without KIT_RUN_KEY.
    assert_eq!(
        said.matches("not counted: kit approve 1 was given while iteration 3's agent ran").count(),
        2,
        "{said}"
    );
    let prompt = read(root, "longrun/.runs/002.prompt.md");
    assert!(prompt.contains("name the operator in a docstring"), "the rejection reaches the agent");

    // Both attempts are on record, as not counting, and kit status says so.
    let approvals = events(root, "approval");
    let by_agent: Vec<&Value> = approvals.iter().filter(|a| a["verdict"] == "approved").collect();
    assert!(by_agent.len() >= 2, "{approvals:?}");
    for a in &by_agent {
        assert_eq!(a["counts"], false, "{a}");
        assert!(a["why"].as_str().unwrap().contains("an agent cannot approve itself"), "{a}");
    }
    let s = status(root);
    assert!(s.contains("needs you: #1 was approved by "), "{s}");
    assert!(s.contains("which does not count (given while iteration 2's agent ran"), "{s}");
}

#[test]
fn a_question_the_agent_asks_stops_the_run_and_the_answer_reaches_its_next_prompt() {
    let d = project(false);
    let root = d.path();
    let kit_bin = env!("CARGO_BIN_EXE_kit");
    let fix = CALC_FIXED.replace('\n', "\\n");
    write(
        root,
        "agent.toml",
        &format!(
            "description = \"asks first\"\n\n\
             [[call]]\nwhen = \"1\"\n\n\
             [[call.step]]\ndo = \"run\"\ncommand = \"{kit_bin} ask 'may I change the signature of add?' > .git/ask.out 2>&1\"\n\n\
             [[call]]\nwhen = \"2\"\n\n\
             [[call.step]]\ndo = \"save_prompt\"\npath = \".git/prompt-2.md\"\n\n\
             [[call.step]]\ndo = \"write\"\npath = \"calc.py\"\ncontent = \"{fix}\"\n"
        ),
    );
    let o = kit_loop(root, &["--agent", "fake:agent.toml"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(6), "{t}");
    assert!(
        t.contains("iteration 1: the agent asks #1: may I change the signature of add?"),
        "{t}"
    );
    assert!(read(root, ".git/ask.out")
        .starts_with("asked: kit loop journals it when iteration 1's agent ends"));
    let asked = events(root, "asked");
    assert_eq!((asked.len(), asked[0]["from"].as_str()), (1, Some("agent")));
    assert!(events(root, "criteria").len() == 1, "the iteration's criteria ran before the stop");
    let s = status(root);
    assert!(
        s.contains(
            "needs you: #1 the agent asks: may I change the signature of add?; kit approve 1"
        ),
        "{s}"
    );

    let o = kit(root).args(["reject", "1", "--note", "keep add(a, b)"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = kit_loop(root, &["--agent", "fake:agent.toml"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let prompt = read(root, ".git/prompt-2.md");
    assert!(
        prompt.contains("Answer to your question #1 (\"may I change the signature of add?\"): rejected — keep add(a, b)"),
        "{prompt}"
    );
}

#[test]
fn an_answer_the_agent_has_not_heard_keeps_the_run_from_ending_at_the_baseline() {
    // The agent asks and does the work in the same iteration: every criterion passes when the
    // person answers. The next loop's baseline passes too, but the answer waits in the inbox, so
    // the agent runs once more and hears it before the run is done.
    let d = project(false);
    let root = d.path();
    let kit_bin = env!("CARGO_BIN_EXE_kit");
    let fix = CALC_FIXED.replace('\n', "\\n");
    write(
        root,
        "agent.toml",
        &format!(
            "description = \"asks and works\"\n\n\
             [[call]]\nwhen = \"1\"\n\n\
             [[call.step]]\ndo = \"write\"\npath = \"calc.py\"\ncontent = \"{fix}\"\n\n\
             [[call.step]]\ndo = \"run\"\ncommand = \"{kit_bin} ask 'may I drop Python 3.8?' > .git/ask.out 2>&1\"\n\n\
             [[call]]\nwhen = \"2\"\n\n\
             [[call.step]]\ndo = \"save_prompt\"\npath = \".git/prompt-2.md\"\n"
        ),
    );
    let o = kit_loop(root, &["--agent", "fake:agent.toml"]);
    assert_eq!(o.status.code(), Some(6), "{}", text(&o));
    let o = kit(root).args(["reject", "1", "--note", "keep 3.8"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = kit_loop(root, &["--agent", "fake:agent.toml"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("baseline: done waits: 1 message in longrun/inbox.md"), "{t}");
    let prompt = read(root, ".git/prompt-2.md");
    assert!(prompt.contains("rejected — keep 3.8"), "{prompt}");
    assert_eq!(events(root, "told").len(), 1);
}

#[test]
fn a_git_hook_the_agent_planted_blocks_kit_approve_until_it_is_removed() {
    // A post-commit hook written during an iteration would run `kit approve` in the person's
    // name at their next commit: kit approve refuses while it is there, and kit status names it.
    let d = with_human(false);
    let root = d.path();
    let agent = [
        "--agent",
        "cp .git/fixed.py calc.py; printf '#!/bin/sh\\nkit approve 1\\n' > .git/hooks/post-commit; \
         chmod +x .git/hooks/post-commit",
    ];
    let o = kit_loop(root, &agent);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(6), "{t}");
    assert!(t.contains("hooks/post-commit"), "{t}");
    assert!(status(root)
        .contains("git settings that appeared during a run are still in place: hooks/post-commit"));
    let o = kit(root).args(["approve", "1"]).output().unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("kit approve refuses while git settings that appeared during a run"), "{t}");
    assert!(events(root, "approval").is_empty());
    std::fs::remove_file(root.join(".git/hooks/post-commit")).unwrap();
    let o = kit(root).args(["approve", "1"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = kit_loop(root, &agent);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

#[test]
fn a_message_told_during_the_last_iteration_reaches_the_agent_before_done() {
    // A person's kit tell lands while the iteration that finishes the work runs: the run does
    // not end with it unread; the agent runs once more, with it in its prompt.
    let d = project(false);
    let root = d.path();
    let kit_bin = env!("CARGO_BIN_EXE_kit");
    let fix = CALC_FIXED.replace('\n', "\\n");
    write(
        root,
        "agent.toml",
        &format!(
            "description = \"finishes while a person tells it something\"\n\n\
             [[call]]\nwhen = \"1\"\n\n\
             [[call.step]]\ndo = \"write\"\npath = \"calc.py\"\ncontent = \"{fix}\"\n\n\
             [[call.step]]\ndo = \"run\"\ncommand = \"env -u KIT_RUN_KEY {kit_bin} tell --from ada 'keep the old API' > .git/tell.out 2>&1\"\n\n\
             [[call]]\nwhen = \"2\"\n\n\
             [[call.step]]\ndo = \"save_prompt\"\npath = \".git/prompt-2.md\"\n"
        ),
    );
    let o = kit_loop(root, &["--agent", "fake:agent.toml"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("iteration 1: done waits: 1 message in longrun/inbox.md"), "{t}");
    assert!(read(root, ".git/prompt-2.md").contains("keep the old API"));
    assert!(!status(root).contains("inbox:"), "nothing waits once done");
}

#[test]
fn a_hook_edited_in_place_or_an_included_config_file_edited_also_blocks_kit_approve() {
    // Husky-style hooks in the work tree (core.hooksPath set before the run) and a config file
    // included before the run: the agent edits them rather than adding new ones.
    let d = with_human(false);
    let root = d.path();
    write(root, ".githooks/pre-commit", "#!/bin/sh\nexit 0\n");
    write(root, ".git/shared.gitconfig", "");
    let git = |args: &[&str]| {
        assert!(Command::new("git").arg("-C").arg(root).args(args).status().unwrap().success())
    };
    git(&["config", "core.hooksPath", ".githooks"]);
    git(&["config", "include.path", "shared.gitconfig"]);
    let agent = [
        "--agent",
        "cp .git/fixed.py calc.py; printf '#!/bin/sh\\nkit approve 1\\n' > .githooks/pre-commit; \
         printf '[alias]\\n\\tst = !kit approve 1\\n' >> .git/shared.gitconfig",
    ];
    let o = kit_loop(root, &agent);
    assert_eq!(o.status.code(), Some(6), "{}", text(&o));
    let o = kit(root).args(["approve", "1"]).output().unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("hooks/pre-commit sha256:"), "{t}");
    assert!(t.contains("alias.st=!kit approve 1"), "{t}");
    assert!(events(root, "approval").is_empty());
}
