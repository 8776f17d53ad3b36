//! The stamp block and `longrun/handoff.md` as kit parses it: the summary, the block kit wrote
//! after it, and the text (if any) after the block.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The stamp format this kit writes and checks. Format 1 had an unkeyed id anyone could
/// recompute; it no longer verifies.
pub const FORMAT_VERSION: u32 = 2;
/// The fence info string that opens the stamp block.
pub const FENCE: &str = "```toml kit-handoff-stamp";
/// The comment line kit writes before the block.
pub const MARKER: &str =
    "<!-- kit handoff stamp: written by `kit handoff save`; any edit makes `kit handoff verify` fail -->";
/// State files that are fingerprinted (in `longrun/`).
pub const FINGERPRINTED_STATE: [&str; 5] =
    ["goal.md", "config.toml", "frozen.toml", "progress.md", "decisions.md"];
/// Recorded instead of a hash for a file deleted since the base commit.
pub const DELETED: &str = "deleted";
/// Hex digits of a stamp id ([`Stamp::compute_id`]).
pub const ID_LEN: usize = 12;

/// The stamp block.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stamp {
    /// Format of the block.
    pub format_version: u32,
    /// The stamp id (12 hex digits).
    pub stamp: String,
    /// When it was saved (RFC 3339 UTC, kit clock).
    pub time: String,
    /// HEAD when it was saved.
    pub commit: String,
    /// Whether the tree had uncommitted changes.
    pub dirty: bool,
    /// The goal's base commit the changed files were listed against.
    pub base_commit: String,
    /// Repo-relative path → sha256 hex, or [`DELETED`].
    pub files: BTreeMap<String, String>,
}

impl Stamp {
    /// The id these fields and `summary` give under `key`: the first 12 hex digits of the
    /// HMAC-SHA256 ([`crate::keys::hmac_sha256`]) of a canonical text of the fields and the
    /// summary.
    pub fn compute_id(&self, key: &[u8], summary: &str) -> String {
        hex::encode(crate::keys::hmac_sha256(key, self.message(summary).as_bytes()))[..ID_LEN]
            .to_string()
    }

    /// Whether the block's own id, `self.stamp`, is [`Stamp::compute_id`]`(key, summary)`,
    /// compared in constant time ([`crate::keys::verify_hex`]).
    pub fn id_verifies(&self, key: &[u8], summary: &str) -> bool {
        self.stamp.len() == ID_LEN
            && crate::keys::verify_hex(key, self.message(summary).as_bytes(), &self.stamp)
    }

    /// The canonical text the id signs: the fields, one file per line, then the summary.
    fn message(&self, summary: &str) -> String {
        let mut msg = format!(
            "kit-handoff/{}\n{}\n{}\n{}\n{}\n",
            self.format_version, self.time, self.commit, self.dirty, self.base_commit
        );
        for (p, v) in &self.files {
            msg.push_str(&format!("{p}\0{v}\n"));
        }
        msg.push_str(summary.trim());
        msg
    }
}

/// A parsed `handoff.md`.
#[derive(Clone, Debug)]
pub struct Handoff {
    /// The summary (everything before the stamp block), trimmed.
    pub summary: String,
    /// The stamp, when the file has a block.
    pub stamp: Option<Stamp>,
    /// Text after the stamp block, trimmed (empty for a file `kit handoff save` wrote): the
    /// stamp must end the file, so [`super::check`] fails on it.
    pub trailing: String,
    /// 1-based line where `trailing` starts (0 when empty).
    pub trailing_line: usize,
    /// sha256 hex of the whole file as read.
    pub sha256: String,
}

/// Split `text` into summary and stamp block. `path` names the file in errors.
///
/// Errors: [`Error::Input`] with `handoff.md:LINE` when the block does not parse.
pub fn parse(path: &Path, text: &str) -> Result<Handoff> {
    let lines: Vec<&str> = text.lines().collect();
    let Some(open) = lines.iter().rposition(|l| l.trim_end() == FENCE) else {
        return Ok(Handoff {
            summary: text.trim().to_string(),
            stamp: None,
            trailing: String::new(),
            trailing_line: 0,
            sha256: sha256_hex(text.as_bytes()),
        });
    };
    let close = lines[open + 1..]
        .iter()
        .position(|l| l.trim_end() == "```")
        .map(|i| open + 1 + i)
        .ok_or_else(|| {
            Error::input(path, Some(open + 1), "the stamp block is not closed with ```")
        })?;
    let body = lines[open + 1..close].join("\n");
    let stamp: Stamp = toml::from_str(&body).map_err(|e| {
        let line = e.span().map(|s| open + 1 + crate::longrun::config::line_of(&body, s.start));
        Error::input(path, line, format!("stamp block: {}", e.message().trim()))
            .with_hint("kit handoff save (rewrites the block)")
    })?;
    let mut cut = open;
    if cut > 0 && lines[cut - 1].trim() == MARKER {
        cut -= 1;
    }
    let after = &lines[close + 1..];
    let (trailing, trailing_line) = match after.iter().position(|l| !l.trim().is_empty()) {
        Some(i) => (after[i..].join("\n").trim().to_string(), close + 2 + i),
        None => (String::new(), 0),
    };
    Ok(Handoff {
        summary: lines[..cut].join("\n").trim().to_string(),
        stamp: Some(stamp),
        trailing,
        trailing_line,
        sha256: sha256_hex(text.as_bytes()),
    })
}

use crate::digest::sha256_hex;

/// The stamp id of the handoff at `path`, if it has a block that parses (cheap; for the hook).
pub fn current_stamp_id(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    parse(path, &text).ok()?.stamp.map(|s| s.stamp)
}
