//! Review criteria: layered verification (DESIGN §4). The deterministic criteria (function,
//! regression, limit) are the floor; a `- review: TEXT` criterion asks an *evaluator* — another
//! agent or model, any command set as `[review] evaluator` in config.toml — to judge what no test
//! can (is the error message helpful, is the design what the end state asks). The planner (kit's
//! prompt), the executor (the agent) and the evaluator are three separate, swappable commands.
//!
//! The loop runs a review only when every deterministic criterion passed (and passed again in the
//! flake guard's runs); a review can only refuse done, never turn a failing test into a pass.
//!
//! # What the evaluator receives
//!
//! It runs as `sh -c EVALUATOR` in the repository root, in its own process group, killed as a
//! group at `[review] timeout`. Kit first writes, in a folder of its own
//! (`longrun/.runs/NNN.review/`, NNN the iteration):
//!
//! | file | content |
//! |---|---|
//! | `goal.md` | the goal as the loop read it |
//! | `diff.patch` | `git diff` from the base commit (frozen.toml's `base_commit`; the empty tree when there is none) to the working tree, untracked files included, `longrun/` left out |
//! | `criteria.json` | the deterministic criteria's results, as journaled in `criteria` |
//!
//! Its stdin is one JSON object: `{"line": N, "review": TEXT, "iteration": N, "base": SHA,
//! "goal_file": PATH, "diff_file": PATH, "criteria_file": PATH, "dir": PATH}` (absolute paths),
//! and the same facts are in its environment: `KIT_REVIEW_LINE`, `KIT_REVIEW_TEXT`,
//! `KIT_REVIEW_ITERATION`, `KIT_REVIEW_BASE`, `KIT_REVIEW_GOAL`, `KIT_REVIEW_DIFF`,
//! `KIT_REVIEW_CRITERIA`, `KIT_REVIEW_DIR`.
//!
//! # The verdict it must give
//!
//! The last non-empty line of its stdout is the verdict, either
//! `VERDICT: pass|fail|ask REASON` (the word in any case; `REASON` optional, may start after
//! `:`, `-` or `—`) or a JSON object `{"verdict": "pass"|"fail"|"ask", "reason": "…"}`. `ask`
//! means a decision for a human: the loop stops (exit 3) with the reason as the question.
//! Anything else counts as **fail**, with the reason saying why: no verdict line, an unknown
//! word, a non-zero exit (even after `VERDICT: pass`), a timeout, an evaluator that cannot start.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{json, Value};

use super::{Goal, Rating, Review};

/// An evaluator's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The review criterion is met.
    Pass,
    /// It is not (or the evaluator's answer was malformed).
    Fail,
    /// The evaluator cannot judge without a human: a decision pending.
    Ask,
}

impl Verdict {
    /// `pass`, `fail` or `ask`, as journaled.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Ask => "ask",
        }
    }

    fn from_word(w: &str) -> Option<Verdict> {
        match w.to_ascii_lowercase().as_str() {
            "pass" => Some(Verdict::Pass),
            "fail" => Some(Verdict::Fail),
            "ask" => Some(Verdict::Ask),
            _ => None,
        }
    }
}

/// What the loop hands the evaluator besides the review itself.
#[derive(Clone, Debug)]
pub struct Inputs<'a> {
    /// goal.md's text.
    pub goal_text: &'a str,
    /// The deterministic criteria's results (the `criteria` event's `results`).
    pub criteria: &'a Value,
    /// The commit the diff starts from (frozen.toml's `base_commit`); empty = the empty tree.
    pub base: &'a str,
    /// The loop iteration (0 for the baseline).
    pub iteration: u64,
    /// The folder kit writes the input files into (created when missing).
    pub dir: &'a Path,
}

/// The outcome of one evaluator run, as the loop journals it (`review`).
#[derive(Clone, Debug, Serialize)]
pub struct ReviewResult {
    /// 1-based line of the review in goal.md.
    pub line: usize,
    /// The review's text.
    pub text: String,
    /// The evaluator command line.
    pub evaluator: String,
    /// The verdict (fail when the answer was malformed).
    pub verdict: Verdict,
    /// The evaluator's reason, or why its answer counts as fail.
    pub reason: String,
    /// Its exit status; None when killed (the timeout) or never started.
    pub exit: Option<i32>,
    /// Whether the timeout killed it.
    pub timed_out: bool,
    /// Wall time, milliseconds.
    pub duration_ms: u64,
    /// The last lines of its stdout and stderr, for a person reading the journal.
    pub output_tail: String,
}

/// The git empty tree, the base of a repository with no commit at freeze time.
const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/// Write the input files into `inputs.dir`: `goal.md`, `diff.patch`, `criteria.json`. Returns
/// their absolute paths in that order.
///
/// Errors: a file cannot be written (`crate::error::Error::Io`).
pub fn write_inputs(root: &Path, inputs: &Inputs<'_>) -> crate::error::Result<[PathBuf; 3]> {
    crate::atomic::create_dir_all(inputs.dir)?;
    let dir =
        if inputs.dir.is_absolute() { inputs.dir.to_path_buf() } else { root.join(inputs.dir) };
    let goal = dir.join("goal.md");
    let diff = dir.join("diff.patch");
    let criteria = dir.join("criteria.json");
    crate::atomic::write_atomic(&goal, inputs.goal_text.as_bytes())?;
    let patch = diff_since(root, inputs.base, &dir)
        .unwrap_or_else(|e| format!("# kit could not compute the diff: {e}\n"));
    crate::atomic::write_atomic(&diff, patch.as_bytes())?;
    let text = serde_json::to_string_pretty(inputs.criteria).unwrap_or_else(|_| "[]".into());
    crate::atomic::write_atomic(&criteria, text.as_bytes())?;
    Ok([goal, diff, criteria])
}

/// `git diff` from `base` to the working tree, untracked (not ignored) files included and
/// `longrun/` left out, computed through a temporary index in `scratch` so that the
/// repository's own index is never touched.
///
/// Errors: a git command fails (its message).
pub fn diff_since(root: &Path, base: &str, scratch: &Path) -> std::result::Result<String, String> {
    let index = scratch.join("index.tmp");
    let _ = std::fs::remove_file(&index);
    let env = vec![("GIT_INDEX_FILE".to_string(), index.display().to_string())];
    let base = if base.is_empty() { EMPTY_TREE } else { base };
    let run = |args: &[&str]| crate::git::output_in(root, &env, args).map_err(|e| e.to_string());
    let result = run(&["add", "-A", "--", ".", ":(exclude)longrun"])
        .and_then(|_| run(&["diff", "--cached", "--no-color", "--no-ext-diff", base, "--", "."]));
    let _ = std::fs::remove_file(&index);
    result
}

/// Run `evaluator` on `review` (see the module doc for its inputs and the verdict format),
/// killing its process group after `timeout`. Never fails: an evaluator that cannot start or
/// answers badly gives a [`Verdict::Fail`] saying why.
pub fn run(
    review: &Review,
    evaluator: &str,
    root: &Path,
    inputs: &Inputs<'_>,
    timeout: Duration,
) -> ReviewResult {
    let started = Instant::now();
    let mut result = ReviewResult {
        line: review.line,
        text: review.text.clone(),
        evaluator: evaluator.to_string(),
        verdict: Verdict::Fail,
        reason: String::new(),
        exit: None,
        timed_out: false,
        duration_ms: 0,
        output_tail: String::new(),
    };
    let files = match write_inputs(root, inputs) {
        Ok(f) => f,
        Err(e) => {
            result.reason = format!("kit could not write the evaluator's input files: {e}");
            return result;
        }
    };
    let [goal, diff, criteria] = files;
    let dir = goal.parent().map(Path::to_path_buf).unwrap_or_default();
    let request = json!({
        "line": review.line,
        "review": review.text,
        "iteration": inputs.iteration,
        "base": inputs.base,
        "goal_file": goal,
        "diff_file": diff,
        "criteria_file": criteria,
        "dir": dir,
    });
    let stdin = format!("{request}\n");
    let mut cmd = std::process::Command::new("sh");
    cmd.arg("-c").arg(evaluator).current_dir(root);
    for (k, v) in [
        ("KIT_REVIEW_LINE", review.line.to_string()),
        ("KIT_REVIEW_TEXT", review.text.clone()),
        ("KIT_REVIEW_ITERATION", inputs.iteration.to_string()),
        ("KIT_REVIEW_BASE", inputs.base.to_string()),
        ("KIT_REVIEW_GOAL", goal.display().to_string()),
        ("KIT_REVIEW_DIFF", diff.display().to_string()),
        ("KIT_REVIEW_CRITERIA", criteria.display().to_string()),
        ("KIT_REVIEW_DIR", dir.display().to_string()),
    ] {
        cmd.env(k, v);
    }
    let how = crate::proc::Spawn { input: Some(stdin.as_bytes()), merge: false, own_group: true };
    let finished = crate::proc::spawn(&mut cmd, how)
        .and_then(|r| r.wait(timeout, Some(Duration::from_secs(2))));
    result.duration_ms = started.elapsed().as_millis().min(u128::from(u64::MAX)) as u64;
    let f = match finished {
        Ok(f) => f,
        Err(e) => {
            result.reason = format!("the evaluator `{evaluator}` could not start: {e}");
            return result;
        }
    };
    let stdout = String::from_utf8_lossy(&f.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&f.stderr).into_owned();
    result.output_tail = tail(&format!("{stdout}{stderr}"), 12);
    result.exit = f.code;
    result.timed_out = f.timed_out;
    if f.timed_out {
        result.reason = format!(
            "the evaluator did not answer within {}: counted as fail",
            crate::units::format_duration(timeout)
        );
        return result;
    }
    match (parse_verdict(&stdout), f.code) {
        (Ok((v, reason)), Some(0)) => {
            result.verdict = v;
            result.reason = reason;
        }
        (Ok((v, reason)), code) => {
            result.reason = format!(
                "the evaluator exited {} after `VERDICT: {}` ({reason}): counted as fail",
                code.map_or("by a signal".to_string(), |c| c.to_string()),
                v.as_str()
            );
        }
        (Err(why), code) => {
            let exited = match code {
                Some(0) => String::new(),
                Some(c) => format!(" and exited {c}"),
                None => " and was killed by a signal".into(),
            };
            result.reason = format!("{why}{exited}: counted as fail");
        }
    }
    result
}

/// The verdict on the last non-empty line of `stdout`: `VERDICT: WORD [REASON]` or
/// `{"verdict": WORD, "reason": TEXT}`. Returns (verdict, reason; empty when none was given).
///
/// Errors: why the answer is malformed, for the journal and the prompt.
pub fn parse_verdict(stdout: &str) -> std::result::Result<(Verdict, String), String> {
    const SHAPE: &str =
        "its last line must be VERDICT: pass|fail|ask REASON, or {\"verdict\": …, \"reason\": …}";
    let Some(last) = stdout.lines().map(str::trim).rfind(|l| !l.is_empty()) else {
        return Err(format!("the evaluator printed nothing; {SHAPE}"));
    };
    let shown: String = last.chars().take(120).collect();
    if last.starts_with('{') {
        let v: Value = serde_json::from_str(last).map_err(|e| {
            format!("the evaluator's last line `{shown}` is not valid JSON ({e}); {SHAPE}")
        })?;
        let word = v.get("verdict").and_then(Value::as_str).unwrap_or("");
        let verdict = Verdict::from_word(word).ok_or_else(|| {
            format!("the evaluator's verdict `{word}` is not pass, fail or ask; {SHAPE}")
        })?;
        let reason = v.get("reason").and_then(Value::as_str).unwrap_or("").trim().to_string();
        return Ok((verdict, reason));
    }
    let head = last.get(..8).unwrap_or("");
    if !head.eq_ignore_ascii_case("verdict:") {
        return Err(format!("the evaluator's last line `{shown}` holds no verdict; {SHAPE}"));
    }
    let rest = last[8..].trim_start();
    let word: String = rest.chars().take_while(char::is_ascii_alphabetic).collect();
    let verdict = Verdict::from_word(&word).ok_or_else(|| {
        format!(
            "the evaluator's verdict `{}` is not pass, fail or ask; {SHAPE}",
            rest.split_whitespace().next().unwrap_or("")
        )
    })?;
    let reason = rest[word.len()..]
        .trim_start_matches(|c: char| c.is_whitespace() || matches!(c, ':' | '-' | '—' | '–'))
        .trim()
        .to_string();
    Ok((verdict, reason))
}

/// The linter's `rating` of `goal`, with its review criteria weighed: reviews never raise a goal
/// with commands (tests are the floor), and a goal whose only evidence is review criteria — no
/// command, no prose — is rated 2, never more: the evaluator runs, but its opinion is no floor.
/// Its third reason says so and what to add.
///
/// Human criteria (`- human:`) weigh the same way: a person's approval is no floor either, so a
/// goal whose only criteria are human ones (and reviews) is rated 2 at most.
pub fn weigh(goal: &Goal, mut rating: Rating) -> Rating {
    let n = goal.reviews.len();
    if !goal.criteria.is_empty() || !goal.prose_criteria.is_empty() {
        return rating;
    }
    if n == 0 {
        return weigh_humans(goal, rating);
    }
    let reviews =
        if n == 1 { "1 review criterion".to_string() } else { format!("{n} review criteria") };
    let lines: Vec<String> = goal.reviews.iter().map(|r| format!("goal.md:{}", r.line)).collect();
    rating.level = 2;
    let why = [
        format!("criteria: {reviews} written under `## Criteria` ({})", lines.join(", ")),
        format!(
            "commands: the loop runs the [review] evaluator on {reviews}, but no test decides {}",
            if n == 1 { "it" } else { "them" }
        ),
        "no shortcut: not yet — only review criteria: an evaluator's opinion is not a floor, so \
         level 2 at most; add the tests that decide the work (- function: `COMMAND` → `OUTPUT`, \
         - regression: …) and keep the reviews for what no test can judge"
            .to_string(),
    ];
    for (i, w) in why.into_iter().enumerate() {
        match rating.reasons.get_mut(i) {
            Some(r) => *r = w,
            None => rating.reasons.push(w),
        }
    }
    rating
}

/// [`weigh`] for a goal with no command, no prose and no review, only human criteria.
fn weigh_humans(goal: &Goal, mut rating: Rating) -> Rating {
    let n = goal.humans.len();
    if n == 0 {
        return rating;
    }
    let humans =
        if n == 1 { "1 human criterion".to_string() } else { format!("{n} human criteria") };
    let lines: Vec<String> = goal.humans.iter().map(|h| format!("goal.md:{}", h.line)).collect();
    rating.level = 2;
    let why = [
        format!("criteria: {humans} written under `## Criteria` ({})", lines.join(", ")),
        format!(
            "commands: a person approves {humans} (kit approve N), but no test decides {}",
            if n == 1 { "it" } else { "them" }
        ),
        "no shortcut: not yet — only human criteria: an approval is not a floor, so level 2 at \
         most; add the tests that decide the work (- function: `COMMAND` → `OUTPUT`, \
         - regression: …) and keep the human criteria for what only a person can judge"
            .to_string(),
    ];
    for (i, w) in why.into_iter().enumerate() {
        match rating.reasons.get_mut(i) {
            Some(r) => *r = w,
            None => rating.reasons.push(w),
        }
    }
    rating
}

fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_are_read_from_the_last_line_and_anything_else_fails() {
        let ok: &[(&str, Verdict, &str)] = &[
            ("thinking…\nVERDICT: pass\n", Verdict::Pass, ""),
            (
                "VERDICT: fail — the message names no line\n\n",
                Verdict::Fail,
                "the message names no line",
            ),
            (
                "verdict: Ask: should errors go to stderr?",
                Verdict::Ask,
                "should errors go to stderr?",
            ),
            (
                "{\"verdict\":\"fail\",\"reason\":\"no tests for it\"}",
                Verdict::Fail,
                "no tests for it",
            ),
        ];
        for (out, v, reason) in ok {
            assert_eq!(parse_verdict(out), Ok((*v, reason.to_string())), "{out}");
        }
        for (out, word) in [
            ("", "printed nothing"),
            ("VERDICT: pass\nok then", "holds no verdict"),
            ("VERDICT: maybe", "`maybe` is not pass"),
            ("VERDICT:", "`` is not pass"),
            ("{\"verdict\": 1}", "is not pass"),
            ("{oops", "not valid JSON"),
        ] {
            let e = parse_verdict(out).unwrap_err();
            assert!(e.contains(word), "{out}: {e}");
        }
    }

    #[test]
    fn a_goal_with_only_reviews_is_rated_2_at_most_and_reviews_never_raise_a_goal() {
        let root = Path::new("/nonexistent");
        let only = super::super::parse(
            Path::new("goal.md"),
            "# G\n## End state\nx\n## Criteria\n- review: the messages are clear\n",
        )
        .unwrap();
        let r = super::super::rate(&only, &[], root);
        assert_eq!(r.level, 2, "{r:?}");
        assert!(r.reasons[2].contains("level 2 at most"), "{r:?}");
        assert!(r.reasons[0].contains("goal.md:5"), "{r:?}");
        let with_prose = super::super::parse(
            Path::new("goal.md"),
            "# G\n## Criteria\n- it works\n- review: the messages are clear\n",
        )
        .unwrap();
        assert_eq!(super::super::rate(&with_prose, &[], root).level, 1);
        let tested =
            "# G\n## Criteria\n- function: `python3 -m unittest t` → `Ran 3 tests` and `re:^OK$`\n";
        let plain = super::super::parse(Path::new("goal.md"), tested).unwrap();
        let reviewed = super::super::parse(
            Path::new("goal.md"),
            &format!("{tested}- review: the messages are clear\n"),
        )
        .unwrap();
        let (a, b) =
            (super::super::rate(&plain, &[], root), super::super::rate(&reviewed, &[], root));
        assert_eq!((a.level, a.reasons), (b.level, b.reasons));
    }

    #[test]
    fn a_goal_with_only_human_criteria_is_rated_2_at_most_and_they_never_raise_a_goal() {
        let root = Path::new("/nonexistent");
        let parse = |t: &str| super::super::parse(Path::new("goal.md"), t).unwrap();
        let only = parse("# G\n## Criteria\n- human: the messages read well\n");
        let r = super::super::rate(&only, &[], root);
        assert_eq!(r.level, 2, "{r:?}");
        assert!(r.reasons[0].contains("1 human criterion") && r.reasons[0].contains("goal.md:3"));
        assert!(r.reasons[2].contains("level 2 at most"), "{r:?}");
        let tested =
            "# G\n## Criteria\n- function: `python3 -m unittest t` → `Ran 3 tests` and `re:^OK$`\n";
        let (a, b) = (
            super::super::rate(&parse(tested), &[], root),
            super::super::rate(&parse(&format!("{tested}- human: ship it\n")), &[], root),
        );
        assert_eq!((a.level, a.reasons), (b.level, b.reasons));
    }

    #[test]
    fn the_evaluator_gets_the_goal_the_diff_and_the_results() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let git = |args: &[&str]| crate::git::output_in(root, &[], args).unwrap();
        git(&["init", "-q"]);
        std::fs::write(root.join("a.txt"), "one\n").unwrap();
        git(&["add", "a.txt"]);
        git(&["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "a"]);
        let base = git(&["rev-parse", "HEAD"]).trim().to_string();
        std::fs::write(root.join("a.txt"), "two\n").unwrap();
        std::fs::write(root.join("new.txt"), "fresh\n").unwrap();
        let results = json!([{ "line": 3, "passed": true }]);
        let out = root.join("scratch");
        let inputs =
            Inputs { goal_text: "# G\n", criteria: &results, base: &base, iteration: 4, dir: &out };
        let review = Review { line: 7, text: "the diff is small".into() };
        let script = "grep -q '+two' \"$KIT_REVIEW_DIFF\" && grep -q fresh \"$KIT_REVIEW_DIFF\" \
            && grep -q '\"line\": 3' \"$KIT_REVIEW_CRITERIA\" && grep -q '\"line\":7' && \
            [ \"$KIT_REVIEW_TEXT\" = 'the diff is small' ] && echo 'VERDICT: pass fine' || echo 'VERDICT: fail inputs'";
        let r = run(&review, script, root, &inputs, Duration::from_secs(60));
        assert_eq!((r.verdict, r.reason.as_str()), (Verdict::Pass, "fine"), "{r:?}");
        // The repository's own index is untouched: new.txt is still untracked.
        assert!(git(&["status", "--porcelain"]).contains("?? new.txt"));
        let r =
            run(&review, "echo 'VERDICT: pass'; exit 1", root, &inputs, Duration::from_secs(60));
        assert_eq!(r.verdict, Verdict::Fail);
        assert!(r.reason.contains("exited 1"), "{}", r.reason);
        let r = run(&review, "sleep 30", root, &inputs, Duration::from_millis(300));
        assert!(r.timed_out && r.verdict == Verdict::Fail, "{r:?}");
    }
}
