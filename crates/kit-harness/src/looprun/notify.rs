//! `[notify] command` (config.toml): tell a person when the loop needs them. The loop runs the
//! command when a run ends `done`, stops at a `cap`, starts waiting out a usage or rate `limit`,
//! stops `pause`d (`kit pause`), or stops for a person (`needs_you`: the agent asked, or a
//! `- human:` criterion waits for `kit approve N`), after its own last line is printed.
//!
//! How it runs: `sh -c COMMAND` in the repository root, stdin `/dev/null`, stdout and stderr
//! collected (the loop prints nothing of it: its last line stays the outcome), in its own process
//! group, under `[notify] timeout` (default 30 s; then the whole group gets SIGKILL). Its
//! environment is kit's plus:
//!
//! | variable | value |
//! |---|---|
//! | `KIT_EVENT` | `done`, `cap`, `limit`, `pause` or `needs_you` |
//! | `KIT_REPO` | the repository root (absolute) |
//! | `KIT_OUTCOME` | the loop's last line, e.g. `cap: iterations cap reached (2 of 2 …)` |
//! | `KIT_RUN_ID` | the run's number |
//! | `KIT_ITERATION` | the last iteration number |
//! | `KIT_EXIT_CODE` | the exit status `kit loop` ends with, where known (not for `limit`) |
//!
//! The caller passes the last four in `outcome`; a key without the `KIT_` prefix gets it, upper
//! cased (`("iteration", "3")` sets `KIT_ITERATION=3`).
//!
//! Whatever it does, the loop goes on: a command that is not found, exits non-zero, hangs past
//! its timeout, or a config.toml that cannot be read, is journaled and nothing else.
//!
//! Journal event `notify`, fields: `on` (`done`, `cap`, `limit`, `pause` or `needs_you`; the field events.md
//! calls `event`, renamed because every journal line's `event` is its own name), `command`,
//! `exit` (its exit code; null when killed or not started), `error` (null, or why it failed:
//! `exited 3`, `timed out after 30s and was killed`, …), `timed_out`, `duration_ms`,
//! `output_tail` (the end of its output, at most 400 bytes). Nothing is journaled when no
//! command is set.

use std::process::Command;
use std::time::Instant;

use crate::longrun::config::Config;
use crate::longrun::event::{Event, Notify};
use crate::longrun::journal::Journal;
use crate::longrun::Project;

/// How much of the command's output the `notify` event keeps (bytes, the end of it).
const OUTPUT_TAIL: usize = 400;

/// Run the `[notify] command` of `project` for `event` (`done`, `cap`, `limit` or `pause`) with
/// `outcome` in its environment, wait for it (at most `[notify] timeout`), and journal `notify`
/// in `journal`. Returns the journaled event, or None when no command is set.
///
/// Never fails and never panics: every failure (config unreadable, `sh` missing, the command's
/// exit, a timeout, the journal not writable) ends up in the returned fields and, when it can be
/// written, the journal.
pub fn fire(
    project: &Project,
    journal: &Journal,
    event: &str,
    outcome: &[(&str, String)],
) -> Option<Notify> {
    let (command, timeout) = match Config::load(&project.config()) {
        Ok(c) => (c.notify.command.clone(), c.notify_timeout()),
        Err(e) => {
            let fields = Notify {
                on: event.into(),
                error: Some(format!("[notify] not run: {e}")),
                ..Notify::default()
            };
            let _ = journal.append(&Event::Notify(fields.clone()));
            return Some(fields);
        }
    };
    if command.trim().is_empty() {
        return None;
    }
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(&command).current_dir(&project.root);
    cmd.env("KIT_EVENT", event).env("KIT_REPO", &project.root);
    for (k, v) in outcome {
        cmd.env(env_name(k), v);
    }
    // The loop blocks SIGINT/SIGTERM/SIGHUP for itself; the command must not inherit that.
    crate::signals::unblock_in_child(&mut cmd);
    let began = Instant::now();
    let how = crate::proc::Spawn { input: None, merge: true, own_group: true };
    let result = crate::proc::spawn(&mut cmd, how)
        .and_then(|r| r.wait(timeout, Some(std::time::Duration::from_secs(1))));
    let duration_ms = began.elapsed().as_millis() as u64;
    let fields = match result {
        Ok(f) => {
            let error = if f.timed_out {
                Some(format!(
                    "timed out after {} and was killed",
                    crate::units::format_duration(timeout)
                ))
            } else {
                match f.code {
                    Some(0) => None,
                    Some(127) => Some("exited 127 (command not found)".to_string()),
                    Some(c) => Some(format!("exited {c}")),
                    None => Some("killed by a signal".to_string()),
                }
            };
            Notify {
                on: event.into(),
                command: Some(command),
                exit: f.code,
                timed_out: f.timed_out,
                error,
                duration_ms,
                output_tail: tail(&f.stdout),
            }
        }
        Err(e) => Notify {
            on: event.into(),
            command: Some(command),
            error: Some(format!("could not start sh: {e}")),
            duration_ms,
            ..Notify::default()
        },
    };
    let _ = journal.append(&Event::Notify(fields.clone()));
    Some(fields)
}

/// The `[notify]` event for a loop outcome name: `done` → `done`, `cap` → `cap`, `paused` →
/// `pause`, `needs_you` → `needs_you`; None for the others (interrupted, refused, error,
/// agent_failed).
pub fn event_for(outcome: &str) -> Option<&'static str> {
    match outcome {
        "done" => Some("done"),
        "cap" => Some("cap"),
        "paused" => Some("pause"),
        "needs_you" => Some("needs_you"),
        _ => None,
    }
}

/// `iteration` → `KIT_ITERATION`; `KIT_RUN_ID` stays.
fn env_name(key: &str) -> String {
    if key.starts_with("KIT_") {
        key.to_string()
    } else {
        format!("KIT_{}", key.to_ascii_uppercase())
    }
}

/// The last [`OUTPUT_TAIL`] bytes of `out` as text, cut at a character boundary.
fn tail(out: &[u8]) -> String {
    let text = String::from_utf8_lossy(out);
    let mut at = text.len().saturating_sub(OUTPUT_TAIL);
    while !text.is_char_boundary(at) {
        at += 1;
    }
    text[at..].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn project_with(config: &str) -> (tempfile::TempDir, Project, Journal) {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("longrun")).unwrap();
        std::fs::write(d.path().join("longrun/config.toml"), config).unwrap();
        let p = Project::at(d.path());
        let j = Journal::new(p.journal());
        (d, p, j)
    }

    fn journaled(p: &Project) -> Vec<crate::longrun::event::Notify> {
        crate::longrun::journal::read(&p.journal())
            .unwrap()
            .entries
            .into_iter()
            .filter_map(|e| match e.event {
                Event::Notify(n) => Some(n),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn the_command_gets_the_outcome_in_its_environment_and_runs_in_the_root() {
        let (d, p, j) = project_with(
            "[notify]\ncommand = \"env | grep ^KIT_ | sort > notified.txt; pwd >> notified.txt\"\n",
        );
        let f = fire(
            &p,
            &j,
            "cap",
            &[
                ("KIT_OUTCOME", "cap: iterations cap reached".into()),
                ("run_id", "2".into()),
                ("KIT_ITERATION", "7".into()),
                ("KIT_EXIT_CODE", "3".into()),
            ],
        )
        .unwrap();
        assert_eq!(f.exit, Some(0), "{f:?}");
        assert_eq!(f.error, None);
        let text = std::fs::read_to_string(d.path().join("notified.txt")).unwrap();
        for want in [
            "KIT_EVENT=cap",
            "KIT_OUTCOME=cap: iterations cap reached",
            "KIT_RUN_ID=2",
            "KIT_ITERATION=7",
            "KIT_EXIT_CODE=3",
            &format!("KIT_REPO={}", d.path().display()),
        ] {
            assert!(text.lines().any(|l| l == want), "{want} not in\n{text}");
        }
        let root = std::fs::canonicalize(d.path()).unwrap();
        assert!(text.lines().any(|l| Path::new(l) == root), "{text}");
        let ev = journaled(&p);
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0].on, "cap");
        assert!(ev[0].command.as_deref().unwrap().contains("notified.txt"));
    }

    #[test]
    fn a_failing_or_hanging_command_is_journaled_and_its_group_killed() {
        let (_d, p, j) = project_with("[notify]\ncommand = \"echo oops; exit 3\"\n");
        let f = fire(&p, &j, "done", &[]).unwrap();
        assert_eq!(f.exit, Some(3));
        assert_eq!(f.error.as_deref(), Some("exited 3"));
        assert_eq!(f.output_tail, "oops\n");

        // A command that leaves a child holding the pipe: both are ended at the timeout.
        let (d, p, j) = project_with(
            "[notify]\ncommand = \"sleep 600 & echo $! > child.pid; sleep 600\"\ntimeout = \"1s\"\n",
        );
        let began = Instant::now();
        let f = fire(&p, &j, "pause", &[]).unwrap();
        assert!(began.elapsed() < std::time::Duration::from_secs(20));
        assert!(f.timed_out, "{f:?}");
        assert_eq!(f.exit, None);
        assert!(f.error.as_deref().unwrap().starts_with("timed out after 1"), "{f:?}");
        let pid: i32 =
            std::fs::read_to_string(d.path().join("child.pid")).unwrap().trim().parse().unwrap();
        let deadline = Instant::now() + std::time::Duration::from_secs(20);
        while crate::proc::is_alive(pid) && Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(!crate::proc::is_alive(pid), "the command's child {pid} outlived the timeout");
        assert_eq!(journaled(&p).len(), 1);
    }

    #[test]
    fn no_command_runs_nothing_and_a_bad_config_is_journaled() {
        let (_d, p, j) = project_with("");
        assert!(fire(&p, &j, "done", &[]).is_none());
        assert!(journaled(&p).is_empty());
        let (_d, p, j) = project_with("[notify]\ncommand = 3\n");
        let f = fire(&p, &j, "done", &[]).unwrap();
        assert!(f.error.as_deref().unwrap().contains("config.toml"), "{f:?}");
        assert_eq!(journaled(&p).len(), 1);
    }

    #[test]
    fn outcomes_map_to_events() {
        assert_eq!(event_for("done"), Some("done"));
        assert_eq!(event_for("cap"), Some("cap"));
        assert_eq!(event_for("paused"), Some("pause"));
        assert_eq!(event_for("needs_you"), Some("needs_you"));
        assert_eq!(event_for("interrupted"), None);
        assert_eq!(env_name("iteration"), "KIT_ITERATION");
        assert!(tail("é".repeat(300).as_bytes()).len() <= OUTPUT_TAIL);
    }
}
