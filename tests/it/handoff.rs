//! `kit handoff save` and `kit handoff verify` on real git repositories (DESIGN §11): a saved
//! handoff verifies; a later edit, a new commit, a hand-written or hand-edited stamp fail with
//! the reason; `--transcript`/`--session` prove the save happened in that session.

use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use kit_harness::longrun::event::name_of;
use serde_json::json;

use crate::util::{fake_agent_bin, git_repo, kit, kit_bin};

fn git(dir: &Path, args: &[&str]) {
    let bins = kit_course::golden::Binaries { kit: kit_bin(), fake_agent: Some(fake_agent_bin()) };
    let o = Command::new("git")
        .args(args)
        .current_dir(dir)
        .envs(kit_course::golden::golden_env(dir, &bins))
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
    append_tool_call(transcript, "Bash", command, output, false);
}

/// Append to a transcript a call of tool `name` running `command`, and its result `output`
/// (`is_error` as Claude Code marks a failed command).
pub fn append_tool_call(
    transcript: &Path,
    name: &str,
    command: &str,
    output: &str,
    is_error: bool,
) {
    let mut f = fs::OpenOptions::new().append(true).create(true).open(transcript).unwrap();
    // Claude Code gives every tool call its own id; the first call keeps `toolu_save1`.
    let n = fs::read_to_string(transcript).unwrap_or_default().lines().count() / 2 + 1;
    let tool_id = format!("toolu_save{n}");
    let call = json!({"type": "assistant", "isSidechain": false, "timestamp": "2026-10-01T08:58:00Z",
        "message": {"model": "claude-opus-4-6", "id": "msg_save", "role": "assistant",
            "content": [{"type": "tool_use", "id": tool_id, "name": name,
                         "input": {"command": command, "description": "Save the handoff"}}],
            "usage": {"input_tokens": 3, "cache_creation_input_tokens": 10, "cache_read_input_tokens": 1000, "output_tokens": 9}}});
    let result = json!({"type": "user", "isSidechain": false, "timestamp": "2026-10-01T08:58:01Z",
        "message": {"role": "user", "content": [{"tool_use_id": tool_id, "type": "tool_result",
            "content": output.trim(), "is_error": is_error}]},
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
    let id = kit_harness::handoff::stamp_in_output(&out).expect("the line carries the stamp id");
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
    let saved = |l: &&str| {
        serde_json::from_str::<serde_json::Value>(l).is_ok_and(|v| name_of(&v) == "handoff_saved")
    };
    assert!(journal.lines().any(|l| saved(&l) && l.contains(&id)), "{journal}");
    // Saving again with no stdin keeps the summary and gives the same id at the same time.
    let (code, again) = run(d.path(), &["handoff", "save"]);
    assert_eq!(code, 0, "{again}");
    assert_eq!(kit_harness::handoff::stamp_in_output(&again).as_deref(), Some(id.as_str()));
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
    assert!(
        out.contains("is not kit's keyed id of this block and summary: the summary was edited"),
        "{out}"
    );
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
    assert!(out.contains("runs `kit handoff save` (toolu_save2); its result on line"), "{out}");
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
    let id = kit_harness::handoff::stamp_in_output(&line).unwrap();
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
    // QA F2b: a command that prints the line without saving, a failed save, another tool.
    for forged in [
        format!("kit handoff save --help >/dev/null; echo '{}'", line.trim()),
        format!("kit handoff save --bogus 2>/dev/null; echo '{}'", line.trim()),
        "cd . && A=1 kit handoff save".to_string(),
        "printf 'Done.' | kit handoff save".to_string(),
    ] {
        append_bash_call(&transcript, &forged, &line);
    }
    append_tool_call(&transcript, "Bash", "kit handoff save", &line, true);
    append_tool_call(&transcript, "Task", "kit handoff save", &line, false);
    let (code, out) = run(d.path(), &["handoff", "verify", "--transcript", t]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("holds no tool call that ran `kit handoff save`"), "{out}");
    append_bash_call(&transcript, "kit handoff save <<'EOF'\nDone: f.\nEOF", &line);
    let (code, out) = run(d.path(), &["handoff", "verify", "--transcript", t]);
    assert_eq!(code, 0, "{out}");
}

/// The handoff key of the test sandbox `dir` (golden env: XDG_STATE_HOME in `.home/`).
fn key_path(dir: &Path) -> std::path::PathBuf {
    dir.join(".home/.local/state/kit/handoff.key")
}

#[test]
fn verify_never_prints_the_id_it_expects_and_says_what_differs() {
    // QA F2a: pasting the id verify printed made a hand-edited handoff verify.
    let d = repo();
    let (_, line) = save_with_stdin(d.path(), "Summary: v3\nNext action: Z\n");
    let id = kit_harness::handoff::stamp_in_output(&line).unwrap();
    let p = d.path().join("longrun/handoff.md");
    let saved = fs::read_to_string(&p).unwrap();
    fs::write(&p, saved.replace("Summary: v3", "Summary: v3 - all tests pass, ship it")).unwrap();
    let (code, out) = run(d.path(), &["handoff", "verify"]);
    assert_eq!(code, 2, "{out}");
    let ids: Vec<&str> =
        out.split(|c: char| !c.is_ascii_hexdigit()).filter(|w| w.len() == 12).collect();
    assert!(ids.iter().all(|w| *w == id), "no other 12-hex id may appear: {out}");
    // What the id should be under the key (known here only because the test reads the key).
    let key = kit_core::keys::load(&key_path(d.path())).unwrap().unwrap();
    let edited = fs::read_to_string(&p).unwrap();
    let h = kit_harness::handoff::parse(&p, &edited).unwrap();
    let right = h.stamp.as_ref().unwrap().compute_id(&key, &h.summary);
    assert!(!out.contains(&right), "{out}");
    assert!(
        out.contains(&format!("FAIL stamp id {id} is not kit's keyed id of this block and summary: the summary was edited after `kit handoff save`")),
        "{out}"
    );
    assert!(
        out.contains("its sha256 differs from the journal's): the summary was edited"),
        "{out}"
    );
    // A stamp id recomputed without the key (the unkeyed sha256 of format 1) does not verify.
    let unkeyed = {
        use sha2::{Digest, Sha256};
        let s = h.stamp.as_ref().unwrap();
        let mut m = format!(
            "kit-handoff/{}\n{}\n{}\n{}\n{}\n",
            s.format_version, s.time, s.commit, s.dirty, s.base_commit
        );
        for (f, v) in &s.files {
            m.push_str(&format!("{f}\0{v}\n"));
        }
        m.push_str(h.summary.trim());
        hex::encode(Sha256::digest(m.as_bytes()))[..12].to_string()
    };
    fs::write(&p, edited.replace(&id, &unkeyed)).unwrap();
    let (code, out) = run(d.path(), &["handoff", "verify"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("written by hand (no `kit handoff save` journaled this stamp)"), "{out}");
    assert!(out.contains(&format!("records no `kit handoff save` of stamp {unkeyed}")), "{out}");
    // Only the right keyed id passes, and then the journal still names the edited file.
    fs::write(&p, edited.replace(&id, &right)).unwrap();
    let (code, out) = run(d.path(), &["handoff", "verify"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("ok   stamp id is kit's keyed id"), "{out}");
    assert!(out.contains(&format!("records no `kit handoff save` of stamp {right}")), "{out}");
    // The untouched save verifies.
    fs::write(&p, &saved).unwrap();
    let (code, out) = run(d.path(), &["handoff", "verify"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("ok   the journal records this save (sha256 of handoff.md matches)"),
        "{out}"
    );
}

#[test]
fn the_key_is_private_and_another_users_key_fails_the_stamp() {
    use std::os::unix::fs::PermissionsExt;
    let d = repo();
    assert_eq!(save_with_stdin(d.path(), "Done: f.\n").0, 0);
    let key = key_path(d.path());
    assert_eq!(fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(kit_core::keys::load(&key).unwrap().unwrap().len(), 32);
    // The same handoff under another user's key (or none) does not verify.
    fs::write(&key, format!("{}\n", "ab".repeat(32))).unwrap();
    let (code, out) = run(d.path(), &["handoff", "verify"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("is not kit's keyed id of this block and summary: the stamp block was edited"),
        "{out}"
    );
    fs::remove_file(&key).unwrap();
    let (code, out) = run(d.path(), &["handoff", "verify"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("FAIL no handoff key at"), "{out}");
    assert!(!key.exists(), "verify never creates a key");
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

/// Each way an agent can make git look away from an edit made after the save (issue 22): verify
/// reads the files, not git's index view, so each one still fails, naming what changed.
#[test]
fn git_flags_and_excludes_set_after_the_save_hide_no_edit() {
    type Cheat = fn(&Path);
    let edit = |root: &Path| fs::write(root.join("other.py"), "y = 2  # edited\n").unwrap();
    let cases: [(&str, Cheat, &str); 7] = [
        (
            "assume-unchanged",
            |r| git(r, &["update-index", "--assume-unchanged", "other.py"]),
            "FAIL other.py is new or changed since the handoff",
        ),
        (
            "skip-worktree",
            |r| git(r, &["update-index", "--skip-worktree", "other.py"]),
            "FAIL other.py is new or changed since the handoff",
        ),
        (
            "core.ignoreStat",
            |r| {
                git(r, &["config", "core.ignoreStat", "true"]);
                git(r, &["rm", "-q", "--cached", "other.py"]);
                git(r, &["add", "other.py"]);
            },
            "FAIL other.py is new or changed since the handoff",
        ),
        (
            "core.fsmonitor",
            |r| {
                fs::write(r.join(".git/fsmonitor.sh"), "#!/bin/sh\nprintf 'token\\0'\n").unwrap();
                git(r, &["config", "core.fsmonitor", ".git/fsmonitor.sh"]);
                git(r, &["update-index", "--fsmonitor"]);
            },
            "FAIL other.py is new or changed since the handoff",
        ),
        (
            "info/exclude",
            |r| {
                let mut f =
                    fs::OpenOptions::new().append(true).open(r.join(".git/info/exclude")).unwrap();
                writeln!(f, "hidden.py").unwrap();
                fs::write(r.join("hidden.py"), "z = 3\n").unwrap();
            },
            "FAIL .git/info/exclude changed since the handoff",
        ),
        (
            ".gitignore",
            |r| {
                fs::write(r.join(".gitignore"), "hidden.py\n").unwrap();
                fs::write(r.join("hidden.py"), "z = 3\n").unwrap();
            },
            "FAIL .gitignore is new or changed since the handoff",
        ),
        (
            "a .gitignore that ignores itself",
            |r| {
                fs::create_dir_all(r.join("sub")).unwrap();
                fs::write(r.join("sub/.gitignore"), "*\n").unwrap();
                fs::write(r.join("sub/hidden.py"), "z = 3\n").unwrap();
            },
            "FAIL sub/.gitignore is new or changed since the handoff",
        ),
    ];
    for (name, cheat, want) in cases {
        let d = repo();
        let root = d.path();
        fs::write(root.join("other.py"), "y = 1\n").unwrap();
        git(root, &["add", "other.py"]);
        git(root, &["commit", "-q", "-m", "other"]);
        let (code, out) = save_with_stdin(root, "Done: f.\n");
        assert_eq!(code, 0, "{name}: {out}");
        assert_eq!(run(root, &["handoff", "verify"]).0, 0, "{name}: verifies before the cheat");
        cheat(root);
        if !name.contains("exclude") && !name.contains("gitignore") {
            edit(root);
        }
        let (code, out) = run(root, &["handoff", "verify"]);
        assert_eq!(code, 2, "{name}: {out}");
        assert!(out.contains(want), "{name}: {out}");
    }
}
