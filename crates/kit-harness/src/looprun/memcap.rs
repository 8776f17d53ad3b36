//! The agent's memory cap (DESIGN §6): `MemoryMax` of its whole process tree.
//!
//! Two enforcers, chosen once per loop by [`detect`]:
//! - **systemd-run**: where a user systemd answers, the agent runs as
//!   `systemd-run --user --scope --quiet -p MemoryMax=… -p MemorySwapMax=0 -- AGENT…`; the kernel's
//!   cgroup memory controller then kills inside the scope when the tree passes the cap.
//! - **watchdog**: elsewhere (containers, CI, a login without a user bus), kit samples the
//!   resident memory (`VmRSS`) of every process of the agent's tree — its process group plus
//!   every descendant of kit, which is a child subreaper — about every 100 ms, and SIGKILLs the
//!   group and the tree when the sum passes the cap. A process can outgrow the cap for at most
//!   one sampling interval.
//!
//! `KIT_MEMORY_ENFORCER=watchdog` (or `systemd-run`) forces a choice, for tests and for machines
//! where the probe misleads.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::proc as procs;

/// Environment variable that forces the enforcer: `watchdog` or `systemd-run`.
pub const FORCE_VAR: &str = "KIT_MEMORY_ENFORCER";

/// How often the watchdog samples the tree's resident memory.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(100);

/// Which mechanism enforces the memory cap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Enforcer {
    /// A transient systemd scope with `MemoryMax` and `MemorySwapMax=0`.
    SystemdRun,
    /// kit's resident-memory watchdog over the agent's process tree.
    Watchdog,
}

impl Enforcer {
    /// The name journaled in `memory_cap` and `agent_end`: `systemd-run` or `watchdog`.
    pub fn name(self) -> &'static str {
        match self {
            Enforcer::SystemdRun => "systemd-run",
            Enforcer::Watchdog => "watchdog",
        }
    }

    /// The argv that runs `argv` under this enforcer with a cap of `max_bytes`.
    pub fn wrap(self, argv: Vec<String>, max_bytes: u64) -> Vec<String> {
        match self {
            Enforcer::Watchdog => argv,
            Enforcer::SystemdRun => {
                let mut v: Vec<String> = [
                    "systemd-run",
                    "--user",
                    "--scope",
                    "--quiet",
                    "--collect",
                    "-p",
                    &format!("MemoryMax={max_bytes}"),
                    "-p",
                    "MemorySwapMax=0",
                    "--",
                ]
                .iter()
                .map(|s| s.to_string())
                .collect();
                v.extend(argv);
                v
            }
        }
    }
}

/// The enforcer this machine supports, and why (for `kit doctor` and the journal).
///
/// A trial `systemd-run --user --scope --quiet true` decides: it succeeds only where a user
/// systemd answers on the bus and may create scopes. Bounded to a few seconds.
pub fn detect() -> (Enforcer, String) {
    match std::env::var(FORCE_VAR).ok().as_deref() {
        Some("watchdog") => return (Enforcer::Watchdog, format!("forced by {FORCE_VAR}")),
        Some("systemd-run") => return (Enforcer::SystemdRun, format!("forced by {FORCE_VAR}")),
        _ => {}
    }
    let child = Command::new("systemd-run")
        .args(["--user", "--scope", "--quiet", "--collect", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return (Enforcer::Watchdog, format!("systemd-run not usable: {e}")),
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match child.try_wait() {
            Ok(Some(st)) if st.success() => {
                return (
                    Enforcer::SystemdRun,
                    "a user systemd answers (systemd-run --user --scope works)".into(),
                )
            }
            Ok(Some(_)) => {
                let mut err = String::new();
                if let Some(mut e) = child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut e, &mut err);
                }
                let first = err.lines().next().unwrap_or("it failed").trim().to_string();
                return (
                    Enforcer::Watchdog,
                    format!("no user systemd: systemd-run says \"{first}\""),
                );
            }
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return (
                    Enforcer::Watchdog,
                    "no user systemd: systemd-run did not answer in 5s".into(),
                );
            }
        }
    }
}

/// The resident-memory watchdog over one agent's process tree.
#[derive(Debug)]
pub struct Watchdog {
    /// The cap in bytes.
    pub limit: u64,
    /// The highest sum seen, in bytes.
    pub peak: u64,
    me: i32,
    pgid: i32,
    last: Option<Instant>,
}

impl Watchdog {
    /// A watchdog for the tree of process group `pgid` under kit (`me`), capped at `limit` bytes.
    pub fn new(me: i32, pgid: i32, limit: u64) -> Self {
        Watchdog { limit, peak: 0, me, pgid, last: None }
    }

    /// Sum the tree's resident memory if a sampling interval has passed; when the sum is over
    /// the cap, SIGKILL the group and the tree and return the sum (bytes).
    pub fn tick(&mut self) -> Option<u64> {
        if self.last.is_some_and(|t| t.elapsed() < SAMPLE_EVERY) {
            return None;
        }
        self.last = Some(Instant::now());
        let all = procs::snapshot();
        let used: u64 =
            procs::tree(&all, self.me, self.pgid).into_iter().filter_map(procs::rss_bytes).sum();
        self.peak = self.peak.max(used);
        if used > self.limit {
            procs::signal_tree(self.me, self.pgid, Signal::SIGKILL);
            return Some(used);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn systemd_run_wraps_the_agent_in_a_capped_scope() {
        let argv = Enforcer::SystemdRun.wrap(vec!["sh".into(), "-c".into(), "x".into()], 100 << 20);
        assert_eq!(
            argv.join(" "),
            "systemd-run --user --scope --quiet --collect -p MemoryMax=104857600 -p MemorySwapMax=0 -- sh -c x"
        );
        assert_eq!(Enforcer::Watchdog.wrap(vec!["a".into()], 1), vec!["a".to_string()]);
    }
}
