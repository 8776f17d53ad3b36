//! Deduplication of API calls across the whole scan, not only within a session.
//!
//! A resumed or forked Claude Code session copies earlier lines, API calls included, into its
//! new file, so one call (one `message.id` + `requestId`) can sit in several sessions' files.
//! ccusage counts each such pair once across the tree; so does kit: every call is attributed to
//! the *first* session that holds it and dropped from the others. "First" is decided per call,
//! deterministically, among the copies that hold the whole response: Claude Code logs a response
//! as one line per content block with a placeholder `output_tokens` on all but the last, so a
//! copy cut mid-response (a fork taken while the answer was being written) carries fewer tokens;
//! the copies with the largest token total are the candidates (in a real fork, all copies are
//! equal). Among them: the earliest timestamp of the call's first line in each session (a copy
//! without a timestamp comes last), then the session's file path (byte order). A fork's copy
//! keeps the original's timestamp, so the tie goes to the path; a resumed session that re-logs
//! a call later loses it to the earlier one. The totals then equal ccusage's.
//!
//! Memory: a call is held as a 128-bit hash of its key ([`CallKey`]), not its text, with its
//! timestamp and token total (32 bytes per copy, [`Held`]), then sorted once as 48-byte rows
//! with its session number ([`losers`]): at most about 6 MB for the 76,000 calls of the 1.1 GiB
//! bench tree (BENCHMARKS.md), against ccusage's set of key strings. The sessions that lose
//! calls are read again without them (rare: only resumed or forked sessions).
//!
//! Codex rollouts have no per-call id and are not part of this; a Codex fork is not deduplicated.

use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hasher};

/// A 128-bit hash of a call's dedup key (`message.id` NUL `requestId`, or `message.id` alone).
///
/// Two independent 64-bit SipHash-1-3 halves (std's [`DefaultHasher`] with fixed keys, over the
/// key prefixed with a different salt byte each). Two different calls share a key with
/// probability 2⁻¹²⁸ per pair, so among n calls a collision has probability about
/// n² / 2¹²⁹: 1.5 × 10⁻²⁵ for ten million calls (years of heavy use). A collision would drop
/// one call from its later session. The hash is only compared within one process, so that std
/// may change its algorithm between releases does not matter.
pub type CallKey = u128;

/// The [`CallKey`] of a dedup key's text.
pub(crate) fn call_key(key: &str) -> CallKey {
    let half = |salt: u8| {
        let mut h = DefaultHasher::new();
        h.write_u8(salt);
        h.write(key.as_bytes());
        h.finish()
    };
    (u128::from(half(0)) << 64) | u128::from(half(1))
}

/// One session's copy of a call: its key, the timestamp of its first line and its tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Held {
    /// The call's key.
    pub key: CallKey,
    /// When this session logged it (Unix ms), `i64::MAX` when the line had no timestamp.
    pub ts_ms: i64,
    /// The copy's token total (input, cache writes and reads, output).
    pub tokens: u64,
}

/// The keys each session must drop, by session number.
pub(crate) type Drops = HashMap<u32, HashSet<CallKey>>;

/// Which sessions hold a copy of a call that an earlier session holds too.
///
/// `held` lists (session number, copy) for every call of every session (a session lists a key
/// once); `path_rank[n]` is session n's place in path order. Returns, for every session that
/// loses at least one call, the keys to drop from it; empty when no call is in two sessions.
/// The owner of a call is the session with the largest token total, then the smallest
/// (timestamp, path rank), among its copies; a missing timestamp sorts last.
pub fn losers(held: impl IntoIterator<Item = (u32, Held)>, path_rank: &[u32]) -> Drops {
    #[derive(Clone, Copy)]
    struct Row {
        key: CallKey,
        ts: i64,
        /// `u64::MAX` − tokens: the largest total sorts first.
        fewer: u64,
        rank: u32,
        session: u32,
    }
    let rank = |s: u32| path_rank.get(s as usize).copied().unwrap_or(u32::MAX);
    let mut rows: Vec<Row> = held
        .into_iter()
        .map(|(session, h)| Row {
            key: h.key,
            ts: h.ts_ms,
            fewer: u64::MAX - h.tokens,
            rank: rank(session),
            session,
        })
        .collect();
    rows.sort_unstable_by_key(|r| (r.key, r.fewer, r.ts, r.rank));
    let mut drops = Drops::new();
    // Rows of one key are consecutive, the owner first; every later one is a copy.
    let mut owner: Option<Row> = None;
    for r in rows {
        match owner {
            Some(o) if o.key == r.key => {
                if r.session != o.session {
                    drops.entry(r.session).or_default().insert(r.key);
                }
            }
            _ => owner = Some(r),
        }
    }
    drops
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(key: &str, ts: Option<i64>) -> Held {
        Held { key: call_key(key), ts_ms: ts.unwrap_or(i64::MAX), tokens: 100 }
    }

    #[test]
    fn keys_are_stable_within_a_process_and_tell_keys_apart() {
        assert_eq!(call_key("msg_1\0req_1"), call_key("msg_1\0req_1"));
        assert_ne!(call_key("msg_1\0req_1"), call_key("msg_1\0req_2"));
        assert_ne!(call_key("msg_1"), call_key("msg_1\0"));
        // The two halves differ (independent salts), so the key is not a doubled 64-bit hash.
        let k = call_key("msg_1\0req_1");
        assert_ne!(k >> 64, k & u128::from(u64::MAX));
    }

    #[test]
    fn each_call_goes_to_its_first_session_by_timestamp_then_path() {
        // (case, held, path ranks, expected drops as (session, keys))
        type Case = (&'static str, Vec<(u32, Held)>, Vec<u32>, Vec<(u32, Vec<&'static str>)>);
        let cases: Vec<Case> = vec![
            (
                "nothing shared",
                vec![(0, h("a", Some(1))), (1, h("b", Some(1)))],
                vec![0, 1],
                vec![],
            ),
            (
                "a fork: same timestamps, the smaller path owns",
                vec![(0, h("a", Some(5))), (1, h("a", Some(5))), (1, h("b", Some(6)))],
                vec![1, 0],
                vec![(0, vec!["a"])],
            ),
            (
                "a resume re-logs later: the earlier copy owns whatever the paths",
                vec![(0, h("a", Some(9))), (1, h("a", Some(5)))],
                vec![0, 1],
                vec![(0, vec!["a"])],
            ),
            (
                "a copy without a timestamp comes last",
                vec![(0, h("a", None)), (1, h("a", Some(5)))],
                vec![0, 1],
                vec![(0, vec!["a"])],
            ),
            (
                "a copy cut mid-response (fewer tokens) loses to the whole one",
                vec![(0, Held { tokens: 90, ..h("a", Some(1)) }), (1, h("a", Some(5)))],
                vec![0, 1],
                vec![(0, vec!["a"])],
            ),
            (
                "three copies: two lose",
                vec![(2, h("a", Some(1))), (0, h("a", Some(1))), (1, h("a", Some(1)))],
                vec![0, 1, 2],
                vec![(1, vec!["a"]), (2, vec!["a"])],
            ),
        ];
        for (name, held, ranks, want) in cases {
            let got = losers(held, &ranks);
            let want: Drops = want
                .into_iter()
                .map(|(s, keys)| (s, keys.into_iter().map(call_key).collect()))
                .collect();
            assert_eq!(got, want, "{name}");
        }
    }
}
