//! Running the criteria on a verified tree: the check, its proof (canary, tampered test
//! programs, skipped tests), and the frozen-file reverts journaled as cheats.

use super::*;

impl Check {
    /// Every criterion passed, on a tree that stayed verified.
    pub(super) fn all_pass(&self) -> bool {
        self.passed == self.views.len()
            && self.late.is_empty()
            && self.canary_missed.is_empty()
            && self.tampered.is_empty()
            && self.shadowed.is_empty()
            && self.skipped.is_empty()
    }

    pub(super) fn failures(&self) -> Vec<String> {
        let mut out: Vec<String> =
            self.views.iter().filter(|v| !v.passed).map(CriterionView::failure_block).collect();
        for m in &self.canary_missed {
            out.push(format!(
                "goal.md:{} passes, but kit added a test that must fail to {} and the run still \
                 exited 0: {}. Find what in the code under test does that and remove it; the \
                 loop never accepts done while it is there.",
                m.line,
                m.files.join(", "),
                m.why
            ));
        }
        out.extend(self.skipped.iter().cloned());
        for (name, path) in &self.tampered {
            out.push(format!(
                "{name} ({}), which the criteria run, changed since the loop started; put it back \
                 (kit will not accept done on a changed test program)",
                path.display()
            ));
        }
        for rel in &self.shadowed {
            out.push(format!(
                "{rel} in the repository replaces a module of Python's standard library that the \
                 test runner imports (the folder a criterion runs in comes first on sys.path), so \
                 the criteria would run it instead of the runner's own; remove or rename it (kit \
                 will not accept done while it is there)"
            ));
        }
        out
    }

    /// The done line's account of the canary: which criteria it proved, which it could not.
    pub(super) fn canary_line(&self) -> String {
        let lines = |outcome: &str| -> Vec<String> {
            self.canary
                .iter()
                .filter(|r| r.outcome == outcome)
                .map(|r| format!("goal.md:{}", r.line))
                .collect()
        };
        let (caught, skipped) = (lines("caught"), lines("skipped"));
        let mut line = if caught.is_empty() {
            "verified: no criterion runs a test runner kit knows, so none was canaried".to_string()
        } else {
            format!(
                "verified: with a failing test added, the runner of {} failed as it must",
                caught.join(", ")
            )
        };
        if !skipped.is_empty() && !caught.is_empty() {
            line.push_str(&format!(
                " ({} {} no test runner kit knows)",
                skipped.join(", "),
                if skipped.len() == 1 { "runs" } else { "run" }
            ));
        }
        line
    }
}

/// When every criterion exited 127 (`sh`: command not found) at the baseline, no agent can make
/// one pass: the error (exit 2) names each criterion's goal.md line and the missing program, read
/// from the shell's `…: NAME: not found` line (else the command's first word).
pub(super) fn commands_not_found(project: &Project, views: &[CriterionView]) -> Option<Error> {
    if views.is_empty() || views.iter().any(|v| v.exit != Some(127)) {
        return None;
    }
    let re = regex::Regex::new(
        r"(?m)^[^:\n]*sh: (?:\d+: |line \d+: )?(.+?): (?:command )?not found\s*$",
    )
    .expect("a valid regex");
    let goal = rel(project, &project.goal());
    let mut msg = String::from(
        "every criterion exited 127 (command not found) at the baseline; no agent can make one pass",
    );
    let mut programs: Vec<String> = Vec::new();
    for v in views {
        let program = re
            .captures(&v.output_tail)
            .map(|c| c[1].to_string())
            .or_else(|| v.command.split_whitespace().next().map(str::to_string))
            .unwrap_or_default();
        msg.push_str(&format!("\n  {goal}:{}: `{program}` is not on PATH", v.line));
        if !programs.contains(&program) {
            programs.push(program);
        }
    }
    let first = views[0].line as usize;
    Some(
        Error::input(rel_path(project, &project.goal()), Some(first), msg).with_hint(format!(
            "install {} or put it on PATH (try the criterion by hand in the repository root), then kit loop",
            programs.join(", ")
        )),
    )
}

/// How many tests a runner's summary says were skipped: unittest's `OK (skipped=N)` /
/// `FAILED (failures=1, skipped=N)`, pytest's `N skipped`; the largest figure in `tail`, 0
/// when none.
pub(super) fn skipped_tests(tail: &str) -> u64 {
    let mut most = 0;
    for line in tail.lines() {
        let words: Vec<&str> =
            line.split(|c: char| c.is_whitespace() || c == ',' || c == '(' || c == ')').collect();
        for (i, w) in words.iter().enumerate() {
            if let Some(n) = w.strip_prefix("skipped=").and_then(|n| n.parse().ok()) {
                most = most.max(n);
            }
            if *w == "skipped" && i > 0 {
                if let Ok(n) = words[i - 1].parse::<u64>() {
                    most = most.max(n);
                }
            }
        }
    }
    most
}

/// Put the frozen files (and the journal's sealed prefix) back.
///
/// Errors: a file that cannot be restored stops the loop: it never goes on with an unprotected
/// tree.
pub(super) fn restore(guard: &Guard) -> Result<Vec<Revert>> {
    guard.restore().map_err(|e| {
        Error::internal(format!("cannot restore the frozen files: {e}"))
            .with_hint("kit freeze --check, then kit loop")
    })
}

pub(super) fn describe_revert(r: &Revert) -> String {
    format!(
        "{} ({}): kit restored it from the frozen copy; frozen files are not yours to change",
        r.path,
        r.kind.describe()
    )
}

pub(super) fn list_reverts(rs: &[Revert]) -> String {
    crate::frozen::guard::list_drifts(rs.iter().map(|r| (r.path.as_str(), r.kind)))
}

impl RunCtx<'_> {
    /// Run every criterion on a sealed journal, end what the criteria left running, and restore
    /// again: a revert now means the results ran on a tree that was not the verified one.
    pub(super) fn check(&mut self, p: &mut Prepared, iteration: u64, phase: &str) -> Result<Check> {
        p.guard.seal_journal()?;
        let kit_len = journal_len(&self.project.journal());
        let stop = self.stop;
        let results = crate::goal::run_all(
            &p.goal,
            &self.project.root,
            p.settings.criterion_timeout,
            Some(&p.env),
            &|| stop.requested().is_some(),
        );
        let all_passed = results.iter().all(|r| r.passed);
        if let (Some(sig), Some(r)) = (stop.requested(), results.iter().find(|r| r.interrupted)) {
            self.say(format!(
                "loop: stopped by {}; ended the running criterion (goal.md:{}) and its process group",
                sig.as_str(),
                r.line
            ));
        }
        let results = serde_json::to_value(&results).unwrap_or(Value::Array(vec![]));
        end_strays()?;
        if cut_appends(&self.project.journal(), kit_len, &[])? {
            self.cheat(iteration, phase, "longrun/journal.jsonl", "journal_appended")?;
        }
        let late = restore(&p.guard)?;
        self.cheats(&late, iteration, phase)?;
        let views = CriterionView::all(&results);
        let passed = views.iter().filter(|v| v.passed).count();
        let skips: std::collections::HashMap<u64, u64> =
            views.iter().map(|v| (v.line, skipped_tests(&v.output_tail))).collect();
        let first = self.first_skips.get_or_insert_with(|| skips.clone()).clone();
        let newly_skipped: Vec<(u64, u64, u64)> = views
            .iter()
            .filter(|v| v.passed)
            .filter_map(|v| {
                let (now, then) = (skips[&v.line], first.get(&v.line).copied().unwrap_or(0));
                (now > then).then_some((v.line, now, then))
            })
            .collect();
        let mut check = Check {
            results,
            views,
            passed,
            late,
            canary_missed: Vec::new(),
            canary: Vec::new(),
            tampered: Vec::new(),
            shadowed: Vec::new(),
            skipped: Vec::new(),
        };
        for &(line, now, then) in &newly_skipped {
            self.journal(Event::Cheat(ev::Cheat {
                iteration,
                phase: phase.into(),
                path: "longrun/goal.md".into(),
                kind: "tests_skipped".into(),
                line: Some(line),
                skipped: Some(now),
                skipped_at_start: Some(then),
                program: None,
            }))?;
            self.say(format!(
                "iteration {iteration}: goal.md:{line} passes with {now} tests skipped ({then} at the start of this loop): done refused"
            ));
            check.skipped.push(format!(
                "goal.md:{line} passes only because {now} tests are skipped ({then} were at the start): something in the code under test raises SkipTest or marks tests skipped; remove it"
            ));
        }
        if all_passed
            && check.late.is_empty()
            && newly_skipped.is_empty()
            && stop.requested().is_none()
        {
            self.prove(p, iteration, phase, &mut check)?;
        }
        Ok(check)
    }

    /// Before done is accepted: the programs the criteria ran are the ones pinned at the start,
    /// and the canary fails (see [`crate::goal::canary`]). Journals `cheat` events of kind
    /// `criteria_program_changed` and a `canary` event.
    pub(super) fn prove(
        &mut self,
        p: &Prepared,
        iteration: u64,
        phase: &str,
        check: &mut Check,
    ) -> Result<()> {
        check.tampered = p.env.tampered();
        for (name, path) in &check.tampered {
            self.journal(Event::Cheat(ev::Cheat {
                iteration,
                phase: phase.into(),
                path: path.to_string_lossy().into_owned(),
                kind: "criteria_program_changed".into(),
                program: Some(name.clone()),
                ..ev::Cheat::default()
            }))?;
            self.say(format!(
                "iteration {iteration}: {name} ({}), which the criteria run, changed since the loop started: done refused",
                path.display()
            ));
        }
        check.shadowed = p.guard.stdlib_shadows();
        for rel in &check.shadowed {
            self.journal(Event::Cheat(ev::Cheat {
                iteration,
                phase: phase.into(),
                path: rel.clone(),
                kind: "shadows_stdlib".into(),
                ..ev::Cheat::default()
            }))?;
            self.say(format!(
                "iteration {iteration}: {rel} replaces a standard-library module the test runner imports: done refused"
            ));
        }
        let stop = self.stop;
        let seed = u64::from(std::process::id()) << 32
            ^ iteration
            ^ std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
        let results = crate::goal::canary::run(
            &p.goal,
            &self.project.root,
            p.settings.criterion_timeout,
            Some(&p.env),
            seed,
            &|| stop.requested().is_some(),
        )
        .map_err(|e| {
            Error::internal(e).with_hint("kit freeze --restore puts the frozen files back")
        })?;
        end_strays()?;
        // kit put each file back itself; the guard proves it.
        let after = restore(&p.guard)?;
        self.cheats(&after, iteration, phase)?;
        self.journal(Event::Canary(ev::Canary {
            iteration,
            phase: phase.into(),
            results: json!(results),
        }))?;
        check.canary_missed = results.iter().filter(|r| r.missed()).cloned().collect();
        for m in &check.canary_missed {
            self.say(format!(
                "iteration {iteration}: goal.md:{} passes, but with a failing test added to {} it still exits 0: done refused",
                m.line,
                m.files.join(", ")
            ));
        }
        check.canary = results;
        Ok(())
    }

    /// Journal each revert as a cheat.
    pub(super) fn cheats(&mut self, reverts: &[Revert], iteration: u64, phase: &str) -> Result<()> {
        for r in reverts {
            let kind = json!(r.kind);
            self.cheat(iteration, phase, &r.path, kind.as_str().unwrap_or_default())?;
        }
        // A frozen file put back in the tree may still be weakened in a commit the agent made:
        // the tree is safe, HEAD is not. Name the commits.
        if let Some(start) = self.start_head.clone() {
            let paths: Vec<&str> = reverts
                .iter()
                .map(|r| r.path.as_str())
                .filter(|p| !p.starts_with(crate::longrun::DIR))
                .collect();
            if !paths.is_empty() {
                let range = format!("{start}..HEAD");
                let mut log = vec!["log".to_string(), "--format=%h".into(), range, "--".into()];
                log.extend(paths.iter().map(|p| p.to_string()));
                let commits = crate::git::lines_in(&self.project.root, &log).unwrap_or_default();
                if !commits.is_empty() {
                    self.journal(Event::FrozenCommit(ev::FrozenCommit {
                        iteration,
                        commits: commits.clone(),
                        paths: paths.iter().map(|p| p.to_string()).collect(),
                    }))?;
                    self.say(format!(
                        "loop: commit{} {} made during this run change{} {}; the tree is restored \
                         but HEAD still holds {}: git revert {} (or reset) before you trust HEAD",
                        if commits.len() > 1 { "s" } else { "" },
                        commits.join(", "),
                        if commits.len() > 1 { "" } else { "s" },
                        paths.join(", "),
                        if commits.len() > 1 { "them" } else { "it" },
                        commits.join(" ")
                    ));
                }
            }
        }
        // goal.md, config.toml and frozen.toml are the human's, but a running loop holds them
        // as they were at its start: a person editing one now must learn how to, at once.
        let held: Vec<&str> = reverts
            .iter()
            .map(|r| r.path.as_str())
            .filter(|p| crate::goal::IMPLICITLY_FROZEN.contains(p))
            .collect();
        if !held.is_empty() {
            let (verb, it) = if held.len() > 1 { ("are", "them") } else { ("is", "it") };
            self.say(format!(
                "loop: {} {verb} held as at this loop's start, so an edit during the run is \
                 reverted. To change {it}: touch longrun/PAUSE, wait for the loop to stop (exit 5), \
                 edit, rm longrun/PAUSE, then kit loop",
                held.join(", ")
            ));
        }
        Ok(())
    }
}
