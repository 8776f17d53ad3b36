//! Running criteria, the way the loop decides "done" (DESIGN §4, §6): each command runs through
//! `sh -c` in the repository root, in its own process group, with stdout and stderr captured
//! together (unittest reports on stderr), and the whole group is SIGKILLed at the timeout — and
//! also when the shell ends, so a background process a criterion started cannot outlive it or
//! hold the output pipe open. A criterion passes when it exits with its expected status and every
//! expectation is met, before the timeout.

use std::io::Read;
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::poll::{poll, PollFd, PollFlags};
use nix::sys::signal::{killpg, Signal};
use nix::sys::wait::{waitid, Id, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

use super::env::{CriteriaEnv, RunEnv};
use super::{Criterion, Goal, Kind};

/// How many lines of output a [`CriterionResult`] keeps.
pub const OUTPUT_TAIL_LINES: usize = 20;

/// Output kept for matching: the first 32 MiB, then the last 1 MiB (a runaway command must not
/// exhaust memory; a test runner's summary is at the end).
const HEAD_CAP: usize = 32 << 20;
const TAIL_CAP: usize = 1 << 20;

/// How long to wait for the output pipe to close after the process group is gone (a process
/// that left the group with `setsid` may still hold it).
const DRAIN_WAIT: Duration = Duration::from_secs(2);

/// After [`DRAIN_WAIT`], what is still in the pipe is read (it was written before the group
/// ended), but at most this much more: a process outside the group may go on writing. 1 MiB is
/// Linux's largest pipe buffer by default (`/proc/sys/fs/pipe-max-size`).
const AFTER_STOP_CAP: usize = 1 << 20;

/// The outcome of one criterion run, as the loop journals it and `kit status` shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CriterionResult {
    /// 1-based line of the criterion in goal.md.
    pub line: usize,
    /// function, regression or limit.
    pub kind: Kind,
    /// The command as written.
    pub command: String,
    /// Exit status matched and every expectation met, before the timeout.
    pub passed: bool,
    /// The shell's exit status; None when it was killed by a signal (the timeout) or never
    /// started.
    pub exit: Option<i32>,
    /// Whether the timeout killed the process group.
    pub timed_out: bool,
    /// Wall time of the run, journaled as milliseconds (`duration_ms`).
    #[serde(rename = "duration_ms", with = "millis")]
    pub duration: Duration,
    /// What was not met: each missing expectation as written (`Ran 14 tests`, `re:^OK$`), and
    /// `exit status 1, expected 0`, `timed out after 5m` or `could not start: …`.
    pub missing: Vec<String>,
    /// The last [`OUTPUT_TAIL_LINES`] lines of stdout and stderr together.
    pub output_tail: String,
    /// kit was asked to stop (Ctrl-C, SIGTERM) while it ran: its process group was killed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}

mod millis {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub(super) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_millis().min(u64::MAX as u128) as u64)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}

/// Run every criterion of `goal` in order, each with `timeout`, until `stop` says kit was asked
/// to stop (polled while each runs): the running criterion's process group is then SIGKILLed,
/// its result marked `interrupted`, and the criteria after it are not run.
///
/// With `env`, each command runs in that environment (see [`super::env`]) instead of kit's own.
pub fn run_all(
    goal: &Goal,
    root: &Path,
    timeout: Duration,
    env: Option<&CriteriaEnv>,
    stop: &dyn Fn() -> bool,
) -> Vec<CriterionResult> {
    let mut results = Vec::new();
    for c in &goal.criteria {
        let r = run_until(c, root, timeout, env, stop);
        let interrupted = r.interrupted;
        results.push(r);
        if interrupted || stop() {
            break;
        }
    }
    results
}

/// Run one criterion: `sh -c COMMAND` in `root`, stdin from /dev/null, stdout and stderr into one
/// pipe, in a new process group that is SIGKILLed as a whole at `timeout` and when the shell
/// exits. Never fails: a command that cannot start is a failed result saying why.
pub fn run_criterion(c: &Criterion, root: &Path, timeout: Duration) -> CriterionResult {
    run_until(c, root, timeout, None, &|| false)
}

/// [`run_criterion`] in `env` (kit's own environment when None), also ending the process group
/// as soon as `stop` returns true.
pub(crate) fn run_until(
    c: &Criterion,
    root: &Path,
    timeout: Duration,
    env: Option<&CriteriaEnv>,
    stop: &dyn Fn() -> bool,
) -> CriterionResult {
    let start = Instant::now();
    let run = match env.map(|e| e.for_run(root)).transpose() {
        Ok(run_env) => execute(&c.command, root, timeout, run_env.as_ref(), stop),
        Err(e) => Err(format!("cannot make the criteria's environment folder: {e}")),
    };
    let duration = start.elapsed();
    let mut result = CriterionResult {
        line: c.line,
        kind: c.kind,
        command: c.command.clone(),
        passed: false,
        exit: None,
        timed_out: false,
        duration,
        missing: Vec::new(),
        output_tail: String::new(),
        interrupted: false,
    };
    let run = match run {
        Ok(r) => r,
        Err(msg) => {
            result.missing.push(format!("could not start: {msg}"));
            return result;
        }
    };
    result.exit = run.exit;
    result.timed_out = run.timed_out;
    result.interrupted = run.interrupted;
    result.output_tail = tail(&run.output, OUTPUT_TAIL_LINES);
    if run.interrupted {
        result.missing.push("stopped by hand; the process group was killed".into());
    } else if run.timed_out {
        result.missing.push(format!(
            "timed out after {}; the process group was killed",
            crate::units::format_duration(timeout)
        ));
    } else {
        match run.exit {
            Some(code) if code == c.exit => {}
            Some(code) => result.missing.push(format!("exit status {code}, expected {}", c.exit)),
            None => result.missing.push(format!(
                "killed by signal {}, expected exit status {}",
                run.signal.map_or("?".to_string(), |s| s.to_string()),
                c.exit
            )),
        }
    }
    for e in &c.expectations {
        if !e.is_met(&run.output) {
            result.missing.push(e.as_written());
        }
    }
    result.passed = result.missing.is_empty();
    result
}

struct Run {
    exit: Option<i32>,
    signal: Option<i32>,
    timed_out: bool,
    interrupted: bool,
    output: String,
}

/// Bounded capture of a byte stream: a head and a rolling tail.
#[derive(Default)]
struct Capture {
    head: Vec<u8>,
    tail: Vec<u8>,
    dropped: u64,
}

impl Capture {
    fn push(&mut self, mut bytes: &[u8]) {
        if self.head.len() < HEAD_CAP {
            let n = bytes.len().min(HEAD_CAP - self.head.len());
            self.head.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
        }
        if bytes.is_empty() {
            return;
        }
        self.tail.extend_from_slice(bytes);
        if self.tail.len() > 2 * TAIL_CAP {
            let cut = self.tail.len() - TAIL_CAP;
            self.dropped += cut as u64;
            self.tail.drain(..cut);
        }
    }

    fn text(&self) -> String {
        let mut s = String::from_utf8_lossy(&self.head).into_owned();
        if self.dropped > 0 {
            s.push_str(&format!("\n[kit: {} bytes of output not kept]\n", self.dropped));
        }
        s.push_str(&String::from_utf8_lossy(&self.tail));
        s
    }
}

/// Read the non-blocking pipe `reader` into `capture` until end of file or, once `stop` is set,
/// until the pipe is empty (at most [`AFTER_STOP_CAP`] more bytes). What was written before
/// `stop` was set is always read: `stop` is loaded before each read, so "empty" is seen by a
/// read that started after the stop.
fn drain(mut reader: std::io::PipeReader, capture: &Mutex<Capture>, stop: &AtomicBool) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut after_stop = 0;
    loop {
        let stopping = stop.load(Ordering::Acquire);
        match reader.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                capture.lock().unwrap_or_else(|p| p.into_inner()).push(&buf[..n]);
                if stopping {
                    after_stop += n;
                    if after_stop >= AFTER_STOP_CAP {
                        return;
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if stopping {
                    return;
                }
                let mut fds = [PollFd::new(reader.as_fd(), PollFlags::POLLIN)];
                let _ = poll(&mut fds, 50u8);
            }
            Err(_) => return,
        }
    }
}

fn execute(
    command: &str,
    root: &Path,
    timeout: Duration,
    env: Option<&RunEnv>,
    stop: &dyn Fn() -> bool,
) -> Result<Run, String> {
    let (reader, writer) = std::io::pipe().map_err(|e| format!("pipe: {e}"))?;
    // Non-blocking, so that the reader can be told to stop once the pipe is empty (see drain).
    fcntl(reader.as_raw_fd(), FcntlArg::F_SETFL(OFlag::O_NONBLOCK))
        .map_err(|e| format!("pipe: {e}"))?;
    let writer2 = writer.try_clone().map_err(|e| format!("pipe: {e}"))?;
    // With kit's environment for the criteria, `sh` is POSIX's own: the criteria's PATH is not
    // the one kit was started with.
    let mut sh = Command::new(if env.is_some() { "/bin/sh" } else { "sh" });
    if let Some(env) = env {
        sh.env_clear().envs(env.vars.iter().map(|(k, v)| (k, v)));
    }
    let mut child = sh
        .arg("-c")
        .arg(command)
        .current_dir(root)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(writer2)
        .process_group(0)
        .spawn()
        .map_err(|e| format!("sh -c in {}: {e}", root.display()))?;
    // The Command holds our copies of the pipe's write end: drop it now, so that the pipe
    // closes when the group's last process exits (else every run waits DRAIN_WAIT for EOF).
    drop(sh);
    let pgid = Pid::from_raw(child.id() as i32);

    let capture = Arc::new(Mutex::new(Capture::default()));
    let stop_reading = Arc::new(AtomicBool::new(false));
    let (done_tx, done_rx) = mpsc::channel();
    let drainer = {
        let (capture, stop_reading) = (Arc::clone(&capture), Arc::clone(&stop_reading));
        std::thread::spawn(move || {
            drain(reader, &capture, &stop_reading);
            let _ = done_tx.send(());
        })
    };

    let start = Instant::now();
    let mut pause = Duration::from_millis(1);
    let mut interrupted = false;
    let timed_out = loop {
        // WNOWAIT leaves the shell a zombie, so its pid (the group id) cannot be reused before
        // the group is killed below.
        match waitid(
            Id::Pid(pgid),
            WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT,
        ) {
            Ok(WaitStatus::StillAlive) => {}
            Ok(_) => break false,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => break false,
        }
        if start.elapsed() >= timeout {
            break true;
        }
        if stop() {
            interrupted = true;
            break false;
        }
        std::thread::sleep(pause.min(timeout.saturating_sub(start.elapsed())));
        pause = (pause * 2).min(Duration::from_millis(25));
    };
    // End the whole group: at the timeout, on a stop, and any background process left after the
    // shell.
    let _ = killpg(pgid, Signal::SIGKILL);
    let status = child.wait().map_err(|e| format!("wait: {e}"))?;
    // Without end of file by then, a process outside the group holds the pipe: take what the
    // group wrote (still in the pipe if the reader was not scheduled meanwhile) and stop.
    let _ = done_rx.recv_timeout(DRAIN_WAIT);
    stop_reading.store(true, Ordering::Release);
    let _ = drainer.join();
    let output = capture.lock().unwrap_or_else(|p| p.into_inner()).text();
    use std::os::unix::process::ExitStatusExt;
    Ok(Run { exit: status.code(), signal: status.signal(), timed_out, interrupted, output })
}

/// The last `n` lines of `text`, each cut to 400 characters.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let from = lines.len().saturating_sub(n);
    lines[from..]
        .iter()
        .map(|l| {
            if l.chars().count() > 400 {
                let cut: String = l.chars().take(400).collect();
                format!("{cut}…")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_the_last_lines() {
        let text: String = (1..=30).map(|i| format!("line {i}\n")).collect();
        let t = tail(&text, 20);
        assert!(t.starts_with("line 11\n"));
        assert!(t.ends_with("line 30"));
        assert_eq!(tail("", 20), "");
    }

    #[test]
    fn output_still_in_the_pipe_when_the_reader_stops_is_kept() {
        // A process outside the group keeps the write end open, and the reader was not
        // scheduled before the drain wait ran out: what the group wrote is still in the pipe.
        let (reader, mut writer) = std::io::pipe().unwrap();
        fcntl(reader.as_raw_fd(), FcntlArg::F_SETFL(OFlag::O_NONBLOCK)).unwrap();
        std::io::Write::write_all(&mut writer, b"Ran 3 tests\n\nOK\n").unwrap();
        let capture = Mutex::new(Capture::default());
        drain(reader, &capture, &AtomicBool::new(true));
        assert_eq!(capture.lock().unwrap().text(), "Ran 3 tests\n\nOK\n");
        drop(writer);
    }

    #[test]
    fn a_criterion_whose_stray_holds_the_pipe_still_passes_on_what_it_printed() {
        let dir = tempfile::tempdir().unwrap();
        let c = Criterion {
            line: 1,
            kind: Kind::Function,
            // The shell waits until the stray has left its group, then prints and exits.
            command: "setsid sh -c 'echo $$ > stray; exec sleep 300' & until [ -s stray ]; do sleep 0.01; done; echo OK".into(),
            expectations: vec![super::super::Expectation::Substring("OK".into())],
            exit: 0,
        };
        let start = Instant::now();
        let r = run_criterion(&c, dir.path(), Duration::from_secs(60));
        // End the stray (the loop's end_strays would): wait for its pid, then SIGKILL it.
        let stray = dir.path().join("stray");
        let deadline = Instant::now() + Duration::from_secs(30);
        while !std::fs::read_to_string(&stray).is_ok_and(|t| t.ends_with('\n'))
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        if let Ok(pid) = std::fs::read_to_string(&stray).unwrap_or_default().trim().parse() {
            let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
        assert!(r.passed, "{r:#?}");
        assert!(start.elapsed() < Duration::from_secs(60), "{:?}", start.elapsed());
    }

    #[test]
    fn capture_is_bounded() {
        let mut c = Capture::default();
        let chunk = vec![b'x'; 1 << 20];
        for _ in 0..40 {
            c.push(&chunk);
        }
        c.push(b"\nRan 14 tests\nOK\n");
        let text = c.text();
        assert!(text.len() < HEAD_CAP + 3 * TAIL_CAP);
        assert!(text.ends_with("Ran 14 tests\nOK\n"));
        assert!(text.contains("bytes of output not kept"));
    }
}
