//! kit's error type and exit codes. Every error says what went wrong, where (file and line where
//! there is one) and, where there is one, the next command to run.
//!
//! # Exit codes
//!
//! Every exit status kit ends with is named here (DESIGN §6 for the loop's): 0 [`EXIT_OK`],
//! 1 [`EXIT_INTERNAL`] and [`EXIT_CHECK_FAILED`], 2 [`EXIT_BAD_INPUT`], 3 [`EXIT_CAP`],
//! 4 [`EXIT_LOCKED`], 5 [`EXIT_PAUSED`], 6 [`EXIT_NEEDS_YOU`]; and 130 when a loop is stopped by
//! SIGINT or SIGTERM (`signals::EXIT_INTERRUPTED`, 128 + the signal's number as shells report it).
//! Status 1 has two names because it has two meanings that goldens, `--help` texts and DESIGN
//! pin to the same number: kit failed ([`EXIT_INTERNAL`]), or a check ran to its end and found
//! a difference ([`EXIT_CHECK_FAILED`]); the output tells them apart.

use std::fmt;
use std::path::{Path, PathBuf};

/// Exit code for a successful run: the command did what it was asked, a check found nothing.
pub const EXIT_OK: u8 = 0;
/// Exit code for an internal error (I/O failure, a bug, a tool kit runs that does not answer).
pub const EXIT_INTERNAL: u8 = 1;
/// Exit code when a check ran to its end and found a difference: `kit freeze --check` found
/// drift, `kit verify` a failing case, `kit exercise check` a differing step, `kit rehearse
/// --all` an outcome not as expected, `kit doctor` a reason a loop cannot run. The same number
/// as [`EXIT_INTERNAL`] (pinned by goldens and `--help`).
pub const EXIT_CHECK_FAILED: u8 = 1;
/// Exit code for bad usage or bad input (goal.md, config.toml, a transcript under `--strict`).
pub const EXIT_BAD_INPUT: u8 = 2;
/// Exit code when a loop reached a cap without the criteria passing.
pub const EXIT_CAP: u8 = 3;
/// Exit code when another loop holds `longrun/.lock`.
pub const EXIT_LOCKED: u8 = 4;
/// Exit code when a loop stopped because `longrun/PAUSE` exists.
pub const EXIT_PAUSED: u8 = 5;
/// Exit code when a loop stopped for a person ("needs you"): the agent asked something (`kit
/// ask`), or every other criterion passes and a `- human:` criterion of goal.md waits for `kit
/// approve N`. The run is unfinished: after the answer, `kit loop` goes on.
pub const EXIT_NEEDS_YOU: u8 = 6;

/// `Result` with kit's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An error a kit command reports to the user.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The command line is wrong (exit 2).
    #[error("{msg}")]
    Usage { msg: String, hint: Option<String> },

    /// A user file is malformed: goal.md, config.toml, a transcript, hook stdin (exit 2).
    /// `line` is 1-based.
    #[error("{}: {msg}", location(path, *line))]
    Input { path: PathBuf, line: Option<usize>, msg: String, hint: Option<String> },

    /// Reading or writing a file failed (exit 1).
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// Another loop owns `longrun/` (exit 4). `holder` describes it (pid, host, start, command).
    #[error("another loop holds {}: {holder}", path.display())]
    Locked { path: PathBuf, holder: String },

    /// Anything else that is kit's fault or the machine's (exit 1).
    #[error("{msg}")]
    Internal { msg: String, hint: Option<String> },
}

fn location(path: &Path, line: Option<usize>) -> String {
    match line {
        Some(n) => format!("{}:{n}", path.display()),
        None => path.display().to_string(),
    }
}

impl Error {
    /// A usage error with an optional next step.
    pub fn usage(msg: impl Into<String>) -> Self {
        Error::Usage { msg: msg.into(), hint: None }
    }

    /// A bad-input error naming a file and (1-based) line.
    pub fn input(path: impl Into<PathBuf>, line: Option<usize>, msg: impl Into<String>) -> Self {
        Error::Input { path: path.into(), line, msg: msg.into(), hint: None }
    }

    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { path: path.into(), source }
    }

    /// An internal error.
    pub fn internal(msg: impl Into<String>) -> Self {
        Error::Internal { msg: msg.into(), hint: None }
    }

    /// Attach the next command or step to run; shown on its own line after the error.
    pub fn with_hint(mut self, next: impl Into<String>) -> Self {
        let next = Some(next.into());
        match &mut self {
            Error::Usage { hint, .. }
            | Error::Input { hint, .. }
            | Error::Internal { hint, .. } => *hint = next,
            Error::Io { .. } | Error::Locked { .. } => {}
        }
        self
    }

    /// The next step, if the error carries one.
    pub fn hint(&self) -> Option<&str> {
        match self {
            Error::Usage { hint, .. }
            | Error::Input { hint, .. }
            | Error::Internal { hint, .. } => hint.as_deref(),
            Error::Locked { .. } => Some(LOCKED_HINT),
            Error::Io { .. } => None,
        }
    }

    /// The process exit code for this error (DESIGN §6).
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Usage { .. } | Error::Input { .. } => EXIT_BAD_INPUT,
            Error::Locked { .. } => EXIT_LOCKED,
            Error::Io { .. } | Error::Internal { .. } => EXIT_INTERNAL,
        }
    }
}

/// Helper to attach a path to an `io::Result`.
pub trait IoContext<T> {
    /// Turn an `io::Error` into [`Error::Io`] naming `path`.
    fn at(self, path: &Path) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn at(self, path: &Path) -> Result<T> {
        self.map_err(|e| Error::io(path, e))
    }
}

impl fmt::Display for ErrorReport<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "kit: error: {}", self.0)?;
        if let Some(h) = self.0.hint() {
            write!(f, "\n  next: {h}")?;
        }
        Ok(())
    }
}

/// The error as the user sees it: `kit: error: …` and, where there is one, `  next: …`.
pub struct ErrorReport<'a>(pub &'a Error);

/// The next step when another loop owns `longrun/`: a live holder is never displaced.
const LOCKED_HINT: &str = "kit status shows what that loop is doing; wait for it to end, or \
     stop it with kit pause (kit pause --now stops its agent at once; or Ctrl-C in its terminal)";
