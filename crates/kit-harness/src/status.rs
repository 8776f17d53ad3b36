//! `kit status [--json]`: where the loop stands, rebuilt from the journal (the loop's checkpoint,
//! DESIGN §3), the goal, `progress.md`'s next action and the lock's live holder. It reads only:
//! it never takes the lock (that could turn away a loop starting at the same instant).
//!
//! What it shows: the goal's title and level; the owner (the live lock holder, or none); the
//! last iteration number; the last criteria results, each pass or fail, with the commit they
//! ran on; the reverts (cheats) so far; the caps of the current run, used versus set; the next
//! action from `progress.md`; and the outcome when the last run has ended.
//!
//! The run (see `longrun::durable`): its number, when it started, how many loop processes took
//! part and what it spent; the caps count the whole run. `next loop` says what a plain
//! `kit loop` would do now: start a run, continue this one, or refuse a finished one (and the
//! flag that starts a new one).
//!
//! JSON (`--json`), schema `kit.status/1`:
//! `{schema, goal: {title, level, error}, owner: {pid, host, started, command} | null,
//! run: {id, started, loops, spent: {iterations, wall_s, cost_usd, no_progress}, last_outcome}
//! | null, paused: {since, user, host, pid, reason, now} | {by_hand: true} | null (see
//! `longrun::pause`), next_loop: {action (start/continue/refuse/locked/paused), text},
//! iteration, criteria: {iteration, commit, dirty, verified, passed, total, results: [{line,
//! kind, command, passed, exit, timed_out, missing}]} | null, reverts: {total, this_run, recent:
//! [{iteration, path, kind}]}, caps: {iterations, wall_s, cost_usd, no_progress} each {used,
//! limit}, next_action, outcome: {outcome, reason, iteration, exit} | null, interrupted,
//! skipped_lines, unknown_events: {newer, names, misread: [{line, event, reason}]} (absent when
//! the journal holds only events this kit reads), since: {from (mark/run), at, run,
//! iterations, iteration_range, reverts, limit_waits, limit_waited_s, flaps, reviews: {pass,
//! fail, ask}, loops_ended, events, marked} | null (see [`since`]), decisions: [{kind
//! (flap/review/cap/paused/ask/not_counted/git_planted), line, text}] (see [`pending`]), notify: the last
//! `notify` event | null, inbox_waiting: messages of longrun/inbox.md no iteration got yet (absent when none; see
//! `longrun::inbox`), agent: {current, from, why, reason, iteration} when the run went on with a
//! fallback agent (absent otherwise; see the loop's `fallback`
//! module)}`.
//!
//! For a person coming back: `since …:` says what happened after they last looked (the mark
//! is moved only by a status on a terminal, `--mark`, or the end of `--watch`; see [`since`]),
//! `needs you:` lines name the decisions pending, and `--watch` redraws it all in place (see
//! [`watch`]).

pub(crate) mod pending;
pub(crate) mod since;
pub(crate) mod watch;

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use serde::Serialize;
use serde_json::{json, Value};

use crate::error::{IoContext, Result, EXIT_OK};
use crate::longrun::config::Config;
use crate::longrun::durable::{self, RunView};
use crate::longrun::event::{Entry, Event, LoopStart};
use crate::longrun::history::{CriterionView, History};
use crate::longrun::lock::{self, Holder};
use crate::longrun::Project;
use crate::term::Theme;
use crate::units::format_duration;

/// `kit status` options.
#[derive(Clone, Copy, Debug, Default)]
pub struct StatusOptions {
    /// Print JSON instead of text.
    pub json: bool,
    /// Redraw in place every `interval` until Ctrl-C (`--watch`); needs a terminal.
    pub watch: bool,
    /// Time between redraws (`--interval`); None: [`watch::DEFAULT_INTERVAL`].
    pub interval: Option<Duration>,
    /// Stdout is a terminal (a person looks): the "since you last looked" mark moves.
    pub terminal: bool,
    /// `--mark`: move the mark even when stdout is not a terminal.
    pub mark: bool,
    /// `--no-mark`: never move the mark.
    pub no_mark: bool,
}

/// One cap: how much of it the current run used, and its limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub(crate) struct CapUse {
    /// Used so far in the current run.
    pub used: f64,
    /// The limit.
    pub limit: f64,
}

/// The caps of the current run.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub(crate) struct Caps {
    /// Agent iterations.
    pub iterations: CapUse,
    /// Wall time, seconds.
    pub wall_s: CapUse,
    /// Cost, USD.
    pub cost_usd: CapUse,
    /// Consecutive iterations without progress.
    pub no_progress: CapUse,
    /// What counts as progress for `no_progress` (the loop's definition, in words).
    pub progress_means: &'static str,
    /// Where each cap came from in this run (`flag`, `config.toml`, `goal.md budget`), keyed
    /// `iterations`, `wall`, `cost`, `no_progress`, `timeout`, `memory`; before any run, every
    /// cap is config.toml's.
    pub sources: CapSources,
}

/// What the loop's "verified" proves and what it does not, as status says it (README: "What the
/// loop enforces, and what it does not").
pub(crate) const VERIFIED_MEANS: &str =
    "every criterion passed on a tree that matches frozen.toml, \
in an environment kit set (no user site folder, no stale bytecode, PATH without relative or \
agent-made entries, the programs pinned at the start), and the runner failed a test kit planted; \
it does not prove the tests cover the goal, nor catch code written to recognise kit's canary";

/// The loop's definition of progress (see the loop's module doc), as status reports it.
pub(crate) const PROGRESS_MEANS: &str =
    "more criteria passing than the best so far in this run, or the \
failing criteria failing differently (exit status, missed expectations or last output lines); \
changed files alone are not progress";

/// Where the caps came from; see [`Caps::sources`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub(crate) struct CapSources {
    /// `iterations`.
    pub iterations: &'static str,
    /// `wall`.
    pub wall: &'static str,
    /// `cost`.
    pub cost: &'static str,
}

impl CapSources {
    fn from_start(start: Option<&LoopStart>) -> CapSources {
        let of = |k: &str| match start.and_then(|s| s.cap_sources.get(k)).map(String::as_str) {
            Some("flag") => "flag",
            Some("goal.md budget") => "goal.md budget",
            _ => "config.toml",
        };
        CapSources { iterations: of("iterations"), wall: of("wall"), cost: of("cost") }
    }
}

/// Everything `kit status` reports.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Status {
    /// `kit.status/1`.
    pub schema: &'static str,
    /// `{title, level}` or `{error}`.
    pub goal: Value,
    /// The live lock holder.
    pub owner: Option<Holder>,
    /// The journal's last run.
    pub run: Option<RunStatus>,
    /// `longrun/PAUSE`: the `kit pause` record, `{by_hand: true}`, or null when not paused.
    pub paused: Option<Value>,
    /// `waiting for the usage limit until 03:10 UTC` while the journal's last `limit_wait` has
    /// no `limit_resume` after it (see [`crate::longrun::history::limit_waiting`]); when no loop holds
    /// the lock, what the next `kit loop` does about it instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit_wait: Option<String>,
    /// What a plain `kit loop` would do now.
    pub next_loop: NextLoop,
    /// The last iteration number started (0: none).
    pub iteration: u64,
    /// The last criteria results (baseline or iteration).
    pub criteria: Option<Value>,
    /// Reverts so far.
    pub reverts: Value,
    /// Caps used versus set in the current run.
    pub caps: Caps,
    /// The next action from progress.md.
    pub next_action: Option<String>,
    /// The last run's `loop_end`, when it has ended.
    pub outcome: Option<Value>,
    /// True when the last run started and never ended and nobody holds the lock (killed).
    pub interrupted: bool,
    /// Torn or malformed journal lines that were skipped (1-based).
    pub skipped_lines: Vec<usize>,
    /// Journal events this kit does not read (a newer kit's, or a known event whose fields do
    /// not fit): not shown anywhere else, counted here; absent when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unknown_events: Option<UnknownEvents>,
    /// State files that exist but could not be read or parsed (`config.toml`, `progress.md`),
    /// each `{file, error}`: status shows them instead of silently showing defaults.
    pub problems: Vec<Value>,
    /// What the agent was denied or what kit could not price in the current run (see
    /// [`agent_notes`]); absent when nothing.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub agent_notes: Vec<String>,
    /// What happened since the person last looked (or since the last run started).
    pub since: Option<since::Since>,
    /// Decisions pending for a person.
    pub decisions: Vec<pending::Decision>,
    /// The last `notify` event (the `[notify]` command's last run), if any.
    pub notify: Option<Value>,
    /// The agent the run went on with, when it switched to a fallback agent:
    /// `{current, from, why, reason, iteration}` from its last `agent_switch`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<Value>,
    /// Messages of `longrun/inbox.md` that no iteration got yet (`kit tell`).
    #[serde(skip_serializing_if = "is_zero")]
    pub inbox_waiting: usize,
    /// The project's last `kit race`, with every lane; absent when it never raced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub race: Option<crate::longrun::race::RaceView>,
    /// The decisions the last race's lanes wait for (lanes stopped `needs_you`), one line each
    /// with the lane and the command that answers it (see `longrun::race::lane_decisions`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub race_decisions: Vec<String>,
    /// The journal's last event is the race's `race_end` (no loop ran here since).
    #[serde(skip)]
    pub race_last: bool,
    /// The mark that moving it now would write (everything this status read).
    #[serde(skip)]
    pub seen: since::Mark,
}

/// The journal events status could not show (see [`Status::unknown_events`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub(crate) struct UnknownEvents {
    /// Events of names this kit does not know (a newer kit's).
    pub newer: usize,
    /// Their names, each once, in journal order.
    pub names: Vec<String>,
    /// Known events whose fields did not read, each `{line, event, reason}`.
    pub misread: Vec<Value>,
}

impl UnknownEvents {
    /// What `h` holds that this kit does not read; None when it reads every line.
    pub(crate) fn of(h: &History) -> Option<UnknownEvents> {
        let mut u = UnknownEvents::default();
        for (e, unknown) in h.unknown() {
            if unknown.misread() {
                u.misread
                    .push(json!({ "line": e.line, (crate::longrun::event::TAG): e.name(), "reason": unknown.reason }));
            } else {
                u.newer += 1;
                let name = if e.name().is_empty() { "(no name)" } else { e.name() };
                if !u.names.iter().any(|n| n == name) {
                    u.names.push(name.to_string());
                }
            }
        }
        Some(u).filter(|u| u.newer + u.misread.len() > 0)
    }

    /// The lines status prints: `2 events of a newer kit (teleport, warp) not shown; …`.
    pub(crate) fn describe(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.newer > 0 {
            out.push(format!(
                "{} of a newer kit ({}) not shown; a newer kit reads them",
                crate::units::plural(self.newer as u64, "event"),
                self.names.join(", ")
            ));
        }
        if let Some(first) = self.misread.first() {
            out.push(format!(
                "{} this kit could not read not shown (journal line {}: {}: {})",
                crate::units::plural(self.misread.len() as u64, "event"),
                first["line"],
                first[crate::longrun::event::TAG].as_str().unwrap_or("?"),
                first["reason"].as_str().unwrap_or("?")
            ));
        }
        out
    }
}

/// The journal's last run, as status shows it.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct RunStatus {
    /// Its number.
    pub id: u64,
    /// When its first loop process started, RFC 3339.
    pub started: String,
    /// Loop processes that took part.
    pub loops: u64,
    /// What it spent (wall time until now while its loop runs).
    pub spent: durable::Spent,
    /// Its last loop process's outcome (`killed` when it never wrote one).
    pub last_outcome: String,
}

/// What a plain `kit loop` would do now.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct NextLoop {
    /// `start`, `continue`, `refuse` (a finished run: exit 2), `locked` (a loop runs: exit 4),
    /// `paused` (exit 5 until `kit resume`).
    pub action: &'static str,
    /// In words, with the flag or command that changes it.
    pub text: String,
}

/// Gather the status of the project containing `cwd`.
///
/// Errors: [`crate::Error::Usage`] outside an initialised repository; [`crate::Error::Io`] when
/// the journal cannot be read.
pub(crate) fn gather(cwd: &Path) -> Result<Status> {
    let project = Project::discover_initialised(cwd)?;
    let mut h = History::read(&project.journal())?;
    let parsed_goal = crate::goal::load(&project).ok();
    let goal = match crate::goal::load(&project) {
        Ok(g) => {
            let frozen = crate::goal::frozen_paths(&project).unwrap_or_default();
            let rating = crate::goal::rate(&g, &frozen, &project.root);
            json!({ "title": g.title, "level": rating.level })
        }
        Err(e) => json!({ "error": e.to_string() }),
    };
    let owner = lock::live_holder(&project.lock());
    if owner.is_some() {
        // A loop is running: its journal line being written at this instant is not damage.
        if let Some(n) = unterminated_last_line(&project.journal()) {
            h.skipped.retain(|&l| l != n);
        }
    }
    let run = h.run_entries();
    let started = run.first().and_then(|e| match &e.event {
        Event::LoopStart(s) => Some((e, s)),
        _ => None,
    });
    let ended = run.iter().rev().find(|e| matches!(e.event, Event::LoopEnd(_)));
    let last_check = h.entries.iter().rev().find_map(|e| match &e.event {
        Event::Criteria(c) => Some((e, &c.results, c.iteration, &c.commit, c.dirty, c.verified)),
        Event::Baseline(b) => Some((e, &b.results, 0, &b.commit, b.dirty, true)),
        _ => None,
    });
    let criteria = last_check.map(|(e, results, at, commit, dirty, verified)| {
        let views = CriterionView::all(results);
        // The loop journals the canary just before the criteria event it belongs to.
        let canary = h
            .last_where(|e| match e {
                Event::Canary(c) => Some(c),
                _ => None,
            })
            .filter(|c| c.iteration == at)
            .map(|c| c.results.clone());
        // The last revert probe of this run (issue 22), whichever check it followed.
        let probe = run.iter().rev().find_map(|p| match &p.event {
            Event::RevertProbe(r) => Some(json!({
                "iteration": field(p, "iteration", r.iteration),
                "refused": r.refused,
                "pass_without_work": r.pass_without_work,
                "failed": r.results.iter().filter(|x| !x.passed).map(|x| x.line).collect::<Vec<_>>(),
                "exempt": r.exempt,
                "wall_ms": field(p, "wall_ms", r.wall_ms),
                "cpu_ms": field(p, "cpu_ms", r.cpu_ms),
            })),
            _ => None,
        });
        json!({
            "canary": canary,
            "revert_probe": probe,
            "iteration": at,
            "commit": field(e, "commit", commit),
            "dirty": dirty,
            "verified": verified || !e.has("verified"),
            "passed": views.iter().filter(|v| v.passed).count(),
            "total": views.len(),
            "results": views.iter().map(|v| json!({
                "line": v.line, "kind": v.kind, "command": v.command, "passed": v.passed,
                "exit": v.exit, "timed_out": v.timed_out, "missing": v.missing,
                "output_tail": v.output_tail,
            })).collect::<Vec<_>>(),
        })
    });
    let cheats = cheats_in(&h.entries);
    let this_run = cheats_in(run).len();
    let recent: Vec<Value> = cheats
        .iter()
        .rev()
        .take(5)
        .rev()
        .map(|(e, c)| {
            json!({
                "iteration": field(e, "iteration", c.iteration),
                "path": field(e, "path", &c.path),
                "kind": field(e, "kind", &c.kind),
            })
        })
        .collect();
    let reverts = json!({ "total": cheats.len(), "this_run": this_run, "recent": recent });
    let mut problems = Vec::new();
    let config = match Config::load(&project.config()) {
        Ok(c) => Some(c),
        Err(e) => {
            problems.push(json!({ "file": "longrun/config.toml", "error": e.to_string() }));
            None
        }
    };
    let next_action = match next_action(&project.progress()) {
        Ok(a) => a,
        Err(e) => {
            problems.push(json!({ "file": "longrun/progress.md", "error": e }));
            None
        }
    };
    // Outside a running loop, drift in the frozen files is the user's to settle (a running
    // loop restores it itself).
    if owner.is_none() && !(started.is_some() && ended.is_none()) {
        if let Ok(drifts) = crate::frozen::freeze::drift_of_user_files(&project) {
            for d in drifts {
                problems.push(json!({
                    "file": d.path,
                    "error": format!(
                        "{} since kit freeze: kit loop refuses to start until you run kit freeze {} (keep it) or kit freeze --restore (discard it)",
                        d.kind.describe(), d.path
                    ),
                }));
            }
        }
    }
    let last = durable::last_run(&h);
    let live = owner.is_some() && ended.is_none();
    let mut caps = caps_of(config.as_ref(), parsed_goal.as_ref(), started, run, ended);
    let mut spent = last.as_ref().map(|r| r.spent).unwrap_or_default();
    if let Some(r) = last.as_ref().filter(|_| live) {
        // A loop runs now: its own wall time counts until now, not until its last line.
        spent.wall_s = wall_before(r, &h) + caps.wall_s.used.max(0.0);
    }
    if last.is_some() {
        caps.iterations.used = spent.iterations as f64;
        caps.wall_s.used = spent.wall_s;
        caps.cost_usd.used = spent.cost_usd;
        caps.no_progress.used = f64::from(spent.no_progress);
    }
    let pause = crate::longrun::pause::read(&project);
    // A loop that journaled its loop_end is on its way out: what comes next is the plan.
    let running = owner.as_ref().filter(|_| live);
    let mut next_loop = next_loop(&h, running, config.as_ref(), parsed_goal.as_ref());
    if let Some(p) = pause.as_ref().filter(|_| owner.is_none()) {
        next_loop = NextLoop {
            action: "paused",
            text: format!(
                "exits 5: paused {}; after kit resume, kit loop {}",
                p.describe(),
                next_loop.text
            ),
        };
    }
    let paused_words = pause.as_ref().map(|p| p.describe());
    let paused = pause.map(|p| match p {
        crate::longrun::pause::Paused::Record(r) => json!(r),
        crate::longrun::pause::Paused::ByHand => json!({ "by_hand": true }),
    });
    let since_mark = since::Mark::read(&since::mark_path(&project));
    let start = since::run_start(&h);
    let from_run = start.as_ref().map(|(i, id, at)| (*i, *id, at.as_str()));
    let since = since::Since::of(&h, since_mark.as_ref(), from_run);
    let run_events = last.as_ref().map_or(&[][..], |r| r.events(&h));
    let mut decisions = pending::of(run_events, live, paused_words);
    decisions.extend(pending::asks(&h.entries));
    let planted = crate::longrun::decisions::planted_git_settings(&project, &h);
    if !planted.is_empty() {
        decisions.push(pending::Decision {
            kind: "git_planted",
            line: None,
            text: format!(
                "git settings that appeared during a run are still in place: {}; read and \
                 remove them (.git/hooks/, core.hooksPath, .git/config and what it includes): \
                 your git runs them, and kit approve refuses while they stay",
                planted.join(", ")
            ),
        });
    }
    let notify = h.entries.iter().rev().find(|e| matches!(e.event, Event::Notify(_)));
    let agent = run_events.iter().rev().find_map(|e| match &e.event {
        Event::AgentSwitch(s) => Some(json!({
            "current": s.to, "from": s.from, "why": s.why, "reason": s.reason,
            "iteration": s.iteration,
        })),
        _ => None,
    });
    let inbox_waiting = match crate::longrun::inbox::read(&project) {
        Ok(messages) => crate::longrun::inbox::pending(&messages, &h.entries).len(),
        Err(e) => {
            problems.push(json!({ "file": crate::longrun::inbox::FILE, "error": e.to_string() }));
            0
        }
    };
    let race = crate::longrun::race::last_race(&h);
    let run_status = last.map(|r| RunStatus {
        id: r.id,
        started: r.started.clone(),
        loops: r.loops,
        spent,
        last_outcome: if live { "running".into() } else { r.last_outcome().to_string() },
    });
    Ok(Status {
        schema: "kit.status/1",
        goal,
        run: run_status,
        paused,
        limit_wait: crate::longrun::history::limit_waiting(&h.entries).map(|w| {
            if live {
                w
            } else if w.contains(" until ") {
                format!("the loop stopped while {w}; the next kit loop waits out the rest, then retries the iteration")
            } else {
                format!("the loop stopped while {w}; the next kit loop retries the iteration")
            }
        }),
        next_loop,
        interrupted: started.is_some() && ended.is_none() && owner.is_none(),
        owner,
        iteration: h.last_iteration,
        criteria,
        reverts,
        caps,
        next_action,
        outcome: ended.map(Entry::to_value),
        skipped_lines: h.skipped.clone(),
        unknown_events: UnknownEvents::of(&h),
        problems,
        agent_notes: agent_notes(run),
        since,
        decisions,
        notify: notify.map(Entry::to_value),
        agent,
        inbox_waiting,
        race_decisions: race.as_ref().map_or_else(Vec::new, |r| {
            r.lanes
                .iter()
                .filter(|l| l.outcome == crate::longrun::race::NEEDS_YOU)
                .flat_map(|l| {
                    crate::longrun::race::lane_decisions(std::path::Path::new(&l.path))
                        .into_iter()
                        .map(move |d| format!("lane {} `{}`: {d}", l.lane, l.agent))
                })
                .collect()
        }),
        race_last: race.is_some()
            && h
                .entries
                .iter()
                .rev()
                .find(|e| {
                    matches!(
                        e.event,
                        Event::LoopStart(_)
                            | Event::LoopEnd(_)
                            | Event::RaceStart(_)
                            | Event::RaceEnd(_)
                    )
                })
                .is_some_and(|e| matches!(e.event, Event::RaceStart(_) | Event::RaceEnd(_))),
        race,
        seen: since::Mark::now(&h),
    })
}

/// One short line each for the current run's last `permission_denials` event (the patterns
/// denied and the setting that allows them), its last `cost_cap` (who ended the iteration at the
/// cost cap, the figure, the API calls) and its `unpriced` events (the models kit could not
/// price, so the cost cap cannot be trusted). Empty when the run had neither.
pub(crate) fn agent_notes(run: &[Entry]) -> Vec<String> {
    let mut notes = Vec::new();
    let last = |pick: fn(&Event) -> bool| run.iter().rev().find(|e| pick(&e.event));
    if let Some(e) = last(|e| matches!(e, Event::PermissionDenials(_))) {
        let Event::PermissionDenials(d) = &e.event else { unreachable!() };
        let n = d.denials.as_array().map_or(0, Vec::len);
        let tools: Vec<&str> = d
            .denials
            .as_array()
            .map(|a| a.iter().filter_map(|x| x.get("tool_name").and_then(Value::as_str)).collect())
            .unwrap_or_default();
        notes.push(format!(
            "iteration {}: {n} tool call{} denied ({}); {}",
            d.iteration,
            if n == 1 { "" } else { "s" },
            tools.join(", "),
            if e.has("suggest") {
                d.suggest.as_str()
            } else {
                "widen [agent] allowed_tools in longrun/config.toml"
            }
        ));
    }
    if let Some(e) = last(|e| matches!(e, Event::CostCap(_))) {
        let Event::CostCap(c) = &e.event else { unreachable!() };
        let f = |v: &Value| v.as_f64().unwrap_or(0.0);
        let calls = |n: u64| format!("{n} API call{}", if n == 1 { "" } else { "s" });
        let how = match c.by.as_str() {
            "claude" => {
                format!(
                    "Claude Code stopped itself at --max-budget-usd after {}",
                    calls(c.api_calls)
                )
            }
            _ => format!(
                "by kit: ${:.2} of ${:.2} after {} (the last ${:.2})",
                c.used,
                c.limit,
                calls(c.at_stop["api_calls"].as_u64().unwrap_or(0)),
                f(&c.at_stop["last_call_usd"])
            ),
        };
        notes.push(format!("iteration {}: stopped at the cost cap {how}", c.iteration));
    }
    let mut models: Vec<String> = Vec::new();
    for e in run {
        let Event::Unpriced(u) = &e.event else { continue };
        for m in &u.models {
            if !models.iter().any(|x| x == m) {
                models.push(m.clone());
            }
        }
    }
    if !models.is_empty() {
        notes.push(format!(
            "unpriced: {} (the cost cap cannot be trusted; add [prices.\"MODEL\"] to longrun/config.toml)",
            models.join(", ")
        ));
    }
    notes
}

/// The wall time `run` spent in the loop processes before its last one (from the last
/// `loop_start`'s `spent`, which that process journaled; 0 for an old journal's run).
fn wall_before(run: &RunView, h: &History) -> f64 {
    run.events(h)
        .iter()
        .rev()
        .find_map(|e| match &e.event {
            Event::LoopStart(s) => Some(s.spent["wall_s"].as_f64()),
            _ => None,
        })
        .flatten()
        .unwrap_or(0.0)
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// What a plain `kit loop` would do now, from the journal and the caps it would run with.
fn next_loop(
    h: &History,
    owner: Option<&Holder>,
    config: Option<&Config>,
    goal: Option<&crate::goal::Goal>,
) -> NextLoop {
    if let Some(o) = owner {
        return NextLoop {
            action: "locked",
            text: format!("exits 4: the loop of pid {} holds the lock", o.pid),
        };
    }
    let cfg = config.cloned().unwrap_or_default();
    let budget = goal.map(|g| g.budget.clone()).unwrap_or_default();
    let limits = match crate::longrun::caps::planned_caps(&cfg, &budget) {
        Ok(p) => p.limits(),
        Err(e) => return NextLoop { action: "refuse", text: format!("exits 2: {e}") },
    };
    match crate::longrun::decisions::after_needs_you(durable::plan(h, &limits, false)) {
        durable::Plan::New { id, .. } => {
            NextLoop { action: "start", text: format!("starts run {id}") }
        }
        durable::Plan::Continue(r) => NextLoop {
            action: "continue",
            text: format!(
                "continues run {} with what it spent ({}); kit loop --new-run starts afresh",
                r.id,
                r.spent.describe()
            ),
        },
        durable::Plan::Finished { reason, next, .. } => {
            NextLoop { action: "refuse", text: format!("exits 2: {reason}; {next}") }
        }
    }
}

/// The caps of the current run from its `loop_start`; before any run, those of `config` (the
/// defaults when it is unreadable: the problem is reported beside them).
fn caps_of(
    config: Option<&Config>,
    goal: Option<&crate::goal::Goal>,
    started: Option<(&Entry, &LoopStart)>,
    run: &[Entry],
    ended: Option<&Entry>,
) -> Caps {
    let Some((start_entry, start)) = started else {
        // Before any run: the caps the next `kit loop` (without flags) would apply.
        let cfg = config.cloned().unwrap_or_default();
        let lim = |limit: f64| CapUse { used: 0.0, limit };
        let budget = goal.map(|g| g.budget.clone()).unwrap_or_default();
        if let Ok(p) = crate::longrun::caps::planned_caps(&cfg, &budget) {
            let [iterations, wall, cost] = p.sources;
            return Caps {
                iterations: lim(f64::from(p.iterations)),
                wall_s: lim(p.wall.as_secs_f64()),
                cost_usd: lim(p.cost_usd),
                no_progress: lim(f64::from(p.no_progress)),
                sources: CapSources { iterations, wall, cost },
                progress_means: PROGRESS_MEANS,
            };
        }
        return Caps {
            iterations: lim(f64::from(cfg.caps.max_iterations)),
            wall_s: lim(cfg.max_wall().as_secs_f64()),
            cost_usd: lim(cfg.caps.max_cost_usd),
            no_progress: lim(f64::from(cfg.caps.max_no_progress)),
            sources: CapSources::from_start(None),
            progress_means: PROGRESS_MEANS,
        };
    };
    let iterations = run.iter().filter(|e| matches!(e.event, Event::IterationStart(_))).count();
    let cost: f64 = run
        .iter()
        .filter_map(|e| match &e.event {
            Event::AgentEnd(a) => Some(a.cost_usd),
            _ => None,
        })
        .sum();
    let no_progress = run
        .iter()
        .rev()
        .find_map(|e| match &e.event {
            Event::Criteria(c) => Some(c.no_progress as f64),
            _ => None,
        })
        .unwrap_or(0.0);
    let until = ended.and_then(Entry::time).unwrap_or_else(crate::clock::now);
    let wall =
        start_entry.time().map(|s| until.duration_since(s).as_secs_f64().max(0.0)).unwrap_or(0.0);
    let c = start.caps;
    Caps {
        iterations: CapUse { used: iterations as f64, limit: c.iterations as f64 },
        wall_s: CapUse { used: wall, limit: c.wall_s as f64 },
        cost_usd: CapUse { used: cost, limit: c.cost_usd },
        no_progress: CapUse { used: no_progress, limit: c.no_progress as f64 },
        sources: CapSources::from_start(Some(start)),
        progress_means: PROGRESS_MEANS,
    }
}

/// The `cheat` entries of `es`.
fn cheats_in(es: &[Entry]) -> Vec<(&Entry, &crate::longrun::event::Cheat)> {
    es.iter()
        .filter_map(|e| match &e.event {
            Event::Cheat(c) => Some((e, c)),
            _ => None,
        })
        .collect()
}

/// `value` as JSON when the entry's line had `key`, else null (as the line read as JSON would
/// give it).
fn field(e: &Entry, key: &str, value: impl Serialize) -> Value {
    if e.has(key) {
        json!(value)
    } else {
        Value::Null
    }
}

/// The next action written in `progress.md`: the first non-empty line under a heading that
/// says "next action", or the text after `Next action:` on a line. HTML comments and a
/// parenthesised placeholder line (template guidance) are ignored.
///
/// Errors: the reason, when the file exists but cannot be read (permissions, not UTF-8). A
/// missing file is no next action (`Ok(None)`).
pub(crate) fn next_action(path: &Path) -> std::result::Result<Option<String>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    Ok(next_action_in(&text))
}

fn next_action_in(text: &str) -> Option<String> {
    let text = strip_comments(text);
    let mut under_heading = false;
    for line in text.lines() {
        let t = line.trim();
        let lower = t.to_ascii_lowercase();
        if t.starts_with('#') {
            under_heading = lower.contains("next action");
            continue;
        }
        if under_heading && !t.is_empty() {
            let item = t.trim_start_matches(['-', '*', ' ']).trim();
            // A template's placeholder, e.g. "(The one concrete step to take next.)".
            let placeholder = item.starts_with('(') && item.ends_with(')');
            return Some(item.to_string()).filter(|s| !s.is_empty() && !placeholder);
        }
        let bare = lower.trim_start_matches(['-', '*', ' ']).replace("**", "");
        if let Some(rest) = bare.strip_prefix("next action:") {
            let at = t.len() - rest.len();
            let value = t[at..].trim().trim_start_matches("**").trim();
            if !value.is_empty() {
                return Some(value.to_string());
            }
            under_heading = true;
        }
    }
    None
}

/// How many of a failing criterion's last output lines `kit status` shows under it.
const FAIL_TAIL_LINES: usize = 3;

/// The last `n` lines of `text` that say something (not blank, not a rule of `-` or `=` such
/// as unittest prints), trimmed at the end.
fn last_lines(text: &str, n: usize) -> Vec<&str> {
    let says_something = |l: &&str| l.chars().any(|c| !matches!(c, '-' | '=' | ' ' | '\t'));
    let lines: Vec<&str> = text.lines().map(str::trim_end).filter(says_something).collect();
    lines[lines.len().saturating_sub(n)..].to_vec()
}

fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("<!--") {
        out.push_str(&rest[..i]);
        match rest[i..].find("-->") {
            Some(j) => rest = &rest[i + j + 3..],
            None => return out,
        }
    }
    out.push_str(rest);
    out
}

/// `kit status`: print the status (text or JSON), or watch it (`--watch`). Always exits 0 when
/// it could read the state.
///
/// Errors: [`crate::Error::Usage`] (exit 2) for `--watch` when stdout is not a terminal; those
/// of [`gather`].
pub fn run(cwd: &Path, opts: StatusOptions, theme: &Theme, out: &mut dyn Write) -> Result<u8> {
    if opts.watch {
        if !opts.terminal {
            return Err(crate::Error::usage(
                "kit status --watch redraws the screen in place, and stdout is not a terminal",
            )
            .with_hint("run kit status to print it once, or kit status --json for a program"));
        }
        let interval = opts.interval.unwrap_or(watch::DEFAULT_INTERVAL);
        return watch::watch(cwd, interval, !opts.no_mark, theme, out, &terminal_size);
    }
    let mut s = gather(cwd)?;
    // A person looked (a terminal), or a caller asked: what this status showed is now seen.
    if !opts.no_mark && (opts.mark || (opts.terminal && !opts.json)) {
        let moved = move_mark(cwd, &s);
        if let Some(since) = s.since.as_mut() {
            since.marked = moved;
        }
    }
    let stdout = Path::new("stdout");
    if opts.json {
        let text =
            serde_json::to_string_pretty(&s).map_err(|e| crate::Error::internal(e.to_string()))?;
        writeln!(out, "{text}").at(stdout)?;
        return Ok(EXIT_OK);
    }
    print_text(&s, theme, out).at(stdout)?;
    Ok(EXIT_OK)
}

/// Move the "since you last looked" mark of the project containing `cwd` to what `s` read.
/// Returns whether it was written (a read-only folder leaves it where it was, silently: the
/// mark is a courtesy, not state).
fn move_mark(cwd: &Path, s: &Status) -> bool {
    Project::discover_initialised(cwd).is_ok_and(|p| s.seen.write(&since::mark_path(&p)).is_ok())
}

/// The terminal on stdout as (rows, columns), if it is one.
fn terminal_size() -> Option<(usize, usize)> {
    console::Term::stdout().size_checked().map(|(r, c)| (usize::from(r), usize::from(c)))
}

/// The 1-based number of the journal's last line when the file does not end in a newline (a
/// line being written, or torn); None when it does, is empty or cannot be read.
fn unterminated_last_line(path: &Path) -> Option<usize> {
    let bytes = std::fs::read(path).ok()?;
    if bytes.is_empty() || bytes.ends_with(b"\n") {
        return None;
    }
    Some(bytes.iter().filter(|&&b| b == b'\n').count() + 1)
}

/// The text of `kit status`, line by line (see the module doc). Each line is one `writeln!`
/// in the order shown; a new line goes where it reads best, as its own statement.
fn print_text(s: &Status, theme: &Theme, out: &mut dyn Write) -> std::io::Result<()> {
    match (s.goal.get("title").and_then(Value::as_str), s.goal.get("error").and_then(Value::as_str))
    {
        (Some(title), _) => writeln!(
            out,
            "{} {} (level {} of 4)",
            theme.bold("goal:"),
            title,
            s.goal["level"].as_u64().unwrap_or(0)
        )?,
        (_, Some(err)) => {
            writeln!(out, "{} {}", theme.bold("goal:"), theme.bad(&format!("unreadable: {err}")))?
        }
        _ => writeln!(out, "{} none", theme.bold("goal:"))?,
    }
    match &s.owner {
        Some(h) => writeln!(out, "{} {}", theme.bold("owner:"), h.describe())?,
        None => writeln!(out, "{} none", theme.bold("owner:"))?,
    }
    match &s.run {
        Some(r) => writeln!(
            out,
            "{} {} (started {}, {} loop process{}, last: {}); spent {}",
            theme.bold("run:"),
            r.id,
            r.started,
            r.loops,
            if r.loops == 1 { "" } else { "es" },
            r.last_outcome,
            r.spent.describe()
        )?,
        None => writeln!(out, "{} none yet", theme.bold("run:"))?,
    }
    if let Some(a) = &s.agent {
        writeln!(
            out,
            "{} {} since iteration {} (fallback after `{}`): {}",
            theme.bold("agent:"),
            a["current"].as_str().unwrap_or("?"),
            a["iteration"],
            a["from"].as_str().unwrap_or("?"),
            a["reason"].as_str().unwrap_or("")
        )?;
    }
    for note in &s.agent_notes {
        writeln!(out, "{} {}", theme.bold("agent:"), theme.warn(note))?;
    }
    if let Some(p) = &s.paused {
        let text = match serde_json::from_value::<crate::longrun::pause::PauseRecord>(p.clone()) {
            Ok(r) if p.get("by_hand").is_none() => {
                crate::longrun::pause::Paused::Record(r).describe()
            }
            _ => crate::longrun::pause::Paused::ByHand.describe(),
        };
        writeln!(out, "{} {text}; kit resume to go on", theme.warn("paused:"))?;
    }
    if let Some(since) = s.since.as_ref().filter(|x| x.worth_a_line()) {
        writeln!(out, "{} {}", theme.bold(&format!("{}:", since.label())), since.describe())?;
    }
    // `paused` has its own line above.
    for d in s.decisions.iter().filter(|d| d.kind != "paused") {
        writeln!(out, "{} {}", theme.warn("needs you:"), d.text)?;
    }
    if let Some(w) = &s.limit_wait {
        writeln!(out, "{} {w}", theme.warn("limit:"))?;
    }
    match s.inbox_waiting {
        0 => {}
        1 => writeln!(
            out,
            "{} 1 message waits for the next iteration ({})",
            theme.bold("inbox:"),
            crate::longrun::inbox::FILE
        )?,
        n => writeln!(
            out,
            "{} {n} messages wait for the next iteration ({})",
            theme.bold("inbox:"),
            crate::longrun::inbox::FILE
        )?,
    }
    if s.iteration == 0 && s.criteria.is_none() {
        writeln!(out, "{} none yet", theme.bold("iteration:"))?;
    } else {
        writeln!(out, "{} {}", theme.bold("iteration:"), s.iteration)?;
    }
    match &s.criteria {
        None => writeln!(out, "{} not run yet", theme.bold("criteria:"))?,
        Some(c) => {
            let commit = c["commit"].as_str().unwrap_or("none");
            let short = if commit.len() > 12 { &commit[..12] } else { commit };
            let at = match c["iteration"].as_u64().unwrap_or(0) {
                0 => "baseline".to_string(),
                n => format!("iteration {n}"),
            };
            writeln!(
                out,
                "{} {} of {} pass ({at}, commit {short}{}{})",
                theme.bold("criteria:"),
                c["passed"],
                c["total"],
                if c["dirty"].as_bool().unwrap_or(false) { " + uncommitted changes" } else { "" },
                if c["verified"].as_bool().unwrap_or(true) {
                    ""
                } else {
                    ", tree changed meanwhile"
                }
            )?;
            for r in c["results"].as_array().into_iter().flatten() {
                let passed = r["passed"].as_bool().unwrap_or(false);
                let mark = if passed { theme.ok("pass") } else { theme.bad("FAIL") };
                let mut why = String::new();
                if !passed {
                    if r["timed_out"].as_bool().unwrap_or(false) {
                        why.push_str(" — timed out");
                    } else if let Some(code) = r["exit"].as_i64().filter(|&c| c != 0) {
                        why.push_str(&format!(" — exit {code}"));
                    }
                    let missing: Vec<String> = r["missing"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|m| m.as_str().map(|m| format!("`{m}`")))
                        .collect();
                    if !missing.is_empty() {
                        why.push_str(&format!(" — missing {}", missing.join(", ")));
                    }
                }
                writeln!(
                    out,
                    "  {mark}  {:<10}  {}  (goal.md:{}){why}",
                    r["kind"].as_str().unwrap_or(""),
                    r["command"].as_str().unwrap_or(""),
                    r["line"]
                )?;
                if !passed {
                    for line in last_lines(r["output_tail"].as_str().unwrap_or(""), FAIL_TAIL_LINES)
                    {
                        writeln!(out, "        | {line}")?;
                    }
                }
            }
            if let Some(results) = c["canary"].as_array() {
                let lines = |outcome: &str| -> Vec<String> {
                    results
                        .iter()
                        .filter(|r| r["outcome"] == outcome)
                        .map(|r| format!("goal.md:{}", r["line"]))
                        .collect()
                };
                let (caught, missed, skipped) =
                    (lines("caught"), lines("missed"), lines("skipped"));
                if !missed.is_empty() {
                    writeln!(
                        out,
                        "{} {} {} — the runner exited 0 with a failing test kit added; done refused",
                        theme.bold("canary:"),
                        theme.bad("MISSED in"),
                        missed.join(", ")
                    )?;
                } else {
                    let mut text = if caught.is_empty() {
                        "no criterion runs a test runner kit knows, so none was canaried"
                            .to_string()
                    } else {
                        format!(
                            "with a failing test added, the runner of {} failed as it must",
                            caught.join(", ")
                        )
                    };
                    if !skipped.is_empty() && !caught.is_empty() {
                        text.push_str(&format!(" ({} not canaried)", skipped.join(", ")));
                    }
                    writeln!(out, "{} {text}", theme.bold("canary:"))?;
                }
                writeln!(out, "{} {VERIFIED_MEANS}", theme.bold("verified means:"))?;
            }
            if c["revert_probe"].is_object() {
                let p = &c["revert_probe"];
                let lines = |k: &str| -> String {
                    p[k].as_array()
                        .map(|a| a.iter().map(|l| format!("goal.md:{l}")).collect::<Vec<_>>())
                        .unwrap_or_default()
                        .join(", ")
                };
                let cost = format!(
                    "{:.1} s wall, {:.1} s CPU",
                    p["wall_ms"].as_f64().unwrap_or(0.0) / 1000.0,
                    p["cpu_ms"].as_f64().unwrap_or(0.0) / 1000.0
                );
                let text = if p["refused"] == true {
                    format!(
                        "{} {} pass on the run's start tree: the criteria pass without the work; done refused",
                        theme.bad("REFUSED:"),
                        lines("pass_without_work")
                    )
                } else if lines("failed").is_empty() {
                    "no function criterion left to run on the run's start tree".to_string()
                } else {
                    format!("{} fail on the run's start tree, as they must", lines("failed"))
                };
                writeln!(
                    out,
                    "{} iteration {}: {text} ({cost})",
                    theme.bold("revert probe:"),
                    p["iteration"]
                )?;
            }
        }
    }
    let total = s.reverts["total"].as_u64().unwrap_or(0);
    if total == 0 {
        writeln!(out, "{} none", theme.bold("reverts:"))?;
    } else {
        let recent: Vec<String> = s.reverts["recent"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| {
                format!(
                    "{} {} at iteration {}",
                    r["path"].as_str().unwrap_or("?"),
                    r["kind"].as_str().unwrap_or("?").replace('_', " "),
                    r["iteration"]
                )
            })
            .collect();
        writeln!(
            out,
            "{} {} ({} this run; last: {})",
            theme.bold("reverts:"),
            total,
            s.reverts["this_run"],
            recent.join(", ")
        )?;
    }
    let c = &s.caps;
    // A cap not from config.toml names where it came from: `--max-iterations 6` under a goal
    // budget of 5 shows `5 (goal.md budget)`.
    let from = |src: &str| if src == "config.toml" { String::new() } else { format!(" ({src})") };
    writeln!(
        out,
        "{} iterations {} of {}{}, wall {} of {}{}, cost ${:.2} of ${:.2}{}, no progress {} of {}",
        theme.bold("caps:"),
        c.iterations.used,
        c.iterations.limit,
        from(c.sources.iterations),
        format_duration(Duration::from_secs_f64(c.wall_s.used)),
        format_duration(Duration::from_secs_f64(c.wall_s.limit)),
        from(c.sources.wall),
        // A sum of tiny or negative-zero costs must not print as `$-0.00`.
        c.cost_usd.used.max(0.0),
        c.cost_usd.limit,
        from(c.sources.cost),
        c.no_progress.used,
        c.no_progress.limit
    )?;
    writeln!(
        out,
        "{} {}",
        theme.bold("next action:"),
        s.next_action.as_deref().unwrap_or("(none in longrun/progress.md)")
    )?;
    if let Some(r) = &s.race {
        let racing = s.owner.as_ref().is_some_and(|o| o.command.contains(" race"));
        writeln!(out, "{} {}", theme.bold("race:"), r.describe(racing))?;
        for l in r.table().lines() {
            writeln!(out, "  {l}")?;
        }
        for d in &s.race_decisions {
            writeln!(out, "  {} {d}", theme.warn("needs you:"))?;
        }
    }
    // Before the outcome, which stays the last line (`kit status | tail -n 1`).
    writeln!(out, "{} {}", theme.bold("next loop:"), s.next_loop.text)?;
    match &s.outcome {
        _ if s.race_last && s.owner.is_none() => {
            let r = s.race.as_ref().map(|r| r.outcome()).unwrap_or_default();
            writeln!(out, "{} {r}", theme.bold("outcome:"))?
        }
        Some(o) => writeln!(
            out,
            "{} {}: {}",
            theme.bold("outcome:"),
            o["outcome"].as_str().unwrap_or("?"),
            o["reason"].as_str().unwrap_or("")
        )?,
        None if s.interrupted => writeln!(
            out,
            "{} interrupted: the last loop was killed before it ended; kit loop resumes it",
            theme.bold("outcome:")
        )?,
        None if s.owner.is_some() => writeln!(out, "{} running", theme.bold("outcome:"))?,
        None => writeln!(out, "{} no loop has run yet; next: kit loop", theme.bold("outcome:"))?,
    }
    for p in &s.problems {
        writeln!(
            out,
            "{} {} {}",
            theme.warn("problem:"),
            p["file"].as_str().unwrap_or("?"),
            p["error"].as_str().unwrap_or("?")
        )?;
    }
    if let Some(n) = s.notify.as_ref().filter(|n| !n["error"].is_null()) {
        writeln!(
            out,
            "{} the [notify] command failed on {}: {} (the journal's notify event has its output)",
            theme.warn("notify:"),
            n["on"].as_str().unwrap_or("?"),
            n["error"].as_str().unwrap_or("?")
        )?;
    }
    if !s.skipped_lines.is_empty() {
        writeln!(
            out,
            "{} skipped damaged journal lines {:?}",
            theme.warn("note:"),
            s.skipped_lines
        )?;
    }
    for line in s.unknown_events.iter().flat_map(UnknownEvents::describe) {
        writeln!(out, "{} {line}", theme.warn("note:"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_journal_line_being_written_is_found_as_the_unterminated_last_line() {
        let f = tempfile::NamedTempFile::new().unwrap();
        let line = |name| crate::longrun::event::newer_fixture(name, json!({})).to_string() + "\n";
        let two = line("a") + &line("b");
        std::fs::write(f.path(), &two).unwrap();
        assert_eq!(unterminated_last_line(f.path()), None);
        std::fs::write(f.path(), two + "{\"ts\":\"2026").unwrap();
        assert_eq!(unterminated_last_line(f.path()), Some(3));
        assert_eq!(unterminated_last_line(Path::new("/nonexistent/journal.jsonl")), None);
    }

    #[test]
    fn next_action_is_found_under_a_heading_or_after_a_label() {
        let cases = [
            (
                "# Progress\n## Next action\n<!-- what comes next -->\n\n- write the parser\n",
                Some("write the parser"),
            ),
            ("Done: a\nNext action: run the benchmark\n", Some("run the benchmark")),
            ("- **Next action:** fix test 3\n", Some("fix test 3")),
            ("## Next action\n<!-- fill in -->\n", None),
            ("## Next action\n(The one concrete step to take next.)\n", None),
            ("nothing here\n", None),
        ];
        for (text, want) in cases {
            let f = tempfile::NamedTempFile::new().unwrap();
            std::fs::write(f.path(), text).unwrap();
            assert_eq!(next_action(f.path()).unwrap().as_deref(), want, "{text}");
        }
    }
}
