//! `kit hook claude`, `kit hook install` and `kit hook rehearse`, run as the real binary with the
//! event JSON on stdin, as Claude Code runs them (formats/claude-code.md §5).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use kit_harness::longrun::event::name_of;
use serde_json::{json, Value};

use crate::util::{git_repo, kit, save_handoff};

/// The compaction point the tests run at (the default: 200k − 20k − 13k).
const POINT: u64 = 167_000;

pub use crate::util::claude_samples as samples;

/// What one hook run printed.
pub struct Reply {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Reply {
    pub fn json(&self) -> Value {
        if self.stdout.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(self.stdout.trim())
                .unwrap_or_else(|e| panic!("{e}: {}", self.stdout))
        }
    }
    pub fn context_text(&self) -> String {
        self.json()["hookSpecificOutput"]["additionalContext"].as_str().unwrap_or("").to_string()
    }
}

/// Run `kit hook claude` in `dir` with `event` on stdin.
pub fn hook(dir: &Path, event: &Value) -> Reply {
    hook_raw(dir, event.to_string().as_bytes())
}

/// The hook's answer to a `Stop` of session `s` (not already continuing from a Stop block).
fn stop(dir: &Path, s: &Session) -> Reply {
    hook(dir, &s.event("Stop", json!({"stop_hook_active": false})))
}

fn hook_raw(dir: &Path, stdin: &[u8]) -> Reply {
    hook_env(dir, stdin, &[])
}

fn hook_env(dir: &Path, stdin: &[u8], vars: &[(&str, &str)]) -> Reply {
    let mut child = kit(dir)
        .args(["hook", "claude"])
        .env_remove("CLAUDE_CODE_AUTO_COMPACT_WINDOW")
        .env_remove("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE")
        .env_remove("CLAUDE_CODE_MAX_OUTPUT_TOKENS")
        .envs(vars.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let o = child.wait_with_output().unwrap();
    Reply {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// A transcript the tests append to, and the session's event builder.
pub struct Session {
    pub dir: PathBuf,
    pub transcript: PathBuf,
    pub id: String,
    calls: u32,
}

impl Session {
    pub fn new(dir: &Path) -> Session {
        let transcript =
            dir.join(".home/.claude/projects/-sandbox/5e55a000-0000-4000-8000-000000000001.jsonl");
        fs::create_dir_all(transcript.parent().unwrap()).unwrap();
        fs::write(&transcript, "").unwrap();
        Session {
            dir: dir.to_path_buf(),
            transcript,
            id: "5e55a000-0000-4000-8000-000000000001".into(),
            calls: 0,
        }
    }

    /// Append a main-chain API call whose context is `pct` % of the compaction point, at `ts`.
    pub fn call_at_pct(&mut self, pct: f64, ts: &str) -> u64 {
        let context = (POINT as f64 * pct / 100.0).round() as u64;
        self.call(context, ts);
        context
    }

    pub fn call(&mut self, context: u64, ts: &str) {
        self.calls += 1;
        let line = json!({
            "type": "assistant", "isSidechain": false, "sessionId": self.id, "timestamp": ts,
            "message": {"model": "claude-opus-4-6", "id": format!("msg_{}", self.calls), "role": "assistant",
                "content": [{"type": "text", "text": "ok"}],
                "usage": {"input_tokens": 3, "cache_creation_input_tokens": 1000, "cache_read_input_tokens": context - 1003,
                          "cache_creation": {"ephemeral_5m_input_tokens": 1000, "ephemeral_1h_input_tokens": 0}, "output_tokens": 50}}
        });
        self.append(&line);
    }

    pub fn append(&self, line: &Value) {
        let mut f = fs::OpenOptions::new().append(true).open(&self.transcript).unwrap();
        writeln!(f, "{line}").unwrap();
    }

    pub fn event(&self, name: &str, extra: Value) -> Value {
        let mut ev = json!({
            "session_id": self.id, "transcript_path": self.transcript, "cwd": self.dir,
            "hook_event_name": name, "permission_mode": "default"
        });
        ev.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        ev
    }

    pub fn tool(&self) -> Value {
        self.event("PostToolUse", json!({"tool_name": "Bash", "tool_input": {"command": "cargo test"}, "tool_response": {"stdout": "ok"}}))
    }
}

const NOW: &str = "2026-10-01T08:59:00Z";

fn project() -> tempfile::TempDir {
    let d = git_repo();
    let o = kit(d.path()).arg("init").output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    d
}

fn journal_actions(dir: &Path) -> Vec<String> {
    fs::read_to_string(dir.join("longrun/journal.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| name_of(v) == "hook")
        .map(|v| format!("{}@{}", v["action"].as_str().unwrap(), v["band"]))
        .collect()
}

#[test]
fn bands_fire_once_each_at_50_70_85_and_not_at_49() {
    let d = project();
    let mut s = Session::new(d.path());
    let mut fired = Vec::new();
    for pct in [30.0, 49.0, 49.9, 50.0, 55.0, 69.9, 70.0, 80.0, 85.0, 90.0, 95.0] {
        s.call_at_pct(pct, NOW);
        let r = hook(d.path(), &s.tool());
        assert_eq!(r.code, 0, "{}", r.stderr);
        let text = r.context_text();
        if !text.is_empty() {
            fired.push((pct, text));
        }
    }
    let at: Vec<f64> = fired.iter().map(|(p, _)| *p).collect();
    assert_eq!(at, vec![50.0, 70.0, 85.0]);
    assert!(
        fired[0].1.contains("longrun/progress.md") && fired[0].1.contains("Checkpoint"),
        "{}",
        fired[0].1
    );
    assert!(fired[1].1.contains("run `kit handoff save`"), "{}", fired[1].1);
    assert!(fired[2].1.contains("Wrap up"), "{}", fired[2].1);
    assert!(fired[0].1.contains("(83,500 of 167,000 tokens)"), "{}", fired[0].1);
    assert_eq!(journal_actions(d.path()), ["checkpoint@50", "handoff@70", "wrap_up@85"]);
    let j: Vec<Value> = fs::read_to_string(d.path().join("longrun/journal.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|v: &Value| name_of(v) == "hook")
        .collect();
    assert_eq!(j[0]["session"], s.id.as_str());
    assert_eq!(j[0]["context"], 83_500);
    assert_eq!(j[0]["pct"], 50.0);
    assert_eq!(j[0]["ts"], "2026-10-01T09:00:00Z");
}

#[test]
fn a_jump_past_several_bands_fires_only_the_highest() {
    let d = project();
    let mut s = Session::new(d.path());
    s.call_at_pct(88.0, NOW);
    let r = hook(d.path(), &s.event("UserPromptSubmit", json!({"prompt": "go"})));
    assert!(r.context_text().contains("Wrap up"), "{}", r.stdout);
    assert_eq!(r.json()["hookSpecificOutput"]["hookEventName"], "UserPromptSubmit");
    s.call_at_pct(89.0, NOW);
    assert_eq!(hook(d.path(), &s.tool()).stdout, "");
    assert_eq!(journal_actions(d.path()), ["wrap_up@85"]);
}

#[test]
fn bands_rearm_after_a_compact_boundary() {
    let d = project();
    let mut s = Session::new(d.path());
    s.call_at_pct(72.0, NOW);
    assert!(hook(d.path(), &s.tool()).context_text().contains("kit handoff save"));
    s.append(&json!({"type": "system", "subtype": "compact_boundary", "parentUuid": null,
        "timestamp": NOW, "compactMetadata": {"trigger": "auto", "preTokens": 168_000}}));
    let r = hook(d.path(), &s.tool());
    assert_eq!((r.code, r.stdout.as_str()), (0, ""));
    s.call_at_pct(30.0, NOW);
    assert_eq!(hook(d.path(), &s.tool()).stdout, "");
    s.call_at_pct(51.0, NOW);
    assert!(hook(d.path(), &s.tool()).context_text().contains("Checkpoint"));
    s.call_at_pct(70.5, NOW);
    assert!(hook(d.path(), &s.tool()).context_text().contains("kit handoff save"));
    assert_eq!(
        journal_actions(d.path()),
        ["handoff@70", "compaction@null", "checkpoint@50", "handoff@70"]
    );
}

#[test]
fn stop_is_blocked_once_and_never_with_stop_hook_active() {
    let d = project();
    let mut s = Session::new(d.path());
    s.call_at_pct(60.0, NOW);
    let r = stop(d.path(), &s);
    assert_eq!(r.stdout, "", "below the wrap-up band a Stop passes");
    s.call_at_pct(86.0, NOW);
    let active = hook(d.path(), &s.event("Stop", json!({"stop_hook_active": true})));
    assert_eq!((active.code, active.stdout.as_str()), (0, ""), "never block with stop_hook_active");
    let r = stop(d.path(), &s);
    assert_eq!(r.code, 0);
    let v = r.json();
    assert_eq!(v["decision"], "block");
    assert!(v["reason"].as_str().unwrap().contains("no handoff was proven saved"), "{v}");
    let again = stop(d.path(), &s);
    assert_eq!(again.stdout, "", "blocked once, not twice");
}

#[test]
fn stop_passes_when_the_session_ran_kit_handoff_save() {
    let d = project();
    let root = d.path();
    let line = save_handoff(root, "Done: all. Next action: stop.\n");
    let mut s = Session::new(root);
    s.call_at_pct(87.0, NOW);
    let post = s.event(
        "PostToolUse",
        json!({"tool_name": "Bash", "tool_input": {"command": "kit handoff save"},
               "tool_response": {"stdout": line, "stderr": ""}}),
    );
    assert_eq!(hook(root, &post).code, 0);
    let r = stop(root, &s);
    assert_eq!(r.stdout, "", "the handoff was proven saved in this session");
    assert!(journal_actions(root).contains(&"handoff_seen@null".to_string()));
    assert!(journal_actions(root).contains(&"stop_allowed@85".to_string()));
}

#[test]
fn stop_passes_when_the_transcript_proves_the_save() {
    let d = project();
    let root = d.path();
    let line = save_handoff(root, "Done: all.\n");
    let mut s = Session::new(root);
    crate::handoff::append_save_call(&s.transcript, &line);
    s.call_at_pct(90.0, NOW);
    let r = stop(root, &s);
    assert_eq!(r.stdout, "", "proof found in the transcript: {}", r.stdout);
    // A hand-edited stamp no longer matches what the session printed: blocked.
    let text = fs::read_to_string(root.join("longrun/handoff.md")).unwrap();
    let id = kit_harness::handoff::stamp_in_output(&line).unwrap();
    fs::write(root.join("longrun/handoff.md"), text.replace(&id, "0123456789ab")).unwrap();
    let d2 = project();
    let mut s2 = Session::new(d2.path());
    fs::write(
        d2.path().join("longrun/handoff.md"),
        fs::read_to_string(root.join("longrun/handoff.md")).unwrap(),
    )
    .unwrap();
    crate::handoff::append_save_call(&s2.transcript, &line);
    s2.call_at_pct(90.0, NOW);
    let r = stop(d2.path(), &s2);
    assert_eq!(r.json()["decision"], "block");
}

#[test]
fn precompact_is_never_blocked() {
    let d = project();
    let mut s = Session::new(d.path());
    s.call_at_pct(99.0, NOW);
    for trigger in ["auto", "manual"] {
        let r = hook(
            d.path(),
            &s.event("PreCompact", json!({"trigger": trigger, "custom_instructions": ""})),
        );
        assert_eq!((r.code, r.stdout.as_str()), (0, ""));
    }
    assert_eq!(journal_actions(d.path()), ["compaction@null", "compaction@null"]);
}

#[test]
fn session_start_after_compaction_injects_the_handoff() {
    let d = project();
    let root = d.path();
    save_handoff(root, "Parser done, tests green.\n\n## Next action\nWire the CLI flag.\n");
    let s = Session::new(root);
    for source in ["compact", "resume"] {
        let r = hook(root, &s.event("SessionStart", json!({"source": source})));
        let v = r.json();
        assert_eq!(v["hookSpecificOutput"]["hookEventName"], "SessionStart");
        let text = v["hookSpecificOutput"]["additionalContext"].as_str().unwrap();
        assert!(text.contains("Parser done, tests green."), "{text}");
        assert_eq!(text.matches("Wire the CLI flag.").count(), 1, "said once (QA F10): {text}");
        assert!(text.contains("stamp "), "{text}");
    }
    let r = hook(root, &s.event("SessionStart", json!({"source": "startup"})));
    assert_eq!(r.stdout, "");
}

#[test]
fn a_prompt_after_an_idle_gap_warns_with_both_costs() {
    let d = project();
    let mut s = Session::new(d.path());
    s.call(150_000, "2026-10-01T07:00:00Z");
    let r = hook(d.path(), &s.event("UserPromptSubmit", json!({"prompt": "back"})));
    let msg = r.json()["systemMessage"].as_str().unwrap_or_default().to_string();
    assert!(msg.contains("idle 2h00m, longer than the 5m cache TTL"), "{msg}");
    assert!(msg.contains("$0.9375") && msg.contains("$0.1563"), "{msg}");
    // Within the TTL: no warning.
    s.call(150_000, "2026-10-01T08:57:00Z");
    let r = hook(d.path(), &s.event("UserPromptSubmit", json!({"prompt": "more"})));
    assert_eq!(r.stdout, "");
}

#[test]
fn a_long_idle_gap_reads_in_days_and_openai_models_write_no_cache() {
    // Idle 3 days 4 hours (the golden clock is 2026-10-01T09:00:00Z) on an OpenAI model, which
    // bills no cache writes: the warning speaks of uncached input, in days.
    let d = project();
    let s = Session::new(d.path());
    s.append(&json!({
        "type": "assistant", "isSidechain": false, "sessionId": s.id, "timestamp": "2026-09-28T05:00:00Z",
        "message": {"model": "gpt-5-codex", "id": "msg_gpt", "role": "assistant",
            "content": [{"type": "text", "text": "ok"}],
            "usage": {"input_tokens": 2000, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 148_000,
                      "output_tokens": 50}}
    }));
    let r = hook(d.path(), &s.event("UserPromptSubmit", json!({"prompt": "back"})));
    let msg = r.json()["systemMessage"].as_str().unwrap_or_default().to_string();
    assert!(msg.contains("idle 3d 4h, longer than the 5m cache TTL"), "{msg}");
    assert!(msg.contains("sends 150,000 tokens of context again as uncached input"), "{msg}");
    // 150,000 and 25,000 tokens at gpt-5-codex's $1.25/M input.
    assert!(msg.contains("$0.1875") && msg.contains("$0.0313"), "{msg}");
    assert!(!msg.contains("write"), "{msg}");
    let j = fs::read_to_string(d.path().join("longrun/journal.jsonl")).unwrap();
    assert!(j.contains("\"why\":\"idle 3d 4h > 5m TTL\""), "{j}");
}

#[test]
fn the_hook_reads_real_transcripts() {
    // spotter 4d5611e5 L641–L801: 164,831 tokens right before its automatic compaction.
    let src = fs::read_to_string(
        samples().join("spotter_4d5611e5-241a-462a-8d15-5122611a9569.L641-L801.excerpt.jsonl"),
    )
    .unwrap();
    let lines: Vec<&str> = src.lines().collect();
    let boundary = lines.iter().position(|l| l.contains("\"compact_boundary\"")).unwrap();
    let d = project();
    let s = Session::new(d.path());
    fs::write(&s.transcript, lines[..boundary].join("\n") + "\n").unwrap();
    let r = hook(d.path(), &s.tool());
    assert!(r.context_text().contains("(164,831 of 167,000 tokens)"), "{}", r.stdout);
    // The whole excerpt: the last call after the compaction is back near 41k (24 %).
    fs::write(&s.transcript, &src).unwrap();
    let r = hook(d.path(), &s.tool());
    assert_eq!(r.stdout, "");
    let j = fs::read_to_string(d.path().join("longrun/journal.jsonl")).unwrap();
    assert!(j.contains("\"context\":164831"), "{j}");
    // Without longrun/ the hook only measures (a note for the debug log, no decision).
    let bare = tempfile::tempdir().unwrap();
    fs::create_dir(bare.path().join(".git")).unwrap();
    let s = Session::new(bare.path());
    fs::write(&s.transcript, lines[..boundary].join("\n") + "\n").unwrap();
    let r = hook(bare.path(), &s.tool());
    assert_eq!((r.code, r.stdout.as_str()), (0, ""));
    assert!(
        r.stderr.contains("context 164,831 tokens, 98.7% of the compaction point"),
        "{}",
        r.stderr
    );
    assert!(!bare.path().join("longrun").exists());
}

#[test]
fn bad_input_exits_0_with_one_note_and_never_blocks() {
    let d = project();
    let s = Session::new(d.path());
    let missing = json!({"session_id": "x", "transcript_path": d.path().join("nope.jsonl"),
        "cwd": d.path(), "hook_event_name": "Stop", "stop_hook_active": false});
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("malformed", b"{\"hook_event_name\": \"Stop\"".to_vec(), "stdin is not hook event JSON"),
        ("not json", b"hello".to_vec(), "stdin is not hook event JSON"),
        ("empty stdin", b"".to_vec(), "stdin is not hook event JSON"),
        ("missing transcript", missing.to_string().into_bytes(), "not found"),
        (
            "empty transcript",
            s.event("Stop", json!({})).to_string().into_bytes(),
            "has no API call with usage yet",
        ),
    ];
    for (what, stdin, note) in cases {
        let r = hook_raw(d.path(), &stdin);
        assert_eq!(r.code, 0, "{what}");
        assert_eq!(r.stdout, "", "{what}: never a decision");
        assert_eq!(r.stderr.lines().count(), 1, "{what}: {}", r.stderr);
        assert!(
            r.stderr.starts_with("kit hook: ") && r.stderr.contains(note),
            "{what}: {}",
            r.stderr
        );
    }
}

#[test]
fn install_and_uninstall_round_trip_keeps_other_hooks() {
    let d = git_repo();
    let root = d.path();
    let settings = root.join(".claude/settings.json");
    fs::create_dir_all(settings.parent().unwrap()).unwrap();
    let original = json!({
        "permissions": {"allow": ["Bash(cargo test)"]},
        "hooks": {
            "Stop": [{"hooks": [{"type": "command", "command": "~/bin/notify-done"}]}],
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./check.sh", "timeout": 5}]}]
        }
    });
    fs::write(&settings, serde_json::to_string_pretty(&original).unwrap()).unwrap();
    let dry = kit(root).args(["hook", "install", "--dry-run"]).output().unwrap();
    assert!(dry.status.success());
    let shown = String::from_utf8_lossy(&dry.stdout);
    // A unified diff: only additions, five of them kit's command.
    assert!(shown.starts_with("--- ") && shown.contains("\n+++ "), "{shown}");
    assert!(!shown.lines().any(|l| l.starts_with('-') && !l.starts_with("---")), "{shown}");
    let added: Vec<&str> = shown.lines().filter(|l| l.contains("\"kit hook claude\"")).collect();
    assert_eq!(added.len(), 5, "{shown}");
    assert!(added.iter().all(|l| l.starts_with('+')), "{shown}");
    assert_eq!(
        serde_json::from_str::<Value>(&fs::read_to_string(&settings).unwrap()).unwrap(),
        original,
        "dry run writes nothing"
    );

    let o = kit(root).args(["hook", "install"]).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{out}");
    assert!(out.contains("settings.json.kit-backup-20261001T090000Z"), "{out}");
    assert!(root.join(".claude/settings.json.kit-backup-20261001T090000Z").is_file());
    let installed: Value = serde_json::from_str(&fs::read_to_string(&settings).unwrap()).unwrap();
    for ev in ["UserPromptSubmit", "PostToolUse", "Stop", "PreCompact", "SessionStart"] {
        let cmds: Vec<&str> = installed["hooks"][ev]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|g| g["hooks"].as_array().unwrap())
            .filter_map(|h| h["command"].as_str())
            .collect();
        assert_eq!(cmds.iter().filter(|c| **c == "kit hook claude").count(), 1, "{ev}: {cmds:?}");
    }
    assert_eq!(installed["permissions"], original["permissions"]);
    assert_eq!(installed["hooks"]["PreToolUse"], original["hooks"]["PreToolUse"]);

    let text = fs::read_to_string(&settings).unwrap();
    let again = kit(root).args(["hook", "install"]).output().unwrap();
    assert!(String::from_utf8_lossy(&again.stdout).contains("nothing changed"));
    assert_eq!(fs::read_to_string(&settings).unwrap(), text);

    let first_bytes =
        fs::read(root.join(".claude/settings.json.kit-backup-20261001T090000Z")).unwrap();
    let un = kit(root).args(["hook", "install", "--uninstall"]).output().unwrap();
    assert!(un.status.success());
    let back: Value = serde_json::from_str(&fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(back, original);
    // The uninstall's backup, made in the same (fake) second, does not overwrite the first: the
    // user's original file is still there byte for byte.
    let un_out = String::from_utf8_lossy(&un.stdout);
    assert!(un_out.contains("settings.json.kit-backup-20261001T090000Z.1"), "{un_out}");
    assert_eq!(
        fs::read(root.join(".claude/settings.json.kit-backup-20261001T090000Z")).unwrap(),
        first_bytes
    );
    assert_eq!(
        fs::read(root.join(".claude/settings.json.kit-backup-20261001T090000Z.1")).unwrap(),
        text.as_bytes()
    );
}

#[test]
fn install_keeps_key_order_mode_and_links() {
    use std::os::unix::fs::{symlink, PermissionsExt};
    let d = git_repo();
    let root = d.path();
    // Keys out of alphabetical order, a duplicate-free nested object, 2-space indentation.
    let text = "{\n  \"permissions\": {\n    \"deny\": [],\n    \"allow\": [\n      \"Bash(ls)\"\n    ]\n  },\n  \"model\": \"opus\",\n  \"cleanupPeriodDays\": 30\n}\n";
    let real = root.join("dotfiles/settings.json");
    fs::create_dir_all(real.parent().unwrap()).unwrap();
    fs::write(&real, text).unwrap();
    fs::set_permissions(&real, fs::Permissions::from_mode(0o640)).unwrap();
    fs::create_dir_all(root.join(".claude")).unwrap();
    let link = root.join(".claude/settings.json");
    symlink(&real, &link).unwrap();

    let o = kit(root).args(["hook", "install"]).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.contains("the link kept"), "{out}");
    assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert_eq!(fs::metadata(&real).unwrap().permissions().mode() & 0o777, 0o640);
    let now = fs::read_to_string(&real).unwrap();
    let at = |k: &str| now.find(&format!("\n  \"{k}\"")).unwrap_or_else(|| panic!("{k}: {now}"));
    assert!(at("permissions") < at("model") && at("model") < at("cleanupPeriodDays"));
    assert!(at("cleanupPeriodDays") < at("hooks"), "kit's key comes last: {now}");
    assert!(now.find("\"deny\"").unwrap() < now.find("\"allow\"").unwrap());

    let o = kit(root).args(["hook", "install", "--uninstall"]).output().unwrap();
    assert!(o.status.success());
    assert_eq!(fs::read_to_string(&real).unwrap(), text, "uninstall gives back the same bytes");
    assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());

    // A link to a file that does not exist yet: the file is created where the link points.
    fs::remove_file(&link).unwrap();
    symlink("../elsewhere/new.json", &link).unwrap();
    let o = kit(root).args(["hook", "install"]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    let v: Value =
        serde_json::from_str(&fs::read_to_string(root.join("elsewhere/new.json")).unwrap())
            .unwrap();
    assert_eq!(v["hooks"]["Stop"][0]["hooks"][0]["command"], "kit hook claude");
}

#[test]
fn install_leaves_invalid_json_untouched_and_names_line_and_column() {
    let d = git_repo();
    let settings = d.path().join(".claude/settings.json");
    fs::create_dir_all(settings.parent().unwrap()).unwrap();
    let broken = "{\n  \"model\": \"opus\",\n  \"hooks\": {,}\n}\n";
    fs::write(&settings, broken).unwrap();
    let o = kit(d.path()).args(["hook", "install"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(".claude/settings.json:3:13: not valid JSON"), "{err}");
    assert_eq!(fs::read_to_string(&settings).unwrap(), broken);
    assert_eq!(
        fs::read_dir(settings.parent().unwrap()).unwrap().count(),
        1,
        "no backup, no temp file"
    );
}

#[test]
fn install_user_honours_claude_config_dir() {
    let d = git_repo();
    let cfg = d.path().join("elsewhere");
    let o = kit(d.path())
        .env("CLAUDE_CONFIG_DIR", &cfg)
        .args(["hook", "install", "--user"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value =
        serde_json::from_str(&fs::read_to_string(cfg.join("settings.json")).unwrap()).unwrap();
    assert_eq!(v["hooks"]["PreCompact"][0]["matcher"], "manual|auto");
    assert!(!d.path().join(".claude").exists());
}

#[test]
fn install_refuses_events_that_are_not_arrays_and_writes_nothing() {
    // Hand-edited: Stop is a bare matcher group, PostToolUse a string. Installing the other three
    // events and saying "installed" would leave the session without the 85 % Stop block.
    let d = git_repo();
    let dir = d.path().join(".claude");
    let settings = dir.join("settings.json");
    fs::create_dir_all(&dir).unwrap();
    let text = r#"{"hooks": {"Stop": {"matcher": "x", "hooks": [{"type": "command", "command": "my-stop.sh"}]}, "PostToolUse": "oops"}}"#;
    fs::write(&settings, text).unwrap();
    for args in [&["hook", "install"][..], &["hook", "install", "--dry-run"]] {
        let o = kit(d.path()).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(String::from_utf8_lossy(&o.stdout), "", "{args:?}: no success line");
        assert!(
            err.contains(".claude/settings.json: `hooks.PostToolUse` is a string, `hooks.Stop` is an object; Claude Code wants an array of matcher groups"),
            "{args:?}: {err}"
        );
        assert!(err.contains("\n  next: wrap each value in [ ] or remove the key in "), "{err}");
        assert_eq!(fs::read_to_string(&settings).unwrap(), text, "{args:?}: untouched");
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1, "{args:?}: no backup, no temp file");
    }
    // `hooks` itself not an object: refused too, not replaced by kit's.
    fs::write(&settings, r#"{"hooks": ["my-stop.sh"]}"#).unwrap();
    let o = kit(d.path()).args(["hook", "install"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("`hooks` is an array;"));
    assert_eq!(fs::read_to_string(&settings).unwrap(), r#"{"hooks": ["my-stop.sh"]}"#);
    // Fixed by hand as the hint says, the install goes through.
    fs::write(&settings, r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "my-stop.sh"}]}], "PostToolUse": []}}"#).unwrap();
    let o = kit(d.path()).args(["hook", "install"]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_str(&fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(v["hooks"]["Stop"][0]["hooks"][0]["command"], "my-stop.sh");
    assert_eq!(v["hooks"]["Stop"][1]["hooks"][0]["command"], "kit hook claude");
    assert_eq!(v["hooks"]["PostToolUse"][0]["hooks"][0]["command"], "kit hook claude");
}

#[test]
fn without_home_user_paths_are_refused_not_made_relative() {
    // HOME unset (or relative) and no CLAUDE_CONFIG_DIR: never the project's .claude/ instead.
    let d = git_repo();
    assert!(kit(d.path()).arg("init").output().unwrap().status.success());
    let mut save = kit(d.path())
        .args(["handoff", "save"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    save.stdin.take().unwrap().write_all(b"Done: nothing yet.\n").unwrap();
    assert!(save.wait_with_output().unwrap().status.success());
    let cases: [(&str, Option<&str>, &[&str], &str); 4] = [
        ("unset", None, &["hook", "install", "--user"], "HOME is not set"),
        (
            "relative",
            Some("home"),
            &["hook", "install", "--user"],
            "HOME (home) is not an absolute path",
        ),
        ("unset", None, &["cache", "--session", "abc"], "HOME is not set"),
        ("unset", None, &["handoff", "verify", "--session", "abc"], "HOME is not set"),
    ];
    for (what, home, args, want) in cases {
        let mut c = kit(d.path());
        c.env_remove("HOME").env_remove("CLAUDE_CONFIG_DIR").args(args);
        if let Some(h) = home {
            c.env("HOME", h);
        }
        let o = c.output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{what} {args:?}: {err}");
        assert!(err.contains(&format!("kit: error: {want}")), "{what} {args:?}: {err}");
        assert!(err.contains("\n  next: set HOME"), "{what} {args:?}: {err}");
        assert!(!d.path().join(".claude").exists(), "{what} {args:?}: nothing written here");
        assert!(!d.path().join("home").exists(), "{what} {args:?}");
    }
}

#[test]
fn rehearse_drives_the_bands_and_the_stop_block() {
    let d = tempfile::tempdir().unwrap();
    let o = kit(d.path()).args(["hook", "rehearse"]).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}{}", String::from_utf8_lossy(&o.stderr));
    for want in [
        "checkpoint (50%)",
        "handoff (70%)",
        "wrap_up (85%)",
        "stop_blocked (85%)",
        "stop_allowed (85%)",
        "compaction: auto",
    ] {
        assert!(out.contains(want), "{want}: {out}");
    }
    assert!(
        fs::read_dir(d.path()).unwrap().all(|e| e.unwrap().file_name() == ".home"),
        "rehearse leaves nothing behind"
    );
}

#[test]
fn the_compaction_point_follows_the_environment_then_the_config() {
    let d = project();
    let mut s = Session::new(d.path());
    s.call(46_000, NOW);
    let ev = s.tool().to_string();
    let r = hook_env(d.path(), ev.as_bytes(), &[("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE", "50")]);
    assert!(r.context_text().contains("(46,000 of 90,000 tokens)"), "{}", r.stdout);
    let d = project();
    let cfg = d.path().join("longrun/config.toml");
    let text = fs::read_to_string(&cfg).unwrap();
    fs::write(&cfg, text.replace("compaction_point = 0", "compaction_point = 80000")).unwrap();
    let mut s = Session::new(d.path());
    s.call(41_000, NOW);
    let ev = s.tool().to_string();
    let r = hook_env(d.path(), ev.as_bytes(), &[("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE", "50")]);
    assert!(r.context_text().contains("(41,000 of 80,000 tokens)"), "config wins: {}", r.stdout);
}

#[test]
fn stop_blocks_a_proven_but_out_of_date_handoff() {
    // Saved and proven in this session, then a new commit and an edit: the Stop applies the
    // checks of `kit handoff verify` too, so the stale handoff counts as not saved.
    let d = project();
    let root = d.path();
    let line = save_handoff(root, "Done: all. Next action: stop.\n");
    let mut s = Session::new(root);
    crate::handoff::append_save_call(&s.transcript, &line);
    fs::write(root.join("work.txt"), "more\n").unwrap();
    crate::handoff::commit_all(root);
    fs::write(root.join("work.txt"), "edited\n").unwrap();
    s.call_at_pct(90.0, NOW);
    let r = stop(root, &s);
    let v = r.json();
    assert_eq!(v["decision"], "block", "{}", r.stdout);
    let reason = v["reason"].as_str().unwrap();
    assert!(reason.contains("out of date") && reason.contains("HEAD moved"), "{reason}");
    assert!(reason.contains("Run `kit handoff save` again"), "{reason}");
    let again = stop(root, &s);
    assert_eq!(again.stdout, "", "blocked once, not twice");
}

#[test]
fn a_forged_save_call_does_not_let_the_stop_through() {
    let d = project();
    let root = d.path();
    let id = kit_harness::handoff::stamp_in_output(&save_handoff(root, "Done: all.\n")).unwrap();
    let mut s = Session::new(root);
    let forged = format!("echo kit handoff save stamp {id}");
    crate::handoff::append_bash_call(
        &s.transcript,
        &forged,
        &format!("kit handoff save stamp {id}"),
    );
    s.call_at_pct(90.0, NOW);
    let post = s.event(
        "PostToolUse",
        json!({"tool_name": "Bash", "tool_input": {"command": forged},
               "tool_response": {"stdout": format!("kit handoff save stamp {id}"), "stderr": ""}}),
    );
    assert_eq!(hook(root, &post).code, 0);
    assert!(!journal_actions(root).contains(&"handoff_seen@null".to_string()));
    let r = stop(root, &s);
    assert_eq!(r.json()["decision"], "block", "{}", r.stdout);
}

#[test]
fn a_fifo_as_transcript_is_refused_not_waited_on() {
    let d = project();
    let s = Session::new(d.path());
    let fifo = d.path().join(".home/fifo.jsonl");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let mut ev = s.event("Stop", json!({"stop_hook_active": false}));
    ev["transcript_path"] = json!(fifo);
    let r = hook(d.path(), &ev);
    assert_eq!((r.code, r.stdout.as_str()), (0, ""));
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(r.stderr.contains("not a regular file"), "{}", r.stderr);
}

#[test]
fn session_start_says_none_given_instead_of_the_template_placeholder() {
    // progress.md is still kit init's template; the summary names no next action.
    let d = project();
    let root = d.path();
    save_handoff(root, "Parser done.\n");
    let s = Session::new(root);
    let text = hook(root, &s.event("SessionStart", json!({"source": "compact"}))).context_text();
    assert!(text.contains("Next action: none given"), "{text}");
    assert!(!text.contains("(The one concrete step"), "{text}");
}

/// An assistant line of `model` with `context` tokens, holding a `tool_use` block `tool_id`.
fn model_call(s: &Session, model: &str, context: u64, tool_id: &str) {
    s.append(&json!({
        "type": "assistant", "isSidechain": false, "sessionId": s.id, "timestamp": NOW,
        "message": {"model": model, "id": format!("msg_{tool_id}"), "role": "assistant",
            "content": [{"type": "tool_use", "id": tool_id, "name": "Read", "input": {"file_path": "/r/README.md"}}],
            "usage": {"input_tokens": 3, "cache_creation_input_tokens": 1000, "cache_read_input_tokens": context - 1003, "output_tokens": 50}}
    }));
}

fn read_event(s: &Session, tool_id: &str) -> Value {
    s.event(
        "PostToolUse",
        json!({"tool_name": "Read", "tool_input": {"file_path": "/r/README.md"},
        "tool_response": {"type": "text"}, "tool_use_id": tool_id, "duration_ms": 3}),
    )
}

#[test]
fn the_hook_waits_for_the_flush_of_a_quick_tools_call() {
    // Claude Code flushes its transcript every 100 ms: the PostToolUse of a quick Read can come
    // before the line holding its tool_use. Here the line is appended by a thread ~150 ms after
    // the hook starts; the hook must wait for it (bound raised so a loaded machine cannot make
    // the line miss it: the hook answers as soon as the line is there, not at the bound).
    let d = project();
    let s = Session::new(d.path());
    model_call(&s, "claude-opus-4-6", 50_000, "toolu_early");
    let ev = read_event(&s, "toolu_quick").to_string();
    let mut child = kit(d.path())
        .args(["hook", "claude"])
        .env_remove("KIT_FAKE_CLOCK")
        .env("KIT_HOOK_FLUSH_WAIT_MS", "30000")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(ev.as_bytes()).unwrap();
    let t = std::thread::spawn({
        let (dir, transcript, id) = (s.dir.clone(), s.transcript.clone(), s.id.clone());
        move || {
            std::thread::sleep(std::time::Duration::from_millis(150));
            let s = Session { dir, transcript, id, calls: 0 };
            model_call(&s, "claude-opus-4-6", 87_000, "toolu_quick"); // 52 % of 167,000
        }
    });
    let o = child.wait_with_output().unwrap();
    t.join().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("(87,000 of 167,000 tokens)") && out.contains("Checkpoint"), "{out}");
    assert_eq!(journal_actions(d.path()), ["checkpoint@50"]);

    // A call that never shows up: after the bound (virtual under the fake clock) the hook
    // measures what is there and journals that it was late.
    let r = hook(d.path(), &read_event(&s, "toolu_never"));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(journal_actions(d.path()), ["checkpoint@50", "transcript_late@null"]);
    // A Stop waits for its last assistant message the same way.
    let stop = s.event(
        "Stop",
        json!({"stop_hook_active": false, "last_assistant_message": "no such text"}),
    );
    hook(d.path(), &stop);
    assert_eq!(journal_actions(d.path()).last().unwrap(), "transcript_late@null");
}

#[test]
fn a_1m_window_session_at_150k_gets_no_wrap_up() {
    let d = project();
    let s = Session::new(d.path());
    // The default model, bare in the transcript: Opus 4.8 always runs at 1M.
    model_call(&s, "claude-opus-4-8", 150_000, "toolu_a");
    let r = hook(d.path(), &read_event(&s, "toolu_a"));
    assert_eq!(r.stdout.trim(), "", "{}", r.stdout);
    // claude-opus-4-6 at 150k is a wrap-up on its 200k window — unless SessionStart named it
    // with the [1m] suffix, which the hook remembers for the session.
    let d = project();
    let s = Session::new(d.path());
    let start =
        s.event("SessionStart", json!({"source": "compact", "model": "claude-opus-4-6[1m]"}));
    hook(d.path(), &start);
    model_call(&s, "claude-opus-4-6", 150_000, "toolu_b");
    let r = hook(d.path(), &read_event(&s, "toolu_b"));
    assert_eq!(r.stdout.trim(), "", "{}", r.stdout);
    let st = fs::read_to_string(d.path().join(format!("longrun/.hook/{}.json", s.id))).unwrap();
    assert!(
        st.contains("\"model\":\"claude-opus-4-6[1m]\"") && st.contains("\"tokens\":1000000"),
        "{st}"
    );
    let stop = s.event("Stop", json!({"stop_hook_active": false}));
    assert_eq!(hook(d.path(), &stop).stdout.trim(), "");
    // Without the suffix the same context wraps up.
    let d = project();
    let s = Session::new(d.path());
    model_call(&s, "claude-opus-4-6", 150_000, "toolu_c");
    let r = hook(d.path(), &read_event(&s, "toolu_c"));
    assert!(
        r.context_text().contains("Wrap up") && r.context_text().contains("of 167,000 tokens"),
        "{}",
        r.stdout
    );
}

#[test]
fn a_model_without_a_proactive_point_is_measured_against_its_window() {
    // claude-sonnet-4-5 compacts only when the API refuses the prompt, near 200k: 150k is 75 %.
    let d = project();
    let s = Session::new(d.path());
    model_call(&s, "claude-sonnet-4-5-20250929", 150_000, "toolu_r");
    let r = hook(d.path(), &read_event(&s, "toolu_r"));
    let text = r.context_text();
    assert!(
        text.contains("(150,000 of 200,000 tokens)") && text.contains("kit handoff save"),
        "{text}"
    );
    // Outside a project the note says the point is reactive.
    let bare = tempfile::tempdir().unwrap();
    let s = Session::new(bare.path());
    model_call(&s, "claude-sonnet-4-5-20250929", 150_000, "toolu_r");
    let r = hook(bare.path(), &read_event(&s, "toolu_r"));
    assert!(r.stderr.contains("75.0% of the compaction point (200,000, reactive)"), "{}", r.stderr);
}
