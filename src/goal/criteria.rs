//! Running criteria, the way the loop decides "done" (DESIGN §4, §6): each command runs through
//! `sh -c` in the repository root, in its own process group, with stdout and stderr captured
//! together (unittest reports on stderr), and the whole group is SIGKILLed at the timeout — and
//! also when the shell ends, so a background process a criterion started cannot outlive it or
//! hold the output pipe open. A criterion passes when it exits with its expected status and every
//! expectation is met, before the timeout.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::sys::wait::{waitid, Id, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

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

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_millis().min(u64::MAX as u128) as u64)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}

/// Run every criterion of `goal` in order, each with `timeout`, until `stop` says kit was asked
/// to stop (polled while each runs): the running criterion's process group is then SIGKILLed,
/// its result marked `interrupted`, and the criteria after it are not run.
pub fn run_all(
    goal: &Goal,
    root: &Path,
    timeout: Duration,
    stop: &dyn Fn() -> bool,
) -> Vec<CriterionResult> {
    let mut results = Vec::new();
    for c in &goal.criteria {
        let r = run_until(c, root, timeout, stop);
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
    run_until(c, root, timeout, &|| false)
}

/// [`run_criterion`], also ending the process group as soon as `stop` returns true.
fn run_until(
    c: &Criterion,
    root: &Path,
    timeout: Duration,
    stop: &dyn Fn() -> bool,
) -> CriterionResult {
    let start = Instant::now();
    let run = execute(&c.command, root, timeout, stop);
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
            crate::duration::format_duration(timeout)
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

fn execute(
    command: &str,
    root: &Path,
    timeout: Duration,
    stop: &dyn Fn() -> bool,
) -> Result<Run, String> {
    let (mut reader, writer) = std::io::pipe().map_err(|e| format!("pipe: {e}"))?;
    let writer2 = writer.try_clone().map_err(|e| format!("pipe: {e}"))?;
    // The Command (holding our copies of the pipe's write end) is dropped at the end of this
    // statement, so the pipe closes when the group's last process exits.
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(root)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(writer2)
        .process_group(0)
        .spawn()
        .map_err(|e| format!("sh -c in {}: {e}", root.display()))?;
    let pgid = Pid::from_raw(child.id() as i32);

    let capture = Arc::new(Mutex::new(Capture::default()));
    let (done_tx, done_rx) = mpsc::channel();
    {
        let capture = Arc::clone(&capture);
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match reader.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => capture.lock().unwrap_or_else(|p| p.into_inner()).push(&buf[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            let _ = done_tx.send(());
        });
    }

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
    let _ = done_rx.recv_timeout(DRAIN_WAIT);
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
