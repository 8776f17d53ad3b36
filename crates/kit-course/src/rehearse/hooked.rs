//! The rehearsal of the two hook scenarios, `bands` and `forged` (lessons 3 and 5): no loop, but
//! a fake-agent session whose context grows through the bands, with kit's hook installed in the
//! sandbox's Claude Code settings (`kit hook install --user`). The fake agent reads those settings
//! as Claude Code does and starts the real `kit hook claude` process at each hook event; the judge
//! reads what that process journaled (`hook` events of `longrun/journal.jsonl`, see
//! `kit_harness::hook`), the hook context the agent received (in its transcript) and what
//! `kit handoff verify --transcript` says of the handoff.

use std::path::Path;

use crate::longrun::event::{Entry, Event, Hook};

use super::plan::{Plan, Verdict};
use super::{sample, Narrator, Ran, Running, Sandbox, COMMAND_LIMIT};
use crate::error::Result;

/// Number of narrated steps in one hook rehearsal.
const STEPS: usize = 5;

/// The prompt the fake agent gets.
const PROMPT: &str = "Work on the goal until the context runs out.";

/// Rehearse the hook scenario `plan` in a new sandbox under `root`, narrating to `n`.
// Twin of `scenarios::rehearse` (the loop's): same sandbox and narration, other steps.
pub(crate) fn rehearse(
    exe: &Path,
    root: &Path,
    plan: &Plan,
    n: &mut Narrator<'_>,
) -> Result<Verdict> {
    let sb = Sandbox::new(exe, root)?;

    sb.sample_step(
        n,
        STEPS,
        "A real Python 3 project in a git repository: what the fake agent will read.",
    )?;

    n.step(
        2,
        STEPS,
        "kit init",
        "longrun/ holds progress.md and handoff.md, which the bands ask the agent to keep current.",
    )?;
    let init = sb.kit(&["init"])?;
    n.ran("kit init", &init)?;
    if let Some(v) = failed("kit init", &init) {
        return Ok(v);
    }
    let setup = sample::git(&sb.project, &sb.env, &["add", "-A"])
        .and_then(|_| sample::git(&sb.project, &sb.env, &["commit", "-q", "-m", "longrun/"]))
        .and_then(|_| sample::git(&sb.project, &sb.env, &["rev-parse", "--short=7", "HEAD"]));
    n.note(&format!("committed longrun/ ({})", setup?.trim()))?;

    n.step(
        3,
        STEPS,
        "kit hook install --user",
        "kit's five hook entries go into the sandbox's Claude Code settings; the fake agent reads them as Claude Code does.",
    )?;
    let install = sb.kit(&["hook", "install", "--user"])?;
    n.ran("kit hook install --user", &install)?;
    if let Some(v) = failed("kit hook install", &install) {
        return Ok(v);
    }

    let shown = format!(
        "fake-agent --scenario {} -p \"{PROMPT}\" --output-format stream-json --verbose",
        plan.name
    );
    n.step(4, STEPS, &shown, plan.proves)?;
    let agent = Running::start(sb.fake_agent_command(&[
        "--scenario",
        plan.name,
        "-p",
        PROMPT,
        "--output-format",
        "stream-json",
        "--verbose",
    ]))?
    .wait(COMMAND_LIMIT)?;
    let events = hook_events(&sb.journal());
    n.note(&format!(
        "(its stream-json output: {} events, not shown){}",
        agent.output.lines().count(),
        match agent.code {
            Some(0) => String::new(),
            other => format!("; exit {}", other.map_or("killed".into(), |c| c.to_string())),
        }
    ))?;
    if events.is_empty() {
        n.note("`kit hook claude` journaled nothing: the hook never ran")?;
    }
    for e in &events {
        n.note(&format!("kit hook claude, {}", describe(e)))?;
    }

    n.step(
        5,
        STEPS,
        "kit handoff verify --transcript",
        "A handoff counts only when this session's transcript ran `kit handoff save` with the same stamp.",
    )?;
    let transcripts = sb.transcripts();
    let Some(transcript) = transcripts.last() else {
        return Ok(Verdict { ok: false, actual: "the fake agent wrote no transcript".into() });
    };
    let t = transcript.to_string_lossy().into_owned();
    let verify = sb.kit(&["handoff", "verify", "--transcript", &t])?;
    n.ran("kit handoff verify --transcript $CLAUDE_CONFIG_DIR/projects/*/*.jsonl", &verify)?;
    if let Some(v) = failed("kit handoff verify", &verify) {
        return Ok(v);
    }
    let reminders = std::fs::read_to_string(transcript)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("\"isMeta\":true") && l.contains("hook additional context: kit"))
        .count();
    Ok(judge(plan.name, &agent, &events, reminders, &verify))
}

/// The `hook` events of the journal.
fn hook_events(journal: &[Entry]) -> Vec<Hook> {
    journal
        .iter()
        .filter_map(|e| match &e.event {
            Event::Hook(h) => Some(h.clone()),
            _ => None,
        })
        .collect()
}

/// One hook firing in a line: `PostToolUse at 50.5 %: checkpoint (band 50)`.
fn describe(e: &Hook) -> String {
    let pct = e.pct.map(|p| format!(" at {p:.1} %")).unwrap_or_default();
    let band = e.band.map(|b| format!(" (band {b} %)")).unwrap_or_default();
    let or_what = |s: &str| if s.is_empty() { "?".to_string() } else { s.to_string() };
    format!("{}{pct}: {}{band}", or_what(&e.hook_event), or_what(&e.action))
}

/// How many firings of `action` (at `band`, when given) the journal holds.
fn count(events: &[Hook], action: &str, band: Option<u8>) -> usize {
    events.iter().filter(|e| e.action == action && band.is_none_or(|b| e.band == Some(b))).count()
}

/// Compare what happened with what the scenario's file says it rehearses.
fn judge(name: &str, agent: &Ran, events: &[Hook], reminders: usize, verify: &Ran) -> Verdict {
    let bands = [
        ("checkpoint", 50, count(events, "checkpoint", Some(50))),
        ("handoff", 70, count(events, "handoff", Some(70))),
        ("wrap-up", 85, count(events, "wrap_up", Some(85))),
    ];
    let blocked = count(events, "stop_blocked", None);
    let allowed = count(events, "stop_allowed", None);
    let times = |k: usize| match k {
        1 => "once".to_string(),
        0 => "never".to_string(),
        k => format!("{k} times"),
    };
    let shown: Vec<&_> = if name == "forged" { &bands[..2] } else { &bands[..] }.iter().collect();
    let fired = shown
        .iter()
        .map(|(what, band, k)| format!("{what} {band} % {}", times(*k)))
        .collect::<Vec<_>>()
        .join(", ");
    let bands_ok = shown.iter().all(|(_, _, k)| *k == 1);
    let agent_ok = agent.code == Some(0);
    let agent_text =
        if agent_ok { String::new() } else { format!("; fake-agent exit {:?}", agent.code) };
    match name {
        "bands" => {
            let verified = verify.code == Some(0);
            let ok = bands_ok && blocked == 0 && allowed == 1 && reminders >= 3 && verified;
            let actual = format!(
                "{fired}; Stop blocked {}, let through {}; {} hook messages reached the agent; handoff {}{agent_text}",
                times(blocked),
                times(allowed),
                reminders,
                if verified { "verifies" } else { "does NOT verify" }
            );
            Verdict { ok: ok && agent_ok, actual }
        }
        "forged" => {
            let rejected = verify.code == Some(2)
                && verify.output.contains("not saved in that session")
                && verify.output.contains("written by hand");
            let ok = bands_ok && blocked == 1 && allowed == 1 && reminders >= 3 && rejected;
            let actual = format!(
                "{fired}; Stop blocked {}, then let through {}; {} hook messages reached the agent; handoff {}{agent_text}",
                times(blocked),
                times(allowed),
                reminders,
                if rejected { "rejected by verify (exit 2)" } else { "NOT rejected by verify" }
            );
            Verdict { ok: ok && agent_ok, actual }
        }
        _ => Verdict { ok: false, actual: format!("`{name}` is not a hook scenario") },
    }
}

/// A set-up command that failed ends the rehearsal with its reason.
fn failed(what: &str, r: &Ran) -> Option<Verdict> {
    if r.missing() {
        return Some(Verdict { ok: false, actual: format!("`{what}` is not in this build yet") });
    }
    let ok = r.code == Some(0) || (what == "kit handoff verify" && r.code == Some(2));
    (!ok).then(|| Verdict {
        ok: false,
        actual: format!("`{what}` failed: {}", r.output.trim().lines().last().unwrap_or("")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ran(code: i32, output: &str) -> Ran {
        Ran { code: Some(code), output: output.into() }
    }

    fn firing(action: &str, band: Option<u8>) -> Hook {
        Hook { hook_event: "PostToolUse".into(), action: action.into(), band, ..Hook::default() }
    }

    #[test]
    fn bands_wants_each_band_once_and_the_stop_let_through() {
        let good = [
            firing("checkpoint", Some(50)),
            firing("handoff", Some(70)),
            firing("wrap_up", Some(85)),
            firing("stop_allowed", Some(85)),
        ];
        let v = judge("bands", &ran(0, ""), &good, 3, &ran(0, "verifies"));
        assert!(v.ok, "{}", v.actual);
        assert!(v.actual.starts_with("checkpoint 50 % once, handoff 70 % once, wrap-up 85 % once; Stop blocked never, let through once"), "{}", v.actual);
        let mut twice = good.to_vec();
        twice.push(firing("handoff", Some(70)));
        let v = judge("bands", &ran(0, ""), &twice, 3, &ran(0, ""));
        assert!(!v.ok && v.actual.contains("handoff 70 % 2 times"), "{}", v.actual);
        assert!(!judge("bands", &ran(0, ""), &good, 3, &ran(2, "")).ok);
        assert!(!judge("bands", &ran(0, ""), &good, 0, &ran(0, "")).ok);
        assert!(!judge("bands", &ran(0, ""), &[], 3, &ran(0, "")).ok);
    }

    #[test]
    fn forged_wants_one_block_and_a_rejected_handoff() {
        let events = [
            firing("checkpoint", Some(50)),
            firing("handoff", Some(70)),
            firing("stop_blocked", Some(85)),
            firing("stop_allowed", Some(85)),
        ];
        let rejected = ran(2, "or written by hand)\n… not saved in that session");
        let v = judge("forged", &ran(0, ""), &events, 3, &rejected);
        assert!(v.ok, "{}", v.actual);
        assert!(!judge("forged", &ran(0, ""), &events, 3, &ran(0, "")).ok);
        assert!(!judge("forged", &ran(0, ""), &events[..2], 3, &rejected).ok);
    }
}
