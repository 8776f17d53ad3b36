//! `kit loop --ensure-alive`: the guard a timer calls (`kit schedule install`, see
//! [`crate::schedule`]). It makes sure a loop works on the repository's run, and otherwise does
//! nothing:
//!
//! - a live loop holds `longrun/.lock` → nothing to do (exit 0);
//! - `longrun/PAUSE` exists → nothing is started (exit 5, as `kit loop` would);
//! - the last run is finished (done, or a cap reached: see [`durable`]) → nothing to start
//!   (exit 0; `kit loop --new-run` starts a new run by hand);
//! - else it starts `kit loop` detached: in its own session (`setsid`, so no terminal's hangup
//!   reaches it), stdin from `/dev/null`, stdout and stderr appended to
//!   `longrun/.runs/loop-STAMP.log`, and returns only once that loop holds the lock (read from
//!   `/proc/locks`, as `kit status` does), or once it has exited (its last line is reported).
//!
//! It prints one status line either way, prefixed `ensure-alive:`. Calls at the same instant
//! are serialised on a flock of their own (`longrun/.runs/ensure.lock`, held while one call
//! decides and its loop starts), so any number of them start at most one loop; and the loop's
//! own lock would refuse a second one anyway (exit 4, which counts as alive).
//!
//! Exit status: 0 when a loop is (now) alive or the run is finished, 5 when paused, 2 for a bad
//! goal or config, and the started loop's own status when it exited before taking the lock.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fs4::fs_std::FileExt;

use super::LoopOptions;
use crate::error::{Error, IoContext, Result, EXIT_CAP, EXIT_LOCKED, EXIT_OK, EXIT_PAUSED};
use crate::longrun::lock;
use crate::longrun::Project;
use crate::longrun::{durable, pause};

/// The hidden `kit loop` flag the detached loop is started with: it makes itself the leader of
/// a new session before anything else ([`detach_session`]).
pub const DETACHED_FLAG: &str = "--detached";

/// How long a call waits for another call's decision (the flock on `ensure.lock`).
const QUEUE_PATIENCE: Duration = Duration::from_secs(120);

/// How long the started loop may take to hold the lock (it first loads and rates the goal).
const START_PATIENCE: Duration = Duration::from_secs(120);

/// `kit loop --ensure-alive` with the loop options `opts` (passed on to the loop it starts).
///
/// Errors: [`Error::Usage`]/[`Error::Input`] (exit 2) for a bad goal or config; [`Error::Io`]
/// when `longrun/.runs/` cannot be written; [`Error::Internal`] when the started loop neither
/// took the lock nor exited within two minutes.
pub fn ensure_alive(cwd: &Path, opts: &LoopOptions, out: &mut dyn Write) -> Result<u8> {
    let project = Project::discover_initialised(cwd)?;
    opts.check(&project.root)?;
    crate::atomic::create_dir_all(&project.runs())?;
    let queue = project.runs().join("ensure.lock");
    let _turn = take_turn(&queue)?;
    let o = Path::new("stdout");
    if let Some(h) = crate::longrun::running_loop(&project) {
        writeln!(out, "ensure-alive: a loop is alive ({}); nothing to start", h.describe())
            .at(o)?;
        return Ok(EXIT_OK);
    }
    if let Some(p) = pause::read(&project) {
        writeln!(
            out,
            "ensure-alive: paused {}; nothing started; kit resume to go on",
            p.describe()
        )
        .at(o)?;
        return Ok(EXIT_PAUSED);
    }
    let what = match super::plan_for(&project, opts)? {
        durable::Plan::Finished { reason, next, .. } => {
            writeln!(out, "ensure-alive: {reason}; nothing to start ({next})").at(o)?;
            return Ok(EXIT_OK);
        }
        durable::Plan::Continue(r) => format!("continuing run {}", r.id),
        durable::Plan::New { id, .. } => format!("run {id}"),
    };
    let log = project.runs().join(format!("loop-{}.log", stamp()));
    let mut child = spawn_detached(&project.root, opts, &log)?;
    let pid = child.id();
    let log_rel = log.strip_prefix(&project.root).unwrap_or(&log).display().to_string();
    let deadline = Instant::now() + START_PATIENCE;
    loop {
        if lock::live_holder(&project.lock()).is_some_and(|h| h.pid == pid) {
            writeln!(
                out,
                "ensure-alive: started a loop (pid {pid}, {what}); its output goes to {log_rel}"
            )
            .at(o)?;
            return Ok(EXIT_OK);
        }
        if let Some(status) =
            child.try_wait().map_err(|e| Error::internal(format!("waiting for the loop: {e}")))?
        {
            let code = status.code().map_or(1, |c| c.clamp(0, 255) as u8);
            let last = last_line(&log);
            if code == EXIT_LOCKED {
                if let Some(h) = crate::longrun::running_loop(&project) {
                    writeln!(
                        out,
                        "ensure-alive: a loop is alive ({}); nothing to start",
                        h.describe()
                    )
                    .at(o)?;
                    return Ok(EXIT_OK);
                }
            }
            writeln!(out, "ensure-alive: the loop (pid {pid}) ran and exited {code}: {last} (all of it in {log_rel})")
                .at(o)?;
            // Done or a cap: the run is finished, which is what a timer wants to know.
            return Ok(if code == EXIT_CAP { EXIT_OK } else { code });
        }
        if Instant::now() >= deadline {
            return Err(Error::internal(format!(
                "the loop started by --ensure-alive (pid {pid}) neither took longrun/.lock nor exited within {}; see {log_rel}",
                crate::units::format_duration(START_PATIENCE)
            ))
            .with_hint("kit status, then kit loop in a terminal to see why"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Wait (up to [`QUEUE_PATIENCE`]) for the flock on `path`, which serialises `--ensure-alive`
/// calls. The returned file holds it until dropped.
///
/// Errors: [`Error::Io`]; [`Error::Locked`] when another call kept it for the whole wait.
fn take_turn(path: &Path) -> Result<File> {
    let file = lock::open_lock_file(path)?;
    let deadline = Instant::now() + QUEUE_PATIENCE;
    while !FileExt::try_lock_exclusive(&file).at(path)? {
        if Instant::now() >= deadline {
            return Err(Error::Locked {
                path: path.to_path_buf(),
                holder: "another kit loop --ensure-alive that has been deciding for two minutes"
                    .into(),
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(file)
}

/// Start `kit -C ROOT loop --detached [the loop flags]`, its output appended to `log`.
fn spawn_detached(root: &Path, opts: &LoopOptions, log: &Path) -> Result<std::process::Child> {
    let exe = std::env::current_exe()
        .map_err(|e| Error::internal(format!("cannot find kit's own binary: {e}")))?;
    let out = std::fs::OpenOptions::new().create(true).append(true).open(log).at(log)?;
    let err = out.try_clone().at(log)?;
    let mut cmd = Command::new(&exe);
    cmd.arg("-C").arg(root).arg("loop").arg(DETACHED_FLAG).args(loop_flags(opts));
    cmd.current_dir(root).stdin(Stdio::null()).stdout(Stdio::from(out)).stderr(Stdio::from(err));
    cmd.spawn().map_err(|e| {
        Error::internal(format!("cannot start {} loop: {e}", exe.display())).with_hint("kit doctor")
    })
}

/// The `kit loop` flags that reproduce `opts` (all but `--ensure-alive` itself).
pub fn loop_flags(opts: &LoopOptions) -> Vec<String> {
    let mut v = Vec::new();
    if let Some(a) = &opts.agent {
        v.extend(["--agent".to_string(), a.clone()]);
    }
    if let Some(n) = opts.max_iterations {
        v.extend(["--max-iterations".to_string(), n.to_string()]);
    }
    let secs = |d: Duration| format!("{}ms", d.as_millis().max(1));
    if let Some(t) = opts.timeout {
        v.extend(["--timeout".to_string(), secs(t)]);
    }
    if let Some(m) = opts.memory_max {
        v.extend(["--memory-max".to_string(), m.to_string()]);
    }
    if let Some(w) = opts.max_wall {
        v.extend(["--max-wall".to_string(), secs(w)]);
    }
    if opts.allow_green_start {
        v.push("--allow-green-start".to_string());
    }
    v
}

/// Make this process the leader of a new session, with no controlling terminal: the detached
/// loop calls it first. A process that already leads a group cannot (`EPERM`); it then goes on
/// in its own group, which is as detached as it can be.
pub fn detach_session() {
    let _ = nix::unistd::setsid();
}

/// `20261001T090000Z` from the kit clock, for log names.
fn stamp() -> String {
    crate::clock::now().strftime("%Y%m%dT%H%M%SZ").to_string()
}

/// What the started loop's log says last, for the one status line: its last `kit: error:`
/// line when it failed with one, else its last line that says something.
fn last_line(path: &PathBuf) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    lines
        .iter()
        .rev()
        .find(|l| l.starts_with("kit: error:"))
        .or(lines.last())
        .map_or_else(|| "(no output)".to_string(), |l| l.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loop_flags_are_passed_on() {
        let opts = LoopOptions {
            agent: Some("sh ./a b.sh".into()),
            max_iterations: Some(3),
            timeout: Some(Duration::from_secs(90)),
            memory_max: Some(1 << 30),
            max_wall: Some(Duration::from_secs(7200)),
            new_run: false,
            allow_green_start: true,
        };
        assert_eq!(
            loop_flags(&opts),
            [
                "--agent",
                "sh ./a b.sh",
                "--max-iterations",
                "3",
                "--timeout",
                "90000ms",
                "--memory-max",
                "1073741824",
                "--max-wall",
                "7200000ms",
                "--allow-green-start"
            ]
        );
        assert!(loop_flags(&LoopOptions::default()).is_empty());
    }
}
