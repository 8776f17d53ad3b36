//! The `longrun/` folder (DESIGN §3): where it is, the names of its seven state files and its
//! runtime files, and how a command finds it from the current directory.
//!
//! | file | single writer |
//! |---|---|
//! | `goal.md` | the human |
//! | `config.toml` | the human (`kit init` writes defaults) |
//! | `frozen.toml` | `kit freeze` |
//! | `progress.md` | the agent |
//! | `decisions.md` | the agent (kit appends marked entries) |
//! | `handoff.md` | `kit handoff save` |
//! | `journal.jsonl` | kit only |
//!
//! Beside the folder itself: how its runtime files read back, for every command that asks who
//! owns the project now — the journal as the loop's checkpoint ([`history`]) and the loop's
//! flock on `longrun/.lock` ([`lock`], [`running_loop`]). The loop writes both; `kit
//! freeze` and `kit status` only read them, so they live here, below the loop. So do the other
//! readers of the run's state, which the loop writes and the reports read: its runs and what
//! they spent ([`durable`]), the caps a run is held to ([`caps`]), `PAUSE` ([`pause`]), the
//! inbox ([`inbox`]) and the journal's repair after a killed loop ([`repair`]).

pub mod caps;
pub mod config;
pub mod decisions;
pub mod durable;
pub mod event;
pub mod history;
pub mod inbox;
pub mod init;
pub mod journal;
pub mod lock;
pub mod pause;
pub mod race;
pub(crate) mod repair;

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Name of the state folder at the repository root.
pub const DIR: &str = "longrun";

/// The seven state files, in the order `kit init` lists them.
pub const STATE_FILES: [&str; 7] = [
    "goal.md",
    "config.toml",
    "frozen.toml",
    "progress.md",
    "decisions.md",
    "handoff.md",
    "journal.jsonl",
];

/// Paths of one project's `longrun/` folder. Built by [`Project::discover`] or [`Project::at`];
/// nothing here touches the disk.
#[derive(Clone, Debug)]
pub struct Project {
    /// The git repository root (working directory for criteria and the agent).
    pub root: PathBuf,
    /// `<root>/longrun`.
    pub dir: PathBuf,
}

impl Project {
    /// A project whose repository root is `root` (no checks).
    pub fn at(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        let dir = root.join(DIR);
        Project { root, dir }
    }

    /// Find the git repository that contains `start` (`git rev-parse --show-toplevel`).
    ///
    /// Errors: [`Error::Usage`] when `start` is not inside a git repository, with the next step.
    pub fn discover(start: &Path) -> Result<Self> {
        git_toplevel(start).map(Project::at)
    }

    /// Like [`Project::discover`], and also require that `longrun/` exists.
    pub fn discover_initialised(start: &Path) -> Result<Self> {
        let p = Project::discover(start)?;
        if !p.dir.is_dir() {
            return Err(Error::usage(format!("no {} folder in {}", DIR, p.root.display()))
                .with_hint("kit init"));
        }
        Ok(p)
    }

    /// `longrun/goal.md`.
    pub fn goal(&self) -> PathBuf {
        self.dir.join("goal.md")
    }
    /// `longrun/config.toml`.
    pub fn config(&self) -> PathBuf {
        self.dir.join("config.toml")
    }
    /// `longrun/frozen.toml`.
    pub fn frozen(&self) -> PathBuf {
        self.dir.join("frozen.toml")
    }
    /// `longrun/progress.md`.
    pub fn progress(&self) -> PathBuf {
        self.dir.join("progress.md")
    }
    /// `longrun/decisions.md`.
    pub fn decisions(&self) -> PathBuf {
        self.dir.join("decisions.md")
    }
    /// `longrun/handoff.md`.
    pub fn handoff(&self) -> PathBuf {
        self.dir.join("handoff.md")
    }
    /// `longrun/journal.jsonl`.
    pub fn journal(&self) -> PathBuf {
        self.dir.join("journal.jsonl")
    }
    /// `longrun/.lock` (flock target, holds the holder record).
    pub fn lock(&self) -> PathBuf {
        self.dir.join(".lock")
    }
    /// `longrun/PAUSE`: while it exists the loop starts no new iteration.
    pub fn pause(&self) -> PathBuf {
        self.dir.join("PAUSE")
    }
    /// `longrun/.frozen/objects/`: content-addressed copies of frozen files.
    pub fn frozen_objects(&self) -> PathBuf {
        self.dir.join(".frozen").join("objects")
    }
    /// `longrun/.runs/`: the agent's output, one file per iteration.
    pub fn runs(&self) -> PathBuf {
        self.dir.join(".runs")
    }
}

/// The `longrun/` folder that governs `start`: the nearest ancestor holding one, not looking
/// above the first git repository root met on the way. No git process: the hook must be quick.
pub fn find_longrun(start: &Path) -> Option<PathBuf> {
    for dir in start.ancestors() {
        let candidate = dir.join(DIR);
        if candidate.is_dir() {
            return Some(candidate);
        }
        if dir.join(".git").exists() {
            return None;
        }
    }
    None
}

/// The repository root containing `start`.
pub fn git_toplevel(start: &Path) -> Result<PathBuf> {
    let out = crate::git::command_in(start)
        .args(["rev-parse", "--show-toplevel"])
        .output()
        .map_err(|e| Error::internal(format!("cannot run git: {e}")).with_hint("install git"))?;
    if !out.status.success() {
        return Err(Error::usage(format!("{} is not inside a git repository", start.display()))
            .with_hint("git init, then kit init"));
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// Read a user-written text file (goal.md, config.toml). `Ok(None)` when it does not exist.
///
/// Errors: [`Error::Input`] naming `shown:LINE` of the first byte that is not UTF-8, with the
/// next step; [`Error::Io`] when it cannot be read.
pub fn read_user_text(path: &Path, shown: &Path) -> Result<Option<String>> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(path, e)),
    };
    String::from_utf8(bytes).map(Some).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..valid].iter().filter(|&&b| b == b'\n').count() + 1;
        Error::input(shown, Some(line), "not valid UTF-8 text")
            .with_hint(format!("save {} as UTF-8, then run the command again", shown.display()))
    })
}

/// The loop that owns `project` now, if one runs: the live flock holder of `longrun/.lock`
/// (see [`lock::live_holder`]; never takes the lock), or else the journal's last run not ended
/// when its process is still alive here (the lock file may have been deleted under it a moment
/// ago; its keeper puts it back within 100 ms). Commands that change what a loop protects
/// (`kit freeze PATH…`, `kit freeze --restore`) refuse while it runs.
pub fn running_loop(project: &Project) -> Option<lock::Holder> {
    lock::live_holder(&project.lock()).or_else(|| {
        history::History::read(&project.journal())
            .ok()?
            .open_run
            .filter(lock::Holder::is_alive_here)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_utf8_names_the_line_and_missing_is_none() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("goal.md");
        assert!(read_user_text(&p, Path::new("longrun/goal.md")).unwrap().is_none());
        std::fs::write(&p, b"# Goal: x\n\xff\n").unwrap();
        match read_user_text(&p, Path::new("longrun/goal.md")) {
            Err(Error::Input { line: Some(2), path, .. }) => {
                assert_eq!(path, Path::new("longrun/goal.md"))
            }
            other => panic!("{other:?}"),
        }
        let cfg = d.path().join("config.toml");
        std::fs::write(&cfg, b"[caps]\nmax_wall = \"\xfe\"\n").unwrap();
        assert_eq!(crate::longrun::config::Config::load(&cfg).unwrap_err().exit_code(), 2);
    }
}
