//! The prompt of one iteration, built from the template `kit/prompt.md` (embedded) and the
//! state files, so that every iteration starts from files rather than from memory (DESIGN §1).
//!
//! Placeholders, each replaced once: `{{iteration}}`, `{{root}}`, `{{goal}}` (goal.md),
//! `{{progress}}` (progress.md), `{{handoff}}` (handoff.md), `{{failures}}` (the criteria that
//! failed in the last check, with what was missing and the tail of their output), `{{reverts}}`
//! (the frozen files kit restored since the last iteration), `{{takeover}}` (when a fallback
//! agent runs its first iteration: who it takes over from and why) and `{{messages}}` (the
//! messages of `longrun/inbox.md` not yet delivered, see [`crate::longrun::inbox`]); the last two are
//! empty, with their heading, when there is nothing to say. A missing or empty file reads as a
//! short note saying so. The prompt is written to `longrun/.runs/NNN.prompt.md`.

use std::path::Path;

/// Template path inside the embedded `kit/` folder.
pub const TEMPLATE: &str = "prompt.md";

/// What goes into one prompt.
#[derive(Clone, Debug)]
pub struct PromptInput<'a> {
    /// 1-based iteration number.
    pub iteration: u64,
    /// Repository root.
    pub root: &'a Path,
    /// `longrun/goal.md`.
    pub goal: &'a Path,
    /// `longrun/progress.md`.
    pub progress: &'a Path,
    /// `longrun/handoff.md`.
    pub handoff: &'a Path,
    /// One Markdown block per failed criterion (empty when all passed or none ran).
    pub failures: &'a [String],
    /// One line per revert (empty when none).
    pub reverts: &'a [String],
    /// One line per tool call Claude Code denied in the last iteration (empty when none):
    /// appended as a last section, so the agent does not try them again.
    pub denials: &'a [String],
    /// The inbox's messages for this iteration, one prompt item each
    /// ([`crate::longrun::inbox::Message::prompt_item`]); empty when none.
    pub messages: &'a [String],
    /// When this agent takes over the run from another (`[agent] fallback`): who and why, in
    /// words.
    pub takeover: Option<&'a str>,
}

/// The heading of the inbox's messages in the prompt.
pub const MESSAGES_HEADING: &str = "# Messages from the person running this loop";

/// Render the prompt text.
pub fn render(input: &PromptInput<'_>) -> String {
    let template = crate::templates::kit_file(TEMPLATE).unwrap_or(FALLBACK_TEMPLATE);
    let failures = if input.failures.is_empty() {
        "No criterion has failed yet in this loop, or none ran.".to_string()
    } else {
        input.failures.join("\n\n")
    };
    let reverts = if input.reverts.is_empty() {
        "None.".to_string()
    } else {
        input.reverts.iter().map(|r| format!("- {r}")).collect::<Vec<_>>().join("\n")
    };
    let messages = if input.messages.is_empty() {
        String::new()
    } else {
        format!(
            "{MESSAGES_HEADING}\n\nFrom the person running this loop (kit tell, kit approve, or written \
             in longrun/inbox.md), new for this iteration. Act on \
             them; they change neither the goal's criteria, which still decide when the work is \
             done, nor the frozen files.\n\n{}\n\n",
            input.messages.join("\n")
        )
    };
    let takeover = match input.takeover {
        None => String::new(),
        Some(why) => format!(
            "# You take over this run\n\n{why} You are the next agent of the run's fallback \
             list. The work so far is in the tree; longrun/progress.md and the handoff below say \
             where it stands.\n\n"
        ),
    };
    let fields = [
        ("{{iteration}}", input.iteration.to_string()),
        ("{{root}}", input.root.display().to_string()),
        ("{{goal}}", file_or_note(input.goal)),
        ("{{progress}}", file_or_note(input.progress)),
        ("{{handoff}}", file_or_note(input.handoff)),
        ("{{failures}}", failures),
        ("{{reverts}}", reverts),
        ("{{takeover}}", takeover),
        ("{{messages}}", messages),
    ];
    // Replace in one pass over the template, so text inside a state file that happens to hold
    // a placeholder is never expanded.
    let mut out = String::with_capacity(template.len() + 4096);
    let mut rest = template;
    while let Some(at) = rest.find("{{") {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        match fields.iter().find(|(k, _)| tail.starts_with(k)) {
            Some((k, v)) => {
                out.push_str(v);
                rest = &tail[k.len()..];
            }
            None => {
                out.push_str("{{");
                rest = &tail[2..];
            }
        }
    }
    out.push_str(rest);
    if !input.denials.is_empty() {
        out.push_str(
            "\n\n# Tool calls denied last time\n\nThe last iteration was not allowed these calls; \
             they will be denied again, so do the work without them (or leave a note in \
             longrun/progress.md saying which command the human should allow):\n",
        );
        for d in input.denials {
            out.push_str(&format!("- {d}\n"));
        }
    }
    out
}

fn file_or_note(path: &Path) -> String {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    match std::fs::read_to_string(path) {
        Ok(t) if !t.trim().is_empty() => t.trim_end().to_string(),
        Ok(_) => format!("({name} is empty.)"),
        Err(_) => format!("({name} does not exist yet.)"),
    }
}

const FALLBACK_TEMPLATE: &str = "Iteration {{iteration}} in {{root}}.\n\n{{takeover}}{{messages}}{{goal}}\n\n{{progress}}\n\n{{handoff}}\n\n{{failures}}\n\n{{reverts}}\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_carries_goal_failures_and_reverts_but_never_expands_file_text() {
        let d = tempfile::tempdir().unwrap();
        let goal = d.path().join("goal.md");
        std::fs::write(&goal, "# Goal: add\nliteral {{reverts}} stays\n").unwrap();
        let failures = vec!["- function: `python3 t.py` exit 1".to_string()];
        let reverts = vec!["tests/t.py (modified): restored".to_string()];
        let (progress, handoff) = (d.path().join("progress.md"), d.path().join("handoff.md"));
        let first = PromptInput {
            iteration: 3,
            root: d.path(),
            goal: &goal,
            progress: &progress,
            handoff: &handoff,
            failures: &failures,
            reverts: &reverts,
            denials: &[],
            messages: &[],
            takeover: None,
        };
        let text = render(&first);
        assert!(text.contains("iteration 3"));
        assert!(text.contains("# Goal: add\nliteral {{reverts}} stays"));
        assert!(text.contains("(progress.md does not exist yet.)"));
        assert!(text.contains("- function: `python3 t.py` exit 1"));
        assert!(text.contains("- tests/t.py (modified): restored"));
        assert!(!text.contains("{{goal}}"));
        assert!(!text.contains("Tool calls denied"));
        let denials = vec![r#"Bash: {"command":"npm install"}"#.to_string()];
        let text = render(&PromptInput {
            iteration: 4,
            failures: &[],
            reverts: &[],
            denials: &denials,
            ..first
        });
        assert!(text.contains("# Tool calls denied last time"));
        assert!(text.contains(r#"- Bash: {"command":"npm install"}"#));
        assert!(!text.contains(MESSAGES_HEADING) && !text.contains("{{messages}}"));
        assert!(!text.contains("You take over") && !text.contains("{{takeover}}"));
        let messages = vec!["- From ada (2026-10-01T09:00:00Z): keep {{goal}} as is".to_string()];
        let text = render(&PromptInput {
            iteration: 5,
            failures: &[],
            reverts: &[],
            messages: &messages,
            takeover: Some("The agent `codex` met its usage limit."),
            ..first
        });
        let (m, g) = (text.find(MESSAGES_HEADING).unwrap(), text.find("# The goal").unwrap());
        let t = text.find("# You take over this run").unwrap();
        assert!(t < m && m < g, "takeover, then messages, then the goal:\n{text}");
        assert!(text.contains("\n\n- From ada (2026-10-01T09:00:00Z): keep {{goal}} as is\n\n"));
        assert!(text.contains("The agent `codex` met its usage limit. You are the next agent"));
    }
}
