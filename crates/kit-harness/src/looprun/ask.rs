//! Decisions for a person (issue 24, "a run you can steer while it runs"): what only a human may
//! decide, recorded in the journal and answered with `kit approve N` or `kit reject N`.
//!
//! A decision is an `asked` event, numbered 1, 2, … across the journal. It comes from:
//! - **`kit ask TEXT`**, typically run by the agent from inside an iteration ("drop Python 3.8?").
//!   While a loop runs the journal is the loop's (lines others append during an iteration are
//!   cut off), so `kit ask` then writes the question to the spool [`SPOOL`] and the loop, when
//!   the agent has ended, journals it (`from` = `agent` when asked from inside the iteration).
//!   After that iteration's criteria the loop stops "needs you" (exit 6): a question that waits
//!   for an answer stops the run rather than let the agent guess. With no loop running, `kit
//!   ask` journals it at once, and the next `kit loop` stops after its baseline.
//! - **a `- human:` criterion of goal.md**: when every other criterion passes on a verified tree
//!   (and the flake guard, the revert probe and the reviews agree), the loop asks for each human
//!   criterion not yet approved *for the current tree*, journals `needs_you` and stops (exit 6).
//!
//! `kit approve N [--note TEXT]` and `kit reject N --note TEXT` journal an `approval` with who,
//! when, HEAD and the working tree's id. A human criterion's approval is bound to that tree: it
//! counts while the tree is the one approved, and a later change (another iteration) asks again.
//! A rejection refuses done on that tree and its note goes to the next prompt. The answer to an
//! agent's `kit ask` also goes to the agent through the inbox (`longrun/inbox.md`, delivered once).
//!
//! # The agent cannot approve itself
//!
//! An approval does not count (`counts` false, `why` says why, `kit status` shows it) when:
//! - it is journaled while an agent iteration runs: between an `agent_start` and its `agent_end`
//!   (or `recovered`) — an agent still running, or one whose loop was killed and not yet resumed;
//! - `kit approve` runs with `KIT_RUN_KEY` in its environment (the loop gives it to every agent);
//! - a running `kit loop` is one of its ancestors (the agent's tree, however detached: kit is its
//!   child subreaper).
//!
//! The first is also checked where the journal is read ([`decisions`]), so a line placed in that
//! window by other means does not count either; and `kit approve` run during an iteration
//! writes to the spool, which the loop journals as not counting. What this cannot see: a job the
//! agent hands to a daemon outside its tree (`at`, `systemd-run --user`) that runs `kit approve`
//! after the loop stopped. Approve from your own shell, after reading what you approve.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, IoContext, Result, EXIT_BAD_INPUT, EXIT_OK};
use crate::goal::Human;
pub use crate::longrun::decisions::{after_needs_you, decisions, next_number, Answer, Decision};
use crate::longrun::event::{Approval, Asked, Event};
use crate::longrun::history::History;
use crate::longrun::journal::Journal;
use crate::longrun::Project;

/// Where `kit ask` and `kit approve` write while an agent iteration runs, relative to the
/// repository root: one JSON object per line ([`Spooled`]). The loop reads and removes it when
/// the agent has ended ([`take_spool`]). A runtime file under `longrun/.runs/`, not state.
pub const SPOOL: &str = "longrun/.runs/asks.jsonl";

/// One line of [`SPOOL`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Spooled {
    /// `kit ask TEXT` while a loop runs.
    Ask {
        /// The question.
        text: String,
        /// Who asked: None from inside an agent iteration (journaled as `agent`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        from: Option<String>,
    },
    /// `kit approve N` / `kit reject N` during an iteration: journaled as not counting.
    Approval {
        /// The decision's number.
        number: u64,
        /// `approved` or `rejected`.
        verdict: String,
        /// The note.
        note: String,
        /// Who it claimed to be.
        by: String,
    },
}

/// Where a human criterion stands for the working tree `tree`.
#[derive(Clone, Debug, PartialEq)]
pub enum HumanState {
    /// Approved on this tree.
    Approved(Answer),
    /// Rejected on this tree: done is refused; the note says why.
    Rejected(Answer),
    /// Asked for this tree, not answered yet: decision number.
    Pending(u64),
    /// Not asked for this tree (never, or only for another tree).
    NotAsked,
}

/// Where `human` stands in `decisions` for the working tree `tree`: the latest decision asked
/// for it (same goal.md line and text) with an answer given on `tree`, or asked on `tree` and
/// unanswered.
pub fn human_state(decisions: &[Decision], human: &Human, tree: Option<&str>) -> HumanState {
    let mine = decisions
        .iter()
        .rev()
        .filter(|d| d.line == Some(human.line as u64) && d.text == human.text);
    for d in mine {
        match &d.answer {
            Some(a) if a.tree.as_deref() == tree => {
                return if a.approved() {
                    HumanState::Approved(a.clone())
                } else {
                    HumanState::Rejected(a.clone())
                };
            }
            None if d.tree.as_deref() == tree => return HumanState::Pending(d.number),
            _ => {}
        }
    }
    HumanState::NotAsked
}

/// The working tree's id (as the loop reads it: outside `longrun/`, by content) and HEAD.
pub fn tree_and_commit(root: &Path) -> (Option<String>, String) {
    let head = crate::git::lines_in(root, &["rev-parse", "--verify", "-q", "HEAD"])
        .and_then(|l| l.into_iter().next());
    let excludes = crate::git::info_exclude(root);
    let tree = crate::git::work_tree_id(root, head.as_deref(), &excludes, crate::longrun::DIR).ok();
    (tree, head.unwrap_or_else(|| "none".into()))
}

/// The iteration whose agent runs now, when a loop runs and the journal shows an agent started
/// and not ended.
fn agent_in_flight(project: &Project, h: &History) -> Option<u64> {
    let u = h.unfinished.as_ref()?;
    crate::longrun::running_loop(project).map(|_| u.iteration)
}

/// Why an approval given by this process cannot count, if it cannot: see the module doc.
fn inside_an_agent(project: &Project, h: &History) -> Option<String> {
    if let Some(i) = agent_in_flight(project, h) {
        return Some(format!(
            "given while iteration {i}'s agent ran: an agent cannot approve itself"
        ));
    }
    if std::env::var_os("KIT_RUN_KEY").is_some() {
        return Some(
            "run with KIT_RUN_KEY in its environment, as kit loop starts its agents: an agent \
             cannot approve itself"
                .into(),
        );
    }
    let holder = crate::longrun::running_loop(project)?;
    let mut pid = std::process::id() as i32;
    for _ in 0..256 {
        let Some(p) = crate::proc::get(pid) else { break };
        if p.ppid <= 1 {
            break;
        }
        if p.ppid as u32 == holder.pid {
            return Some(format!(
                "run from inside the running kit loop's process tree (pid {}): an agent cannot \
                 approve itself",
                holder.pid
            ));
        }
        pid = p.ppid;
    }
    None
}

/// Append one line to [`SPOOL`] (the folder created when missing), fsynced.
fn spool(project: &Project, item: &Spooled) -> Result<PathBuf> {
    let path = project.root.join(SPOOL);
    if let Some(dir) = path.parent() {
        crate::atomic::create_dir_all(dir)?;
    }
    let line = serde_json::to_string(item).map_err(|e| Error::internal(e.to_string()))?;
    crate::atomic::append_line(&path, &line)?;
    Ok(path)
}

/// Read and remove [`SPOOL`], journaling each line in `journal`: an ask as `asked` (from
/// `agent`, numbered on), an approval as an `approval` that does not count. `iteration` is the
/// iteration whose agent just ended. Returns a line to print for each, and one for each line
/// that did not read.
///
/// Errors: the journal cannot be written; the spool exists but cannot be read or removed.
pub fn take_spool(project: &Project, journal: &Journal, iteration: u64) -> Result<Vec<String>> {
    let path = project.root.join(SPOOL);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).at(&path),
    };
    std::fs::remove_file(&path).at(&path)?;
    let entries = crate::longrun::journal::read(&project.journal())?.entries;
    let mut number = next_number(&entries);
    let (tree, commit) = tree_and_commit(&project.root);
    let mut said = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        match serde_json::from_str::<Spooled>(line) {
            Ok(Spooled::Ask { text, from }) => {
                journal.append(&Event::Asked(Asked {
                    number,
                    text: text.clone(),
                    line: None,
                    from: from.unwrap_or_else(|| "agent".into()),
                    iteration,
                    tree: tree.clone(),
                    commit: commit.clone(),
                }))?;
                said.push(format!("iteration {iteration}: the agent asks #{number}: {text}"));
                number += 1;
            }
            Ok(Spooled::Approval { number: n, verdict, note, by }) => {
                let why = format!(
                    "given while iteration {iteration}'s agent ran: an agent cannot approve itself"
                );
                journal.append(&Event::Approval(Approval {
                    number: n,
                    verdict: verdict.clone(),
                    note,
                    by,
                    tree: tree.clone(),
                    commit: commit.clone(),
                    counts: false,
                    why: Some(why.clone()),
                    pid: 0,
                    pgid: 0,
                }))?;
                said.push(format!("iteration {iteration}: not counted: {verdict} #{n} {why}"));
            }
            Err(e) => said.push(format!("iteration {iteration}: {SPOOL}:{}: skipped: {e}", i + 1)),
        }
    }
    Ok(said)
}

/// The options of `kit ask`.
#[derive(Clone, Debug, Default)]
pub struct AskOptions {
    /// The question (its words joined by spaces).
    pub text: String,
    /// Who asks; None: the login name.
    pub from: Option<String>,
}

/// `kit ask TEXT`: record a decision for a person. During an agent iteration it goes to the
/// spool and the loop journals it when the agent has ended, then stops "needs you"; otherwise it
/// is journaled at once as `asked` with the next number. Exit 0.
///
/// Errors: [`Error::Usage`] outside an initialised repository or for an empty text;
/// [`Error::Io`] when the journal or the spool cannot be written.
pub fn ask(cwd: &Path, opts: &AskOptions, out: &mut dyn Write) -> Result<u8> {
    let project = Project::discover_initialised(cwd)?;
    let text = opts.text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.is_empty() {
        return Err(Error::usage("kit ask needs a question; it was empty")
            .with_hint("kit ask \"may I drop Python 3.8 support?\""));
    }
    let stdout = Path::new("stdout");
    let h = History::read(&project.journal())?;
    // While a loop runs, the journal is its own: the loop journals the question itself.
    if let Some(holder) = crate::longrun::running_loop(&project) {
        let in_flight = agent_in_flight(&project, &h);
        let from = match in_flight {
            Some(_) => None,
            None => Some(opts.from.clone().unwrap_or_else(crate::looprun::pause::user_name)),
        };
        spool(&project, &Spooled::Ask { text: text.clone(), from })?;
        let when = match in_flight {
            Some(i) => format!("when iteration {i}'s agent ends"),
            None => format!("(pid {}) after its next agent iteration", holder.pid),
        };
        writeln!(
            out,
            "asked: kit loop journals it {when}, then stops \"needs you\" until a person answers \
             (kit approve N or kit reject N --note WHY)"
        )
        .at(stdout)?;
        return Ok(EXIT_OK);
    }
    let number = next_number(&h.entries);
    let (tree, commit) = tree_and_commit(&project.root);
    Journal::new(project.journal()).append(&Event::Asked(Asked {
        number,
        text: text.clone(),
        line: None,
        from: opts.from.clone().unwrap_or_else(crate::looprun::pause::user_name),
        iteration: h.last_iteration,
        tree,
        commit,
    }))?;
    writeln!(
        out,
        "asked #{number}: {text}; kit approve {number} (or kit reject {number} --note WHY) answers it"
    )
    .at(stdout)?;
    Ok(EXIT_OK)
}

/// The options of `kit approve` and `kit reject`.
#[derive(Clone, Debug, Default)]
pub struct ApproveOptions {
    /// The decision's number.
    pub number: u64,
    /// `kit reject`: the answer is no.
    pub reject: bool,
    /// Why, or what to keep in mind (required for a rejection).
    pub note: Option<String>,
    /// Who answers; None: the login name.
    pub by: Option<String>,
}

/// `kit approve N` / `kit reject N --note WHY`: answer decision N, journaled as `approval` with
/// who, HEAD and the working tree's id. Exit 0 when it counts; 2 when it was recorded but does
/// not count (given from inside an agent iteration: see the module doc), saying why.
///
/// Errors: [`Error::Usage`] for a number the journal does not hold, a rejection without a note,
/// or a person answering while a loop runs (the loop's journal is its own until it stops);
/// [`Error::Io`] when the journal, the spool or the inbox cannot be written.
pub fn approve(cwd: &Path, opts: &ApproveOptions, out: &mut dyn Write) -> Result<u8> {
    let project = Project::discover_initialised(cwd)?;
    let h = History::read(&project.journal())?;
    let all = decisions(&h.entries);
    let word = if opts.reject { "reject" } else { "approve" };
    let Some(d) = all.iter().find(|d| d.number == opts.number) else {
        // A race's lanes keep their decisions in their own journals: name them.
        if let Some((start, _)) = crate::longrun::race::open_race(&h) {
            let waiting: Vec<String> = start
                .lanes
                .iter()
                .flat_map(|l| {
                    crate::longrun::race::lane_decisions(Path::new(&l.path))
                        .into_iter()
                        .map(move |d| format!("lane {}: {d}", l.lane))
                })
                .collect();
            if !waiting.is_empty() {
                return Err(Error::usage(format!(
                    "no decision #{} in longrun/journal.jsonl: race {} waits for a person in its \
                     lanes, each with its own journal and numbers:\n  {}",
                    opts.number,
                    start.run,
                    waiting.join("\n  ")
                ))
                .with_hint("answer each lane with the command its line names, then kit race"));
            }
        }
        let open: Vec<String> =
            all.iter().filter(|d| d.answer.is_none()).map(|d| format!("#{}", d.number)).collect();
        return Err(Error::usage(format!(
            "no decision #{} in longrun/journal.jsonl ({})",
            opts.number,
            if open.is_empty() {
                "none waits".to_string()
            } else {
                format!("waiting: {}", open.join(", "))
            }
        ))
        .with_hint("kit status lists what needs you"));
    };
    // A human criterion asked again for a later tree waits under its newer number.
    if let Some(later) = all
        .iter()
        .rev()
        .find(|l| l.number > d.number && d.line.is_some() && l.line == d.line && l.text == d.text)
    {
        return Err(Error::usage(format!(
            "#{} asked goal.md:{} (human: {}) for an earlier tree; #{} asks it for the tree as it \
             is now, and only an answer to #{} counts",
            d.number,
            d.line.unwrap_or_default(),
            d.text,
            later.number,
            later.number
        ))
        .with_hint(if opts.reject {
            format!("kit reject {} --note WHY", later.number)
        } else {
            format!("kit approve {}", later.number)
        }));
    }
    let note = opts.note.clone().unwrap_or_default().trim().to_string();
    if opts.reject && note.is_empty() {
        return Err(Error::usage(format!("kit reject {} needs --note WHY", opts.number))
            .with_hint(format!(
                "kit reject {} --note \"the messages name no line\"",
                opts.number
            )));
    }
    let verdict = if opts.reject { "rejected" } else { "approved" };
    let by = opts.by.clone().unwrap_or_else(crate::looprun::pause::user_name);
    let stdout = Path::new("stdout");
    if agent_in_flight(&project, &h).is_some() {
        spool(
            &project,
            &Spooled::Approval {
                number: d.number,
                verdict: verdict.into(),
                note: note.clone(),
                by: by.clone(),
            },
        )?;
    }
    let why = inside_an_agent(&project, &h);
    if why.is_none() {
        if let Some(holder) = crate::longrun::running_loop(&project) {
            return Err(Error::usage(format!(
                "a loop runs now (pid {}) and its journal is its own while it runs; an answer \
                 is given once it has stopped \"needs you\"",
                holder.pid
            ))
            .with_hint(format!(
                "kit status (then kit {word} {} when the loop has stopped)",
                d.number
            )));
        }
    }
    if let Some(why) = &why {
        if agent_in_flight(&project, &h).is_none() {
            journal_approval(&project, d.number, verdict, &note, &by, false, Some(why.clone()))?;
        }
        writeln!(out, "not counted: kit {word} {} was {why}; a person approves from their own shell once the loop has stopped", d.number)
            .at(stdout)?;
        return Ok(EXIT_BAD_INPUT);
    }
    if !opts.reject {
        let planted = crate::longrun::decisions::planted_git_settings(&project, &h);
        if !planted.is_empty() {
            return Err(Error::usage(format!(
                "kit approve refuses while git settings that appeared during a run (the \
                 agent's, or yours while it ran) are still in place: {}. A hook or a config \
                 entry runs when you use git, and could run kit approve in your name",
                planted.join(", ")
            ))
            .with_hint(format!(
                "read and remove them (hooks live in .git/hooks/ or core.hooksPath, entries in \
                 .git/config and the files it includes: git config --local --unset KEY), then \
                 kit approve {}; settings of your own: remove them, approve, add them again",
                d.number
            )));
        }
    }
    let tree = journal_approval(&project, d.number, verdict, &note, &by, true, None)?;
    let short = tree.as_deref().map_or("unknown".to_string(), |t| t[..t.len().min(12)].to_string());
    let what = match d.line {
        Some(l) => format!("goal.md:{l} (human: {})", d.text),
        None => format!("\"{}\"", d.text),
    };
    let next = match d.line {
        Some(_) if opts.reject => {
            "the next kit loop refuses done on this tree and gives the agent your note".to_string()
        }
        Some(_) => "it holds while the tree stays as it is now; kit loop goes on".to_string(),
        None => {
            // The agent asked: it hears the answer in its next prompt, through the inbox.
            let answer = format!(
                "Answer to your question #{} (\"{}\"): {verdict}{}",
                d.number,
                d.text,
                if note.is_empty() { String::new() } else { format!(" — {note}") }
            );
            let tell = crate::longrun::inbox::TellOptions { text: answer, from: Some(by.clone()) };
            crate::longrun::inbox::tell(cwd, &tell, &mut std::io::sink())?;
            format!(
                "the agent gets the answer in its next prompt ({}); kit loop goes on",
                crate::longrun::inbox::FILE
            )
        }
    };
    writeln!(out, "{verdict} #{}: {what}, on tree {short}; {next}", d.number).at(stdout)?;
    Ok(EXIT_OK)
}

/// Journal an `approval` by this process; returns the tree it was given on.
fn journal_approval(
    project: &Project,
    number: u64,
    verdict: &str,
    note: &str,
    by: &str,
    counts: bool,
    why: Option<String>,
) -> Result<Option<String>> {
    let (tree, commit) = tree_and_commit(&project.root);
    Journal::new(project.journal()).append(&Event::Approval(Approval {
        number,
        verdict: verdict.into(),
        note: note.into(),
        by: by.into(),
        tree: tree.clone(),
        commit,
        counts,
        why,
        pid: std::process::id(),
        pgid: nix::unistd::getpgrp().as_raw(),
    }))?;
    Ok(tree)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::longrun::event::Entry;
    use serde_json::json;

    fn entries(lines: Vec<serde_json::Value>) -> Vec<Entry> {
        lines.into_iter().map(Entry::from_value).collect()
    }

    fn asked(n: u64, line: Option<u64>, tree: &str) -> serde_json::Value {
        json!({"event": "asked", "number": n, "text": "ship it", "line": line, "from": "kit",
               "iteration": 1, "tree": tree, "commit": "c"})
    }

    fn approval(n: u64, verdict: &str, tree: &str, counts: bool) -> serde_json::Value {
        json!({"event": "approval", "number": n, "verdict": verdict, "note": "", "by": "ada",
               "tree": tree, "commit": "c", "counts": counts, "why": null, "pid": 1, "pgid": 1})
    }

    #[test]
    fn an_approval_inside_an_agent_window_or_marked_not_counting_does_not_count() {
        let e = entries(vec![
            asked(1, Some(9), "t1"),
            json!({"event": "agent_start", "iteration": 2}),
            approval(1, "approved", "t1", true),
            json!({"event": "agent_end", "iteration": 2}),
            approval(1, "approved", "t1", false),
        ]);
        let d = decisions(&e);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].answer, None);
        assert_eq!(d[0].not_counted.len(), 2);
        assert!(d[0].not_counted[0].why.as_deref().unwrap().contains("iteration 2's agent ran"));
        let mut e = e;
        e.push(Entry::from_value(approval(1, "approved", "t1", true)));
        let d = decisions(&e);
        assert!(d[0].answer.as_ref().is_some_and(Answer::approved));
        assert!(d[0].not_counted.is_empty());
        assert_eq!(next_number(&e), 2);
    }

    #[test]
    fn a_human_criterion_is_approved_only_for_the_tree_it_was_approved_on() {
        let h = Human { line: 9, text: "ship it".into() };
        let other = Human { line: 9, text: "ship it later".into() };
        // (journal, tree now) → state
        let cases: Vec<(Vec<serde_json::Value>, &str, &str)> = vec![
            (vec![], "t1", "not asked"),
            (vec![asked(1, Some(9), "t1")], "t1", "pending 1"),
            (vec![asked(1, Some(9), "t1")], "t2", "not asked"),
            (vec![asked(1, Some(9), "t1"), approval(1, "approved", "t1", true)], "t1", "approved"),
            (vec![asked(1, Some(9), "t1"), approval(1, "approved", "t1", true)], "t2", "not asked"),
            (vec![asked(1, Some(9), "t1"), approval(1, "rejected", "t1", true)], "t1", "rejected"),
            (
                vec![
                    asked(1, Some(9), "t1"),
                    approval(1, "rejected", "t1", true),
                    asked(2, Some(9), "t2"),
                    approval(2, "approved", "t2", true),
                ],
                "t2",
                "approved",
            ),
            (vec![asked(1, None, "t1"), approval(1, "approved", "t1", true)], "t1", "not asked"),
            (
                vec![asked(1, Some(9), "t1"), approval(1, "approved", "t1", false)],
                "t1",
                "pending 1",
            ),
        ];
        for (lines, tree, want) in cases {
            let d = decisions(&entries(lines.clone()));
            let got = match human_state(&d, &h, Some(tree)) {
                HumanState::Approved(_) => "approved".to_string(),
                HumanState::Rejected(_) => "rejected".to_string(),
                HumanState::Pending(n) => format!("pending {n}"),
                HumanState::NotAsked => "not asked".to_string(),
            };
            assert_eq!(got, want, "{lines:?} on {tree}");
            assert_eq!(human_state(&d, &other, Some(tree)), HumanState::NotAsked);
        }
    }
}
