//! The four readers of transcripts agree: the engine (`kit measure`), the hook's backwards tail
//! read (`kit hook`, `kit cache`), `kit mine` and `kit recall` are fed the same lines, the
//! shared fixture `tests/fixtures/one-model/` (see its `SOURCES.md`: a split-cache line whose
//! 5m + 1h exceeds its total, a compaction boundary, a sidechain line, a `<synthetic>` line,
//! an API error line, a response logged as two lines; a Codex rollout with an echoed, an empty
//! and an estimated `token_count`), and must give the same figures: API calls, tokens in and
//! out, cache read, cache write 5m and 1h, model. Each reader gives the figures it has: the
//! engine all of them; the tail the call in force at each moment (Claude Code only: the hook
//! reads no Codex rollout); mine the calls and compactions it places facts on; recall, which
//! counts no tokens, the lines it reads as said by the assistant.
//!
//! It lives in `mine` because that is where kit's layering (`src/lib.rs`) lets one module see
//! all four readers: `transcript` (layer 3) may not import `recall` or `mine` (layer 6), and
//! `mine` may import `recall`, its neighbour in layer 6, without a circle.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use jiff::Timestamp;

use super::read::{self as mine, What};
use crate::prices::Usage;
use crate::recall::{self, RecallOptions, Role};
use crate::transcript::discover::{self, Job};
use crate::transcript::{claude, codex, tail, ApiCall, Damage, EngineOptions, Source};

fn fixture(name: &str) -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .join("tests/fixtures/one-model")
        .join(name)
}

const CLAUDE: &str = "5e1f0a2b-7c3d-4e5f-8a9b-0c1d2e3f4a5b.jsonl";
const CODEX: &str = "rollout-2026-09-03T10-00-00-0199bb00-0000-7000-8000-00000000f1e0.jsonl";

/// The figures all readers must give for a transcript's main-chain API calls.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Figures {
    calls: usize,
    tokens: Usage,
    models: BTreeSet<String>,
}

impl Figures {
    fn add(&mut self, model: &str, u: &Usage) {
        self.calls += 1;
        self.tokens.input += u.input;
        self.tokens.cache_write_5m += u.cache_write_5m;
        self.tokens.cache_write_1h += u.cache_write_1h;
        self.tokens.cache_read += u.cache_read;
        self.tokens.output += u.output;
        self.models.insert(model.to_string());
    }
}

fn engine(path: &Path) -> (Vec<ApiCall>, crate::transcript::SessionSummary) {
    let mut damage = Damage::default();
    let jobs = discover::discover(&[path.to_path_buf()], &mut damage).unwrap();
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    let opts = EngineOptions {
        limits: crate::transcript::ReadLimits { strict: true, ..Default::default() },
        ..EngineOptions::standard()
    };
    let (calls, summary) = match &jobs[0] {
        Job::Claude(f) => claude::read(f, opts).map(|r| (r.calls, r.summary)).unwrap(),
        Job::Codex(p) => codex::read(p, opts).map(|r| (r.calls, r.summary)).unwrap(),
    };
    assert_eq!(summary.damage.skipped(), 0, "{:?}", summary.damage);
    (calls, summary)
}

fn engine_figures(calls: &[ApiCall]) -> Figures {
    let mut f = Figures::default();
    for c in calls.iter().filter(|c| !c.sidechain) {
        f.add(&c.model, &c.usage);
    }
    f
}

fn recall_hits(path: &Path, role: Role) -> Vec<usize> {
    let opts = RecallOptions {
        query: "fixture".into(),
        paths: vec![path.to_path_buf()],
        regex: false,
        ignore_case: false,
        role: Some(role),
        project: None,
        since_ms: None,
        json: false,
        limit: 100,
        strict: true,
    };
    let found = recall::search(&opts).unwrap();
    found.hits.iter().map(|h| h.line).collect()
}

fn ms(t: &str) -> i64 {
    t.parse::<Timestamp>().unwrap().as_millisecond()
}

#[test]
fn readers_agree_on_the_claude_code_fixture() {
    let path = fixture(CLAUDE);
    // What the fixture holds (SOURCES.md): four main-chain calls, all claude-opus-4-6.
    let want = Figures {
        calls: 4,
        tokens: Usage {
            input: 10 + 5 + 3 + 7,
            // A: 2000 (split agrees); B: 300 (no split); C: 500 - 200; D: 1000 - 500, the
            // total holding against a split of 700 + 500.
            cache_write_5m: 2000 + 300 + 300 + 500,
            cache_write_1h: 200 + 500,
            cache_read: 2000 + 2300 + 900,
            // A's final count (120), not its placeholder (1).
            output: 120 + 40 + 50 + 60,
        },
        models: BTreeSet::from(["claude-opus-4-6".to_string()]),
    };

    // 1. The engine.
    let (calls, summary) = engine(&path);
    assert_eq!(engine_figures(&calls), want);
    let side: Vec<&ApiCall> = calls.iter().filter(|c| c.sidechain).collect();
    assert_eq!(side.len(), 1, "the sidechain line is a call (it costs), outside the context");
    assert_eq!((side[0].usage.cache_read, side[0].context_tokens), (5000, 0));
    assert_eq!(summary.turns, 2);
    assert_eq!(summary.compactions.len(), 1);
    let c = &summary.compactions[0];
    assert_eq!((c.trigger.as_str(), c.tokens_before, c.tokens_after), ("manual", 3100, Some(1907)));

    // 2. The hook's tail read, at every second of the session: the call in force then is the
    // engine's last main-chain call at or before it (same model, input and cache figures; the
    // output of a response's last line); one after the boundary reads as compacted.
    let main: Vec<&ApiCall> = calls.iter().filter(|c| !c.sidechain).collect();
    let mut tail_fig = Figures::default();
    let mut prev: Option<tail::ApiCall> = None;
    for s in 0..=13 {
        let at: Timestamp = format!("2026-09-03T10:00:{s:02}.000Z").parse().unwrap();
        let t = tail::read_tail_at(&path, at).unwrap();
        let engine_call =
            main.iter().rev().find(|c| c.ts_ms.is_some_and(|m| m <= at.as_millisecond()));
        match (&t.last_call, engine_call) {
            (None, None) => {}
            (Some(got), Some(e)) => {
                let u = &e.usage;
                assert_eq!(
                    (
                        got.model.as_str(),
                        got.input,
                        got.cache_write_5m,
                        got.cache_write_1h,
                        got.cache_read
                    ),
                    (&*e.model, u.input, u.cache_write_5m, u.cache_write_1h, u.cache_read),
                    "at 10:00:{s:02}"
                );
                assert_eq!(got.context(), e.context_tokens, "at 10:00:{s:02}");
            }
            (got, e) => panic!("at 10:00:{s:02}: tail {got:?}, engine {e:?}"),
        }
        // Lines of one response repeat its input and cache figures (claude-code.md §3.3): a
        // change of those is the next call; the output is its last line's.
        if let Some(got) = &t.last_call {
            let same = prev.as_ref().is_some_and(|p| {
                (p.input, p.cache_write_5m, p.cache_write_1h, p.cache_read)
                    == (got.input, got.cache_write_5m, got.cache_write_1h, got.cache_read)
            });
            if !same {
                if let Some(p) = prev.take() {
                    tail_fig.add(&p.model, &usage_of(&p));
                }
            }
            prev = Some(got.clone());
        }
        let compacted = (6..9).contains(&s);
        assert_eq!(t.compaction_after.is_some(), compacted, "at 10:00:{s:02}");
        if compacted {
            assert_eq!(t.context(), Some(0));
        }
    }
    if let Some(p) = prev {
        tail_fig.add(&p.model, &usage_of(&p));
    }
    assert_eq!(tail_fig, want, "the tail, swept");
    let now = tail::read_tail(&path).unwrap();
    let d = now.last_call.as_ref().unwrap();
    assert_eq!((d.cache_write_5m, d.cache_write_1h), (500, 500), "the split-cache line");
    assert_eq!(now.context(), Some(7 + 1000 + 900));

    // 3. mine: one call fact per engine call, at the engine's times; the same compaction.
    let facts = mine::read_file(&path, Source::Claude, &mut Damage::default());
    let call_facts: Vec<&mine::Fact> = facts.iter().filter(|f| f.what == What::Call).collect();
    assert_eq!(call_facts.len(), want.calls);
    let times: Vec<Option<i64>> = call_facts.iter().map(|f| f.ts_ms).collect();
    assert_eq!(times, main.iter().map(|c| c.ts_ms).collect::<Vec<_>>());
    let compactions = facts.iter().filter(|f| f.what == What::Compaction).count();
    assert_eq!(compactions, summary.compactions.len());

    // 4. recall: what the assistant said is read from the lines of those calls, plus the
    // sidechain and API-error lines (said, but billing nothing in the main chain); the
    // <synthetic> line says nothing it searches for.
    let mut call_lines: Vec<usize> = call_facts.iter().map(|f| f.line).collect();
    call_lines.extend([11, 13]);
    call_lines.sort();
    assert_eq!(recall_hits(&path, Role::Assistant), call_lines);
    assert_eq!(recall_hits(&path, Role::User), [1, 9]);
    assert_eq!(recall_hits(&path, Role::Tool), [4]);
}

fn usage_of(c: &tail::ApiCall) -> Usage {
    Usage {
        input: c.input,
        cache_write_5m: c.cache_write_5m,
        cache_write_1h: c.cache_write_1h,
        cache_read: c.cache_read,
        output: c.output,
    }
}

#[test]
fn readers_agree_on_the_codex_fixture() {
    let path = fixture(CODEX);
    // Two calls: the echo, the empty record and the post-compaction estimate are none.
    let want = Figures {
        calls: 2,
        tokens: Usage {
            // Cumulative 90,000 input, of which 40,000 cached and 5,000 written.
            input: 90_000 - 40_000 - 5_000,
            cache_write_5m: 5_000,
            cache_write_1h: 0,
            cache_read: 40_000,
            output: 500,
        },
        models: BTreeSet::from(["gpt-5.3-codex".to_string()]),
    };
    let (calls, summary) = engine(&path);
    assert_eq!(engine_figures(&calls), want);
    assert_eq!((summary.turns, summary.compactions.len()), (1, 1));

    let facts = mine::read_file(&path, Source::Codex, &mut Damage::default());
    let times: Vec<Option<i64>> =
        facts.iter().filter(|f| f.what == What::Call).map(|f| f.ts_ms).collect();
    assert_eq!(times, calls.iter().map(|c| c.ts_ms).collect::<Vec<_>>());
    assert_eq!(times, [Some(ms("2026-09-03T10:00:05Z")), Some(ms("2026-09-03T10:00:07Z"))]);
    assert_eq!(facts.iter().filter(|f| f.what == What::Compaction).count(), 1);

    assert_eq!(recall_hits(&path, Role::Assistant), [7, 13]);
    assert_eq!(recall_hits(&path, Role::User), [3]);
    assert_eq!(recall_hits(&path, Role::Tool), [9]);
}
