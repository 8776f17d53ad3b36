//! Decisions pending for a person, read from the journal's last run and `longrun/PAUSE`:
//! - `flap`: a criterion passed and failed across the confirmation runs (`flap` event) and no
//!   later confirmation passed every run (`confirm` with `all_pass`) nor a `done` followed: done
//!   is refused on it until someone makes it deterministic or changes it;
//! - `review`: a review criterion's evaluator answered `ask` (`review` with verdict `ask`) and
//!   no later verdict for the same goal.md line answered it;
//! - `cap`: the last loop process of the run stopped at a cap (`loop_end` outcome `cap`) and no
//!   loop runs now: raise the cap, change the goal, or start afresh;
//! - `paused`: `longrun/PAUSE` exists: the loop waits for `kit resume`;
//! - `ask` (from [`asks`], over the whole journal): a decision no counting answer has answered
//!   yet (`crate::looprun::ask`): a question of the agent's, or the latest ask for a `- human:` criterion,
//!   with the number `kit approve N` takes; and `not_counted`: an answer given since a
//!   decision's last counting one that does not count (from inside an agent iteration), with why.
//!
//! Each is `{kind, line (goal.md line or null), text}`; the text says what is wrong and what to
//! do. `kit status` prints all but `paused` as `needs you:` lines (`paused:` has its own line).

use serde::Serialize;

use crate::longrun::event::{Entry, Event, Flap, Review};

/// One decision a person has to make.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct Decision {
    /// `flap`, `review`, `cap`, `paused`, `ask`, `not_counted` or `git_planted`.
    pub kind: &'static str,
    /// The goal.md line of the criterion concerned, if any.
    pub line: Option<u64>,
    /// What is wrong and what to do, one line.
    pub text: String,
}

/// The decisions pending in `run` (the last run's entries, in order), given whether a loop runs
/// now and the pause state in words (`since … by …`), if paused.
pub(crate) fn of(run: &[Entry], running: bool, paused: Option<String>) -> Vec<Decision> {
    let mut flaps: Vec<(&Entry, &Flap)> = Vec::new();
    let mut asks: Vec<(&Entry, &Review)> = Vec::new();
    for e in run {
        match &e.event {
            Event::Flap(f) => {
                flaps.retain(|(_, x)| x.line != f.line);
                flaps.push((e, f));
            }
            Event::Confirm(c) if c.all_pass => flaps.clear(),
            Event::LoopEnd(l) if l.outcome == "done" => {
                flaps.clear();
                asks.clear();
            }
            Event::Review(r) => {
                asks.retain(|(_, x)| x.line != r.line);
                if r.verdict == "ask" {
                    asks.push((e, r));
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    for (e, f) in flaps {
        let line = f.line;
        let runs: Vec<&str> = f.runs.iter().map(|&r| if r { "pass" } else { "fail" }).collect();
        out.push(Decision {
            kind: "flap",
            line: Some(line),
            text: format!(
                "goal.md:{line} `{}` flapped ({}) across the confirmation runs, so done is refused; \
                 make it deterministic or change the criterion, then kit loop",
                if e.has("criterion") { f.criterion.as_str() } else { "?" },
                runs.join(", ")
            ),
        });
    }
    for (e, r) in asks {
        let line = r.line;
        let reason = r.reason.trim();
        out.push(Decision {
            kind: "review",
            line: Some(line),
            text: format!(
                "the review at goal.md:{line} asks{}: {}",
                if e.has("evaluator") { format!(" (`{}`)", r.evaluator) } else { String::new() },
                if reason.is_empty() { "(no reason given)" } else { reason }
            ),
        });
    }
    // The last loop process's end, if it ended (a loop started after it, killed or running,
    // has not stopped at a cap).
    let last_end = run.iter().rev().find_map(|e| match &e.event {
        Event::LoopEnd(l) => Some(Some((e, l))),
        Event::LoopStart(_) => Some(None),
        _ => None,
    });
    if let Some((e, l)) = last_end.flatten().filter(|(_, l)| l.outcome == "cap" && !running) {
        out.push(Decision {
            kind: "cap",
            line: None,
            text: format!(
                "{}: raise the cap (flag, config.toml, or goal.md's Budget when it is the stricter) to go on, or accept where the run stands",
                // `iterations cap reached (2 of 2 iterations used); 0 of 2 criteria pass …`
                if e.has("reason") { l.reason.as_str() } else { "a cap was reached" }
                    .split("; ")
                    .next()
                    .unwrap_or("")
            ),
        });
    }
    if let Some(p) = paused {
        out.push(Decision {
            kind: "paused",
            line: None,
            text: format!("paused {p}; kit resume to go on"),
        });
    }
    out
}

/// The decisions of the whole journal `entries` that wait for a person's answer (`ask`), and the
/// answers to them that do not count (`not_counted`); see the module doc.
pub(crate) fn asks(entries: &[Entry]) -> Vec<Decision> {
    let all = crate::longrun::decisions::decisions(entries);
    let mut out = Vec::new();
    for (i, d) in all.iter().enumerate() {
        if crate::longrun::decisions::superseded(&all, i) {
            continue;
        }
        let n = d.number;
        let what = d.what();
        if d.answer.is_none() {
            out.push(Decision {
                kind: "ask",
                line: d.line,
                text: format!("#{n} {what}; kit approve {n} (or kit reject {n} --note WHY)"),
            });
        }
        for a in &d.not_counted {
            out.push(Decision {
                kind: "not_counted",
                line: d.line,
                text: format!(
                    "#{n} was {} by {} at {}, which does not count ({}); approve from your own \
                     shell",
                    a.verdict,
                    a.by,
                    a.at,
                    a.why.as_deref().unwrap_or("")
                ),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::longrun::event::fixture;
    use serde_json::json;

    #[test]
    fn a_flap_a_review_that_asks_and_a_cap_are_pending_until_settled() {
        let en = |v: Vec<serde_json::Value>| -> Vec<Entry> {
            v.into_iter().map(Entry::from_value).collect()
        };
        let run = en(vec![
            fixture("loop_start", json!({})),
            fixture("flap", json!({"line":7,"criterion":"pytest -q","runs":[true,false]})),
            fixture(
                "review",
                json!({"line":9,"evaluator":"judge","verdict":"ask","reason":"is the API public?"}),
            ),
            fixture("review", json!({"line":10,"verdict":"ask","reason":"x"})),
            fixture("review", json!({"line":10,"verdict":"pass","reason":"ok"})),
            fixture(
                "loop_end",
                json!({"outcome":"cap","reason":"iterations cap reached (2 of 2 iterations used)"}),
            ),
        ]);
        let d = of(&run, false, None);
        let kinds: Vec<&str> = d.iter().map(|d| d.kind).collect();
        assert_eq!(kinds, ["flap", "review", "cap"]);
        assert!(
            d[0].text.starts_with("goal.md:7 `pytest -q` flapped (pass, fail)"),
            "{}",
            d[0].text
        );
        assert_eq!(d[1].text, "the review at goal.md:9 asks (`judge`): is the API public?");
        assert_eq!(
            d[2].text,
            "iterations cap reached (2 of 2 iterations used): raise the cap (flag, config.toml, or goal.md's Budget when it is the stricter) \
             to go on, or accept where the run stands"
        );
        // A running loop: the cap is not pending; a later clean confirmation settles the flap.
        let mut later = run.clone();
        later.extend(en(vec![
            fixture("loop_start", json!({})),
            fixture("confirm", json!({"runs":2,"all_pass":true})),
        ]));
        let d = of(&later, true, Some("since t by ada".into()));
        let kinds: Vec<&str> = d.iter().map(|d| d.kind).collect();
        assert_eq!(kinds, ["review", "paused"]);
        // done settles everything.
        later.extend(en(vec![fixture("loop_end", json!({"outcome":"done"}))]));
        assert!(of(&later, false, None).is_empty());
    }
}
