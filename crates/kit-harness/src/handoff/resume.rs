//! The resume text: what the hook gives a resumed or compacted session from `longrun/handoff.md`,
//! and the next action it names.

use std::path::Path;

use super::*;

/// What a session resuming after a compaction (or a resume) is told: the handoff's summary and
/// its next action (from the handoff, else from `progress.md`). `None` when there is no handoff.
pub fn resume_context(longrun: &Path, source: &str) -> Option<String> {
    let path = longrun.join("handoff.md");
    let text = std::fs::read_to_string(&path).ok()?;
    let h = parse(&path, &text).ok()?;
    if h.summary.is_empty() || (h.stamp.is_none() && is_template(&h.summary)) {
        return None;
    }
    let stamp = match &h.stamp {
        Some(s) => format!("stamp {}, saved {} at commit {}", s.stamp, s.time, short(&s.commit)),
        None => "not stamped: written by hand, unverified".to_string(),
    };
    // The summary's own next action is already in it: repeat only one taken from progress.md.
    let next = match next_action(&h.summary) {
        Some(_) => String::new(),
        None => format!(
            "\n\nNext action: {}",
            std::fs::read_to_string(longrun.join("progress.md"))
                .ok()
                .and_then(|p| next_action(&p))
                .unwrap_or_else(|| "none given".to_string())
        ),
    };
    let mut summary = h.summary.clone();
    if summary.len() > MAX_SUMMARY {
        let mut cut = MAX_SUMMARY;
        while !summary.is_char_boundary(cut) {
            cut -= 1;
        }
        summary.truncate(cut);
        summary.push_str("\n[… cut; read longrun/handoff.md]");
    }
    let after = if source == "compact" { "a compaction" } else { "a resume" };
    Some(format!(
        "kit: this session continues after {after}. The last handoff (longrun/handoff.md, {stamp}):\n\n{summary}{next}\n\nRun `kit handoff verify` to check the handoff still matches the tree before relying on it."
    ))
}

/// Longest summary injected at SessionStart, bytes (Claude Code spills longer context to a file).
const MAX_SUMMARY: usize = 6000;

/// The next action in a Markdown text: the paragraph under a heading that says "next", or the
/// rest of a line starting `Next action:` / `- Next:`.
pub fn next_action(text: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim().trim_start_matches(['-', '*', ' ']);
        let lower = t.to_ascii_lowercase();
        if t.starts_with('#') && lower.contains("next") {
            let body: Vec<&str> = lines[i + 1..]
                .iter()
                .skip_while(|l| l.trim().is_empty())
                .take_while(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
                .map(|l| l.trim())
                .filter(|l| !is_placeholder(l))
                .collect();
            if !body.is_empty() {
                return Some(body.join(" "));
            }
        }
        for prefix in ["next action:", "next:"] {
            if lower.starts_with(prefix) {
                let rest = t[prefix.len()..].trim();
                if !rest.is_empty() && !is_placeholder(rest) {
                    return Some(rest.trim_matches('*').trim().to_string());
                }
            }
        }
    }
    None
}

/// True for template placeholder text: a line of `kit init`'s progress or handoff template, a
/// line wholly in parentheses (`(The one concrete step to take next.)`) or an HTML comment.
fn is_placeholder(line: &str) -> bool {
    let l = line.trim();
    (l.starts_with('(') && l.ends_with(')'))
        || (l.starts_with("<!--") && l.ends_with("-->"))
        || ["templates/progress.md", "templates/handoff.md"].iter().any(|t| {
            crate::templates::kit_file(t).is_some_and(|t| {
                t.lines().any(|tl| tl.trim() == l && !l.starts_with('#') && !l.is_empty())
            })
        })
}
