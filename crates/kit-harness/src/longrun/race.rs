//! A race as the journals show it: the user's journal (its `race_start`, `lane_end`,
//! `race_end`) and each lane's own. For `kit race` itself (the unfinished race to continue),
//! `kit status` (every lane while a race runs and after) and `kit report` (the lanes side by
//! side): the state layer's reading, so that reports see a race without importing its runner.

use std::path::Path;

use serde::Serialize;

use crate::error::Result;
use crate::longrun::event::{Event, LaneEnd, RaceEnd, RaceLane, RaceStart};
use crate::longrun::history::History;
use crate::longrun::{durable, lock, Project};

/// The first `race_start` of each race in the journal, in order.
pub fn race_starts(h: &History) -> Vec<RaceStart> {
    let mut out: Vec<RaceStart> = Vec::new();
    for e in &h.entries {
        if let Event::RaceStart(s) = &e.event {
            if !out.iter().any(|o| o.run == s.run) {
                out.push(s.clone());
            }
        }
    }
    out
}

/// The highest race number in the journal (0: none).
pub fn race_runs(h: &History) -> u64 {
    race_starts(h).iter().map(|s| s.run).max().unwrap_or(0)
}

/// The last race if it has not finished: its first `race_start` and each lane's last `lane_end`
/// so far (in lane order). A race is finished by a `race_end` other than `needs_you`: a race that
/// ended waiting for a person continues with `kit race` once the lanes' decisions are answered.
pub fn open_race(h: &History) -> Option<(RaceStart, Vec<LaneEnd>)> {
    let start = race_starts(h).into_iter().last()?;
    let mut ends: Vec<LaneEnd> = Vec::new();
    for e in &h.entries {
        match &e.event {
            Event::RaceEnd(r) if r.run == start.run && r.outcome != NEEDS_YOU => return None,
            Event::LaneEnd(l) if l.run == start.run => {
                ends.retain(|x| x.lane != l.lane);
                ends.push(l.clone());
            }
            _ => {}
        }
    }
    ends.sort_by_key(|e| e.lane);
    Some((start, ends))
}

/// The outcome of a lane (its loop stopped for a decision only a person makes) and of a race
/// (no lane won and one or more wait for a person): not final, `kit race` continues it.
pub const NEEDS_YOU: &str = "needs_you";

/// The decisions waiting for a person in the lane whose worktree is `path`, one line each with
/// the commands that answer it from anywhere: `#1 goal.md:14 (human: …) waits for your
/// approval; kit -C PATH approve 1 (or kit -C PATH reject 1 --note WHY)`.
pub fn lane_decisions(path: &Path) -> Vec<String> {
    let Ok(h) = History::read(&Project::at(path).journal()) else {
        return Vec::new();
    };
    let all = crate::longrun::decisions::decisions(&h.entries);
    let kit = format!("kit -C {}", path.display());
    let mut out = Vec::new();
    for (i, d) in all.iter().enumerate() {
        if crate::longrun::decisions::superseded(&all, i) || d.answer.is_some() {
            continue;
        }
        let n = d.number;
        let what = d.what();
        out.push(format!("#{n} {what}; {kit} approve {n} (or {kit} reject {n} --note WHY)"));
    }
    out
}

/// One lane as `kit status` and `kit report` show it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LaneView {
    /// 1-based.
    pub lane: u32,
    /// Its agent spec.
    pub agent: String,
    /// Its branch.
    pub branch: String,
    /// Its worktree.
    pub path: String,
    /// The highest iteration started.
    pub iteration: u64,
    /// Criteria passing at the last check.
    pub passed: u64,
    /// Criteria in all (0: not checked yet).
    pub total: u64,
    /// Frozen-file reverts.
    pub reverts: u64,
    /// USD.
    pub cost_usd: f64,
    /// `won`, `stopped`, a loop outcome, or `running` / `waiting` (no loop alive, the race
    /// unfinished) before its `lane_end`.
    pub outcome: String,
    /// Why, in words (empty while it runs).
    pub reason: String,
}

/// The last race of a journal, with every lane.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RaceView {
    /// The race's number.
    pub run: u64,
    /// The branch and commit it began from.
    pub branch: Option<String>,
    /// The commit.
    pub base: String,
    /// Its caps.
    pub cost_cap_usd: f64,
    /// Wall cap, seconds.
    pub wall_cap_s: f64,
    /// The lanes.
    pub lanes: Vec<LaneView>,
    /// Its `race_end`, once ended.
    pub end: Option<RaceEnd>,
}

/// The last race in `h` (None: the project never raced). Lanes not ended are read from their
/// own journals (a lane whose worktree was cleaned reads as not started).
pub fn last_race(h: &History) -> Option<RaceView> {
    let start = race_starts(h).into_iter().last()?;
    let mut ends: Vec<LaneEnd> = Vec::new();
    let mut end = None;
    for e in &h.entries {
        match &e.event {
            Event::LaneEnd(l) if l.run == start.run => {
                ends.retain(|x| x.lane != l.lane);
                ends.push(l.clone());
            }
            Event::RaceEnd(r) if r.run == start.run => end = Some(r.clone()),
            // A race that waited for a person, continued: its waiting lanes run again.
            Event::RaceStart(s) if s.run == start.run && s.resumed && end.is_some() => {
                end = None;
                ends.retain(|x| x.outcome != NEEDS_YOU);
            }
            _ => {}
        }
    }
    let lanes = start
        .lanes
        .iter()
        .map(|l| match ends.iter().find(|e| e.lane == l.lane) {
            Some(e) => from_end(l, e),
            None => {
                let st = LaneState::read(Path::new(&l.path)).unwrap_or_default();
                let alive = live_loop(Path::new(&l.path)).is_some();
                LaneView {
                    lane: l.lane,
                    agent: l.agent.clone(),
                    branch: l.branch.clone(),
                    path: l.path.clone(),
                    iteration: st.iteration,
                    passed: st.passed,
                    total: st.total,
                    reverts: st.reverts,
                    cost_usd: st.cost_usd,
                    outcome: if alive { "running" } else { "waiting" }.into(),
                    reason: String::new(),
                }
            }
        })
        .collect();
    Some(RaceView {
        run: start.run,
        branch: start.branch.clone(),
        base: start.base.clone(),
        cost_cap_usd: start.caps.cost_usd,
        wall_cap_s: start.caps.wall_s,
        lanes,
        end,
    })
}

fn from_end(l: &RaceLane, e: &LaneEnd) -> LaneView {
    LaneView {
        lane: l.lane,
        agent: l.agent.clone(),
        branch: l.branch.clone(),
        path: l.path.clone(),
        iteration: e.iterations,
        passed: e.passed,
        total: e.total,
        reverts: e.reverts,
        cost_usd: e.cost_usd,
        outcome: e.outcome.clone(),
        reason: e.reason.clone(),
    }
}

impl RaceView {
    /// One line for `kit status`: `1 (won by lane 2 `fake:finish`, merged fast-forward) from
    /// main at 9d2ec83fe54b; cost $0.13 of $2.00`. `racing`: a `kit race` holds the lock now.
    pub fn describe(&self, racing: bool) -> String {
        let state = match &self.end {
            Some(e) if e.outcome == "won" => {
                let w = e.winner.unwrap_or(0);
                let agent =
                    self.lanes.iter().find(|l| l.lane == w).map_or("?", |l| l.agent.as_str());
                let merged = match &e.merged {
                    Some(m) => format!(", merged {m}"),
                    None => {
                        format!(", not merged: git merge {}", e.branch.as_deref().unwrap_or("?"))
                    }
                };
                format!("won by lane {w} `{agent}`{merged}")
            }
            Some(e) if e.outcome == NEEDS_YOU => format!(
                "needs you: {}; answer each lane's decision below, then kit race continues it",
                e.reason
            ),
            Some(e) => format!("{}: {}", e.outcome, e.reason),
            None if racing => format!("running, {} lanes", self.lanes.len()),
            None => "unfinished: its race process is gone; kit race --resume continues it".into(),
        };
        let cost: f64 = self.lanes.iter().map(|l| l.cost_usd).sum();
        format!(
            "{} ({state}) from {} at {}; cost ${cost:.2} of ${:.2}",
            self.run,
            self.branch.as_deref().unwrap_or("a detached HEAD"),
            &self.base[..self.base.len().min(12)],
            self.cost_cap_usd
        )
    }

    /// The race's outcome for `kit status`'s last line when the race is the journal's last
    /// word: `race 1 won: lane 2 (`fake:finish`) is done: …; merged fast-forward`.
    pub fn outcome(&self) -> String {
        let run = self.run;
        match &self.end {
            Some(e) if e.outcome == "won" => format!(
                "race {run} won: {}; {}",
                e.reason,
                match &e.merged {
                    Some(m) => format!("merged {m}"),
                    None => format!("not merged: git merge {}", e.branch.as_deref().unwrap_or("?")),
                }
            ),
            Some(e) if e.outcome == NEEDS_YOU => format!(
                "race {run} needs you: {}; answer each lane's decision, then kit race continues it",
                e.reason
            ),
            Some(e) => format!("race {run} {}: {}", e.outcome, e.reason),
            None => format!("race {run} is unfinished; kit race continues it"),
        }
    }

    /// The lanes as a text table (see [`table`]).
    pub fn table(&self) -> String {
        table(&self.lanes)
    }
}

/// The lanes of `lanes` whose `lane_end` is in `ends` (same order), as a text table.
pub fn lanes_table(lanes: &[RaceLane], ends: &[Option<LaneEnd>]) -> String {
    let rows: Vec<LaneView> = lanes
        .iter()
        .zip(ends)
        .map(|(l, e)| match e {
            Some(e) => from_end(l, e),
            None => from_end(l, &LaneEnd { outcome: "?".into(), ..LaneEnd::default() }),
        })
        .collect();
    table(&rows)
}

/// `LANE AGENT ITER CRITERIA REVERTS COST OUTCOME BRANCH`, one row per lane.
pub fn table(lanes: &[LaneView]) -> String {
    let agent_w = lanes.iter().map(|l| l.agent.len()).max().unwrap_or(0).max(5);
    let mut s = format!(
        "LANE  {:<agent_w$}  ITER  CRITERIA  REVERTS     COST  {:<8}  BRANCH\n",
        "AGENT", "OUTCOME"
    );
    for l in lanes {
        let criteria =
            if l.total == 0 { "-".to_string() } else { format!("{} of {}", l.passed, l.total) };
        s.push_str(&format!(
            "{:<4}  {:<agent_w$}  {:>4}  {:<8}  {:>7}  {:>7}  {:<8}  {}\n",
            l.lane,
            l.agent,
            l.iteration,
            criteria,
            l.reverts,
            format!("${:.2}", l.cost_usd),
            l.outcome,
            l.branch
        ));
    }
    s
}

/// What a lane's journal says of its run (the lane's last run: a resumed lane continues it).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LaneState {
    /// The highest iteration started (0: none yet).
    pub iteration: u64,
    /// Criteria passing at the last check (baseline or iteration).
    pub passed: u64,
    /// Criteria in all (0: not checked yet).
    pub total: u64,
    /// Frozen-file reverts (`cheat` events) of the run.
    pub reverts: u64,
    /// USD the run spent (the agents' reported usage, as the loop priced it).
    pub cost_usd: f64,
    /// Wall time of the run, seconds, up to its journal's last line.
    pub wall_s: f64,
    /// The last `loop_end`'s outcome and reason; None while its loop runs, or when it was
    /// killed or has not started.
    pub end: Option<(String, String)>,
    /// A run was started in the lane.
    pub started: bool,
    /// When the last `loop_end` was written (RFC 3339; empty: none).
    pub ended_at: String,
}

impl LaneState {
    /// Read the lane whose worktree is `path`. A missing journal reads as a lane not started.
    ///
    /// Errors: [`Error::Io`] when the journal exists but cannot be read.
    pub fn read(path: &Path) -> Result<LaneState> {
        let h = History::read(&Project::at(path).journal())?;
        let Some(run) = durable::last_run(&h) else {
            return Ok(LaneState { iteration: h.last_iteration, ..LaneState::default() });
        };
        let mut s = LaneState {
            iteration: h.last_iteration,
            cost_usd: run.spent.cost_usd,
            wall_s: run.spent.wall_s,
            end: run.last_end.as_ref().map(|e| (e.outcome.clone(), e.reason.clone())),
            ended_at: run
                .events(&h)
                .iter()
                .rev()
                .find(|e| matches!(e.event, Event::LoopEnd(_)))
                .map(|e| e.ts.clone())
                .unwrap_or_default(),
            started: true,
            ..LaneState::default()
        };
        for e in run.events(&h) {
            match &e.event {
                Event::Baseline(b) => (s.passed, s.total) = (b.passed, b.total),
                Event::Criteria(c) => (s.passed, s.total) = (c.passed, c.total),
                Event::Cheat(_) => s.reverts += 1,
                _ => {}
            }
        }
        Ok(s)
    }

    /// `1 of 3` criteria, or `-` before the first check.
    pub fn criteria(&self) -> String {
        if self.total == 0 {
            "-".into()
        } else {
            format!("{} of {}", self.passed, self.total)
        }
    }
}

/// The live loop holding the lane's lock, if one does (a lane loop a killed race left running).
pub fn live_loop(path: &Path) -> Option<lock::Holder> {
    crate::longrun::running_loop(&Project::at(path))
}
