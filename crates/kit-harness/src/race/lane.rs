//! One lane of a race: its worktree's `longrun/` as the lane's loop journals it, and the `kit
//! loop` process that works in it (started by this race, or adopted from a killed one).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;

use crate::error::{Error, IoContext, Result};
use crate::longrun::event::RaceLane;
use crate::longrun::history::History;
use crate::longrun::{lock, Project};

/// The loop process working in a lane.
#[derive(Debug)]
pub(super) enum Worker {
    /// Started by this race process: its child.
    Child(Child),
    /// A loop left running by a killed race process, found by its lane's lock.
    Adopted(lock::Holder),
}

impl Worker {
    /// The loop's process id (its process group id too: a lane's loop leads its own group).
    pub(super) fn pid(&self) -> u32 {
        match self {
            Worker::Child(c) => c.id(),
            Worker::Adopted(h) => h.pid,
        }
    }

    /// True once the loop has exited (a child is reaped here).
    pub(super) fn exited(&mut self) -> bool {
        match self {
            Worker::Child(c) => !matches!(c.try_wait(), Ok(None)),
            Worker::Adopted(h) => !h.is_alive_here(),
        }
    }
}

/// The `kit loop` flags a lane's loop runs with.
#[derive(Clone, Debug, Default)]
pub(super) struct LoopFlags {
    pub(super) max_iterations: Option<u32>,
    pub(super) timeout: Option<Duration>,
    pub(super) memory_max: Option<u64>,
    /// The race's wall cap: the lanes run side by side, so each one's run ends within it.
    pub(super) max_wall: Duration,
}

/// Start `kit loop --agent AGENT [flags]` in the lane's worktree, in a process group of its own
/// (a Ctrl-C on the race's terminal reaches the race, which stops its lanes itself), its output
/// appended to `log`. A lane whose run was left unfinished (a killed loop) is continued by it,
/// as any `kit loop` continues one.
///
/// Errors: [`Error::Io`] when the log cannot be opened; [`Error::Internal`] when kit's own
/// executable cannot be found or started.
pub(super) fn spawn(lane: &RaceLane, flags: &LoopFlags, log: &Path) -> Result<Child> {
    use std::os::unix::process::CommandExt;
    let exe = std::env::current_exe()
        .map_err(|e| Error::internal(format!("cannot find kit's own executable: {e}")))?;
    let file = std::fs::OpenOptions::new().create(true).append(true).open(log).at(log)?;
    let file2 = file.try_clone().at(log)?;
    let mut cmd = Command::new(&exe);
    cmd.arg("loop").args(["--agent", &lane.agent]);
    if let Some(n) = flags.max_iterations {
        cmd.args(["--max-iterations", &n.to_string()]);
    }
    if let Some(t) = flags.timeout {
        cmd.args(["--timeout", &format!("{}s", t.as_secs().max(1))]);
    }
    if let Some(m) = flags.memory_max {
        cmd.args(["--memory-max", &crate::duration::format_size(m)]);
    }
    cmd.args(["--max-wall", &format!("{}s", flags.max_wall.as_secs().max(1))]);
    cmd.current_dir(&lane.path).stdin(Stdio::null()).stdout(file).stderr(file2).process_group(0);
    crate::signals::unblock_in_child(&mut cmd);
    cmd.spawn().map_err(|e| {
        Error::internal(format!("cannot start {} loop in {}: {e}", exe.display(), lane.path))
    })
}

/// Stop the lanes' loops: SIGTERM to each (the loop ends its agent's process group as at a
/// timeout, restores the frozen files and journals `interrupted`), and after `patience` SIGKILL
/// to the loop's group and to what its journal names of its agent's group. Returns the lanes
/// (indexes into `workers`) that needed SIGKILL.
pub(super) fn stop_all(
    workers: &mut [(usize, &mut Worker, PathBuf)],
    patience: Duration,
) -> Vec<usize> {
    for (_, w, _) in workers.iter_mut() {
        if !w.exited() {
            let _ = kill(Pid::from_raw(w.pid() as i32), Signal::SIGTERM);
        }
    }
    let deadline = Instant::now() + patience;
    let mut pause = Duration::from_millis(5);
    while workers.iter_mut().any(|(_, w, _)| !w.exited()) && Instant::now() < deadline {
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(50));
    }
    let mut killed = Vec::new();
    for (i, w, path) in workers.iter_mut() {
        if w.exited() {
            continue;
        }
        killed.push(*i);
        let _ = killpg(Pid::from_raw(w.pid() as i32), Signal::SIGKILL);
        let _ = kill(Pid::from_raw(w.pid() as i32), Signal::SIGKILL);
        let end = Instant::now() + Duration::from_secs(10);
        while !w.exited() && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(10));
        }
        // The loop died without ending its agent: end that group as the next loop would.
        if let Ok(h) = History::read(&Project::at(path.as_path()).journal()) {
            if let Some(u) = h.unfinished.filter(|u| u.pgid > 1) {
                let _ = crate::proc::end_group(u.pgid, u.starttime, Duration::from_secs(10));
            }
        }
    }
    killed
}
