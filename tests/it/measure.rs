//! `kit measure` on the real samples in tests/fixtures/samples, each laid out as a Claude config
//! tree (`projects/<project>/<session>.jsonl`) or a Codex home (`sessions/…`), and on damaged
//! copies of them. Figures are checked against ccusage's and against the files' own totals.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::util::kit;

pub use crate::util::{sample, samples};

/// A Claude config tree holding `files` as sessions of project `proj`; returns (tempdir, root).
pub fn claude_tree(files: &[(&str, &[u8])]) -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("claude");
    for (name, bytes) in files {
        let p = root.join("projects/proj").join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, bytes).unwrap();
    }
    (d, root)
}

/// The spotter session's excerpt (as `4d5611e5.jsonl`) with one subagent's file under it.
fn spotter_with_subagent() -> (tempfile::TempDir, PathBuf) {
    let main = std::fs::read(sample(
        "claude-code/spotter_4d5611e5-241a-462a-8d15-5122611a9569.L641-L801.excerpt.jsonl",
    ))
    .unwrap();
    let agent = std::fs::read(sample("claude-code/spotter_4d5611e5_agent-a2898e3.jsonl")).unwrap();
    claude_tree(&[("4d5611e5.jsonl", &main), ("4d5611e5/subagents/agent-a2898e3.jsonl", &agent)])
}

fn claude_sample_tree(name: &str) -> (tempfile::TempDir, PathBuf) {
    let bytes = std::fs::read(sample(&format!("claude-code/{name}.jsonl"))).unwrap();
    claude_tree(&[(&format!("{name}.jsonl"), &bytes)])
}

/// `kit measure --json ARGS…` run in `dir`; the parsed document.
pub fn measure_json(dir: &Path, args: &[&str]) -> Value {
    let out = kit(dir).arg("measure").arg("--json").args(args).output().unwrap();
    assert!(out.status.success(), "kit measure failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn u(v: &Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or_else(|| panic!("{k} missing in {v}"))
}

/// ccusage's per-session figures for each Claude sample, each file alone in a config tree
/// `projects/proj/<name>.jsonl`, obtained with
/// `HOME=<empty> CLAUDE_CONFIG_DIR=<tree> ccusage claude session --json --offline`,
/// ccusage 20.0.24 (npm `ccusage@20.0.24`, binary `@ccusage/ccusage-linux-x64`), 2026-11-29:
/// (file, inputTokens, outputTokens, cacheCreationTokens, cacheReadTokens, totalCost).
const CCUSAGE: &[(&str, u64, u64, u64, u64, f64)] = &[
    ("fasthooks_sample_main_transcript", 132, 1480, 8467, 223_265, 0.04044225),
    (
        "spotter_4d5611e5-241a-462a-8d15-5122611a9569.L261-L300.excerpt",
        8,
        314,
        85_030,
        246_436,
        0.6625455,
    ),
    (
        "spotter_4d5611e5-241a-462a-8d15-5122611a9569.L641-L801.excerpt",
        20,
        2795,
        33_751,
        1_890_813,
        1.22632525,
    ),
    ("spotter_4d5611e5_agent-a2898e3", 53, 136, 71_257, 604_156, 0.45065955),
    ("spotter_4d5611e5_agent-acompact-e1f845", 3, 8, 8681, 164_830, 0.13688625),
    ("spotter_subagent", 1576, 1586, 25_842, 427_286, 0.519593),
    ("spotter_tool_heavy", 54, 212, 17_696, 88_231, 0.2266455),
];

#[test]
fn claude_samples_match_ccusage_per_session() {
    for (name, input, output, write, read, cost) in CCUSAGE {
        let (d, root) = claude_sample_tree(name);
        let doc = measure_json(d.path(), &[root.to_str().unwrap()]);
        assert_eq!(doc["schema"], "kit.measure/1");
        let s = &doc["sessions"][0];
        assert_eq!(doc["sessions"].as_array().unwrap().len(), 1, "{name}");
        assert_eq!(s["session_id"], *name);
        assert_eq!(
            (
                u(s, "input_tokens"),
                u(s, "output_tokens"),
                u(s, "cache_write_tokens"),
                u(s, "cache_read_tokens")
            ),
            (*input, *output, *write, *read),
            "{name}"
        );
        assert_eq!(
            u(s, "cache_write_tokens"),
            u(s, "cache_write_5m_tokens") + u(s, "cache_write_1h_tokens")
        );
        let ours = s["cost_usd"].as_f64().unwrap();
        assert!((ours - cost).abs() < 1e-6, "{name}: cost {ours} vs ccusage {cost}");
        assert_eq!(u(&doc, "skipped_lines"), 0, "{name}");
    }
}

#[test]
fn resume_after_the_four_hour_gap_rewrites_82720_tokens_at_the_5_minute_rate() {
    let (d, root) =
        claude_sample_tree("spotter_4d5611e5-241a-462a-8d15-5122611a9569.L261-L300.excerpt");
    let doc = measure_json(d.path(), &[root.to_str().unwrap()]);
    let s = &doc["sessions"][0];
    assert_eq!(u(s, "resumes"), 1);
    assert_eq!(u(s, "resume_tokens"), 82_720);
    // claude-opus-4-6: 5-minute write $6.25/M against a read at $0.50/M.
    let premium = s["resume_premium_usd"].as_f64().unwrap();
    assert!((premium - 82_720.0 * (6.25 - 0.50) / 1e6).abs() < 1e-9, "{premium}");
    assert!(s["duration_s"].as_f64().unwrap() > 4.0 * 3600.0);
    assert!(s["active_s"].as_f64().unwrap() < 600.0, "the idle gap is not active time");

    // The per-call view flags that one call, after a gap of 4 h 11 min.
    let out = kit(d.path())
        .args(["measure", "--turns", "spotter_4d5611e5-241a-462a-8d15-5122611a9569.L261"])
        .arg(&root)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let flagged: Vec<&str> = text.lines().filter(|l| l.contains("resume +$0.48")).collect();
    assert_eq!(flagged.len(), 1, "{text}");
    assert!(flagged[0].contains("4h11m"), "{text}");
    assert!(flagged[0].contains("82.7k"), "{text}");
}

#[test]
fn automatic_compaction_is_found_with_its_tokens_before_and_after() {
    let (d, root) =
        claude_sample_tree("spotter_4d5611e5-241a-462a-8d15-5122611a9569.L641-L801.excerpt");
    let doc = measure_json(d.path(), &[root.to_str().unwrap()]);
    let s = &doc["sessions"][0];
    assert_eq!(u(s, "compactions"), 1);
    let c = &s["compaction_events"][0];
    assert_eq!(c["trigger"], "auto");
    assert_eq!(u(c, "tokens_before"), 170_251);
    assert_eq!(u(c, "tokens_after"), 36_081);
    assert_eq!(u(s, "peak_context_tokens"), 164_831);
    let pct = s["peak_context_pct"].as_f64().unwrap();
    assert!((pct - 164_831.0 * 100.0 / 167_000.0).abs() < 1e-9, "{pct}");
}

#[test]
fn manual_compaction_in_the_fasthooks_session() {
    let (d, root) = claude_sample_tree("fasthooks_sample_main_transcript");
    let doc = measure_json(d.path(), &[root.to_str().unwrap()]);
    let s = &doc["sessions"][0];
    assert_eq!(u(s, "compactions"), 1);
    assert_eq!(s["compaction_events"][0]["trigger"], "manual");
    assert_eq!(u(&s["compaction_events"][0], "tokens_before"), 21_558);
    assert_eq!(u(s, "turns"), 5);
    assert_eq!(u(s, "api_calls"), 12);
    assert_eq!(s["project"], "/workspace");
}

#[test]
fn subagent_files_are_sub_rows_of_their_session() {
    let main = std::fs::read(sample(
        "claude-code/spotter_4d5611e5-241a-462a-8d15-5122611a9569.L641-L801.excerpt.jsonl",
    ))
    .unwrap();
    let agent = std::fs::read(sample("claude-code/spotter_4d5611e5_agent-a2898e3.jsonl")).unwrap();
    let compact =
        std::fs::read(sample("claude-code/spotter_4d5611e5_agent-acompact-e1f845.jsonl")).unwrap();
    let id = "4d5611e5-241a-462a-8d15-5122611a9569";
    let (d, root) = claude_tree(&[
        (&format!("{id}.jsonl"), &main),
        (&format!("{id}/subagents/agent-a2898e3.jsonl"), &agent),
        (&format!("{id}/subagents/agent-acompact-e1f845.jsonl"), &compact),
    ]);
    let doc = measure_json(d.path(), &[root.to_str().unwrap()]);
    assert_eq!(doc["sessions"].as_array().unwrap().len(), 1);
    let s = &doc["sessions"][0];
    let subs = s["subagents"].as_array().unwrap();
    assert_eq!(subs.len(), 2);
    assert_eq!(subs[0]["session_id"], "agent-a2898e3");
    assert_eq!(subs[1]["session_id"], "agent-acompact-e1f845");
    // The session's tokens are its own plus its subagents' (ccusage figures above).
    assert_eq!(u(s, "cache_read_tokens"), 1_890_813 + 604_156 + 164_830);
    assert_eq!(u(s, "api_calls"), 16 + 12 + 1);
    // Context stays the main conversation's: the summariser's 173,514 is not the peak.
    assert_eq!(u(s, "peak_context_tokens"), 164_831);
    assert!(s["models"].as_array().unwrap().iter().any(|m| m == "claude-sonnet-4-5-20250929"));
}

/// The last cumulative `total_token_usage` of a rollout, read independently of kit.
fn last_cumulative(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    let mut last = Value::Null;
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else { continue };
        let t = &v["payload"]["info"]["total_token_usage"];
        if v["payload"]["type"] == "token_count" && t.is_object() {
            last = t.clone();
        }
    }
    last
}

#[test]
fn codex_totals_equal_the_last_cumulative_usage_of_each_file() {
    let dir = samples().join("codex");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    let mut checked = 0;
    for f in files {
        let want = last_cumulative(&f);
        let d = tempfile::tempdir().unwrap();
        let home = d.path().join("codex");
        std::fs::create_dir_all(home.join("sessions/2026/02/23")).unwrap();
        std::fs::copy(&f, home.join("sessions/2026/02/23").join(f.file_name().unwrap())).unwrap();
        let doc = measure_json(d.path(), &["--source", "codex", home.to_str().unwrap()]);
        let s = &doc["sessions"][0];
        assert_eq!(u(&doc, "skipped_lines"), 0, "{f:?}");
        if want.is_null() {
            assert_eq!(u(s, "api_calls"), 0);
            continue;
        }
        let input = want["input_tokens"].as_u64().unwrap();
        let cached = want["cached_input_tokens"].as_u64().unwrap();
        let write = want["cache_write_input_tokens"].as_u64().unwrap_or(0);
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(
            u(s, "input_tokens") + u(s, "cache_read_tokens") + u(s, "cache_write_tokens"),
            input,
            "{name}"
        );
        assert_eq!(u(s, "cache_read_tokens"), cached, "{name}");
        assert_eq!(u(s, "cache_write_tokens"), write, "{name}");
        assert_eq!(u(s, "input_tokens"), input - cached - write, "{name}");
        assert_eq!(u(s, "output_tokens"), want["output_tokens"].as_u64().unwrap(), "{name}");
        assert_eq!(
            u(s, "reasoning_tokens"),
            want["reasoning_output_tokens"].as_u64().unwrap(),
            "{name}"
        );
        if name.contains("12-54-34") {
            assert_eq!(u(s, "compactions"), 1, "{name}");
            let c = &s["compaction_events"][0];
            assert_eq!(u(c, "tokens_before"), 212_134);
            assert_eq!(u(c, "tokens_after"), 48_687);
            // 286 of the 572 info-bearing records are echoes.
            assert_eq!(u(s, "api_calls"), 286);
            assert_eq!(s["models"][0], "gpt-5.3-codex");
            assert!(s["cost_usd"].as_f64().unwrap() > 0.0);
        }
        if name.contains("13-19-38") {
            assert_eq!(u(s, "turns"), 1, "the truncated file is read: {s}");
        }
        checked += 1;
    }
    assert_eq!(checked, 5);
}

/// The fasthooks session's figures (ccusage's, above) survive each kind of damage.
fn assert_fasthooks_totals(s: &Value) {
    assert_eq!(
        (
            u(s, "input_tokens"),
            u(s, "output_tokens"),
            u(s, "cache_write_tokens"),
            u(s, "cache_read_tokens")
        ),
        (132, 1480, 8467, 223_265)
    );
}

fn fasthooks() -> Vec<u8> {
    std::fs::read(sample("claude-code/fasthooks_sample_main_transcript.jsonl")).unwrap()
}

/// Run measure on `bytes` as one session; returns the document. Then check `--strict` fails
/// with exit 2 naming file:line (when `strict_line` is given) or passes.
fn damaged(bytes: &[u8], strict_line: Option<usize>) -> Value {
    let (d, root) = claude_tree(&[("s.jsonl", bytes)]);
    let doc = measure_json(d.path(), &[root.to_str().unwrap()]);
    let out = kit(d.path()).args(["measure", "--strict"]).arg(&root).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    match strict_line {
        Some(n) => {
            assert_eq!(out.status.code(), Some(2), "{err}");
            assert!(err.contains(&format!("s.jsonl:{n}:")), "{err}");
            assert!(err.contains("next: run without --strict"), "{err}");
        }
        None => assert!(out.status.success(), "{err}"),
    }
    doc
}

fn line_count(b: &[u8]) -> usize {
    b.iter().filter(|&&c| c == b'\n').count()
}

#[test]
fn a_truncated_last_line_is_counted_and_skipped() {
    let mut b = fasthooks();
    let extra = br#"{"type":"user","message":{"role":"user","content":"half a li"#;
    let n = line_count(&b) + 1;
    b.extend_from_slice(extra);
    let doc = damaged(&b, Some(n));
    assert_eq!(u(&doc["damage"], "truncated"), 1);
    assert_eq!(u(&doc, "skipped_lines"), 1);
    assert_fasthooks_totals(&doc["sessions"][0]);
}

#[test]
fn a_line_with_invalid_utf8_is_read_and_its_usage_counted() {
    let mut b = fasthooks();
    b.extend_from_slice(b"{\"type\":\"user\",\"message\":{\"content\":\"caf\xe9\"}}\n");
    let prompt_line = line_count(&b);
    // An API call whose text (a tool's output, say) holds bytes that are not UTF-8: its usage
    // is ASCII and must still count.
    b.extend_from_slice(
        b"{\"type\":\"assistant\",\"timestamp\":\"2026-01-02T19:22:00.000Z\",\"requestId\":\"req_bad\",\"message\":{\"id\":\"msg_bad\",\"model\":\"claude-opus-4-8\",\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"r\xe9sultat \xff\xfe\"}],\"usage\":{\"input_tokens\":7,\"cache_creation_input_tokens\":100,\"cache_read_input_tokens\":2000,\"output_tokens\":30}}}\n",
    );
    let doc = damaged(&b, Some(prompt_line));
    assert_eq!(u(&doc["damage"], "invalid_utf8"), 2);
    assert_eq!((u(&doc, "skipped_lines"), u(&doc, "repaired_lines")), (0, 2));
    let ex = &doc["damage"]["examples"];
    assert_eq!(
        (ex[0]["line"].as_u64(), ex[1]["line"].as_u64()),
        (Some(prompt_line as u64), Some(prompt_line as u64 + 1))
    );
    assert!(ex[1]["path"].as_str().unwrap().ends_with("s.jsonl"));
    let s = &doc["sessions"][0];
    assert_eq!(
        (
            u(s, "input_tokens"),
            u(s, "output_tokens"),
            u(s, "cache_write_tokens"),
            u(s, "cache_read_tokens")
        ),
        (132 + 7, 1480 + 30, 8467 + 100, 223_265 + 2000)
    );
    // The prompt line was read too: one more turn than the file's 5.
    assert_eq!(u(s, "turns"), 6);
    // The table names both lines.
    let (d, root) = claude_tree(&[("s.jsonl", &b)]);
    let out = kit(d.path()).arg("measure").arg(&root).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(
            "damaged lines: 0 skipped, 2 repaired (2 invalid UTF-8 (read, bad bytes replaced))"
        ),
        "{text}"
    );
    assert!(text.contains(&format!("s.jsonl:{}: invalid UTF-8", prompt_line + 1)), "{text}");
    // Under --strict the error says what is wrong, not that it was read.
    let out = kit(d.path()).args(["measure", "--strict"]).arg(&root).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("s.jsonl:{prompt_line}: invalid UTF-8")), "{err}");
    assert!(!err.contains("(read"), "{err}");
}

#[test]
fn a_ten_megabyte_line_is_read_and_a_ten_megabyte_junk_line_skipped() {
    let mut b = fasthooks();
    let big = "x".repeat(10 << 20);
    let tool = serde_json::json!({"type":"user","timestamp":"2026-01-02T19:21:30.000Z",
        "message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":big}]}});
    b.extend_from_slice(tool.to_string().as_bytes());
    b.push(b'\n');
    let doc = damaged(&b, None);
    assert_eq!(u(&doc, "skipped_lines"), 0);
    assert_fasthooks_totals(&doc["sessions"][0]);
    // The big line's timestamp extends the session: it was read, not skipped.
    assert_eq!(doc["sessions"][0]["end"], "2026-01-02T19:21:30.000Z");
    b.extend_from_slice(format!("{{\"type\":\"user\",{big}\n").as_bytes());
    let doc = damaged(&b, Some(line_count(&b)));
    assert_eq!(u(&doc["damage"], "malformed"), 1);
    assert_fasthooks_totals(&doc["sessions"][0]);
}

#[test]
fn crlf_line_ends_are_read() {
    let b: Vec<u8> = String::from_utf8(fasthooks()).unwrap().replace('\n', "\r\n").into_bytes();
    let doc = damaged(&b, Some(1));
    assert_eq!(u(&doc["damage"], "crlf"), line_count(&b) as u64);
    assert_eq!(u(&doc, "skipped_lines"), 0);
    assert_fasthooks_totals(&doc["sessions"][0]);
    assert_eq!(u(&doc["sessions"][0], "turns"), 5);
}

#[test]
fn pretty_printed_json_objects_are_read_whole() {
    // Every record pretty-printed over many lines: ccusage reads none of it; kit all of it.
    let text = String::from_utf8(fasthooks()).unwrap();
    let mut b = String::new();
    let mut records = 0;
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        b.push_str(&serde_json::to_string_pretty(&v).unwrap());
        b.push('\n');
        records += 1;
    }
    let doc = damaged(b.as_bytes(), Some(1));
    assert_eq!(u(&doc["damage"], "pretty_printed"), records);
    assert_eq!(u(&doc, "skipped_lines"), 0);
    assert_fasthooks_totals(&doc["sessions"][0]);
    assert_eq!(u(&doc["sessions"][0], "compactions"), 1);
}

#[test]
fn unknown_line_types_are_counted_and_skipped() {
    let mut b = fasthooks();
    b.extend_from_slice(
        b"{\"type\":\"brand-new-kind\",\"timestamp\":\"2026-01-02T19:22:00.000Z\"}\n",
    );
    b.extend_from_slice(b"[1,2,3]\n");
    let doc = damaged(&b, Some(line_count(&b) - 1));
    assert_eq!(u(&doc["damage"], "unknown_type"), 1);
    assert_eq!(u(&doc["damage"], "malformed"), 1);
    assert_eq!(doc["damage"]["examples"][0]["kind"], "unknown_type");
    assert_fasthooks_totals(&doc["sessions"][0]);
}

#[test]
fn the_table_reports_damage_with_file_and_line() {
    let mut b = fasthooks();
    b.extend_from_slice(b"not json at all\n");
    let (d, root) = claude_tree(&[("s.jsonl", &b)]);
    let out = kit(d.path()).arg("measure").arg(&root).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("damaged lines: 1 skipped, 0 repaired (1 malformed JSON)"), "{text}");
    assert!(text.contains(&format!("s.jsonl:{}: malformed JSON", line_count(&b))), "{text}");
}

#[test]
fn zstd_compressed_rollouts_are_read_like_plain_ones() {
    let f = sample(
        "codex/localpush__rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl",
    );
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("codex/sessions/2026/02/23");
    std::fs::create_dir_all(&dir).unwrap();
    let z = zstd::encode_all(std::fs::File::open(&f).unwrap(), 3).unwrap();
    std::fs::write(
        dir.join("rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl.zst"),
        z,
    )
    .unwrap();
    let doc = measure_json(d.path(), &[d.path().join("codex").to_str().unwrap()]);
    let s = &doc["sessions"][0];
    assert_eq!(s["session_id"], "019c8bfe-ec25-79e0-97d7-bda6a9c575ff");
    assert_eq!(u(s, "input_tokens") + u(s, "cache_read_tokens"), 298_373);
    assert_eq!(u(s, "output_tokens"), 1123);
}

#[test]
fn default_roots_come_from_claude_config_dir_and_codex_home() {
    let d = tempfile::tempdir().unwrap();
    let a = d.path().join("a");
    let b = d.path().join("b");
    for (root, name) in [(&a, "fasthooks_sample_main_transcript"), (&b, "spotter_tool_heavy")] {
        let p = root.join("projects/p").join(format!("{name}.jsonl"));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::copy(sample(&format!("claude-code/{name}.jsonl")), p).unwrap();
    }
    let codex = d.path().join("codex/archived_sessions");
    std::fs::create_dir_all(&codex).unwrap();
    let r = "localpush__rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl";
    std::fs::copy(
        sample(&format!("codex/{r}")),
        codex.join("rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl"),
    )
    .unwrap();
    let out = kit(d.path())
        .args(["measure", "--json"])
        .env("CLAUDE_CONFIG_DIR", format!("{},{}", a.display(), b.display()))
        .env("CODEX_HOME", d.path().join("codex"))
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<&str> = doc["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["session_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 3, "{ids:?}");
    assert!(ids.contains(&"019c8a70-dda7-7f33-98ea-f30553347322"));
    // --source and --project narrow the list.
    let only = |args: &[&str]| {
        let out = kit(d.path())
            .args(["measure", "--json"])
            .args(args)
            .env("CLAUDE_CONFIG_DIR", format!("{},{}", a.display(), b.display()))
            .env("CODEX_HOME", d.path().join("codex"))
            .output()
            .unwrap();
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        doc["sessions"].as_array().unwrap().len()
    };
    assert_eq!(only(&["--source", "codex"]), 1);
    assert_eq!(only(&["--source", "claude"]), 2);
    assert_eq!(only(&["--project", "workspace"]), 1);
    assert_eq!(only(&["--since", "2026-02-01"]), 2);
}

/// The synthetic generator's tree: every session found, token totals equal to its manifest
/// exactly, cost within one cent. (Size A, 200 sessions, is ~100 MiB and takes the generator a
/// minute; this runs the same generator with the same session count at a smaller size.)
#[test]
fn synthetic_tree_matches_its_ground_truth_manifest() {
    let gen = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/gen_synthetic_transcripts.py");
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("claude");
    let manifest = d.path().join("m.json");
    let st = std::process::Command::new("python3")
        .arg(&gen)
        .args([
            "--out",
            out.to_str().unwrap(),
            "--sessions",
            "200",
            "--target-mb",
            "6",
            "--seed",
            "7",
        ])
        .arg("--manifest")
        .arg(&manifest)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("python3 runs the generator");
    assert!(st.success());
    let m: Value = serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    let truth = m["claude"]["sessions"].as_array().unwrap();
    let sum = |k: &str| -> u64 {
        truth
            .iter()
            .map(|s| s[k].as_u64().unwrap_or(0) + s[format!("subagent_{k}")].as_u64().unwrap_or(0))
            .sum()
    };
    let fsum = |k: &str| -> f64 { truth.iter().map(|s| s[k].as_f64().unwrap()).sum() };
    let doc = measure_json(d.path(), &[out.to_str().unwrap()]);
    let t = &doc["totals"];
    assert_eq!(u(t, "sessions"), 200);
    assert_eq!(u(t, "input_tokens"), sum("inputTokens"));
    assert_eq!(u(t, "output_tokens"), sum("outputTokens"));
    assert_eq!(u(t, "cache_write_tokens"), sum("cacheCreationTokens"));
    assert_eq!(u(t, "cache_read_tokens"), sum("cacheReadTokens"));
    let cost = t["cost_usd"].as_f64().unwrap();
    let want = fsum("costUSD") + fsum("subagentCostUSD");
    assert!((cost - want).abs() < 0.01, "cost {cost} vs manifest {want}");
    let calls: u64 = truth
        .iter()
        .map(|s| s["apiCalls"].as_u64().unwrap() + s["subagentApiCalls"].as_u64().unwrap())
        .sum();
    assert_eq!(u(t, "api_calls"), calls);
    assert_eq!(u(t, "turns"), truth.iter().map(|s| s["userTurns"].as_u64().unwrap()).sum::<u64>());
    assert_eq!(
        u(t, "compactions"),
        truth.iter().map(|s| s["compactions"].as_u64().unwrap()).sum::<u64>()
    );
    assert_eq!(
        u(t, "resumes"),
        truth.iter().map(|s| s["idleGapsOverTtl"].as_u64().unwrap()).sum::<u64>()
    );
    let premium = t["resume_premium_usd"].as_f64().unwrap();
    assert!((premium - fsum("resumeRewriteCostUSD")).abs() < 0.01);
    assert_eq!(u(&doc, "skipped_lines"), 0);
}

#[test]
fn the_table_fits_in_100_columns_with_subagent_rows() {
    let (d, root) = spotter_with_subagent();
    let out = kit(d.path()).arg("measure").arg(&root).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    for line in text.lines() {
        assert!(line.chars().count() <= 100, "{line}");
    }
    let sub = text.lines().find(|l| l.contains("↳ agent-a2898e3")).expect("a sub-row");
    let header = text.lines().next().unwrap();
    // The sub-row's call count sits under CALLS, right-aligned like the rows above it.
    let calls_end = header.find("CALLS").unwrap() + "CALLS".len();
    let chars: Vec<char> = sub.chars().collect();
    assert_eq!(chars[calls_end - 2..calls_end].iter().collect::<String>(), "12", "{text}");
}

/// A Claude tree with the fasthooks session and, beside it, whatever `spoil` adds; measure
/// and recall must still read the session, list what they could not read, and fail only
/// under `--strict` (exit 2, naming the file).
fn bad_file_is_skipped(spoil: impl Fn(&Path), bad: &str, reason: &str) {
    let (d, root) = claude_tree(&[("s.jsonl", &fasthooks())]);
    spoil(&root.join("projects/proj"));
    let doc = measure_json(d.path(), &[root.to_str().unwrap()]);
    assert_eq!(doc["sessions"].as_array().unwrap().len(), 1, "{doc}");
    assert_fasthooks_totals(&doc["sessions"][0]);
    let unreadable = doc["damage"]["unreadable"].as_array().unwrap();
    assert!(
        unreadable.iter().any(|u| u["path"].as_str().unwrap().ends_with(bad)
            && u["reason"].as_str().unwrap().contains(reason)),
        "{doc}"
    );
    let out = kit(d.path()).arg("measure").arg(&root).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("TOTAL"), "{text}");
    assert!(text.contains(bad) && text.contains(reason), "{text}");
    for cmd in ["measure", "recall"] {
        let mut c = kit(d.path());
        c.arg(cmd);
        if cmd == "recall" {
            c.arg("run a command");
        }
        let out = c.arg(&root).output().unwrap();
        assert!(out.status.success(), "{cmd}: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(bad), "{cmd}: {text}");
        let mut c = kit(d.path());
        c.args([cmd, "--strict"]);
        if cmd == "recall" {
            c.arg("run a command");
        }
        let out = c.arg(&root).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{cmd}: {err}");
        assert!(err.contains(bad) && err.contains(reason), "{cmd}: {err}");
    }
}

#[test]
fn a_file_symlink_loop_is_listed_and_skipped() {
    bad_file_is_skipped(
        |dir| {
            std::os::unix::fs::symlink("loop1.jsonl", dir.join("loop2.jsonl")).unwrap();
            std::os::unix::fs::symlink("loop2.jsonl", dir.join("loop1.jsonl")).unwrap();
        },
        "loop1.jsonl",
        "symbolic links",
    );
}

#[test]
fn a_garbage_zst_file_is_listed_and_skipped() {
    bad_file_is_skipped(
        |dir| {
            // The first bytes of a frame, cut: no line can be decoded.
            let z = zstd::encode_all(&fasthooks()[..], 3).unwrap();
            std::fs::write(dir.join("cut.jsonl.zst"), &z[..12]).unwrap();
        },
        "cut.jsonl.zst",
        "",
    );
}

#[test]
fn a_directory_symlink_loop_is_walked_once() {
    let (d, root) = claude_tree(&[("s.jsonl", &fasthooks())]);
    let proj = root.join("projects/proj");
    std::fs::create_dir(proj.join("d")).unwrap();
    std::os::unix::fs::symlink("..", proj.join("d/up")).unwrap();
    // The same project folder seen again through a symlink, and the root given twice.
    std::os::unix::fs::symlink("proj", root.join("projects/alias")).unwrap();
    let doc = measure_json(d.path(), &[root.to_str().unwrap(), root.to_str().unwrap()]);
    assert_eq!(doc["sessions"].as_array().unwrap().len(), 1, "{doc}");
    assert_eq!(doc["files"], 1, "{doc}");
    let out = kit(d.path())
        .arg("measure")
        .arg("--json")
        .env("CLAUDE_CONFIG_DIR", format!("{0},{0}", root.display()))
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["sessions"].as_array().unwrap().len(), 1, "{doc}");
    assert_fasthooks_totals(&doc["sessions"][0]);
}

#[test]
fn no_sessions_names_the_paths_given() {
    let d = tempfile::tempdir().unwrap();
    let empty = d.path().join("some/dir/x.jsonl");
    std::fs::create_dir_all(&empty).unwrap();
    let out = kit(d.path()).arg("measure").arg(&empty).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains(&format!("looked in: {}\n", empty.display())), "{text}");
    assert!(!text.contains(".codex"), "{text}");
}

#[test]
fn project_and_since_filter_the_damage_report_and_undated_sessions() {
    let mut bad = fasthooks();
    bad.extend(b"{not json}\n");
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("claude");
    for (proj, name, bytes) in [
        ("-src-alpha", "a.jsonl", &fasthooks()[..]),
        ("-src-beta", "b.jsonl", &bad[..]),
        // Only a summary line: no timestamp anywhere.
        ("-src-alpha", "undated.jsonl", &b"{\"type\":\"summary\",\"summary\":\"x\"}\n"[..]),
    ] {
        let p = root.join("projects").join(proj).join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, bytes).unwrap();
    }
    let r = root.to_str().unwrap();
    let all = measure_json(d.path(), &[r]);
    assert_eq!(all["damage"]["malformed"], 1, "{all}");
    let alpha = measure_json(d.path(), &["--project", "alpha", r]);
    assert_eq!(alpha["skipped_lines"], 0, "{alpha}");
    let since = measure_json(d.path(), &["--since", "2020-01-01", "--project", "alpha", r]);
    let ids: Vec<&str> = since["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["session_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["a"], "{since}");
    let out = kit(d.path())
        .args(["recall", "--project", "alpha", "run a command"])
        .arg(&root)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("malformed"), "{text}");
}

/// At every width from 100 down to 17 (SESSION and COST alone), each table row — subagent
/// rows included — fits, and the sub-row's figures stay under their headers.
#[test]
fn the_table_fits_narrow_terminals_with_subagent_rows() {
    let (d, root) = spotter_with_subagent();
    let mut previous_columns = usize::MAX;
    for width in (17..=100).rev() {
        let out = kit(d.path())
            .env("COLUMNS", width.to_string())
            .arg("measure")
            .arg(&root)
            .output()
            .unwrap();
        assert!(out.status.success());
        let text = String::from_utf8(out.stdout).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let (header, sub) = (lines[0], lines[2]);
        assert!(lines[1].starts_with("4d5611e5 "), "{text}");
        // Beside PROJECT the sub-row's name is indented; in SESSION alone it is the agent id.
        let with_project = header.contains("PROJECT");
        let name = if with_project { "  ↳ agen" } else { "↳a2898e3 " };
        assert!(sub.starts_with(name), "{text}");
        assert!(lines[3].starts_with("TOTAL"), "{text}");
        for line in &lines[..4] {
            assert!(line.chars().count() <= width, "width {width}:\n{text}");
        }
        // Columns only ever go away as the terminal narrows, and SESSION and COST stay.
        let columns = header.split_whitespace().count();
        assert!(columns <= previous_columns, "width {width}:\n{text}");
        previous_columns = columns;
        assert!(header.starts_with("SESSION") && header.ends_with("COST"), "{text}");
        // The sub-row's cost ends where the COST header ends.
        let end = |l: &str| l.chars().count();
        assert_eq!(end(sub), end(header), "width {width}:\n{text}");
        assert!(sub.ends_with("$0.45"), "{text}");
    }
    assert_eq!(previous_columns, 2);
}

/// Run `cmd` and wait at most `deadline` for it (a hang is the defect these tests catch); the
/// child is killed if it is still running.
fn output_within(
    mut cmd: std::process::Command,
    deadline: std::time::Duration,
) -> std::process::Output {
    use std::process::Stdio;
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > deadline {
            child.kill().unwrap();
            panic!("still running after {deadline:?}: it hangs");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn a_fifo_or_device_under_a_root_is_skipped_and_named_never_waited_on() {
    let bytes =
        std::fs::read(sample("claude-code/fasthooks_sample_main_transcript.jsonl")).unwrap();
    let (d, root) = claude_tree(&[("real.jsonl", &bytes)]);
    let proj = root.join("projects/proj");
    nix::unistd::mkfifo(&proj.join("pipe.jsonl"), nix::sys::stat::Mode::from_bits_truncate(0o600))
        .unwrap();
    std::os::unix::fs::symlink("/dev/zero", proj.join("zero.jsonl")).unwrap();
    let deadline = std::time::Duration::from_secs(120);
    for sub in ["measure", "recall"] {
        let mut c = kit(d.path());
        c.arg(sub);
        if sub == "recall" {
            c.arg("hook");
        }
        c.arg(&root);
        let o = output_within(c, deadline);
        let all =
            format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        if sub == "measure" {
            assert!(o.status.success(), "{all}");
            assert!(all.contains("pipe.jsonl") && all.contains("zero.jsonl"), "named: {all}");
            assert!(all.contains("not a regular file"), "{all}");
        }
    }
    // Named on the command line, a FIFO is refused with exit 2 at once.
    let mut c = kit(d.path());
    c.arg("measure").arg(proj.join("pipe.jsonl"));
    let o = output_within(c, deadline);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a regular file"));
}

#[test]
fn without_home_the_default_roots_are_refused_not_read_relative_to_the_folder() {
    let d = tempfile::tempdir().unwrap();
    for sub in ["measure", "recall"] {
        let mut c = kit(d.path());
        c.arg(sub).env_remove("HOME").env_remove("CLAUDE_CONFIG_DIR").env_remove("CODEX_HOME");
        if sub == "recall" {
            c.arg("anything");
        }
        let o = c.output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{sub}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("HOME is not set to an absolute folder"), "{sub}: {err}");
    }
}

#[test]
fn one_session_id_in_two_projects_names_both_transcripts_and_how_to_pick_one() {
    let bytes =
        std::fs::read(sample("claude-code/fasthooks_sample_main_transcript.jsonl")).unwrap();
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("claude");
    let name = "11111111-2222-4333-8444-555555555555.jsonl";
    for proj in ["-a", "-b"] {
        let p = root.join("projects").join(proj).join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, &bytes).unwrap();
    }
    let out = kit(d.path()).args(["measure", "--turns", "11111111"]).arg(&root).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("matches 2 sessions with the same id"), "{err}");
    assert!(err.contains("in different projects"), "{err}");
    let picked = root.join("projects/-b").join(name);
    assert!(err.contains(&format!("kit measure --turns 11111111 {}", root.display())), "{err}");
    let out = kit(d.path()).args(["measure", "--turns", "11111111"]).arg(&picked).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_forked_session_counts_each_copied_call_once() {
    // tests/fixtures/fork (SOURCES.md there): a session and a fork that copies its first 30
    // lines, then goes on with calls of its own. ccusage counts the copied calls once.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fork");
    let d = tempfile::tempdir().unwrap();
    let doc = measure_json(d.path(), &["--strict", root.to_str().unwrap()]);
    let t = &doc["totals"];
    assert_eq!(
        (
            u(t, "input_tokens"),
            u(t, "output_tokens"),
            u(t, "cache_write_tokens"),
            u(t, "cache_read_tokens")
        ),
        (186, 1692, 26_163, 311_496)
    );
    let cost = t["cost_usd"].as_f64().unwrap();
    assert!((cost - (0.04044225 + 0.2266455)).abs() < 1e-9, "{cost}");
    // Each call is the first session's: the original keeps its 12 calls (same timestamps, the
    // smaller path), the fork has only its own 4, and both keep their lines' turns.
    let rows: Vec<(String, u64, u64, u64)> = doc["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let id = s["session_id"].as_str().unwrap()[..8].to_string();
            (id, u(s, "api_calls"), u(s, "cache_read_tokens"), u(s, "turns"))
        })
        .collect();
    assert_eq!(rows, [("c45af7b1".into(), 12, 223_265, 5), ("e5f0c8d2".into(), 4, 88_231, 6)]);
}

#[test]
fn a_resumed_copy_logged_later_goes_to_the_earlier_session_whatever_the_paths() {
    // The fork's copied lines re-logged an hour later (as a resume that re-writes them would):
    // the original, whose file sorts after the copy's, still owns them.
    let orig = fasthooks();
    let text = String::from_utf8(orig.clone()).unwrap();
    let copy: String = text
        .lines()
        .take(30)
        .map(|l| l.replace("\"timestamp\":\"2026-01-02T", "\"timestamp\":\"2026-01-03T") + "\n")
        .collect();
    let (d, root) = claude_tree(&[("bbbb.jsonl", &orig), ("aaaa.jsonl", copy.as_bytes())]);
    let doc = measure_json(d.path(), &[root.to_str().unwrap()]);
    assert_fasthooks_totals(&doc["totals"]);
    let calls: Vec<(String, u64)> = doc["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["session_id"].as_str().unwrap().to_string(), u(s, "api_calls")))
        .collect();
    assert_eq!(calls, [("bbbb".to_string(), 12), ("aaaa".to_string(), 0)]);
}

/// A Claude Code 2.1.197 transcript as `claude -p` writes it (formats/real-clis.md §3): `mode`
/// and `permission-mode` first, `queue-operation`s, an `attachment` for a hook, envelopes with
/// `promptId`/`entrypoint`/`permissionMode`/`slug`, the default model's bare id on assistant
/// lines, and `last-prompt` at the end.
const CLAUDE_2_1_197: &str = r#"{"type":"mode","mode":"normal","sessionId":"9b1c2d3e-4f50-4a61-8b72-c3d4e5f60718"}
{"type":"permission-mode","permissionMode":"acceptEdits","sessionId":"9b1c2d3e-4f50-4a61-8b72-c3d4e5f60718"}
{"type":"queue-operation","operation":"enqueue","timestamp":"2026-12-01T10:00:00.000Z","sessionId":"9b1c2d3e-4f50-4a61-8b72-c3d4e5f60718","content":"make the test pass"}
{"type":"queue-operation","operation":"dequeue","timestamp":"2026-12-01T10:00:00.004Z","sessionId":"9b1c2d3e-4f50-4a61-8b72-c3d4e5f60718"}
{"parentUuid":null,"isSidechain":false,"promptId":"p-1","promptSource":"sdk","entrypoint":"sdk-cli","permissionMode":"acceptEdits","slug":"make-the-test-pass","type":"user","message":{"role":"user","content":"make the test pass"},"uuid":"u-1","timestamp":"2026-12-01T10:00:00.010Z","cwd":"/work/proj","sessionId":"9b1c2d3e-4f50-4a61-8b72-c3d4e5f60718","version":"2.1.197","gitBranch":"main"}
{"parentUuid":"u-1","isSidechain":false,"type":"attachment","attachment":{"type":"hook_success","hookName":"UserPromptSubmit","hookEvent":"UserPromptSubmit","content":"","stdout":"","exitCode":0},"uuid":"at-1","timestamp":"2026-12-01T10:00:00.050Z","cwd":"/work/proj","sessionId":"9b1c2d3e-4f50-4a61-8b72-c3d4e5f60718","version":"2.1.197"}
{"parentUuid":"at-1","isSidechain":false,"promptId":"p-1","entrypoint":"sdk-cli","permissionMode":"acceptEdits","slug":"make-the-test-pass","message":{"model":"claude-opus-4-8","id":"msg_01Opus48a","type":"message","role":"assistant","content":[{"type":"text","text":"Running the tests."}],"stop_reason":"tool_use","usage":{"input_tokens":6,"cache_creation_input_tokens":12000,"cache_read_input_tokens":0,"output_tokens":40,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":12000},"service_tier":"standard"}},"requestId":"req_01Opus48a","type":"assistant","uuid":"as-1","timestamp":"2026-12-01T10:00:03.000Z","cwd":"/work/proj","sessionId":"9b1c2d3e-4f50-4a61-8b72-c3d4e5f60718","version":"2.1.197"}
{"parentUuid":"as-1","isSidechain":false,"promptId":"p-1","type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":"1 passed","is_error":false}]},"uuid":"u-2","timestamp":"2026-12-01T10:00:04.000Z","cwd":"/work/proj","sessionId":"9b1c2d3e-4f50-4a61-8b72-c3d4e5f60718","version":"2.1.197"}
{"parentUuid":"u-2","isSidechain":false,"promptId":"p-1","message":{"model":"claude-opus-4-8","id":"msg_01Opus48b","type":"message","role":"assistant","content":[{"type":"text","text":"Done."}],"stop_reason":"end_turn","usage":{"input_tokens":3,"cache_creation_input_tokens":500,"cache_read_input_tokens":12000,"output_tokens":20,"cache_creation":{"ephemeral_5m_input_tokens":500,"ephemeral_1h_input_tokens":0}}},"requestId":"req_01Opus48b","type":"assistant","uuid":"as-2","timestamp":"2026-12-01T10:00:06.000Z","cwd":"/work/proj","sessionId":"9b1c2d3e-4f50-4a61-8b72-c3d4e5f60718","version":"2.1.197"}
{"type":"last-prompt","lastPrompt":"make the test pass","sessionId":"9b1c2d3e-4f50-4a61-8b72-c3d4e5f60718"}
"#;

#[test]
fn claude_2_1_197_line_types_pass_strict_and_the_default_model_is_priced() {
    let (d, root) =
        claude_tree(&[("9b1c2d3e-4f50-4a61-8b72-c3d4e5f60718.jsonl", CLAUDE_2_1_197.as_bytes())]);
    let doc = measure_json(d.path(), &["--strict", root.to_str().unwrap()]);
    assert_eq!(u(&doc, "skipped_lines"), 0);
    let s = &doc["sessions"][0];
    assert_eq!((u(s, "turns"), u(s, "api_calls")), (1, 2));
    assert_eq!(s["unpriced_models"].as_array().unwrap().len(), 0, "{s}");
    // claude-opus-4-8: $5 input, $6.25 / $10 cache writes, $0.50 reads, $25 output (per M).
    let want = (6.0 * 5.0
        + 12_000.0 * 10.0
        + 40.0 * 25.0
        + 3.0 * 5.0
        + 500.0 * 6.25
        + 12_000.0 * 0.5
        + 20.0 * 25.0)
        / 1e6;
    let cost = s["cost_usd"].as_f64().unwrap();
    assert!((cost - want).abs() < 1e-12, "{cost} vs {want}");
}

/// A codex-cli 0.171 rollout (formats/real-clis.md §6): user turns are `item_completed`
/// `UserMessage` items, no `user_message` event; `world_state` and `token_usage_record` lines.
const CODEX_0_171: &str = r#"{"timestamp":"2026-12-01T10:00:00.000Z","type":"session_meta","payload":{"id":"019dd001-0000-7000-8000-000000000171","timestamp":"2026-12-01T10:00:00.000Z","cwd":"/work/proj","originator":"codex_exec","cli_version":"0.171.0","source":"exec","model_provider":"scripted"}}
{"timestamp":"2026-12-01T10:00:00.010Z","type":"world_state","payload":{"cwd":"/work/proj"}}
{"timestamp":"2026-12-01T10:00:00.020Z","type":"event_msg","payload":{"type":"task_started","turn_id":"t-1","model_context_window":258400}}
{"timestamp":"2026-12-01T10:00:00.030Z","type":"event_msg","payload":{"type":"thread_settings_applied","turn_id":"t-1"}}
{"timestamp":"2026-12-01T10:00:00.040Z","type":"turn_context","payload":{"turn_id":"t-1","cwd":"/work/proj","approval_policy":"never","sandbox_policy":{"type":"workspace-write"},"model":"gpt-5.3-codex"}}
{"timestamp":"2026-12-01T10:00:00.050Z","type":"event_msg","payload":{"type":"item_completed","thread_id":"019dd001-0000-7000-8000-000000000171","turn_id":"t-1","item":{"type":"UserMessage","id":"item-1","content":[{"type":"text","text":"make the test pass","text_elements":[]}]}}}
{"timestamp":"2026-12-01T10:00:00.060Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"make the test pass"}]}}
{"timestamp":"2026-12-01T10:00:02.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":1000,"cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":50,"reasoning_output_tokens":10,"total_tokens":1050},"last_token_usage":{"input_tokens":1000,"cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":50,"reasoning_output_tokens":10,"total_tokens":1050},"model_context_window":258400},"rate_limits":null}}
{"timestamp":"2026-12-01T10:00:02.010Z","type":"token_usage_record","payload":{"input_tokens":1000,"output_tokens":50}}
{"timestamp":"2026-12-01T10:00:02.020Z","type":"event_msg","payload":{"type":"item_completed","thread_id":"019dd001-0000-7000-8000-000000000171","turn_id":"t-1","item":{"type":"AgentMessage","id":"item-2","content":[{"type":"Text","text":"Done."}]}}}
{"timestamp":"2026-12-01T10:00:02.030Z","type":"event_msg","payload":{"type":"task_complete","turn_id":"t-1","last_agent_message":"Done."}}
{"timestamp":"2026-12-01T10:01:00.000Z","type":"event_msg","payload":{"type":"task_started","turn_id":"t-2","model_context_window":258400}}
{"timestamp":"2026-12-01T10:01:00.010Z","type":"event_msg","payload":{"type":"item_completed","thread_id":"019dd001-0000-7000-8000-000000000171","turn_id":"t-2","item":{"type":"UserMessage","id":"item-3","content":[{"type":"text","text":"and commit it","text_elements":[]}]}}}
{"timestamp":"2026-12-01T10:01:02.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":2200,"cached_input_tokens":1000,"cache_write_input_tokens":0,"output_tokens":80,"reasoning_output_tokens":12,"total_tokens":2280},"last_token_usage":{"input_tokens":1200,"cached_input_tokens":1000,"cache_write_input_tokens":0,"output_tokens":30,"reasoning_output_tokens":2,"total_tokens":1230},"model_context_window":258400},"rate_limits":null}}
{"timestamp":"2026-12-01T10:01:02.030Z","type":"event_msg","payload":{"type":"task_complete","turn_id":"t-2","last_agent_message":"Committed."}}
"#;

#[test]
fn codex_0_171_user_turns_are_user_message_items() {
    let d = tempfile::tempdir().unwrap();
    let home = d.path().join("codex");
    let dir = home.join("sessions/2026/12/01");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("rollout-2026-12-01T10-00-00-019dd001-0000-7000-8000-000000000171.jsonl"),
        CODEX_0_171,
    )
    .unwrap();
    let doc = measure_json(d.path(), &["--strict", "--source", "codex", home.to_str().unwrap()]);
    let s = &doc["sessions"][0];
    assert_eq!((u(s, "turns"), u(s, "api_calls")), (2, 2), "{s}");
    assert_eq!(
        (u(s, "input_tokens"), u(s, "cache_read_tokens"), u(s, "output_tokens")),
        (1200, 1000, 80)
    );
}
