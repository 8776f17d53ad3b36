//! The two ways out of `kit mine`: `--apply FILE` writes the rules into the instruction file,
//! `--agent CMD` asks the user's own command to word them.
//!
//! The instruction file's format, as kit writes it: kit only ever appends. The first time it
//! adds the heading [`HEADING`]; each rule is one Markdown list item ending in the marker
//! `<!-- kit mine: ID -->` (see [`marker`]), which Markdown renders as nothing and which tells
//! a later run the rule is already there — wherever the user moved it, and however they
//! reworded it, as long as the marker stays. Deleting the marker with the line is how to drop a
//! rule for good… until the pattern recurs and `--apply` is asked again.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use crate::error::{Error, IoContext, Result};

use super::{Finding, Report};

/// The heading kit adds once above the rules it appends.
pub(crate) const HEADING: &str = "## Rules from past sessions (kit mine)";

/// The marker that ends a rule's line: `<!-- kit mine: ID -->`.
pub(crate) fn marker(id: &str) -> String {
    format!("<!-- kit mine: {id} -->")
}

/// `old` with every finding whose marker it lacks appended (heading first if absent), and how
/// many were added.
pub(crate) fn with_rules(old: &str, findings: &[&Finding]) -> (String, usize) {
    let new: Vec<&&Finding> = findings.iter().filter(|f| !old.contains(&marker(&f.id))).collect();
    if new.is_empty() {
        return (old.to_string(), 0);
    }
    // The file's own line ends: CRLF if it uses them.
    let nl = if old.contains("\r\n") { "\r\n" } else { "\n" };
    let mut text = old.to_string();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push_str(nl);
    }
    if !old.lines().any(|l| l.trim() == HEADING) {
        if !text.is_empty() {
            text.push_str(nl);
        }
        text.push_str(HEADING);
        text.push_str(nl);
        text.push_str(nl);
    }
    for f in &new {
        text.push_str(&format!("- {} {}{nl}", f.rule, marker(&f.id)));
    }
    (text, new.len())
}

/// Append the rules of `findings` that `path` does not hold yet, after printing the diff;
/// `shown` is the name the user gave. A symbolic link is written through (AGENTS.md is often a
/// link to CLAUDE.md), atomically. Returns how many rules were added.
///
/// Errors: the file exists but is not UTF-8 ([`Error::Input`]); it cannot be read or written
/// ([`Error::Io`]).
pub(crate) fn apply(
    shown: &Path,
    path: &Path,
    findings: &[&Finding],
    out: &mut dyn Write,
) -> Result<usize> {
    let io = |e| Error::io("stdout", e);
    let target = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    if std::fs::metadata(&target).is_ok_and(|m| !m.is_file()) {
        // A folder, FIFO or device: reading a FIFO would wait for a writer forever.
        return Err(Error::usage(format!("{}: not a regular file", shown.display()))
            .with_hint("give --apply the instruction file, e.g. --apply CLAUDE.md"));
    }
    let old = match std::fs::read(&target) {
        Ok(b) => String::from_utf8(b).map_err(|e| {
            let line = crate::longrun::config::line_of(
                &String::from_utf8_lossy(&e.as_bytes()[..e.utf8_error().valid_up_to()]),
                e.utf8_error().valid_up_to(),
            );
            Error::input(shown, Some(line), "not UTF-8 text; kit mine appends only to a text file")
                .with_hint("fix the file's encoding, or give another instruction file to --apply")
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(Error::io(shown, e)),
    };
    writeln!(out).map_err(io)?;
    if findings.is_empty() {
        writeln!(out, "{}: no rules to add; nothing written", shown.display()).map_err(io)?;
        return Ok(0);
    }
    let (text, added) = with_rules(&old, findings);
    if added == 0 {
        writeln!(
            out,
            "{} already holds {}; nothing written",
            shown.display(),
            if findings.len() == 1 {
                "this rule".to_string()
            } else {
                format!("these {} rules", findings.len())
            }
        )
        .map_err(io)?;
        return Ok(0);
    }
    let name = shown.display().to_string();
    let diff = similar::TextDiff::from_lines(&old, &text);
    let shown_diff = diff.unified_diff().context_radius(2).header(&name, &name).to_string();
    out.write_all(shown_diff.as_bytes()).map_err(io)?;
    crate::atomic::write_atomic(&target, text.as_bytes())?;
    let kept = findings.len() - added;
    let already = if kept > 0 { format!(" ({kept} already there)") } else { String::new() };
    writeln!(
        out,
        "wrote {} to {}{already}",
        crate::units::plural(added as u64, "rule"),
        shown.display()
    )
    .map_err(io)?;
    Ok(added)
}

/// Hand `report` (as `kit.mine/1` JSON on stdin) to `cmd`, run with `sh -c` in `cwd`, and print
/// what it writes on stdout under a heading that marks it as proposals. Nothing it prints is
/// written anywhere or run. kit starts no other command (DESIGN §12).
///
/// Errors: `sh` cannot be started, or `cmd` exits non-zero ([`Error::Usage`], with its first
/// stderr line).
pub(crate) fn ask_agent(cmd: &str, report: &Report, cwd: &Path, out: &mut dyn Write) -> Result<()> {
    let io = |e| Error::io("stdout", e);
    let input = serde_json::to_vec_pretty(report).map_err(|e| Error::internal(e.to_string()))?;
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::internal(format!("cannot start sh for --agent: {e}")))?;
    // Feed stdin from a thread: a command that writes before it has read everything would
    // otherwise block on a full pipe while kit blocks writing.
    let stdin = child.stdin.take();
    let feeder = std::thread::spawn(move || {
        if let Some(mut s) = stdin {
            // A command that does not read its stdin closes the pipe; that is its right.
            let _ = s.write_all(&input);
        }
    });
    let mut stdout = String::new();
    let mut stderr = String::new();
    if let Some(mut s) = child.stdout.take() {
        let _ = s.read_to_string(&mut stdout);
    }
    if let Some(mut s) = child.stderr.take() {
        let _ = s.read_to_string(&mut stderr);
    }
    let status = child.wait().at(Path::new("sh"))?;
    let _ = feeder.join();
    if !status.success() {
        let first = stderr.lines().find(|l| !l.trim().is_empty()).unwrap_or("(no message)");
        let code = status.code().map_or("a signal".to_string(), |c| format!("status {c}"));
        return Err(Error::usage(format!("--agent `{cmd}` exited with {code}: {first}"))
            .with_hint("run the command by hand: kit mine --json | CMD"));
    }
    writeln!(out).map_err(io)?;
    writeln!(out, "proposals from `{cmd}` (an agent's wording: not written, not run; review them)")
        .map_err(io)?;
    let lines: Vec<&str> = stdout.lines().collect();
    if lines.iter().all(|l| l.trim().is_empty()) {
        writeln!(out, "  | (it printed nothing)").map_err(io)?;
    }
    for l in lines {
        writeln!(out, "  | {}", l.trim_end()).map_err(io)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mine::patterns::Kind;

    fn f(id: &str, rule: &str) -> Finding {
        Finding {
            id: id.into(),
            kind: Kind::TestEdits,
            summary: String::new(),
            count: 2,
            threshold: 2,
            sessions: vec![],
            occurrences: vec![],
            rule: rule.into(),
        }
    }

    #[test]
    fn rules_are_appended_once_under_one_heading() {
        let a = f("test-edits-00000001", "Never edit tests.");
        let b = f("repeated-reads-00000002", "Read it once.");
        let (one, n) = with_rules("# Project\n\nBuild with make.", &[&a]);
        assert_eq!(n, 1);
        assert_eq!(
            one,
            "# Project\n\nBuild with make.\n\n## Rules from past sessions (kit mine)\n\n- Never edit tests. <!-- kit mine: test-edits-00000001 -->\n"
        );
        let (two, n) = with_rules(&one, &[&a, &b]);
        assert_eq!(n, 1);
        assert_eq!(two.matches(HEADING).count(), 1);
        assert!(two.ends_with("- Read it once. <!-- kit mine: repeated-reads-00000002 -->\n"));
        assert_eq!(with_rules(&two, &[&a, &b]), (two.clone(), 0));
        let (fresh, _) = with_rules("", &[&a]);
        assert!(fresh.starts_with(HEADING));
        let (crlf, _) = with_rules("# Project\r\n", &[&a]);
        assert_eq!(
            crlf,
            "# Project\r\n\r\n## Rules from past sessions (kit mine)\r\n\r\n- Never edit tests. <!-- kit mine: test-edits-00000001 -->\r\n"
        );
    }
}
