//! Steering a running loop (issue 24): `kit tell` and lines added by hand to `longrun/inbox.md`
//! reach the agent in the next iteration's prompt, once, journaled as `told`; the fake agent
//! saves the prompt it received (`save_prompt`), which the test reads.

use super::*;

const HEADING: &str = "# Messages from the person running this loop";

/// The calc project's fake agent: call 1 saves its prompt and, as a person would while it works,
/// a line is added by hand to the inbox; call 2 saves its prompt and fixes calc.py.
fn steered_agent(root: &Path) {
    let fix = CALC_FIXED.replace('\n', "\\n");
    write(
        root,
        "agent.toml",
        &format!(
            "description = \"steer test\"\n\n\
             [[call]]\nwhen = \"1\"\n\n\
             [[call.step]]\ndo = \"save_prompt\"\npath = \".git/prompt-{{{{invocation}}}}.md\"\n\n\
             [[call.step]]\ndo = \"run\"\ncommand = \"printf -- '- keep the docstring short\\\\n' >> longrun/inbox.md\"\n\n\
             [[call]]\nwhen = \"2\"\n\n\
             [[call.step]]\ndo = \"save_prompt\"\npath = \".git/prompt-{{{{invocation}}}}.md\"\n\n\
             [[call.step]]\ndo = \"write\"\npath = \"calc.py\"\ncontent = \"{fix}\"\n"
        ),
    );
}

#[test]
fn a_told_message_reaches_the_next_prompt_once_and_is_journaled_with_who_and_when() {
    let d = project(false);
    let root = d.path();
    steered_agent(root);
    let o =
        kit(root).args(["tell", "--from", "ada", "use", "the", "+", "operator"]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(
        text(&o),
        "told: added to longrun/inbox.md from ada; no loop runs now: the next kit loop puts it in \
         its first iteration's prompt\n"
    );
    let o = kit(root).args(["tell", "--from", "bob", "two lines:\nsecond line"]).output().unwrap();
    assert!(text(&o).ends_with("(2 messages wait)\n"), "{}", text(&o));
    let inbox = read(root, "longrun/inbox.md");
    assert!(
        inbox.ends_with(
            "- 2026-10-01T09:00:00Z ada: use the + operator\n\
             - 2026-10-01T09:00:00Z bob: two lines:\n  second line\n"
        ),
        "{inbox}"
    );
    let status = text(&kit(root).arg("status").output().unwrap());
    assert!(
        status.contains("inbox: 2 messages wait for the next iteration (longrun/inbox.md)\n"),
        "{status}"
    );

    let o = kit_loop(root, &["--agent", "fake:agent.toml"]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("iteration 1: the prompt carries 2 messages from longrun/inbox.md"),
        "{out}"
    );
    assert!(
        out.contains("iteration 2: the prompt carries 1 message from longrun/inbox.md"),
        "{out}"
    );

    // What the agent received, as it received it.
    let first = read(root, ".git/prompt-1.md");
    let second = read(root, ".git/prompt-2.md");
    assert!(first.contains(HEADING), "{first}");
    assert!(first.contains("- From ada (2026-10-01T09:00:00Z): use the + operator\n"), "{first}");
    assert!(first.contains("- From bob (2026-10-01T09:00:00Z): two lines:\n  second line\n"));
    assert!(!first.contains("keep the docstring short"), "added after its prompt was written");
    assert!(first.find(HEADING) < first.find("# The goal"), "the messages come before the goal");
    assert!(
        second.contains("- Added by hand to longrun/inbox.md: keep the docstring short\n"),
        "{second}"
    );
    assert!(!second.contains("use the + operator"), "delivered once:\n{second}");

    let told = events(root, "told");
    assert_eq!(told.len(), 2, "{told:?}");
    assert_eq!(told[0]["iteration"], 1);
    let m = &told[0]["messages"];
    assert_eq!(
        (m[0]["from"].as_str(), m[0]["at"].as_str()),
        (Some("ada"), Some("2026-10-01T09:00:00Z"))
    );
    assert_eq!(m[1]["text"], "two lines:\nsecond line");
    assert_eq!(told[1]["iteration"], 2);
    let m = &told[1]["messages"][0];
    assert!(m["from"].is_null() && m["at"].is_null(), "{m}");
    assert_eq!(
        (m["text"].as_str(), m["line"].as_u64()),
        (Some("keep the docstring short"), Some(10))
    );
    // Each told event comes right after its iteration's start, before the agent's.
    let names: Vec<String> = journal(root).iter().map(|e| name_of(e).to_string()).collect();
    for i in names.iter().enumerate().filter(|(_, n)| *n == "told").map(|(i, _)| i) {
        assert_eq!(
            (names[i - 1].as_str(), names[i + 1].as_str()),
            ("iteration_start", "agent_start")
        );
    }
    let status = text(&kit(root).arg("status").output().unwrap());
    assert!(!status.contains("inbox:"), "nothing waits:\n{status}");
    // The file stays the user's: kit never rewrote it.
    assert!(read(root, "longrun/inbox.md").starts_with(&inbox));
}

#[test]
fn kit_tell_refuses_an_empty_message_and_a_bad_sender() {
    let d = project(false);
    let root = d.path();
    for (args, want) in [
        (vec!["tell", "  "], "kit tell needs a message"),
        (vec!["tell", "--from", "a:b", "hi"], "without `:`"),
    ] {
        let o = kit(root).args(&args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        assert!(text(&o).contains(want), "{}", text(&o));
    }
    assert!(!root.join("longrun/inbox.md").exists());
    let o = kit(root).args(["tell"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}
