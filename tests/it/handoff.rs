//! `kit handoff save` and `kit handoff verify` on real git repositories (DESIGN §11): a saved
//! handoff verifies; a later edit, a new commit, a hand-written or hand-edited stamp fail with
//! the reason; `--transcript`/`--session` prove the save happened in that session.

use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::json;

use crate::util::{fake_agent_bin, git_repo, kit, kit_bin};

fn git(dir: &Path, args: &[&str]) {
    let bins = kit::golden::Binaries { kit: kit_bin(), fake_agent: Some(fake_agent_bin()) };
    let o = Command::new("git")
        .args(args)
        .current_dir(dir)
        .envs(kit::golden::golden_env(dir, &bins))
        .output()
        .unwrap();
    assert!(o.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&o.stderr));
}

/// Commit everything in `dir` (git add -A; commit).
pub fn commit_all(dir: &Path) {
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "--allow-empty", "-m", "work"]);
}

/// Append to a transcript the Bash tool call `kit handoff save` and its result `output`, as
/// Claude Code writes them (formats §3.1–3.2).
pub fn append_save_call(transcript: &Path, output: &str) {
    append_bash_call(transcript, "kit handoff save", output);
}

/// Append to a transcript a Bash tool call running `command` and its result `output`.
pub fn append_bash_call(transcript: &Path, command: &str, output: &str) {
    let mut f = fs::OpenOptions::new().append(true).create(true).open(transcript).unwrap();
    let call = json!({"type": "assistant", "isSidechain": false, "timestamp": "2026-10-01T08:58:00Z",
        "message": {"model": "claude-opus-4-6", "id": "msg_save", "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_save1", "name": "Bash",
                         "input": {"command": command, "description": "Save the handoff"}}],
            "usage": {"input_tokens": 3, "cache_creation_input_tokens": 10, "cache_read_input_tokens": 1000, "output_tokens": 9}}});
    let result = json!({"type": "user", "isSidechain": false, "timestamp": "2026-10-01T08:58:01Z",
        "message": {"role": "user", "content": [{"tool_use_id": "toolu_save1", "type": "tool_result",
            "content": output.trim(), "is_error": false}]},
        "toolUseResult": {"stdout": output.trim(), "stderr": "", "interrupted": false, "isImage": false}});
    writeln!(f, "{call}\n{result}").unwrap();
}

fn run(dir: &Path, args: &[&str]) -> (i32, String) {
    let o = kit(dir).args(args).output().unwrap();
    let mut text = String::from_utf8_lossy(&o.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&o.stderr));
    (o.status.code().unwrap_or(-1), text)
}

fn save_with_stdin(dir: &Path, summary: &str) -> (i32, String) {
    let mut child = kit(dir)
        .args(["handoff", "save"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(summary.as_bytes()).unwrap();
    let o = child.wait_with_output().unwrap();
    let mut text = String::from_utf8_lossy(&o.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&o.stderr));
    (o.status.code().unwrap_or(-1), text)
}

/// A repository with longrun/ committed and one source file changed since the base commit.
fn repo() -> tempfile::TempDir {
    let d = git_repo();
    let root = d.path();
    assert_eq!(run(root, &["init"]).0, 0);
    fs::write(root.join("lib.py"), "def f():\n    return 1\n").unwrap();
    commit_all(root);
    fs::write(root.join("lib.py"), "def f():\n    return 2\n").unwrap();
    d
}

#[test]
fn saved_then_verified() {
    let d = repo();
    let (code, out) = save_with_stdin(d.path(), "Done: f returns 2.\nNext action: add the test.\n");
    assert_eq!(code, 0, "{out}");
    assert_eq!(out.lines().count(), 1, "one line: {out}");
    let id = kit::handoff::stamp_in_output(&out).expect("the line carries the stamp id");
    let text = fs::read_to_string(d.path().join("longrun/handoff.md")).unwrap();
    assert!(text
        .starts_with("Done: f returns 2.\nNext action: add the test.\n\n<!-- kit handoff stamp"));
    assert!(text.contains("\"lib.py\" = \""), "changed files are fingerprinted: {text}");
    assert!(text.contains("\"longrun/progress.md\" = \""), "{text}");
    assert!(!text.contains("journal.jsonl") && !text.contains("\"longrun/handoff.md\""), "{text}");
    assert!(text.contains("dirty = true"), "{text}");
    let (code, out) = run(d.path(), &["handoff", "verify"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.ends_with(&format!("handoff {id} verifies\n")), "{out}");
    let journal = fs::read_to_string(d.path().join("longrun/journal.jsonl")).unwrap();
    assert!(journal.contains("\"event\":\"handoff_saved\"") && journal.contains(&id), "{journal}");
    // Saving again with no stdin keeps the summary and gives the same id at the same time.
    let (code, again) = run(d.path(), &["handoff", "save"]);
    assert_eq!(code, 0, "{again}");
    assert_eq!(kit::handoff::stamp_in_output(&again).as_deref(), Some(id.as_str()));
}

#[test]
fn an_edit_after_the_save_is_named() {
    let d = repo();
    assert_eq!(save_with_stdin(d.path(), "Done: f.\n").0, 0);
    fs::write(d.path().join("lib.py"), "def f():\n    return 3\n").unwrap();
    fs::write(d.path().join("new.py"), "x = 1\n").unwrap();
    fs::write(d.path().join("longrun/progress.md"), "## Done\n- everything\n").unwrap();
    let (code, out) = run(d.path(), &["handoff", "verify"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("FAIL lib.py changed since the handoff"), "{out}");
    assert!(out.contains("FAIL longrun/progress.md changed since the handoff"), "{out}");
    assert!(out.contains("FAIL new.py is new or changed since the handoff"), "{out}");
    assert!(out.contains("does not verify (3 problem(s))"), "{out}");
}

#[test]
fn a_new_commit_is_reported() {
    let d = repo();
    assert_eq!(save_with_stdin(d.path(), "Done: f.\n").0, 0);
    commit_all(d.path());
    let (code, out) = run(d.path(), &["handoff", "verify"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("FAIL HEAD moved: 1 new commit(s) since the handoff"), "{out}");
}

#[test]
fn a_hand_written_handoff_is_rejected() {
    let d = repo();
    fs::write(d.path().join("longrun/handoff.md"), "All done, trust me.\n").unwrap();
    let (code, out) = run(d.path(), &["handoff", "verify"]);
    assert_eq!(code, 2);
    assert!(out.contains("longrun/handoff.md: no stamp block: this handoff was not written by `kit handoff save`"), "{out}");
    // A block typed (or edited) by hand: its id does not match its contents.
    assert_eq!(save_with_stdin(d.path(), "Done: f.\n").0, 0);
    let p = d.path().join("longrun/handoff.md");
    let text = fs::read_to_string(&p).unwrap();
    fs::write(&p, text.replace("Done: f.", "Done: f, g and h.")).unwrap();
    let (code, out) = run(d.path(), &["handoff", "verify"]);
    assert_eq!(code, 2);
    assert!(out.contains("does not match its block and summary"), "{out}");
    fs::write(&p, text.replace("dirty = true", "dirty = maybe")).unwrap();
    let (code, out) = run(d.path(), &["handoff", "verify"]);
    assert_eq!(code, 2);
    assert!(out.contains("longrun/handoff.md:9: stamp block:"), "{out}");
}

#[test]
fn the_transcript_proof_present_and_absent() {
    let d = repo();
    let (_, line) = save_with_stdin(d.path(), "Done: f.\n");
    let transcript =
        d.path().join(".home/.claude/projects/-r/0a0b0c0d-1111-4222-8333-444455556666.jsonl");
    fs::create_dir_all(transcript.parent().unwrap()).unwrap();
    fs::write(&transcript, "").unwrap();
    let t = transcript.to_str().unwrap();
    let (code, out) = run(d.path(), &["handoff", "verify", "--transcript", t]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("holds no tool call that ran `kit handoff save`"), "{out}");
    // A call whose result carries another stamp proves nothing.
    append_save_call(
        &transcript,
        "handoff saved: stamp 0123456789ab (commit 1234567, 1 files fingerprinted)",
    );
    assert_eq!(run(d.path(), &["handoff", "verify", "--transcript", t]).0, 2);
    append_save_call(&transcript, &line);
    let (code, out) = run(d.path(), &["handoff", "verify", "--transcript", t]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("runs `kit handoff save` (toolu_save1); its result on line"), "{out}");
    let (code, out) = run(d.path(), &["handoff", "verify", "--session", "0a0b0c0d"]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = run(d.path(), &["handoff", "verify", "--session", "ffff"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("no transcript of session `ffff`"), "{out}");
}

#[test]
fn save_needs_a_summary_and_a_longrun_folder() {
    let d = repo();
    let (code, out) = run(d.path(), &["handoff", "save"]);
    assert_eq!(code, 2);
    assert!(out.contains("holds no summary (only the template)"), "{out}");
    let bare = git_repo();
    let (code, out) = run(bare.path(), &["handoff", "save"]);
    assert_eq!(code, 2);
    assert!(out.contains("no longrun folder") && out.contains("next: kit init"), "{out}");
}

#[test]
fn runtime_files_under_longrun_never_break_the_verification() {
    // A repository whose .gitignore predates longrun/.hook/: the hook's state files appear and
    // change after the save, and must not count as edits.
    let d = repo();
    fs::write(d.path().join(".gitignore"), "").unwrap();
    assert_eq!(save_with_stdin(d.path(), "Done: f.\n").0, 0);
    fs::create_dir_all(d.path().join("longrun/.hook")).unwrap();
    fs::write(d.path().join("longrun/.hook/s.json"), "{}").unwrap();
    fs::write(d.path().join("longrun/PAUSE"), "").unwrap();
    let (code, out) = run(d.path(), &["handoff", "verify"]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn a_forged_save_call_proves_nothing() {
    // A command that only mentions `kit handoff save`, or output that only mentions the stamp,
    // is not the save: the proof needs the real invocation and the exact line it prints.
    let d = repo();
    let (_, line) = save_with_stdin(d.path(), "Done: f.\n");
    let id = kit::handoff::stamp_in_output(&line).unwrap();
    let transcript = d.path().join(".home/t.jsonl");
    fs::create_dir_all(transcript.parent().unwrap()).unwrap();
    let t = transcript.to_str().unwrap();
    append_bash_call(
        &transcript,
        &format!("echo kit handoff save stamp {id}"),
        &format!("kit handoff save stamp {id}"),
    );
    append_bash_call(&transcript, &format!("echo '{}'", line.trim()), line.trim());
    append_bash_call(&transcript, "kit handoff save", &format!("stamp {id}"));
    let (code, out) = run(d.path(), &["handoff", "verify", "--transcript", t]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("holds no tool call that ran `kit handoff save`"), "{out}");
    append_bash_call(&transcript, "cd . && A=1 kit handoff save", &line);
    let (code, out) = run(d.path(), &["handoff", "verify", "--transcript", t]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn text_after_the_stamp_block_is_named() {
    let d = repo();
    assert_eq!(save_with_stdin(d.path(), "Done: f.\n").0, 0);
    let path = d.path().join("longrun/handoff.md");
    let mut f = fs::OpenOptions::new().append(true).open(&path).unwrap();
    writeln!(f, "extra").unwrap();
    let (code, out) = run(d.path(), &["handoff", "verify"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("FAIL text after the stamp block (line"), "{out}");
    assert!(out.contains("`extra`"), "{out}");
    // Saving again takes the trailing text into the summary, and then it verifies.
    assert_eq!(run(d.path(), &["handoff", "save"]).0, 0);
    let (code, out) = run(d.path(), &["handoff", "verify"]);
    assert_eq!(code, 0, "{out}");
    assert!(fs::read_to_string(&path).unwrap().starts_with("Done: f.\n\nextra\n\n<!--"));
}
