//! What the unit tests share: the sample transcripts copied into the repository and a small
//! deterministic random generator for the fuzz tests. Compiled into the unit tests only (the
//! integration tests have theirs in `tests/it/util.rs`).

use std::path::{Path, PathBuf};

/// The real transcripts copied into the repository, `tests/fixtures/samples/<kind>` (`kind`:
/// `claude-code` or `codex`; the `SOURCES.md` in each says where its files came from).
pub fn samples(kind: &str) -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .join("tests/fixtures/samples")
        .join(kind)
}

/// A small deterministic generator for the fuzz tests (xorshift64*; Vigna, "An experimental
/// exploration of Marsaglia's xorshift generators, scrambled", 2016). The seed must not be 0.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    // Not an `Iterator`: the stream never ends, and the fuzz tests call it by this name.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}
