//! `kit race`: several loops on the same goal, each in a git worktree of its own, racing to a
//! proven done (issue 24). What makes it a race worth running is what `kit loop` already
//! demands of done (DESIGN §6): every criterion passing on a verified tree, the confirm runs, the
//! canary and the revert probe. The first lane whose loop ends `done` wins; the others are
//! stopped.
//!
//! A race, in order:
//! 1. take the user's `longrun/.lock` (a race and a loop never run in the same project at once;
//!    held → exit 4), load the goal and config (a bad one exits 2 before anything is made), and
//!    check each lane's `--agent` as `kit loop` would.
//! 2. from HEAD (the race needs a commit; uncommitted changes outside `longrun/` are not in the
//!    lanes), make one worktree per lane on its own branch `kit/race/<run>/<lane>`, under
//!    `<git common dir>/kit/race/<run>/lane-<lane>` (inside the git folder: the user's work tree
//!    sees nothing), and copy the user's `longrun/` into it (not its journal, lock, runs, inbox
//!    or PAUSE: each lane journals its own run). Journal `race_start` in the user's journal.
//! 3. start a real `kit loop --agent AGENT` (kit's own executable) in each lane, in a process
//!    group of its own, its output in `<race dir>/lane-<lane>.log`. Each lane has its own lock,
//!    journal and iteration cap; the **cost and wall caps are the race's**: every lane loop gets
//!    the race's wall cap (they run side by side), and the race sums the lanes' cost from their
//!    journals (every `agent_end`'s priced usage) and stops every lane when the sum reaches its
//!    cap (each lane's loop also holds config.toml's cost cap inside its own iterations, so the
//!    race may pass its cap by what the running iterations spend before their `agent_end`).
//! 4. the first lane whose loop exits with `done` in its journal wins (`lane_end` `won`); the
//!    others are stopped: SIGTERM to their loop (which ends its agent's process group as at a
//!    timeout, restores the frozen files and journals `interrupted`), SIGKILL after config.toml's
//!    grace plus 30 s (and the agent group the lane's journal names). A lane whose loop ends
//!    otherwise (its iteration cap, an error) is out, with its loop's outcome.
//! 5. the winner's work outside `longrun/` is committed on its branch. With `--merge` it is
//!    merged into the user's branch only if HEAD is still that branch at the commit the race
//!    began from (a fast-forward, or a merge commit), never a force; otherwise the exact `git
//!    merge` to run is printed. Journal `race_end`. The worktrees stay for inspection until `kit
//!    race clean`.
//!
//! Exit status: 0 a lane won, 3 none did (every lane ended without done, or a race cap), 6 none
//! did and one or more lanes stopped `needs_you` (a decision only a person makes: the race prints
//! the `kit -C LANE approve N` that answers each, and `kit race` then continues the race), 4 the
//! project's lock is held, 2 bad flags, goal or config, 130 stopped by hand (Ctrl-C, SIGTERM:
//! every lane is stopped first).
//!
//! `--merge` is part of the race (`race_start`'s `merge`): a resumed race merges its winner when
//! the first or the resuming command asked for it.
//!
//! **Resume.** The race's state is the user's journal (`race_start` names every lane) and each
//! lane's own journal. `kit race` (or `kit race --resume`) after a killed race continues it: a
//! lane with a `lane_end` stays ended; a lane whose loop still runs (its lock's live holder) is
//! adopted and watched; a lane whose loop ended while no race watched is judged by its journal
//! (done wins, earliest first); any other lane is continued with `kit loop`, which continues its
//! killed run (and ends what a killed loop left of its agent's process group). A race that ended
//! `needs_you` is continued the same way: each lane that waited for a person and whose decisions
//! are all answered is continued by a new `kit loop` (done after an approval); one still waiting
//! ends `needs_you` again.

mod git;
pub mod lane;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::{Error, IoContext, Result, EXIT_CAP, EXIT_NEEDS_YOU, EXIT_OK};
use crate::longrun::config::Config;
use crate::longrun::event::{Event, LaneEnd, RaceCaps, RaceEnd, RaceLane, RaceStart};
use crate::longrun::history::History;
use crate::longrun::journal::Journal;
use crate::longrun::{lock, Project};
use crate::looprun::LoopOptions;
use crate::signals::{Stop, EXIT_INTERRUPTED};
use crate::units::format_duration;

use crate::longrun::race::{self as view, lane_decisions, live_loop, LaneState, NEEDS_YOU};
pub use git::{lane_branch, races_dir};
use lane::{LoopFlags, Worker};

/// Most lanes one race may have.
pub const MAX_LANES: u32 = 16;

/// `kit race`'s options, from the command line.
#[derive(Clone, Debug, Default)]
pub struct RaceOptions {
    /// Lanes (default: one per `--agent`).
    pub lanes: Option<u32>,
    /// Agents, one per lane; one agent with `--lanes N` runs in every lane.
    pub agents: Vec<String>,
    /// Merge the winner's branch into the user's branch when it has not moved.
    pub merge: bool,
    /// Only continue an unfinished race.
    pub resume: bool,
    /// Iterations per lane.
    pub max_iterations: Option<u32>,
    /// Timeout of one agent iteration.
    pub timeout: Option<Duration>,
    /// Memory cap of each lane's agent, bytes.
    pub memory_max: Option<u64>,
    /// The race's wall cap (default: the loop's, from config.toml and goal.md's budget).
    pub max_wall: Option<Duration>,
    /// The race's cost cap, USD summed over the lanes (default: the loop's).
    pub max_cost: Option<f64>,
}

impl RaceOptions {
    /// The agent of each lane, from `--lanes` and `--agent` (`configured` when no `--agent`).
    ///
    /// Errors: [`Error::Usage`] for no lanes, too many, or a count that differs from the agents.
    fn lane_agents(&self, configured: &str) -> Result<Vec<String>> {
        let usage = |m: String| Error::usage(m).with_hint("kit race --help");
        let agents = match (self.lanes, self.agents.len()) {
            (Some(0), _) => return Err(usage("--lanes 0: a race needs at least one lane".into())),
            (Some(n), 0) => vec![configured.to_string(); n as usize],
            (Some(n), 1) => vec![self.agents[0].clone(); n as usize],
            (Some(n), k) if n as usize != k => {
                return Err(usage(format!(
                    "--lanes {n} with {k} --agent flags: give one agent per lane, or one agent for every lane"
                )))
            }
            (_, 0) => {
                return Err(usage(
                    "a race needs its lanes: --lanes N, or one --agent per lane".into(),
                ))
            }
            _ => self.agents.clone(),
        };
        if agents.len() > MAX_LANES as usize {
            return Err(usage(format!("{} lanes: at most {MAX_LANES}", agents.len())));
        }
        Ok(agents)
    }

    /// Options that start a race (rather than continue one).
    fn starts_race(&self) -> bool {
        self.lanes.is_some() || !self.agents.is_empty()
    }
}

/// `kit race …`: start a race (or continue the unfinished one) and run it to its end.
///
/// Errors: [`Error::Usage`] (exit 2) for bad flags, a missing commit or a race left unfinished
/// when a new one is asked for; [`Error::Input`] for a bad goal or config; [`Error::Locked`]
/// (exit 4) when a loop or race holds the project's lock; [`Error::Io`]/[`Error::Internal`]
/// when git or the files fail.
pub fn run(cwd: &Path, opts: &RaceOptions, out: &mut dyn Write) -> Result<u8> {
    let project = Project::discover_initialised(cwd)?;
    if opts.max_cost.is_some_and(|c| !(c > 0.0 && c.is_finite())) {
        return Err(Error::usage("--max-cost: caps may not be off; give a value above 0")
            .with_hint("kit race --help"));
    }
    // Before any thread or child: Ctrl-C and SIGTERM are read, not fatal.
    let stop = Stop::install();
    let (_held, _previous) = lock::acquire(&project.lock(), &lock::Holder::current())?;
    if let Some(h) = crate::longrun::running_loop(&project) {
        if h.pid != std::process::id() {
            return Err(Error::Locked { path: project.lock(), holder: h.describe() });
        }
    }
    let history = History::read(&project.journal())?;
    let open = view::open_race(&history);
    let cfg = Config::load(&project.config())?;
    let goal = crate::goal::load(&project)?;
    let planned = crate::longrun::caps::planned_caps(&cfg, &goal.budget)?;
    let patience = cfg.grace() + Duration::from_secs(30);
    let mut race = match open {
        Some((start, ended)) => {
            if opts.starts_race() {
                return Err(Error::usage(format!(
                    "race {} is unfinished: it continues with kit race --resume; kit race clean drops it",
                    start.run
                ))
                .with_hint("kit race --resume"));
            }
            Race::resume(project, start, ended, opts, out)?
        }
        None if opts.resume => {
            return Err(Error::usage("no unfinished race to resume in this project")
                .with_hint("kit race --agent A --agent B"))
        }
        None => {
            let agents = opts.lane_agents(&cfg.agent.command)?;
            for a in &agents {
                let lo = LoopOptions {
                    agent: Some(a.clone()),
                    max_iterations: opts.max_iterations,
                    timeout: opts.timeout,
                    memory_max: opts.memory_max,
                    max_wall: opts.max_wall,
                    ..LoopOptions::default()
                };
                // The flags are the race's: its help, not the loop's, says what they take.
                lo.check(&project.root).map_err(|e| match e.hint() {
                    Some("kit loop --help") => e.with_hint("kit race --help"),
                    _ => e,
                })?;
            }
            let caps = RaceCaps {
                cost_usd: opts.max_cost.unwrap_or(planned.cost_usd),
                wall_s: opts.max_wall.unwrap_or(planned.wall).as_secs_f64(),
                iterations: opts.max_iterations,
            };
            Race::start(project, &history, agents, caps, opts, out)?
        }
    };
    race.patience = patience;
    race.supervise(&stop)
}

/// A race being run by this process.
struct Race<'a> {
    project: Project,
    journal: Journal,
    out: &'a mut dyn Write,
    start: RaceStart,
    flags: LoopFlags,
    merge: bool,
    slots: Vec<Slot>,
    /// Wall time the race spent in earlier race processes (the longest lane's run).
    wall_before: Duration,
    began: Instant,
    patience: Duration,
    winner: Option<usize>,
}

/// One lane while the race runs.
struct Slot {
    lane: RaceLane,
    worker: Option<Worker>,
    /// Its `lane_end`, once journaled.
    ended: Option<LaneEnd>,
    /// Asked to stop, and why.
    stopping: Option<String>,
    /// Its last `lane_end` was `needs_you` (a race continued after a person answered): its run
    /// is continued by a new loop rather than judged again by its journal.
    asked: bool,
}

impl<'a> Race<'a> {
    /// Make the lanes of a new race and journal `race_start`.
    fn start(
        project: Project,
        history: &History,
        agents: Vec<String>,
        caps: RaceCaps,
        opts: &RaceOptions,
        out: &'a mut dyn Write,
    ) -> Result<Race<'a>> {
        let root = project.root.clone();
        let base =
            git::git_opt(&root, &["rev-parse", "--verify", "-q", "HEAD"]).ok_or_else(|| {
                Error::usage("the lanes start from a commit, and this repository has none yet")
                    .with_hint("git add -A && git commit -m start, then kit race again")
            })?;
        let branch = git::git_opt(&root, &["symbolic-ref", "--short", "-q", "HEAD"]);
        let left_out = git::uncommitted(&root);
        let run = view::race_runs(history) + 1;
        let dir = races_dir(&root)?.join(run.to_string());
        crate::atomic::create_dir_all(&dir)?;
        let mut lanes = Vec::new();
        for (i, agent) in agents.iter().enumerate() {
            let n = i as u32 + 1;
            let path = dir.join(format!("lane-{n}"));
            let b = lane_branch(run, n);
            git::add_worktree(&root, &path, &b, &base)?;
            git::copy_longrun(&project.dir, &Project::at(&path).dir)?;
            lanes.push(RaceLane {
                lane: n,
                agent: agent.clone(),
                branch: b,
                path: path.to_string_lossy().into_owned(),
            });
        }
        let me = lock::Holder::current();
        let start = RaceStart {
            run,
            resumed: false,
            base: base.clone(),
            branch: branch.clone(),
            lanes,
            caps,
            merge: opts.merge,
            pid: me.pid,
            host: me.host,
            command: me.command,
        };
        let journal = Journal::new(project.journal());
        journal.append(&Event::RaceStart(start.clone()))?;
        let mut race = Race::new(project, journal, start, opts, out);
        race.say(format!(
            "race: run {run}, {} lane{} from {} at {}; caps for the race: cost ${:.2}, wall {}{}",
            race.slots.len(),
            if race.slots.len() == 1 { "" } else { "s" },
            branch.as_deref().unwrap_or("a detached HEAD"),
            git::short(&base),
            race.start.caps.cost_usd,
            format_duration(Duration::from_secs_f64(race.start.caps.wall_s)),
            race.start
                .caps
                .iterations
                .map_or(String::new(), |n| format!("; iterations {n} per lane")),
        ));
        if !left_out.is_empty() {
            const SHOWN: usize = 5;
            let mut names = left_out.iter().take(SHOWN).cloned().collect::<Vec<_>>().join(", ");
            if left_out.len() > SHOWN {
                names.push_str(&format!(" and {} more", left_out.len() - SHOWN));
            }
            race.say(format!(
                "race: the lanes start from {}: your uncommitted changes are not in them ({names}); \
                 commit them and race again to include them",
                git::short(&base)
            ));
        }
        Ok(race)
    }

    /// Continue an unfinished race: journal `race_start` with `resumed`.
    fn resume(
        project: Project,
        first: RaceStart,
        ended: Vec<LaneEnd>,
        opts: &RaceOptions,
        out: &'a mut dyn Write,
    ) -> Result<Race<'a>> {
        let me = lock::Holder::current();
        // A race asked to merge keeps asking when it is resumed, with or without --merge.
        let merge = opts.merge || first.merge;
        let start = RaceStart {
            resumed: true,
            merge,
            pid: me.pid,
            host: me.host,
            command: me.command,
            ..first.clone()
        };
        let journal = Journal::new(project.journal());
        journal.append(&Event::RaceStart(start.clone()))?;
        let mut race = Race::new(project, journal, first, opts, out);
        race.merge = merge;
        for e in ended {
            if let Some(s) = race.slots.iter_mut().find(|s| s.lane.lane == e.lane) {
                if e.outcome == NEEDS_YOU {
                    s.asked = true;
                    continue;
                }
                if e.outcome == "won" {
                    race.winner = Some(s.lane.lane as usize - 1);
                }
                s.ended = Some(e);
            }
        }
        race.wall_before = race
            .slots
            .iter()
            .filter_map(|s| LaneState::read(Path::new(&s.lane.path)).ok())
            .map(|st| Duration::from_secs_f64(st.wall_s.max(0.0)))
            .max()
            .unwrap_or_default();
        race.say(format!(
            "race: continuing run {} ({} lane{}, {} ended)",
            race.start.run,
            race.slots.len(),
            if race.slots.len() == 1 { "" } else { "s" },
            race.slots.iter().filter(|s| s.ended.is_some()).count()
        ));
        Ok(race)
    }

    fn new(
        project: Project,
        journal: Journal,
        start: RaceStart,
        opts: &RaceOptions,
        out: &'a mut dyn Write,
    ) -> Race<'a> {
        let flags = LoopFlags {
            max_iterations: start.caps.iterations,
            timeout: opts.timeout,
            memory_max: opts.memory_max,
            max_wall: Duration::from_secs_f64(start.caps.wall_s.max(1.0)),
        };
        let slots = start
            .lanes
            .iter()
            .map(|l| Slot {
                lane: l.clone(),
                worker: None,
                ended: None,
                stopping: None,
                asked: false,
            })
            .collect();
        Race {
            project,
            journal,
            out,
            start,
            flags,
            merge: opts.merge,
            slots,
            wall_before: Duration::ZERO,
            began: Instant::now(),
            patience: Duration::from_secs(40),
            winner: None,
        }
    }

    fn say(&mut self, line: impl AsRef<str>) {
        let _ = writeln!(self.out, "{}", line.as_ref());
        let _ = self.out.flush();
    }

    fn race_dir(&self) -> PathBuf {
        Path::new(&self.start.lanes[0].path).parent().map(Path::to_path_buf).unwrap_or_default()
    }

    fn log_of(&self, lane: u32) -> PathBuf {
        self.race_dir().join(format!("lane-{lane}.log"))
    }

    /// Start, adopt or judge every lane not ended, then watch them until a winner, a cap, a
    /// stop request or the last lane's end.
    fn supervise(&mut self, stop: &Stop) -> Result<u8> {
        // Lanes that need no new loop: ended, running, or finished while no race watched.
        let mut finished: Vec<(String, usize)> = Vec::new();
        for i in 0..self.slots.len() {
            if self.slots[i].ended.is_some() {
                continue;
            }
            let path = PathBuf::from(&self.slots[i].lane.path);
            if let Some(h) = live_loop(&path) {
                let (n, pid) = (self.slots[i].lane.lane, h.pid);
                self.slots[i].worker = Some(Worker::Adopted(h));
                self.say(format!("race: lane {n}: adopted its running loop (pid {pid})"));
                continue;
            }
            let st = LaneState::read(&path)?;
            if let Some((outcome, _)) = &st.end {
                // A lane that waited for a person goes on once every decision is answered.
                let answered =
                    self.slots[i].asked && outcome == NEEDS_YOU && lane_decisions(&path).is_empty();
                if is_final(outcome) && !answered {
                    finished.push((st.ended_at.clone(), i));
                }
            }
        }
        finished.sort();
        for (_, i) in finished {
            self.on_exit(i)?;
        }
        for i in 0..self.slots.len() {
            let s = &self.slots[i];
            if s.ended.is_some() || s.worker.is_some() {
                continue;
            }
            if let Some(w) = self.winner {
                let why = format!("lane {} won", w + 1);
                self.slots[i].stopping = Some(why);
                self.on_exit(i)?;
                continue;
            }
            let lane = s.lane.clone();
            let child = lane::spawn(&lane, &self.flags, &self.log_of(lane.lane))?;
            let resumed = LaneState::read(Path::new(&lane.path))?.started;
            self.say(format!(
                "race: lane {} `{}`: {} loop (pid {}) in {} on {}",
                lane.lane,
                lane.agent,
                if resumed { "continued its run with a new" } else { "started its" },
                child.id(),
                lane.path,
                lane.branch
            ));
            self.slots[i].worker = Some(Worker::Child(child));
        }
        let mut last_cost_check = Instant::now() - Duration::from_secs(1);
        let mut outcome: Option<(&'static str, String)> = None;
        loop {
            if let Some(sig) = stop.requested() {
                let why = format!("kit race was stopped by {sig:?}");
                self.say(format!("race: {why}; stopping every lane"));
                self.stop_lanes(&why)?;
                outcome = Some(("interrupted", why));
                break;
            }
            for i in 0..self.slots.len() {
                let exited = self.slots[i].worker.as_mut().is_some_and(Worker::exited);
                if exited {
                    self.slots[i].worker = None;
                    self.on_exit(i)?;
                }
            }
            if let Some(w) = self.winner {
                let why = format!("lane {} won", w + 1);
                self.stop_lanes(&why)?;
                break;
            }
            if self.slots.iter().all(|s| s.ended.is_some()) {
                break;
            }
            if last_cost_check.elapsed() >= Duration::from_millis(250) {
                last_cost_check = Instant::now();
                let cost = self.cost();
                let wall = self.wall_before + self.began.elapsed();
                let cap = Duration::from_secs_f64(self.start.caps.wall_s);
                let why = if cost >= self.start.caps.cost_usd {
                    Some(format!(
                        "the race's cost cap is reached (${cost:.2} of ${:.2} over its lanes)",
                        self.start.caps.cost_usd
                    ))
                } else if wall >= cap {
                    Some(format!("the race's wall cap is reached ({})", format_duration(cap)))
                } else {
                    None
                };
                if let Some(why) = why {
                    self.say(format!("race: {why}; stopping every lane"));
                    self.stop_lanes(&why)?;
                    outcome = Some(("cap", why));
                    break;
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.finish(outcome)
    }

    /// The lanes' runs' cost, summed.
    fn cost(&self) -> f64 {
        self.slots
            .iter()
            .map(|s| match &s.ended {
                Some(e) => e.cost_usd,
                None => LaneState::read(Path::new(&s.lane.path)).map_or(0.0, |st| st.cost_usd),
            })
            .sum()
    }

    /// Stop every lane still running, `why` the reason journaled for each.
    fn stop_lanes(&mut self, why: &str) -> Result<()> {
        let patience = self.patience;
        let mut running: Vec<(usize, &mut Worker, PathBuf)> = Vec::new();
        for (i, s) in self.slots.iter_mut().enumerate() {
            if s.ended.is_some() {
                continue;
            }
            s.stopping = Some(why.to_string());
            if let Some(w) = s.worker.as_mut() {
                running.push((i, w, PathBuf::from(&s.lane.path)));
            }
        }
        let killed = lane::stop_all(&mut running, patience);
        for i in 0..self.slots.len() {
            if self.slots[i].ended.is_none() {
                self.slots[i].worker = None;
                if killed.contains(&i) {
                    let n = self.slots[i].lane.lane;
                    self.say(format!(
                        "race: lane {n}: its loop outlived SIGTERM by {}; killed its process groups",
                        format_duration(patience)
                    ));
                }
                self.on_exit(i)?;
            }
        }
        Ok(())
    }

    /// A lane's loop has exited (or was found ended): judge it from its journal, journal
    /// `lane_end` and say it.
    fn on_exit(&mut self, i: usize) -> Result<()> {
        let lane = self.slots[i].lane.clone();
        let st = LaneState::read(Path::new(&lane.path))?;
        let (loop_outcome, loop_reason) = st
            .end
            .clone()
            .unwrap_or_else(|| ("killed".into(), "its loop ended without a loop_end".into()));
        let (outcome, reason) = if loop_outcome == "done" && self.winner.is_none() {
            self.winner = Some(i);
            ("won".to_string(), loop_reason.clone())
        } else if let Some(why) = &self.slots[i].stopping {
            ("stopped".to_string(), why.clone())
        } else {
            (loop_outcome.clone(), loop_reason.clone())
        };
        let end = LaneEnd {
            run: self.start.run,
            lane: lane.lane,
            agent: lane.agent.clone(),
            outcome: outcome.clone(),
            loop_outcome,
            reason: reason.clone(),
            iterations: st.iteration,
            passed: st.passed,
            total: st.total,
            reverts: st.reverts,
            cost_usd: st.cost_usd,
        };
        self.journal.append(&Event::LaneEnd(end.clone()))?;
        self.slots[i].ended = Some(end);
        let reverts = match st.reverts {
            0 => String::new(),
            1 => "; 1 frozen-file revert".into(),
            n => format!("; {n} frozen-file reverts"),
        };
        let verb = match outcome.as_str() {
            "won" => "won".to_string(),
            "stopped" => "stopped".to_string(),
            NEEDS_YOU => "waits for a person".to_string(),
            o => format!("out ({o})"),
        };
        self.say(format!("race: lane {} `{}` {verb}: {reason}{reverts}", lane.lane, lane.agent));
        Ok(())
    }

    /// Commit and merge the winner, journal `race_end`, print the lanes and the last line.
    fn finish(&mut self, stopped: Option<(&'static str, String)>) -> Result<u8> {
        let mut end = RaceEnd {
            run: self.start.run,
            cost_usd: self.slots.iter().filter_map(|s| s.ended.as_ref()).map(|e| e.cost_usd).sum(),
            wall_s: self.began.elapsed().as_secs_f64(),
            ..RaceEnd::default()
        };
        let mut lines = Vec::new();
        let code = match (self.winner, stopped) {
            (Some(w), _) => {
                let lane = self.slots[w].lane.clone();
                let e = self.slots[w].ended.clone().unwrap_or_default();
                let msg = format!(
                    "kit race {}: lane {} (`{}`) is done\n\n{}\n",
                    self.start.run, lane.lane, lane.agent, e.reason
                );
                let commit = git::commit_work(Path::new(&lane.path), &msg)?;
                end.outcome = "won".into();
                end.winner = Some(lane.lane);
                end.branch = Some(lane.branch.clone());
                end.commit = Some(commit.clone());
                end.reason = format!("lane {} (`{}`) is done: {}", lane.lane, lane.agent, e.reason);
                lines.push(format!(
                    "race: lane {}'s work is commit {} on {}",
                    lane.lane,
                    git::short(&commit),
                    lane.branch
                ));
                let manual = format!("git merge {}", lane.branch);
                if self.merge {
                    match git::merge(
                        &self.project.root,
                        self.start.branch.as_deref(),
                        &self.start.base,
                        &lane.branch,
                    ) {
                        git::Merge::Done(how, head) => {
                            end.merged = Some(how.to_string());
                            lines.push(format!(
                                "race: merged {} into {} ({how}, now {})",
                                lane.branch,
                                self.start.branch.as_deref().unwrap_or("HEAD"),
                                git::short(&head)
                            ));
                        }
                        git::Merge::Refused(why) => {
                            lines.push(format!("race: not merged: {why}; to merge it: {manual}"))
                        }
                    }
                } else {
                    lines.push(format!(
                        "race: to merge it: {manual} (or kit race --merge next time)"
                    ));
                }
                EXIT_OK
            }
            (None, Some((name, why))) => {
                end.outcome = name.into();
                end.reason = why;
                if name == "interrupted" {
                    EXIT_INTERRUPTED
                } else {
                    EXIT_CAP
                }
            }
            (None, None) => {
                let asking: Vec<RaceLane> = self
                    .slots
                    .iter()
                    .filter(|s| s.ended.as_ref().is_some_and(|e| e.outcome == NEEDS_YOU))
                    .map(|s| s.lane.clone())
                    .collect();
                if asking.is_empty() {
                    end.outcome = "no_winner".into();
                    end.reason = "every lane ended without done".into();
                    EXIT_CAP
                } else {
                    let names: Vec<String> = asking.iter().map(|l| l.lane.to_string()).collect();
                    end.outcome = NEEDS_YOU.into();
                    end.reason = format!(
                        "no lane is done; lane{} {} wait{} for a person",
                        if asking.len() == 1 { "" } else { "s" },
                        names.join(", "),
                        if asking.len() == 1 { "s" } else { "" },
                    );
                    for l in &asking {
                        for d in lane_decisions(Path::new(&l.path)) {
                            lines.push(format!(
                                "race: lane {} `{}` needs you: {d}",
                                l.lane, l.agent
                            ));
                        }
                    }
                    EXIT_NEEDS_YOU
                }
            }
        };
        // What a lane's agent planted in git lives in the repository all lanes share: the
        // lane's loop journaled it; say it here too, since your git runs it.
        for slot in &self.slots {
            let lane = Project::at(Path::new(&slot.lane.path));
            let Ok(h) = History::read(&lane.journal()) else { continue };
            let planted = crate::longrun::decisions::planted_git_settings(&lane, &h);
            if !planted.is_empty() {
                lines.push(format!(
                    "race: lane {}: git settings appeared during its run and outlive it: {}; your \
                     git runs them (kit's does not): check .git/config and .git/hooks",
                    slot.lane.lane,
                    planted.join(", ")
                ));
            }
        }
        self.journal.append(&Event::RaceEnd(end.clone()))?;
        let table = view::lanes_table(
            &self.start.lanes,
            &self.slots.iter().map(|s| s.ended.clone()).collect::<Vec<_>>(),
        );
        for l in table.lines() {
            self.say(l);
        }
        for l in lines {
            self.say(l);
        }
        let clean = "the lanes' worktrees stay until kit race clean";
        self.say(match end.outcome.as_str() {
            "won" => format!("won: {}; {clean}", end.reason),
            "interrupted" => {
                format!("interrupted: {}; kit race --resume continues the race", end.reason)
            }
            "cap" => format!("cap: {}; no lane reached done; {clean}", end.reason),
            NEEDS_YOU => format!(
                "needs_you: {}: answer each decision above, then kit race continues the race",
                end.reason
            ),
            _ => format!("no winner: {}; {clean}", end.reason),
        });
        Ok(code)
    }
}

/// A lane loop outcome that ends the lane for good (the others leave a run to continue).
fn is_final(outcome: &str) -> bool {
    !matches!(outcome, "interrupted" | "paused" | "killed")
}

/// `kit race clean`: remove the worktrees and branches of every ended race (an unfinished race
/// whose lanes no longer run is ended first, `race_end` `abandoned`).
///
/// Errors: [`Error::Locked`] while a race or loop holds the project's lock; [`Error::Usage`]
/// while a lane's loop still runs; [`Error::Internal`] when git fails.
pub fn clean(cwd: &Path, out: &mut dyn Write) -> Result<u8> {
    let project = Project::discover_initialised(cwd)?;
    let (_held, _previous) = lock::acquire(&project.lock(), &lock::Holder::current())?;
    let history = History::read(&project.journal())?;
    let o = Path::new("stdout");
    if let Some((start, _)) = view::open_race(&history) {
        for l in &start.lanes {
            if let Some(h) = live_loop(Path::new(&l.path)) {
                return Err(Error::usage(format!(
                    "lane {} of race {} still runs ({})",
                    l.lane,
                    start.run,
                    h.describe()
                ))
                .with_hint("kit race --resume, or stop that loop, then kit race clean"));
            }
        }
        Journal::new(project.journal()).append(&Event::RaceEnd(RaceEnd {
            run: start.run,
            outcome: "abandoned".into(),
            reason: "kit race clean dropped the unfinished race".into(),
            ..RaceEnd::default()
        }))?;
        writeln!(out, "clean: race {} was unfinished: ended it (abandoned)", start.run).at(o)?;
    }
    let mut removed = 0;
    for start in view::race_starts(&history) {
        for l in &start.lanes {
            let path = Path::new(&l.path);
            let had = path.exists()
                || git::git_opt(
                    &project.root,
                    &["rev-parse", "--verify", "-q", &format!("refs/heads/{}", l.branch)],
                )
                .is_some();
            git::remove_lane(&project.root, path, &l.branch)?;
            if had {
                removed += 1;
            }
        }
    }
    let dir = races_dir(&project.root)?;
    if dir.exists() {
        std::fs::remove_dir_all(&dir).at(&dir)?;
    }
    writeln!(
        out,
        "clean: removed {removed} lane{} (worktree and branch); the journal keeps the races",
        if removed == 1 { "" } else { "s" }
    )
    .at(o)?;
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_come_from_the_agents_and_the_count() {
        let o = |lanes: Option<u32>, agents: &[&str]| RaceOptions {
            lanes,
            agents: agents.iter().map(|a| a.to_string()).collect(),
            ..RaceOptions::default()
        };
        let ok = |r: Result<Vec<String>>| r.unwrap().join(" ");
        assert_eq!(ok(o(None, &["a", "b"]).lane_agents("cfg")), "a b");
        assert_eq!(ok(o(Some(3), &["a"]).lane_agents("cfg")), "a a a");
        assert_eq!(ok(o(Some(2), &[]).lane_agents("cfg")), "cfg cfg");
        assert_eq!(ok(o(Some(2), &["a", "b"]).lane_agents("cfg")), "a b");
        for (lanes, agents, says) in [
            (None, &[][..], "a race needs its lanes"),
            (Some(0), &["a"][..], "--lanes 0"),
            (Some(3), &["a", "b"][..], "--lanes 3 with 2 --agent flags"),
            (Some(17), &[][..], "17 lanes: at most 16"),
        ] {
            let e = o(lanes, agents).lane_agents("cfg").unwrap_err();
            assert_eq!(e.exit_code(), 2);
            assert!(e.to_string().contains(says), "{e}");
        }
    }
}
