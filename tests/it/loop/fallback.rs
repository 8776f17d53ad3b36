//! The fallback agent (issue 24): `[agent] fallback` in config.toml hands the run to the next
//! agent after too many iterations without progress, or a usage limit further away than the
//! patience; the switch is journaled and a continued run keeps the agent it switched to.

use super::*;

/// A fake-agent scenario file that only talks: it never changes anything.
const LAZY: &str = "description = \"talks\"\n\n[[call]]\nwhen = \"*\"\n\n[[call.step]]\ndo = \"print\"\ntext = \"Thinking about it.\"\n";

fn fixer(root: &Path) {
    let fix = CALC_FIXED.replace('\n', "\\n");
    write(
        root,
        "fix.toml",
        &format!("description = \"fixes\"\n\n[[call]]\nwhen = \"*\"\n\n[[call.step]]\ndo = \"write\"\npath = \"calc.py\"\ncontent = \"{fix}\"\n"),
    );
}

fn agent_commands(root: &Path) -> Vec<(u64, String)> {
    events(root, "agent_start")
        .iter()
        .map(|e| (e["iteration"].as_u64().unwrap(), e["command"].as_str().unwrap().to_string()))
        .collect()
}

#[test]
fn iterations_without_progress_hand_the_run_to_the_next_agent_which_finishes() {
    let d = project(false);
    let root = d.path();
    write(root, "lazy.toml", LAZY);
    fixer(root);
    write(
        root,
        "longrun/config.toml",
        &format!("{CONFIG}\n[agent]\ncommand = \"fake:lazy.toml\"\nfallback = [\"fake:fix.toml\"]\nfallback_after_no_progress = 2\n"),
    );
    let o = kit_loop(root, &[]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("loop: fallback: `fake:fix.toml` (after a limit wait over 30m, or 2 iterations without progress)"), "{out}");
    assert!(
        out.contains("loop: switching agents: iteration 3 runs `fake:fix.toml` (fallback 1 of 1): The agent `fake:lazy.toml` made no progress in 2 iterations in a row"),
        "{out}"
    );
    let switch = events(root, "agent_switch");
    assert_eq!(switch.len(), 1, "{out}");
    let s = &switch[0];
    assert_eq!(
        (s["iteration"].as_u64(), s["from"].as_str(), s["to"].as_str(), s["why"].as_str()),
        (Some(3), Some("fake:lazy.toml"), Some("fake:fix.toml"), Some("no_progress"))
    );
    assert_eq!((s["retry"].as_bool(), s["position"].as_u64()), (Some(false), Some(1)));
    assert!(s["until"].is_null());
    let commands = agent_commands(root);
    assert_eq!(commands.iter().map(|c| c.0).collect::<Vec<_>>(), [1, 2, 3]);
    assert!(
        commands[1].1.contains("lazy.toml") && commands[2].1.contains("fix.toml"),
        "{commands:?}"
    );
    // Only the new agent's first prompt says whom it takes over from.
    let takeover = "# You take over this run";
    assert!(!read(root, "longrun/.runs/002.prompt.md").contains(takeover));
    let third = read(root, "longrun/.runs/003.prompt.md");
    assert!(third.contains(takeover) && third.contains("# The last handoff"), "{third}");
    assert_eq!(events(root, "loop_start")[0]["fallback"], serde_json::json!(["fake:fix.toml"]));
    let status = text(&kit(root).arg("status").output().unwrap());
    assert!(
        status.contains("agent: fake:fix.toml since iteration 3 (fallback after `fake:lazy.toml`): The agent `fake:lazy.toml` made no progress"),
        "{status}"
    );
}

#[test]
fn a_continued_run_keeps_the_agent_it_switched_to_and_a_near_limit_is_waited_out() {
    let d = project(false);
    let root = d.path();
    write(
        root,
        "limited.toml",
        "description = \"limited\"\n\n[[call]]\nwhen = \"*\"\n\n[[call.step]]\ndo = \"limit\"\nreset_minutes = 124\n",
    );
    // The fallback pauses the loop on its first call (as a person would), fixes on its second.
    write(
        root,
        "fb.sh",
        &format!(
            "n=$(cat .git/fb-calls 2>/dev/null || echo 0); n=$((n+1)); echo $n > .git/fb-calls\n\
             if [ $n -eq 1 ]; then touch longrun/PAUSE; exit 0; fi\nprintf '{}' > calc.py\n",
            CALC_FIXED.replace('\n', "\\n")
        ),
    );
    let config =
        format!("{CONFIG}\n[agent]\ncommand = \"fake:limited.toml\"\nfallback = [\"sh fb.sh\"]\n");
    write(root, "longrun/config.toml", &config);
    let o = kit_loop(root, &[]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(5), "paused: {out}");
    let s = &events(root, "agent_switch")[0];
    assert_eq!((s["why"].as_str(), s["retry"].as_bool()), (Some("limit"), Some(true)));
    assert_eq!(s["until"], "2026-10-01T11:04:00Z");
    assert!(events(root, "limit_wait").is_empty(), "no wait: the fallback took over");
    kit_ok(root, &["resume"]);
    let o = kit_loop(root, &[]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("loop: the run goes on with `sh fb.sh` (fallback 1 of 1, since iteration 1)"),
        "{out}"
    );
    let commands = agent_commands(root);
    assert_eq!(commands.len(), 3, "{commands:?}");
    assert!(
        commands[0].1.contains("limited.toml") && commands[2].1.contains("sh fb.sh"),
        "{commands:?}"
    );
    // The limited attempt was no iteration: the run spent 2 (1 retried by the fallback, 2).
    assert_eq!(events(root, "loop_end").last().unwrap()["run_iterations"], 2);

    // With more patience than the reset is away, the limit is waited out as without a fallback.
    let d = project(false);
    let root = d.path();
    write(
        root,
        "limited.toml",
        "description = \"limited once\"\n\n[[call]]\nwhen = \"1\"\n\n[[call.step]]\ndo = \"limit\"\nreset_minutes = 124\n\n[[call]]\nwhen = \"2\"\n\n[[call.step]]\ndo = \"write\"\npath = \"calc.py\"\ncontent = \"def add(a, b):\\n    return a + b\\n\"\n",
    );
    write(
        root,
        "longrun/config.toml",
        &format!("{CONFIG}\n[agent]\ncommand = \"fake:limited.toml\"\nfallback = [\"sh fb.sh\"]\nfallback_after_wait = \"3h\"\n"),
    );
    write(root, "fb.sh", "exit 0\n");
    let o = kit_loop(root, &["--max-wall", "4h"]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert_eq!(events(root, "limit_wait").len(), 1, "{out}");
    assert!(events(root, "agent_switch").is_empty(), "{out}");
}
