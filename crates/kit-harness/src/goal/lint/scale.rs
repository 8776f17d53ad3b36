//! The done-criterion scale: [`rate`] runs the checks of the sibling modules over every
//! criterion and turns what they found into a level (0–4) and the four reasons `kit goal check`
//! prints, one per point of the scale.

use std::collections::BTreeSet;
use std::path::Path;

use super::coverage::Frozen;
use super::runner::canary_plan;
use super::{abbreviate, count, Goal, Kind, Lint, Rating};

/// Rate `goal`. `frozen` holds the repo-relative paths (files and folders, `tests` or `tests/`)
/// that frozen.toml protects; goal.md, config.toml and frozen.toml count as frozen anyway. `root`
/// is the repository root, where the test files that commands name are looked up.
pub(crate) fn rate(goal: &Goal, frozen: &[String], root: &Path) -> Rating {
    let frozen = Frozen::new(frozen);
    let mut lint = Lint {
        goal,
        root,
        frozen: &frozen,
        shortcuts: Vec::new(),
        exercised: BTreeSet::new(),
        status_lost: BTreeSet::new(),
        trials: Vec::new(),
        notes: Vec::new(),
        collected: Default::default(),
        env: None,
    };
    for c in &goal.criteria {
        lint.criterion(c);
    }
    let Lint { mut shortcuts, exercised, status_lost, trials, notes, .. } = lint;
    let mut seen = BTreeSet::new();
    shortcuts.retain(|s| seen.insert((s.line, s.what.clone())));
    shortcuts.sort_by_key(|s| s.line);

    let commands = goal.criteria.len();
    let prose = goal.prose_criteria.len();
    let kinds: BTreeSet<&str> = goal.criteria.iter().map(|c| c.kind.as_str()).collect();
    let missing: Vec<&str> =
        Kind::ALL.iter().map(|k| k.as_str()).filter(|k| !kinds.contains(k)).collect();

    // Function and regression criteria kit cannot canary (a script, `make test`, an expected
    // failure, a selection by pattern): their pass may be printed by the code under work. The
    // same rule ([`canary_plan`]) decides what the loop canaries before done.
    let uncanaried: Vec<(&super::Criterion, String)> = goal
        .criteria
        .iter()
        .filter(|c| c.kind != Kind::Limit)
        .filter_map(|c| canary_plan(c, root).err().map(|why| (c, why)))
        .collect();
    let level: u8 = if commands == 0 && prose == 0 {
        0
    } else if commands == 0 {
        1
    } else if !shortcuts.is_empty() || prose > 0 {
        2
    } else if !missing.is_empty() || !uncanaried.is_empty() {
        3
    } else {
        4
    };

    let mut reasons = Vec::with_capacity(4);
    reasons.push(if commands + prose == 0 {
        "criteria: none — list under `## Criteria` what must be true when the work is done"
            .to_string()
    } else {
        format!(
            "criteria: {} written under `## Criteria`",
            count(commands + prose, "criterion", "criteria")
        )
    });
    reasons.push(if commands == 0 {
        if prose == 0 {
            "commands: none to run".to_string()
        } else {
            format!(
                "commands: none — {} in prose, which only the agent can judge; write each as - function: `COMMAND` → `EXPECTED OUTPUT`",
                if prose == 1 { "the criterion is" } else { "all criteria are" }
            )
        }
    } else if status_lost.is_empty() {
        format!("commands: {commands} of {} run by the loop itself, each with its exit status checked", commands + prose)
    } else {
        // The ✓ of this point says commands exist; it must not also claim their status counts.
        let lines: Vec<String> = status_lost.iter().map(|l| format!("goal.md:{l}")).collect();
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let (which, verb) = match lines.as_slice() {
            [one] => (one.to_string(), "is"),
            [rest @ .., last] => (format!("{} and {last}", rest.join(", ")), "are"),
            [] => (String::new(), "is"),
        };
        format!(
            "commands: {commands} of {} run by the loop itself, but the exit status of {which} {verb} thrown away (see the shortcuts)",
            commands + prose,
        )
    });
    reasons.push(if level < 2 {
        "no shortcut: needs commands first".to_string()
    } else if level >= 3 {
        let tests = if exercised.is_empty() {
            String::new()
        } else {
            // A file inside an exercised folder is named by the folder.
            let list: Vec<&str> = exercised
                .iter()
                .map(String::as_str)
                .filter(|p| {
                    !exercised
                        .iter()
                        .any(|d| d.ends_with('/') && d != p && p.starts_with(d.as_str()))
                })
                .collect();
            format!(", and what they exercise is frozen ({})", abbreviate(&list, 4))
        };
        format!("no shortcut: every criterion pins output a shortcut would change{tests}")
    } else {
        let mut parts = Vec::new();
        if !shortcuts.is_empty() {
            parts.push(format!(
                "{} that let{} a criterion pass without the work",
                count(shortcuts.len(), "shortcut", "shortcuts"),
                if shortcuts.len() == 1 { "s" } else { "" }
            ));
        }
        if prose > 0 {
            let lines: Vec<String> =
                goal.prose_criteria.iter().map(|(l, _)| format!("goal.md:{l}")).collect();
            let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
            parts.push(format!(
                "{} in prose the loop cannot check ({})",
                count(prose, "criterion", "criteria"),
                abbreviate(&lines, 3)
            ));
        }
        format!("no shortcut: not yet — {}", parts.join("; "))
    });
    reasons.push(if level == 3 && missing.is_empty() && !uncanaried.is_empty() {
        let lines: Vec<String> =
            uncanaried.iter().map(|(c, _)| format!("goal.md:{}", c.line)).collect();
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let mut whys: Vec<&str> = Vec::new();
        for (_, why) in &uncanaried {
            if !whys.contains(&why.as_str()) {
                whys.push(why);
            }
        }
        format!(
            "coverage: function, regression and limit are there, but kit cannot canary {} ({}), so the code under work could print its pass; level 4 needs every function and regression criterion run by unittest, pytest, cargo test or go test over whole test files, a class or one test",
            abbreviate(&lines, 3),
            whys.join("; ")
        )
    } else if missing.is_empty() {
        if level >= 4 {
            "coverage: function, regression and limit — the new work, nothing broken, a bound held".to_string()
        } else {
            "coverage: function, regression and limit are all there; it counts once level 3 is reached".to_string()
        }
    } else {
        format!(
            "coverage: no {} criterion (function proves the new work, regression that nothing broke, limit that a bound holds)",
            join_or(&missing)
        )
    });
    Rating { level, reasons, shortcuts, trials, notes }
}

/// `a`, `a or b`, `a, b or c`.
fn join_or(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}
