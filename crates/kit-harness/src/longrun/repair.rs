//! The journal is kit's own: lines others appended while the agent or the criteria ran are cut
//! off, except the events kit's own commands write from inside the agent's session.

use std::path::Path;

use crate::error::Result;
use crate::longrun::event::Event;

/// The journal's length in bytes (0 when missing).
pub(crate) fn journal_len(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// The journal is kit's record: lines appended after `base` (its length when kit last sealed it)
/// by anyone else while the agent or the criteria ran are cut off, except kit's own lines at the
/// byte ranges `own`, `hook` events (kit's hook runs inside the agent's session) and
/// `handoff_saved` events (`kit handoff save`, run by the agent as its hook asks, journals the
/// save that `kit handoff verify` checks; a forged one proves nothing without the keyed stamp
/// id, see `crate::handoff`). Returns
/// whether anything was cut. A journal shorter than `base` or rewritten is the guard's business
/// (its sealed prefix).
///
/// Errors: [`crate::Error::Io`] when the journal cannot be read or rewritten.
/// Journal events written by kit commands the agent runs during an iteration, kept by
/// [`cut_appends`].
pub(crate) const KEPT_AGENT_EVENTS: [&str; 2] = ["hook", "handoff_saved"];

pub(crate) fn cut_appends(path: &Path, base: u64, own: &[std::ops::Range<u64>]) -> Result<bool> {
    use crate::error::IoContext;
    let Ok(bytes) = std::fs::read(path) else { return Ok(false) };
    let Ok(cut) = usize::try_from(base) else { return Ok(false) };
    if bytes.len() <= cut {
        return Ok(false);
    }
    let (kept, extra) = bytes.split_at(cut);
    let mut out = kept.to_vec();
    let mut dropped = false;
    let mut at = base;
    for line in extra.split_inclusive(|&b| b == b'\n') {
        let range = at..at + line.len() as u64;
        at = range.end;
        let whole = line.ends_with(b"\n");
        let keep = whole
            && (own.contains(&range)
                || serde_json::from_slice::<serde_json::Value>(line)
                    .is_ok_and(|v| KEPT_AGENT_EVENTS.contains(&Event::from_value(v).name())));
        if keep {
            out.extend_from_slice(line);
        } else {
            dropped = true;
        }
    }
    if dropped {
        let perm = {
            use std::os::unix::fs::PermissionsExt;
            std::fs::metadata(path).at(path)?.permissions().mode() & 0o7777
        };
        crate::atomic::write_atomic_mode(path, &out, perm)?;
    }
    Ok(dropped)
}
