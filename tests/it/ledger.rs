//! The ledger (`kit measure --ledger`, issue 24) on copies of the real samples: the totals
//! survive the transcripts' deletion, each API call is counted once whether it is in the
//! ledger, in a transcript or in both, two writers at once add each call once, and a torn line
//! loses nothing else.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::util::{kit, sample};

/// A Claude config tree and a Codex home with copies of the samples, and a ledger folder.
struct Tree {
    _d: tempfile::TempDir,
    root: PathBuf,
    /// Every transcript copied, to delete and put back.
    files: Vec<(PathBuf, PathBuf)>,
}

impl Tree {
    fn new() -> Tree {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().to_path_buf();
        let mut files = vec![];
        for name in [
            "fasthooks_sample_main_transcript",
            "spotter_tool_heavy",
            "spotter_subagent",
            "spotter_4d5611e5-241a-462a-8d15-5122611a9569.L641-L801.excerpt",
        ] {
            files.push((
                sample(&format!("claude-code/{name}.jsonl")),
                root.join(format!("claude/projects/-home-dev-spotter/{name}.jsonl")),
            ));
        }
        for id in [
            "2026-02-23T12-47-42-019c8a53-a0dd-7130-bcd7-95445d84846a",
            "2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322",
            "2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff",
        ] {
            files.push((
                sample(&format!("codex/localpush__rollout-{id}.jsonl")),
                root.join(format!("codex/sessions/2026/02/23/rollout-{id}.jsonl")),
            ));
        }
        let t = Tree { _d: d, root, files };
        t.put_back(|_| true);
        t
    }

    fn put_back(&self, which: impl Fn(usize) -> bool) {
        for (i, (from, to)) in self.files.iter().enumerate() {
            if which(i) {
                std::fs::create_dir_all(to.parent().unwrap()).unwrap();
                std::fs::copy(from, to).unwrap();
            }
        }
    }

    fn delete_all(&self) {
        for (_, to) in &self.files {
            std::fs::remove_file(to).unwrap();
        }
    }

    fn ledger(&self) -> PathBuf {
        self.root.join("ledger")
    }

    fn kit(&self) -> Command {
        let mut c = kit(&self.root);
        c.env("CLAUDE_CONFIG_DIR", self.root.join("claude"))
            .env("CODEX_HOME", self.root.join("codex"))
            .env("KIT_LEDGER_DIR", self.ledger());
        c
    }

    fn measure(&self, args: &[&str]) -> Value {
        let out = self.kit().args(["measure", "--json"]).args(args).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

/// The figures that must not change: sessions, calls, tokens by kind, cost (to a nano-dollar).
fn totals(doc: &Value) -> Vec<(String, String)> {
    let t = &doc["totals"];
    let mut v: Vec<(String, String)> = [
        "sessions",
        "api_calls",
        "input_tokens",
        "cache_write_5m_tokens",
        "cache_write_1h_tokens",
        "cache_read_tokens",
        "output_tokens",
        "reasoning_tokens",
    ]
    .iter()
    .map(|k| (k.to_string(), t[k].to_string()))
    .collect();
    v.push(("cost_usd".into(), format!("{:.9}", t["cost_usd"].as_f64().unwrap())));
    v
}

fn ledger_lines(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".jsonl"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap().lines().count())
        .sum()
}

#[test]
fn the_ledger_keeps_the_totals_after_the_transcripts_are_deleted() {
    let t = Tree::new();
    let first = t.measure(&["--ledger"]);
    let calls = first["totals"]["api_calls"].as_u64().unwrap();
    assert!(calls > 100, "{calls}");
    assert_eq!(first["ledger"]["appended"]["added"], calls);
    assert_eq!(ledger_lines(&t.ledger()), calls as usize);
    // The same transcripts again add nothing.
    let again = t.measure(&["--ledger"]);
    assert_eq!(again["ledger"]["appended"], serde_json::json!({"added": 0, "present": calls}));
    assert_eq!(totals(&again), totals(&first));
    assert_eq!(ledger_lines(&t.ledger()), calls as usize);
    // No text of the transcripts is in the ledger: no prompt, no path but the project's name.
    let text: String = std::fs::read_dir(t.ledger())
        .unwrap()
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    assert!(!text.contains("/home/") && !text.contains("\"content\""), "{}", &text[..300]);

    // Every transcript deleted: the same totals, every call from the ledger.
    t.delete_all();
    let gone = t.measure(&[]);
    assert_eq!(totals(&gone), totals(&first));
    assert_eq!(gone["ledger"]["ledger_only"]["calls"], calls);
    // Some put back: each call still counted once.
    t.put_back(|i| i % 2 == 0);
    let half = t.measure(&[]);
    assert_eq!(totals(&half), totals(&first));
    let only = half["ledger"]["ledger_only"]["calls"].as_u64().unwrap();
    assert!(0 < only && only < calls, "{only} of {calls}");
    // --since reads both too: the January session is left out, the February ones stay.
    let since = |doc: &Value| doc["totals"]["api_calls"].as_u64().unwrap();
    t.put_back(|_| true);
    let live = since(&t.measure(&["--since", "2026-02-01"]));
    t.delete_all();
    assert_eq!(since(&t.measure(&["--since", "2026-02-01"])), live);
    assert!(live < calls);
    // A named PATH is measured alone: the ledger is not added to it.
    t.put_back(|i| i == 0);
    let alone = t.measure(&["claude"]);
    assert_eq!(alone["totals"]["sessions"], 1);
    assert!(alone.get("ledger").is_none(), "{alone}");
}

#[test]
fn two_writers_at_once_and_a_torn_line_lose_and_double_nothing() {
    let t = Tree::new();
    let calls = t.measure(&[])["totals"]["api_calls"].as_u64().unwrap();
    let kids: Vec<_> = (0..3)
        .map(|_| {
            t.kit()
                .args(["measure", "--json", "--ledger"])
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let added: u64 = kids
        .into_iter()
        .map(|k| {
            let out = k.wait_with_output().unwrap();
            assert!(out.status.success());
            let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
            doc["ledger"]["appended"]["added"].as_u64().unwrap()
        })
        .sum();
    assert_eq!((added, ledger_lines(&t.ledger())), (calls, calls as usize));
    // A writer killed halfway through a line: the records before it stay, the next writer
    // starts a new line, readers skip the fragment.
    let month = t.ledger().join("2026-02.jsonl");
    let mut text = std::fs::read_to_string(&month).unwrap();
    text.push_str("{\"agent\":\"claude\",\"session\":\"x\",\"msg\":\"msg_cut");
    std::fs::write(&month, text).unwrap();
    t.delete_all();
    let doc = t.measure(&["--ledger"]);
    assert_eq!(doc["totals"]["api_calls"], calls);
    assert_eq!(doc["ledger"]["skipped_lines"], 1);
    let strict = t.kit().args(["measure", "--strict"]).output().unwrap();
    assert!(!strict.status.success());
    assert!(String::from_utf8_lossy(&strict.stderr).contains("2026-02.jsonl"));
}

#[test]
fn an_empty_table_names_the_ledger_among_the_places_read() {
    let t = Tree::new();
    t.measure(&["--ledger"]);
    t.delete_all();
    // Every call of the ledger is older than --since: nothing to show, and the ledger is named
    // as a place read, so the user knows it was not forgotten.
    let out = t.kit().args(["measure", "--since", "2026-11-01"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("no sessions found"), "{text}");
    let looked = text.lines().find(|l| l.trim_start().starts_with("looked in:")).unwrap();
    assert!(looked.ends_with(&t.ledger().display().to_string()), "{looked}");
}

#[test]
fn a_call_from_another_root_is_not_part_of_this_measurement() {
    // Two roots (a course lab's and the user's own) with copies of the same sessions, as the
    // course's labs have, and one ledger in the user's data folder.
    let (mine, lab) = (Tree::new(), Tree::new());
    let in_lab = || {
        let mut c = lab.kit();
        c.env("KIT_LEDGER_DIR", mine.ledger());
        c
    };
    let out = in_lab().args(["measure", "--json", "--ledger"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lab_doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let calls = lab_doc["totals"]["api_calls"].as_u64().unwrap();
    assert_eq!(lab_doc["ledger"]["appended"]["added"], calls);

    // The user's root, its transcripts gone before it was ever measured: the lab's calls are not
    // among its sessions.
    mine.delete_all();
    let alone = mine.measure(&[]);
    assert_eq!(alone["totals"]["sessions"], 0, "{alone}");
    assert!(alone.get("ledger").is_none(), "{alone}");

    // The same calls read from the user's root are recorded for it too, and complete it once
    // its transcripts are gone.
    mine.put_back(|_| true);
    let live = mine.measure(&["--ledger"]);
    assert_eq!(live["ledger"]["appended"]["added"], calls, "the lab's lines are not the user's");
    mine.delete_all();
    let gone = mine.measure(&[]);
    assert_eq!(totals(&gone), totals(&live));
    assert_eq!(gone["ledger"]["ledger_only"]["calls"], calls);

    // Both roots measured together, both emptied: each call once.
    lab.delete_all();
    let both =
        format!("{},{}", mine.root.join("claude").display(), lab.root.join("claude").display());
    let out =
        mine.kit().env("CLAUDE_CONFIG_DIR", both).args(["measure", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(totals(&doc), totals(&live));
}
