//! Glue between the command line and the library: parse, convert clap types into each module's
//! options, execute, print an error once, map it to an exit code (DESIGN §6). A closed stdout
//! (e.g. `kit measure | head`) ends quietly with status 0, as Unix tools do.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};
use crate::error::{Error, ErrorReport, Result};
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
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { crate::error::EXIT_BAD_INPUT } else { 0 });
        }
    };
    let cwd = match &cli.dir {
        Some(d) => d.clone(),
        None => std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
    };
    let ctx = Ctx { cwd, theme: Theme::detect() };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let result = execute(&ctx, cli.command, &mut out);
    let _ = out.flush();
    match result {
        Ok(code) => ExitCode::from(code),
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::BrokenPipe => {
            ExitCode::SUCCESS
        }
        Err(e) => {
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "{}", ErrorReport(&e));
            ExitCode::from(e.exit_code())
        }
    }
}

/// Run one command, writing its output to `out`. Returns the exit code on success.
pub fn execute(ctx: &Ctx, command: Command, out: &mut dyn Write) -> Result<u8> {
    match command {
        Command::Init { dir } => not_built("init", dir.is_some(), out),
        Command::Goal(_) => not_built("goal", false, out),
        Command::Freeze { .. } => not_built("freeze", false, out),
        Command::Loop(args) => crate::looprun::run(&ctx.cwd, &loop_options(args)?, out),
        Command::Status { json } => {
            crate::status::run(&ctx.cwd, crate::status::StatusOptions { json }, &ctx.theme, out)
        }
        Command::Doctor => crate::doctor::run(&ctx.theme, out),
        Command::Rehearse(_) => not_built("rehearse", false, out),
        Command::Measure(_) => not_built("measure", false, out),
        Command::Recall(_) => not_built("recall", false, out),
        Command::Hook(_) => not_built("hook", false, out),
        Command::Cache(_) => not_built("cache", false, out),
        Command::Handoff(_) => not_built("handoff", false, out),
    }
    .inspect(|_| {
        let _ = &ctx.cwd;
    })
}

/// `kit loop` flags to the loop's options; durations and sizes are checked here (exit 2).
fn loop_options(a: crate::cli::LoopArgs) -> Result<crate::looprun::LoopOptions> {
    let dur = |flag: &str, v: Option<String>| -> Result<Option<std::time::Duration>> {
        v.map(|t| {
            crate::duration::parse_duration(&t)
                .map_err(|m| Error::usage(format!("--{flag}: {m}")).with_hint("kit loop --help"))
        })
        .transpose()
    };
    let memory_max = a
        .memory_max
        .map(|t| {
            crate::duration::parse_size(&t)
                .map_err(|m| Error::usage(format!("--memory-max: {m}")).with_hint("kit loop --help"))
        })
        .transpose()?;
    Ok(crate::looprun::LoopOptions {
        agent: a.agent,
        max_iterations: a.max_iterations,
        timeout: dur("timeout", a.timeout)?,
        memory_max,
        max_wall: dur("max-wall", a.max_wall)?,
    })
}

// Scaffolding while the modules land on main; each arm above is replaced as its module arrives.
fn not_built(name: &str, _flag: bool, _out: &mut dyn Write) -> Result<u8> {
    Err(Error::internal(format!("`kit {name}` is not in this build yet")))
}
