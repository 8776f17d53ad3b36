//! The rehearsal of one fake-agent loop scenario: the steps of the tour and the judge that
//! compares what happened with what issue 2 expects (the plans are [`super::plan`]'s).

use std::path::Path;
use std::time::{Duration, Instant};

use crate::longrun::event::{Entry, Event, Flap, LoopEnd};

use super::plan::{Plan, Verdict, STEPS};
use super::{sample, Narrator, Ran, Running, Sandbox, COMMAND_LIMIT};
use crate::error::Result;

/// Rehearse the loop scenario `plan` in a new sandbox under `root`, narrating to `n`.
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
        "A real Python 3 project: 14 unittest tests, and `parse_duration` missing.",
    )?;

    n.step(2, STEPS, "kit init", "longrun/ holds the seven state files, each with one writer.")?;
    let init = sb.kit(&["init"])?;
    n.ran("kit init", &init)?;
    if let Some(v) = blocked("kit init", &init) {
        return Ok(v);
    }

    n.step(
        3,
        STEPS,
        "The goal, as a contract",
        "Function, regression and limit criteria, every count pinned: level 4.",
    )?;
    let goal_path = sb.project.join("longrun/goal.md");
    let mut goal = sample::goal_text().to_string();
    for (line, with) in plan.goal_edits {
        goal = goal.replace(line, with);
    }
    crate::atomic::write_atomic(&goal_path, goal.as_bytes())?;
    n.note("wrote longrun/goal.md; its criteria:")?;
    for l in goal.lines().filter(|l| l.starts_with("- ") && l.contains('`')) {
        n.note(&format!("  {l}"))?;
    }
    for (line, with) in plan.goal_edits {
        n.note(&format!("its budget line `{line}` became `{with}` for this scenario"))?;
    }
    set_config(&sb.project.join("longrun/config.toml"), plan.config)?;
    for (k, v) in plan.config {
        n.note(&format!("set {k} = {v} in longrun/config.toml"))?;
    }
    let check = sb.kit(&["goal", "check"])?;
    n.ran("kit goal check", &check)?;
    if check.missing() {
        return Ok(Verdict {
            ok: false,
            actual: "`kit goal check` is not in this build yet".into(),
        });
    }
    if check.code != Some(0) {
        n.note("Not enough yet: the tests the criteria run are not frozen, so an agent could weaken them.")?;
    }

    n.step(4, STEPS, "kit freeze tests tools", "The tests now belong to the loop: any change the agent makes is put back. Now the goal rates level 4.")?;
    let mut args = vec!["freeze"];
    args.extend(sample::FROZEN);
    let freeze = sb.kit(&args)?;
    n.ran(&format!("kit {}", args.join(" ")), &freeze)?;
    if let Some(v) = blocked("kit freeze", &freeze) {
        return Ok(v);
    }
    let check = sb.kit(&["goal", "check"])?;
    n.ran("kit goal check", &check)?;
    if let Some(v) = blocked("kit goal check", &check) {
        return Ok(v);
    }
    let setup = sample::git(&sb.project, &sb.env, &["add", "-A"])
        .and_then(|_| {
            sample::git(
                &sb.project,
                &sb.env,
                &["commit", "-q", "-m", "longrun: goal, config and frozen tests"],
            )
        })
        .and_then(|_| sample::git(&sb.project, &sb.env, &["rev-parse", "--short=7", "HEAD"]));
    n.note(&format!("committed longrun/ ({})", setup?.trim()))?;

    let agent = format!("fake:{}", plan.name);
    let mut loop_args = vec!["loop", "--agent", agent.as_str()];
    loop_args.extend(plan.loop_args);
    let shown = format!("kit {}", loop_args.join(" "));
    n.step(5, STEPS, &shown, plan.proves)?;
    let clock = virtual_clock(plan, n)?;
    let verdict = if plan.name == "race" {
        race(&sb, &loop_args, &shown, n)?
    } else {
        let ran = sb.kit_with(&loop_args, &clock)?;
        n.ran(&shown, &ran)?;
        if let Some(v) = blocked("kit loop", &ran) {
            return Ok(v);
        }
        judge(plan.name, &sb, &ran)
    };

    n.step(6, STEPS, "kit status", "Everything the loop knows is rebuilt from the journal alone.")?;
    let status = sb.kit_with(&["status"], &clock)?;
    n.ran("kit status", &status)?;

    n.step(
        7,
        STEPS,
        "kit measure",
        "What the fake agent's sessions cost, read from its Claude Code transcripts.",
    )?;
    let transcripts = sb.transcripts();
    if transcripts.is_empty() {
        n.note("no transcript was written (the agent never ran); nothing to measure")?;
    } else {
        n.note(&format!(
            "the fake agent wrote {} transcript{} under {}",
            transcripts.len(),
            if transcripts.len() == 1 { "" } else { "s" },
            sb.home.join(".claude/projects").display()
        ))?;
        let mut args = vec!["measure".to_string()];
        args.extend(transcripts.iter().map(|p| p.to_string_lossy().into_owned()));
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let measure = sb.kit(&refs)?;
        if measure.missing() {
            n.note("kit measure is not in this build yet; skipped")?;
        } else {
            n.ran("kit measure $CLAUDE_CONFIG_DIR/projects/*/*.jsonl", &measure)?;
        }
    }
    Ok(verdict)
}

/// The `KIT_FAKE_CLOCK` the loop of `plan` runs under (empty when none is needed or the caller
/// already set one, which the child inherits), narrated. A `ratelimit` rehearsal must not sleep
/// the two hours to the announced reset: with kit's clock virtual from now on, the wait advances
/// the loop's clock at once, and its journal shows the reset time as a real loop would.
fn virtual_clock(plan: &Plan, n: &mut Narrator<'_>) -> Result<Vec<(String, String)>> {
    if !plan.virtual_clock {
        return Ok(Vec::new());
    }
    if crate::clock::is_fake() {
        n.note("KIT_FAKE_CLOCK is set: kit's clock is virtual, so the wait for the reset passes at once.")?;
        return Ok(Vec::new());
    }
    let now = crate::clock::now_rfc3339();
    n.note(&format!(
        "KIT_FAKE_CLOCK={now} for this loop and the status after it: kit's clock is virtual, so \
         the wait for the reset passes at once (a real loop sleeps until it, bounded by the wall cap)."
    ))?;
    Ok(vec![(crate::clock::FAKE_CLOCK_VAR.to_string(), now)])
}

/// A failed set-up command ends the rehearsal of this scenario with its reason.
fn blocked(what: &str, r: &Ran) -> Option<Verdict> {
    if r.missing() {
        return Some(Verdict { ok: false, actual: format!("`{what}` is not in this build yet") });
    }
    (r.code != Some(0) && what != "kit loop").then(|| Verdict {
        ok: false,
        actual: format!("`{what}` failed: {}", r.output.trim().lines().last().unwrap_or("")),
    })
}

/// `race`: a first loop in the background; once its agent runs, a second loop must meet the
/// lock (exit 4) and name the first one's pid; the first then ends done.
///
/// The first loop's agent (its whole process group) is stopped with SIGSTOP while the second
/// loop runs and continued after: the scenario's agent works only 5 s, and a loaded machine may
/// take longer than that to start the second loop, which would then find no loop to meet.
fn race(sb: &Sandbox, args: &[&str], shown: &str, n: &mut Narrator<'_>) -> Result<Verdict> {
    use nix::sys::signal::{killpg, Signal};
    let first = Running::start(sb.kit_command(args))?;
    let pid = first.pid();
    n.note(&format!("started in the background (pid {pid}); waiting for its agent to start"))?;
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut started = None;
    while started.is_none() && Instant::now() < deadline {
        started = sb.journal().into_iter().find_map(|e| match e.event {
            Event::AgentStart(a) => Some(a),
            _ => None,
        });
        if started.is_none() {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    // The group, while its leader is still the agent that was journaled (same start time).
    let agent_group = started
        .map(|a| (a.pgid, a.starttime))
        .filter(|&(g, start)| g > 1 && crate::proc::get(g).is_some_and(|p| p.starttime == start))
        .map(|(g, _)| nix::unistd::Pid::from_raw(g));
    if let Some(g) = agent_group {
        let _ = killpg(g, Signal::SIGSTOP);
    }
    let second = sb.kit(args);
    if let Some(g) = agent_group {
        let _ = killpg(g, Signal::SIGCONT);
    }
    let second = second?;
    n.ran(&format!("{shown}    # a second loop, while the first runs"), &second)?;
    let first = first.wait(COMMAND_LIMIT)?;
    n.ran(&format!("{shown}    # the first loop, when it ends"), &first)?;
    let named = second.output.contains(&format!("pid {pid}"));
    let end = describe_end(&sb.journal(), &first);
    let ok = second.code == Some(4) && named && end.done_at == Some(1);
    let actual = format!(
        "second loop exit {}{}; first loop {}",
        code_text(second.code),
        if named { format!(" naming pid {pid}") } else { format!(" not naming pid {pid}") },
        end.text
    );
    Ok(Verdict { ok, actual })
}

/// Judge the loop of every scenario but `race`.
fn judge(name: &str, sb: &Sandbox, ran: &Ran) -> Verdict {
    let events = sb.journal();
    let end = describe_end(&events, ran);
    let agent_end = events.iter().find_map(|e| match &e.event {
        Event::AgentEnd(a) if a.iteration == 1 => Some(a),
        _ => None,
    });
    match name {
        "finish" => Verdict { ok: ran.code == Some(0) && end.done_at == Some(1), actual: end.text },
        "cheat" => {
            let rel = "tests/test_durations.py";
            let now = std::fs::read(sb.project.join(rel)).unwrap_or_default();
            let restored = sample::original(rel).is_some_and(|o| o == now.as_slice());
            let cheats = events
                .iter()
                .filter(|e| matches!(&e.event, Event::Cheat(c) if c.path.ends_with(rel)))
                .count();
            let ok = restored && cheats > 0 && ran.code == Some(0) && end.done_at == Some(2);
            let actual = format!(
                "{}, {cheats} cheat{} journaled, {}",
                if restored { "test restored byte for byte" } else { "test NOT restored" },
                if cheats == 1 { "" } else { "s" },
                end.text
            );
            Verdict { ok, actual }
        }
        "hang" => {
            let timed_out = agent_end.is_some_and(|e| e.timed_out);
            let pgid = events.iter().find_map(|e| match &e.event {
                Event::AgentStart(a) => Some(a.pgid),
                _ => None,
            });
            let mut left = pgid.map(crate::proc::in_group).unwrap_or_default();
            left.extend(crate::proc::with_env(
                "KIT_REHEARSAL_SANDBOX",
                &sb.env_value("KIT_REHEARSAL_SANDBOX"),
            ));
            left.sort_unstable();
            left.dedup();
            let group = pgid.map_or("?".to_string(), |g| g.to_string());
            let actual = format!(
                "{}; {} of group {group} left",
                if timed_out {
                    "iteration 1 killed at the timeout"
                } else {
                    "iteration 1 NOT killed at the timeout"
                },
                if left.is_empty() {
                    "no process".to_string()
                } else {
                    format!("processes {left:?}")
                },
            );
            Verdict { ok: timed_out && pgid.is_some() && left.is_empty(), actual }
        }
        "hog" => {
            let killed = agent_end.is_some_and(|e| e.memory_killed);
            let enforcer = agent_end
                .map(|e| e.enforcer.as_str())
                .filter(|e| !e.is_empty())
                .or_else(|| {
                    events.iter().find_map(|e| match &e.event {
                        Event::MemoryCap(m) => Some(m.enforcer.as_str()),
                        _ => None,
                    })
                })
                .unwrap_or("")
                .to_string();
            let peak = agent_end
                .map(|e| format!(", peak {} MiB", e.peak_rss_bytes >> 20))
                .unwrap_or_default();
            let actual = if killed {
                format!(
                    "killed at the memory cap by {}{peak}",
                    if enforcer.is_empty() { "an unnamed enforcer" } else { &enforcer }
                )
            } else {
                format!("NOT killed at the memory cap; {}", end.text)
            };
            Verdict { ok: killed && !enforcer.is_empty(), actual }
        }
        "lie" => Verdict {
            ok: ran.code == Some(3)
                && end.cap.as_deref() == Some("iterations")
                && end.done_at.is_none(),
            actual: end.text,
        },
        "stall" => Verdict {
            ok: ran.code == Some(3) && end.cap.as_deref() == Some("no_progress"),
            actual: end.text,
        },
        "ratelimit" => ratelimit(&events, ran, end),
        "flap" => flap(&events, ran),
        "crash" => {
            let first = events.iter().find_map(|e| match &e.event {
                Event::AgentEnd(a) => Some(a),
                _ => None,
            });
            let signal = first.and_then(|e| e.signal);
            let crashed = first.is_some_and(|e| e.iteration == 1) && signal.is_some();
            let limits = events.iter().filter(|e| matches!(e.event, Event::LimitWait(_))).count();
            let failed = events.iter().any(|e| {
                matches!(&e.event, Event::Criteria(c) if c.iteration == 1 && c.passed < c.total)
            });
            let ok =
                crashed && limits == 0 && failed && ran.code == Some(0) && end.done_at == Some(2);
            let actual = format!(
                "{}, {}; {}",
                match signal {
                    Some(s) if crashed => format!("iteration 1 died by signal {s} mid-stream"),
                    _ => "iteration 1 did NOT crash".to_string(),
                },
                match (limits, failed) {
                    (0, true) => "a failed iteration, no limit wait".to_string(),
                    (0, false) => "its criteria did not fail".to_string(),
                    (n, _) => format!(
                        "taken for a limit ({n} limit wait{})",
                        if n == 1 { "" } else { "s" }
                    ),
                },
                end.text
            );
            Verdict { ok, actual }
        }
        _ => Verdict { ok: false, actual: end.text },
    }
}

/// `ratelimit`: one `limit_wait` (usage, with its reset time), waited out in full
/// (`limit_resume` not cut short), the iteration retried under its number, then done at 1.
fn ratelimit(events: &[Entry], ran: &Ran, end: End) -> Verdict {
    let wait = events.iter().find_map(|e| match &e.event {
        Event::LimitWait(w) => Some(w),
        _ => None,
    });
    let until =
        wait.and_then(|e| e.until.as_deref()).and_then(|t| t.parse::<jiff::Timestamp>().ok());
    let usage = wait.is_some_and(|e| e.kind == "usage");
    let resume = events.iter().find_map(|e| match &e.event {
        Event::LimitResume(r) => Some(r),
        _ => None,
    });
    let waited = resume.map(|e| e.waited_s);
    let full = resume.is_some_and(|e| e.cut_short.is_none());
    let starts: Vec<u64> = events
        .iter()
        .filter_map(|e| match &e.event {
            Event::IterationStart(i) => Some(i.iteration),
            _ => None,
        })
        .collect();
    let retried = starts.len() >= 2 && starts[0] == starts[1];
    let ok = usage
        && until.is_some()
        && full
        && retried
        && ran.code == Some(0)
        && end.done_at == Some(1);
    let actual = match (wait, until) {
        (None, _) => format!("no usage limit waited for; {}", end.text),
        (Some(_), until) => format!(
            "waited for the {} limit until {} ({} on the virtual clock{}), {}; {}",
            wait.map_or("?", |e| e.kind.as_str()),
            until.map_or("no reset time".to_string(), crate::looprun::limits::describe_until),
            waited.map_or("?".to_string(), |s| {
                crate::looprun::limits::describe_wait(Duration::from_secs(s))
            }),
            if full { "" } else { ", cut short" },
            if retried {
                format!("iteration {} retried under its number, not counted", starts[0])
            } else {
                "the limited iteration was counted".to_string()
            },
            end.text
        ),
    };
    Verdict { ok, actual }
}

/// `flap`: a criterion journaled as flapping (passed and failed across runs on one tree), done
/// never accepted, the loop stopped with outcome `flapping`, exit 3.
fn flap(events: &[Entry], ran: &Ran) -> Verdict {
    let flaps: Vec<&Flap> = events
        .iter()
        .filter_map(|e| match &e.event {
            Event::Flap(f) if f.runs.contains(&true) && f.runs.contains(&false) => Some(f),
            _ => None,
        })
        .collect();
    let end = last_end(events);
    let outcome = end.map_or("no loop_end", |e| e.outcome.as_str());
    let done = events.iter().any(|e| matches!(&e.event, Event::LoopEnd(l) if l.outcome == "done"));
    let ok = !flaps.is_empty() && !done && outcome == "flapping" && ran.code == Some(3);
    let line = flaps.first().map(|e| e.line);
    let actual = format!(
        "{}, done {}; {outcome} (exit {})",
        match line {
            Some(l) => format!(
                "goal.md:{l} flagged as flapping {} time{}",
                flaps.len(),
                if flaps.len() == 1 { "" } else { "s" }
            ),
            None => "no criterion flagged as flapping".to_string(),
        },
        if done { "ACCEPTED" } else { "refused" },
        code_text(ran.code)
    );
    Verdict { ok, actual }
}

/// How a loop ended, from the journal's last `loop_end` and `cap` events and its exit status.
struct End {
    text: String,
    done_at: Option<u64>,
    cap: Option<String>,
}

fn describe_end(events: &[Entry], ran: &Ran) -> End {
    let end = last_end(events);
    let outcome = end.map_or("", |e| e.outcome.as_str());
    let iteration = end.map_or(0, |e| e.iteration);
    let iterations = end.map_or(0, |e| e.iterations);
    let cap = events.iter().rev().find_map(|e| match &e.event {
        Event::Cap(c) => Some(c.which.as_str()),
        _ => None,
    });
    let code = code_text(ran.code);
    match outcome {
        "done" => End {
            text: format!("done at iteration {iteration}"),
            done_at: Some(iteration),
            cap: None,
        },
        "cap" => End {
            text: format!(
                "never done, {} cap after {iterations} iteration{} (exit {code})",
                cap.unwrap_or("a"),
                if iterations == 1 { "" } else { "s" }
            ),
            done_at: None,
            cap: cap.map(str::to_string),
        },
        "" => End {
            text: format!("no loop_end in the journal (exit {code}): {}", last_line(&ran.output)),
            done_at: None,
            cap: None,
        },
        other => End {
            text: format!(
                "{other} at iteration {iteration} (exit {code}): {}",
                end.map_or("", |e| e.reason.as_str())
            ),
            done_at: None,
            cap: None,
        },
    }
}

/// The journal's last `loop_end`.
fn last_end(events: &[Entry]) -> Option<&LoopEnd> {
    events.iter().rev().find_map(|e| match &e.event {
        Event::LoopEnd(l) => Some(l),
        _ => None,
    })
}

fn code_text(code: Option<i32>) -> String {
    code.map_or("killed".to_string(), |c| c.to_string())
}

fn last_line(s: &str) -> &str {
    s.trim().lines().last().unwrap_or("")
}

impl Sandbox {
    /// Run `kit ARGS` with `extra` variables on top of the sandbox's (at most the command limit).
    fn kit_with(&self, args: &[&str], extra: &[(String, String)]) -> Result<Ran> {
        let mut c = self.kit_command(args);
        c.envs(extra.iter().map(|(k, v)| (k, v)));
        Running::start(c)?.wait(COMMAND_LIMIT)
    }

    fn env_value(&self, key: &str) -> String {
        self.env.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone()).unwrap_or_default()
    }
}

/// Set `key = value` in config.toml, keeping the line's comment and every other line.
/// A key that is not in the file is appended under its table.
fn set_config(path: &Path, edits: &[(&str, &str)]) -> Result<()> {
    if edits.is_empty() {
        return Ok(());
    }
    let mut text = std::fs::read_to_string(path).unwrap_or_default();
    for (key, value) in edits {
        let re = regex::Regex::new(&format!(r#"(?m)^(\s*{key}\s*=\s*)("[^"]*"|[^\s#]+)"#))
            .map_err(|e| crate::Error::internal(e.to_string()))?;
        if re.is_match(&text) {
            text = re.replace(&text, format!("${{1}}{value}")).into_owned();
        } else {
            let table = if *key == "grace" { "timeouts" } else { "caps" };
            let header = format!("[{table}]");
            match text.lines().position(|l| l.trim() == header) {
                Some(i) => {
                    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
                    lines.insert(i + 1, format!("{key} = {value}"));
                    text = lines.join("\n") + "\n";
                }
                None => text.push_str(&format!("\n{header}\n{key} = {value}\n")),
            }
        }
    }
    crate::atomic::write_atomic(path, text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_config_keeps_comments_and_appends_missing_keys() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("config.toml");
        std::fs::write(&p, "[timeouts]\ngrace = \"10s\"      # between TERM and KILL\n").unwrap();
        set_config(&p, &[("grace", "\"1s\""), ("max_no_progress", "2")]).unwrap();
        let t = std::fs::read_to_string(&p).unwrap();
        assert!(t.contains("grace = \"1s\"      # between TERM and KILL"), "{t}");
        assert!(t.ends_with("[caps]\nmax_no_progress = 2\n"), "{t}");
        std::fs::write(&p, "[caps]\nmax_iterations = 3\n").unwrap();
        set_config(&p, &[("max_no_progress", "2")]).unwrap();
        let t = std::fs::read_to_string(&p).unwrap();
        assert_eq!(t, "[caps]\nmax_no_progress = 2\nmax_iterations = 3\n");
    }
}
