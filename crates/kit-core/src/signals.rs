//! Stopping a loop by hand. The agent runs in its own process group, so Ctrl-C on the terminal
//! (SIGINT to the foreground group) reaches kit but not the agent; without care kit would die and
//! leave the agent running. Instead kit blocks SIGINT, SIGTERM and SIGHUP while the loop runs
//! and reads them from a `signalfd` (non-blocking, polled where kit waits): on one, it ends the
//! agent's tree like a timeout (SIGTERM, grace, SIGKILL), restores the frozen files, journals
//! `loop_end` with outcome `interrupted`, and exits 130. It says at once on stderr what it is
//! stopping; a second signal during the grace period sends SIGKILL to the group at once.
//!
//! Children would inherit the block (Rust's `Command` does not reset the signal mask; an agent
//! started directly, such as `claude`, `codex` or the fake agent, showed SigBlk 4003 and so
//! ignored the SIGTERM at a timeout): [`unblock_in_child`] clears it between fork and exec.
//! Commands run through `sh -c` are covered twice: dash clears its mask at start.

use std::cell::Cell;

use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};

/// Exit status of an interrupted loop (128 + SIGINT, the shell's convention).
pub const EXIT_INTERRUPTED: u8 = 130;

/// The stop request reader. Dropping it unblocks the signals again (a signal still pending is
/// then delivered with its default action).
#[derive(Debug)]
pub struct Stop {
    fd: Option<SignalFd>,
    mask: SigSet,
    got: Cell<Option<Signal>>,
    count: Cell<u32>,
}

impl Stop {
    /// Block SIGINT, SIGTERM and SIGHUP for this thread and open a signalfd for them. Must be
    /// called before kit starts any thread. If the signalfd cannot be opened, nothing is blocked
    /// and the signals keep their default action.
    pub fn install() -> Stop {
        let mut mask = SigSet::empty();
        for s in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
            mask.add(s);
        }
        let fd = match mask.thread_block() {
            Ok(()) => {
                match SignalFd::with_flags(&mask, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC) {
                    Ok(fd) => Some(fd),
                    Err(_) => {
                        let _ = mask.thread_unblock();
                        None
                    }
                }
            }
            Err(_) => None,
        };
        Stop { fd, mask, got: Cell::new(None), count: Cell::new(0) }
    }

    /// The signal that asked the loop to stop, if one arrived (sticky once seen).
    pub fn requested(&self) -> Option<Signal> {
        self.poll();
        self.got.get()
    }

    /// How many stop signals arrived so far (a second one skips the grace period).
    pub fn times(&self) -> u32 {
        self.poll();
        self.count.get()
    }

    /// Read every pending signal from the signalfd.
    fn poll(&self) {
        let Some(fd) = &self.fd else { return };
        while let Ok(Some(info)) = fd.read_signal() {
            if self.got.get().is_none() {
                self.got.set(Signal::try_from(info.ssi_signo as i32).ok());
            }
            self.count.set(self.count.get() + 1);
        }
    }
}

impl Drop for Stop {
    fn drop(&mut self) {
        if self.fd.is_some() {
            let _ = self.mask.thread_unblock();
        }
    }
}

/// Make the process `cmd` starts begin with SIGINT, SIGTERM and SIGHUP unblocked, whatever kit
/// blocks for itself ([`Stop::install`]), so that the SIGTERM kit sends at a timeout or a first
/// Ctrl-C reaches it.
#[allow(unsafe_code)]
pub fn unblock_in_child(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the hook runs in the child between fork and exec and only calls sigprocmask,
    // which is async-signal-safe; it allocates nothing and touches no lock.
    unsafe {
        cmd.pre_exec(|| {
            let mut set = SigSet::empty();
            for s in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
                set.add(s);
            }
            nix::sys::signal::sigprocmask(
                nix::sys::signal::SigmaskHow::SIG_UNBLOCK,
                Some(&set),
                None,
            )
            .map_err(std::io::Error::from)
        });
    }
}
