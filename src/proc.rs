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
//! Also the one place kit looks a program up on `PATH` ([`find_on_path`], the `which` crate).

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
