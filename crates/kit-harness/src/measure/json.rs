//! The `kit.measure/1` JSON document of a scan: totals, then one object per session with its
//! subagents.

use serde_json::{json, Value};

use crate::transcript::{SessionSummary, Tokens};

use super::*;

/// The `kit.measure/1` document.
pub(crate) fn to_json(scan: &Scan) -> Value {
    let sessions: Vec<Value> = scan.sessions.iter().map(session_json).collect();
    let mut tokens = Tokens::default();
    let (mut cost, mut priced) = (0.0, false);
    let (mut calls, mut turns, mut cmp, mut res) = (0, 0, 0, 0);
    let (mut premium, mut dur, mut active) = (0.0, 0.0, 0.0);
    let mut unpriced = std::collections::BTreeSet::new();
    for s in &scan.sessions {
        tokens.add(&s.tokens);
        if let Some(c) = s.cost_usd {
            cost += c;
            priced = true;
        }
        calls += s.api_calls;
        turns += s.turns;
        cmp += s.compactions.len();
        res += s.resumes;
        premium += s.resume_premium_usd;
        dur += s.duration_s;
        active += s.active_s;
        unpriced.extend(s.unpriced_models.iter().cloned());
    }
    let mut totals = serde_json::to_value(tokens).unwrap_or(Value::Null);
    let t = totals.as_object_mut();
    if let Some(t) = t {
        t.insert("sessions".into(), json!(scan.sessions.len()));
        t.insert("cost_usd".into(), if priced { json!(cost) } else { Value::Null });
        t.insert("cache_hit_ratio".into(), json!(tokens.cache_hit_ratio()));
        t.insert("api_calls".into(), json!(calls));
        t.insert("turns".into(), json!(turns));
        t.insert("compactions".into(), json!(cmp));
        t.insert("resumes".into(), json!(res));
        t.insert("resume_premium_usd".into(), json!(premium));
        t.insert("duration_s".into(), json!(dur));
        t.insert("active_s".into(), json!(active));
        t.insert("unpriced_models".into(), json!(unpriced));
    }
    json!({
        "schema": "kit.measure/1",
        "sessions": sessions,
        "totals": totals,
        "files": scan.files,
        "skipped_lines": scan.damage.skipped(),
        "repaired_lines": scan.damage.repaired(),
        "damage": scan.damage,
    })
}

/// One session of the `kit.measure/1` document (`sessions[]`).
pub(crate) fn session_json(s: &SessionSummary) -> Value {
    let mut v = serde_json::to_value(s).unwrap_or(Value::Null);
    if let Some(o) = v.as_object_mut() {
        let events = o.remove("compactions").unwrap_or(Value::Null);
        o.insert("compactions".into(), json!(s.compactions.len()));
        o.insert("compaction_events".into(), events);
        o.insert("skipped_lines".into(), json!(s.damage.skipped()));
        if let Some(subs) = o.get_mut("subagents").and_then(|x| x.as_array_mut()) {
            for (sub, v) in s.subagents.iter().zip(subs.iter_mut()) {
                *v = session_json(sub);
            }
        }
    }
    v
}
