//! The verified handoff (DESIGN §11). A handoff the agent writes about itself certifies nothing;
//! `kit handoff save` appends a stamp block that kit writes, and `kit handoff verify` checks it
//! against the repository and, optionally, against the session's transcript.
//!
//! `longrun/handoff.md` = the agent's summary, then the stamp block:
//!
//! ````markdown
//! <summary: what is done, what remains, next action>
//!
//! <!-- kit handoff stamp: written by `kit handoff save`; any edit makes `kit handoff verify` fail -->
//! ```toml kit-handoff-stamp
//! format_version = 2
//! stamp = "5d0c1f2a9b3e"          # id: HMAC-SHA256 of all below + the summary, 12 hex
//! time = "2026-10-01T09:00:00Z"   # kit::clock
//! commit = "<40 hex>"             # HEAD when saved
//! dirty = true                    # uncommitted changes at that moment
//! base_commit = "<40 hex>"        # frozen.toml base_commit, else HEAD
//! [files]                         # repo-relative path = sha256 hex, or "deleted"
//! "longrun/progress.md" = "…"
//! "src/lib.rs" = "…"
//! ```
//! ````
//!
//! Fingerprinted: the state files `goal.md`, `config.toml`, `frozen.toml`, `progress.md`,
//! `decisions.md` (those that exist) and every file changed since the base commit (tracked
//! changes and untracked, non-ignored files). Not fingerprinted, by design: `handoff.md` (it
//! holds the stamp itself) and `journal.jsonl` (kit appends to it on every hook firing, so it
//! changes after every save without anything being wrong).
//!
//! Three witnesses make the stamp hard to forge (QA finding F2):
//! - the stamp id is an HMAC-SHA256 of the block's fields and the summary under a per-user
//!   secret kept outside the repository ([`key`]): a block typed or edited by hand does not
//!   carry it, and `verify` never prints the id it expected (that would be a recipe); it says
//!   what differs instead;
//! - `save` journals a `handoff_saved` event with the stamp id and the sha256 of `handoff.md`
//!   and of the summary, which `verify` compares with the file (`kit loop` keeps these events
//!   when it cuts what the agent appended to the journal, as it keeps `hook` events);
//! - with `--transcript`/`--session`, the session must hold a Bash tool call that ran nothing
//!   but `kit handoff save` ([`command`]), did not fail (`is_error`), and whose result carries
//!   the exact line `save` prints with this stamp id.
//!
//! Under `KIT_FAKE_CLOCK` the id is deterministic for a given key.
//!
//! The parts, each re-exported here: `stamp.rs` (the block and the file's parse), `proof.rs`
//! (the transcript witness), `save.rs`, `verify.rs` (and the hook's Stop check), `resume.rs`
//! (what a resumed session is told).

pub mod command;
pub mod key;

pub use command::runs_handoff_save;

mod proof;
mod resume;
mod save;
mod stamp;
mod verify;

pub use proof::*;
pub use resume::*;
pub use save::*;
pub use stamp::*;
pub use verify::*;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use serde_json::json;
    use std::path::Path;

    #[test]
    fn the_proof_is_found_in_plain_and_zstd_transcripts() {
        let call = json!({"message": {"content": [{"type": "tool_use", "name": "Bash", "id": "t1",
            "input": {"command": "kit handoff save <<'EOF'\nDone.\nEOF"}}]}});
        let result = json!({"message": {"content": [{"type": "tool_result", "tool_use_id": "t1",
            "content": "handoff saved: stamp 5d0c1f2a9b3e (commit 1a2b3c4, 3 files fingerprinted) in longrun/handoff.md"}]}});
        let text = format!("{{\"type\":\"progress\"}}\n{call}\nnot json\n{result}\n");
        let d = tempfile::tempdir().unwrap();
        let plain = d.path().join("s.jsonl");
        std::fs::write(&plain, &text).unwrap();
        let zst = d.path().join("s.jsonl.zst");
        std::fs::write(&zst, zstd::encode_all(text.as_bytes(), 3).unwrap()).unwrap();
        let want = Proof { tool_use_id: "t1".into(), call_line: 2, result_line: 4 };
        for p in [&plain, &zst] {
            assert_eq!(prove_in_transcript(p, "5d0c1f2a9b3e").unwrap().as_ref(), Some(&want));
            assert_eq!(prove_in_transcript(p, "000000000000").unwrap(), None);
        }
    }

    #[test]
    fn finds_the_stamp_in_output() {
        let line = "handoff saved: stamp 5d0c1f2a9b3e (commit 1a2b3c4, dirty, 3 files fingerprinted) in longrun/handoff.md";
        assert_eq!(stamp_in_output(&format!("x\n{line}\n")).as_deref(), Some("5d0c1f2a9b3e"));
        let clean = line.replace(", dirty", "");
        assert_eq!(stamp_in_output(&clean).as_deref(), Some("5d0c1f2a9b3e"));
        assert_eq!(stamp_in_output("kit handoff save stamp 5d0c1f2a9b3e"), None);
        assert_eq!(stamp_in_output(&format!("echo {line}")), None);
        assert_eq!(stamp_in_output("handoff saved: stamp 5d0c1f2a9b3e (commit abc)"), None);
        assert_eq!(stamp_in_output("stamp 5d0c1f2a9b3e0 too long"), None);
        assert_eq!(stamp_in_output("no stamp here"), None);
    }

    #[test]
    fn parse_splits_summary_and_block_and_names_bad_lines() {
        let text = format!(
            "Done: a.\n\n{MARKER}\n{FENCE}\nformat_version = 1\nstamp = \"x\"\ntime = \"t\"\ncommit = \"c\"\ndirty = false\nbase_commit = \"b\"\n[files]\n\"a\" = \"h\"\n```\n"
        );
        let h = parse(Path::new("handoff.md"), &text).unwrap();
        assert_eq!(h.summary, "Done: a.");
        assert_eq!(h.stamp.unwrap().files["a"], "h");
        let bad = text.replace("dirty = false", "dirty = maybe");
        match parse(Path::new("handoff.md"), &bad) {
            Err(Error::Input { line: Some(9), .. }) => {}
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn resume_context_names_the_next_action_once() {
        // QA F10: the summary's "Next action: W" was repeated after it.
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("handoff.md"), "Summary: v5\nNext action: W\n").unwrap();
        let text = resume_context(d.path(), "compact").unwrap();
        assert_eq!(text.matches("Next action: W").count(), 1, "{text}");
        std::fs::write(d.path().join("handoff.md"), "Summary: v5\n").unwrap();
        std::fs::write(d.path().join("progress.md"), "## Next action\nX\n").unwrap();
        let text = resume_context(d.path(), "resume").unwrap();
        assert!(text.contains("Summary: v5\n\nNext action: X\n\nRun"), "{text}");
    }

    #[test]
    fn next_action_from_heading_or_line() {
        assert_eq!(
            next_action("# Progress\n## Next action\n\nWrite the parser.\nThen test.\n\n## Done")
                .as_deref(),
            Some("Write the parser. Then test.")
        );
        assert_eq!(
            next_action("Done: x\nNext action: run the tests").as_deref(),
            Some("run the tests")
        );
        assert_eq!(next_action("nothing"), None);
        let template = crate::templates::kit_file("templates/progress.md").unwrap();
        assert_eq!(next_action(template), None, "the template's placeholder is no next action");
        assert_eq!(next_action("## Next action\n(The one concrete step to take next.)\n"), None);
    }

    #[test]
    fn fuzz_mutated_stamp_blocks_never_panic() {
        let text = format!(
            "Done: a.\n\n{MARKER}\n{FENCE}\nformat_version = 1\nstamp = \"5d0c1f2a9b3e\"\ntime = \"2026-10-01T09:00:00Z\"\ncommit = \"c\"\ndirty = false\nbase_commit = \"b\"\n[files]\n\"a\" = \"h\"\n```\n"
        );
        let mut rng = crate::testing::Rng(42);
        let alphabet = b"`\"=[]#\n a0-";
        for _ in 0..2000 {
            let mut bytes = text.clone().into_bytes();
            for _ in 0..1 + rng.below(6) {
                if bytes.is_empty() {
                    break;
                }
                let i = rng.below(bytes.len());
                match rng.below(3) {
                    0 => bytes[i] = alphabet[rng.below(alphabet.len())],
                    1 => {
                        bytes.remove(i);
                    }
                    _ => bytes.truncate(i),
                }
            }
            let t = String::from_utf8_lossy(&bytes);
            match parse(Path::new("handoff.md"), &t) {
                Ok(h) => {
                    if let Some(s) = h.stamp {
                        let _ = s.compute_id(b"k", &h.summary);
                    }
                }
                Err(Error::Input { .. }) => {}
                Err(other) => panic!("{other:?}"),
            }
            let _ = stamp_in_output(&t);
            let _ = next_action(&t);
        }
    }
}
