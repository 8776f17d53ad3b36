//! The one clock seam (DESIGN §13). Everything in kit that reads wall-clock time for output or
//! for the journal asks [`now`]; when `KIT_FAKE_CLOCK` holds an RFC 3339 timestamp
//! (e.g. `2026-10-01T09:00:00Z`) time is frozen there and [`sleep`] only advances a virtual
//! offset, so goldens can pin exact text. Timeouts on real processes use `std::time::Instant`,
//! which this seam does not touch.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use jiff::Timestamp;

/// Name of the environment variable that freezes the clock.
pub const FAKE_CLOCK_VAR: &str = "KIT_FAKE_CLOCK";

static VIRTUAL_MS: AtomicU64 = AtomicU64::new(0);

/// The fake time if `KIT_FAKE_CLOCK` is set and valid.
pub fn fake_base() -> Option<Timestamp> {
    std::env::var(FAKE_CLOCK_VAR).ok().and_then(|s| s.trim().parse::<Timestamp>().ok())
}

/// True when the clock is frozen by `KIT_FAKE_CLOCK`.
pub fn is_fake() -> bool {
    fake_base().is_some()
}

/// The current time: real, or the fake base plus the virtual time slept so far.
pub fn now() -> Timestamp {
    match fake_base() {
        Some(base) => {
            let ms = VIRTUAL_MS.load(Ordering::Relaxed) as i64;
            base.checked_add(jiff::SignedDuration::from_millis(ms)).unwrap_or(base)
        }
        None => Timestamp::now(),
    }
}

/// Sleep for `d`: really, or (with a fake clock) by advancing the virtual offset at once.
pub fn sleep(d: Duration) {
    if is_fake() {
        VIRTUAL_MS.fetch_add(d.as_millis() as u64, Ordering::Relaxed);
    } else {
        std::thread::sleep(d);
    }
}

/// `now()` as RFC 3339 with second precision in UTC, e.g. `2026-10-01T09:00:00Z`.
pub fn now_rfc3339() -> String {
    format_ts(now())
}

/// Format a timestamp as RFC 3339 UTC with second precision.
pub fn format_ts(ts: Timestamp) -> String {
    ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}
