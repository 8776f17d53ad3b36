//! Adversarial outputs (issue 22): the table of named shortcuts in the sibling modules knows
//! the shapes someone has seen; this module tries each criterion against the outputs a shortcut
//! would produce, whatever the expectation looks like. For a test runner kit knows, it writes the
//! runner's own summary with tests skipped, failed, errored, fewer than the suite holds, none at
//! all, and an empty output, each with the exit status the runner gives it (or the criterion's
//! own when the command throws the runner's status away). For a limit, it takes the line shape
//! of the expectation (an example line built from its regex) and puts a number far past any
//! plausible bound (10^12, and 9999999999999, the largest number of the same width) where the
//! measured value stands, or after what the expectation reads.
//!
//! A function or regression criterion that accepts any of its outputs is a shortcut; a limit
//! must reject at least one of its far-past values. Acceptance is decided by
//! [`Criterion::accepts`], the rule the loop applies to a real run.

use regex_syntax::hir::{Class, Hir, HirKind};
use serde::{Deserialize, Serialize};

use super::runner::{Runner, RunnerKind};
use super::{shell, Criterion, Expectation, Kind, Lint};

/// A number far past any plausible bound of a measured value (ms, KB, count).
const FAR: &str = "1000000000000";
/// The largest number of the same width as [`FAR`].
const FAR_MAX: &str = "9999999999999";

/// The trial of a value after what a limit's expectation reads.
const AFTER: &str = "a measured value after what the expectation reads";

/// One adversarial output tried against a criterion.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trial {
    /// 1-based line of the criterion in goal.md.
    pub line: usize,
    /// What run the output stands for: `tests skipped`, `a failure`, `fewer tests`,
    /// `no output`, `a value far past any bound`…
    pub shortcut: String,
    /// The output tried (stdout and stderr together).
    pub output: String,
    /// The exit status it was tried with.
    pub exit: i32,
    /// Whether the criterion accepts it (its exit status and every expectation met).
    pub accepted: bool,
}

/// How a runner frames its summary line in a whole output.
type Style = Box<dyn Fn(&str) -> String>;

/// A candidate output: (what it stands for, output, exit status of the honest runner).
type Candidate = (String, String, i32);

impl Lint<'_> {
    /// Try criterion `c` against the outputs a shortcut would produce; name it a shortcut when
    /// it accepts one (function, regression) or rejects none (limit). `table_named` says the
    /// table of named shortcuts already names this line (then no second message is added).
    pub(super) fn adversary(&mut self, c: &Criterion, suite_count: Option<u64>) {
        if c.expectations.is_empty() {
            return;
        }
        let status_lost = self.status_lost.contains(&c.line);
        let table_named = self.shortcuts.iter().any(|s| s.line == c.line);
        let exit_for = |runner_exit: i32| if status_lost { c.exit } else { runner_exit };
        let trials: Vec<Trial> = match c.kind {
            Kind::Limit => {
                let Some(cands) = limit_candidates(c) else { return };
                cands.into_iter().map(|(what, out, _)| trial(c, what, out, c.exit)).collect()
            }
            Kind::Function | Kind::Regression => {
                let Some(cands) = test_candidates(c, suite_count) else { return };
                cands
                    .into_iter()
                    .map(|(what, out, code)| {
                        let exit = if c.exit == 0 { exit_for(code) } else { c.exit };
                        trial(c, what, out, exit)
                    })
                    .collect()
            }
        };
        let verdict = match c.kind {
            Kind::Limit => {
                // Where the expectation has a measured value (a number a class makes), the
                // far-past values put there decide; a line without one is tried with a value
                // after what it reads.
                let at_value: Vec<&Trial> =
                    trials.iter().filter(|t| !t.shortcut.starts_with(AFTER)).collect();
                let deciding: Vec<&Trial> =
                    if at_value.is_empty() { trials.iter().collect() } else { at_value };
                (!deciding.is_empty() && deciding.iter().all(|t| t.accepted))
                    .then(|| deciding[0].clone())
            }
            _ => trials.iter().find(|t| t.accepted).cloned(),
        };
        if let (Some(t), false) = (verdict, table_named) {
            let shown = show_output(&t.output);
            let items: Vec<String> =
                c.expectations.iter().map(|e| format!("`{}`", e.as_written())).collect();
            let (problem, fix) = match c.kind {
                Kind::Limit => (
                    format!(
                        "{} accepts {shown}, {}: the limit bounds nothing",
                        items.join(" and "),
                        t.shortcut
                    ),
                    limit_fix(c),
                ),
                _ => (
                    format!(
                        "{} accepts {shown}{}, what a run with {} prints: the criterion passes without the work",
                        items.join(" and "),
                        if t.exit == 0 { String::new() } else { format!(" (exit {})", t.exit) },
                        t.shortcut
                    ),
                    test_fix(c, &t),
                ),
            };
            self.flag(c.line, problem, fix);
        }
        self.trials.extend(trials);
    }
}

fn trial(c: &Criterion, what: String, output: String, exit: i32) -> Trial {
    let accepted = c.accepts(exit, &output);
    Trial { line: c.line, shortcut: what, output, exit, accepted }
}

/// An output for a message: its lines joined by ` ⏎ `, cut after 80 characters.
fn show_output(out: &str) -> String {
    let t = out.trim();
    if t.is_empty() {
        return "an empty output".to_string();
    }
    let lines: Vec<&str> = t.lines().filter(|l| !l.trim().is_empty()).collect();
    // The runner's summary is at the end: show the last lines.
    let from = lines.len().saturating_sub(2);
    let joined = lines[from..].join(" ⏎ ");
    let joined = if joined.chars().count() > 80 {
        format!("{}…", joined.chars().take(79).collect::<String>())
    } else {
        joined
    };
    format!("`{joined}`")
}

fn test_fix(c: &Criterion, t: &Trial) -> String {
    let kind = Runner::of_criterion(c).map(|r| r.kind);
    let count = super::runner::count_example(c);
    match (kind, t.shortcut.as_str()) {
        (_, s) if s.starts_with("fewer") || s.starts_with("no tests") => {
            format!("pin the count a full run reports: {count}")
        }
        (Some(RunnerKind::Unittest), _) => {
            "expect the verdict as a whole line, `re:^OK$` (it refuses `OK (skipped=1)`), with the count: `Ran N tests` and `re:^OK$`".to_string()
        }
        (Some(RunnerKind::Pytest), _) => format!(
            "pin the number passed, which skips and deselections lower: {count}"
        ),
        (Some(RunnerKind::Cargo), _) => {
            "pin `test result: ok. N passed; 0 failed; 0 ignored` with N a full run's count".into()
        }
        (Some(RunnerKind::Go), _) => {
            "run with -v and expect `--- PASS: TestName` for each test the work adds".into()
        }
        (None, _) => format!("expect output only the finished work prints: {count}"),
    }
}

fn limit_fix(c: &Criterion) -> String {
    format!(
        "bound the measured number and end the pattern after it, e.g. `re:^NAME=[0-9]{{1,3}}$` for a value under 1000 (NAME what `{}` prints), so that a larger or longer number fails",
        super::cut(c.command.clone())
    )
}

impl Runner {
    /// The first runner kit knows among the simple commands of `c`.
    pub(super) fn of_criterion(c: &Criterion) -> Option<Runner> {
        shell::simple_commands(&c.command).iter().find_map(|w| Runner::of(w))
    }
}

/// The count the expectations pin in the runner's own summary words: `Ran N tests` (unittest),
/// `N passed` (pytest, cargo test). None when no expectation holds one.
pub(super) fn pinned_count(c: &Criterion, kind: &RunnerKind) -> Option<u64> {
    let re = match kind {
        RunnerKind::Unittest => regex::Regex::new(r"Ran (\d+) tests?\b"),
        RunnerKind::Pytest | RunnerKind::Cargo => regex::Regex::new(r"(?:^|[^\d])(\d+) passed"),
        RunnerKind::Go => return None,
    }
    .ok()?;
    c.expectations.iter().find_map(|e| {
        let text = match e {
            Expectation::Substring(s) => s.clone(),
            Expectation::Regex { pattern, .. } => pattern.replace("\\ ", " "),
        };
        re.captures(&text)?.get(1)?.as_str().parse().ok()
    })
}

/// The outputs a shortcut would produce for a function or regression criterion, or None when
/// kit cannot build an output the criterion accepts from an honest run (then it cannot judge).
fn test_candidates(c: &Criterion, suite_count: Option<u64>) -> Option<Vec<Candidate>> {
    let runner = Runner::of_criterion(c);
    let kind = runner.as_ref().map(|r| &r.kind);
    let n = kind.and_then(|k| pinned_count(c, k)).or(suite_count).unwrap_or(9).max(1);
    let witness = witness_lines(c);
    let styles: Vec<Style> = match kind {
        Some(RunnerKind::Unittest) => vec![Box::new(|tail: &str| {
            format!("test_one (tests.test_x.T.test_one) ... ok\n\n{}\n{tail}\n", "-".repeat(70))
        })],
        Some(RunnerKind::Pytest) => vec![
            Box::new(|tail: &str| format!("....\n{tail}\n")),
            Box::new(|tail: &str| format!("{} {tail} {}\n", "=".repeat(20), "=".repeat(20))),
        ],
        Some(RunnerKind::Cargo) => {
            vec![Box::new(|tail: &str| format!("\nrunning 1 test\ntest one ... ok\n\n{tail}\n"))]
        }
        Some(RunnerKind::Go) | None => vec![Box::new(|tail: &str| tail.to_string())],
    };
    let summaries = summaries(kind, n, witness.as_deref().unwrap_or(""));
    let (honest, rest) = summaries.split_first()?;
    // The first style whose honest run the criterion accepts; extra expected lines (a test's
    // name, a message) are added to every output when no style holds them.
    for extra in [String::new(), witness.clone().unwrap_or_default()] {
        for style in &styles {
            let build = |tail: &str| {
                if extra.is_empty() {
                    style(tail)
                } else {
                    format!("{extra}\n{}", style(tail))
                }
            };
            if c.accepts(if c.exit == 0 { honest.2 } else { c.exit }, &build(&honest.1)) {
                let mut out: Vec<Candidate> = rest
                    .iter()
                    .map(|(what, tail, code)| (what.clone(), build(tail), *code))
                    .collect();
                out.push(("no output at all".into(), String::new(), 0));
                return Some(out);
            }
        }
    }
    // No honest output kit can build: only the empty output is tried.
    Some(vec![("no output at all".into(), String::new(), 0)])
}

/// The runner's summary for an honest run of `n` tests, first, then the shortcut runs:
/// (what, summary, exit status).
fn summaries(kind: Option<&RunnerKind>, n: u64, witness: &str) -> Vec<Candidate> {
    let s = |k: u64| if k == 1 { "" } else { "s" };
    let k = if n > 3 { 3 } else { 1 };
    let c = |what: &str, text: String, code: i32| (what.to_string(), text, code);
    match kind {
        Some(RunnerKind::Unittest) => {
            let ran =
                |m: u64, verdict: &str| format!("Ran {m} test{} in 0.004s\n\n{verdict}", s(m));
            vec![
                c("an honest run", ran(n, "OK"), 0),
                c(
                    "tests skipped (code under work can raise unittest.SkipTest)",
                    ran(n, &format!("OK (skipped={k})")),
                    0,
                ),
                c("a failing test", ran(n, "FAILED (failures=1)"), 1),
                c("a test that errors", ran(n, "FAILED (errors=1)"), 1),
                c("fewer tests than the suite holds", ran(n - 1, "OK"), 0),
                c("no tests collected", ran(0, "OK"), 0),
            ]
        }
        Some(RunnerKind::Pytest) => vec![
            c("an honest run", format!("{n} passed in 0.05s"), 0),
            c(
                "tests skipped (code under work can call pytest.skip)",
                format!("{} passed, {k} skipped in 0.05s", n - k),
                0,
            ),
            c(
                "a test marked xfail at run time (pytest.xfail)",
                format!("{} passed, 1 xfailed in 0.05s", n - 1),
                0,
            ),
            c("tests deselected", format!("{} passed, {k} deselected in 0.05s", n - k), 0),
            c("a failing test", format!("1 failed, {} passed in 0.05s", n - 1), 1),
            c("a test that errors", format!("{n} passed, 1 error in 0.05s"), 1),
            c("fewer tests than the suite holds", format!("{} passed in 0.05s", n - 1), 0),
            c("no tests collected", "no tests ran in 0.01s".to_string(), 5),
        ],
        Some(RunnerKind::Cargo) => {
            let res = |v: &str, p: u64, f: u64, i: u64, fo: u64| {
                format!("test result: {v}. {p} passed; {f} failed; {i} ignored; 0 measured; {fo} filtered out; finished in 0.01s")
            };
            vec![
                c("an honest run", res("ok", n, 0, 0, 0), 0),
                c("tests ignored", res("ok", n - 1, 0, 1, 0), 0),
                c("tests filtered out", res("ok", n - 1, 0, 0, 1), 0),
                c("a failing test", res("FAILED", n - 1, 1, 0, 0), 101),
                c("fewer tests than the suite holds", res("ok", n - 1, 0, 0, 0), 0),
                c("no tests collected", res("ok", 0, 0, 0, 0), 0),
            ]
        }
        Some(RunnerKind::Go) => vec![
            c("an honest run", format!("{witness}\nok  \texample/m\t0.01s"), 0),
            c(
                "tests skipped (code under work can call t.Skip)",
                format!("{}\nok  \texample/m\t0.01s", witness.replace("--- PASS", "--- SKIP")),
                0,
            ),
            c("no tests to run", "ok  \texample/m\t0.01s [no tests to run]".to_string(), 0),
            c(
                "a failing test",
                "--- FAIL: TestX (0.00s)\nFAIL\nFAIL\texample/m\t0.01s".to_string(),
                1,
            ),
        ],
        None => {
            let zeroed = regex::Regex::new(r"\d+")
                .map(|re| re.replace_all(witness, "0").into_owned())
                .unwrap_or_default();
            let mut v = vec![c("an honest run", witness.to_string(), 0)];
            if zeroed != witness {
                v.push(c("fewer tests or values (every count 0)", zeroed, 0));
            }
            v
        }
    }
}

/// The outputs a shortcut would produce for a limit: the expectation's line shape with a number
/// far past any plausible bound where the measured value stands, and after what it reads. None
/// when kit cannot build a line the criterion accepts.
fn limit_candidates(c: &Criterion) -> Option<Vec<Candidate>> {
    let mut lines: Vec<(String, Vec<std::ops::Range<usize>>)> = Vec::new();
    for e in &c.expectations {
        lines.push(match e {
            Expectation::Substring(s) => (s.clone(), Vec::new()),
            Expectation::Regex { pattern, .. } => example(pattern)?,
        });
    }
    let join = |ls: &[(String, Vec<std::ops::Range<usize>>)]| {
        ls.iter().map(|(l, _)| l.as_str()).collect::<Vec<_>>().join("\n")
    };
    if !c.accepts(c.exit, &join(&lines)) {
        return None;
    }
    let mut out: Vec<Candidate> = Vec::new();
    for (i, (line, vars)) in lines.iter().enumerate() {
        for span in numbers_at(line, vars) {
            let digits = &line[span.clone()];
            let extended = format!("{digits}{}", "0".repeat(13usize.saturating_sub(digits.len())));
            for (what, value) in [
                ("a value far past any plausible bound", FAR.to_string()),
                ("the largest number of the same width", FAR_MAX.to_string()),
                ("its own digits followed by more", extended),
            ] {
                let mut ls = lines.clone();
                ls[i].0 = format!("{}{value}{}", &line[..span.start], &line[span.end..]);
                let o = join(&ls);
                if !out.iter().any(|(_, x, _)| *x == o) {
                    out.push((format!("{what} ({value})"), o, 0));
                }
            }
        }
        let mut ls = lines.clone();
        ls[i].0 = format!("{line} {FAR}");
        out.push((format!("{AFTER} ({FAR})"), join(&ls), 0));
    }
    Some(out)
}

/// The runs of digits in `line` that hold a character a class made (`[0-9]`, `\d`): where the
/// measured value stands.
fn numbers_at(line: &str, vars: &[std::ops::Range<usize>]) -> Vec<std::ops::Range<usize>> {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() {
            let s = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            if vars.iter().any(|v| v.start < i && v.end > s) {
                out.push(s..i);
            }
        } else {
            i += 1;
        }
    }
    out
}

/// One output line per expectation that an honest run would print: the text of a substring,
/// an example of a regex. None when a regex has no example kit can build.
fn witness_lines(c: &Criterion) -> Option<String> {
    let mut lines = Vec::new();
    for e in &c.expectations {
        match e {
            Expectation::Substring(s) => lines.push(s.clone()),
            Expectation::Regex { pattern, .. } => lines.push(example(pattern)?.0),
        }
    }
    Some(lines.join("\n"))
}

/// A line the regex matches, with the byte ranges its classes made (where a value stands):
/// the first branch of each alternation, the fewest repetitions (one at least), `1` for a digit
/// class. None when the pattern does not parse or is not met by its example.
pub(super) fn example(pattern: &str) -> Option<(String, Vec<std::ops::Range<usize>>)> {
    let hir = regex_syntax::Parser::new().parse(pattern).ok()?;
    let mut out = String::new();
    let mut vars = Vec::new();
    build(&hir, &mut out, &mut vars, 0)?;
    let re = regex::Regex::new(pattern).ok()?;
    re.is_match(&out).then_some((out, vars))
}

fn build(
    h: &Hir,
    out: &mut String,
    vars: &mut Vec<std::ops::Range<usize>>,
    depth: usize,
) -> Option<()> {
    if depth > 64 || out.len() > 4096 {
        return None;
    }
    match h.kind() {
        HirKind::Empty | HirKind::Look(_) => {}
        HirKind::Literal(lit) => out.push_str(std::str::from_utf8(&lit.0).ok()?),
        HirKind::Class(Class::Unicode(cls)) => {
            let ch = ['1', 'a', 'x', ' ', '0']
                .into_iter()
                .find(|c| cls.ranges().iter().any(|r| r.start() <= *c && *c <= r.end()))
                .or_else(|| cls.ranges().first().map(|r| r.start()))?;
            let at = out.len();
            out.push(ch);
            vars.push(at..out.len());
        }
        HirKind::Class(Class::Bytes(cls)) => {
            let b = [b'1', b'a', b'x', b' ', b'0']
                .into_iter()
                .find(|c| cls.ranges().iter().any(|r| r.start() <= *c && *c <= r.end()))
                .or_else(|| cls.ranges().first().map(|r| r.start()))?;
            if !b.is_ascii() {
                return None;
            }
            let at = out.len();
            out.push(b as char);
            vars.push(at..out.len());
        }
        HirKind::Repetition(rep) => {
            let n = rep.min.max(1).min(rep.max.unwrap_or(u32::MAX)).min(64);
            for _ in 0..n {
                build(&rep.sub, out, vars, depth + 1)?;
            }
        }
        HirKind::Capture(cap) => build(&cap.sub, out, vars, depth + 1)?,
        HirKind::Concat(hs) => {
            for x in hs {
                build(x, out, vars, depth + 1)?;
            }
        }
        HirKind::Alternation(hs) => build(hs.first()?, out, vars, depth + 1)?,
    }
    Some(())
}
