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
//! - the flock decides, not the record (issue 22: the record is a file the agent can write): a
//!   record naming a process that is alive on this host counts as held only when that process
//!   still has the lock file open (a live loop whose file was replaced under it, see
//!   [`Holder::holds_lock_file`]); a record naming any other live process (pid 1 with its real
//!   command line) is stale: the lock is taken over and the caller journals `lock_takeover`
//!   with `stale`. A held flock is never stolen: [`acquire`] fails before it reads the record.
//!
//! The record is rewritten in place (the flock belongs to the file's inode, so it cannot be
//! replaced by a rename); it is one small `write`, and a reader that finds it empty or partial
//! retries for a moment.
//!
//! A flock lives on an inode, not a path: if the agent deletes or replaces `longrun/.lock`, the
//! path no longer leads to the held lock and a second loop could take a fresh one. So a holder
//! keeps its lock ([`LoopLock::keep`]): a thread checks the path every 100 ms and, when it no
//! longer leads to a file this loop holds, creates the file again, flocks it and writes the
//! record (counted for the loop to journal as a cheat, see [`LoopLock::take_repairs`]). A second
//! loop that slipped in between still meets the live holder in the journal and refuses (see
//! `History::open_run`).

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
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
        if !crate::proc::is_alive(pid) {
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

impl Holder {
    /// True when the process the record names is alive here ([`Holder::is_alive_here`]) and
    /// has the lock file at `path` open (the file there now, or one deleted or replaced under
    /// it): what a live loop always has, since it keeps its flock on an open file. A process
    /// whose open files cannot be read (another user's, pid 1) holds no lock of this user's.
    pub fn holds_lock_file(&self, path: &Path) -> bool {
        if !self.is_alive_here() {
            return false;
        }
        let want = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let deleted = format!("{} (deleted)", want.display());
        let Ok(fds) = std::fs::read_dir(format!("/proc/{}/fd", self.pid)) else { return false };
        fds.flatten().filter_map(|fd| std::fs::read_link(fd.path()).ok()).any(|target| {
            target == want
                || target.to_string_lossy() == deleted
                || (std::fs::metadata(&target).ok())
                    .zip(std::fs::metadata(&want).ok())
                    .is_some_and(|(a, b)| a.ino() == b.ino() && a.dev() == b.dev())
        })
    }
}

/// What was in the lock file when a loop took it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Previous {
    /// Empty: the last holder ended cleanly, or there was none.
    Clean,
    /// A dead holder's record, taken over.
    Dead(Holder),
    /// A record naming a live process that holds no flock on this lock (it never was a loop,
    /// or the record was written by hand): stale, taken over.
    Stale(Holder),
    /// Text that is not a record (damaged); taken over.
    Unreadable(String),
}

/// A held `longrun/.lock`. Dropping it stops the keeper, empties the record and releases the
/// flock.
#[derive(Debug)]
pub struct LoopLock {
    /// The files this loop holds a flock on: the first one taken, then any re-created after the
    /// path was deleted or replaced (the last one is what the path should lead to).
    files: Arc<Mutex<Vec<File>>>,
    path: PathBuf,
    holder: Holder,
    repairs: Arc<AtomicU32>,
    stop: Arc<AtomicBool>,
    keeper: Option<std::thread::JoinHandle<()>>,
}

/// Take the lock at `path` for `me`, without waiting.
///
/// Errors: [`Error::Locked`] with the holder's description when another loop holds it (exit 4);
/// [`Error::Io`] when the file cannot be opened or written.
pub fn acquire(path: &Path, me: &Holder) -> Result<(LoopLock, Previous)> {
    let mut file = open_locked(path)?;
    let mut text = String::new();
    file.read_to_string(&mut text).at(path)?;
    let previous = match text.trim() {
        "" => Previous::Clean,
        t => match serde_json::from_str::<Holder>(t) {
            Ok(h) if h.pid != me.pid && h.holds_lock_file(path) => {
                // The file was replaced under a live loop: never displace it.
                let _ = FileExt::unlock(&file);
                return Err(Error::Locked { path: path.to_path_buf(), holder: h.describe() });
            }
            Ok(h) if h.pid != me.pid && h.is_alive_here() => Previous::Stale(h),
            Ok(h) => Previous::Dead(h),
            Err(_) => Previous::Unreadable(t.chars().take(200).collect()),
        },
    };
    write_record(&mut file, path, me)?;
    let lock = LoopLock {
        files: Arc::new(Mutex::new(vec![file])),
        path: path.to_path_buf(),
        holder: me.clone(),
        repairs: Arc::new(AtomicU32::new(0)),
        stop: Arc::new(AtomicBool::new(false)),
        keeper: None,
    };
    Ok((lock, previous))
}

/// Open (creating it, never truncating) the lock file at `path` and take its flock without
/// waiting.
///
/// Errors: [`Error::Locked`] naming the holder when another process holds it; [`Error::Io`].
fn open_locked(path: &Path) -> Result<File> {
    let mut file = open_lock_file(path)?;
    // fs4's flock(LOCK_EX | LOCK_NB), called through the trait: std's own File locking is newer
    // than this crate's minimum Rust version.
    if !FileExt::try_lock_exclusive(&file).at(path)? {
        // The record is only believed when it names the process that holds the flock.
        let holder = live_holder(path).map_or_else(|| holder_text(&mut file), |h| h.describe());
        return Err(Error::Locked { path: path.to_path_buf(), holder });
    }
    Ok(file)
}

/// `path` opened to read and write, made when missing and never truncated: a lock file whose
/// contents (a holder record) outlive the flock on it.
///
/// Errors: [`Error::Io`] naming `path`.
pub(crate) fn open_lock_file(path: &Path) -> Result<File> {
    OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path).at(path)
}

fn write_record(file: &mut File, p: &Path, holder: &Holder) -> Result<()> {
    let mut line = serde_json::to_string(holder).map_err(|e| Error::internal(e.to_string()))?;
    line.push('\n');
    file.set_len(0).at(p)?;
    file.seek(SeekFrom::Start(0)).at(p)?;
    file.write_all(line.as_bytes()).at(p)?;
    file.sync_data().at(p)
}

/// Make `path` lead to a file `files` holds a flock on again: when it was deleted or replaced,
/// create it, flock it and write the record. Returns whether a repair was made.
///
/// Errors: [`Error::Locked`] when another process holds the file now at `path`; [`Error::Io`].
fn repair(path: &Path, files: &Mutex<Vec<File>>, holder: &Holder) -> Result<bool> {
    let mut files = files.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let on_path = std::fs::metadata(path).ok();
    let ours = |f: &File| {
        f.metadata()
            .ok()
            .zip(on_path.as_ref())
            .is_some_and(|(a, b)| a.ino() == b.ino() && a.dev() == b.dev())
    };
    if files.iter().any(ours) {
        return Ok(false);
    }
    let mut file = open_locked(path)?;
    write_record(&mut file, path, holder)?;
    files.push(file);
    Ok(true)
}

impl LoopLock {
    /// Start the keeper thread: every 100 ms, re-create and re-lock the file if its path no
    /// longer leads to it (see the module doc). Idempotent.
    pub fn keep(&mut self) {
        if self.keeper.is_some() {
            return;
        }
        let (path, files, holder) = (self.path.clone(), self.files.clone(), self.holder.clone());
        let (repairs, stop) = (self.repairs.clone(), self.stop.clone());
        self.keeper = Some(std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if let Ok(true) = repair(&path, &files, &holder) {
                    repairs.fetch_add(1, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }));
    }

    /// How many times the lock file was re-created since the last call (each one a deletion or
    /// replacement by someone else).
    pub fn take_repairs(&self) -> u32 {
        self.repairs.swap(0, Ordering::Relaxed)
    }

    /// The record this loop wrote.
    pub fn holder(&self) -> &Holder {
        &self.holder
    }

    /// Check that the lock file's path still leads to a file this loop holds, re-creating it
    /// when it was deleted or replaced (counted in [`LoopLock::take_repairs`]).
    ///
    /// Errors: [`Error::Internal`] saying the lock was lost when another process holds the file
    /// now at the path.
    pub fn verify(&self) -> Result<()> {
        match repair(&self.path, &self.files, &self.holder) {
            Ok(true) => {
                self.repairs.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Ok(false) => Ok(()),
            Err(_) => Err(Error::internal(format!(
                "{} was deleted or replaced while this loop held it, and another process locked the new file; stopping so that two loops never run",
                self.path.display()
            ))
            .with_hint("kit status, then kit loop")),
        }
    }
}

impl Drop for LoopLock {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(k) = self.keeper.take() {
            let _ = k.join();
        }
        let files = self.files.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        for file in files.iter() {
            // Empty the record first: a crash between the two steps leaves an empty, unlocked
            // file.
            let _ = file.set_len(0);
            let _ = file.sync_data();
            let _ = FileExt::unlock(file);
        }
    }
}

/// The holder record in the lock file at `path`, if there is a readable one. A record being
/// written at this instant is read again for up to [`RECORD_PATIENCE`].
pub fn read_holder(path: &Path) -> Option<Holder> {
    holder_of(&mut File::open(path).ok()?)
}

/// The live holder of the lock at `path`, if a loop holds it now. Never takes the lock (taking
/// it, even briefly, could turn away a loop starting at that instant): a flock on the file's
/// inode is looked up in `/proc/locks`, and the record read.
pub fn live_holder(path: &Path) -> Option<Holder> {
    let meta = std::fs::metadata(path).ok()?;
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    // The pid that took the flock, from its /proc/locks line:
    // "1: FLOCK  ADVISORY  WRITE 4242 08:01:1234 0 EOF" (a "->" marks a waiter).
    let locker = locks.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().filter(|x| *x != "->").collect();
        let ours = f.get(1) == Some(&"FLOCK")
            && f.get(5).and_then(|id| id.rsplit(':').next()).and_then(|i| i.parse::<u64>().ok())
                == Some(meta.ino());
        ours.then(|| f.get(4).and_then(|p| p.parse::<u32>().ok()).unwrap_or(0))
    })?;
    match read_holder(path) {
        // Proven: the record names the very process holding the flock, and it still runs the
        // recorded command.
        Some(h) if h.pid == locker && h.is_alive_here() => Some(h),
        Some(h) => Some(Holder {
            pid: locker,
            host: host_name(),
            started: "?".into(),
            command: format!(
                "(not proven to be a kit loop: the lock record names pid {} `{}`, but the flock is held by pid {locker} `{}`)",
                h.pid,
                h.command,
                cmdline_of(locker)
            ),
        }),
        None => Some(Holder {
            pid: locker,
            host: host_name(),
            started: "?".into(),
            command: format!("(holder record not written yet; flock held by `{}`)", cmdline_of(locker)),
        }),
    }
}

/// The command line of `pid` as `/proc/PID/cmdline` gives it, space-joined; `?` when unreadable.
fn cmdline_of(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline")).map_or_else(
        |_| "?".into(),
        |raw| {
            raw.split(|&b| b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        },
    )
}

/// How long a holder record that is empty or partial is read again before giving up: a holder
/// writes its record right after taking the flock, but a loaded machine may deschedule it
/// between the two for longer than a moment.
const RECORD_PATIENCE: Duration = Duration::from_secs(5);

/// The holder record in `file`, the very inode whose flock another process holds. It is read
/// through the open file, not the path: the path may have been deleted or replaced since it was
/// opened (an agent deleting `longrun/.lock` in a loop), and the record on the locked inode is
/// the one that names the holder. An empty or partial record is read again for up to
/// [`RECORD_PATIENCE`].
fn holder_of(file: &mut File) -> Option<Holder> {
    let deadline = std::time::Instant::now() + RECORD_PATIENCE;
    loop {
        let mut text = String::new();
        if file.seek(SeekFrom::Start(0)).is_ok() && file.read_to_string(&mut text).is_ok() {
            if let Ok(h) = serde_json::from_str::<Holder>(text.trim()) {
                return Some(h);
            }
        }
        if std::time::Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn holder_text(file: &mut File) -> String {
    match holder_of(file) {
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
    fn a_record_naming_a_live_process_that_holds_no_flock_is_stale() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(".lock");
        // pid 1 with its real command line: alive, but no loop of this lock (the flock is free).
        let init = Holder {
            pid: 1,
            host: host_name(),
            started: "2026-01-01T00:00:00Z".into(),
            command: cmdline_of(1),
        };
        assert!(init.is_alive_here(), "pid 1 runs the recorded command");
        std::fs::write(&p, serde_json::to_string(&init).unwrap()).unwrap();
        let (lock, prev) = acquire(&p, &Holder::current()).unwrap();
        assert_eq!(prev, Previous::Stale(init));
        // A held flock is never stolen, whatever the record names.
        let other = Holder { pid: std::process::id() + 1, ..Holder::current() };
        assert!(matches!(acquire(&p, &other), Err(Error::Locked { .. })));
        drop(lock);
    }

    #[test]
    fn a_deleted_or_replaced_lock_file_is_locked_again() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(".lock");
        let me = Holder::current();
        let (lock, _) = acquire(&p, &me).unwrap();
        lock.verify().unwrap();
        assert_eq!(lock.take_repairs(), 0);
        std::fs::remove_file(&p).unwrap();
        lock.verify().unwrap();
        assert_eq!(lock.take_repairs(), 1);
        assert_eq!(live_holder(&p).map(|h| h.pid), Some(me.pid));
        std::fs::remove_file(&p).unwrap();
        std::fs::write(&p, "").unwrap();
        lock.verify().unwrap();
        assert_eq!(lock.take_repairs(), 1);
        assert_eq!(read_holder(&p).map(|h| h.pid), Some(me.pid));
        // Someone else locked the file now at the path: the lock is lost.
        std::fs::remove_file(&p).unwrap();
        let (_other, _) = acquire(&p, &Holder { pid: me.pid + 1, ..me.clone() }).unwrap();
        assert!(lock.verify().is_err());
    }

    #[test]
    fn the_holder_is_named_through_the_locked_file_even_after_its_path_was_deleted() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(".lock");
        let me = Holder::current();
        let (_lock, _) = acquire(&p, &me).unwrap();
        // A second loop opened the file, then the agent deleted the path before it read.
        let mut opened = File::open(&p).unwrap();
        std::fs::remove_file(&p).unwrap();
        assert_eq!(holder_of(&mut opened), Some(me));
    }

    #[test]
    fn a_record_written_late_by_a_descheduled_holder_is_still_read() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(".lock");
        std::fs::write(&p, "").unwrap();
        let mut opened = File::open(&p).unwrap();
        let me = Holder::current();
        let record = serde_json::to_string(&me).unwrap();
        let late = {
            let p = p.clone();
            // Longer than the half second a reader used to wait.
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(1500));
                std::fs::write(p, record).unwrap();
            })
        };
        assert_eq!(holder_of(&mut opened), Some(me));
        late.join().unwrap();
    }
}
