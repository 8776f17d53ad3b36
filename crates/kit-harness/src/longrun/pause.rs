//! `kit pause` and `kit resume`: stopping a loop cleanly, and letting it go on (DESIGN §6).
//!
//! While `longrun/PAUSE` exists the loop starts no new iteration: it stops after the current
//! one with outcome `paused` (exit 5), and a `kit loop` (or `kit loop --ensure-alive`) exits 5
//! before starting one. The run stays unfinished, so the next `kit loop` after `kit resume`
//! continues it (see [`super::durable`]).
//!
//! The file may be empty (`touch longrun/PAUSE` works, as it always did), or hold the record
//! `kit pause` writes, atomically, as one line of JSON:
//!
//! ```json
//! {"since":"2026-10-01T09:00:00Z","user":"ada","host":"build-7","pid":4242,"reason":"lunch","now":false}
//! ```
//!
//! `since` is the kit clock's RFC 3339 time, `user` the login name of whoever paused, `host`
//! and `pid` the `kit pause` process, `reason` the optional `--reason` text, and `now` whether
//! `--now` asked the loop to stop its agent at once: the loop, which checks the file while the
//! agent runs, then ends the agent's process group as at a timeout (SIGTERM, the grace period,
//! SIGKILL), skips that iteration's criteria and stops. Criteria that are running when the
//! pause arrives finish first (each is bounded by its own timeout).

use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{IoContext, Result, EXIT_OK};
use crate::longrun::Project;

/// The record in `longrun/PAUSE` (see the module doc).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PauseRecord {
    /// When it was paused, RFC 3339 UTC.
    #[serde(default)]
    pub since: String,
    /// Who paused (login name).
    #[serde(default)]
    pub user: String,
    /// The host `kit pause` ran on.
    #[serde(default)]
    pub host: String,
    /// The `kit pause` process.
    #[serde(default)]
    pub pid: u32,
    /// Why, as given with `--reason`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `--now`: stop the running agent at once.
    #[serde(default)]
    pub now: bool,
}

/// What `longrun/PAUSE` holds, when it exists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Paused {
    /// Written by `kit pause`.
    Record(PauseRecord),
    /// Made by hand (`touch longrun/PAUSE`) or holding text that is not a record.
    ByHand,
}

impl Paused {
    /// Whether the running agent must be stopped at once.
    pub fn now(&self) -> bool {
        matches!(self, Paused::Record(r) if r.now)
    }

    /// `since 2026-10-01T09:00:00Z by ada (kit pause, pid 4242 on build-7): lunch` for people.
    pub fn describe(&self) -> String {
        match self {
            Paused::Record(r) => format!(
                "since {} by {} (kit pause{}, pid {} on {}){}",
                r.since,
                r.user,
                if r.now { " --now" } else { "" },
                r.pid,
                r.host,
                r.reason.as_deref().map(|t| format!(": {t}")).unwrap_or_default()
            ),
            Paused::ByHand => "by hand (longrun/PAUSE holds no kit pause record)".into(),
        }
    }
}

/// The pause state of `project`: None when `longrun/PAUSE` does not exist.
pub fn read(project: &Project) -> Option<Paused> {
    read_at(&project.pause())
}

/// [`read`] for the PAUSE file at `path`.
pub fn read_at(path: &Path) -> Option<Paused> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        // A folder or an unreadable file named PAUSE still pauses: it exists.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(_) => return Some(Paused::ByHand),
    };
    Some(match serde_json::from_slice::<PauseRecord>(&bytes) {
        Ok(r) => Paused::Record(r),
        Err(_) => Paused::ByHand,
    })
}

/// `kit pause` options.
#[derive(Clone, Debug, Default)]
pub struct PauseOptions {
    /// Stop the running agent at once instead of after its iteration.
    pub now: bool,
    /// Why, for `kit status`.
    pub reason: Option<String>,
}

/// `kit pause`: write `longrun/PAUSE` with a record and say what the loop will do. Exit 0.
///
/// Errors: [`crate::Error::Usage`] outside an initialised repository; [`crate::Error::Io`]
/// when the file cannot be written.
pub fn pause(cwd: &Path, opts: &PauseOptions, out: &mut dyn Write) -> Result<u8> {
    let project = Project::discover_initialised(cwd)?;
    let record = PauseRecord {
        since: crate::clock::now_rfc3339(),
        user: user_name(),
        host: crate::longrun::lock::host_name(),
        pid: std::process::id(),
        reason: opts.reason.clone().filter(|r| !r.trim().is_empty()),
        now: opts.now,
    };
    let mut line =
        serde_json::to_string(&record).map_err(|e| crate::Error::internal(e.to_string()))?;
    line.push('\n');
    let before = read(&project);
    crate::atomic::write_atomic(&project.pause(), line.as_bytes())?;
    let o = Path::new("stdout");
    let again = if before.is_some() { " (it was paused already; record replaced)" } else { "" };
    match crate::longrun::running_loop(&project) {
        Some(h) if opts.now => writeln!(
            out,
            "paused{again}: the loop (pid {}) stops its agent now (SIGTERM, then SIGKILL after the \
             grace period) and exits 5 without running that iteration's criteria; kit resume, \
             then kit loop to go on",
            h.pid
        ),
        Some(h) => writeln!(
            out,
            "paused{again}: the loop (pid {}) stops after its current iteration and exits 5; \
             kit pause --now stops the agent at once; kit resume lets it go on",
            h.pid
        ),
        None => writeln!(
            out,
            "paused{again}: no loop runs now; kit loop and kit loop --ensure-alive exit 5 until \
             kit resume"
        ),
    }
    .at(o)?;
    Ok(EXIT_OK)
}

/// `kit resume`: remove `longrun/PAUSE` and say what happens next. Exit 0, paused or not.
///
/// Errors: [`crate::Error::Usage`] outside an initialised repository; [`crate::Error::Io`]
/// when the file exists and cannot be removed.
pub fn resume(cwd: &Path, out: &mut dyn Write) -> Result<u8> {
    let project = Project::discover_initialised(cwd)?;
    let o = Path::new("stdout");
    let Some(was) = read(&project) else {
        writeln!(out, "resume: not paused (no longrun/PAUSE); nothing to do").at(o)?;
        return Ok(EXIT_OK);
    };
    let path = project.pause();
    match std::fs::remove_file(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        // A folder someone made by hand.
        Err(_) if path.is_dir() => std::fs::remove_dir_all(&path).at(&path)?,
        Err(e) => return Err(crate::Error::io(&path, e)),
    }
    let next = match crate::longrun::running_loop(&project) {
        Some(h) => format!("the loop (pid {}) goes on if it has not stopped yet", h.pid),
        None => "next: kit loop goes on with the run (or the schedule's kit loop \
                 --ensure-alive starts it)"
            .to_string(),
    };
    writeln!(out, "resumed: removed longrun/PAUSE (paused {}); {next}", was.describe()).at(o)?;
    Ok(EXIT_OK)
}

/// The login name of this process's user: the password database, else `$USER`, else the uid.
pub fn user_name() -> String {
    let uid = nix::unistd::getuid();
    nix::unistd::User::from_uid(uid)
        .ok()
        .flatten()
        .map(|u| u.name)
        .or_else(|| std::env::var("USER").ok().filter(|u| !u.is_empty()))
        .unwrap_or_else(|| uid.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pause_file_reads_as_a_record_or_by_hand() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("PAUSE");
        assert_eq!(read_at(&p), None);
        std::fs::write(&p, "").unwrap();
        assert_eq!(read_at(&p), Some(Paused::ByHand));
        std::fs::write(
            &p,
            r#"{"since":"2026-10-01T09:00:00Z","user":"ada","host":"h","pid":7,"reason":"lunch","now":true}"#,
        )
        .unwrap();
        let got = read_at(&p).unwrap();
        assert!(got.now());
        assert_eq!(
            got.describe(),
            "since 2026-10-01T09:00:00Z by ada (kit pause --now, pid 7 on h): lunch"
        );
        std::fs::write(&p, "{\"since\":").unwrap();
        assert_eq!(read_at(&p), Some(Paused::ByHand), "a torn record still pauses");
    }
}
