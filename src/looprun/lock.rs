//! `longrun/.lock`: one loop per `longrun/` (DESIGN §6 step 1, §12).
//!
//! The loop takes an exclusive, non-blocking `flock` on the file and keeps it for its whole run.
//! The kernel releases a flock when its holder dies, however it dies, so the lock itself can
//! never be left stale; what can be left behind is the *holder record*, one line of JSON in the
//! lock file:
//!
//! ```json
//! {"pid":4242,"host":"build-7","started":"2026-10-01T09:00:00Z","command":"kit loop --agent claude"}
//! ```
//!
//! A loop writes its record right after taking the flock and empties the file before releasing
//! it. So, when a loop takes the flock:
//! - an empty file means the last holder ended cleanly;
//! - a record means the last holder died without cleaning up (SIGKILL, a crash, a reboot): the
//!   lock is taken over and the caller journals `lock_takeover` with the old record;
//! - a record naming a process that is alive on this host and still runs the recorded command
//!   means the lock file was deleted and re-created under a live loop: the live holder is never
//!   displaced, so this counts as held.
//!
//! The record is rewritten in place (the flock belongs to the file's inode, so it cannot be
//! replaced by a rename); it is one small `write`, and a reader that finds it empty or partial
//! retries for a moment.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use fs4::fs_std::FileExt;
use serde::{Deserialize, Serialize};

use crate::error::{Error, IoContext, Result};

/// Who holds the lock: written by the holder, shown to anyone who meets the lock.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    /// Process id of the loop.
    pub pid: u32,
    /// Host name of the machine it runs on.
    pub host: String,
    /// When it took the lock, RFC 3339 UTC (from the kit clock).
    pub started: String,
    /// Its command line.
    pub command: String,
}

impl Holder {
    /// The record for this process, started now.
    pub fn current() -> Holder {
        Holder {
            pid: std::process::id(),
            host: host_name(),
            started: crate::clock::now_rfc3339(),
            command: command_line(),
        }
    }

    /// One line for people: `pid 4242 on build-7 since 2026-10-01T09:00:00Z: kit loop`.
    pub fn describe(&self) -> String {
        format!("pid {} on {} since {}: {}", self.pid, self.host, self.started, self.command)
    }

    /// True when the process the record names is alive on this host and still runs the
    /// recorded command (so a re-used pid does not count).
    pub fn is_alive_here(&self) -> bool {
        if self.host != host_name() {
            return false;
        }
        let pid = self.pid as i32;
        if !super::procs::is_alive(pid) {
            return false;
        }
        match std::fs::read(format!("/proc/{pid}/cmdline")) {
            Ok(raw) => {
                let args: Vec<String> = raw
                    .split(|&b| b == 0)
                    .filter(|a| !a.is_empty())
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect();
                args.join(" ") == self.command
            }
            Err(_) => false,
        }
    }
}

/// What was in the lock file when a loop took it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Previous {
    /// Empty: the last holder ended cleanly, or there was none.
    Clean,
    /// A dead holder's record, taken over.
    Dead(Holder),
    /// Text that is not a record (damaged); taken over.
    Unreadable(String),
}

/// A held `longrun/.lock`. Dropping it empties the record and releases the flock.
#[derive(Debug)]
pub struct LoopLock {
    file: File,
    path: PathBuf,
    holder: Holder,
}

/// Take the lock at `path` for `me`, without waiting.
///
/// Errors: [`Error::Locked`] with the holder's description when another loop holds it (exit 4);
/// [`Error::Io`] when the file cannot be opened or written.
pub fn acquire(path: &Path, me: &Holder) -> Result<(LoopLock, Previous)> {
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .at(path)?;
    // fs4's flock(LOCK_EX | LOCK_NB), called through the trait: std's own File locking is newer
    // than this crate's minimum Rust version.
    if !FileExt::try_lock_exclusive(&file).at(path)? {
        return Err(Error::Locked { path: path.to_path_buf(), holder: holder_text(path) });
    }
    let mut text = String::new();
    file.read_to_string(&mut text).at(path)?;
    let previous = match text.trim() {
        "" => Previous::Clean,
        t => match serde_json::from_str::<Holder>(t) {
            Ok(h) if h.pid != me.pid && h.is_alive_here() => {
                // The file was replaced under a live loop: never displace it.
                let _ = FileExt::unlock(&file);
                return Err(Error::Locked { path: path.to_path_buf(), holder: h.describe() });
            }
            Ok(h) => Previous::Dead(h),
            Err(_) => Previous::Unreadable(t.chars().take(200).collect()),
        },
    };
    let mut lock = LoopLock { file, path: path.to_path_buf(), holder: me.clone() };
    lock.write_record()?;
    Ok((lock, previous))
}

impl LoopLock {
    fn write_record(&mut self) -> Result<()> {
        let mut line =
            serde_json::to_string(&self.holder).map_err(|e| Error::internal(e.to_string()))?;
        line.push('\n');
        let p = &self.path;
        self.file.set_len(0).at(p)?;
        self.file.seek(SeekFrom::Start(0)).at(p)?;
        self.file.write_all(line.as_bytes()).at(p)?;
        self.file.sync_data().at(p)
    }

    /// The record this loop wrote.
    pub fn holder(&self) -> &Holder {
        &self.holder
    }

    /// Check that the lock file on disk is still the file this loop holds (it was not deleted
    /// or replaced). Errors: [`Error::Internal`] saying the lock was lost.
    pub fn verify(&self) -> Result<()> {
        let ours = self.file.metadata().at(&self.path)?;
        match std::fs::metadata(&self.path) {
            Ok(m) if m.ino() == ours.ino() && m.dev() == ours.dev() => Ok(()),
            _ => Err(Error::internal(format!(
                "{} was deleted or replaced while this loop held it; stopping so that two loops never run",
                self.path.display()
            ))
            .with_hint("kit status, then kit loop")),
        }
    }
}

impl Drop for LoopLock {
    fn drop(&mut self) {
        // Empty the record first: a crash between the two steps leaves an empty, unlocked file.
        let _ = self.file.set_len(0);
        let _ = self.file.sync_data();
        let _ = FileExt::unlock(&self.file);
    }
}

/// The holder record in the lock file at `path`, if there is a readable one. A record being
/// written at this instant is retried for up to half a second.
pub fn read_holder(path: &Path) -> Option<Holder> {
    for _ in 0..25 {
        if let Ok(t) = std::fs::read_to_string(path) {
            if let Ok(h) = serde_json::from_str::<Holder>(t.trim()) {
                return Some(h);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// The live holder of the lock at `path`, if a loop holds it now. Never takes the lock (taking
/// it, even briefly, could turn away a loop starting at that instant): a flock on the file's
/// inode is looked up in `/proc/locks`, and the record read.
pub fn live_holder(path: &Path) -> Option<Holder> {
    let meta = std::fs::metadata(path).ok()?;
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    let held = locks.lines().any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        // "1: FLOCK  ADVISORY  WRITE 4242 08:01:1234 0 EOF" (a "->" marks a waiter).
        let f: Vec<&str> = f.into_iter().filter(|x| *x != "->").collect();
        f.get(1) == Some(&"FLOCK")
            && f.get(5).and_then(|id| id.rsplit(':').next()).and_then(|i| i.parse::<u64>().ok())
                == Some(meta.ino())
    });
    if !held {
        return None;
    }
    read_holder(path).or_else(|| {
        Some(Holder {
            pid: 0,
            host: "?".into(),
            started: "?".into(),
            command: "(holder record not written yet)".into(),
        })
    })
}

fn holder_text(path: &Path) -> String {
    match read_holder(path) {
        Some(h) => h.describe(),
        None => "a loop whose holder record is not readable yet".into(),
    }
}

/// This machine's host name.
pub fn host_name() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_else(|| "unknown-host".into())
}

/// This process's command line, arguments joined by spaces (as `/proc/PID/cmdline` shows it).
pub fn command_line() -> String {
    std::env::args().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_acquire_is_refused_and_names_the_holder() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(".lock");
        let me = Holder::current();
        let (lock, prev) = acquire(&p, &me).unwrap();
        assert_eq!(prev, Previous::Clean);
        let other = Holder { pid: me.pid + 1, ..me.clone() };
        match acquire(&p, &other) {
            Err(Error::Locked { holder, .. }) => {
                assert!(holder.contains(&format!("pid {}", me.pid)))
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(live_holder(&p).map(|h| h.pid), Some(me.pid));
        drop(lock);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "");
        assert!(live_holder(&p).is_none());
    }

    #[test]
    fn a_dead_holders_record_is_taken_over() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(".lock");
        let dead = Holder {
            pid: 999_999_999,
            host: host_name(),
            started: "2026-01-01T00:00:00Z".into(),
            command: "kit loop".into(),
        };
        std::fs::write(&p, serde_json::to_string(&dead).unwrap()).unwrap();
        let (lock, prev) = acquire(&p, &Holder::current()).unwrap();
        assert_eq!(prev, Previous::Dead(dead));
        assert_eq!(read_holder(&p).unwrap().pid, std::process::id());
        drop(lock);
        std::fs::write(&p, "{\"pid\":").unwrap();
        let (_lock, prev) = acquire(&p, &Holder::current()).unwrap();
        assert_eq!(prev, Previous::Unreadable("{\"pid\":".into()));
    }

    #[test]
    fn a_replaced_lock_file_is_noticed() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(".lock");
        let (lock, _) = acquire(&p, &Holder::current()).unwrap();
        lock.verify().unwrap();
        std::fs::remove_file(&p).unwrap();
        std::fs::write(&p, "").unwrap();
        assert!(lock.verify().is_err());
    }
}
