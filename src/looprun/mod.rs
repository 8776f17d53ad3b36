//! `kit loop`: the headless loop (DESIGN §6), the heart of kit. An agent works on a repository
//! iteration after iteration; after each one kit — not the agent — restores the frozen files,
//! runs the goal's criteria and decides whether the work is done.
//!
//! One run, in order:
//! 0. check the flags and the `--agent` (see [`LoopOptions::check`]): a cap turned off, a bad
//!    value or an agent that cannot start exits 2 before anything is locked or written.
//! 1. take `longrun/.lock` (flock, non-blocking, holder record; see [`lock`]). Held → exit 4.
//!    End whatever a killed earlier loop left of its agent's process group (the journal names
//!    it). kit becomes a child subreaper so no descendant of the agent can escape its tree.
//! 2. load config.toml, goal.md and the frozen manifest (held in memory for the whole run, see
//!    [`crate::frozen::guard`]); refuse a goal rated below `goal.required_level` (exit 2); put
//!    back any frozen file that differs from the manifest, journaled as a cheat.
//! 3. baseline: run the criteria once. All pass on a verified tree → done at iteration 0.
//! 4. iterate while no cap is reached and `longrun/PAUSE` does not exist: write the prompt
//!    (`longrun/.runs/NNN.prompt.md`, see [`prompt`]), run the agent in its own process group
//!    under the timeout and the memory cap ([`agent`], [`memcap`]), end its leftovers, restore
//!    the frozen files, run the criteria, end whatever they left running, restore again (a
//!    process may have edited meanwhile).
//!    Done only when every criterion passes and the second restore found nothing, then passes
//!    again in the flake guard's runs and every review criterion's evaluator says pass (see
//!    [`confirm`]: a flapping criterion or a review asking a human may stop the run, exit 3).
//!    What the agent says counts for nothing.
//!    An agent that wipes untracked files (`git clean -fdx`) or `longrun/` itself does not stop
//!    the run: the state files are restored, `longrun/.runs/` and the lock file recreated, and
//!    the iteration's log written again from kit's open handle.
//! 5. exit 0 done, 3 cap, 4 lock held, 5 paused, 2 bad goal/config/usage, 1 internal error, and
//!    130 when stopped by hand (Ctrl-C, SIGTERM, SIGHUP: see [`signals`]). The last line printed
//!    names the outcome; the journal's `loop_end` holds why.
//!
//! Caps, all on: iterations, wall time, cost (USD) and consecutive iterations without progress.
//! Each is the stricter of `config.toml` (or the `kit loop` flag that overrides it) and goal.md's
//! budget when it sets one. Caps count per *run*, which may span several loop processes (see
//! [`durable`]): a `kit loop` on an unfinished run (killed, interrupted, paused) continues it with
//! the iterations, wall time and cost it spent, and says so; a finished run (done, or a cap
//! reached under the caps it would run with) is refused (exit 2) unless `--new-run` starts a new
//! one. Iteration numbers keep counting across runs. **Progress** in an iteration means the criteria
//! got closer: more of them passing than the best so far in this run, or the failing ones
//! failing differently than in any check of this run so far (their exit status, the expectations
//! they miss, or their last output lines, with timings and addresses ignored; see
//! [`failure_fingerprint`]). Changing files alone is not progress: an agent that churns a
//! comment every iteration while the same tests fail the same way trips the cap.
//!
//! Journal events this module writes (`longrun/journal.jsonl`, each also with `ts` and `event`):
//!
//! | event | fields |
//! |---|---|
//! | `lock_takeover` | `previous` (the dead holder's record, or `raw` text) |
//! | `recovered` | `iteration`, `pgid`, `killed` (pids): a killed loop's agent group ended |
//! | `memory_cap` | `enforcer` (`systemd-run`/`watchdog`), `reason`, `max_bytes` |
//! | `loop_start` | `run` (the run's number), `run_started`, `resumed`, `spent` {`iterations`, `wall_s`, `cost_usd`, `no_progress`} (before this process), `pid`, `host`, `command`, `agent`, `goal` (title), `level`, `first_iteration`, `caps` {`iterations`, `wall_s`, `cost_usd`, `no_progress`}, `timeout_s`, `memory_max_bytes`, `subreaper` |
//! | `cheat` | `iteration` (0 before the first), `phase` (`start`/`baseline`/`after_agent`/`after_criteria`/`confirm`/`review`/`exit`), `path`, `kind` (a frozen-file revert; `lock_replaced`: `longrun/.lock` deleted or replaced and locked again; `journal_appended`: lines appended by others cut off; `run_log_deleted`: the agent deleted or replaced its iteration's log, which kit wrote again from its open handle) |
//! | `baseline` | `results`, `passed`, `total`, `commit`, `dirty` |
//! | `iteration_start` | `iteration`, `prompt` (path) |
//! | `agent_start` | `iteration`, `pid`, `pgid`, `starttime`, `boot_id`, `command`, `log` |
//! | `agent_end` | `iteration`, `exit`, `signal`, `timed_out` (the iteration timeout ended it), `wall_cut` (the run's remaining wall time, shorter than the timeout, ended it; a `cap` `wall` follows), `interrupted`, `paused` (`kit pause --now` ended it), `memory_killed`, `enforcer`, `peak_rss_bytes`, `leftovers_killed`, `usage`, `cost_usd`, `duration_ms`, `errors` (Codex's `turn.failed`/`error` messages) |
//! | `permission_denials` | `iteration`, `denials` [{`tool_name`, `tool_input` (JSON text, clipped)}], `setting` (`agent.allowed_tools`), `suggest` (the exact line to add) — from Claude Code's `result` event |
//! | `unpriced` | `iteration`, `models`, `reported_cost_usd` |
//! | `criteria` | `iteration`, `results`, `passed`, `total`, `commit`, `dirty`, `verified`, `progress`, `no_progress` |
//! | `checkpoint` | `ref` (`refs/kit/checkpoint`), `commit`: the uncommitted tree at the start of a run |
//! | `frozen_commit` | `iteration`, `commits`, `paths`: commits of this run that change a frozen file kit just restored |
//! | `git_config_changed` | `added`: local git config entries and hooks that appeared during the run |
//! | `limit_wait` | `iteration`, `agent` (`claude`/`codex`/`fake`/`command`), `kind` (`usage`/`rate`), `until` (RFC 3339 or null), `wait_s`, `backoff`, `message`: the agent stopped on a usage or rate limit ([`limits`]); the loop sleeps (bounded by the wall cap, interruptible) and retries the same iteration number, which counts as no iteration, failure or no progress (its cost counts) |
//! | `limit_resume` | `iteration`, `waited_s`, `cut_short` (null, `paused`, `interrupted` or `wall`) |
//! | `cap` | `which` (`iterations`/`wall`/`cost`/`no_progress`), `used`, `limit` |
//! | `paused` | `iteration` (the last one run), `now` (`kit pause --now` stopped its agent at once), `by` (the PAUSE record, see [`pause`]; null for a file made by hand) |
//! | `notify` | `on` (`done`/`cap`/`limit`/`pause`), `command`, `exit`, `error`, `timed_out`, `duration_ms`, `output_tail`: the `[notify]` command ran (see [`notify`]) |
//! | `confirm`, `flap`, `review` | see [`confirm`] |
//! | `loop_end` | `outcome` (`done`/`cap`/`denied`/`flapping`/`review_ask`/`paused`/`interrupted`/`agent_failed`/`refused`/`error`), `iterations` (this loop process), `iteration` (last number), `reason`, `exit`, `run`, `run_iterations` (the whole run's), `wall_s` (this loop process's) |
//!
//! `denied` (exit 3): an iteration whose only effect was tool calls Claude Code denied (the tree
//! as before it, nothing reverted): the next would meet the same denials, so the run stops naming
//! the `[agent] allowed_tools` line that allows them.
//!
//! `agent_failed` (exit 2): on the run's first iteration `sh` could not start the agent (exit
//! 126 not executable, 127 command not found) and nothing changed; the run stops at once rather
//! than spend its iterations on the same failure. `cap` `wall` may also come straight after an
//! `agent_end` with `wall_cut`: the criteria are not run past the cap.

pub mod agent;
pub mod confirm;
pub mod durable;
pub mod ensure;
pub mod limits;
pub use crate::longrun::history; // moved: crate::longrun::history (issue 11)
pub use crate::longrun::lock; // moved: crate::longrun::lock (issue 11)
pub mod memcap;
pub mod notify;
pub mod pause;
pub use crate::proc as procs; // moved: crate::proc (issue 11)
pub mod prompt;
pub mod signals;

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::duration::{format_duration, format_size};
use crate::error::{Error, Result, EXIT_BAD_INPUT, EXIT_CAP, EXIT_OK, EXIT_PAUSED};
use crate::frozen::guard::{Guard, Revert};
use crate::goal::Goal;
use crate::longrun::config::Config;
use crate::longrun::journal::Journal;
use crate::longrun::Project;
use crate::prices::PriceTable;

use agent::{AgentSpec, Launch};
use history::{CriterionView, History};
use memcap::Enforcer;

/// `kit loop`'s options, converted from the command line (each overrides `config.toml`).
#[derive(Clone, Debug, Default)]
pub struct LoopOptions {
    /// Agent spec (`claude`, `codex`, `fake:SCENARIO` or a command line).
    pub agent: Option<String>,
    /// Cap on agent iterations in this run.
    pub max_iterations: Option<u32>,
    /// Timeout of one agent iteration.
    pub timeout: Option<Duration>,
    /// Memory cap of the agent's process tree, bytes.
    pub memory_max: Option<u64>,
    /// Cap on this run's wall time.
    pub max_wall: Option<Duration>,
    /// Start a new run even when the last one is unfinished, or finished (see [`durable`]).
    pub new_run: bool,
}

impl LoopOptions {
    /// Check the flags on their own, before the lock is taken and before anything runs: caps
    /// may not be off (`--max-iterations` at least 1, `--max-wall`, `--timeout` and
    /// `--memory-max` above 0), and an `--agent` must be startable (its program installed, a
    /// fake agent's scenario existing; see [`AgentSpec::check_installed`]). `root` is the
    /// repository root, where the agent runs.
    ///
    /// Errors: [`Error::Usage`] naming the flag and its value, with the next step (exit 2).
    pub fn check(&self, root: &Path) -> Result<()> {
        let off = |flag: &str, value: String| {
            Error::usage(format!("{flag} {value}: caps may not be off; give a value above 0"))
                .with_hint("kit loop --help")
        };
        if self.max_iterations == Some(0) {
            return Err(off("--max-iterations", "0".into()));
        }
        for (flag, d) in [("--timeout", self.timeout), ("--max-wall", self.max_wall)] {
            if d.is_some_and(|d| d.is_zero()) {
                return Err(off(flag, "0s".into()));
            }
        }
        if self.memory_max == Some(0) {
            return Err(off("--memory-max", "0".into()));
        }
        if let Some(bytes) = self.memory_max {
            let text = crate::duration::format_size(bytes);
            crate::duration::check_memory_cap(&text, bytes).map_err(|m| {
                Error::usage(format!("--memory-max: {m}")).with_hint("kit loop --help")
            })?;
        }
        if let Some(agent) = &self.agent {
            AgentSpec::parse(agent)?.check_installed(root)?;
        }
        Ok(())
    }
}

/// The settings of one run, after config, flags and goal budget were combined.
#[derive(Clone, Debug)]
struct Settings {
    spec: AgentSpec,
    /// How Claude Code or Codex is started; the criteria's patterns are added in `prepare`.
    setup: agent::AgentSetup,
    agent: String,
    max_iterations: u32,
    max_wall: Duration,
    max_cost_usd: f64,
    max_no_progress: u32,
    timeout: Duration,
    grace: Duration,
    criterion_timeout: Duration,
    memory_max: u64,
    /// Where each cap and limit came from: `(name, source)`, source one of `flag`,
    /// `config.toml`, `goal.md budget`, in the order the loop prints them.
    sources: Vec<(&'static str, &'static str)>,
}

impl Settings {
    /// The effective caps with their sources, as the loop's second line prints them:
    /// `caps: iterations 5 (goal.md budget), wall 4h00m (config.toml), …`.
    fn describe_caps(&self) -> String {
        let src =
            |k: &str| self.sources.iter().find(|(n, _)| *n == k).map_or("config.toml", |(_, s)| *s);
        format!(
            "caps: iterations {} ({}), wall {} ({}), cost ${:.2} ({}), no progress {} ({}); \
             iteration timeout {} ({}), memory {} ({})",
            self.max_iterations,
            src("iterations"),
            format_duration(self.max_wall),
            src("wall"),
            self.max_cost_usd,
            src("cost"),
            self.max_no_progress,
            src("no_progress"),
            format_duration(self.timeout),
            src("timeout"),
            format_size(self.memory_max),
            src("memory"),
        )
    }

    /// The caps as [`durable::plan`] weighs a run's budget against them.
    fn limits(&self) -> durable::Limits {
        durable::Limits {
            iterations: u64::from(self.max_iterations),
            wall: self.max_wall,
            cost_usd: self.max_cost_usd,
            no_progress: self.max_no_progress,
        }
    }

    fn resolve(cfg: &Config, opts: &LoopOptions, budget: &crate::goal::Budget) -> Result<Settings> {
        let agent = opts.agent.clone().unwrap_or_else(|| cfg.agent.command.clone());
        let spec = AgentSpec::parse(&agent)?;
        // Flags were checked by `LoopOptions::check`, config.toml by `Config::load`.
        let max_iterations = opts.max_iterations.unwrap_or(cfg.caps.max_iterations);
        let stricter_u32 = |a: u32, b: Option<u32>| b.map_or(a, |b| a.min(b));
        let stricter_dur = |a: Duration, b: Option<Duration>| b.map_or(a, |b| a.min(b));
        let max_cost_usd =
            budget.cost_usd.map_or(cfg.caps.max_cost_usd, |b| b.min(cfg.caps.max_cost_usd));
        let timeout = opts.timeout.unwrap_or_else(|| cfg.iteration_timeout());
        if timeout.is_zero() {
            return Err(Error::usage("the iteration timeout must be longer than 0s")
                .with_hint("set [timeouts] iteration in longrun/config.toml, e.g. \"30m\""));
        }
        // The stricter of (flag, else config.toml) and the goal's budget wins; say which.
        let from = |flag: bool| if flag { "flag" } else { "config.toml" };
        let max_wall_base = opts.max_wall.unwrap_or_else(|| cfg.max_wall());
        let sources = vec![
            (
                "iterations",
                if budget.iterations.is_some_and(|b| b < max_iterations) {
                    "goal.md budget"
                } else {
                    from(opts.max_iterations.is_some())
                },
            ),
            (
                "wall",
                if budget.wall.is_some_and(|b| b < max_wall_base) {
                    "goal.md budget"
                } else {
                    from(opts.max_wall.is_some())
                },
            ),
            (
                "cost",
                if budget.cost_usd.is_some_and(|b| b < cfg.caps.max_cost_usd) {
                    "goal.md budget"
                } else {
                    "config.toml"
                },
            ),
            ("no_progress", "config.toml"),
            ("timeout", from(opts.timeout.is_some())),
            ("memory", from(opts.memory_max.is_some())),
        ];
        Ok(Settings {
            spec,
            setup: agent::AgentSetup::new(&cfg.agent, &[]),
            agent,
            max_iterations: stricter_u32(max_iterations, budget.iterations),
            max_wall: stricter_dur(max_wall_base, budget.wall),
            max_cost_usd,
            max_no_progress: cfg.caps.max_no_progress,
            timeout,
            grace: cfg.grace(),
            criterion_timeout: cfg.criterion_timeout(),
            memory_max: opts.memory_max.unwrap_or_else(|| cfg.memory_max()),
            sources,
        })
    }
}

/// The caps a `kit loop` with no flags would run with; see [`planned_caps`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlannedCaps {
    /// Agent iterations.
    pub iterations: u32,
    /// Wall time.
    pub wall: Duration,
    /// USD.
    pub cost_usd: f64,
    /// Consecutive iterations without progress.
    pub no_progress: u32,
    /// Where iterations, wall and cost came from: `config.toml` or `goal.md budget`.
    pub sources: [&'static str; 3],
}

/// The caps a `kit loop` with no flags would run with: the stricter of config.toml and the
/// goal's budget. What `kit status` shows before any run.
///
/// Errors: an agent command in config.toml that does not parse.
pub fn planned_caps(cfg: &Config, budget: &crate::goal::Budget) -> Result<PlannedCaps> {
    let s = Settings::resolve(cfg, &LoopOptions::default(), budget)?;
    let src = |k: &str| s.sources.iter().find(|(n, _)| *n == k).map_or("config.toml", |(_, v)| *v);
    Ok(PlannedCaps {
        iterations: s.max_iterations,
        wall: s.max_wall,
        cost_usd: s.max_cost_usd,
        no_progress: s.max_no_progress,
        sources: [src("iterations"), src("wall"), src("cost")],
    })
}

impl PlannedCaps {
    /// The caps as [`durable::plan`] weighs a run's budget against them.
    pub fn limits(&self) -> durable::Limits {
        durable::Limits {
            iterations: u64::from(self.iterations),
            wall: self.wall,
            cost_usd: self.cost_usd,
            no_progress: self.no_progress,
        }
    }
}

/// How a run ended (other than by an error), and why in words.
#[derive(Clone, Debug, PartialEq)]
struct Outcome {
    /// `done`, `cap`, `paused` or `interrupted`.
    name: &'static str,
    /// The exit code.
    code: u8,
    /// Why, for the journal and the last line.
    reason: String,
}

/// What step 2 loaded and decided, fixed for the whole run.
struct Prepared {
    goal: Goal,
    settings: Settings,
    /// The frozen files, held in memory from the start of the run.
    guard: Guard,
    prices: PriceTable,
    enforcer: Enforcer,
    /// The environment the criteria run in (see [`crate::goal::env`]).
    env: crate::goal::env::CriteriaEnv,
    /// Start of this loop process's wall time (the baseline).
    started: Instant,
    /// Wall time the run spent in earlier loop processes.
    spent_wall: Duration,
    /// The flake guard and the reviews, before done is accepted (see [`confirm`]).
    layers: confirm::Layers,
    /// Time slept virtually waiting out limits (under `KIT_FAKE_CLOCK`; real sleeps are in
    /// `started.elapsed()` already).
    waited: Duration,
}

impl Prepared {
    /// The run's wall time so far: earlier loop processes and this one.
    fn wall_used(&self) -> Duration {
        self.spent_wall + self.started.elapsed() + self.waited
    }
}

/// What the run has learnt so far: for the caps and the next prompt.
#[derive(Debug, Default)]
struct Tally {
    /// Number of criteria.
    total: usize,
    /// Most criteria passing in any check of this run.
    best: usize,
    /// The failing criteria's fingerprints this run has seen (see the module doc: progress).
    seen_failures: HashSet<String>,
    /// The working-tree id at the baseline (None when git could not say).
    baseline_tree: Option<String>,
    /// Consecutive iterations without progress.
    no_progress: u32,
    /// USD spent in this run.
    cost_usd: f64,
    /// The last failed criteria, as prompt blocks.
    failures: Vec<String>,
    /// Reverts since the last prompt, as prompt lines.
    reverts: Vec<String>,
    /// Tool calls Claude Code denied in the last iteration, as prompt lines.
    denials: Vec<String>,
    /// Limits in a row since the last iteration that ended without one (for the backoff);
    /// rebuilt from the journal when a run continues ([`durable::limit_streak`]).
    limit_streak: u32,
    /// Flaps per goal.md line in this run since its last `flapping` stop (see [`confirm`]);
    /// rebuilt from the journal when a run continues ([`durable::flaps`]).
    flaps: std::collections::HashMap<u64, u32>,
}

/// One run of the criteria.
struct Check {
    /// As journaled.
    results: Value,
    views: Vec<CriterionView>,
    passed: usize,
    /// Reverts found after the criteria ran (the tree changed under them).
    late: Vec<Revert>,
    /// Criteria whose runner still exited 0 with the canary's failing test added.
    canary_missed: Vec<crate::goal::canary::CanaryResult>,
    /// The canary's results when it ran (every criterion passed), for the done line.
    canary: Vec<crate::goal::canary::CanaryResult>,
    /// Programs the criteria run whose file changed since the start of the run.
    tampered: Vec<(String, PathBuf)>,
    /// Criteria that pass with more tests skipped than at the first check, as prompt lines.
    skipped: Vec<String>,
}

impl Check {
    /// Every criterion passed, on a tree that stayed verified.
    fn all_pass(&self) -> bool {
        self.passed == self.views.len()
            && self.late.is_empty()
            && self.canary_missed.is_empty()
            && self.tampered.is_empty()
            && self.skipped.is_empty()
    }

    fn failures(&self) -> Vec<String> {
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
        out
    }

    /// The done line's account of the canary: which criteria it proved, which it could not.
    fn canary_line(&self) -> String {
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

/// What one agent run left for its iteration to decide on.
struct AgentRun {
    /// Frozen files restored after the agent.
    reverts: Vec<Revert>,
    ended: agent::Ended,
    /// The agent was stopped because the run's remaining wall time, shorter than the iteration
    /// timeout, ran out: the wall cap, not the timeout, ended it.
    wall_cut: bool,
    /// The iteration's log, relative to the root.
    log: String,
    /// Tool calls Claude Code denied (its `result` event's `permission_denials`).
    denials: Vec<agent::Denial>,
    /// The working tree is as it was before the agent ran (None: git could not say).
    tree_unchanged: Option<bool>,
}

/// Run `kit loop` in the repository containing `cwd`, printing progress to `out`.
/// Returns the exit code: 0 done, 3 cap reached or an iteration only met denials, 5 paused.
///
/// Errors: [`Error::Locked`] (exit 4) when another loop holds `longrun/.lock`; [`Error::Input`]
/// or [`Error::Usage`] (exit 2) for a bad goal, config or option, or a goal below the required
/// level; [`Error::Internal`]/[`Error::Io`] (exit 1) when the agent cannot start, a frozen file
/// cannot be restored, or a state file cannot be written. Every error after the lock was taken
/// is also journaled as `loop_end`.
pub fn run(cwd: &Path, opts: &LoopOptions, out: &mut dyn Write) -> Result<u8> {
    // First of all, before any thread exists (the drift check hashes on rayon's pool): a
    // thread started earlier would not block SIGINT, and Ctrl-C would kill kit outright.
    let stop = signals::Stop::install();
    let project = Project::discover_initialised(cwd)?;
    // Bad flags and an agent that cannot start are refused before the lock, the journal and
    // the baseline: nothing is written and no iteration is spent on them.
    opts.check(&project.root)?;
    // So are a bad config or goal and a goal below the required level: a refusal leaves
    // longrun/ as it was (no lock file, no journal line).
    preflight(&project, opts)?;
    crate::atomic::create_dir_all(&project.runs())?;
    let me = lock::Holder::current();
    let (mut held, previous) = lock::acquire(&project.lock(), &me)?;
    // A live loop is never displaced, even when its lock file was deleted under it: the journal
    // names the loop of the last run not ended, and if it still runs, this one refuses before
    // writing anything.
    if let Some(h) = History::read(&project.journal())?.open_run {
        if h.pid != me.pid && h.is_alive_here() {
            return Err(Error::Locked { path: project.lock(), holder: h.describe() });
        }
    }
    // Under the lock, before anything is written: continue the last run, start a new one, or
    // refuse a finished one (exit 2, the journal untouched).
    let plan = plan_run(&project, opts)?;
    held.keep();
    let journal = Journal::new(project.journal());
    let mut ctx = RunCtx {
        project,
        journal,
        out,
        lock: held,
        stop: &stop,
        iterations_run: 0,
        last_iteration: 0,
        start_head: None,
        plan,
        began: Instant::now(),
        first_skips: None,
        waited: Duration::ZERO,
    };
    ctx.say(format!("loop: took longrun/.lock (pid {})", me.pid));
    let result = ctx.takeover(&previous).and_then(|()| ctx.run(opts));
    let wall_s = (ctx.began.elapsed() + ctx.waited).as_secs_f64();
    let run_id = ctx.run_id();
    let run_iterations = ctx.spent().iterations + ctx.iterations_run;
    match result {
        Ok(o) => {
            let _ = ctx.journal.append(
                "loop_end",
                json!({
                    "outcome": o.name,
                    "iterations": ctx.iterations_run,
                    "iteration": ctx.last_iteration,
                    "reason": o.reason,
                    "exit": o.code,
                    "run": run_id,
                    "run_iterations": run_iterations,
                    "wall_s": wall_s,
                }),
            );
            ctx.say(format!("{}: {}", o.name, o.reason));
            if let Some(event) = notify::event_for(o.name) {
                let env = [
                    ("KIT_OUTCOME", format!("{}: {}", o.name, o.reason)),
                    ("KIT_RUN_ID", run_id.to_string()),
                    ("KIT_ITERATION", ctx.last_iteration.to_string()),
                    ("KIT_EXIT_CODE", o.code.to_string()),
                ];
                notify::fire(&ctx.project, &ctx.journal, event, &env);
            }
            Ok(o.code)
        }
        Err(e) => {
            let code = e.exit_code();
            let outcome = if code == crate::error::EXIT_BAD_INPUT { "refused" } else { "error" };
            let _ = ctx.journal.append(
                "loop_end",
                json!({
                    "outcome": outcome,
                    "iterations": ctx.iterations_run,
                    "iteration": ctx.last_iteration,
                    "reason": e.to_string(),
                    "exit": code,
                    "run": run_id,
                    "run_iterations": run_iterations,
                    "wall_s": wall_s,
                }),
            );
            Err(e)
        }
    }
}

/// What this `kit loop` does with the journal's runs (see [`durable`]), decided under the lock
/// with the caps it would run with.
///
/// Errors: [`Error::Usage`] (exit 2) when the last run is finished and `--new-run` was not
/// given, naming why and the flag; the errors of loading config.toml and goal.md.
fn plan_run(project: &Project, opts: &LoopOptions) -> Result<durable::Plan> {
    match plan_for(project, opts)? {
        durable::Plan::Finished { reason, next, .. } => {
            Err(Error::usage(format!("{reason}; kit loop does not restart a finished run"))
                .with_hint(next))
        }
        plan => Ok(plan),
    }
}

/// [`durable::plan`] for `project` under the caps `opts`, config.toml and goal.md give.
///
/// Errors: loading config.toml or goal.md (exit 2); reading the journal.
fn plan_for(project: &Project, opts: &LoopOptions) -> Result<durable::Plan> {
    let cfg = Config::load(&project.config())?;
    let goal = crate::goal::load(project)?;
    let settings = Settings::resolve(&cfg, opts, &goal.budget)?;
    let history = History::read(&project.journal())?;
    Ok(durable::plan(&history, &settings.limits(), opts.new_run))
}

/// What [`RunCtx::prepare`] checks before anything is written, run before the lock: the config,
/// the goal and its level, the settings and the agent. `prepare` checks again under the lock (the
/// files may change in between).
///
/// Errors: as [`run`]'s refusals (exit 2), or an agent that is not installed.
fn preflight(project: &Project, opts: &LoopOptions) -> Result<()> {
    let cfg = Config::load(&project.config())?;
    let goal = crate::goal::load(project)?;
    let frozen_paths = crate::goal::frozen_paths(project)?;
    let rating = crate::goal::rate(&goal, &frozen_paths, &project.root);
    if rating.level < cfg.goal.required_level {
        return Err(below_level(project, rating.level, cfg.goal.required_level, &rating));
    }
    let settings = Settings::resolve(&cfg, opts, &goal.budget)?;
    settings.spec.check_installed(&project.root)?;
    user_drift(project)
}

/// Before the first iteration of a new run, a frozen file that differs from `frozen.toml` was
/// changed by the user (no agent has run yet): kit must not overwrite it. Refuse, naming each
/// path and both ways out. During or after an unfinished run (the journal shows one not ended,
/// e.g. a loop killed mid-iteration) the drift may be the agent's, and the loop restores it as
/// a cheat instead. Stored copies are left to the guard, which rewrites them.
///
/// Errors: [`Error::Usage`] (exit 2) listing the drifted paths.
fn user_drift(project: &Project) -> Result<()> {
    if History::read(&project.journal())?.open_run.is_some() {
        return Ok(());
    }
    let drifts = crate::frozen::freeze::drift_of_user_files(project)?;
    if drifts.is_empty() {
        return Ok(());
    }
    let list: Vec<String> =
        drifts.iter().map(|d| format!("{} ({})", d.path, d.kind.describe())).collect();
    let first = &drifts[0].path;
    Err(Error::usage(format!(
        "the tree does not match the frozen manifest: {}; kit will not overwrite a change made \
         before the loop started",
        list.join(", ")
    ))
    .with_hint(format!(
        "kit freeze {first} to keep your change as the frozen version, or kit freeze --restore \
         to discard it; then kit loop"
    )))
}

pub use crate::longrun::lock::running_loop; // moved: crate::longrun::lock::running_loop (issue 11)

/// The state of one run while it goes.
struct RunCtx<'a> {
    project: Project,
    journal: Journal,
    out: &'a mut dyn Write,
    lock: lock::LoopLock,
    /// Ctrl-C and friends, read without dying from them.
    stop: &'a signals::Stop,
    /// Agent iterations started in this run.
    iterations_run: u64,
    /// The number of the last iteration started (across runs).
    last_iteration: u64,
    /// HEAD when this run started (None before the first commit).
    start_head: Option<String>,
    /// The run this loop process works on: new, or continued with what it spent.
    plan: durable::Plan,
    /// When this loop process took the lock (its `loop_end` `wall_s`).
    began: Instant,
    /// Tests each criterion's runner reported skipped at this process's first check, by goal.md
    /// line (None before it): more skips at a done candidate is work skipped, not done.
    first_skips: Option<std::collections::HashMap<u64, u64>>,
    /// Time slept virtually waiting out limits in this process (see [`Prepared::waited`]).
    waited: Duration,
}

impl RunCtx<'_> {
    /// The number of the run this loop process works on.
    fn run_id(&self) -> u64 {
        match &self.plan {
            durable::Plan::New { id, .. } => *id,
            durable::Plan::Continue(r) | durable::Plan::Finished { run: r, .. } => r.id,
        }
    }

    /// What the run spent before this loop process (nothing for a new run).
    fn spent(&self) -> durable::Spent {
        match &self.plan {
            durable::Plan::Continue(r) => r.spent,
            _ => durable::Spent::default(),
        }
    }

    /// Say which run this loop works on, when it is not simply the first: a continued run with
    /// what it spent, or a new run after an earlier one (`--new-run`).
    fn announce_run(&mut self) {
        let line = match &self.plan {
            durable::Plan::Continue(r) => format!(
                "loop: continuing run {} (started {}, {} loop{} so far, last: {}): {} spent; \
                 kit loop --new-run starts afresh",
                r.id,
                r.started,
                r.loops,
                if r.loops == 1 { "" } else { "s" },
                r.last_outcome(),
                r.spent.describe()
            ),
            durable::Plan::New { id, after: Some(prev) } => format!(
                "loop: starting run {id} (--new-run); run {} ({}) had spent {}",
                prev.id,
                prev.last_outcome(),
                prev.spent.describe()
            ),
            _ => return,
        };
        self.say(line);
    }

    fn say(&mut self, line: impl AsRef<str>) {
        // Output is a courtesy; the journal is the record. A closed stdout must not stop a loop.
        let _ = writeln!(self.out, "{}", line.as_ref());
        let _ = self.out.flush();
    }

    fn journal(&self, event: &str, fields: Value) -> Result<()> {
        self.journal.append(event, fields).map(|_| ())
    }

    /// Journal the takeover of a dead holder's lock.
    fn takeover(&mut self, previous: &lock::Previous) -> Result<()> {
        match previous {
            lock::Previous::Clean => {}
            lock::Previous::Dead(h) => {
                self.journal("lock_takeover", json!({ "previous": h }))?;
                self.say(format!("loop: took over the lock of a dead loop ({})", h.describe()));
            }
            lock::Previous::Unreadable(raw) => {
                self.journal("lock_takeover", json!({ "previous": { "raw": raw } }))?;
                self.say("loop: took over a lock whose holder record was unreadable");
            }
        }
        Ok(())
    }

    /// End what a killed loop left of its agent's process group (the journal is the checkpoint).
    fn recover(&mut self, h: &History) -> Result<()> {
        let Some(u) = &h.unfinished else { return Ok(()) };
        let same_boot = u.boot_id.is_none() || u.boot_id == procs::boot_id();
        let killed = if same_boot && u.pgid > 1 {
            procs::end_group(u.pgid, u.starttime, Duration::from_secs(10)).map_err(|alive| {
                Error::internal(format!(
                    "processes {alive:?} of iteration {}'s agent group {} survive SIGKILL",
                    u.iteration, u.pgid
                ))
            })?
        } else {
            Vec::new()
        };
        self.journal(
            "recovered",
            json!({ "iteration": u.iteration, "pgid": u.pgid, "killed": killed, "same_boot": same_boot }),
        )?;
        self.say(format!(
            "loop: iteration {} of a killed loop was left unfinished; ended its process group {} ({} process{} left)",
            u.iteration,
            u.pgid,
            killed.len(),
            if killed.len() == 1 { "" } else { "es" }
        ));
        Ok(())
    }

    fn run(&mut self, opts: &LoopOptions) -> Result<Outcome> {
        let history = History::read(&self.project.journal())?;
        self.recover(&history)?;
        self.last_iteration = history.last_iteration;
        self.announce_run();
        let mut tally = Tally::default();
        if let durable::Plan::Continue(r) = &self.plan {
            // The journal is the checkpoint: the run's budget and what counts as progress go on
            // from where its last loop process left them.
            tally.cost_usd = r.spent.cost_usd;
            tally.no_progress = r.spent.no_progress;
            tally.limit_streak = durable::limit_streak(r.events(&history));
            tally.flaps = durable::flaps(r.events(&history));
            for e in r.events(&history) {
                if matches!(history::event_name(e), "baseline" | "criteria") {
                    let views = CriterionView::all(e.get("results").unwrap_or(&Value::Null));
                    tally.best = tally.best.max(views.iter().filter(|v| v.passed).count());
                    tally.seen_failures.insert(failure_fingerprint(&views));
                }
            }
        }
        self.start_head = git_rev(&self.project.root, "HEAD");
        let git_before = git_settings(&self.project.root);
        let mut p = self.prepare(opts, &mut tally)?;
        if let Some(done) = self.baseline(&mut p, &mut tally)? {
            return Ok(done);
        }
        let outcome = self.iterate(&mut p, &mut tally);
        // Git settings planted during the run outlive it: kit's own git commands ignore them
        // (`crate::git::command`), the user's git does not.
        let planted: Vec<String> = git_settings(&self.project.root)
            .into_iter()
            .filter(|l| !git_before.contains(l))
            .collect();
        if !planted.is_empty() {
            self.journal("git_config_changed", json!({ "added": planted }))?;
            self.say(format!(
                "loop: git settings appeared during the run and outlive it: {}; kit's own git \
                 commands ignore them, yours will not: check .git/config and .git/hooks",
                planted.join(", ")
            ));
        }
        // Nothing started during the run outlives it: kit is the subreaper of everything the
        // agent, the criteria and kit's own git commands left behind.
        end_strays()?;
        outcome
    }

    /// Step 4 repeated until a cap, a pause, a stop or done; then the last restore.
    fn iterate(&mut self, p: &mut Prepared, tally: &mut Tally) -> Result<Outcome> {
        let outcome = loop {
            if let Some(stop) = self.should_stop(p, tally)? {
                break stop;
            }
            if let Some(done) = self.iteration(p, tally)? {
                break done;
            }
        };
        // Once more at exit: the loop never ends leaving a frozen file drifted.
        let last = restore(&p.guard)?;
        self.cheats(&last, self.last_iteration, "exit")?;
        if !last.is_empty() {
            self.say(format!("loop: reverted {} at exit", list_reverts(&last)));
        }
        Ok(outcome)
    }

    /// Step 2: load and check goal, config and manifest; journal `memory_cap` and `loop_start`;
    /// put back any frozen file that differs from the manifest.
    fn prepare(&mut self, opts: &LoopOptions, tally: &mut Tally) -> Result<Prepared> {
        let subreaper = procs::become_subreaper();
        let cfg = Config::load(&self.project.config())?;
        let goal = crate::goal::load(&self.project)?;
        let frozen_paths = crate::goal::frozen_paths(&self.project)?;
        let rating = crate::goal::rate(&goal, &frozen_paths, &self.project.root);
        if rating.level < cfg.goal.required_level {
            return Err(below_level(&self.project, rating.level, cfg.goal.required_level, &rating));
        }
        let mut settings = Settings::resolve(&cfg, opts, &goal.budget)?;
        settings.spec.check_installed(&self.project.root)?;
        let commands: Vec<&str> = goal.criteria.iter().map(|c| c.command.as_str()).collect();
        settings.setup = agent::AgentSetup::new(&cfg.agent, &commands);
        let layers = confirm::Layers::new(&cfg, &goal, &self.project)?;
        let guard = Guard::capture(&self.project)?;
        let (enforcer, why) = memcap::detect();
        self.journal(
            "memory_cap",
            json!({ "enforcer": enforcer.name(), "reason": why, "max_bytes": settings.memory_max }),
        )?;
        let spent = self.spent();
        let run_started = match &self.plan {
            durable::Plan::Continue(r) => r.started.clone(),
            _ => crate::clock::now_rfc3339(),
        };
        self.journal(
            "loop_start",
            json!({
                "run": self.run_id(),
                "run_started": run_started,
                "resumed": matches!(self.plan, durable::Plan::Continue(_)),
                "spent": spent,
                "pid": std::process::id(),
                "host": self.lock.holder().host,
                "command": self.lock.holder().command,
                "agent": settings.agent,
                "goal": goal.title,
                "level": rating.level,
                "first_iteration": self.last_iteration + 1,
                "caps": {
                    "iterations": settings.max_iterations,
                    "wall_s": settings.max_wall.as_secs(),
                    "cost_usd": settings.max_cost_usd,
                    "no_progress": settings.max_no_progress,
                },
                "timeout_s": settings.timeout.as_secs_f64(),
                "memory_max_bytes": settings.memory_max,
                "cap_sources": settings.sources.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
                "subreaper": subreaper.as_ref().map_or_else(|e| e.clone(), |()| "on".into()),
            }),
        )?;
        self.say(format!(
            "loop: goal \"{}\" (level {}), agent `{}`, memory cap {} by {}",
            goal.title,
            rating.level,
            settings.agent,
            format_size(settings.memory_max),
            enforcer.name()
        ));
        self.say(format!("loop: {}", settings.describe_caps()));
        if let Some(line) = settings.setup.describe(&settings.spec) {
            self.say(format!("loop: {line}"));
        }
        if matches!(settings.spec, AgentSpec::Fake(_))
            && std::env::var_os("CLAUDE_CONFIG_DIR").is_none_or(|v| v.is_empty())
        {
            self.say(
                "loop: note: the fake agent writes its transcripts under ~/.claude/projects \
                 (CLAUDE_CONFIG_DIR is unset), so kit measure will count them with your real \
                 sessions; export CLAUDE_CONFIG_DIR=$PWD/.home/.claude to keep a rehearsal apart",
            );
        }
        if matches!(settings.spec, AgentSpec::FakeCodex(_))
            && std::env::var_os("CODEX_HOME").is_none_or(|v| v.is_empty())
        {
            self.say(
                "loop: note: the fake agent writes its rollouts under ~/.codex/sessions \
                 (CODEX_HOME is unset), so kit measure will count them with your real \
                 sessions; export CODEX_HOME=$PWD/.home/.codex to keep a rehearsal apart",
            );
        }
        let reverts = restore(&guard)?;
        self.cheats(&reverts, 0, "start")?;
        // The user's uncommitted work, kept where no agent command sweeps it away.
        if git_head(&self.project.root).1 {
            match checkpoint(&self.project.root, "kit loop") {
                Some(commit) => {
                    self.journal("checkpoint", json!({ "ref": CHECKPOINT_REF, "commit": commit }))?;
                    self.say(format!(
                        "loop: the tree has uncommitted changes; kept them as {} ({}): to get them back, git checkout {} -- .",
                        CHECKPOINT_REF,
                        &commit[..commit.len().min(12)],
                        CHECKPOINT_REF
                    ));
                }
                None => self.say(
                    "loop: the tree has uncommitted changes and git could not keep a checkpoint of them; commit them first if they matter",
                ),
            }
        }
        if !reverts.is_empty() {
            self.say(format!(
                "loop: the tree did not match the frozen manifest; restored {}",
                list_reverts(&reverts)
            ));
            tally.reverts.extend(reverts.iter().map(describe_revert));
        }
        let env = crate::goal::env::CriteriaEnv::capture(&goal, &self.project.root);
        let n = env.neutralised();
        self.journal("criteria_env", serde_json::to_value(n).unwrap_or(Value::Null))?;
        // Journaled only: what is dropped depends on the machine (a kit installed under /tmp).
        Ok(Prepared {
            goal,
            settings,
            guard,
            prices: PriceTable::embedded().with_overrides(&cfg.prices),
            enforcer,
            env,
            started: Instant::now(),
            spent_wall: spent.wall(),
            layers,
            waited: Duration::ZERO,
        })
    }

    /// Step 3: the criteria once, before any agent. All pass on a verified tree → done.
    fn baseline(&mut self, p: &mut Prepared, tally: &mut Tally) -> Result<Option<Outcome>> {
        let c = self.check(p, 0, "baseline")?;
        if let Some(o) = self.interrupted() {
            return Ok(Some(o));
        }
        let (commit, dirty) = git_head(&self.project.root);
        self.journal(
            "baseline",
            json!({
                "results": c.results, "passed": c.passed, "total": c.views.len(),
                "commit": commit, "dirty": dirty,
            }),
        )?;
        self.say(format!("baseline: {} of {} criteria pass", c.passed, c.views.len()));
        if let Some(e) = commands_not_found(&self.project, &c.views) {
            return Err(e);
        }
        tally.total = c.views.len();
        tally.best = c.passed;
        tally.baseline_tree = tree_state(&self.project.root);
        tally.seen_failures.insert(failure_fingerprint(&c.views));
        tally.reverts.extend(c.late.iter().map(describe_revert));
        tally.failures = c.failures();
        if !c.all_pass() {
            return Ok(None);
        }
        self.say(c.canary_line());
        let done = Outcome {
            name: "done",
            code: EXIT_OK,
            reason: format!(
                "every criterion passes ({} of {}) at iteration 0, before any agent ran",
                c.passed, tally.total
            ),
        };
        self.accept_done(p, tally, 0, &c, done)
    }

    /// Before each iteration: the lock still ours, no stop asked, no PAUSE file, no cap reached.
    fn should_stop(&mut self, p: &Prepared, tally: &Tally) -> Result<Option<Outcome>> {
        self.lock.verify()?;
        if self.lock.take_repairs() > 0 {
            self.journal(
                "cheat",
                json!({ "iteration": self.last_iteration, "phase": "after_agent", "path": "longrun/.lock", "kind": "lock_replaced" }),
            )?;
            self.say(format!(
                "iteration {}: longrun/.lock was deleted or replaced; kit locked it again",
                self.last_iteration
            ));
        }
        if let Some(o) = self.interrupted() {
            return Ok(Some(o));
        }
        if let Some(paused) = pause::read(&self.project) {
            return self.paused(&paused, false).map(Some);
        }
        let caps = self.caps(p, tally);
        let Some((which, used, limit, words)) = caps.into_iter().find(|c| c.1 >= c.2) else {
            return Ok(None);
        };
        self.cap_reached(which, used, limit, &words, tally).map(Some)
    }

    /// Journal `paused` and say how the run stops: before an iteration, or (`at_once`) after
    /// `kit pause --now` stopped the agent of the last one.
    fn paused(&mut self, paused: &pause::Paused, at_once: bool) -> Result<Outcome> {
        let by = match paused {
            pause::Paused::Record(r) => json!(r),
            pause::Paused::ByHand => Value::Null,
        };
        self.journal(
            "paused",
            json!({ "iteration": self.last_iteration, "now": at_once, "by": by }),
        )?;
        let how = if at_once {
            format!(
                "; the agent of iteration {} was stopped at once and its criteria not run",
                self.last_iteration
            )
        } else {
            String::new()
        };
        Ok(Outcome {
            name: "paused",
            code: EXIT_PAUSED,
            reason: format!(
                "longrun/PAUSE exists (paused {}){how}; kit resume (or rm longrun/PAUSE), then \
                 kit loop goes on with run {} from iteration {}",
                paused.describe(),
                self.run_id(),
                self.last_iteration + 1
            ),
        })
    }

    /// Each cap as (`which`, used, limit, words), in the order they are checked.
    fn caps(&self, p: &Prepared, tally: &Tally) -> [(&'static str, f64, f64, String); 4] {
        let s = &p.settings;
        let elapsed = p.wall_used();
        let iterations = self.spent().iterations + self.iterations_run;
        [
            (
                "iterations",
                iterations as f64,
                f64::from(s.max_iterations),
                format!("{iterations} of {} iterations used", s.max_iterations),
            ),
            (
                "wall",
                elapsed.as_secs_f64(),
                s.max_wall.as_secs_f64(),
                format!(
                    "wall time {} of {}",
                    format_duration(elapsed),
                    format_duration(s.max_wall)
                ),
            ),
            (
                "cost",
                tally.cost_usd,
                s.max_cost_usd,
                format!("cost ${:.2} of ${:.2}", tally.cost_usd, s.max_cost_usd),
            ),
            (
                "no_progress",
                f64::from(tally.no_progress),
                f64::from(s.max_no_progress),
                format!("{} iterations in a row without progress", tally.no_progress),
            ),
        ]
    }

    /// Journal the `cap` event and say how the run ends.
    fn cap_reached(
        &mut self,
        which: &str,
        used: f64,
        limit: f64,
        words: &str,
        tally: &Tally,
    ) -> Result<Outcome> {
        self.journal("cap", json!({ "which": which, "used": used, "limit": limit }))?;
        Ok(Outcome {
            name: "cap",
            code: EXIT_CAP,
            reason: format!(
                "{which} cap reached ({words}); {} of {} criteria pass at best",
                tally.best, tally.total
            ),
        })
    }

    /// The run's first agent could not be started by `sh`: exit 126 (found but not executable)
    /// or 127 (command not found), with no frozen file touched and the tree as the baseline
    /// left it. Every later iteration would fail the same way, so the run ends at once.
    fn agent_failed(&self, p: &Prepared, tally: &Tally, run: &AgentRun) -> Option<Outcome> {
        let e = &run.ended;
        let code = e.exit.filter(|c| *c == 126 || *c == 127)?;
        if self.iterations_run != 1
            || e.timed_out
            || e.interrupted
            || e.memory_killed
            || !run.reverts.is_empty()
            || tally.baseline_tree.is_none()
            || tree_state(&self.project.root) != tally.baseline_tree
        {
            return None;
        }
        let what = if code == 127 { "command not found" } else { "found but not executable" };
        Some(Outcome {
            name: "agent_failed",
            code: EXIT_BAD_INPUT,
            reason: format!(
                "the agent `{}` exited {code} ({what}) in iteration {} without changing anything; its output is in {}; {AGENT_FAILED_NEXT}",
                p.settings.agent, self.last_iteration, run.log
            ),
        })
    }

    /// An iteration whose only effect was denied tool calls (the tree as before the agent, no
    /// revert, denials listed): the next would be denied the same, so the run stops (exit 3,
    /// outcome `denied`) naming the setting that allows them.
    fn only_denied(&self, run: &AgentRun) -> Option<Outcome> {
        if run.denials.is_empty() || run.tree_unchanged != Some(true) || !run.reverts.is_empty() {
            return None;
        }
        Some(Outcome {
            name: "denied",
            code: EXIT_CAP,
            reason: format!(
                "iteration {} changed nothing and Claude Code denied {} tool call{} ({}); next: {}, then kit loop",
                self.last_iteration,
                run.denials.len(),
                if run.denials.len() == 1 { "" } else { "s" },
                run.denials.iter().map(|d| d.pattern()).collect::<Vec<_>>().join(", "),
                agent::denial_setting(&run.denials)
            ),
        })
    }

    /// The limit the agent's run ended on, if it ended by itself (a timeout, the memory cap, a
    /// pause or a stop is never a limit) and its output says so ([`limits::classify_log`]).
    fn limit_of(&self, p: &Prepared, run: &AgentRun) -> Option<limits::Limit> {
        let e = &run.ended;
        if e.timed_out || e.memory_killed || e.interrupted || e.paused || run.wall_cut {
            return None;
        }
        let dialect = match p.settings.spec.format() {
            agent::OutputFormat::ClaudeStreamJson => limits::Dialect::Claude,
            agent::OutputFormat::CodexJson => limits::Dialect::Codex,
            agent::OutputFormat::Detect => limits::Dialect::Either,
        };
        let log = self.project.root.join(&run.log);
        let mut limit = limits::classify_log(&log, dialect, crate::clock::now())?;
        // Codex's text may give no reset ("try again later"); its rollout's last rate-limit
        // snapshot then does, when a window is at 100 %.
        if p.settings.spec.is_codex() && limit.kind == limits::Kind::Usage && limit.until.is_none()
        {
            limit.until = agent::codex_last_rate_limits(&log)
                .and_then(|r| limits::codex_reset_from_rate_limits(&r));
        }
        Some(limit)
    }

    /// Wait out `limit` after iteration `iteration`: journal `limit_wait`, sleep on the kit
    /// clock until the reset (plus a margin) or for the backoff, bounded by the wall cap and cut
    /// short by `kit pause` or a stop signal, journal `limit_resume`, and give the iteration
    /// number back so the next one retries it. Returns the outcome when the run stops.
    fn wait_out_limit(
        &mut self,
        p: &mut Prepared,
        tally: &mut Tally,
        iteration: u64,
        limit: &limits::Limit,
    ) -> Result<Option<Outcome>> {
        tally.limit_streak += 1;
        let now = crate::clock::now();
        let (want, backoff) = limits::wait_for(limit, now, tally.limit_streak);
        let remaining = p.settings.max_wall.saturating_sub(p.wall_used());
        let beyond = want > remaining;
        let wait = want.min(remaining);
        let agent = match p.settings.spec {
            AgentSpec::Claude => "claude",
            AgentSpec::Codex => "codex",
            AgentSpec::Fake(_) => "fake",
            AgentSpec::FakeCodex(_) => "fake-codex",
            AgentSpec::Shell(_) => "command",
        };
        self.journal(
            "limit_wait",
            json!({
                "iteration": iteration,
                "agent": agent,
                "kind": limit.kind.name(),
                "until": limit.until.map(crate::clock::format_ts),
                "wait_s": wait.as_secs(),
                "backoff": backoff,
                "message": limit.message,
            }),
        )?;
        let what = match limit.kind {
            limits::Kind::Usage => "usage limit",
            limits::Kind::Rate => "rate limit",
        };
        let line = match (limit.until, beyond) {
            (Some(t), false) => format!(
                "loop: {what} reached; waiting until {} ({}), bounded by the wall cap",
                limits::describe_until(t),
                limits::describe_wait(wait)
            ),
            (Some(t), true) => format!(
                "loop: {what} reached; it resets at {}, after the wall cap ends: waiting out the remaining {}",
                limits::describe_until(t),
                limits::describe_wait(wait)
            ),
            (None, _) => format!(
                "loop: {what} reached, no reset time given; backing off {}, bounded by the wall cap",
                limits::describe_wait(wait)
            ),
        };
        self.say(line.clone());
        let env = [
            ("KIT_OUTCOME", line),
            ("KIT_RUN_ID", self.run_id().to_string()),
            ("KIT_ITERATION", iteration.to_string()),
        ];
        notify::fire(&self.project, &self.journal, "limit", &env);
        let stop = self.stop;
        let pause_file = self.project.pause();
        let step =
            if crate::clock::is_fake() { Duration::from_secs(60) } else { Duration::from_secs(1) };
        let (slept, cut) =
            limits::sleep_interruptibly(wait, step, &mut |d| crate::clock::sleep(d), &mut || {
                if stop.requested().is_some() {
                    Some("interrupted")
                } else if pause_file.exists() {
                    Some("paused")
                } else {
                    None
                }
            });
        if crate::clock::is_fake() {
            p.waited += slept;
            self.waited += slept;
        }
        let cut = cut.or(beyond.then_some("wall"));
        self.journal(
            "limit_resume",
            json!({ "iteration": iteration, "waited_s": slept.as_secs(), "cut_short": cut }),
        )?;
        // Not an iteration: the next one has the same number.
        self.iterations_run = self.iterations_run.saturating_sub(1);
        self.last_iteration = iteration - 1;
        match cut {
            Some("interrupted") => Ok(self.interrupted()),
            Some("paused") => {
                let paused = pause::read(&self.project).unwrap_or(pause::Paused::ByHand);
                self.paused(&paused, false).map(Some)
            }
            Some(_) => {
                let [_, (which, used, limit_s, words), ..] = self.caps(p, tally);
                let mut o = self.cap_reached(which, used, limit_s, &words, tally)?;
                if let Some(t) = limit.until {
                    o.reason = format!(
                        "{}; the {what} resets at {}, after the wall cap ends",
                        o.reason,
                        limits::describe_until(t)
                    );
                }
                Ok(Some(o))
            }
            None => {
                self.say(format!(
                    "loop: waited {} for the {what}; retrying iteration {iteration}",
                    limits::describe_wait(slept)
                ));
                Ok(None)
            }
        }
    }

    /// Step 4, once: prompt, agent, restore, criteria on a verified tree, progress.
    fn iteration(&mut self, p: &mut Prepared, tally: &mut Tally) -> Result<Option<Outcome>> {
        let iteration = self.last_iteration + 1;
        self.last_iteration = iteration;
        self.iterations_run += 1;
        let run = self.run_agent(p, tally, iteration)?;
        tally.reverts.clear();
        tally.reverts.extend(run.reverts.iter().map(describe_revert));
        if let Some(o) = self.interrupted() {
            return Ok(Some(o));
        }
        if run.ended.paused {
            let paused = pause::read(&self.project).unwrap_or(pause::Paused::ByHand);
            return self.paused(&paused, true).map(Some);
        }
        if run.wall_cut {
            // The wall cap ended the agent; the criteria would only run past it.
            let [_, (which, used, limit, words), ..] = self.caps(p, tally);
            return self.cap_reached(which, used, limit, &words, tally).map(Some);
        }
        if let Some(limit) = self.limit_of(p, &run) {
            return self.wait_out_limit(p, tally, iteration, &limit);
        }
        tally.limit_streak = 0;
        if let Some(o) = self.agent_failed(p, tally, &run) {
            return Ok(Some(o));
        }
        if let Some(o) = self.only_denied(&run) {
            return Ok(Some(o));
        }

        let c = self.check(p, iteration, "after_criteria")?;
        if let Some(o) = self.interrupted() {
            return Ok(Some(o));
        }
        if !c.late.is_empty() {
            self.say(format!(
                "iteration {iteration}: reverted {} (changed while the criteria ran)",
                list_reverts(&c.late)
            ));
        }
        tally.reverts.extend(c.late.iter().map(describe_revert));
        let (commit, dirty) = git_head(&self.project.root);
        let closer = tally.seen_failures.insert(failure_fingerprint(&c.views));
        let progress = c.passed > tally.best || closer;
        tally.no_progress = if progress { 0 } else { tally.no_progress + 1 };
        tally.best = tally.best.max(c.passed);
        tally.failures = c.failures();
        self.journal(
            "criteria",
            json!({
                "iteration": iteration,
                "results": c.results,
                "passed": c.passed,
                "total": c.views.len(),
                "commit": commit,
                "dirty": dirty,
                "verified": c.late.is_empty(),
                "progress": progress,
                "no_progress": tally.no_progress,
            }),
        )?;
        self.say(format!(
            "iteration {iteration}: {} of {} criteria pass{}",
            c.passed,
            c.views.len(),
            if c.late.is_empty() { "" } else { " (not counted: the tree changed meanwhile)" }
        ));
        if !c.all_pass() {
            return Ok(None);
        }
        self.say(c.canary_line());
        let done = Outcome {
            name: "done",
            code: EXIT_OK,
            reason: format!(
                "every criterion passes ({} of {}) at iteration {iteration}",
                c.passed,
                c.views.len()
            ),
        };
        self.accept_done(p, tally, iteration, &c, done)
    }

    /// Write the prompt, run the agent under its timeout and memory cap, end its leftovers,
    /// restore the frozen files, journal `agent_end` (with usage and cost) and the cheats.
    /// Returns the reverts and how the agent ended.
    fn run_agent(
        &mut self,
        p: &mut Prepared,
        tally: &mut Tally,
        iteration: u64,
    ) -> Result<AgentRun> {
        let nnn = format!("{iteration:03}");
        let prompt_file = self.project.runs().join(format!("{nnn}.prompt.md"));
        let log = self.project.runs().join(format!("{nnn}.log"));
        let text = prompt::render(&prompt::PromptInput {
            iteration,
            root: &self.project.root,
            goal: &self.project.goal(),
            progress: &self.project.progress(),
            handoff: &self.project.handoff(),
            failures: &tally.failures,
            reverts: &tally.reverts,
            denials: &tally.denials,
        });
        // The last agent may have removed `longrun/.runs/` (`git clean -fdx`, `rm -rf longrun`).
        crate::atomic::create_dir_all(&self.project.runs())?;
        crate::atomic::write_atomic(&prompt_file, text.as_bytes())?;
        self.journal(
            "iteration_start",
            json!({ "iteration": iteration, "prompt": rel(&self.project, &prompt_file) }),
        )?;
        let s = &p.settings;
        let remaining = s.max_wall.saturating_sub(p.wall_used());
        let timeout = s.timeout.min(remaining).max(Duration::from_secs(1));
        let pause_path = self.project.pause();
        let tree_before = tree_state(&self.project.root);
        let launch = Launch {
            spec: &s.spec,
            setup: &s.setup,
            root: &self.project.root,
            prompt_file: &prompt_file,
            iteration,
            log: &log,
            timeout,
            grace: s.grace,
            memory_max: s.memory_max,
            enforcer: p.enforcer,
            stop: Some(self.stop),
            pause_file: Some(&pause_path),
            longrun: Some(&self.project.dir),
        };
        let journal = self.journal.clone();
        let log_rel = rel(&self.project, &log);
        let boot = procs::boot_id();
        let out = &mut *self.out;
        // The journal is append-only: from here on, what it holds must stay. Sealed before the
        // agent exists, so that nothing it did can be taken for kit's own record.
        p.guard.seal_journal()?;
        let mut start_record = Value::Null;
        let sealed_len = journal_len(&self.project.journal());
        let mut own = None;
        let ended = agent::run(&launch, &mut |started| {
            start_record = json!({
                "iteration": iteration,
                "pid": started.pid,
                "pgid": started.pgid,
                "starttime": started.starttime,
                "boot_id": boot,
                "command": started.command,
                "log": log_rel,
            });
            // The agent already runs: its lines may come before or after this one, so kit
            // keeps the exact range of its own line rather than a length.
            own = Some(journal.append_at("agent_start", start_record.clone())?.1);
            let _ = writeln!(
                out,
                "iteration {iteration}: agent started (pid {}, pgid {})",
                started.pid, started.pgid
            );
            let _ = out.flush();
            Ok(())
        })?;
        // Restore before kit writes again: a journal the agent cut is put back first, and then
        // ends before this iteration's agent_start, which is written again.
        let forged = cut_appends(&self.project.journal(), sealed_len, own.as_slice())?;
        let reverts = restore(&p.guard)?;
        if forged {
            self.journal(
                "cheat",
                json!({ "iteration": iteration, "phase": "after_agent", "path": "longrun/journal.jsonl", "kind": "journal_appended" }),
            )?;
            self.say(format!(
                "iteration {iteration}: removed lines the agent appended to longrun/journal.jsonl"
            ));
        }
        let journal_rel = rel_path(&self.project, &self.project.journal());
        if reverts.iter().any(|r| Path::new(&r.path) == journal_rel) {
            self.journal("agent_start", start_record)?;
        }
        let wall_cut = ended.timed_out && timeout < p.settings.timeout;
        let mut usage = agent::read_usage(&log, p.settings.spec.format());
        let errors = match &p.settings.spec {
            AgentSpec::Codex => {
                // The stream never names the model: config.toml's `-m`, else the rollout.
                if let Some(u) = usage.as_mut().filter(|u| u.model.is_none()) {
                    u.model = agent::codex_model(&log, &p.settings.setup);
                }
                agent::codex_errors(&log)
            }
            AgentSpec::FakeCodex(_) => {
                // The fake is given no `-m`: its rollout names the model.
                if let Some(u) = usage.as_mut().filter(|u| u.model.is_none()) {
                    u.model = agent::codex_thread_id(&log)
                        .and_then(|id| agent::codex_rollout_model(&agent::codex_home()?, &id));
                }
                agent::codex_errors(&log)
            }
            _ => Vec::new(),
        };
        let priced = usage.as_ref().map(|u| agent::price(u, &p.prices)).unwrap_or_default();
        if !priced.unpriced.is_empty() {
            self.journal(
                "unpriced",
                json!({
                    "iteration": iteration,
                    "models": priced.unpriced,
                    "reported_cost_usd": usage.as_ref().and_then(|u| u.reported_cost_usd),
                }),
            )?;
            self.say(format!(
                "iteration {iteration}: {} not in kit's price table: counted ${:.4} (the agent's own \
                 figure, 0 if it gave none), so the cost cap cannot be trusted; add \
                 [prices.\"MODEL\"] to longrun/config.toml{}",
                priced.unpriced.join(", "),
                priced.cost_usd,
                if matches!(p.settings.spec, AgentSpec::Codex) {
                    " or set [agent] model (passed as -m)"
                } else {
                    ""
                }
            ));
        }
        tally.cost_usd += priced.cost_usd;
        self.journal(
            "agent_end",
            json!({
                "iteration": iteration,
                "exit": ended.exit,
                "signal": ended.signal,
                "timed_out": ended.timed_out && !wall_cut,
                "wall_cut": wall_cut,
                "interrupted": ended.interrupted,
                "paused": ended.paused,
                "memory_killed": ended.memory_killed,
                "enforcer": p.enforcer.name(),
                "peak_rss_bytes": ended.peak_rss_bytes,
                "leftovers_killed": ended.leftovers_killed,
                "usage": usage,
                "cost_usd": priced.cost_usd,
                "duration_ms": ended.duration_ms,
                "errors": errors,
            }),
        )?;
        let cost = if priced.cost_usd > 0.0 {
            format!(", ${:.4}", priced.cost_usd)
        } else {
            String::new()
        };
        let said = match errors.last() {
            Some(e) => format!("; codex: {e}"),
            None => String::new(),
        };
        self.say(format!(
            "iteration {iteration}: agent {} after {}{cost}{said}",
            describe_end(&ended, wall_cut, p.enforcer),
            format_duration(Duration::from_millis(ended.duration_ms)),
        ));
        let denials = match p.settings.spec {
            AgentSpec::Codex | AgentSpec::FakeCodex(_) => Vec::new(),
            _ => agent::read_denials(&log),
        };
        if !denials.is_empty() {
            self.journal(
                "permission_denials",
                json!({
                    "iteration": iteration,
                    "denials": denials,
                    "setting": "agent.allowed_tools",
                    "suggest": agent::denial_setting(&denials),
                }),
            )?;
            self.say(format!(
                "iteration {iteration}: Claude Code denied {} tool call{}: {}; to allow: {}",
                denials.len(),
                if denials.len() == 1 { "" } else { "s" },
                denials.iter().map(|d| d.pattern()).collect::<Vec<_>>().join(", "),
                agent::denial_setting(&denials)
            ));
        }
        tally.denials = denials.iter().map(agent::Denial::describe).collect();
        self.cheats(&reverts, iteration, "after_agent")?;
        if !reverts.is_empty() {
            self.say(format!("iteration {iteration}: reverted {}", list_reverts(&reverts)));
        }
        if ended.log_recovered {
            self.journal(
                "cheat",
                json!({ "iteration": iteration, "phase": "after_agent", "path": log_rel, "kind": "run_log_deleted" }),
            )?;
            self.say(format!(
                "iteration {iteration}: the agent deleted {log_rel}; kit wrote it again from its open copy"
            ));
        }
        let tree_unchanged =
            tree_before.is_some().then(|| tree_state(&self.project.root) == tree_before);
        Ok(AgentRun { reverts, ended, wall_cut, log: log_rel, denials, tree_unchanged })
    }

    /// Run every criterion on a sealed journal, end what the criteria left running, and restore
    /// again: a revert now means the results ran on a tree that was not the verified one.
    fn check(&mut self, p: &mut Prepared, iteration: u64, phase: &str) -> Result<Check> {
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
            self.journal(
                "cheat",
                json!({ "iteration": iteration, "phase": phase, "path": "longrun/journal.jsonl", "kind": "journal_appended" }),
            )?;
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
            skipped: Vec::new(),
        };
        for &(line, now, then) in &newly_skipped {
            self.journal(
                "cheat",
                json!({ "iteration": iteration, "phase": phase, "path": "longrun/goal.md", "kind": "tests_skipped", "line": line, "skipped": now, "skipped_at_start": then }),
            )?;
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
    fn prove(
        &mut self,
        p: &Prepared,
        iteration: u64,
        phase: &str,
        check: &mut Check,
    ) -> Result<()> {
        check.tampered = p.env.tampered();
        for (name, path) in &check.tampered {
            self.journal(
                "cheat",
                json!({ "iteration": iteration, "phase": phase, "path": path, "kind": "criteria_program_changed", "program": name }),
            )?;
            self.say(format!(
                "iteration {iteration}: {name} ({}), which the criteria run, changed since the loop started: done refused",
                path.display()
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
        self.journal(
            "canary",
            json!({ "iteration": iteration, "phase": phase, "results": results }),
        )?;
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

    /// The outcome when kit was asked to stop by hand.
    fn interrupted(&self) -> Option<Outcome> {
        let sig = self.stop.requested()?;
        Some(Outcome {
            name: "interrupted",
            code: signals::EXIT_INTERRUPTED,
            reason: format!(
                "stopped by {}; the running processes were ended and the frozen files restored; kit loop goes on from iteration {}",
                sig.as_str(),
                self.last_iteration + 1
            ),
        })
    }

    /// Journal each revert as a cheat.
    fn cheats(&mut self, reverts: &[Revert], iteration: u64, phase: &str) -> Result<()> {
        for r in reverts {
            self.journal(
                "cheat",
                json!({ "iteration": iteration, "phase": phase, "path": r.path, "kind": r.kind }),
            )?;
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
                    self.journal(
                        "frozen_commit",
                        json!({ "iteration": iteration, "commits": commits, "paths": paths }),
                    )?;
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

/// When every criterion exited 127 (`sh`: command not found) at the baseline, no agent can make
/// one pass: the error (exit 2) names each criterion's goal.md line and the missing program, read
/// from the shell's `…: NAME: not found` line (else the command's first word).
fn commands_not_found(project: &Project, views: &[CriterionView]) -> Option<Error> {
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
fn skipped_tests(tail: &str) -> u64 {
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

/// End any process a criterion left running in the background (kit being a subreaper, it was
/// re-parented to kit), so nothing edits the tree after it was verified.
fn end_strays() -> Result<()> {
    procs::end_tree(std::process::id() as i32, 0, Duration::from_secs(10)).map(|_| ()).map_err(
        |alive| Error::internal(format!("processes {alive:?} left by a criterion survive SIGKILL")),
    )
}

/// The journal's length in bytes (0 when missing).
fn journal_len(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// The journal is kit's record: lines appended after `base` (its length when kit last sealed it)
/// by anyone else while the agent or the criteria ran are cut off, except kit's own lines at the
/// byte ranges `own`, `hook` events (kit's hook runs inside the agent's session) and
/// `handoff_saved` events (`kit handoff save`, run by the agent as its hook asks, journals the
/// save that `kit handoff verify` checks; a forged one proves nothing without the keyed stamp
/// id, see `crate::handoff`). Returns
/// whether anything was cut. A journal shorter than `base` or rewritten is the guard's business
/// (its sealed prefix).
///
/// Errors: [`Error::Io`] when the journal cannot be read or rewritten.
/// Journal events written by kit commands the agent runs during an iteration, kept by
/// [`cut_appends`].
const KEPT_AGENT_EVENTS: [&str; 2] = ["hook", "handoff_saved"];

fn cut_appends(path: &Path, base: u64, own: &[std::ops::Range<u64>]) -> Result<bool> {
    use crate::error::IoContext;
    let Ok(bytes) = std::fs::read(path) else { return Ok(false) };
    let Ok(cut) = usize::try_from(base) else { return Ok(false) };
    if bytes.len() <= cut {
        return Ok(false);
    }
    let (kept, extra) = bytes.split_at(cut);
    let mut out = kept.to_vec();
    let mut dropped = false;
    let mut at = base;
    for line in extra.split_inclusive(|&b| b == b'\n') {
        let range = at..at + line.len() as u64;
        at = range.end;
        let whole = line.ends_with(b"\n");
        let keep = whole
            && (own.contains(&range)
                || serde_json::from_slice::<Value>(line)
                    .is_ok_and(|v| KEPT_AGENT_EVENTS.contains(&history::event_name(&v))));
        if keep {
            out.extend_from_slice(line);
        } else {
            dropped = true;
        }
    }
    if dropped {
        let perm = {
            use std::os::unix::fs::PermissionsExt;
            std::fs::metadata(path).at(path)?.permissions().mode() & 0o7777
        };
        crate::atomic::write_atomic_mode(path, &out, perm)?;
    }
    Ok(dropped)
}

/// Put the frozen files (and the journal's sealed prefix) back.
///
/// Errors: a file that cannot be restored stops the loop: it never goes on with an unprotected
/// tree.
fn restore(guard: &Guard) -> Result<Vec<Revert>> {
    guard.restore().map_err(|e| {
        Error::internal(format!("cannot restore the frozen files: {e}"))
            .with_hint("kit freeze --check, then kit loop")
    })
}

fn below_level(project: &Project, level: u8, required: u8, rating: &crate::goal::Rating) -> Error {
    let mut msg = format!(
        "goal.md rates level {level}, below the level {required} that config.toml requires before a loop may start"
    );
    for reason in rating.reasons.iter().skip(level as usize).take((required - level) as usize) {
        msg.push_str(&format!("\n  {reason}"));
    }
    for s in &rating.shortcuts {
        msg.push_str(&format!("\n  shortcut at line {}: {}", s.line, s.what));
    }
    Error::input(rel_path(project, &project.goal()), None, msg)
        .with_hint("kit goal check (it names every reason and shortcut)")
}

fn describe_revert(r: &Revert) -> String {
    format!(
        "{} ({}): kit restored it from the frozen copy; frozen files are not yours to change",
        r.path,
        r.kind.describe()
    )
}

fn list_reverts(rs: &[Revert]) -> String {
    rs.iter().map(|r| format!("{} ({})", r.path, r.kind.describe())).collect::<Vec<_>>().join(", ")
}

fn describe_end(e: &agent::Ended, wall_cut: bool, enforcer: Enforcer) -> String {
    if e.interrupted {
        "stopped by hand".into()
    } else if e.paused {
        "stopped at once by kit pause --now".into()
    } else if e.memory_killed {
        format!("killed at the memory cap by the {}", enforcer.name())
    } else if wall_cut {
        "stopped at the wall-time cap".into()
    } else if e.timed_out {
        "killed at the timeout".into()
    } else if let Some(code) = e.exit {
        format!("exited {code}")
    } else {
        format!("ended by signal {}", e.signal.unwrap_or(0))
    }
}

fn rel(project: &Project, p: &Path) -> String {
    rel_path(project, p).display().to_string()
}

fn rel_path(project: &Project, p: &Path) -> PathBuf {
    p.strip_prefix(&project.root).map(Path::to_path_buf).unwrap_or_else(|_| p.to_path_buf())
}

/// HEAD's commit id (`none` before the first commit) and whether the tree has changes.
fn git_head(root: &Path) -> (String, bool) {
    let head = git_rev(root, "HEAD").unwrap_or_else(|| "none".into());
    let dirty =
        crate::git::lines_in(root, &["status", "--porcelain", "--", ".", ":(exclude)longrun"])
            .is_some_and(|l| !l.is_empty());
    (head, dirty)
}

/// What the failing criteria say, as one sha256: per failing criterion its goal.md line, exit
/// status, timeout, missed expectations and last output lines, with what changes from run to run
/// without meaning anything removed (decimal numbers such as `0.004s`, hex addresses such as
/// `0x7f3a…`). Equal fingerprints: the criteria failed the same way.
fn failure_fingerprint(views: &[CriterionView]) -> String {
    use std::sync::LazyLock;
    static NOISE: LazyLock<regex::Regex> =
        LazyLock::new(|| regex::Regex::new(r"\d+\.\d+|0x[0-9a-fA-F]+").expect("a valid pattern"));
    let mut text = String::new();
    for v in views.iter().filter(|v| !v.passed) {
        text.push_str(&format!(
            "{}\u{0}{:?}\u{0}{}\u{0}{}\u{0}{}\u{1}",
            v.line,
            v.exit,
            v.timed_out,
            v.missing.join("\u{0}"),
            NOISE.replace_all(&v.output_tail, "#")
        ));
    }
    crate::frozen::manifest::sha256_hex(text.as_bytes())
}

/// `git rev-parse --verify REV` in `root`, with kit's safe git settings.
fn git_rev(root: &Path, rev: &str) -> Option<String> {
    crate::git::lines_in(root, &["rev-parse", "--verify", "-q", rev])?.into_iter().next()
}

/// The repository's own git settings an agent could plant to run code outside the loop or change
/// what git shows: every `git config --local` entry, and each hook in the hooks folder that is not
/// a `.sample`, as `hooks/NAME`. Compared before and after a run.
fn git_settings(root: &Path) -> Vec<String> {
    let mut out = crate::git::lines_in(root, &["config", "--local", "--list"]).unwrap_or_default();
    // The default hooks folder and the one `core.hooksPath` names, if any.
    let mut dirs =
        crate::git::lines_in(root, &["rev-parse", "--git-path", "hooks"]).unwrap_or_default();
    let common = crate::git::lines_in(root, &["rev-parse", "--git-common-dir"]).unwrap_or_default();
    if let Some(common) = common.first() {
        dirs.push(format!("{common}/hooks"));
    }
    dirs.sort();
    dirs.dedup();
    for dir in &dirs {
        let dir = root.join(dir);
        if let Ok(rd) = std::fs::read_dir(&dir) {
            let mut names: Vec<String> = rd
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !n.ends_with(".sample"))
                .map(|n| format!("hooks/{n}"))
                .collect();
            names.sort();
            out.extend(names);
        }
    }
    out
}

/// The ref where kit keeps the user's uncommitted work from before a loop started.
pub const CHECKPOINT_REF: &str = "refs/kit/checkpoint";

/// Keep the uncommitted state of the tree (outside `longrun/`, tracked and untracked files that
/// are not ignored) as a commit on [`CHECKPOINT_REF`], without touching the tree, the index or
/// HEAD: what an agent's `git stash -u` or `git clean -fdx` later sweeps away can be restored
/// with `git checkout refs/kit/checkpoint -- .`. Returns the commit id; None when git cannot
/// make it (the loop goes on, and says so).
fn checkpoint(root: &Path, label: &str) -> Option<String> {
    let tree = tree_state(root)?;
    // kit's own identity for its commit, whatever the user's git has.
    let git = |args: &[&str]| {
        let mut all = vec!["-c", "user.name=kit", "-c", "user.email=kit@localhost"];
        all.extend_from_slice(args);
        crate::git::lines_in(root, &all)
    };
    let head = git_rev(root, "HEAD");
    let msg = format!("kit checkpoint: the tree before {label}");
    let mut args = vec!["commit-tree", tree.as_str(), "-m", msg.as_str()];
    if let Some(h) = &head {
        args.extend(["-p", h.as_str()]);
    }
    let commit = git(&args)?.into_iter().next()?;
    git(&["update-ref", "--create-reflog", "-m", &msg, CHECKPOINT_REF, &commit])?;
    Some(commit)
}

/// The id of the working tree outside `longrun/` as git would store it (`git write-tree` over a
/// scratch copy of the index after `git add -A`), so equal trees give equal ids whether or not
/// they are committed. None when git cannot say.
fn tree_state(root: &Path) -> Option<String> {
    let scratch = tempfile::tempdir().ok()?;
    let index = scratch.path().join("index");
    let real = crate::git::command_in(root)
        .args(["rev-parse", "--path-format=absolute", "--git-path", "index"])
        .output()
        .ok()?;
    let real = PathBuf::from(String::from_utf8_lossy(&real.stdout).trim());
    if real.is_file() {
        std::fs::copy(&real, &index).ok()?;
    }
    let git = |args: &[&str]| {
        crate::git::command_in(root)
            .args(args)
            .env("GIT_INDEX_FILE", &index)
            .output()
            .ok()
            .filter(|o| o.status.success())
    };
    git(&["add", "-A", "--", ".", ":(exclude)longrun"])?;
    let out = git(&["write-tree"])?;
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The next step after an agent that `sh` could not start (outcome `agent_failed`).
const AGENT_FAILED_NEXT: &str = "next: fix the agent command (kit loop --agent 'COMMAND', or [agent] command in longrun/config.toml), try it by hand in the repository root, then kit loop";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::goal::Budget;

    #[test]
    fn skipped_tests_are_read_from_unittest_and_pytest_summaries() {
        for (tail, n) in [
            ("Ran 3 tests in 0.001s\n\nOK (skipped=2)", 2),
            ("FAILED (failures=1, skipped=4)", 4),
            ("===== 3 passed, 2 skipped in 0.12s =====", 2),
            ("Ran 3 tests in 0.001s\n\nOK", 0),
            ("test_skip_when_x (t.T) ... ok", 0),
        ] {
            assert_eq!(skipped_tests(tail), n, "{tail}");
        }
    }

    #[test]
    fn agent_lines_are_cut_whether_they_land_before_or_after_kits_own_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.jsonl");
        let j = Journal::new(&path);
        j.append("loop_start", json!({})).unwrap();
        let base = journal_len(&path);
        let forged = "{\"ts\":\"x\",\"event\":\"loop_end\",\"outcome\":\"done\"}";
        crate::atomic::append_line(&path, forged).unwrap(); // the agent, before kit's line
        let own = j.append_at("agent_start", json!({"iteration": 1})).unwrap().1;
        crate::atomic::append_line(&path, "{\"ts\":\"x\",\"event\":\"hook\"}").unwrap();
        // `kit handoff save`, run by the agent, journals its save: kept like a hook event.
        crate::atomic::append_line(&path, "{\"ts\":\"x\",\"event\":\"handoff_saved\"}").unwrap();
        crate::atomic::append_line(&path, forged).unwrap(); // and after
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, b"{\"torn"))
            .unwrap();
        assert!(cut_appends(&path, base, &[own]).unwrap());
        let events: Vec<String> = crate::longrun::journal::read(&path)
            .unwrap()
            .events
            .iter()
            .map(|e| e["event"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(events, ["loop_start", "agent_start", "hook", "handoff_saved"]);
        assert!(std::fs::read(&path).unwrap().ends_with(b"\n"));
    }

    #[test]
    fn flags_that_turn_a_cap_off_or_name_a_missing_scenario_are_refused() {
        let root = Path::new(".");
        let s = |secs| Some(Duration::from_secs(secs));
        let unknown = format!(
            "no fake-agent scenario `bogus`; the scenarios are: {}",
            crate::embedded::scenario_names().join(", ")
        );
        let cases = [
            (LoopOptions { max_iterations: Some(0), ..Default::default() }, "--max-iterations 0"),
            (LoopOptions { timeout: s(0), ..Default::default() }, "--timeout 0s"),
            (LoopOptions { max_wall: s(0), ..Default::default() }, "--max-wall 0s"),
            (LoopOptions { memory_max: Some(0), ..Default::default() }, "--memory-max 0"),
            (
                LoopOptions { agent: Some("fake:bogus".into()), ..Default::default() },
                unknown.as_str(),
            ),
            (
                LoopOptions { agent: Some("fake:nowhere/s.toml".into()), ..Default::default() },
                "scenario file `./nowhere/s.toml` does not exist",
            ),
        ];
        for (opts, want) in cases {
            let e = opts.check(root).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{opts:?}");
            assert!(e.to_string().contains(want), "{opts:?}: {e}");
        }
        let fine = LoopOptions {
            max_iterations: Some(1),
            timeout: s(1),
            max_wall: s(1),
            memory_max: Some(32 << 20),
            agent: Some("sh ./agent.sh".into()),
            new_run: false,
        };
        fine.check(root).unwrap();
    }

    #[test]
    fn flags_override_config_and_the_goal_budget_wins_when_stricter() {
        let cfg = Config::parse(
            Path::new("config.toml"),
            "[caps]\nmax_iterations = 10\nmax_wall = \"4h\"\nmax_cost_usd = 25.0\n",
        )
        .unwrap();
        let h = |n: u64| Duration::from_secs(n * 3600);
        // (flags, budget) → (iterations, wall, cost)
        let cases = [
            (LoopOptions::default(), Budget::default(), (10, h(4), 25.0)),
            (
                LoopOptions {
                    max_iterations: Some(3),
                    max_wall: Some(h(1)),
                    ..LoopOptions::default()
                },
                Budget::default(),
                (3, h(1), 25.0),
            ),
            (
                LoopOptions { max_iterations: Some(30), ..LoopOptions::default() },
                Budget { iterations: Some(8), wall: Some(h(2)), cost_usd: Some(15.0) },
                (8, h(2), 15.0),
            ),
            (
                LoopOptions::default(),
                Budget { iterations: Some(50), wall: Some(h(9)), cost_usd: Some(99.0) },
                (10, h(4), 25.0),
            ),
        ];
        for (opts, budget, want) in cases {
            let s = Settings::resolve(&cfg, &opts, &budget).unwrap();
            assert_eq!((s.max_iterations, s.max_wall, s.max_cost_usd), want, "{opts:?} {budget:?}");
        }
        let agent = LoopOptions { agent: Some("fake:".into()), ..LoopOptions::default() };
        assert!(Settings::resolve(&cfg, &agent, &Budget::default()).is_err());
    }
}
