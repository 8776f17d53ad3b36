//! Parsing and printing of the durations and sizes users write in `config.toml`, `goal.md` and
//! on the command line: durations like `90s`, `15m`, `2h`, `1h30m`, `500ms` (via `humantime`),
//! and memory sizes in systemd's `MemoryMax=` syntax (`512M`, `4G`, bytes with K/M/G/T suffixes
//! in powers of 1024, see systemd.resource-control(5)). Durations are printed by
//! [`crate::units`], with kit's other units.

use std::time::Duration;

/// Parse a duration such as `90s`, `15m`, `2h`, `1h30m`, `500ms`. A bare number is seconds.
///
/// Errors: a message naming the text and the accepted shapes.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    if let Ok(n) = t.parse::<u64>() {
        return Ok(Duration::from_secs(n));
    }
    humantime::parse_duration(t)
        .map_err(|e| format!("`{s}` is not a duration ({e}); write e.g. 90s, 15m, 2h or 1h30m"))
}

/// Parse a memory size in systemd's syntax: `1073741824`, `512K`, `512M`, `4G`, `1T`
/// (suffixes are powers of 1024; an optional trailing `B`/`iB` is accepted). Returns bytes.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let err = || format!("`{s}` is not a memory size; write e.g. 512M or 4G");
    let upper = t.to_ascii_uppercase();
    let body = upper.strip_suffix("IB").or_else(|| upper.strip_suffix('B')).unwrap_or(&upper);
    let (num, mult) = match body.chars().last() {
        Some('K') => (&body[..body.len() - 1], 1u64 << 10),
        Some('M') => (&body[..body.len() - 1], 1 << 20),
        Some('G') => (&body[..body.len() - 1], 1 << 30),
        Some('T') => (&body[..body.len() - 1], 1 << 40),
        Some(c) if c.is_ascii_digit() => (body, 1),
        _ => return Err(err()),
    };
    let n: f64 = num.trim().parse().map_err(|_| err())?;
    if !(n.is_finite() && n > 0.0) {
        return Err(err());
    }
    let bytes = n * mult as f64;
    if bytes >= u64::MAX as f64 {
        return Err(format!("`{s}` is too large for a memory size; write e.g. 512M or 4G"));
    }
    Ok(bytes as u64)
}

/// The smallest memory cap kit accepts for an agent's process tree: below it no agent CLI
/// (Claude Code and Codex start a Node.js or Rust process of 40–200 MiB) even starts, so a
/// smaller value is a typo (`1K` for `1G`), not a cap.
pub(crate) const MIN_MEMORY_CAP: u64 = 32 << 20;

/// Check a memory cap parsed by [`parse_size`] against [`MIN_MEMORY_CAP`].
///
/// Errors: a message naming the text and the smallest accepted value.
pub fn check_memory_cap(text: &str, bytes: u64) -> Result<(), String> {
    if bytes < MIN_MEMORY_CAP {
        return Err(format!(
            "`{text}` is below the smallest memory cap kit accepts ({}): no agent starts in \
             that; write e.g. 512M or 4G",
            format_size(MIN_MEMORY_CAP)
        ));
    }
    Ok(())
}

/// Print a byte count the way `MemoryMax=` accepts it back, e.g. `512M`, `4G`, `1536M`.
pub fn format_size(bytes: u64) -> String {
    for (suffix, mult) in [("T", 1u64 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)] {
        if bytes >= mult && bytes.is_multiple_of(mult) {
            return format!("{}{suffix}", bytes / mult);
        }
    }
    bytes.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::{format_duration, format_idle};

    #[test]
    fn durations() {
        for (text, secs) in [("90s", 90), ("15m", 900), ("2h", 7200), ("1h30m", 5400), ("7", 7)] {
            assert_eq!(parse_duration(text).unwrap(), Duration::from_secs(secs), "{text}");
        }
        assert!(parse_duration("soon").is_err());
        assert_eq!(format_duration(Duration::from_millis(850)), "850ms");
        assert_eq!(format_duration(Duration::from_secs(245)), "4m05s");
        assert_eq!(format_duration(Duration::from_secs(7800)), "2h10m");
    }

    #[test]
    fn idle_times_turn_to_days_from_48_hours() {
        let h = |n: u64| Duration::from_secs(n * 3600);
        for (d, shown) in [
            (Duration::from_secs(245), "4m05s"),
            (h(2), "2h00m"),
            (h(47) + Duration::from_secs(59 * 60), "47h59m"),
            (h(48), "2d 0h"),
            (h(76) + Duration::from_secs(59 * 60), "3d 4h"),
            (h(168), "7d 0h"),
            (h(24 * 400 + 5), "400d 5h"),
        ] {
            assert_eq!(format_idle(d), shown, "{d:?}");
        }
    }

    #[test]
    fn sizes() {
        for (text, bytes) in
            [("512M", 512u64 << 20), ("4G", 4 << 30), ("1024", 1024), ("2GiB", 2 << 30)]
        {
            assert_eq!(parse_size(text).unwrap(), bytes, "{text}");
        }
        assert!(parse_size("lots").is_err());
        assert!(parse_size("-1G").is_err());
        assert!(parse_size("99999999999T").unwrap_err().contains("too large"));
        assert!(check_memory_cap("1K", 1024).unwrap_err().contains("32M"));
        assert!(check_memory_cap("32M", 32 << 20).is_ok());
        assert_eq!(format_size(512 << 20), "512M");
    }
}
