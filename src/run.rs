//! Glue between the command line and the library: parse, convert clap types into each module's
//! options, execute, print an error once, map it to an exit code (DESIGN §6). A closed stdout
//! (e.g. `kit measure | head`) ends quietly with status 0, as Unix tools do.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use crate::cli::{
    CacheArgs, Cli, Command, ExerciseCommand, GoalCommand, HandoffCommand, HookCommand,
};
use crate::error::{Error, ErrorReport, Result};
use crate::frozen::freeze::FreezeAction;
use crate::goal;
use crate::longrun::init::InitOptions;
use crate::longrun::Project;
use crate::term::Theme;

/// What every command gets: where it runs and how to print.
#[derive(Clone, Debug)]
pub struct Ctx {
    /// The directory kit acts in (`-C DIR` or the current directory).
    pub cwd: PathBuf,
    /// Colours, decided once.
    pub theme: Theme,
}

/// Parse `args`, run the command, return the exit code.
pub fn main_with_args(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            // A value one of kit's parsers refused (`crate::cli`): kit's own error, naming the
            // flag, and its exit code.
            let refused = std::error::Error::source(&e).and_then(|s| s.downcast_ref::<Error>());
            if let Some(kit) = refused {
                let _ = writeln!(std::io::stderr().lock(), "{}", ErrorReport(kit));
                return ExitCode::from(kit.exit_code());
            }
            let _ = e.print();
            let code =
                if e.use_stderr() { crate::error::EXIT_BAD_INPUT } else { crate::error::EXIT_OK };
            return ExitCode::from(code);
        }
    };
    let cwd = match &cli.dir {
        Some(d) => d.clone(),
        None => std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
    };
    let ctx = Ctx { cwd, theme: Theme::detect() };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    // Not locked: other threads (progress lines, the loop's children's readers) write to it too.
    let mut err = std::io::stderr();
    let result = execute(&ctx, cli.command, &mut out, &mut err);
    let _ = out.flush();
    match result {
        Ok(code) => ExitCode::from(code),
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::BrokenPipe => {
            ExitCode::SUCCESS
        }
        Err(e) => {
            let _ = writeln!(err, "{}", ErrorReport(&e));
            ExitCode::from(e.exit_code())
        }
    }
}

/// Run one command, writing its output to `out` (stdout) and its notes and warnings to `err`
/// (stderr). Returns the exit code on success ([`crate::error`]'s `EXIT_…`).
pub fn execute(
    ctx: &Ctx,
    command: Command,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8> {
    match command {
        Command::Init { path } => {
            crate::longrun::init::run(&ctx.cwd, &InitOptions { dir: path }, &ctx.theme, out)
        }
        Command::Goal(GoalCommand::Check { json }) => {
            let project = Project::discover_initialised(&ctx.cwd)?;
            goal::check(&project, &goal::CheckOptions { json }, &ctx.theme, out)
        }
        Command::Freeze { paths, check, restore, list } => {
            let action = if check {
                FreezeAction::Check
            } else if list {
                FreezeAction::List
            } else if restore {
                FreezeAction::Restore
            } else {
                FreezeAction::Freeze(paths)
            };
            // goal.md's Constraints, read here: the frozen layer does not read goals.
            let constraints = crate::longrun::Project::discover_initialised(&ctx.cwd)
                .ok()
                .and_then(|p| goal::load(&p).ok())
                .map(|g| g.constraints);
            crate::frozen::freeze::run(&ctx.cwd, &action, constraints.as_deref(), &ctx.theme, out)
        }
        Command::Loop(args) => {
            let (ensure_alive, detached) = (args.ensure_alive, args.detached);
            let opts = loop_options(args);
            if ensure_alive {
                crate::looprun::ensure::ensure_alive(&ctx.cwd, &opts, out)
            } else {
                if detached {
                    crate::looprun::ensure::detach_session();
                }
                crate::looprun::run(&ctx.cwd, &opts, out)
            }
        }
        Command::Race(a) => match a.action {
            Some(crate::cli::RaceAction::Clean) => crate::race::clean(&ctx.cwd, out),
            None => {
                let opts = crate::race::RaceOptions {
                    lanes: a.lanes,
                    agents: a.agent,
                    merge: a.merge,
                    resume: a.resume,
                    max_iterations: a.max_iterations,
                    timeout: a.timeout,
                    memory_max: a.memory_max,
                    max_wall: a.max_wall,
                    max_cost: a.max_cost,
                };
                crate::race::run(&ctx.cwd, &opts, out)
            }
        },
        Command::Status { json, watch, interval, mark, no_mark } => {
            let terminal = std::io::IsTerminal::is_terminal(&std::io::stdout());
            let opts =
                crate::status::StatusOptions { json, watch, interval, terminal, mark, no_mark };
            crate::status::run(&ctx.cwd, opts, &ctx.theme, out)
        }
        Command::Pause { now, reason } => crate::longrun::pause::pause(
            &ctx.cwd,
            &crate::longrun::pause::PauseOptions { now, reason },
            out,
        ),
        Command::Resume => crate::longrun::pause::resume(&ctx.cwd, out),
        Command::Tell { text, from } => crate::longrun::inbox::tell(
            &ctx.cwd,
            &crate::longrun::inbox::TellOptions { text: text.join(" "), from },
            out,
        ),
        Command::Ask { text, from } => crate::looprun::ask::ask(
            &ctx.cwd,
            &crate::looprun::ask::AskOptions { text: text.join(" "), from },
            out,
        ),
        Command::Approve { number, note, by } => crate::looprun::ask::approve(
            &ctx.cwd,
            &crate::looprun::ask::ApproveOptions { number, reject: false, note, by },
            out,
        ),
        Command::Reject { number, note, by } => crate::looprun::ask::approve(
            &ctx.cwd,
            &crate::looprun::ask::ApproveOptions { number, reject: true, note: Some(note), by },
            out,
        ),
        Command::Schedule(cmd) => schedule(ctx, cmd, out),
        Command::Doctor => crate::doctor::run(&ctx.cwd, &ctx.theme, out),
        Command::Rehearse(a) => {
            let opts = crate::rehearse::Options {
                scenario: a.scenario.unwrap_or_else(|| "finish".into()),
                all: a.all,
                keep: a.keep.map(|k| ctx.cwd.join(k)),
            };
            crate::rehearse::run(&opts, &ctx.theme, out)
        }
        Command::Measure(a) => crate::measure::run(&ctx.theme, &measure_options(a)?, out),
        Command::Recall(a) => crate::recall::run(&ctx.theme, &recall_options(a)?, out),
        Command::Report(a) => crate::report::run(
            &crate::report::ReportOptions {
                cwd: ctx.cwd.clone(),
                paths: a.paths,
                out: a.out,
                open: a.open,
                serve: a.serve,
            },
            out,
        ),
        Command::Hook(cmd) => hook(ctx, cmd, out, err),
        Command::Cache(args) => crate::cache::run(&cache_options(ctx, args)?, out),
        Command::Mine(a) => crate::mine::run(&ctx.theme, &mine_options(ctx, a)?, out),
        Command::Handoff(cmd) => handoff(ctx, cmd, out),
        Command::Exercise(cmd) => exercise(ctx, cmd, out, err),
        Command::Lesson { number: None, .. } => {
            crate::course::commands::lessons(&ctx.cwd, out, err)
        }
        Command::Lesson { number: Some(n), path: true, .. } => {
            crate::course::commands::lesson_path(&ctx.cwd, n, out)
        }
        Command::Lesson { number: Some(n), lab: true, .. } => {
            crate::course::commands::lesson_lab(&ctx.cwd, n, out, err)
        }
        Command::Lesson { number: Some(n), .. } => {
            let tty = std::io::IsTerminal::is_terminal(&std::io::stdout());
            crate::course::commands::show_lesson(n, tty, &ctx.theme, out)
        }
        Command::Verify { case, lesson, verbose, jobs, junit, bless, timings } => {
            let jobs = jobs.map(usize::from);
            let opts = crate::verify::Options {
                filter: case,
                lesson,
                verbose,
                jobs,
                junit,
                bless,
                timings,
            };
            crate::verify::run(&opts, &ctx.cwd, &ctx.theme, out, err)
        }
    }
    .inspect(|_| {
        let _ = &ctx.cwd;
    })
}

/// `kit loop` flags to the loop's options (the loop checks the caps' bounds).
fn loop_options(a: crate::cli::LoopArgs) -> crate::looprun::LoopOptions {
    crate::looprun::LoopOptions {
        agent: a.agent,
        max_iterations: a.max_iterations,
        timeout: a.timeout,
        memory_max: a.memory_max,
        max_wall: a.max_wall,
        new_run: a.new_run,
        allow_green_start: a.allow_green_start,
    }
}

fn schedule(ctx: &Ctx, cmd: crate::cli::ScheduleCommand, out: &mut dyn Write) -> Result<u8> {
    use crate::schedule::{Backend, ScheduleOptions};
    let backend = |systemd: bool, cron: bool| match (systemd, cron) {
        (true, _) => Some(Backend::Systemd),
        (_, true) => Some(Backend::Cron),
        _ => None,
    };
    match cmd {
        crate::cli::ScheduleCommand::Install { systemd, cron, every, dry_run } => {
            let opts = ScheduleOptions { backend: backend(systemd, cron), every, dry_run };
            crate::schedule::install(&ctx.cwd, &opts, out)
        }
        crate::cli::ScheduleCommand::Remove { systemd, cron, dry_run } => {
            let opts = ScheduleOptions {
                backend: backend(systemd, cron),
                every: crate::schedule::DEFAULT_EVERY,
                dry_run,
            };
            crate::schedule::remove(&ctx.cwd, &opts, out)
        }
    }
}

fn recall_options(a: crate::cli::RecallArgs) -> Result<crate::recall::RecallOptions> {
    Ok(crate::recall::RecallOptions {
        query: a.query,
        paths: a.paths,
        regex: a.regex,
        ignore_case: a.ignore_case,
        role: a.role,
        project: a.project,
        since_ms: a.since,
        json: a.json,
        limit: a.limit,
        strict: a.strict,
    })
}

fn mine_options(ctx: &Ctx, a: crate::cli::MineArgs) -> Result<crate::mine::MineOptions> {
    Ok(crate::mine::MineOptions {
        paths: a.paths,
        cwd: ctx.cwd.clone(),
        since_ms: a.since,
        json: a.json,
        agent: a.agent,
        apply: a.apply,
        only: a.only,
    })
}

fn measure_options(a: crate::cli::MeasureArgs) -> Result<crate::measure::MeasureOptions> {
    // The ledger is read with the default roots (it holds their calls: those read from these
    // roots complete them), and written with `--ledger`; a ledger folder kit cannot name is only
    // an error when asked to write.
    use crate::transcript::ledger as l;
    let ledger = match (a.ledger || a.paths.is_empty(), l::default_dir()) {
        (false, _) => None,
        (true, Ok(dir)) => Some(crate::measure::ledger::LedgerUse {
            dir,
            append: a.ledger,
            read: a.paths.is_empty(),
            roots: if a.paths.is_empty() { l::default_root_ids()? } else { Default::default() },
        }),
        (true, Err(e)) if a.ledger => return Err(e),
        (true, Err(_)) => None,
    };
    Ok(crate::measure::MeasureOptions {
        ledger,
        paths: a.paths,
        turns: a.turns,
        json: a.json,
        since_ms: a.since,
        source: a.source,
        project: a.project,
        strict: a.strict,
        width: crate::term::columns(),
    })
}

fn exercise(
    ctx: &Ctx,
    cmd: ExerciseCommand,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8> {
    use crate::course::commands as c;
    let cwd = &ctx.cwd;
    match cmd {
        ExerciseCommand::List { json } => {
            c::list(cwd, json, std::io::IsTerminal::is_terminal(&std::io::stdout()), out, err)
        }
        ExerciseCommand::Start { number, into } => {
            c::start(cwd, number, into.as_deref(), &ctx.theme, out, err)
        }
        ExerciseCommand::Task { number } => c::task(cwd, number, &ctx.theme, out, err),
        ExerciseCommand::Next => c::next(cwd, &ctx.theme, out, err),
        ExerciseCommand::Check { number, json } => {
            c::check(cwd, number, json, &ctx.theme, out, err)
        }
        ExerciseCommand::Watch { number, max_checks } => {
            let tty = std::io::IsTerminal::is_terminal(&std::io::stdout());
            c::watch(cwd, number, max_checks, tty, &ctx.theme, out, err)
        }
        ExerciseCommand::Hint { number, level } => c::hint(cwd, number, level, out, err),
        ExerciseCommand::Reset { number, yes } => c::reset(cwd, number, yes, &ctx.theme, out, err),
        ExerciseCommand::Solution { number, show_anyway } => {
            c::solution(cwd, number, show_anyway, out, err)
        }
    }
}

fn hook(ctx: &Ctx, cmd: HookCommand, out: &mut dyn Write, err: &mut dyn Write) -> Result<u8> {
    match cmd {
        HookCommand::Claude => {
            let mut stdin = std::io::stdin().lock();
            let own = crate::sandbox::own_state_dir;
            Ok(crate::hook::run_claude(&mut stdin, out, err, ctx.cwd.clone(), own))
        }
        HookCommand::Install { user, uninstall, dry_run } => {
            let settings = crate::hook::install::settings_path(&ctx.cwd, user)?;
            crate::hook::install::run(
                &crate::hook::install::InstallOptions { settings, uninstall, dry_run },
                out,
            )
        }
        HookCommand::Rehearse => crate::hook::rehearse::run(out),
    }
}

fn cache_options(ctx: &Ctx, a: CacheArgs) -> Result<crate::cache::CacheOptions> {
    use crate::cache::Source;
    let ttl = a.ttl;
    let transcript = match (a.transcript, a.session) {
        (Some(p), _) => Some(p),
        (None, Some(id)) => Some(crate::transcript::discover::find_session(&id)?),
        (None, None) => None,
    };
    let source = match transcript {
        Some(path) => {
            if a.idle.is_some() {
                return Err(Error::usage(
                    "--idle comes from the transcript; drop it or use --at TIME",
                ));
            }
            Source::Transcript { path, at: a.at }
        }
        None => {
            if a.at.is_some() {
                return Err(Error::usage("--at needs --transcript or --session"));
            }
            let (Some(model), Some(context), Some(idle)) = (a.model, a.context, a.idle) else {
                return Err(Error::usage(
                    "kit cache needs --model, --context and --idle, or --transcript/--session",
                )
                .with_hint("kit cache --model claude-opus-4-6 --context 150000 --idle 2h"));
            };
            Source::Given { model, context, idle }
        }
    };
    Ok(crate::cache::CacheOptions { source, ttl, handoff: a.handoff, cwd: ctx.cwd.clone() })
}

fn handoff(ctx: &Ctx, cmd: HandoffCommand, out: &mut dyn Write) -> Result<u8> {
    use crate::handoff::{ProofSource, SaveOptions, VerifyOptions};
    match cmd {
        HandoffCommand::Save => {
            use std::io::{IsTerminal, Read};
            let stdin = std::io::stdin();
            let mut piped = None;
            if !stdin.is_terminal() {
                let mut text = String::new();
                stdin.lock().read_to_string(&mut text).map_err(|e| Error::io("stdin", e))?;
                piped = Some(text);
            }
            let own_state_dir = crate::sandbox::own_state_dir;
            crate::handoff::save(&SaveOptions { cwd: ctx.cwd.clone(), piped, own_state_dir }, out)
        }
        HandoffCommand::Verify { transcript, session } => {
            let proof = match (transcript, session) {
                (Some(p), _) => Some(ProofSource::Transcript(p)),
                (None, Some(id)) => Some(ProofSource::Session(id)),
                (None, None) => None,
            };
            let own_state_dir = crate::sandbox::own_state_dir;
            crate::handoff::verify(
                &VerifyOptions { cwd: ctx.cwd.clone(), proof, own_state_dir },
                out,
            )
        }
    }
}
