//! The inbox: steering a running loop (issue 24). `kit tell TEXT` appends a dated entry to
//! `longrun/inbox.md`, and so may a person by hand; at the start of each iteration the loop puts
//! every message not yet delivered in the prompt (under "Messages from the person running this
//! loop") and journals them as one `told` event. The journal is the record of delivery, the file
//! stays the user's: kit appends to it (`kit tell`) and never rewrites or empties it.
//!
//! The file is Markdown. `kit tell` writes one list item per message, its first line stamped
//! with the kit clock's time and who told it, further lines indented by two spaces:
//!
//! ```markdown
//! # Inbox
//! - 2026-10-01T09:00:00Z ada: Keep parse_duration in confload/durations.py;
//!   the CLI imports it from there.
//! ```
//!
//! Read back ([`parse`]): headings and HTML comments are skipped, as are blank lines; a line in
//! that form (`- TIME NAME: TEXT`) is a told message; any other line is a message added by hand
//! (its `- ` or `* ` bullet taken off), with no sender and no time; a line indented by two spaces
//! or a tab continues the message above it.
//!
//! A message is known by the sha256 of its sender, time and text ([`Message::sha256`]). A
//! message is delivered once: [`pending`] subtracts, as a multiset, the messages of the journal's
//! `told` events from the file's, so a resumed or restarted loop does not deliver again, the same
//! line written twice is delivered twice, and a line edited after delivery is a new message. An
//! iteration retried under its number (a usage limit waited out, or handed to a fallback agent)
//! gets the messages of its first attempt again ([`for_iteration`]), without a second `told`.
//!
//! The inbox is not protected from the agent: an agent that writes to it talks to itself, and the
//! journal shows the sender it claimed.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;

use crate::error::{Error, IoContext, Result};
use crate::longrun::event::{Entry, Event, ToldMessage};
use crate::longrun::Project;

/// The inbox, relative to the repository root.
pub const FILE: &str = "longrun/inbox.md";

/// What `kit tell` writes first into a new inbox.
const HEADER: &str = "# Inbox\n\n<!-- Messages for the agent of kit loop. kit tell \"...\" appends one; a line you add by\n     hand counts too. Each reaches the agent once, in the next iteration's prompt; the journal's\n     `told` events say which were delivered and when. -->\n\n";

/// One message of the inbox.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// Who told it (`kit tell`'s `--from` or login name); None for a line added by hand.
    pub from: Option<String>,
    /// When it was told, RFC 3339 as written; None for a line added by hand.
    pub at: Option<String>,
    /// The text, its lines joined by `\n`.
    pub text: String,
    /// Its first line in the file, 1-based.
    pub line: usize,
}

impl Message {
    /// sha256 (hex) of sender, time and text, NUL-separated: what marks it delivered.
    pub fn sha256(&self) -> String {
        let key = format!(
            "{}\0{}\0{}",
            self.from.as_deref().unwrap_or(""),
            self.at.as_deref().unwrap_or(""),
            self.text
        );
        crate::digest::sha256_hex(key.as_bytes())
    }

    /// The message as the journal's `told` event records it.
    pub fn to_told(&self) -> ToldMessage {
        ToldMessage {
            from: self.from.clone(),
            at: self.at.clone(),
            text: self.text.clone(),
            sha256: self.sha256(),
            line: self.line as u64,
        }
    }

    /// The prompt's list item: `- From ada (2026-10-01T09:00:00Z): TEXT`, later lines indented.
    pub fn prompt_item(&self) -> String {
        let who = match (&self.from, &self.at) {
            (Some(f), Some(a)) => format!("From {f} ({a})"),
            (Some(f), None) => format!("From {f}"),
            _ => "Added by hand to longrun/inbox.md".to_string(),
        };
        format!("- {who}: {}", self.text.replace('\n', "\n  "))
    }

    fn from_told(t: &ToldMessage) -> Message {
        Message {
            from: t.from.clone(),
            at: t.at.clone(),
            text: t.text.clone(),
            line: t.line as usize,
        }
    }
}

/// The inbox of `project`.
pub fn path(project: &Project) -> PathBuf {
    project.root.join(FILE)
}

/// Read the messages of inbox text (see the module doc for the format).
pub fn parse(text: &str) -> Vec<Message> {
    static TOLD: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^[-*] (\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z) ([^:\n]+?): ?(.*)$")
            .expect("a valid pattern")
    });
    let mut out: Vec<Message> = Vec::new();
    let mut in_comment = false;
    for (i, raw) in text.lines().enumerate() {
        let mut line = raw.to_string();
        // HTML comments, possibly over several lines, are the file's own notes.
        let mut kept = String::new();
        let mut rest = line.as_str();
        loop {
            if in_comment {
                match rest.find("-->") {
                    Some(j) => {
                        rest = &rest[j + 3..];
                        in_comment = false;
                    }
                    None => break,
                }
            } else {
                match rest.find("<!--") {
                    Some(j) => {
                        kept.push_str(&rest[..j]);
                        rest = &rest[j + 4..];
                        in_comment = true;
                    }
                    None => {
                        kept.push_str(rest);
                        break;
                    }
                }
            }
        }
        if kept.len() != line.len() {
            line = kept;
        }
        let trimmed = line.trim_end();
        if trimmed.trim().is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let continues = trimmed.starts_with("  ") || trimmed.starts_with('\t');
        if continues {
            if let Some(last) = out.last_mut() {
                last.text.push('\n');
                last.text.push_str(trimmed.trim_start());
                continue;
            }
        }
        let t = trimmed.trim_start();
        let message = match TOLD.captures(t) {
            Some(c) => Message {
                from: Some(c[2].trim().to_string()),
                at: Some(c[1].to_string()),
                text: c[3].trim().to_string(),
                line: i + 1,
            },
            None => {
                let text = match t {
                    "-" | "*" => "",
                    _ => t.strip_prefix("- ").or_else(|| t.strip_prefix("* ")).unwrap_or(t),
                };
                Message { from: None, at: None, text: text.trim().to_string(), line: i + 1 }
            }
        };
        out.push(message);
    }
    out.retain(|m| !m.text.is_empty());
    out
}

/// The `told` events of a journal's entries (as [`crate::longrun::journal::read`] gives them):
/// (iteration, messages).
fn told_events(events: &[Entry]) -> Vec<(u64, Vec<ToldMessage>)> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::Told(t) => Some((t.iteration, t.messages.clone())),
            _ => None,
        })
        .collect()
}

/// The messages of `inbox` that no `told` event in `events` delivered (see the module doc), in
/// the file's order.
pub fn pending(inbox: &[Message], events: &[Entry]) -> Vec<Message> {
    let mut delivered: HashMap<String, usize> = HashMap::new();
    for (_, messages) in told_events(events) {
        for m in messages {
            *delivered.entry(m.sha256).or_default() += 1;
        }
    }
    inbox
        .iter()
        .filter(|m| match delivered.get_mut(&m.sha256()) {
            Some(n) if *n > 0 => {
                *n -= 1;
                false
            }
            _ => true,
        })
        .cloned()
        .collect()
}

/// The messages already delivered to `iteration` (an attempt of it that a usage limit or an
/// agent switch did not count): its prompt gets them again.
pub fn for_iteration(events: &[Entry], iteration: u64) -> Vec<Message> {
    told_events(events)
        .into_iter()
        .filter(|(i, _)| *i == iteration)
        .flat_map(|(_, ms)| ms.iter().map(Message::from_told).collect::<Vec<_>>())
        .collect()
}

/// Read `project`'s inbox: no file is no message.
///
/// Errors: [`Error::Input`] naming `longrun/inbox.md:LINE` when it is not UTF-8 text;
/// [`Error::Io`] when it cannot be read.
pub fn read(project: &Project) -> Result<Vec<Message>> {
    let text = crate::longrun::read_user_text(&path(project), Path::new(FILE))?;
    Ok(text.as_deref().map(parse).unwrap_or_default())
}

/// How many messages of `project`'s inbox wait for the next iteration.
///
/// Errors: as [`read`], and reading the journal.
pub fn waiting(project: &Project) -> Result<usize> {
    let inbox = read(project)?;
    if inbox.is_empty() {
        return Ok(0);
    }
    let events = crate::longrun::journal::read(&project.journal())?.entries;
    Ok(pending(&inbox, &events).len())
}

/// `kit tell` options.
#[derive(Clone, Debug, Default)]
pub struct TellOptions {
    /// The message (its words joined by spaces); may hold several lines.
    pub text: String,
    /// Who tells it; None: the login name.
    pub from: Option<String>,
}

/// The entry `kit tell` appends: `- TIME FROM: TEXT`, later lines indented by two spaces, blank
/// lines dropped.
///
/// Errors: [`Error::Usage`] for an empty text or a sender that is empty or holds `:` or a line
/// break.
pub fn entry(text: &str, from: &str, at: &str) -> Result<String> {
    let from = from.trim();
    if from.is_empty() || from.contains([':', '\n', '\r']) {
        return Err(Error::usage(format!(
            "--from {from:?}: a name without `:` or line breaks, e.g. --from ada"
        ))
        .with_hint("kit tell --from NAME \"TEXT\""));
    }
    let lines: Vec<&str> =
        text.lines().map(str::trim_end).filter(|l| !l.trim().is_empty()).collect();
    let Some((first, rest)) = lines.split_first() else {
        return Err(Error::usage("kit tell needs a message; it was empty")
            .with_hint("kit tell \"use the regex module, not a hand-written parser\""));
    };
    let mut out = format!("- {at} {from}: {}\n", first.trim());
    for l in rest {
        out.push_str(&format!("  {}\n", l.trim()));
    }
    Ok(out)
}

/// Append `entry` to the inbox of `project` (created with a short header when missing) in one
/// write (`O_APPEND`, then fsync, as journal lines are).
///
/// Errors: [`Error::Io`] when the file cannot be written.
fn append(project: &Project, entry: &str) -> Result<()> {
    let file = path(project);
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&file).at(&file)?;
    let len = f.metadata().at(&file)?.len();
    let mut block = String::new();
    if len == 0 {
        block.push_str(HEADER);
    } else if !std::fs::read(&file).at(&file)?.ends_with(b"\n") {
        block.push('\n');
    }
    block.push_str(entry);
    f.write_all(block.as_bytes()).at(&file)?;
    f.sync_data().at(&file)
}

/// `kit tell`: append a message to `longrun/inbox.md` (see [`append`]) and say when it reaches
/// the agent. While a race runs in the project (`kit race`: the project's open race has lanes
/// whose loops run), the message goes to the inbox of every lane still running instead, where
/// each lane's loop puts it in its next iteration's prompt; the user's own inbox is left as it
/// is (the race's process reads no inbox). Exit 0.
///
/// Errors: [`Error::Usage`] outside an initialised repository or for a bad text or sender (see
/// [`entry`]); [`Error::Io`] when a file cannot be written.
pub fn tell(cwd: &Path, opts: &TellOptions, out: &mut dyn Write) -> Result<u8> {
    let project = Project::discover_initialised(cwd)?;
    let from = opts.from.clone().unwrap_or_else(super::pause::user_name);
    let at = crate::clock::now_rfc3339();
    let entry = entry(&opts.text, &from, &at)?;
    let o = Path::new("stdout");
    if let Some((run, lanes)) = running_lanes(&project) {
        let mut told = Vec::new();
        for (lane, pid, path) in &lanes {
            append(&Project::at(path), &entry)?;
            told.push(format!("lane {lane} (pid {pid})"));
        }
        writeln!(
            out,
            "told {} running lane{} of race {run}: {}; added to each lane's {FILE} from {}, its \
             loop puts it in its next iteration's prompt",
            lanes.len(),
            if lanes.len() == 1 { "" } else { "s" },
            told.join(", "),
            from.trim()
        )
        .at(o)?;
        return Ok(0);
    }
    append(&project, &entry)?;
    let waiting = waiting(&project).unwrap_or(1);
    let also = match waiting {
        0 | 1 => String::new(),
        n => format!(" ({n} messages wait)"),
    };
    let when = match crate::longrun::running_loop(&project) {
        Some(h) => format!("the loop (pid {}) puts it in its next iteration's prompt", h.pid),
        None => "no loop runs now: the next kit loop puts it in its first iteration's prompt"
            .to_string(),
    };
    writeln!(out, "told: added to {FILE} from {}; {when}{also}", from.trim()).at(o)?;
    Ok(0)
}

/// A lane of a race whose loop runs now: its number, its loop's pid, its worktree.
type RunningLane = (u32, u32, PathBuf);

/// The open race of `project` and its lanes whose loops run now; None when no race is open or
/// none of its lanes runs.
fn running_lanes(project: &Project) -> Option<(u64, Vec<RunningLane>)> {
    let h = crate::longrun::history::History::read(&project.journal()).ok()?;
    let (start, _) = crate::longrun::race::open_race(&h)?;
    let lanes: Vec<RunningLane> = start
        .lanes
        .iter()
        .filter_map(|l| {
            let path = PathBuf::from(&l.path);
            crate::longrun::race::live_loop(&path).map(|h| (l.lane, h.pid, path))
        })
        .collect();
    (!lanes.is_empty()).then_some((start.run, lanes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn told(from: &str, at: &str, text: &str, line: usize) -> Message {
        Message { from: Some(from.into()), at: Some(at.into()), text: text.into(), line }
    }

    fn hand(text: &str, line: usize) -> Message {
        Message { from: None, at: None, text: text.into(), line }
    }

    #[test]
    fn inbox_text_reads_as_told_and_hand_written_messages() {
        let rows: Vec<(&str, Vec<Message>)> = vec![
            ("", vec![]),
            (HEADER, vec![]),
            (
                "- 2026-10-01T09:00:00Z ada: use the regex module\n",
                vec![told("ada", "2026-10-01T09:00:00Z", "use the regex module", 1)],
            ),
            (
                "# Inbox\n- 2026-10-01T09:00:00Z ada: first\n  second line\n\tthird\nby hand\n* bullet\n",
                vec![
                    told("ada", "2026-10-01T09:00:00Z", "first\nsecond line\nthird", 2),
                    hand("by hand", 5),
                    hand("bullet", 6),
                ],
            ),
            (
                "<!-- a\nnote -->\n- 2026-10-01T09:00:00.5Z bob smith: time: 10:00\n",
                vec![told("bob smith", "2026-10-01T09:00:00.5Z", "time: 10:00", 3)],
            ),
            ("  indented first\n", vec![hand("indented first", 1)]),
            ("- \n-\nok <!-- not this --> too\n", vec![hand("ok  too", 3)]),
            (
                "- 2026-10-01 ada: not a time\n",
                vec![hand("2026-10-01 ada: not a time", 1)],
            ),
        ];
        for (text, want) in rows {
            assert_eq!(parse(text), want, "{text:?}");
        }
    }

    #[test]
    fn an_entry_reads_back_as_the_message_told() {
        let e = entry("first\n\n  second  \n", "ada", "2026-10-01T09:00:00Z").unwrap();
        assert_eq!(e, "- 2026-10-01T09:00:00Z ada: first\n  second\n");
        assert_eq!(parse(&e), [told("ada", "2026-10-01T09:00:00Z", "first\nsecond", 1)]);
        for (text, from, want) in [
            ("  \n", "ada", "needs a message"),
            ("x", "", "--from \"\""),
            ("x", "a:b", "without `:`"),
        ] {
            let err = entry(text, from, "2026-10-01T09:00:00Z").unwrap_err();
            assert_eq!(err.exit_code(), 2);
            assert!(err.to_string().contains(want), "{err}");
        }
    }

    #[test]
    fn a_message_is_pending_until_a_told_event_delivered_it_once() {
        let a = told("ada", "2026-10-01T09:00:00Z", "one", 1);
        let b = hand("yes", 2);
        let inbox = vec![a.clone(), b.clone(), hand("yes", 3)];
        assert_eq!(pending(&inbox, &[]).len(), 3);
        let event = |iteration: u64, ms: &[&Message]| {
            Entry::new(
                "t".into(),
                Event::Told(crate::longrun::event::Told {
                    iteration,
                    messages: ms.iter().map(|m| m.to_told()).collect(),
                }),
            )
        };
        let events = vec![event(1, &[&a, &b])];
        // The same line twice is two messages: one of them is still to deliver.
        assert_eq!(pending(&inbox, &events), [hand("yes", 3)]);
        let events = vec![event(1, &[&a, &b]), event(2, &[&b])];
        assert!(pending(&inbox, &events).is_empty());
        assert_eq!(for_iteration(&events, 1), [a.clone(), b.clone()]);
        assert_eq!(for_iteration(&events, 3), []);
        // Edited after delivery: a new message.
        let edited = vec![told("ada", "2026-10-01T09:00:00Z", "one!", 1)];
        assert_eq!(pending(&edited, &events).len(), 1);
        assert_eq!(
            a.prompt_item(),
            "- From ada (2026-10-01T09:00:00Z): one",
            "the prompt names sender and time"
        );
        let two = Message { text: "x\ny".into(), ..hand("", 1) };
        assert_eq!(two.prompt_item(), "- Added by hand to longrun/inbox.md: x\n  y");
    }
}
