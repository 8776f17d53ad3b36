//! Usage and rate limits: recognising, from the agent's structured output, that an iteration
//! ended because the plan's usage limit (or an API rate limit) was reached, and when it resets.
//! The loop then waits (see `RunCtx::wait_out_limit` in the parent module) instead of counting
//! the iteration.
//!
//! Claude Code (`claude -p --output-format stream-json --verbose`), facts used:
//! - `rate_limit_event` lines: `{"type":"rate_limit_event","rate_limit_info":{"status":
//!   "allowed"|"allowed_warning"|"rejected","resetsAt":<unix s>,"rateLimitType":"five_hour"|
//!   "seven_day"|…,"overageStatus":…},"uuid":…,"session_id":…}` — the Agent SDK's
//!   `SDKRateLimitEvent` / `SDKRateLimitInfo` types (`@anthropic-ai/claude-agent-sdk` sdk.d.ts;
//!   a real line in anthropics/claude-code#38673). Only `status` counts: an `overageStatus` of
//!   `rejected` next to `status: "allowed"` is an ordinary served request (#38673).
//! - the `result` event carries the limit as text, with `is_error: true` even under `subtype:
//!   "success"` (anthropics/claude-code#79500: "API Error: Rate limit reached", exit 0). The texts
//!   seen: `Claude AI usage limit reached|1755615600` (older builds, a unix time after the bar:
//!   #6119, #9046, #11429), `Claude usage limit reached. Your limit will reset at 5pm
//!   (Europe/Warsaw).` (#6119), and today `You've hit your limit · resets 3am (Europe/Berlin)`,
//!   `… · resets Feb 7, 11am (Asia/Seoul)`, `… · resets Apr 23 at 4pm (America/Recife)`,
//!   `You've hit your session limit · resets 12:50am (America/Los_Angeles)`, `You've hit your
//!   weekly limit · resets Jul 15 at 12am (Australia/Melbourne)` (#42042, #51981, #22976,
//!   #74079, #77122).
//! - "Server is temporarily limiting requests (not your usage limit)" is an overloaded server
//!   (529), an ordinary API error: not a limit (manaflow-ai/subrouter#24, from the CLI bundle).
//!
//! Codex (`codex exec --json`): `{"type":"turn.failed","error":{"message":…}}` and
//! `{"type":"error","message":…}` (formats/codex.md §14.2). The usage-limit text is codex's
//! `UsageLimitReachedError` Display (openai/codex `codex-rs/core/src/error.rs`): `You've hit your
//! usage limit. … Try again at 3:10 AM.` (local time, today) or `… try again at Dec 3rd, 2026
//! 3:10 AM.`, or `… Try again later.`; older builds `Limits reset every 5h and every week.`. A
//! 429 that outlived codex's retries (`exceeded retry limit, last status: 429 Too Many
//! Requests`) is a rate limit without a reset time. The rollout's `token_count` `rate_limits`
//! (`primary`/`secondary` `{used_percent, window_minutes, resets_at}`, formats/codex.md §5.1)
//! give the exact reset when a window is at 100 %: [`codex_reset_from_rate_limits`].
//!
//! Never a limit: an agent the loop killed (timeout, memory cap, pause, Ctrl-C — the caller
//! does not ask), a crash (no `result` / `turn.failed` at all), a network error, an ordinary API
//! error (500, overloaded, invalid request) — see the negative rows of the tests.

use std::path::Path;
use std::sync::LazyLock;
use std::time::Duration;

use jiff::{civil, tz::TimeZone, Timestamp};
use regex::Regex;
use serde_json::Value;

/// What kind of limit stopped the agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The plan's usage limit (five-hour, weekly …): it resets at a known time.
    Usage,
    /// An API rate limit (429): usually short, often without a reset time.
    Rate,
}

impl Kind {
    /// `usage` or `rate`, as journaled.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Usage => "usage",
            Kind::Rate => "rate",
        }
    }
}

/// A limit the agent's output announced.
#[derive(Clone, Debug, PartialEq)]
pub struct Limit {
    /// Usage or rate.
    pub kind: Kind,
    /// When it resets, if the agent said.
    pub until: Option<Timestamp>,
    /// The agent's own words, clipped to 300 characters.
    pub message: String,
}

/// Which dialect the log is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// Claude Code stream-json.
    Claude,
    /// Codex `exec --json`.
    Codex,
    /// Either (a command line).
    Either,
}

/// Read an iteration's log (one JSON event a line; other lines skipped) and say whether the agent
/// ended on a limit. `now` resolves reset times given as a wall-clock time ("resets 3am").
pub fn classify_log(log: &Path, dialect: Dialect, now: Timestamp) -> Option<Limit> {
    let text = std::fs::read(log).ok()?;
    classify(&String::from_utf8_lossy(&text), dialect, now)
}

/// [`classify_log`] on the log's text.
pub fn classify(text: &str, dialect: Dialect, now: Timestamp) -> Option<Limit> {
    let claude = dialect != Dialect::Codex;
    let codex = dialect != Dialect::Claude;
    let mut rejected: Option<(Option<Timestamp>, String)> = None;
    let mut result: Option<Value> = None;
    let mut codex_fail: Option<String> = None;
    let mut codex_done = false;
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line.trim()) else { continue };
        match v.get("type").and_then(Value::as_str) {
            Some("rate_limit_event") if claude => {
                let info = &v["rate_limit_info"];
                if info["status"].as_str() == Some("rejected") {
                    let until =
                        info["resetsAt"].as_i64().and_then(|s| Timestamp::from_second(s).ok());
                    let what = info["rateLimitType"].as_str().unwrap_or("usage").to_string();
                    rejected = Some((until, what));
                }
            }
            Some("result") if claude => result = Some(v),
            Some("turn.failed") if codex => {
                codex_fail = v["error"]["message"].as_str().map(str::to_string);
            }
            Some("error") if codex => {
                if let Some(m) = v["message"].as_str() {
                    codex_fail.get_or_insert_with(|| m.to_string());
                }
            }
            Some("turn.completed") if codex => codex_done = true,
            _ => {}
        }
    }
    if let Some(r) = result {
        return claude_result(&r, rejected, now);
    }
    if let Some(m) = codex_fail.filter(|_| !codex_done) {
        return codex_message(&m, now);
    }
    None
}

/// A Claude `result` event: a limit when it is an error whose text names one (or when a
/// `rate_limit_event` said `rejected`), or the machine-readable old form.
fn claude_result(
    r: &Value,
    rejected: Option<(Option<Timestamp>, String)>,
    now: Timestamp,
) -> Option<Limit> {
    let is_error = r["is_error"].as_bool().unwrap_or(false);
    let text = match (&r["result"], &r["errors"]) {
        (Value::String(s), _) => s.clone(),
        (_, Value::Array(a)) => a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join("\n"),
        _ => String::new(),
    };
    let message = clip(&text);
    static OLD: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^Claude AI usage limit reached\|(\d{9,11})\s*$").expect("valid")
    });
    if let Some(c) = OLD.captures(text.trim()) {
        let until = c[1].parse::<i64>().ok().and_then(|s| Timestamp::from_second(s).ok());
        return Some(Limit { kind: Kind::Usage, until, message });
    }
    if !is_error {
        return None;
    }
    if let Some((until, _)) = rejected {
        let until = until.or_else(|| claude_reset_text(&text, now));
        return Some(Limit { kind: Kind::Usage, until, message });
    }
    if is_claude_usage_text(&text) {
        return Some(Limit { kind: Kind::Usage, until: claude_reset_text(&text, now), message });
    }
    static RATE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)API Error: Rate limit reached|\b429\b.*rate_limit_error").expect("valid")
    });
    if RATE.is_match(&text) && !text.contains("not your usage limit") {
        return Some(Limit { kind: Kind::Rate, until: None, message });
    }
    None
}

fn is_claude_usage_text(text: &str) -> bool {
    static USAGE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)you(?:'|’)ve hit your (?:\w+ )?limit|claude (?:ai )?usage limit reached")
            .expect("valid")
    });
    USAGE.is_match(text) && !text.contains("not your usage limit")
}

/// The reset time in a Claude limit text: `resets 3am (Europe/Berlin)`, `resets 3:30am (UTC)`,
/// `resets Feb 7, 11am (Asia/Seoul)`, `resets Apr 23 at 4pm (America/Recife)`, `will reset at
/// 5pm (Europe/Warsaw)`: the next such time after `now` in that zone (the machine's own when
/// none is named or the name is unknown).
pub fn claude_reset_text(text: &str, now: Timestamp) -> Option<Timestamp> {
    static AT: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"(?i)resets? (?:at )?(?:([A-Z][a-z]{2}) (\d{1,2}),? (?:at )?)?(\d{1,2})(?::(\d{2}))? ?([ap]m)(?: \(([^)]+)\))?",
        )
        .expect("valid")
    });
    let c = AT.captures(text)?;
    let tz = c
        .get(6)
        .and_then(|z| TimeZone::get(z.as_str().trim()).ok())
        .unwrap_or_else(TimeZone::system);
    let hour = to_24h(c[3].parse().ok()?, &c[5])?;
    let minute: i8 = c.get(4).map_or(Some(0), |m| m.as_str().parse().ok())?;
    let month = c.get(1).and_then(|m| month_number(m.as_str()));
    let day: Option<i8> = c.get(2).and_then(|d| d.as_str().parse().ok());
    next_wall_time(now, &tz, month.zip(day), hour, minute)
}

/// A Codex error message: a usage limit (with its "try again at" time) or a 429 rate limit.
fn codex_message(m: &str, now: Timestamp) -> Option<Limit> {
    let message = clip(m);
    if m.contains("hit your usage limit") || m.contains("reached your usage limit") {
        return Some(Limit { kind: Kind::Usage, until: codex_reset_text(m, now), message });
    }
    if m.contains("429") && m.to_ascii_lowercase().contains("too many requests") {
        return Some(Limit { kind: Kind::Rate, until: None, message });
    }
    None
}

/// The reset in codex's text: `Try again at 3:10 AM.` (today, local time) or `try again at Dec
/// 3rd, 2026 3:10 AM.`
pub fn codex_reset_text(text: &str, now: Timestamp) -> Option<Timestamp> {
    static AT: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)try again at (?:([A-Z][a-z]{2}) (\d{1,2})(?:st|nd|rd|th)?, (\d{4}) )?(\d{1,2}):(\d{2}) ?([AP]M)")
            .expect("valid")
    });
    let c = AT.captures(text)?;
    let tz = TimeZone::system();
    let hour = to_24h(c[4].parse().ok()?, &c[6])?;
    let minute: i8 = c[5].parse().ok()?;
    if let (Some(mon), Some(day), Some(year)) = (c.get(1), c.get(2), c.get(3)) {
        let date = civil::date(
            year.as_str().parse().ok()?,
            month_number(mon.as_str())?,
            day.as_str().parse().ok()?,
        );
        return date.at(hour, minute, 0, 0).to_zoned(tz).ok().map(|z| z.timestamp());
    }
    next_wall_time(now, &tz, None, hour, minute)
}

/// The reset of a Codex `rate_limits` snapshot (a rollout's `token_count`): the latest
/// `resets_at` of a window at 100 % or more.
pub fn codex_reset_from_rate_limits(rate_limits: &Value) -> Option<Timestamp> {
    ["primary", "secondary"]
        .iter()
        .map(|k| &rate_limits[*k])
        .filter(|w| w["used_percent"].as_f64().is_some_and(|p| p >= 100.0))
        .filter_map(|w| w["resets_at"].as_i64())
        .max()
        .and_then(|s| Timestamp::from_second(s).ok())
}

fn to_24h(h: i8, ampm: &str) -> Option<i8> {
    if !(1..=12).contains(&h) {
        return None;
    }
    let pm = ampm.eq_ignore_ascii_case("pm");
    Some(match (h, pm) {
        (12, false) => 0,
        (12, true) => 12,
        (h, false) => h,
        (h, true) => h + 12,
    })
}

fn month_number(m: &str) -> Option<i8> {
    const M: [&str; 12] =
        ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
    M.iter().position(|x| x.eq_ignore_ascii_case(m)).map(|i| i as i8 + 1)
}

/// The first `hour:minute` in `tz` after `now` (on `month`/`day` when given: this year's, or
/// next year's when that is long past).
fn next_wall_time(
    now: Timestamp,
    tz: &TimeZone,
    date: Option<(i8, i8)>,
    hour: i8,
    minute: i8,
) -> Option<Timestamp> {
    let local = now.to_zoned(tz.clone());
    let today = local.date();
    let at =
        |d: civil::Date| d.at(hour, minute, 0, 0).to_zoned(tz.clone()).ok().map(|z| z.timestamp());
    match date {
        Some((m, d)) => {
            let this = civil::Date::new(today.year(), m, d).ok()?;
            let t = at(this)?;
            if t.duration_since(now).as_secs() < -86_400 {
                at(civil::Date::new(today.year() + 1, m, d).ok()?)
            } else {
                Some(t)
            }
        }
        None => {
            let t = at(today)?;
            if t > now {
                Some(t)
            } else {
                at(today.tomorrow().ok()?)
            }
        }
    }
}

fn clip(s: &str) -> String {
    let s = s.trim();
    if s.chars().count() <= 300 {
        return s.to_string();
    }
    let mut out: String = s.chars().take(300).collect();
    out.push('…');
    out
}

/// Margin added after an announced reset: the limit is lifted a little after the minute shown.
pub const RESET_MARGIN: Duration = Duration::from_secs(60);

/// Backoff without a reset time: 1m, 2m, 4m … capped at 30m, for the `n`th limit in a row
/// (1-based).
pub fn backoff(n: u32) -> Duration {
    let mins = 1u64 << n.saturating_sub(1).min(5);
    Duration::from_secs(60 * mins.min(30))
}

/// How long to wait for `limit` at `now`: until the reset plus [`RESET_MARGIN`] (at least the
/// margin, for a reset already past), else [`backoff`]`(streak)`. Returns the wait and whether it
/// is a backoff.
pub fn wait_for(limit: &Limit, now: Timestamp, streak: u32) -> (Duration, bool) {
    match limit.until {
        Some(t) => {
            let secs = t.duration_since(now).as_secs().max(0) as u64;
            (Duration::from_secs(secs) + RESET_MARGIN, false)
        }
        None => (backoff(streak), true),
    }
}

/// Sleep `total` in steps of `step` through `sleep`, asking `stop` before each step; returns
/// what was slept and the reason `stop` gave, if it cut the wait short.
pub fn sleep_interruptibly<T>(
    total: Duration,
    step: Duration,
    sleep: &mut dyn FnMut(Duration),
    stop: &mut dyn FnMut() -> Option<T>,
) -> (Duration, Option<T>) {
    let mut slept = Duration::ZERO;
    while slept < total {
        if let Some(why) = stop() {
            return (slept, Some(why));
        }
        let d = step.min(total - slept);
        sleep(d);
        slept += d;
    }
    (slept, None)
}

pub use crate::units::{describe_until, describe_wait};

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Timestamp {
        "2026-10-01T01:06:00Z".parse().unwrap()
    }
    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    /// (what, log lines, expected kind and reset).
    type Row = (&'static str, Vec<&'static str>, Option<(Kind, Option<&'static str>)>);

    const RESULT_OK: &str = r#"{"type":"result","subtype":"success","is_error":false,"num_turns":3,"result":"Implemented it.","total_cost_usd":0.1}"#;

    #[test]
    fn claude_limits_are_read_from_real_shapes() {
        let rows: Vec<Row> = vec![
            (
                "rejected rate_limit_event, then the result",
                vec![
                    r#"{"type":"system","subtype":"init","model":"claude-opus-4-6"}"#,
                    r#"{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1790824200,"rateLimitType":"five_hour","overageStatus":"rejected","isUsingOverage":false},"uuid":"u","session_id":"s"}"#,
                    r#"{"type":"assistant","message":{"model":"<synthetic>","content":[{"type":"text","text":"You've hit your limit · resets 3:10am (UTC)"}]},"error":"rate_limit"}"#,
                    r#"{"type":"result","subtype":"success","is_error":true,"num_turns":1,"result":"You've hit your limit · resets 3:10am (UTC)","total_cost_usd":0}"#,
                ],
                Some((Kind::Usage, Some("2026-10-01T03:10:00Z"))),
            ),
            (
                "the new text alone, a zone named",
                vec![
                    r#"{"type":"result","subtype":"success","is_error":true,"result":"You've hit your limit · resets 3am (Europe/Berlin)"}"#,
                ],
                Some((Kind::Usage, Some("2026-10-02T01:00:00Z"))),
            ),
            (
                "session limit with minutes",
                vec![
                    r#"{"type":"result","is_error":true,"result":"You've hit your session limit · resets 12:50am (America/Los_Angeles)"}"#,
                ],
                Some((Kind::Usage, Some("2026-10-01T07:50:00Z"))),
            ),
            (
                "weekly limit with a date",
                vec![
                    r#"{"type":"result","is_error":true,"result":"You've hit your weekly limit · resets Oct 7 at 12am (UTC)"}"#,
                ],
                Some((Kind::Usage, Some("2026-10-07T00:00:00Z"))),
            ),
            (
                "old machine-readable form",
                vec![
                    r#"{"type":"result","subtype":"success","is_error":false,"result":"Claude AI usage limit reached|1755615600"}"#,
                ],
                Some((Kind::Usage, Some("2025-08-19T15:00:00Z"))),
            ),
            (
                "old human form",
                vec![
                    r#"{"type":"result","is_error":true,"result":"Claude usage limit reached. Your limit will reset at 5pm (UTC)."}"#,
                ],
                Some((Kind::Usage, Some("2026-10-01T17:00:00Z"))),
            ),
            (
                "a per-model 429 (claude-code#79500): rate, no reset",
                vec![
                    r#"{"type":"result","subtype":"success","is_error":true,"stop_reason":"stop_sequence","duration_api_ms":0,"result":"API Error: Rate limit reached"}"#,
                ],
                Some((Kind::Rate, None)),
            ),
            // Negative rows.
            ("a normal finish", vec![RESULT_OK], None),
            (
                "allowed_warning, then a normal finish",
                vec![
                    r#"{"type":"rate_limit_event","rate_limit_info":{"status":"allowed_warning","resetsAt":1790824200,"rateLimitType":"seven_day"}}"#,
                    RESULT_OK,
                ],
                None,
            ),
            (
                "overage rejected but status allowed (claude-code#38673)",
                vec![
                    r#"{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","resetsAt":1774447200,"rateLimitType":"five_hour","overageStatus":"rejected","overageDisabledReason":"org_level_disabled","isUsingOverage":false}}"#,
                    r#"{"type":"result","subtype":"success","is_error":false,"result":""}"#,
                ],
                None,
            ),
            (
                "the model talking about limits in a successful answer",
                vec![
                    r#"{"type":"result","is_error":false,"result":"If you've hit your limit, the loop waits until it resets 3am (UTC)."}"#,
                ],
                None,
            ),
            (
                "a crash mid-stream: no result at all",
                vec![
                    r#"{"type":"system","subtype":"init"}"#,
                    r#"{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1790824200}}"#,
                    r#"{"type":"assistant","message":{"content":[{"type":"text","text":"Working"}]}}"#,
                ],
                None,
            ),
            (
                "an ordinary API error",
                vec![
                    r#"{"type":"result","subtype":"success","is_error":true,"api_error_status":500,"result":"API Error: 500 {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"Internal server error\"}}"}"#,
                ],
                None,
            ),
            (
                "an overloaded server is not the usage limit",
                vec![
                    r#"{"type":"result","is_error":true,"result":"Server is temporarily limiting requests (not your usage limit)"}"#,
                ],
                None,
            ),
            (
                "a network error",
                vec![
                    r#"{"type":"result","subtype":"error_during_execution","is_error":true,"errors":["API Error: Connection error. (ECONNRESET)"]}"#,
                ],
                None,
            ),
            (
                "max turns",
                vec![
                    r#"{"type":"result","subtype":"error_max_turns","is_error":true,"num_turns":30}"#,
                ],
                None,
            ),
            ("plain text output", vec!["You've hit your limit · resets 3am (UTC)"], None),
        ];
        for (what, lines, want) in rows {
            let got = classify(&lines.join("\n"), Dialect::Claude, now());
            let got = got.map(|l| (l.kind, l.until));
            let want = want.map(|(k, u)| (k, u.map(ts)));
            assert_eq!(got, want, "{what}");
        }
    }

    #[test]
    fn codex_limits_are_read_from_turn_failed_and_error_items() {
        let rows: Vec<Row> = vec![
            (
                "usage limit with a time today (TZ of the machine: the test sets none, so checked below)",
                vec![
                    r#"{"type":"thread.started","thread_id":"019c8a59-e9dd-71f0-9ae3-4079fe9726a9"}"#,
                    r#"{"type":"turn.started"}"#,
                    r#"{"type":"error","message":"You've hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/codex/settings/usage to purchase more credits or try again at Oct 1st, 2026 3:10 AM."}"#,
                    r#"{"type":"turn.failed","error":{"message":"You've hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/codex/settings/usage to purchase more credits or try again at Oct 1st, 2026 3:10 AM."}}"#,
                ],
                Some((Kind::Usage, None)),
            ),
            (
                "usage limit without a time",
                vec![r#"{"type":"turn.failed","error":{"message":"You've hit your usage limit. Limits reset every 5h and every week."}}"#],
                Some((Kind::Usage, None)),
            ),
            (
                "429 after retries",
                vec![r#"{"type":"turn.failed","error":{"message":"exceeded retry limit, last status: 429 Too Many Requests, request id: abc"}}"#],
                Some((Kind::Rate, None)),
            ),
            // Negative rows.
            (
                "a completed turn",
                vec![r#"{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":0,"output_tokens":3}}"#],
                None,
            ),
            (
                "a network error",
                vec![r#"{"type":"turn.failed","error":{"message":"stream disconnected before completion: error sending request for url (https://api.openai.com/v1/responses)"}}"#],
                None,
            ),
            (
                "a 500",
                vec![r#"{"type":"turn.failed","error":{"message":"exceeded retry limit, last status: 500 Internal Server Error"}}"#],
                None,
            ),
            (
                "a non-fatal error, then the turn completes",
                vec![
                    r#"{"type":"error","message":"exceeded retry limit, last status: 429 Too Many Requests"}"#,
                    r#"{"type":"turn.completed","usage":{"input_tokens":10,"output_tokens":3}}"#,
                ],
                None,
            ),
            ("a crash: the stream stops", vec![r#"{"type":"thread.started","thread_id":"t"}"#, r#"{"type":"turn.started"}"#], None),
        ];
        for (what, lines, want) in rows {
            let got = classify(&lines.join("\n"), Dialect::Codex, now()).map(|l| l.kind);
            assert_eq!(got, want.map(|w| w.0), "{what}");
            assert!(classify(&lines.join("\n"), Dialect::Claude, now()).is_none(), "{what}");
        }
        // The time in codex's text is the machine's local time: in UTC it reads as written.
        let utc = TimeZone::UTC;
        let t = civil::date(2026, 10, 1).at(3, 10, 0, 0).to_zoned(utc).unwrap().timestamp();
        let local = civil::date(2026, 10, 1)
            .at(3, 10, 0, 0)
            .to_zoned(TimeZone::system())
            .unwrap()
            .timestamp();
        assert_eq!(codex_reset_text("or try again at Oct 1st, 2026 3:10 AM.", now()), Some(local));
        assert!(t.as_second() - local.as_second() <= 14 * 3600 + 1);
        let snap = serde_json::json!({"primary":{"used_percent":100.0,"window_minutes":300,"resets_at":1790824200},"secondary":{"used_percent":40.0,"resets_at":1791000000}});
        assert_eq!(codex_reset_from_rate_limits(&snap), Some(ts("2026-10-01T03:10:00Z")));
        assert_eq!(
            codex_reset_from_rate_limits(
                &serde_json::json!({"primary":{"used_percent":6.0,"resets_at":1}})
            ),
            None
        );
    }

    #[test]
    fn waits_are_bounded_and_interruptible() {
        assert_eq!(
            [1, 2, 3, 4, 5, 6, 9].map(|n| backoff(n).as_secs() / 60),
            [1, 2, 4, 8, 16, 30, 30]
        );
        let l = Limit {
            kind: Kind::Usage,
            until: Some(ts("2026-10-01T03:10:00Z")),
            message: String::new(),
        };
        assert_eq!(wait_for(&l, now(), 1), (Duration::from_secs(2 * 3600 + 4 * 60 + 60), false));
        let past = Limit { until: Some(ts("2026-10-01T00:00:00Z")), ..l.clone() };
        assert_eq!(wait_for(&past, now(), 1).0, RESET_MARGIN);
        let none = Limit { until: None, ..l };
        assert_eq!(wait_for(&none, now(), 3), (Duration::from_secs(240), true));
        let mut slept = Vec::new();
        let mut asks = 0;
        let (done, why) = sleep_interruptibly(
            Duration::from_secs(10),
            Duration::from_secs(3),
            &mut |d| slept.push(d.as_secs()),
            &mut || {
                asks += 1;
                (asks == 3).then_some("pause")
            },
        );
        assert_eq!((done.as_secs(), why, slept), (6, Some("pause"), vec![3, 3]));
        assert_eq!(describe_wait(Duration::from_secs(2 * 3600 + 4 * 60)), "2h 4m");
        assert_eq!(describe_until(ts("2026-10-01T03:10:00Z")), "03:10 UTC");
    }
}
