//! Decisions pending for a person, read from the journal's last run and `longrun/PAUSE`:
//! - `flap`: a criterion passed and failed across the confirmation runs (`flap` event) and no
//!   later confirmation passed every run (`confirm` with `all_pass`) nor a `done` followed: done
//!   is refused on it until someone makes it deterministic or changes it;
//! - `review`: a review criterion's evaluator answered `ask` (`review` with verdict `ask`) and
//!   no later verdict for the same goal.md line answered it;
//! - `cap`: the last loop process of the run stopped at a cap (`loop_end` outcome `cap`) and no
//!   loop runs now: raise the cap, change the goal, or start afresh;
//! - `paused`: `longrun/PAUSE` exists: the loop waits for `kit resume`.
//!
//! Each is `{kind, line (goal.md line or null), text}`; the text says what is wrong and what to
//! do. `kit status` prints all but `paused` as `needs you:` lines (`paused:` has its own line).

use serde::Serialize;
use serde_json::Value;

use crate::longrun::history::event_name;

/// One decision a person has to make.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct Decision {
    /// `flap`, `review`, `cap` or `paused`.
    pub kind: &'static str,
    /// The goal.md line of the criterion concerned, if any.
    pub line: Option<u64>,
    /// What is wrong and what to do, one line.
    pub text: String,
}

/// The decisions pending in `run` (the last run's events, in order), given whether a loop runs
/// now and the pause state in words (`since … by …`), if paused.
pub(crate) fn of(run: &[Value], running: bool, paused: Option<String>) -> Vec<Decision> {
    let mut flaps: Vec<(u64, &Value)> = Vec::new();
    let mut asks: Vec<(u64, &Value)> = Vec::new();
    for e in run {
        let line = e["line"].as_u64().unwrap_or(0);
        match event_name(e) {
            "flap" => {
                flaps.retain(|(l, _)| *l != line);
                flaps.push((line, e));
            }
            "confirm" if e["all_pass"].as_bool() == Some(true) => flaps.clear(),
            "loop_end" if e["outcome"] == "done" => {
                flaps.clear();
                asks.clear();
            }
            "review" => {
                asks.retain(|(l, _)| *l != line);
                if e["verdict"] == "ask" {
                    asks.push((line, e));
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    for (line, e) in flaps {
        let runs: Vec<&str> = e["runs"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| if r.as_bool() == Some(true) { "pass" } else { "fail" })
            .collect();
        out.push(Decision {
            kind: "flap",
            line: Some(line),
            text: format!(
                "goal.md:{line} `{}` flapped ({}) across the confirmation runs, so done is refused; \
                 make it deterministic or change the criterion, then kit loop",
                e["criterion"].as_str().unwrap_or("?"),
                runs.join(", ")
            ),
        });
    }
    for (line, e) in asks {
        let reason = e["reason"].as_str().unwrap_or("").trim();
        out.push(Decision {
            kind: "review",
            line: Some(line),
            text: format!(
                "the review at goal.md:{line} asks{}: {}",
                e["evaluator"].as_str().map(|c| format!(" (`{c}`)")).unwrap_or_default(),
                if reason.is_empty() { "(no reason given)" } else { reason }
            ),
        });
    }
    // The last loop process's end, if it ended (a loop started after it, killed or running,
    // has not stopped at a cap).
    let last_end = run
        .iter()
        .rev()
        .find(|e| matches!(event_name(e), "loop_end" | "loop_start"))
        .filter(|e| event_name(e) == "loop_end");
    if let Some(e) = last_end.filter(|e| e["outcome"] == "cap" && !running) {
        out.push(Decision {
            kind: "cap",
            line: None,
            text: format!(
                "{}: raise the cap (flag, config.toml, or goal.md's Budget when it is the stricter) to go on, or accept where the run stands",
                // `iterations cap reached (2 of 2 iterations used); 0 of 2 criteria pass …`
                e["reason"]
                    .as_str()
                    .unwrap_or("a cap was reached")
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_flap_a_review_that_asks_and_a_cap_are_pending_until_settled() {
        let run = vec![
            json!({"event":"loop_start"}),
            json!({"event":"flap","line":7,"criterion":"pytest -q","runs":[true,false]}),
            json!({"event":"review","line":9,"evaluator":"judge","verdict":"ask","reason":"is the API public?"}),
            json!({"event":"review","line":10,"verdict":"ask","reason":"x"}),
            json!({"event":"review","line":10,"verdict":"pass","reason":"ok"}),
            json!({"event":"loop_end","outcome":"cap","reason":"iterations cap reached (2 of 2 iterations used)"}),
        ];
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
        later.push(json!({"event":"loop_start"}));
        later.push(json!({"event":"confirm","runs":2,"all_pass":true}));
        let d = of(&later, true, Some("since t by ada".into()));
        let kinds: Vec<&str> = d.iter().map(|d| d.kind).collect();
        assert_eq!(kinds, ["review", "paused"]);
        // done settles everything.
        later.push(json!({"event":"loop_end","outcome":"done"}));
        assert!(of(&later, false, None).is_empty());
    }
}
