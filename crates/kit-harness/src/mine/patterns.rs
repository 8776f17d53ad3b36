//! From facts to findings: each detector groups facts under a key (the same command and error,
//! the same test file, the same file read in one session, …), keeps the groups that pass its
//! threshold, and words a rule for the project's instruction file in one sentence. A single
//! occurrence is never a pattern: every threshold is at least 2 and is a constant below.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::read::{error_line, What};
use super::{Occurrence, SessionFacts};

/// The same command failing with the same first error line: a pattern once it happened in
/// this many sessions…
pub(crate) const SAME_FAILURE_MIN_SESSIONS: usize = 2;
/// …or this many times in one session.
pub(crate) const SAME_FAILURE_MIN_TIMES: usize = 3;
/// Test (or frozen) files edited, overwritten, deleted or reverted by the loop: this many,
/// over all sessions and the journal.
pub(crate) const TEST_EDITS_MIN: usize = 2;
/// Compactions in one session that make a compaction spiral.
pub(crate) const COMPACTIONS_MIN: usize = 3;
/// Resumes after the prompt cache expired (the engine's definition, DESIGN §8), over all
/// sessions.
pub(crate) const RESUMES_MIN: usize = 2;
/// Denials of the same tool, over all sessions.
pub(crate) const DENIALS_MIN: usize = 2;
/// Reads of the same file in one session.
pub(crate) const READS_MIN: usize = 5;
/// Stop-hook blocks the agent answered without a tool call, over all sessions.
pub(crate) const IGNORED_BLOCKS_MIN: usize = 2;

/// The kinds of pattern, in the order findings of equal count are listed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Kind {
    /// The same command failing with the same error.
    FailingCommand,
    /// Tests edited or deleted by the agent.
    TestEdits,
    /// Many compactions in one session.
    CompactionSpiral,
    /// Resumes after the cache expired.
    ColdResumes,
    /// Tool calls the harness refused.
    PermissionDenials,
    /// The same file read many times in one session.
    RepeatedReads,
    /// Stop-hook blocks the agent did not act on.
    IgnoredHookBlocks,
}

impl Kind {
    /// The id prefix, e.g. `failing-command`.
    pub(crate) fn slug(self) -> &'static str {
        match self {
            Kind::FailingCommand => "failing-command",
            Kind::TestEdits => "test-edits",
            Kind::CompactionSpiral => "compaction-spiral",
            Kind::ColdResumes => "cold-resumes",
            Kind::PermissionDenials => "permission-denials",
            Kind::RepeatedReads => "repeated-reads",
            Kind::IgnoredHookBlocks => "ignored-hook-blocks",
        }
    }
}

/// One recurring failure and the rule proposed against it.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Finding {
    /// Stable id: the kind's slug and 8 hex digits of sha256(kind, key), e.g.
    /// `failing-command-3fa2c1d0`. The same pattern gets the same id on every run, which is
    /// what `--apply`'s marker and `--only` use.
    pub id: String,
    /// The kind.
    pub kind: Kind,
    /// One line saying what recurs.
    pub summary: String,
    /// Occurrences counted.
    pub count: usize,
    /// The threshold this kind needs (see the constants).
    pub threshold: usize,
    /// Sessions it happened in (ids, sorted); the journal is not a session.
    pub sessions: Vec<String>,
    /// Where, sorted by file and line.
    pub occurrences: Vec<Occurrence>,
    /// The proposed rule for CLAUDE.md / AGENTS.md, one sentence.
    pub rule: String,
}

/// A group of occurrences under one key.
#[derive(Default)]
struct Group {
    occ: Vec<Occurrence>,
    /// An example to show (the first error line as logged, the first path as written).
    example: String,
}

impl Group {
    fn sessions(&self) -> BTreeSet<String> {
        self.occ.iter().filter_map(|o| o.session_id.clone()).collect()
    }
}

fn id(kind: Kind, key: &str) -> String {
    let mut h = Sha256::new();
    h.update(kind.slug().as_bytes());
    h.update([0]);
    h.update(key.as_bytes());
    format!("{}-{}", kind.slug(), &hex::encode(h.finalize())[..8])
}

fn finding(
    kind: Kind,
    key: &str,
    g: Group,
    threshold: usize,
    summary: String,
    rule: String,
) -> Finding {
    let mut occurrences = g.occ;
    occurrences.sort_by(|a, b| (&a.path, a.line).cmp(&(&b.path, b.line)));
    let sessions = occurrences.iter().filter_map(|o| o.session_id.clone()).collect::<BTreeSet<_>>();
    Finding {
        id: id(kind, key),
        kind,
        summary,
        count: occurrences.len(),
        threshold,
        sessions: sessions.into_iter().collect(),
        occurrences,
        rule,
    }
}

/// Every finding in `sessions` and the journal's reverts, sorted: most occurrences first, then
/// by kind, then by id.
pub(crate) fn find(sessions: &[SessionFacts], reverts: &[Occurrence]) -> Vec<Finding> {
    let mut out = vec![];
    out.extend(failing_commands(sessions));
    out.extend(test_edits(sessions, reverts));
    out.extend(compaction_spirals(sessions));
    out.extend(cold_resumes(sessions));
    out.extend(denials(sessions));
    out.extend(repeated_reads(sessions));
    out.extend(ignored_blocks(sessions));
    out.sort_by(|a, b| b.count.cmp(&a.count).then(a.kind.cmp(&b.kind)).then(a.id.cmp(&b.id)));
    out
}

fn occ(s: &SessionFacts, f: &super::read::Fact, detail: String) -> Occurrence {
    Occurrence {
        session_id: Some(s.session_id.clone()),
        source: s.source.name().to_string(),
        path: f.path.clone(),
        line: f.line,
        detail,
    }
}

/// A command as a key: blanks collapsed, a leading `cd DIR &&` and a trailing `2>&1` dropped.
pub(crate) fn normalise_command(cmd: &str) -> String {
    let mut c = cmd.split_whitespace().collect::<Vec<_>>().join(" ");
    while let Some(rest) = c.strip_prefix("cd ").and_then(|r| r.split_once(" && ").map(|(_, b)| b))
    {
        c = rest.to_string();
    }
    c.trim_end_matches("2>&1").trim().to_string()
}

/// An error line as a key: runs of digits become `N` (line numbers, pids, timings, temporary
/// names), blanks collapse.
pub(crate) fn normalise_error(line: &str) -> String {
    let mut out = String::new();
    let mut digits = false;
    for c in line.chars() {
        if c.is_ascii_digit() {
            if !digits {
                out.push('N');
            }
            digits = true;
        } else {
            digits = false;
            out.push(c);
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn failing_commands(sessions: &[SessionFacts]) -> Vec<Finding> {
    // Key: the normalised command and error line; a program the shell cannot find is one key
    // whatever the command line around it (`python -m pytest`, `python x.py`).
    let mut groups: BTreeMap<String, (BTreeSet<String>, Option<String>, Group)> = BTreeMap::new();
    for s in sessions {
        for f in &s.facts {
            let What::Failed(fail) = &f.what else { continue };
            let err = error_line(&fail.error);
            let cmd = normalise_command(&fail.command);
            let missing = missing_program(&err);
            let key = match &missing {
                Some(prog) => format!("command not found\n{prog}"),
                None => format!("{cmd}\n{}", normalise_error(&err)),
            };
            let (cmds, _, g) =
                groups.entry(key).or_insert_with(|| (BTreeSet::new(), missing, Group::default()));
            if g.example.is_empty() {
                g.example = err.clone();
            }
            cmds.insert(cmd);
            g.occ.push(occ(s, f, clip(&err, 100)));
        }
    }
    let mut out = vec![];
    for (key, (cmds, missing, g)) in groups {
        let sessions = g.sessions();
        let most_in_one = sessions
            .iter()
            .map(|s| g.occ.iter().filter(|o| o.session_id.as_deref() == Some(s)).count())
            .max()
            .unwrap_or(0);
        if sessions.len() < SAME_FAILURE_MIN_SESSIONS && most_in_one < SAME_FAILURE_MIN_TIMES {
            continue;
        }
        let (n, ns) = (g.occ.len(), sessions.len());
        let err = clean(&g.example, 80);
        let quoted: BTreeSet<String> = cmds.iter().map(|c| format!("`{}`", clean(c, 60))).collect();
        let cmd_list = list(&quoted, 2);
        let (summary, rule) = match missing {
            Some(prog) => (
                format!("`{prog}` not found by the shell, running {cmd_list}"),
                format!(
                    "`{prog}` is not installed here ({cmd_list} failed with \"command not found\" {}): use a command that is (check with `command -v`) instead of retrying it.",
                    times_in(n, ns)
                ),
            ),
            None => (
                format!("{cmd_list} fails with \"{err}\""),
                format!(
                    "{cmd_list} fails here with \"{err}\" ({}): fix the cause or use the command that works instead of running it again unchanged.",
                    times_in(n, ns)
                ),
            ),
        };
        let threshold = if ns >= SAME_FAILURE_MIN_SESSIONS {
            SAME_FAILURE_MIN_SESSIONS
        } else {
            SAME_FAILURE_MIN_TIMES
        };
        out.push(finding(Kind::FailingCommand, &key, g, threshold, summary, rule));
    }
    out
}

/// The program a shell could not find: `NAME: command not found` (bash, sh) or
/// `command not found: NAME` (zsh).
fn missing_program(error: &str) -> Option<String> {
    let name = if let Some(head) = error.strip_suffix(": command not found") {
        head.rsplit(": ").next()?
    } else {
        error.split_once("command not found: ")?.1
    };
    let name = name.trim();
    (!name.is_empty() && !name.contains(char::is_whitespace)).then(|| clean(name, 40))
}

fn test_edits(sessions: &[SessionFacts], reverts: &[Occurrence]) -> Vec<Finding> {
    let mut g = Group::default();
    let mut files = BTreeSet::new();
    for s in sessions {
        for f in &s.facts {
            if let What::TestEdit { file, how } = &f.what {
                files.insert(file.clone());
                g.occ.push(occ(s, f, how.clone()));
            }
        }
    }
    for r in reverts {
        files.insert(r.detail.split_whitespace().next().unwrap_or_default().to_string());
        g.occ.push(r.clone());
    }
    if g.occ.len() < TEST_EDITS_MIN {
        return vec![];
    }
    let n = g.occ.len();
    let files: BTreeSet<String> = files.iter().map(|f| clean(f, 60)).collect();
    let names = list(&files, 3);
    let summary = format!("tests or frozen files changed by the agent: {names}");
    let rule = format!(
        "Never edit, overwrite, delete or move tests or frozen files to make a check pass ({} so far: {names}); change the code under test instead.",
        plural(n, "change")
    );
    vec![finding(Kind::TestEdits, "tests", g, TEST_EDITS_MIN, summary, rule)]
}

fn compaction_spirals(sessions: &[SessionFacts]) -> Vec<Finding> {
    let mut out = vec![];
    let mut g = Group::default();
    let mut most = 0;
    for s in sessions {
        let lines: Vec<_> = s.facts.iter().filter(|f| f.what == What::Compaction).collect();
        if lines.len() >= COMPACTIONS_MIN {
            most = most.max(lines.len());
            for (i, f) in lines.iter().enumerate() {
                g.occ.push(occ(s, f, format!("compaction {} of {}", i + 1, lines.len())));
            }
        }
    }
    if !g.occ.is_empty() {
        let ns = g.sessions().len();
        let summary = format!(
            "{} with {COMPACTIONS_MIN} or more compactions (at most {most} in one)",
            plural(ns, "session")
        );
        let rule = format!(
            "Do not let a session compact again and again (up to {most} compactions in one session): when the context passes 70% of the compaction point, bring longrun/progress.md up to date, run `kit handoff save` and end the session so the next one starts clean."
        );
        out.push(finding(Kind::CompactionSpiral, "spiral", g, COMPACTIONS_MIN, summary, rule));
    }
    out
}

fn cold_resumes(sessions: &[SessionFacts]) -> Vec<Finding> {
    let mut g = Group::default();
    let mut premium = 0.0;
    for s in sessions {
        premium += s.resume_premium_usd;
        for (f, tokens) in &s.resumes {
            g.occ.push(occ(s, f, format!("re-wrote {} tokens", crate::units::thousands(*tokens))));
        }
    }
    if g.occ.len() < RESUMES_MIN {
        return vec![];
    }
    let (n, ns) = (g.occ.len(), g.sessions().len());
    let summary = format!(
        "{} after the prompt cache expired ({} over a warm cache)",
        plural(n, "resume"),
        crate::units::usd(premium)
    );
    let rule = format!(
        "Do not resume a session idle longer than the cache TTL ({}, {} beyond a warm cache): start a new session from longrun/handoff.md instead.",
        times_in(n, ns),
        crate::units::usd(premium)
    );
    vec![finding(Kind::ColdResumes, "resumes", g, RESUMES_MIN, summary, rule)]
}

fn denials(sessions: &[SessionFacts]) -> Vec<Finding> {
    let mut groups: BTreeMap<String, Group> = BTreeMap::new();
    for s in sessions {
        for f in &s.facts {
            if let What::Denied { tool, detail } = &f.what {
                let g = groups.entry(tool.clone()).or_default();
                if g.example.is_empty() {
                    g.example = detail.clone();
                }
                g.occ.push(occ(s, f, clip(detail, 100)));
            }
        }
    }
    let mut out = vec![];
    for (tool, g) in groups {
        if g.occ.len() < DENIALS_MIN {
            continue;
        }
        let (n, ns) = (g.occ.len(), g.sessions().len());
        let t = clean(&tool, 40);
        let summary = format!("{t} calls refused: \"{}\"", clean(&g.example, 80));
        let rule = format!(
            "{t} calls are refused in this setup ({}): do not retry them; work with the tools that are allowed, or write in longrun/progress.md which permission is missing.",
            times_in(n, ns)
        );
        out.push(finding(Kind::PermissionDenials, &tool, g, DENIALS_MIN, summary, rule));
    }
    out
}

fn repeated_reads(sessions: &[SessionFacts]) -> Vec<Finding> {
    // Per file across sessions, but a session counts only when it read the file READS_MIN times.
    let mut groups: BTreeMap<String, (usize, Group)> = BTreeMap::new();
    for s in sessions {
        let mut per: BTreeMap<(&std::path::Path, &str), Vec<&super::read::Fact>> = BTreeMap::new();
        for f in &s.facts {
            if let What::Read { file } = &f.what {
                per.entry((f.path.as_path(), file.as_str())).or_default().push(f);
            }
        }
        for ((_, file), reads) in per {
            if reads.len() < READS_MIN {
                continue;
            }
            let (most, g) = groups.entry(file.to_string()).or_default();
            *most = (*most).max(reads.len());
            for (i, f) in reads.iter().enumerate() {
                g.occ.push(occ(s, f, format!("read {} of {}", i + 1, reads.len())));
            }
        }
    }
    let mut out = vec![];
    for (file, (most, g)) in groups {
        let ns = g.sessions().len();
        let f = clean(&file, 80);
        let summary = if ns > 1 {
            format!("`{f}` read up to {most} times in one session, in {ns} sessions")
        } else {
            format!("`{f}` read {most} times in one session")
        };
        let rule = format!(
            "Read `{f}` once per session and keep what you need from it in longrun/progress.md (it was read up to {most} times in one session)."
        );
        out.push(finding(Kind::RepeatedReads, &file, g, READS_MIN, summary, rule));
    }
    out
}

fn ignored_blocks(sessions: &[SessionFacts]) -> Vec<Finding> {
    let mut g = Group::default();
    for s in sessions {
        for f in &s.facts {
            if f.what == What::IgnoredStopBlock {
                g.occ.push(occ(s, f, "stop blocked; answered without a tool call".into()));
            }
        }
    }
    if g.occ.len() < IGNORED_BLOCKS_MIN {
        return vec![];
    }
    let (n, ns) = (g.occ.len(), g.sessions().len());
    let summary =
        format!("Stop hook blocks answered without doing what they asked ({})", times_in(n, ns));
    let rule = format!(
        "When a Stop hook blocks you, do what its reason asks (for kit's hook: update longrun/progress.md and run `kit handoff save`) before you stop again; {} were ignored.",
        plural(n, "block")
    );
    vec![finding(Kind::IgnoredHookBlocks, "stop", g, IGNORED_BLOCKS_MIN, summary, rule)]
}

/// `3 times in 2 sessions`.
fn times_in(n: usize, sessions: usize) -> String {
    let t = if n == 1 { "once".to_string() } else { format!("{n} times") };
    format!("{t} in {}", plural(sessions, "session"))
}

fn plural(n: usize, w: &str) -> String {
    crate::units::plural(n as u64, w)
}

/// Up to `max` names, then `and N more`.
fn list(names: &BTreeSet<String>, max: usize) -> String {
    let shown: Vec<String> = names.iter().take(max).cloned().collect();
    let more = names.len().saturating_sub(max);
    if more > 0 {
        format!("{} and {more} more", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

/// Transcript text made safe to quote in a rule: one line, no backquotes (they would end the
/// rule's code span), no HTML comment marks (they would break the marker), at most `max`
/// characters.
pub(crate) fn clean(s: &str, max: usize) -> String {
    let one = s.split_whitespace().collect::<Vec<_>>().join(" ");
    let safe = one.replace('`', "'").replace("<!--", "<!-").replace("-->", "->");
    clip(&safe, max)
}

fn clip(s: &str, max: usize) -> String {
    crate::units::clip(s, max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_and_errors_normalise_to_one_key() {
        let cases = [
            ("cd /repo && python -m pytest  tests 2>&1", "python -m pytest tests"),
            ("cd a && cd b && make", "make"),
            ("  cargo   test ", "cargo test"),
        ];
        for (raw, want) in cases {
            assert_eq!(normalise_command(raw), want, "{raw}");
        }
        assert_eq!(
            normalise_error("/bin/bash: line 12: python: command not found"),
            "/bin/bash: line N: python: command not found"
        );
        assert_eq!(normalise_error("took 1.25s  (pid 4411)"), "took N.Ns (pid N)");
    }

    #[test]
    fn a_missing_program_is_named() {
        let cases = [
            ("/bin/bash: line 1: python: command not found", Some("python")),
            ("sh: 1: pytest: command not found", Some("pytest")),
            ("zsh: command not found: jq", Some("jq")),
            ("cat: x: No such file or directory", None),
        ];
        for (e, want) in cases {
            assert_eq!(missing_program(e).as_deref(), want, "{e}");
        }
    }

    #[test]
    fn ids_are_stable_and_quoted_text_is_safe() {
        assert_eq!(id(Kind::TestEdits, "tests"), id(Kind::TestEdits, "tests"));
        assert_ne!(id(Kind::TestEdits, "tests"), id(Kind::TestEdits, "other"));
        assert!(id(Kind::FailingCommand, "x").starts_with("failing-command-"));
        assert_eq!(id(Kind::FailingCommand, "x").len(), "failing-command-".len() + 8);
        assert_eq!(clean("a `b`\n<!-- c -->", 80), "a 'b' <!- c ->");
        assert_eq!(clean(&"x".repeat(90), 10).chars().count(), 10);
    }
}
