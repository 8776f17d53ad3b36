//! Numbers and units as kit prints them in tables and messages: token counts (`12.3k`,
//! `1,234,567`), US dollars (`$0.04`, `$0.9375`), counted nouns (`3 calls`), durations for
//! table columns (`4m05s`, `2d03h`), and text cut or padded to a terminal width.
//!
//! Widths are display widths (the `console` crate's `measure_text_width`: a CJK character
//! takes two columns, an ANSI colour code none), not characters or bytes. Durations have two
//! printers, both here: [`format_duration`] for messages, with milliseconds and tenths (`850ms`,
//! `12.3s`), and [`secs`], whole units for table columns (a column must not widen with tenths).

use std::time::Duration;

use console::Alignment;

/// `1 call`, `2 calls`, `3 matches`.
pub fn plural(n: u64, word: &str) -> String {
    match (n, word.ends_with("ch")) {
        (1, _) => format!("1 {word}"),
        (_, true) => format!("{n} {word}es"),
        _ => format!("{n} {word}s"),
    }
}

/// The columns `s` takes on a terminal.
pub fn width(s: &str) -> usize {
    console::measure_text_width(s)
}

/// Cut `s` to `n` columns, marking a cut with `…` (which takes the last column). Not
/// `console::truncate_str`, which cuts a text that fits exactly and panics when `n` is 0.
pub fn clip(s: &str, n: usize) -> String {
    if width(s) <= n {
        return s.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = width(c.encode_utf8(&mut [0; 4]));
        if used + w > n.saturating_sub(1) {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
    out
}

/// `s` padded with spaces to `w` columns, on the right (`right` false) or the left; never cut.
pub fn pad(s: &str, w: usize, right: bool) -> String {
    let align = if right { Alignment::Right } else { Alignment::Left };
    console::pad_str(s, w, align, None).into_owned()
}

/// Tokens compactly: `950`, `12.3k`, `4.5M`.
pub fn tokens(n: u64) -> String {
    if n < 1000 {
        n.to_string()
    } else if n < 1_000_000 {
        format!("{:.1}k", n as f64 / 1e3)
    } else if n < 1_000_000_000 {
        format!("{:.1}M", n as f64 / 1e6)
    } else {
        format!("{:.1}G", n as f64 / 1e9)
    }
}

/// A token count as a person writes it, and as [`tokens`] prints it: `150000`, `150_000`,
/// `150k`, `233.3k`, `1M`, `1.5M` (k = 1,000, M = 1,000,000; either case). Errors: a text that
/// is none of these, or a count that does not fit in 64 bits, as a sentence saying so.
pub fn parse_tokens(text: &str) -> std::result::Result<u64, String> {
    let t = text.trim().replace('_', "");
    let (number, scale) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1e3),
        Some((i, 'm' | 'M')) => (&t[..i], 1e6),
        _ => (t.as_str(), 1.0),
    };
    let bad = || format!("`{text}` is not a token count (e.g. 150000, 150k, 1M)");
    if number.is_empty() || !number.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(bad());
    }
    if scale == 1.0 {
        return number.parse::<u64>().map_err(|_| bad());
    }
    let n: f64 = number.parse().map_err(|_| bad())?;
    let n = (n * scale).round();
    if !n.is_finite() || n > u64::MAX as f64 {
        return Err(bad());
    }
    Ok(n as u64)
}

/// Dollars: `$0.04`, `$12.30`, `$0.0012` for sub-cent amounts.
pub fn usd(x: f64) -> String {
    if x != 0.0 && x.abs() < 0.01 {
        format!("${x:.4}")
    } else {
        format!("${x:.2}")
    }
}

/// Dollars to four decimals, halves rounded up: `$0.9375`, `$0.1563` (`kit cache`'s
/// comparisons, where cents would hide the difference).
pub fn usd4(x: f64) -> String {
    format!("${:.4}", (x * 10_000.0).round() / 10_000.0)
}

/// `1,234,567`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Print a duration compactly: `850ms`, `12.3s`, `4m05s`, `2h10m`.
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms}ms")
    } else if ms < 60_000 {
        format!("{:.1}s", d.as_secs_f64())
    } else if ms < 3_600_000 {
        let s = d.as_secs();
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        let m = d.as_secs() / 60;
        format!("{}h{:02}m", m / 60, m % 60)
    }
}

/// An idle time as the cache messages print it: [`format_duration`] below 48 hours, whole days
/// and hours from 48 hours on (`3d 4h`, minutes dropped), so that a week away reads as `7d 0h`
/// rather than `168h00m`.
pub fn format_idle(d: Duration) -> String {
    const HOUR: u64 = 3600;
    let s = d.as_secs();
    if s < 48 * HOUR {
        return format_duration(d);
    }
    format!("{}d {}h", s / (24 * HOUR), s % (24 * HOUR) / HOUR)
}

/// Seconds in whole units for a table column: `0s`, `59s`, `4m05s`, `2h10m`, from 100 hours on
/// `4d02h`.
pub fn secs(s: f64) -> String {
    if s <= 0.0 {
        return "0s".into();
    }
    let secs = s.round() as u64;
    if secs < 60 {
        format!("{secs}s")
    } else if secs < 3600 {
        format!("{}m{:02}s", secs / 60, secs % 60)
    } else if secs < 100 * 3600 {
        format!("{}h{:02}m", secs / 3600, secs % 3600 / 60)
    } else {
        format!("{}d{:02}h", secs / 86_400, secs % 86_400 / 3600)
    }
}

/// `2h 4m` (or `4m`, `45s`) for a wait: whole minutes once it is a minute or more.
pub fn describe_wait(d: Duration) -> String {
    let s = d.as_secs();
    match (s / 3600, (s % 3600) / 60) {
        (0, 0) => format!("{s}s"),
        (0, m) => format!("{m}m"),
        (h, m) => format!("{h}h {m}m"),
    }
}

/// `03:10 UTC` for a reset time (UTC, as the journal's times).
pub fn describe_until(t: jiff::Timestamp) -> String {
    t.strftime("%H:%M UTC").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_as_the_tables_show_them() {
        let cases: [(String, &str); 14] = [
            (thousands(0), "0"),
            (thousands(1_234_567), "1,234,567"),
            (tokens(950), "950"),
            (tokens(12_345), "12.3k"),
            (tokens(4_500_000), "4.5M"),
            (usd(0.0), "$0.00"),
            (usd(0.0012), "$0.0012"),
            (usd(12.3), "$12.30"),
            (usd4(0.15625), "$0.1563"),
            (plural(1, "call"), "1 call"),
            (plural(3, "match"), "3 matches"),
            (secs(245.0), "4m05s"),
            (secs(7800.0), "2h10m"),
            (secs(100.0 * 3600.0 + 7200.0), "4d06h"),
        ];
        for (got, want) in cases {
            assert_eq!(got, want);
        }
    }

    #[test]
    fn widths_are_display_columns() {
        assert_eq!(width("abc"), 3);
        assert_eq!(width("日本"), 4);
        assert_eq!(width("\u{1b}[1mab\u{1b}[0m"), 2);
        assert_eq!(clip("abcdef", 4), "abc…");
        assert_eq!(clip("abc", 4), "abc");
        assert_eq!(clip("↳a2898e3", 8), "↳a2898e3");
        assert_eq!(clip("abc", 0), "…");
        assert_eq!(clip("日本語の名前", 5), "日本…");
        assert_eq!(pad("日本", 6, false), "日本  ");
        assert_eq!(pad("ab", 4, true), "  ab");
        assert_eq!(pad("abcdef", 4, true), "abcdef");
    }

    #[test]
    fn token_counts_read_as_people_and_kit_write_them() {
        for (text, want) in [
            ("150000", Some(150_000)),
            ("150_000", Some(150_000)),
            ("150k", Some(150_000)),
            ("150K", Some(150_000)),
            ("233.3k", Some(233_300)),
            ("1M", Some(1_000_000)),
            ("1.5m", Some(1_500_000)),
            (" 42 ", Some(42)),
            ("", None),
            ("k", None),
            ("-5", None),
            ("1.5", None),
            ("12kk", None),
            ("1e6", None),
        ] {
            assert_eq!(parse_tokens(text).ok(), want, "{text:?}");
        }
    }
}
