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
//! 5. exit 0 done, 3 cap, 4 lock held, 5 paused, 6 needs you, 2 bad goal/config/usage, 1 internal error, and
//!    130 when stopped by hand (Ctrl-C, SIGTERM, SIGHUP: see [`signals`]). The last line printed
//!    names the outcome; the journal's `loop_end` holds why.
//!
//! Caps, all on: iterations, wall time, cost (USD) and consecutive iterations without progress.
//! The cost cap also holds inside an iteration: the agent's API calls are priced as its output
//! streams ([`agent::Meter`]), and when the run's spend plus the running figure reaches the cap
//! the agent's process group is ended (SIGTERM, grace, SIGKILL), `cost_cap` journaled and the
//! run stops (exit 3) within one API call of the cap (Codex: one call while its rollout is
//! followed, else one turn). Claude Code is also given what is left as `--max-budget-usd`.
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
//! Steering: messages of `longrun/inbox.md` (`kit tell`) go into the next iteration's prompt,
//! once (see [`inbox`]); a question the agent asks (`kit ask`) stops the run after its
//! iteration, and a `- human:` criterion stops it once everything else passes, both "needs you"
//! (exit 6) until `kit approve N` (see [`crate::looprun::ask`] and `human.rs`); `[agent] fallback` hands the run to the next agent after a limit too far
//! away or iterations without progress (see `fallback.rs`).
//!
//! Journal events this module writes (`longrun/journal.jsonl`): [`Event`] (see the table in
//! [`crate::longrun::event`], the journal's documented schema).
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
pub mod ask;
mod checks;
pub mod confirm;
pub mod ensure;
mod fallback;
mod human;
mod iteration;
mod ledger;
pub mod limits;
pub mod memcap;
pub mod notify;
mod probe;
pub mod prompt;
mod settings;
mod stops;
mod tree;
mod waits;

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::duration::format_size;
use crate::error::{Error, Result, EXIT_BAD_INPUT, EXIT_CAP, EXIT_OK, EXIT_PAUSED};
use crate::frozen::guard::{Guard, Revert};
use crate::goal::Goal;
use crate::longrun::config::Config;
use crate::longrun::event::{self as ev, Event};
use crate::longrun::journal::Journal;
use crate::longrun::Project;
use crate::prices::PriceTable;
use crate::units::format_duration;

use crate::longrun::history::{CriterionView, History};
use crate::longrun::lock;
use crate::longrun::{durable, inbox, pause, repair};
use crate::proc as procs;
use crate::signals;
use agent::{AgentSpec, Launch};
use memcap::Enforcer;

use crate::git::local_settings as git_settings;
use checks::{commands_not_found, describe_revert, list_reverts, restore};
use iteration::end_strays;
use repair::{cut_appends, journal_len};
pub use tree::CHECKPOINT_REF;
use tree::{checkpoint, failure_fingerprint, git_head, git_rev, tree_state};

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
    /// Accept that function criteria pass at the run's first baseline, before any agent ran
    /// (see [`probe`]): done at iteration 0 is allowed, and those criteria are exempt from the
    /// revert probe.
    pub allow_green_start: bool,
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
    /// `[agent] fallback`: the agents to go on with, in order (see [`fallback`]).
    fallback: Vec<String>,
    /// The longest limit wait before the next fallback agent takes over.
    fallback_after_wait: Duration,
    /// Iterations in a row without progress before the next fallback agent takes over.
    fallback_after_no_progress: u32,
    /// Where the run's agent stands: 0 the first agent (`agent`), k the k-th of `fallback`.
    position: usize,
    /// Where each cap and limit came from: `(name, source)`, source one of `flag`,
    /// `config.toml`, `goal.md budget`, in the order the loop prints them.
    sources: Vec<(&'static str, &'static str)>,
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
    /// `--allow-green-start` (see [`probe`]).
    allow_green_start: bool,
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
    /// USD spent in this run before the last iteration.
    cost_before: f64,
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
    /// The run's start tree (its first baseline's `tree`): what the revert probe checks out.
    start_tree: Option<String>,
    /// goal.md lines of function criteria that passed at the run's first baseline under
    /// `--allow-green-start`: exempt from the revert probe.
    green_allowed: Vec<usize>,
    /// Done at the run's first baseline (allowed): the start tree is the tree, no probe.
    skip_probe: bool,
    /// For the next prompt: the agent takes over from another, who and why (see [`fallback`]).
    takeover: Option<String>,
    /// Questions were journaled since the loop last looked for unanswered ones (see `human.rs`):
    /// set at the start of a loop process and when an iteration's agent asked.
    asks_to_check: bool,
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
    /// Entries in the repository that replace a standard-library module the runner imports
    /// ([`Guard::stdlib_shadows`]), tracked or not.
    shadowed: Vec<String>,
    /// Criteria that pass with more tests skipped than at the first check, as prompt lines.
    skipped: Vec<String>,
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
    /// The cost cap ended the agent, and who ended it.
    cost_cap: Option<iteration::CostCapBy>,
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
        if h.pid != me.pid && h.holds_lock_file(&project.lock()) {
            return Err(Error::Locked { path: project.lock(), holder: h.describe() });
        }
    }
    // Under the lock, before anything is written: continue the last run, start a new one, or
    // refuse a finished one (exit 2, the journal untouched).
    let plan = plan_run(&project, opts)?;
    held.keep();
    let journal = Journal::new(project.journal());
    let run_key = match &plan {
        durable::Plan::Continue(r) => r.key.clone(),
        _ => None,
    }
    .unwrap_or_else(new_run_key);
    let excludes = crate::git::info_exclude(&project.root);
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
        run_key,
        excludes,
    };
    ctx.say(format!("loop: took longrun/.lock (pid {})", me.pid));
    let result = ctx.takeover(&previous).and_then(|()| ctx.run(opts));
    let wall_s = (ctx.began.elapsed() + ctx.waited).as_secs_f64();
    let run_id = ctx.run_id();
    let run_iterations = ctx.spent().iterations + ctx.iterations_run;
    match result {
        Ok(o) => {
            let _ = ctx.journal.append(&Event::LoopEnd(ev::LoopEnd {
                outcome: o.name.into(),
                iterations: ctx.iterations_run,
                iteration: ctx.last_iteration,
                reason: o.reason.clone(),
                exit: o.code,
                run: Some(run_id),
                run_iterations: Some(run_iterations),
                wall_s: Some(wall_s),
            }));
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
            let _ = ctx.journal.append(&Event::LoopEnd(ev::LoopEnd {
                outcome: outcome.into(),
                iterations: ctx.iterations_run,
                iteration: ctx.last_iteration,
                reason: e.to_string(),
                exit: code,
                run: Some(run_id),
                run_iterations: Some(run_iterations),
                wall_s: Some(wall_s),
            }));
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
    Ok(ask::after_needs_you(durable::plan(&history, &settings.limits(), opts.new_run)))
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
    fallback::check_installed(&settings, &project.root)?;
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
    let first = &drifts[0].path;
    Err(Error::usage(format!(
        "the tree does not match the frozen manifest: {}; kit will not overwrite a change made \
         before the loop started",
        crate::frozen::guard::list_drifts(drifts.iter().map(|d| (d.path.as_str(), d.kind)))
    ))
    .with_hint(format!(
        "kit freeze {first} to keep your change as the frozen version, or kit freeze --restore \
         to discard it; then kit loop"
    )))
}

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
    /// The run's key: the continued run's, else a new random one (journaled in `loop_start`,
    /// given to the agent as `KIT_RUN_KEY`).
    run_key: String,
    /// `.git/info/exclude` as this loop process found it when it took the lock: the only
    /// exclude rules besides the tree's `.gitignore` files that kit trusts when it reads the tree
    /// (an exclude written during the run hides nothing, see [`crate::git::work_tree`]).
    excludes: Vec<u8>,
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

    fn journal(&self, event: Event) -> Result<()> {
        self.journal.append(&event).map(|_| ())
    }

    /// Journal a `cheat`: what kit put back (`kind`) at `path` in `phase` of `iteration`.
    fn cheat(&self, iteration: u64, phase: &str, path: &str, kind: &str) -> Result<()> {
        self.journal(Event::Cheat(ev::Cheat {
            iteration,
            phase: phase.into(),
            path: path.into(),
            kind: kind.into(),
            ..ev::Cheat::default()
        }))
    }

    /// Journal the takeover of a dead holder's lock.
    fn takeover(&mut self, previous: &lock::Previous) -> Result<()> {
        match previous {
            lock::Previous::Clean => {}
            lock::Previous::Dead(h) => {
                self.journal(Event::LockTakeover(ev::LockTakeover {
                    previous: json!(h),
                    stale: false,
                }))?;
                self.say(format!("loop: took over the lock of a dead loop ({})", h.describe()));
            }
            lock::Previous::Stale(h) => {
                self.journal(Event::LockTakeover(ev::LockTakeover {
                    previous: json!(h),
                    stale: true,
                }))?;
                self.say(format!(
                    "loop: the lock's holder record names a live process that holds no lock \
                     ({}): the record is stale (the flock was free); took the lock",
                    h.describe()
                ));
            }
            lock::Previous::Unreadable(raw) => {
                self.journal(Event::LockTakeover(ev::LockTakeover {
                    previous: json!({ "raw": raw }),
                    stale: false,
                }))?;
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
        self.journal(Event::Recovered(ev::Recovered {
            iteration: u.iteration,
            pgid: u.pgid,
            killed: killed.clone(),
            same_boot,
        }))?;
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
        // What a killed loop's agent asked or approved and no loop journaled yet.
        self.take_asks(history.last_iteration)?;
        // A run whose loop stopped while it waited out a limit retries that iteration under its
        // own number: the wait was not an iteration.
        let pending = match &self.plan {
            durable::Plan::Continue(r) => durable::pending_limit(r.events(&history)).cloned(),
            _ => None,
        };
        if let Some(w) = &pending {
            self.last_iteration = w.iteration.saturating_sub(1);
        }
        self.announce_run();
        let mut tally = Tally { asks_to_check: true, ..Tally::default() };
        if let durable::Plan::Continue(r) = &self.plan {
            // The journal is the checkpoint: the run's budget and what counts as progress go on
            // from where its last loop process left them.
            tally.cost_usd = r.spent.cost_usd;
            tally.no_progress = r.spent.no_progress;
            tally.limit_streak = durable::limit_streak(r.events(&history));
            tally.flaps = durable::flaps(r.events(&history));
            for e in r.events(&history) {
                let results = match &e.event {
                    Event::Baseline(b) => Some(&b.results),
                    Event::Criteria(c) => Some(&c.results),
                    _ => None,
                };
                if let Some(results) = results {
                    let views = CriterionView::all(results);
                    tally.best = tally.best.max(views.iter().filter(|v| v.passed).count());
                    tally.seen_failures.insert(failure_fingerprint(&views));
                }
            }
        }
        self.start_head = git_rev(&self.project.root, "HEAD");
        let git_before = git_settings(&self.project.root);
        let mut p = self.prepare(opts, &mut tally)?;
        if let durable::Plan::Continue(r) = &self.plan {
            let events = r.events(&history).to_vec();
            self.resume_agent(&mut p, &events)?;
        }
        if let Some(done) = self.baseline(&mut p, &mut tally)? {
            return Ok(done);
        }
        if let Some(w) = &pending {
            if let Some(done) = self.finish_pending_wait(&mut p, &mut tally, w)? {
                return Ok(done);
            }
        }
        let outcome = self.iterate(&mut p, &mut tally);
        // Git settings planted during the run outlive it: kit's own git commands ignore them
        // (`crate::git::command`), the user's git does not.
        let planted: Vec<String> = git_settings(&self.project.root)
            .into_iter()
            .filter(|l| !git_before.contains(l))
            .collect();
        if !planted.is_empty() {
            self.journal(Event::GitConfigChanged(ev::GitConfigChanged { added: planted.clone() }))?;
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
        fallback::check_installed(&settings, &self.project.root)?;
        let commands: Vec<&str> = goal.criteria.iter().map(|c| c.command.as_str()).collect();
        settings.setup = agent::AgentSetup::new(&cfg.agent, &commands);
        let layers = confirm::Layers::new(&cfg, &goal, &self.project)?;
        let guard = Guard::capture(&self.project)?;
        let (enforcer, why) = memcap::detect();
        self.journal(Event::MemoryCap(ev::MemoryCap {
            enforcer: enforcer.name().into(),
            reason: why.clone(),
            max_bytes: settings.memory_max,
        }))?;
        let spent = self.spent();
        let run_started = match &self.plan {
            durable::Plan::Continue(r) => r.started.clone(),
            _ => crate::clock::now_rfc3339(),
        };
        self.journal(Event::LoopStart(ev::LoopStart {
            run: Some(self.run_id()),
            run_started: Some(run_started.clone()),
            run_key: Some(self.run_key.clone()),
            resumed: matches!(self.plan, durable::Plan::Continue(_)),
            spent: json!(spent),
            pid: std::process::id(),
            host: self.lock.holder().host.clone(),
            command: self.lock.holder().command.clone(),
            agent: settings.agent.clone(),
            fallback: settings.fallback.clone(),
            goal: goal.title.clone(),
            level: rating.level,
            first_iteration: self.last_iteration + 1,
            caps: ev::Caps {
                iterations: settings.max_iterations.into(),
                wall_s: settings.max_wall.as_secs(),
                cost_usd: settings.max_cost_usd,
                no_progress: settings.max_no_progress.into(),
            },
            timeout_s: settings.timeout.as_secs_f64(),
            grace_s: settings.grace.as_secs_f64(),
            memory_max_bytes: settings.memory_max,
            cap_sources: settings
                .sources
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            subreaper: subreaper.as_ref().map_or_else(|e| e.clone(), |()| "on".into()),
        }))?;
        self.say(format!(
            "loop: goal \"{}\" (level {}), agent `{}`, memory cap {} by {}",
            goal.title,
            rating.level,
            settings.agent,
            format_size(settings.memory_max),
            enforcer.name()
        ));
        self.say(format!("loop: {}", settings.describe_caps()));
        if let Some(line) = settings.describe_fallback() {
            self.say(format!("loop: {line}"));
        }
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
        // Twin of the note above, for the fake agent as Codex and its own home.
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
        if git_head(&self.project.root, &self.excludes).1 {
            match checkpoint(&self.project.root, "kit loop", &self.excludes) {
                Some(commit) => {
                    self.journal(Event::Checkpoint(ev::Checkpoint {
                        reference: CHECKPOINT_REF.into(),
                        commit: commit.clone(),
                    }))?;
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
        self.journal(Event::CriteriaEnv(ev::CriteriaEnv {
            removed: n.removed.clone(),
            set: n.set.clone(),
            path_dropped: n.path_dropped.clone(),
            pinned: n.pinned.clone(),
            not_found: n.not_found.clone(),
        }))?;
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
            allow_green_start: opts.allow_green_start,
        })
    }

    /// Step 3: the criteria once, before any agent. At the run's first baseline (not the
    /// baseline of a run continued by a later loop process) the tree is journaled as the run's
    /// start tree, and a function criterion that already passes is named: it proves nothing
    /// about the work (red first). All pass on a verified tree → done at iteration 0, except at
    /// a first baseline where a function criterion passes without `--allow-green-start`: done
    /// is refused and the agent runs. A continued run's baseline that passes goes through the
    /// revert probe like any done candidate.
    fn baseline(&mut self, p: &mut Prepared, tally: &mut Tally) -> Result<Option<Outcome>> {
        let earlier = self.run_start()?;
        let first = earlier.is_none();
        let start_tree = match earlier {
            Some((tree, allowed)) => {
                tally.green_allowed = allowed;
                Some(tree)
            }
            None => tree_state(&self.project.root, &self.excludes),
        };
        let c = self.check(p, 0, "baseline")?;
        if let Some(o) = self.interrupted() {
            return Ok(Some(o));
        }
        let (commit, dirty) = git_head(&self.project.root, &self.excludes);
        self.journal(Event::Baseline(ev::Baseline {
            results: json!(c.results),
            passed: c.passed as u64,
            total: c.views.len() as u64,
            commit,
            dirty,
            tree: start_tree.clone(),
            start_of_run: first,
        }))?;
        self.say(format!("baseline: {} of {} criteria pass", c.passed, c.views.len()));
        if let Some(e) = commands_not_found(&self.project, &c.views) {
            return Err(e);
        }
        tally.start_tree = start_tree;
        tally.total = c.views.len();
        tally.best = c.passed;
        tally.baseline_tree = tree_state(&self.project.root, &self.excludes);
        tally.seen_failures.insert(failure_fingerprint(&c.views));
        tally.reverts.extend(c.late.iter().map(describe_revert));
        tally.failures = c.failures();
        let green: Vec<u64> =
            c.views.iter().filter(|v| v.passed && v.kind == "function").map(|v| v.line).collect();
        if first && !green.is_empty() {
            let named = green.iter().map(|l| format!("goal.md:{l}")).collect::<Vec<_>>().join(", ");
            self.journal(Event::GreenStart(ev::GreenStart {
                lines: green.clone(),
                allowed: p.allow_green_start,
                all_pass: c.all_pass(),
            }))?;
            if p.allow_green_start {
                tally.green_allowed = green.iter().map(|&l| l as usize).collect();
                self.say(format!(
                    "baseline: function criteria {named} already pass before any agent ran; \
                     --allow-green-start accepts that (the revert probe leaves them out)"
                ));
            } else {
                self.say(format!(
                    "baseline: function criteria {named} already pass before any agent ran: a \
                     test that passes without the work proves nothing about it (red first)"
                ));
            }
        }
        if !c.all_pass() {
            return Ok(None);
        }
        if first && !green.is_empty() && !p.allow_green_start {
            let named = green.iter().map(|l| format!("goal.md:{l}")).collect::<Vec<_>>().join(", ");
            self.say(format!(
                "baseline: done refused at iteration 0: {named} pass{} before any agent ran; \
                 the agent runs, and done will need the function criteria to fail on the run's \
                 start (the revert probe). If passing already is right, stop and run kit loop \
                 --new-run --allow-green-start",
                if green.len() == 1 { "es" } else { "" }
            ));
            tally.failures = vec![format!(
                "Every criterion passed before you started, including the function criteria \
                 {named}: they pass without any work, so they cannot show that the work is done. \
                 Kit will accept done only when the function criteria fail on the tree as it was \
                 when this run started (the revert probe). Do the work the End state asks for; \
                 if the goal's tests cannot see it, say so in longrun/progress.md for the human."
            )];
            return Ok(None);
        }
        tally.skip_probe = first;
        self.say(c.canary_line());
        let when = if first {
            "at iteration 0, before any agent ran".to_string()
        } else {
            format!(
                "at this loop's baseline, after iteration {} of run {}, before this loop ran an \
                 agent",
                self.last_iteration,
                self.run_id()
            )
        };
        let done = Outcome {
            name: "done",
            code: EXIT_OK,
            reason: format!("every criterion passes ({} of {}) {when}", c.passed, tally.total),
        };
        let outcome = self.accept_done(p, tally, 0, &c, done);
        tally.skip_probe = false;
        outcome
    }

    /// The start tree of the run this loop process continues, and the function criteria its
    /// first baseline allowed green: None when this run has no baseline yet (a new run, or one
    /// whose first loop process stopped before its baseline).
    fn run_start(&self) -> Result<Option<(String, Vec<usize>)>> {
        let durable::Plan::Continue(r) = &self.plan else { return Ok(None) };
        let history = History::read(&self.project.journal())?;
        let events = r.events(&history);
        let Some(tree) = events.iter().find_map(|e| match &e.event {
            Event::Baseline(b) => b.tree.as_deref(),
            _ => None,
        }) else {
            return Ok(None);
        };
        let allowed = events
            .iter()
            .filter_map(|e| match &e.event {
                Event::GreenStart(g) if g.allowed => Some(&g.lines),
                _ => None,
            })
            .flatten()
            .map(|&l| l as usize)
            .collect();
        Ok(Some((tree.to_string(), allowed)))
    }
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

fn rel(project: &Project, p: &Path) -> String {
    rel_path(project, p).display().to_string()
}

fn rel_path(project: &Project, p: &Path) -> PathBuf {
    p.strip_prefix(&project.root).map(Path::to_path_buf).unwrap_or_else(|_| p.to_path_buf())
}

/// The next step after an agent that `sh` could not start (outcome `agent_failed`).
const AGENT_FAILED_NEXT: &str = "next: fix the agent command (kit loop --agent 'COMMAND', or [agent] command in longrun/config.toml), try it by hand in the repository root, then kit loop";

/// A new run's key: 16 hex digits from the system's random source (the time and pid where
/// `/dev/urandom` cannot be read). Not a secret: it only tells one run from another, even
/// under the fake clock, where two runs start at the same instant.
fn new_run_key() -> String {
    use std::io::Read;
    let mut b = [0u8; 8];
    let read = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut b));
    if read.is_err() {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        b = (t ^ (u64::from(std::process::id()) << 32)).to_le_bytes();
    }
    hex::encode(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::goal::Budget;
    use checks::skipped_tests;

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
        j.append(&Event::LoopStart(ev::LoopStart::default())).unwrap();
        let base = journal_len(&path);
        let line = |name, fields| ev::fixture(name, fields).to_string();
        let forged = &line("loop_end", json!({"ts": "x", "outcome": "done"}));
        crate::atomic::append_line(&path, forged).unwrap(); // the agent, before kit's line
        let start = ev::AgentStart { iteration: 1, ..ev::AgentStart::default() };
        let own = j.append_at(&Event::AgentStart(start)).unwrap().1;
        crate::atomic::append_line(&path, &line("hook", json!({"ts": "x"}))).unwrap();
        // `kit handoff save`, run by the agent, journals its save: kept like a hook event.
        crate::atomic::append_line(&path, &line("handoff_saved", json!({"ts": "x"}))).unwrap();
        crate::atomic::append_line(&path, forged).unwrap(); // and after
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, b"{\"torn"))
            .unwrap();
        assert!(cut_appends(&path, base, &[own]).unwrap());
        let events: Vec<String> = crate::longrun::journal::read(&path)
            .unwrap()
            .entries
            .iter()
            .map(|e| e.name().to_string())
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
            crate::fake_agent::scenario_names().join(", ")
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
            allow_green_start: false,
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
