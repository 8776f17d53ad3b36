//! The command line, as clap derive types whose doc comments are the help text. These types stay
//! here: `run` converts them to each module's own options before calling the domain. Values are
//! parsed by clap with kit's parsers (the `value_parser`s at the bottom): a value they refuse is
//! a [`crate::Error`] that names the flag, which `run` prints as kit's own errors (exit 2).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::error::{Error, Result};

/// kit: run a coding agent unattended for hours — a goal as a contract, frozen tests, a headless
/// loop in which the tests decide when the work is done — and measure what it cost.
#[derive(Debug, Parser)]
#[command(name = "kit", version, max_term_width = 100)]
pub(crate) struct Cli {
    /// Run as if kit was started in DIR.
    #[arg(short = 'C', long = "dir", global = true, value_name = "DIR")]
    pub dir: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Command,
}

/// kit's commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create longrun/ with its seven state files in a git repository.
    Init {
        /// A folder in the repository (default: the current one); longrun/ goes at its root.
        #[arg(value_name = "DIR")]
        path: Option<PathBuf>,
    },
    /// Work with longrun/goal.md, the goal as a contract.
    #[command(subcommand)]
    Goal(GoalCommand),
    /// Freeze files (tests, fixtures) so the agent cannot change them, or check for drift.
    ///
    /// Records each file's sha256, size and mode in longrun/frozen.toml and stores a copy in
    /// longrun/.frozen/objects/. A frozen folder also forbids new files under it.
    /// Exit status of --check: 0 clean, 1 drift found, 2 bad input. Freezing and --restore are
    /// refused (exit 4) while a loop runs; --check and --list are not.
    Freeze {
        /// Files or folders to freeze.
        #[arg(required_unless_present_any = ["check", "restore", "list"])]
        paths: Vec<PathBuf>,
        /// Report drift from the manifest instead of freezing (exit 1 when drift is found).
        #[arg(long, conflicts_with_all = ["paths", "restore", "list"])]
        check: bool,
        /// Put every drifted frozen file back from its stored copy; remove new files under
        /// frozen folders.
        #[arg(long, conflicts_with_all = ["paths", "list"])]
        restore: bool,
        /// Print the frozen paths as longrun/frozen.toml records them, one per line, sorted:
        /// each frozen folder with a trailing /, and each frozen file outside them (nothing when
        /// nothing is frozen). Given them again, kit freeze freezes the same paths. A malformed
        /// frozen.toml is an error naming its line (exit 2).
        #[arg(long, conflicts_with = "paths")]
        list: bool,
    },
    /// Run the agent in a headless loop until the goal's criteria pass or a cap is reached.
    Loop(LoopArgs),
    /// Several loops on the goal, each in a git worktree of its own: the first proven done wins.
    ///
    /// Each lane runs kit loop on its own branch kit/race/RUN/LANE, in a worktree inside the
    /// git folder; the cost and wall caps are the race's. The others are stopped when one lane
    /// is done; --merge merges the winner only if your branch has not moved. After a kill, kit
    /// race again continues every lane. The worktrees stay until kit race clean.
    Race(RaceArgs),
    /// Stop the loop cleanly after its current iteration (or its agent at once with --now).
    ///
    /// Writes longrun/PAUSE with who paused and when; while it exists kit loop starts no
    /// iteration and exits 5. The run stays unfinished: after kit resume, kit loop continues it.
    Pause {
        /// Stop the running agent at once, as at a timeout (SIGTERM, grace period, SIGKILL),
        /// without running that iteration's criteria.
        #[arg(long)]
        now: bool,
        /// Why, shown by kit status.
        #[arg(long, value_name = "TEXT")]
        reason: Option<String>,
    },
    /// Remove longrun/PAUSE so that kit loop goes on with the run.
    Resume,
    /// Tell the loop's agent something: it reaches the next iteration's prompt, once.
    ///
    /// Appends a dated entry to longrun/inbox.md (a line added there by hand counts too). At the
    /// start of each iteration the loop puts every message not yet delivered in the prompt and
    /// journals it (`told`: who, when, what); kit status says how many wait.
    Tell {
        /// The message (several words are joined by spaces).
        #[arg(required = true, value_name = "TEXT")]
        text: Vec<String>,
        /// Who tells it (default: your login name).
        #[arg(long, value_name = "NAME")]
        from: Option<String>,
    },
    /// Record a decision for a person: the loop stops "needs you" until kit approve N answers.
    ///
    /// Meant for the agent, from inside an iteration: the loop journals the question (`asked`,
    /// numbered) when the agent ends and stops with exit 6 after that iteration's criteria.
    /// kit status lists it under "needs you" with its number.
    Ask {
        /// The question (several words are joined by spaces).
        #[arg(required = true, value_name = "TEXT")]
        text: Vec<String>,
        /// Who asks (default: your login name).
        #[arg(long, value_name = "NAME")]
        from: Option<String>,
    },
    /// Approve decision N: a `- human:` criterion of goal.md for the tree as it is now, or an
    /// agent's question.
    ///
    /// Journaled (`approval`) with who, when, HEAD and the working tree's id; a human
    /// criterion's approval holds while the tree stays the same. An approval given from inside
    /// an agent iteration never counts (exit 2). Then kit loop goes on.
    Approve {
        /// The decision's number, as kit status shows it.
        #[arg(value_name = "N")]
        number: u64,
        /// What to keep in mind (for an agent's question, it reaches its next prompt).
        #[arg(long, value_name = "TEXT")]
        note: Option<String>,
        /// Who approves (default: your login name).
        #[arg(long, value_name = "NAME")]
        by: Option<String>,
    },
    /// Reject decision N, saying why: done is refused on this tree and the agent gets the note.
    Reject {
        /// The decision's number, as kit status shows it.
        #[arg(value_name = "N")]
        number: u64,
        /// Why (required): the agent's next prompt carries it.
        #[arg(long, value_name = "TEXT", required = true)]
        note: String,
        /// Who rejects (default: your login name).
        #[arg(long, value_name = "NAME")]
        by: Option<String>,
    },
    /// A timer that keeps a loop alive here: kit loop --ensure-alive from systemd or cron.
    #[command(subcommand)]
    Schedule(ScheduleCommand),
    /// Show the loop's state from the journal.
    Status {
        /// Print JSON instead of text.
        #[arg(long, conflicts_with = "watch")]
        json: bool,
        /// Redraw it in place on the terminal until Ctrl-C (read-only: takes no lock).
        #[arg(long)]
        watch: bool,
        /// Time between redraws with --watch (default 2s).
        #[arg(long, value_name = "DUR", requires = "watch", value_parser = interval)]
        interval: Option<Duration>,
        /// Move the "since you last looked" mark even when stdout is not a terminal.
        #[arg(long, conflicts_with = "no_mark")]
        mark: bool,
        /// Leave the "since you last looked" mark where it is.
        #[arg(long)]
        no_mark: bool,
    },
    /// Say what this machine offers the loop (memory cap enforcer, agents found).
    Doctor,
    /// The one-minute tour: a real loop on a sample project with the fake agent.
    Rehearse(RehearseArgs),
    /// Measure sessions from Claude Code and Codex transcripts: tokens, cost, time, context.
    Measure(MeasureArgs),
    /// Search everything said in all transcripts.
    Recall(RecallArgs),
    /// Write one self-contained HTML page of the loop and the sessions (charts, tables).
    Report(ReportArgs),
    /// The context-band hook for Claude Code, its installer and a rehearsal.
    #[command(subcommand)]
    Hook(HookCommand),
    /// Idle-time arithmetic: resend a cold context or start clean from a handoff?
    Cache(CacheArgs),
    /// Find failures that recur in past transcripts and loop journals; propose a rule for each.
    Mine(MineArgs),
    /// Save or verify the handoff (longrun/handoff.md).
    #[command(subcommand)]
    Handoff(HandoffCommand),
    /// Work through the course's exercises in your lab ($KIT_LAB, else ./kit-lab).
    #[command(subcommand)]
    Exercise(ExerciseCommand),
    /// List the lessons and where you are, or show lesson N.
    Lesson {
        /// The lesson to show (plain Markdown when piped: kit lesson 1 > lesson.md).
        #[arg(value_name = "N")]
        number: Option<u32>,
        /// Print where the lesson's files are instead of the lesson.
        #[arg(long, requires = "number", conflicts_with = "lab")]
        path: bool,
        /// Lay out in the lab (`<lab>/lesson-NN-slug/`) the sandbox the lesson's commands run
        /// in, and print how to use it.
        #[arg(long, requires = "number")]
        lab: bool,
    },
    /// Run the kit test catalogue, every exercise's golden and every lesson from this binary,
    /// each case in a temporary sandbox.
    Verify {
        /// Only cases whose file name or case name contains this text.
        #[arg(long, value_name = "TEXT")]
        case: Option<String>,
        /// Only the cases, exercises and README of lesson N.
        #[arg(long, value_name = "N")]
        lesson: Option<u32>,
        /// Print each failure's diff in full.
        #[arg(long, short)]
        verbose: bool,
        /// Cases run at once (default: four per CPU); the output is the same for any N.
        #[arg(long, short, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
        jobs: Option<u16>,
        /// Also write a JUnit XML report to FILE (for CI).
        #[arg(long, value_name = "FILE")]
        junit: Option<PathBuf>,
        /// Rewrite the expected output of failing cases, lesson blocks and exercise goldens in
        /// the checkout's files (as KIT_GOLDEN=overwrite does); wildcards that still match stay.
        #[arg(long)]
        bless: bool,
        /// Print each case's wall time to stderr, slowest first.
        #[arg(long, hide = true)]
        timings: bool,
    },
}

/// `kit schedule …`
#[derive(Debug, Subcommand)]
pub enum ScheduleCommand {
    /// Install a user systemd service and timer (or a crontab line) that runs kit loop
    /// --ensure-alive for this repository; installing again changes nothing.
    Install {
        /// A user systemd service and timer (default where systemctl --user answers).
        #[arg(long, conflicts_with = "cron")]
        systemd: bool,
        /// A crontab line with flock (default where there is no user systemd).
        #[arg(long)]
        cron: bool,
        /// How often: minutes that divide 60 or hours that divide 24.
        #[arg(long, value_name = "DUR", default_value = "10m", value_parser = every)]
        every: Duration,
        /// Print exactly what would be written; change nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Remove this repository's units or crontab line (only kit's own).
    Remove {
        /// The user systemd units.
        #[arg(long, conflicts_with = "cron")]
        systemd: bool,
        /// The crontab line.
        #[arg(long)]
        cron: bool,
        /// Print what would be removed; change nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

/// `kit exercise …`
#[derive(Debug, Subcommand)]
pub enum ExerciseCommand {
    /// The exercises: number, lesson, title, status.
    List {
        /// Print JSON (schema kit.exercises/1).
        #[arg(long)]
        json: bool,
    },
    /// Lay exercise N's sandbox out in the lab and print its task.
    Start {
        /// The exercise's number.
        #[arg(value_name = "N")]
        number: u32,
        /// Lay it out in DIR instead of <lab>/NN-slug.
        #[arg(long, value_name = "DIR")]
        into: Option<PathBuf>,
    },
    /// Show an exercise's task again, and where its sandbox is.
    Task {
        /// The exercise's number (default: the one whose sandbox holds this folder).
        #[arg(value_name = "N")]
        number: Option<u32>,
    },
    /// Start the first exercise not passed yet (or show its task when it is laid out).
    Next,
    /// Check your work: run the exercise's golden.md in a copy of its sandbox.
    ///
    /// Exit status: 0 pass, 1 a step differs, 2 usage error.
    Check {
        /// The exercise's number (default: the one whose sandbox holds this folder).
        #[arg(value_name = "N")]
        number: Option<u32>,
        /// Print JSON (schema kit.check/1), for graders.
        #[arg(long)]
        json: bool,
    },
    /// Check again on every save: watch the exercise's sandbox and re-run its check when a file
    /// changes, until Ctrl-C.
    Watch {
        /// The exercise's number (default: the one whose sandbox holds this folder).
        #[arg(value_name = "N")]
        number: Option<u32>,
        /// Stop after this many checks (for scripts and tests).
        #[arg(long, value_name = "COUNT", hide = true)]
        max_checks: Option<u32>,
    },
    /// Show a hint from the exercise's ladder (default: the next one not yet seen).
    Hint {
        /// The exercise's number (default: the exercise whose sandbox holds this folder).
        #[arg(value_name = "N")]
        number: Option<u32>,
        /// The rung of the ladder, from 1.
        #[arg(long, value_name = "K")]
        level: Option<usize>,
    },
    /// Delete exercise N's sandbox and lay it out again (a pass of it stays on record).
    Reset {
        /// The exercise's number.
        #[arg(value_name = "N")]
        number: u32,
        /// Do not ask (needed without a terminal).
        #[arg(long)]
        yes: bool,
    },
    /// Show the solution's files (only once the exercise passed).
    Solution {
        /// The exercise's number (default: the one whose sandbox holds this folder).
        #[arg(value_name = "N")]
        number: Option<u32>,
        /// Show it before passing (it spoils the exercise).
        #[arg(long)]
        show_anyway: bool,
    },
}

/// `kit goal …`
#[derive(Debug, Subcommand)]
pub enum GoalCommand {
    /// Parse longrun/goal.md and rate it on the done-criterion scale (0–4).
    Check {
        /// Print JSON (level, reasons, shortcuts with their lines).
        #[arg(long)]
        json: bool,
    },
}

/// `kit loop …`
#[derive(Debug, Args)]
pub struct LoopArgs {
    /// Agent: claude, codex, fake:SCENARIO, fake-codex:SCENARIO (the fake as Codex), or any
    /// command line (overrides config.toml).
    #[arg(long, value_name = "SPEC")]
    pub agent: Option<String>,
    // The values below take a leading `-` so that `--max-wall -1` is reported as a bad value
    // of that flag (exit 2, naming it), not as an unknown argument.
    /// Cap on agent iterations (at least 1).
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub max_iterations: Option<u32>,
    /// Timeout of one iteration, e.g. 30m.
    #[arg(long, value_name = "DUR", allow_hyphen_values = true, value_parser = loop_timeout)]
    pub timeout: Option<Duration>,
    /// Memory cap of the agent's process tree, e.g. 4G.
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true, value_parser = memory_max)]
    pub memory_max: Option<u64>,
    /// Cap on the loop's wall time, e.g. 4h.
    #[arg(long, value_name = "DUR", allow_hyphen_values = true, value_parser = max_wall)]
    pub max_wall: Option<Duration>,
    /// Start a new run with a fresh budget, even when the last run is finished (done, or a cap
    /// reached) or unfinished (killed, paused, stopped: plain kit loop continues it).
    #[arg(long)]
    pub new_run: bool,
    /// Accept function criteria that already pass before any agent ran: done at iteration 0
    /// is allowed, and the revert probe does not ask them to fail on the run's start.
    #[arg(long)]
    pub allow_green_start: bool,
    /// The guard a timer calls: start this loop detached (its output in longrun/.runs/) only
    /// when no loop is alive and the run is not finished; one status line; exit 0 when a loop
    /// is (now) alive or the run is finished, 5 when paused.
    #[arg(long, conflicts_with = "new_run")]
    pub ensure_alive: bool,
    /// Set on the loop --ensure-alive starts: lead a new session first.
    #[arg(long, hide = true, conflicts_with = "ensure_alive")]
    pub detached: bool,
}

/// `kit race …`
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct RaceArgs {
    #[command(subcommand)]
    pub action: Option<RaceAction>,
    /// Lanes (default: one per --agent; with one --agent, it runs in every lane).
    #[arg(long, value_name = "N")]
    pub lanes: Option<u32>,
    /// The agent of a lane, once per lane in order (default: config.toml's, with --lanes).
    #[arg(long, value_name = "SPEC")]
    pub agent: Vec<String>,
    /// Merge the winner's branch into your branch, only if it has not moved since the race
    /// began (a fast-forward or a merge commit; never a force).
    #[arg(long)]
    pub merge: bool,
    /// Only continue the unfinished race (plain kit race does too).
    #[arg(long)]
    pub resume: bool,
    // The caps below parse as `kit loop`'s do (LoopArgs); their help differs: per lane, or the
    // race's shared by its lanes.
    /// Cap on agent iterations, per lane (at least 1).
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub max_iterations: Option<u32>,
    /// Timeout of one iteration, e.g. 30m.
    #[arg(long, value_name = "DUR", allow_hyphen_values = true, value_parser = loop_timeout)]
    pub timeout: Option<Duration>,
    /// Memory cap of each lane's agent, e.g. 4G.
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true, value_parser = memory_max)]
    pub memory_max: Option<u64>,
    /// Cap on the race's wall time, shared by its lanes, e.g. 4h.
    #[arg(long, value_name = "DUR", allow_hyphen_values = true, value_parser = max_wall)]
    pub max_wall: Option<Duration>,
    /// Cap on the race's cost in USD, summed over its lanes (default: the loop's cost cap).
    #[arg(long, value_name = "USD", allow_hyphen_values = true)]
    pub max_cost: Option<f64>,
}

/// `kit race clean`
#[derive(Debug, Subcommand)]
pub enum RaceAction {
    /// Remove the lanes' worktrees and branches (the journal keeps the races).
    Clean,
}

/// `kit rehearse …`
#[derive(Debug, Args)]
pub struct RehearseArgs {
    /// Fake-agent scenario to run (default: finish).
    #[arg(long, value_name = "NAME", conflicts_with = "all")]
    pub scenario: Option<String>,
    /// Run every scenario and compare expected with actual outcomes.
    #[arg(long)]
    pub all: bool,
    /// Build the sandbox in DIR and keep it.
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
}

/// `kit measure …`
#[derive(Debug, Args)]
pub struct MeasureArgs {
    /// Roots, project folders or transcript files (default: the Claude Code and Codex roots).
    pub paths: Vec<PathBuf>,
    /// One row per API call of this session (id or prefix).
    #[arg(long, value_name = "SESSION")]
    pub turns: Option<String>,
    /// Print JSON (schema kit.measure/1).
    #[arg(long)]
    pub json: bool,
    /// Only sessions active since this date or time (YYYY-MM-DD, RFC 3339, or back from now:
    /// 90d, 12w, 36h).
    #[arg(long, value_name = "WHEN", value_parser = crate::measure::parse_since)]
    pub since: Option<i64>,
    /// Only this source.
    #[arg(long, value_name = "claude|codex", value_parser = crate::measure::parse_source)]
    pub(crate) source: Option<crate::transcript::Source>,
    /// Only projects whose name contains this text.
    #[arg(long, value_name = "TEXT")]
    pub project: Option<String>,
    /// Fail on the first damaged line, naming file:line.
    #[arg(long)]
    pub strict: bool,
    /// Also add every API call measured to the ledger ($KIT_LEDGER_DIR, else
    /// $XDG_DATA_HOME/kit/ledger, else ~/.local/share/kit/ledger), whose totals outlive the
    /// transcripts (Claude Code deletes them after 30 days).
    #[arg(long, conflicts_with = "turns")]
    pub ledger: bool,
}

/// `kit report …`
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Roots, project folders or transcript files (default: the Claude Code and Codex roots).
    pub paths: Vec<PathBuf>,
    /// Write the page here (default: longrun/.runs/report.html in a loop's repository, else
    /// kit-report.html).
    #[arg(long, value_name = "FILE", conflicts_with = "serve")]
    pub out: Option<PathBuf>,
    /// Open the page with the desktop's opener (xdg-open, open) when there is one.
    #[arg(long)]
    pub open: bool,
    /// Serve the page on this machine's loopback instead of writing it, reloading itself as
    /// the journal and transcripts grow, until Ctrl-C. ADDR: PORT, IP:PORT or localhost:PORT,
    /// loopback only (default 127.0.0.1:7411; port 0 picks a free one).
    #[arg(long, value_name = "ADDR", num_args = 0..=1,
          default_missing_value = crate::report::serve::DEFAULT_ADDR,
          value_parser = crate::report::serve::parse_addr)]
    pub serve: Option<std::net::SocketAddr>,
}

/// `kit recall …`
#[derive(Debug, Args)]
#[command(after_help = "JSON: match_start and match_end are UTF-8 byte offsets into \
snippet (end exclusive), not character offsets.")]
pub struct RecallArgs {
    /// What to look for (a fixed string unless --regex).
    pub query: String,
    /// Roots, project folders or transcript files (default: the Claude Code and Codex roots).
    pub paths: Vec<PathBuf>,
    /// Treat QUERY as a regular expression.
    #[arg(long)]
    pub regex: bool,
    /// Match ignoring case (fixed string or --regex).
    #[arg(long, short = 'i')]
    pub ignore_case: bool,
    /// Only this role: user, assistant, tool.
    #[arg(long, value_name = "ROLE", value_parser = crate::recall::Role::parse)]
    pub(crate) role: Option<crate::recall::Role>,
    /// Only projects whose name contains this text.
    #[arg(long, value_name = "TEXT")]
    pub project: Option<String>,
    /// Only messages since this date or time.
    #[arg(long, value_name = "WHEN", value_parser = crate::measure::parse_since)]
    pub since: Option<i64>,
    /// Print JSON (schema kit.recall/1; match offsets are bytes, see below).
    #[arg(long)]
    pub json: bool,
    /// At most this many matches.
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub limit: usize,
    /// Fail on the first damaged line, naming file:line.
    #[arg(long)]
    pub strict: bool,
}

/// `kit mine …`
#[derive(Debug, Args)]
#[command(after_help = crate::mine::after_help())]
pub struct MineArgs {
    /// Roots, project folders, transcript files or a longrun/journal.jsonl (default: the Claude
    /// Code and Codex roots). The journal of the project kit runs in is always read.
    pub paths: Vec<PathBuf>,
    /// Only sessions and journal events since this date or time (YYYY-MM-DD, RFC 3339, or 7d).
    #[arg(long, value_name = "WHEN", value_parser = crate::measure::parse_since)]
    pub since: Option<i64>,
    /// Print JSON (schema kit.mine/1).
    #[arg(long, conflicts_with = "apply")]
    pub json: bool,
    /// Hand the findings (kit.mine/1 JSON on stdin) to CMD, run with sh -c, to word the rules;
    /// what it prints is shown as proposals, never applied.
    #[arg(long, value_name = "CMD", conflicts_with = "apply")]
    pub agent: Option<String>,
    /// Append the proposed rules to FILE (CLAUDE.md, AGENTS.md) after showing the diff.
    #[arg(long, value_name = "FILE")]
    pub apply: Option<PathBuf>,
    /// With --apply: only these findings (ids as listed, comma-separated).
    #[arg(long, value_name = "ID,ID", value_delimiter = ',', requires = "apply")]
    pub only: Vec<String>,
}

/// `kit hook …`
#[derive(Debug, Subcommand)]
pub enum HookCommand {
    /// The Claude Code command hook: reads the event JSON on stdin.
    Claude,
    /// Merge kit's hook entries into .claude/settings.json.
    Install {
        /// Into ~/.claude/settings.json instead of the project's.
        #[arg(long)]
        user: bool,
        /// Remove kit's entries only.
        #[arg(long)]
        uninstall: bool,
        /// Show the result without writing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Drive the hook through the 50/70/85 % bands with a synthetic transcript.
    Rehearse,
}

/// `kit cache …`
#[derive(Debug, Args)]
pub struct CacheArgs {
    /// Model id, e.g. claude-opus-4-6.
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// Context size in tokens: 150000, 150k, 1M.
    #[arg(long, value_name = "TOKENS", value_parser = token_count)]
    pub context: Option<u64>,
    /// Idle time, e.g. 2h.
    #[arg(long, value_name = "DUR", value_parser = idle)]
    pub idle: Option<Duration>,
    /// Cache TTL: 5m or 1h.
    #[arg(long, value_name = "5m|1h", value_parser = crate::cache::Ttl::parse)]
    pub ttl: Option<crate::cache::Ttl>,
    /// Size of a handoff to start clean from, in tokens: 3000, 3k.
    #[arg(long, value_name = "TOKENS", value_parser = token_count)]
    pub handoff: Option<u64>,
    /// Read model, context and idle time from this transcript.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["model", "context"])]
    pub transcript: Option<PathBuf>,
    /// Read them from this session (id or prefix) under the default roots.
    #[arg(long, value_name = "ID", conflicts_with_all = ["model", "context", "transcript"])]
    pub session: Option<String>,
    /// With --transcript/--session: the moment to evaluate (default: now).
    #[arg(long, value_name = "TIME", value_parser = at)]
    pub at: Option<jiff::Timestamp>,
}

/// `kit handoff …`
#[derive(Debug, Subcommand)]
pub enum HandoffCommand {
    /// Write longrun/handoff.md: the summary (stdin or the file's body) and a stamp block.
    Save,
    /// Check the stamp block against HEAD and the files; optionally prove it in a transcript.
    Verify {
        /// The transcript of the session that should hold the `kit handoff save` call.
        #[arg(long, value_name = "PATH")]
        transcript: Option<PathBuf>,
        /// The session id to look for under the default roots.
        #[arg(long, value_name = "ID", conflicts_with = "transcript")]
        session: Option<String>,
    },
}

// kit's parsers of flag values, each naming its flag as kit's errors always have (the goldens
// pin the texts); exit 2 as every usage error.

/// A duration of `kit loop` (`--timeout`, `--max-wall`), named by `flag`.
fn loop_duration(flag: &str, text: &str) -> Result<Duration> {
    crate::duration::parse_duration(text)
        .map_err(|m| Error::usage(format!("--{flag}: {m}")).with_hint("kit loop --help"))
}

/// `kit loop --timeout`.
fn loop_timeout(text: &str) -> Result<Duration> {
    loop_duration("timeout", text)
}

/// `kit loop --max-wall`.
fn max_wall(text: &str) -> Result<Duration> {
    loop_duration("max-wall", text)
}

/// `kit loop --memory-max`, in bytes (checked against the smallest cap by the loop).
fn memory_max(text: &str) -> Result<u64> {
    crate::duration::parse_size(text)
        .map_err(|m| Error::usage(format!("--memory-max: {m}")).with_hint("kit loop --help"))
}

/// `kit status --interval`: a duration above zero.
fn interval(text: &str) -> Result<Duration> {
    match crate::duration::parse_duration(text) {
        Ok(d) if !d.is_zero() => Ok(d),
        Ok(_) => Err(Error::usage("--interval must be above 0")),
        Err(msg) => Err(Error::usage(format!("--interval: {msg}"))),
    }
}

/// `kit schedule install --every` (whether the timer can run that often is the schedule's).
fn every(text: &str) -> Result<Duration> {
    crate::duration::parse_duration(text).map_err(|m| {
        Error::usage(format!("--every: {m}")).with_hint("kit schedule install --every 10m")
    })
}

/// `kit cache --idle`.
fn idle(text: &str) -> Result<Duration> {
    crate::duration::parse_duration(text).map_err(Error::usage)
}

/// `kit cache --context` and `--handoff`: a token count (`150000`, `150k`, `1M`).
fn token_count(text: &str) -> Result<u64> {
    crate::units::parse_tokens(text)
        .map_err(|e| Error::usage(e).with_hint("e.g. kit cache --context 150k --idle 2h"))
}

/// `kit cache --at`: an RFC 3339 time.
fn at(text: &str) -> Result<jiff::Timestamp> {
    text.trim().parse::<jiff::Timestamp>().map_err(|e| {
        Error::usage(format!("--at `{text}` is not an RFC 3339 time ({e})"))
            .with_hint("e.g. --at 2026-10-01T11:00:00Z")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_consistent() {
        Cli::command().debug_assert();
    }
}
