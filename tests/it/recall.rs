//! `kit recall` over the real samples: both sources, each role, the marked snippet, filters.

use serde_json::Value;

use crate::measure::{claude_tree, sample};
use crate::util::kit;

fn tree() -> (tempfile::TempDir, std::path::PathBuf) {
    let fast = std::fs::read(sample("claude-code/fasthooks_sample_main_transcript.jsonl")).unwrap();
    let tool = std::fs::read(sample("claude-code/spotter_tool_heavy.jsonl")).unwrap();
    let (d, root) = claude_tree(&[("c45af7b1.jsonl", &fast), ("tool-heavy.jsonl", &tool)]);
    let codex = root.join("sessions/2026/02/23");
    std::fs::create_dir_all(&codex).unwrap();
    let r = "rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl";
    std::fs::copy(sample(&format!("codex/localpush__{r}")), codex.join(r)).unwrap();
    (d, root)
}

fn recall_json(d: &std::path::Path, args: &[&str]) -> Value {
    let out = kit(d).arg("recall").arg("--json").args(args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn finds_a_prompt_and_marks_the_match() {
    let (d, root) = tree();
    let out = kit(d.path()).args(["recall", "run a command"]).arg(&root).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("c45af7b1 2026-01-02 19:18 user      can you «run a command» ls -la"),
        "{text}"
    );
    // The compaction summary quotes the prompt later on.
    assert!(text.contains("19:21 user      …yze this conversation:"), "{text}");
    assert!(text.ends_with("2 matches\n"), "{text}");
}

#[test]
fn roles_cover_tool_input_and_output_of_both_sources() {
    let (d, root) = tree();
    let root = root.to_str().unwrap();
    // Tool input (the Bash command) and tool output (the listing) of the Claude session.
    let doc = recall_json(d.path(), &["--role", "tool", "ls -la", root]);
    assert!(doc["matches"].as_array().unwrap().iter().all(|m| m["role"] == "tool"));
    assert!(doc["total_matches"].as_u64().unwrap() >= 1);
    // Codex: a function_call's name and arguments are tool text; messages are not.
    let doc = recall_json(d.path(), &["--role", "tool", "REDACTED_ARGUMENTS", root]);
    assert!(doc["total_matches"].as_u64().unwrap() >= 3, "{doc}");
    assert!(doc["matches"].as_array().unwrap().iter().all(|m| m["source"] == "codex"));
    let doc = recall_json(d.path(), &["--role", "tool", "search_workflows", root]);
    assert_eq!(doc["matches"][0]["role"], "tool");
    let doc = recall_json(d.path(), &["--role", "assistant", "REDACTED_TEXT", root]);
    assert!(doc["total_matches"].as_u64().unwrap() >= 2, "{doc}");
    let doc = recall_json(d.path(), &["--role", "user", "REDACTED_ARGUMENTS", root]);
    assert_eq!(doc["total_matches"], 0);
    // Every match's snippet holds the query at the marked range.
    let doc = recall_json(d.path(), &["--limit", "500", "the", root]);
    for m in doc["matches"].as_array().unwrap() {
        let s = m["snippet"].as_str().unwrap();
        let (a, b) = (
            m["match_start"].as_u64().unwrap() as usize,
            m["match_end"].as_u64().unwrap() as usize,
        );
        assert_eq!(&s[a..b], "the", "{m}");
    }
}

#[test]
fn limit_keeps_the_newest_and_counts_all() {
    let (d, root) = tree();
    let doc = recall_json(d.path(), &["--limit", "2", "REDACTED", root.to_str().unwrap()]);
    let m = doc["matches"].as_array().unwrap();
    assert_eq!(m.len(), 2);
    assert!(doc["total_matches"].as_u64().unwrap() > 2);
    assert!(m[0]["time"].as_str() <= m[1]["time"].as_str());
    assert_eq!(
        m[1]["session_id"], "019c8bfe-ec25-79e0-97d7-bda6a9c575ff",
        "the Codex session is newest"
    );
}

#[test]
fn regex_since_and_project_filter() {
    let (d, root) = tree();
    let root = root.to_str().unwrap();
    let doc = recall_json(d.path(), &["--regex", "(?i)LS -LA", root]);
    assert!(doc["total_matches"].as_u64().unwrap() >= 1);
    let doc = recall_json(d.path(), &["--since", "2026-02-01", "ls -la", root]);
    assert!(doc["matches"]
        .as_array()
        .unwrap()
        .iter()
        .all(|m| m["time"].as_str().unwrap() >= "2026-02-01"));
    let doc = recall_json(d.path(), &["--project", "workspace", "the", root]);
    assert!(doc["matches"].as_array().unwrap().iter().all(|m| m["project"] == "/workspace"));
    let out = kit(d.path()).args(["recall", "--regex", "("]).arg(root).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad regular expression"));
}

#[test]
fn ignore_case_finds_what_the_exact_query_finds_and_marks_the_text_as_written() {
    let (d, root) = tree();
    let exact = recall_json(d.path(), &["run a command", root.to_str().unwrap()]);
    assert_eq!(exact["total_matches"], 2);
    for args in [&["-i", "RUN A Command"][..], &["--ignore-case", "--regex", "RUN A (COMMAND)"]] {
        let mut a = args.to_vec();
        a.push(root.to_str().unwrap());
        let doc = recall_json(d.path(), &a);
        assert_eq!(doc["total_matches"], exact["total_matches"], "{args:?}");
        assert_eq!(doc["matches"], exact["matches"], "{args:?}");
    }
    // Without -i the case matters.
    let none = recall_json(d.path(), &["RUN A Command", root.to_str().unwrap()]);
    assert_eq!(none["total_matches"], 0);
    let out = kit(d.path()).args(["recall", "-i", "RUN A COMMAND"]).arg(&root).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("user      can you «run a command» ls -la"), "{text}");
}

#[test]
fn json_match_offsets_are_bytes_into_the_snippet() {
    let (d, root) = tree();
    let doc = recall_json(d.path(), &["run a command", root.to_str().unwrap()]);
    let summary = &doc["matches"][1];
    let s = summary["snippet"].as_str().unwrap();
    let (a, b) = (
        summary["match_start"].as_u64().unwrap() as usize,
        summary["match_end"].as_u64().unwrap() as usize,
    );
    // The snippet opens with `…` (3 bytes, 1 character): byte and character offsets differ.
    assert!(s.starts_with('…'), "{s}");
    assert_eq!(&s.as_bytes()[a..b], b"run a command");
    let chars_before = s[..a].chars().count();
    assert_eq!(chars_before + 2, a);
    let help = kit(d.path()).args(["recall", "--help"]).output().unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    assert!(help.contains("-i, --ignore-case"), "{help}");
    assert!(help.contains("UTF-8 byte offsets"), "{help}");
}
