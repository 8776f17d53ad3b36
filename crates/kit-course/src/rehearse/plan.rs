//! How each fake-agent scenario is rehearsed ([`Plan`]) and what a rehearsal found
//! ([`Verdict`]): shared by the loop scenarios ([`super::scenarios`]) and the hook scenarios
//! ([`super::hooked`]).

/// Every scenario `kit rehearse --all` runs, in order: the loop scenarios, then the two that
/// drive the context-band hook (`bands`, `forged`, rehearsed by `hooked.rs`); `kit rehearse`
/// dispatches on `Plan::hook`.
pub const SCENARIOS: [&str; 12] = [
    "finish",
    "cheat",
    "race",
    "hang",
    "hog",
    "lie",
    "stall",
    "ratelimit",
    "flap",
    "crash",
    "bands",
    "forged",
];

/// Number of narrated steps in one rehearsal.
pub(crate) const STEPS: usize = 7;

/// How one scenario is rehearsed.
pub(crate) struct Plan {
    /// Scenario name (`fake:NAME`).
    pub name: &'static str,
    /// The expected outcome, as the `--all` table prints it.
    pub expected: &'static str,
    /// Extra `kit loop` options.
    pub loop_args: &'static [&'static str],
    /// `config.toml` values to set before the loop: (key, TOML value).
    pub config: &'static [(&'static str, &'static str)],
    /// What the loop step (the agent step, for a hook scenario) proves, for the narration.
    pub proves: &'static str,
    /// True for a scenario that drives the hook (`kit hook claude`) rather than `kit loop`.
    pub hook: bool,
    /// True when the loop (and the status after it) runs on kit's virtual clock
    /// (`KIT_FAKE_CLOCK`, set to the current time unless the caller set it): a scenario whose
    /// agent announces a reset hours away, which a rehearsal must not really wait for.
    pub virtual_clock: bool,
    /// Lines of the sample goal.md replaced before the loop: (line, replacement).
    pub goal_edits: &'static [(&'static str, &'static str)],
}

/// What actually happened, and whether it is what was expected.
pub(crate) struct Verdict {
    /// True when the outcome is the expected one.
    pub ok: bool,
    /// The actual outcome in a few words.
    pub actual: String,
}

/// The plan for `name`, or `None` when there is no such scenario.
pub(crate) fn plan(name: &str) -> Option<Plan> {
    let p = |name, expected, loop_args, config, proves| Plan {
        name,
        expected,
        loop_args,
        config,
        proves,
        hook: false,
        virtual_clock: false,
        goal_edits: &[],
    };
    Some(match name {
        "finish" => p(
            "finish",
            "done at iteration 1",
            &[],
            &[],
            "The loop runs the criteria itself: done only when every one passes on a verified tree.",
        ),
        "cheat" => p(
            "cheat",
            "frozen test restored byte for byte, a cheat journaled, done at iteration 2",
            &[],
            &[],
            "An agent that weakens a frozen test is reverted and the cheat journaled; only real work ends the loop.",
        ),
        "race" => p(
            "race",
            "a second loop exits 4 naming the holder's pid",
            &[],
            &[],
            "One loop per longrun/: a second loop meets the flock, names the holder and exits 4.",
        ),
        "hang" => p(
            "hang",
            "iteration killed at the timeout, no process of its group left",
            &["--timeout", "3s", "--max-iterations", "1"],
            &[("grace", "\"1s\"")],
            "An agent that ignores SIGTERM is killed with its whole process group at the timeout.",
        ),
        "hog" => p(
            "hog",
            "killed by the memory cap, the enforcer named",
            &["--memory-max", "200M", "--timeout", "60s", "--max-iterations", "1"],
            &[("grace", "\"1s\"")],
            "An agent that eats memory is killed at the cap, by systemd-run or the watchdog.",
        ),
        "lie" => p(
            "lie",
            "never done, the iteration cap reached (exit 3)",
            &["--max-iterations", "2"],
            &[],
            "Saying \"done\" counts for nothing: the criteria fail, and the iteration cap ends it.",
        ),
        "stall" => p(
            "stall",
            "stopped by the no-progress cap (exit 3)",
            &[],
            &[("max_no_progress", "3")],
            "Busy but going nowhere: consecutive iterations without progress stop the loop.",
        ),
        "ratelimit" => Plan {
            virtual_clock: true,
            // The reset is about 2 h away: under the sample's 15-minute wall budget the loop
            // would rightly stop at the wall cap instead of waiting.
            goal_edits: &[("- wall: 15m", "- wall: 3h")],
            ..p(
                "ratelimit",
                "usage limit waited out until its reset (virtual clock), not an iteration; done at iteration 1",
                &[],
                &[],
                "The agent meets the plan's usage limit, reset in about 2 h: the loop waits until the reset it announced and retries the same iteration; the wait is no iteration, no failure and no lack of progress.",
            )
        },
        "flap" => p(
            "flap",
            "criterion flagged as flapping, done refused, stopped at its second flap (exit 3, flapping)",
            &[],
            &[],
            "A criterion that passes and fails on the same tree: the flake guard runs the criteria again, never accepts done on it, and stops the run at its second flap.",
        ),
        "crash" => p(
            "crash",
            "crash journaled as a failed iteration, not a usage limit; done at iteration 2",
            &[],
            &[],
            "An agent that dies mid-stream (SIGKILL, no result) is a failed iteration, never a usage limit: the next iteration goes on.",
        ),
        "bands" => Plan {
            hook: true,
            ..p(
                "bands",
                "checkpoint 50 %, handoff 70 %, wrap-up 85 % once each; Stop let through (handoff saved with `kit handoff save`); handoff verifies",
                &[],
                &[],
                "At each band the agent's PostToolUse runs the real `kit hook claude`; the agent does what it asks, saving the handoff with `kit handoff save`, so its Stop is let through.",
            )
        },
        "forged" => Plan {
            hook: true,
            ..p(
                "forged",
                "checkpoint 50 %, handoff 70 % once each; handoff.md typed by hand: Stop blocked once, then let through (stop_hook_active); verify rejects it",
                &[],
                &[],
                "The agent types longrun/handoff.md itself instead of running `kit handoff save`: the hook blocks its Stop once, and verify rejects the forged stamp.",
            )
        },
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scenario_has_a_plan() {
        for s in SCENARIOS {
            let p = plan(s).unwrap();
            assert_eq!(p.name, s);
            assert!(!p.expected.is_empty());
            assert_eq!(p.hook, ["bands", "forged"].contains(&s), "{s}");
        }
        assert!(plan("nope").is_none());
    }
}
