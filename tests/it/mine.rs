//! `kit mine` on transcripts built to hold each failure pattern (tests/fixtures/mine, see its
//! SOURCES.md), on ones that hold none, on the loop's journal, on damaged copies; `--apply`
//! twice adds each rule once; `--agent` output is shown as proposals.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::util::kit;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mine")
}

/// A copy of the fixtures folder in a fresh temporary folder (tests may damage or extend it).
fn sandbox() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    copy_dir(&fixtures(), d.path());
    d
}

fn copy_dir(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

fn mine_json(dir: &Path, args: &[&str]) -> Value {
    let out = kit(dir).arg("mine").arg("--json").args(args).output().unwrap();
    assert!(out.status.success(), "kit mine failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn mine_text(dir: &Path, args: &[&str]) -> (i32, String) {
    let out = kit(dir).arg("mine").args(args).output().unwrap();
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

fn finding<'a>(doc: &'a Value, kind: &str) -> &'a Value {
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} finding in {doc:#}"))
}

fn places(f: &Value) -> Vec<String> {
    f["occurrences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let p = PathBuf::from(o["path"].as_str().unwrap());
            format!("{}:{}", p.file_name().unwrap().to_string_lossy(), o["line"])
        })
        .collect()
}

const S1: &str = "a1f0c3d2-0000-4000-8000-000000000001.jsonl";
const S2: &str = "b2e1d4c3-0000-4000-8000-000000000002.jsonl";
const CODEX: &str = "rollout-2026-09-03T08-00-00-0199aa00-0000-7000-8000-000000000003.jsonl";

#[test]
fn mine_finds_each_pattern_where_it_happened() {
    let d = sandbox();
    let doc = mine_json(d.path(), &["claude", "codex"]);
    assert_eq!(doc["schema"], "kit.mine/1");
    assert_eq!(doc["sessions"], 3);
    let kinds: Vec<&str> =
        doc["findings"].as_array().unwrap().iter().map(|f| f["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "repeated_reads",
            "failing_command",
            "test_edits",
            "compaction_spiral",
            "cold_resumes",
            "permission_denials",
            "ignored_hook_blocks"
        ]
    );
    // The same command with the same first error line, across both sources; the line number
    // in bash's message does not make it another error.
    let f = finding(&doc, "failing_command");
    assert_eq!((f["count"].as_u64(), f["sessions"].as_array().unwrap().len()), (Some(3), 3));
    assert_eq!(places(f), [format!("{S1}:3"), format!("{S2}:3"), format!("{CODEX}:7")]);
    assert_eq!(
        f["rule"],
        "`python` is not installed here (`python -m pytest tests` failed with \"command not found\" 3 times in 3 sessions): use a command that is (check with `command -v`) instead of retrying it."
    );
    let t = finding(&doc, "test_edits");
    assert_eq!(places(t), [format!("{S1}:14"), format!("{S2}:4"), format!("{CODEX}:9")]);
    let details: Vec<&str> = t["occurrences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["detail"].as_str().unwrap())
        .collect();
    assert_eq!(
        details,
        [
            "edit tests/test_app.py (an assertion that cannot fail, or a skip)",
            "rm tests/test_old.py",
            "delete tests/test_slow.py"
        ]
    );
    assert_eq!(places(finding(&doc, "compaction_spiral")).len(), 3);
    assert_eq!(places(finding(&doc, "cold_resumes")), [format!("{S1}:21"), format!("{S2}:21")]);
    assert_eq!(finding(&doc, "permission_denials")["count"], 2);
    assert_eq!(finding(&doc, "repeated_reads")["count"], 5);
    assert_eq!(finding(&doc, "ignored_hook_blocks")["count"], 2);
    // Ids are stable from run to run (the marker --apply writes depends on it).
    let again = mine_json(d.path(), &["claude", "codex"]);
    assert_eq!(doc["findings"], again["findings"]);
}

#[test]
fn mine_finds_nothing_below_the_thresholds_nor_in_the_real_samples() {
    let d = sandbox();
    let doc = mine_json(d.path(), &["below"]);
    assert_eq!((doc["sessions"].as_u64(), doc["findings"].as_array().unwrap().len()), (Some(1), 0));
    let real = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/transcripts");
    let doc = mine_json(d.path(), &[real.to_str().unwrap()]);
    assert_eq!((doc["sessions"].as_u64(), doc["findings"].as_array().unwrap().len()), (Some(3), 0));
    let (code, text) = mine_text(d.path(), &["below"]);
    assert_eq!(code, 0);
    assert_eq!(
        text,
        "read: 1 session\nno recurring failures (kit mine --help lists the thresholds)\n"
    );
}

#[test]
fn mine_counts_the_loops_reverts_from_the_journal() {
    // In a project: its longrun/journal.jsonl is read along with the transcripts given.
    let d = crate::util::git_repo();
    std::fs::create_dir_all(d.path().join("longrun")).unwrap();
    std::fs::copy(
        fixtures().join("loop/longrun/journal.jsonl"),
        d.path().join("longrun/journal.jsonl"),
    )
    .unwrap();
    let one = d.path().join("t");
    std::fs::create_dir_all(&one).unwrap();
    std::fs::copy(fixtures().join("claude/projects/-home-dev-app").join(S1), one.join(S1)).unwrap();
    let doc = mine_json(d.path(), &["t"]);
    assert_eq!(doc["journals"][0]["path"], "longrun/journal.jsonl");
    assert_eq!(
        (doc["journals"][0]["events"].as_u64(), doc["journals"][0]["reverts"].as_u64()),
        (Some(13), Some(1))
    );
    let t = finding(&doc, "test_edits");
    assert_eq!(places(t), ["journal.jsonl:7".to_string(), format!("{S1}:14")]);
    assert_eq!(
        t["occurrences"][0]["detail"],
        "tests/test_durations.py modified (reverted by the loop, iteration 1)"
    );
    assert_eq!(t["sessions"].as_array().unwrap().len(), 1, "the journal is not a session");
    // Named as a PATH, the journal alone: one revert is not a pattern.
    let e = tempfile::tempdir().unwrap();
    let j = fixtures().join("loop/longrun/journal.jsonl");
    let doc = mine_json(e.path(), &[j.to_str().unwrap()]);
    assert_eq!((doc["sessions"].as_u64(), doc["findings"].as_array().unwrap().len()), (Some(0), 0));
    assert_eq!(doc["journals"][0]["reverts"], 1);
}

#[test]
fn mine_apply_twice_adds_each_rule_once() {
    let d = sandbox();
    std::fs::write(
        d.path().join("CLAUDE.md"),
        "# App\n\nRun the tests with `python3 -m pytest`.\n",
    )
    .unwrap();
    let (code, text) = mine_text(d.path(), &["claude", "codex", "--apply", "CLAUDE.md"]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("--- CLAUDE.md\n+++ CLAUDE.md\n"), "{text}");
    assert!(text.contains("+## Rules from past sessions (kit mine)\n"), "{text}");
    assert!(text.ends_with("wrote 7 rules to CLAUDE.md\n"), "{text}");
    let first = std::fs::read_to_string(d.path().join("CLAUDE.md")).unwrap();
    assert!(first.starts_with("# App\n\nRun the tests with `python3 -m pytest`.\n\n## Rules"));
    assert_eq!(first.matches("<!-- kit mine: ").count(), 7);
    let (code, text) = mine_text(d.path(), &["claude", "codex", "--apply", "CLAUDE.md"]);
    assert_eq!(code, 0);
    assert!(text.ends_with("CLAUDE.md already holds these 7 rules; nothing written\n"), "{text}");
    assert_eq!(std::fs::read_to_string(d.path().join("CLAUDE.md")).unwrap(), first);
    // --only picks by id; a new file is created with the heading and that one rule.
    let doc = mine_json(d.path(), &["claude", "codex"]);
    let id = doc["findings"][1]["id"].as_str().unwrap().to_string();
    let (code, text) =
        mine_text(d.path(), &["claude", "codex", "--apply", "AGENTS.md", "--only", &id]);
    assert_eq!(code, 0, "{text}");
    let agents = std::fs::read_to_string(d.path().join("AGENTS.md")).unwrap();
    assert_eq!(agents.matches("<!-- kit mine: ").count(), 1);
    assert!(agents.contains(&format!("<!-- kit mine: {id} -->\n")));
    let (code, text) = mine_text(d.path(), &["claude", "--apply", "AGENTS.md", "--only", "nope-1"]);
    assert_eq!(code, 2);
    assert!(text.contains("kit: error: --only: no finding `nope-1`"), "{text}");
}

#[test]
fn mine_writes_nothing_without_apply() {
    let d = sandbox();
    let before = std::fs::read_dir(d.path()).unwrap().count();
    let (code, text) = mine_text(d.path(), &["claude", "codex"]);
    assert_eq!(code, 0);
    // The suggested command names the same paths, so running it writes the rules (issue 22).
    assert!(text.contains("next: kit mine claude codex --apply CLAUDE.md"), "{text}");
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), before);
    assert!(!d.path().join("CLAUDE.md").exists());
    let (code, text) = mine_text(d.path(), &["claude", "codex", "--apply", "CLAUDE.md"]);
    assert_eq!(code, 0, "{text}");
    let written = std::fs::read_to_string(d.path().join("CLAUDE.md")).unwrap();
    assert!(written.contains("<!-- kit mine: "), "{written}");
}

#[test]
fn mine_skips_and_counts_damaged_lines() {
    let d = sandbox();
    let p = d.path().join("claude/projects/-home-dev-app").join(S2);
    let mut bytes = std::fs::read(&p).unwrap();
    bytes.splice(0..0, b"{\"type\":\"user\", broken\n\xff\xfe not utf-8\n".iter().copied());
    bytes.extend_from_slice(b"{\"type\":\"assistant\",\"message\":{\"id\":");
    std::fs::write(&p, bytes).unwrap();
    let doc = mine_json(d.path(), &["claude", "codex"]);
    assert_eq!(doc["skipped_lines"], 3);
    assert_eq!(doc["findings"].as_array().unwrap().len(), 7, "the rest is still read");
    // Lines moved down by two.
    assert_eq!(places(finding(&doc, "failing_command"))[1], format!("{S2}:5"));
    let (code, text) = mine_text(d.path(), &["claude", "codex"]);
    assert_eq!(code, 0);
    assert!(text.contains("damaged lines: 3 skipped"), "{text}");
    // A torn journal line is skipped and named.
    let r = crate::util::git_repo();
    std::fs::create_dir_all(r.path().join("longrun")).unwrap();
    let mut j = std::fs::read(fixtures().join("loop/longrun/journal.jsonl")).unwrap();
    j.extend_from_slice(b"{\"ts\":\"2026-12-02T03:50:00Z\",\"ev");
    std::fs::write(r.path().join("longrun/journal.jsonl"), j).unwrap();
    let (code, text) = mine_text(r.path(), &[d.path().join("below").to_str().unwrap()]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("damaged journal lines skipped: longrun/journal.jsonl (lines [14])"),
        "{text}"
    );
}

#[test]
fn mine_agent_reads_the_findings_and_its_words_are_proposals() {
    let d = sandbox();
    let (code, text) = mine_text(d.path(), &["claude", "codex", "--agent", "grep -c '\"rule\"'"]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.ends_with(
            "proposals from `grep -c '\"rule\"'` (an agent's wording: not written, not run; review them)\n  | 7\n"
        ),
        "{text}"
    );
    let (code, text) = mine_text(d.path(), &["claude", "--agent", "echo no model >&2; exit 3"]);
    assert_eq!(code, 2);
    assert!(
        text.contains("--agent `echo no model >&2; exit 3` exited with status 3: no model"),
        "{text}"
    );
    let (code, _) = mine_text(d.path(), &["claude", "--agent", "cat", "--apply", "CLAUDE.md"]);
    assert_eq!(code, 2, "--agent and --apply do not mix");
}

#[test]
fn mine_since_keeps_what_happened_after_the_date() {
    let d = sandbox();
    let doc = mine_json(d.path(), &["claude", "codex", "--since", "2026-09-02"]);
    assert_eq!(doc["sessions"], 2);
    let kinds: Vec<&str> =
        doc["findings"].as_array().unwrap().iter().map(|f| f["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["compaction_spiral", "failing_command", "test_edits"]);
}

#[test]
fn mine_apply_writes_through_a_link_and_refuses_a_binary_file() {
    let d = sandbox();
    std::fs::write(d.path().join("CLAUDE.md"), "# App\n").unwrap();
    std::os::unix::fs::symlink("CLAUDE.md", d.path().join("AGENTS.md")).unwrap();
    let (code, text) = mine_text(d.path(), &["claude", "codex", "--apply", "AGENTS.md"]);
    assert_eq!(code, 0, "{text}");
    assert!(std::fs::symlink_metadata(d.path().join("AGENTS.md"))
        .unwrap()
        .file_type()
        .is_symlink());
    let body = std::fs::read_to_string(d.path().join("CLAUDE.md")).unwrap();
    assert_eq!(body.matches("<!-- kit mine: ").count(), 7);
    // Through either name, the rules are there once.
    let (_, text) = mine_text(d.path(), &["claude", "codex", "--apply", "CLAUDE.md"]);
    assert!(text.ends_with("CLAUDE.md already holds these 7 rules; nothing written\n"), "{text}");
    std::fs::write(d.path().join("BIN.md"), b"# ok\nline two\n\xff\xfe\n").unwrap();
    let (code, text) = mine_text(d.path(), &["claude", "--apply", "BIN.md"]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("kit: error: BIN.md:3: not UTF-8 text"), "{text}");
    assert_eq!(std::fs::read(d.path().join("BIN.md")).unwrap(), b"# ok\nline two\n\xff\xfe\n");
}

#[test]
fn mine_never_opens_a_fifo_as_journal_or_instruction_file() {
    let d = sandbox();
    let mode = nix::sys::stat::Mode::from_bits_truncate(0o600);
    std::fs::create_dir_all(d.path().join("x/longrun")).unwrap();
    nix::unistd::mkfifo(&d.path().join("x/longrun/journal.jsonl"), mode).unwrap();
    nix::unistd::mkfifo(&d.path().join("PIPE.md"), mode).unwrap();
    let (code, text) = mine_text(d.path(), &["x/longrun/journal.jsonl"]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("not a regular file"), "{text}");
    let (code, text) = mine_text(d.path(), &["claude", "--apply", "PIPE.md"]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("kit: error: PIPE.md: not a regular file"), "{text}");
}
