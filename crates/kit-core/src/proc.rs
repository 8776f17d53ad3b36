//! The agent's process tree as Linux shows it in `/proc`: which processes belong to a process
//! group, which descend from kit, how much resident memory they hold, and how to end them all.
//!
//! kit makes itself a child subreaper (`prctl(PR_SET_CHILD_SUBREAPER)`, see [`become_subreaper`]),
//! so a process that leaves the agent's process group (`setsid`, a double fork) is re-parented
//! to kit instead of init and is still found here by walking parent links down from kit.
//!
//! Source of the field layout: proc(5), `/proc/PID/stat` (fields 3 state, 4 ppid, 5 pgrp,
//! 22 starttime in clock ticks since boot) and `/proc/PID/status` (`VmRSS:` in kB).
//!
//! Also the one place kit looks a program up on `PATH` ([`find_on_path`], the `which` crate),
//! and the one way kit's helpers start a short-lived child under a time limit with its output
//! collected and its whole process group ended at the limit ([`spawn`], [`Running::wait`]: the
//! golden runner, the rehearsal, the fake agent's hooks). The loop's agent launcher
//! (`looprun::agent`, with its SIGTERM grace and memory cap) and the criteria runner
//! (`goal::criteria`, which waits with `WNOWAIT` so the group id cannot be reused) keep their
//! own, stricter versions.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, killpg, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag};
use nix::unistd::Pid;

/// The executable regular file `name` in the first folder of `$PATH` that has one (the `which`
/// crate: a regular file with an execute bit this process may use); `None` when there is none or
/// `PATH` is unset.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    which::which(name).ok()
}

/// How [`spawn`] starts a child.
#[derive(Clone, Copy, Debug, Default)]
pub struct Spawn<'a> {
    /// Bytes written to its stdin (then closed); `None`: stdin is `/dev/null`.
    pub input: Option<&'a [u8]>,
    /// Stdout and stderr on one pipe, in the order written (collected as `stdout`).
    pub merge: bool,
    /// Start it as the leader of a new process group, so that the time limit ends whatever it
    /// started too (they may hold its pipes); else only the child itself is killed.
    pub own_group: bool,
}

/// A child started by [`spawn`], its output collected by threads while it runs.
pub struct Running {
    child: std::process::Child,
    own_group: bool,
    out: Collected,
    err: Option<Collected>,
}

/// What a [`Running`] child did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Finished {
    /// Its exit code; `None` when it was killed at the limit or by a signal.
    pub code: Option<i32>,
    /// Whether it was killed at the time limit.
    pub timed_out: bool,
    /// Its stdout (with stderr when merged).
    pub stdout: Vec<u8>,
    /// Its stderr (empty when merged).
    pub stderr: Vec<u8>,
}

/// One pipe read to its end by a thread.
struct Collected {
    buf: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    eof: std::sync::mpsc::Receiver<()>,
}

impl Collected {
    fn start(mut r: impl std::io::Read + Send + 'static) -> Collected {
        let buf = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (tx, eof) = std::sync::mpsc::channel();
        let shared = std::sync::Arc::clone(&buf);
        std::thread::spawn(move || {
            let mut chunk = [0u8; 8192];
            loop {
                match r.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => shared.lock().unwrap_or_else(|e| e.into_inner()).extend(&chunk[..n]),
                }
            }
            let _ = tx.send(());
        });
        Collected { buf, eof }
    }

    /// Wait for end of file, at most `limit` (`None`: as long as it takes); true at EOF.
    fn wait_eof(&self, limit: Option<Duration>) -> bool {
        match limit {
            Some(l) => self.eof.recv_timeout(l).is_ok(),
            None => self.eof.recv().is_ok(),
        }
    }

    fn take(&self) -> Vec<u8> {
        std::mem::take(&mut *self.buf.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Start `cmd` as `how` says, with its stdout and stderr collected (the settings of `cmd` for
/// stdin, stdout and stderr are replaced).
///
/// Errors: the pipes cannot be made or the program cannot start (`std::io::Error`, for the
/// caller to name the program).
pub fn spawn(cmd: &mut std::process::Command, how: Spawn<'_>) -> std::io::Result<Running> {
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    if how.own_group {
        cmd.process_group(0);
    }
    cmd.stdin(if how.input.is_some() { Stdio::piped() } else { Stdio::null() });
    let (out, err, mut child) = if how.merge {
        let (r, w) = std::io::pipe()?;
        let w2 = w.try_clone()?;
        cmd.stdout(w).stderr(w2);
        let child = cmd.spawn();
        // `cmd` holds our copies of the write end: replace them, so the pipe closes when the
        // child's side does.
        cmd.stdout(Stdio::null()).stderr(Stdio::null());
        (Collected::start(r), None, child?)
    } else {
        let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
        let out = child.stdout.take().map(Collected::start);
        let err = child.stderr.take().map(Collected::start);
        let out = out.ok_or_else(|| std::io::Error::other("no stdout pipe"))?;
        (out, err, child)
    };
    if let (Some(input), Some(mut stdin)) = (how.input, child.stdin.take()) {
        let input = input.to_vec();
        // A child that does not read its stdin must neither fail nor stall the caller.
        std::thread::spawn(move || {
            use std::io::Write;
            let _ = stdin.write_all(&input);
        });
    }
    Ok(Running { child, own_group: how.own_group, out, err })
}

impl Running {
    /// The child's process id (its process group id under [`Spawn::own_group`]).
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    fn kill(&mut self) {
        if self.own_group {
            let _ = killpg(Pid::from_raw(self.child.id() as i32), Signal::SIGKILL);
        }
        let _ = self.child.kill();
    }

    /// Wait for the child's end, killing it (its group under [`Spawn::own_group`]) once
    /// `limit` has passed, then for the end of its output at most `eof_grace` (`None`: as long
    /// as it takes). When a process left behind still holds the pipe after the grace, its group
    /// is killed (under `own_group`) and what was written so far is kept.
    ///
    /// Errors: waiting for the child fails (`std::io::Error`).
    pub fn wait(
        mut self,
        limit: Duration,
        eof_grace: Option<Duration>,
    ) -> std::io::Result<Finished> {
        let start = Instant::now();
        let mut pause = Duration::from_millis(1);
        let (code, timed_out) = loop {
            if let Some(st) = self.child.try_wait()? {
                break (st.code(), false);
            }
            if start.elapsed() > limit {
                self.kill();
                let _ = self.child.wait();
                break (None, true);
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(10));
        };
        let streams: Vec<&Collected> =
            std::iter::once(&self.out).chain(self.err.as_ref()).collect();
        let at_eof = streams.iter().all(|c| c.wait_eof(eof_grace));
        if !at_eof && self.own_group {
            let _ = killpg(Pid::from_raw(self.child.id() as i32), Signal::SIGKILL);
            for c in &streams {
                c.wait_eof(Some(Duration::from_secs(1)));
            }
        }
        let stderr = self.err.as_ref().map(Collected::take).unwrap_or_default();
        Ok(Finished { code, timed_out, stdout: self.out.take(), stderr })
    }
}

/// One process as `/proc/PID/stat` describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Proc {
    /// Process id.
    pub pid: i32,
    /// Parent process id.
    pub ppid: i32,
    /// Process group id.
    pub pgid: i32,
    /// State letter (`R`, `S`, `D`, `Z` zombie, …).
    pub state: char,
    /// Start time in clock ticks since boot (field 22).
    pub starttime: u64,
}

impl Proc {
    /// A zombie has exited and only waits to be reaped; it holds no memory and does nothing.
    pub fn is_zombie(&self) -> bool {
        self.state == 'Z' || self.state == 'X'
    }
}

/// Parse the text of `/proc/PID/stat`. The command name (field 2) is in parentheses and may
/// itself hold spaces and parentheses, so fields are counted from the last `)`.
pub fn parse_stat(text: &str) -> Option<Proc> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let pid = text[..open].trim().parse().ok()?;
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    // rest[0] is field 3; field n is rest[n - 3].
    Some(Proc {
        pid,
        state: rest.first()?.chars().next()?,
        ppid: rest.get(1)?.parse().ok()?,
        pgid: rest.get(2)?.parse().ok()?,
        starttime: rest.get(19)?.parse().ok()?,
    })
}

/// Every process visible in `/proc` right now. Processes that end while being read are skipped.
pub fn snapshot() -> Vec<Proc> {
    let Ok(rd) = std::fs::read_dir("/proc") else { return Vec::new() };
    rd.filter_map(|e| {
        let e = e.ok()?;
        let name = e.file_name();
        let name = name.to_str()?;
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        parse_stat(&std::fs::read_to_string(e.path().join("stat")).ok()?)
    })
    .collect()
}

/// One process by pid, if it exists.
pub fn get(pid: i32) -> Option<Proc> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// The live (not zombie) processes of process group `pgid`, by pid.
pub fn in_group(pgid: i32) -> Vec<i32> {
    snapshot().into_iter().filter(|p| p.pgid == pgid && !p.is_zombie()).map(|p| p.pid).collect()
}

/// The live (not zombie) processes other than this one whose environment holds `key=value`, by
/// pid; none when `value` is empty. A rehearsal marks its sandbox's descendants this way.
pub fn with_env(key: &str, value: &str) -> Vec<i32> {
    if value.is_empty() {
        return Vec::new();
    }
    let needle = format!("{key}={value}");
    let me = std::process::id() as i32;
    snapshot()
        .into_iter()
        .filter(|p| p.pid != me && !p.is_zombie())
        .filter(|p| {
            let env = std::fs::read(format!("/proc/{}/environ", p.pid)).unwrap_or_default();
            env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes())
        })
        .map(|p| p.pid)
        .collect()
}

/// True when `pid` exists and is not a zombie.
pub fn is_alive(pid: i32) -> bool {
    get(pid).is_some_and(|p| !p.is_zombie())
}

/// Pids of every process below `root` (children, their children, …), not `root` itself.
pub fn descendants(all: &[Proc], root: i32) -> Vec<i32> {
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for p in all {
        children.entry(p.ppid).or_default().push(p.pid);
    }
    let mut out = Vec::new();
    let mut stack = vec![root];
    let mut seen = HashSet::new();
    while let Some(p) = stack.pop() {
        for &c in children.get(&p).map(Vec::as_slice).unwrap_or(&[]) {
            if c != root && seen.insert(c) {
                out.push(c);
                stack.push(c);
            }
        }
    }
    out
}

/// The agent's tree: live members of process group `pgid` (when `pgid` > 1: 0 names no group)
/// and live descendants of `root` (kit itself, the subreaper), excluding `root`.
pub fn tree(all: &[Proc], root: i32, pgid: i32) -> Vec<i32> {
    let below: HashSet<i32> = descendants(all, root).into_iter().collect();
    let mut out: Vec<i32> = all
        .iter()
        .filter(|p| {
            !p.is_zombie()
                && p.pid != root
                && ((pgid > 1 && p.pgid == pgid) || below.contains(&p.pid))
        })
        .map(|p| p.pid)
        .collect();
    out.sort_unstable();
    out
}

/// Resident memory of `pid` in bytes (`VmRSS` of `/proc/PID/status`); None when it is gone or
/// has no memory map (a kernel thread, a zombie).
pub fn rss_bytes(pid: i32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = text.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// This boot's id (`/proc/sys/kernel/random/boot_id`): a pgid journaled under another boot id
/// names nothing that still runs.
pub fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok().map(|s| s.trim().to_string())
}

/// Make the calling process a child subreaper, so orphaned descendants are re-parented to it.
///
/// Errors: the `prctl` error text (kit then still ends the process group, but a process that
/// left the group and was orphaned escapes; the caller journals that).
pub fn become_subreaper() -> Result<(), String> {
    nix::sys::prctl::set_child_subreaper(true).map_err(|e| e.to_string())
}

/// Reap zombies that are children of `me` (orphans re-parented to the subreaper), pid by pid so
/// that no other child's status is taken.
pub fn reap_children(all: &[Proc], me: i32) {
    for p in all.iter().filter(|p| p.ppid == me && p.is_zombie()) {
        let _ = waitpid(Pid::from_raw(p.pid), Some(WaitPidFlag::WNOHANG));
    }
}

/// Send `sig` to the process group `pgid` and to every process of [`tree`]. Errors (a process
/// that already ended) are ignored.
pub fn signal_tree(me: i32, pgid: i32, sig: Signal) -> Vec<i32> {
    let all = snapshot();
    let pids = tree(&all, me, pgid);
    if pgid > 1 {
        let _ = killpg(Pid::from_raw(pgid), sig);
    }
    for &p in &pids {
        let _ = kill(Pid::from_raw(p), sig);
    }
    pids
}

/// SIGKILL the process group `pgid` and every process descending from `me` until none is left
/// alive, reaping the orphans re-parented to `me`. Returns the pids that were killed.
///
/// Errors: the pids still alive after `patience` (a process in uninterruptible sleep).
pub fn end_tree(me: i32, pgid: i32, patience: Duration) -> Result<Vec<i32>, Vec<i32>> {
    let group = (pgid > 1).then_some(pgid);
    kill_until_gone(patience, group, || {
        let all = snapshot();
        reap_children(&all, me);
        tree(&all, me, pgid)
    })
}

/// End what is left of a process group journaled by an earlier, killed loop: SIGKILL every live
/// member of `pgid` that started no earlier than `starttime` (clock ticks since boot, so a pgid
/// number reused by an older unrelated group is left alone). Returns the pids killed.
///
/// Errors: the pids still alive after `patience`.
pub fn end_group(pgid: i32, starttime: u64, patience: Duration) -> Result<Vec<i32>, Vec<i32>> {
    // No killpg here: it would reach the older processes of a reused group number too.
    kill_until_gone(patience, None, || {
        snapshot()
            .into_iter()
            .filter(|p| p.pgid == pgid && !p.is_zombie() && p.starttime >= starttime)
            .map(|p| p.pid)
            .collect()
    })
}

/// SIGKILL whatever `alive` finds (and the process `group`, when given), every 20 ms, until it
/// finds nothing. Returns every pid killed, sorted, once.
///
/// Errors: the pids still alive after `patience`.
fn kill_until_gone(
    patience: Duration,
    group: Option<i32>,
    mut alive: impl FnMut() -> Vec<i32>,
) -> Result<Vec<i32>, Vec<i32>> {
    let deadline = Instant::now() + patience;
    let mut killed: Vec<i32> = Vec::new();
    loop {
        let left = alive();
        if left.is_empty() {
            killed.sort_unstable();
            killed.dedup();
            return Ok(killed);
        }
        if Instant::now() > deadline {
            return Err(left);
        }
        if let Some(g) = group {
            let _ = killpg(Pid::from_raw(g), Signal::SIGKILL);
        }
        for &p in &left {
            let _ = kill(Pid::from_raw(p), Signal::SIGKILL);
        }
        killed.extend(&left);
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_own_process_group_is_found_in_proc() {
        let me = nix::unistd::getpgrp().as_raw();
        assert!(in_group(me).contains(&(std::process::id() as i32)));
        assert!(with_env("KIT_NO_SUCH_MARK", "").is_empty());
    }

    #[test]
    fn spawn_collects_output_and_ends_the_group_at_the_limit() {
        use std::process::Command;
        let sh = |script: &str| {
            let mut c = Command::new("sh");
            c.arg("-c").arg(script);
            c
        };
        let how = Spawn { input: Some(b"in"), merge: false, own_group: true };
        let f = spawn(&mut sh("cat; echo err >&2; exit 3"), how).unwrap();
        let f = f.wait(Duration::from_secs(20), None).unwrap();
        assert_eq!((f.code, f.timed_out), (Some(3), false));
        assert_eq!((&f.stdout[..], &f.stderr[..]), (&b"in"[..], &b"err\n"[..]));

        let how = Spawn { merge: true, own_group: true, ..Default::default() };
        let r = spawn(&mut sh("echo a; echo b >&2; sleep 30 & sleep 30"), how).unwrap();
        let group = r.id() as i32;
        // The limit must pass after the shell printed (a loaded machine can take seconds to
        // start it) and long before its `sleep 30` ends.
        let f = r.wait(Duration::from_secs(4), Some(Duration::from_secs(5))).unwrap();
        assert_eq!((f.code, f.timed_out), (None, true));
        assert_eq!(f.stdout, b"a\nb\n");
        assert!(in_group(group).is_empty(), "the whole group is gone");

        // The shell ends, a background child keeps the pipe: after the grace it is ended too,
        // and what was printed is kept.
        let r = spawn(&mut sh("echo kept; sleep 30 &"), how).unwrap();
        let group = r.id() as i32;
        let f = r.wait(Duration::from_secs(20), Some(Duration::from_millis(200))).unwrap();
        assert_eq!((f.code, f.timed_out, &f.stdout[..]), (Some(0), false, &b"kept\n"[..]));
        assert!(in_group(group).is_empty());
    }

    #[test]
    fn find_on_path_finds_sh_and_not_a_missing_program() {
        assert!(find_on_path("sh").is_some_and(|p| p.is_absolute() && p.ends_with("sh")));
        assert_eq!(find_on_path("kit-no-such-program-here"), None);
    }

    #[test]
    fn stat_lines_parse_even_with_odd_command_names() {
        let cases = [
            (
                "42 (sleep) S 1 42 42 0 -1 4194304 1 0 0 0 0 0 0 0 20 0 1 0 9000 1 2",
                42,
                1,
                42,
                'S',
                9000,
            ),
            ("7 (a (b) c) Z 3 5 5 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 77 0 0", 7, 3, 5, 'Z', 77),
            ("9 (x) y) R 1 9 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0", 9, 1, 9, 'R', 5),
        ];
        for (text, pid, ppid, pgid, state, start) in cases {
            let p = parse_stat(text).unwrap();
            assert_eq!(
                (p.pid, p.ppid, p.pgid, p.state, p.starttime),
                (pid, ppid, pgid, state, start)
            );
        }
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(parse_stat("1 (x) S 1"), None);
    }

    #[test]
    fn descendants_follow_parent_links() {
        let p = |pid, ppid, pgid| Proc { pid, ppid, pgid, state: 'S', starttime: 0 };
        let all = [p(10, 1, 10), p(11, 10, 11), p(12, 11, 11), p(13, 12, 13), p(20, 1, 20)];
        let mut d = descendants(&all, 10);
        d.sort_unstable();
        assert_eq!(d, vec![11, 12, 13]);
        // Group 20 is not below 10 but is named by its pgid.
        assert_eq!(tree(&all, 10, 20), vec![11, 12, 13, 20]);
    }

    #[test]
    fn this_process_is_visible() {
        let me = std::process::id() as i32;
        let p = get(me).unwrap();
        assert_eq!(p.pid, me);
        assert!(rss_bytes(me).unwrap() > 0);
        assert!(is_alive(me));
    }
}
