//! The goal.md parser. Lenient where the file is prose (titles, end state, constraints, unknown
//! sections, HTML comments, fenced code), strict where kit acts on what it reads: a criterion line
//! or a budget line that does not parse is an error naming `goal.md:LINE` with the fix, because a
//! criterion silently skipped would let the loop declare done too early.
//!
//! Grammar of one criterion (one list item; indented lines continue it):
//!
//! ```text
//! - KIND: `COMMAND` [(exit N)] [→ `ITEM` [and `ITEM`…]] [(exit N)]
//! KIND := function | regression | limit       → may be written ->
//! ITEM := literal text | re:REGEX              a longer run of backquotes may delimit
//!                                              text holding a backquote: `` a`b ``
//! ```
//!
//! A review criterion is `- review: TEXT`: prose (backquotes allowed) that the evaluator of
//! config.toml's `[review]` judges (see [`super::review`]). A human criterion is `- human: TEXT`:
//! a decision only a person can make (`kit approve N`, see [`crate::looprun::ask`]).

use std::path::Path;

use super::{Budget, Criterion, Expectation, Goal, Kind};
use crate::error::{Error, Result};

/// Parse goal.md text; `path` names the file in errors (e.g. `longrun/goal.md`).
///
/// Errors: [`Error::Input`] with the 1-based line and a hint for a malformed criterion (no
/// backquotes, unknown kind, unquoted expected output, bad `re:` pattern, bad `(exit N)`) or a
/// malformed budget item (unknown name, value that is not a count, duration or amount).
pub fn parse(path: &Path, text: &str) -> Result<Goal> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let lines = clean_lines(text);
    let mut goal = Goal {
        title: String::new(),
        end_state: String::new(),
        criteria: Vec::new(),
        prose_criteria: Vec::new(),
        reviews: Vec::new(),
        humans: Vec::new(),
        constraints: Vec::new(),
        budget: Budget::default(),
    };
    let mut section = Section::Preamble;
    let mut seen_title = false;
    let mut end_state: Vec<&str> = Vec::new();
    let mut items: Vec<(Section, usize, String)> = Vec::new();
    // The item being built: (section, line, text), continued by indented lines.
    let mut open: Option<(Section, usize, String)> = None;

    for (idx, line) in lines.iter().enumerate() {
        let n = idx + 1;
        let Some(line) = line else {
            continue; // inside a code fence
        };
        let trimmed = line.trim();
        if let Some(h) = heading(trimmed) {
            items.extend(open.take());
            match h {
                (1, t) if !seen_title => {
                    seen_title = true;
                    goal.title = strip_goal_prefix(t).to_string();
                }
                (2, t) => section = Section::named(t),
                (level, t) => {
                    if let Some(name) = Section::named(t).title() {
                        return Err(misplaced_section(path, n, trimmed, name, level));
                    }
                }
            }
            continue;
        }
        // A bare `Criteria` or `**Criteria:**` line reads as a heading to a person, not to kit.
        if !line.starts_with([' ', '\t']) && bullet(line).is_none() {
            let bare = trimmed.trim_matches(['*', '_']).trim();
            if let Some(name) = Section::named(bare).title() {
                return Err(misplaced_section(path, n, trimmed, name, 0));
            }
        }
        if section == Section::EndState && !trimmed.is_empty() {
            end_state.push(trimmed);
        }
        if trimmed.is_empty() {
            items.extend(open.take());
            continue;
        }
        let indented = line.starts_with([' ', '\t']);
        let mut item = bullet(line);
        if section == Section::Criteria {
            // A line shaped like a criterion is never folded into another item or dropped:
            // it becomes its own item, or an error if it is not a list item at all.
            match criterion_start(line) {
                Some(Start::Item(body)) => item = Some(body),
                Some(Start::NotAnItem(what)) => {
                    return Err(Error::input(
                        path,
                        Some(n),
                        format!("`{what}` looks like a criterion but is not a list item, so the loop would never run it"),
                    )
                    .with_hint(CRITERION_SHAPE));
                }
                None => {}
            }
        }
        if let Some(body) = item {
            items.extend(open.take());
            open = Some((section, n, body.trim().to_string()));
        } else if let (true, Some((_, _, t))) = (indented, open.as_mut()) {
            t.push(' ');
            t.push_str(trimmed);
        } else {
            items.extend(open.take());
        }
    }
    items.extend(open.take());
    goal.end_state = end_state.join("\n");

    let mut budget_lines: [Option<usize>; 3] = [None; 3];
    for (section, n, text) in items {
        match section {
            Section::Criteria => match parse_item(path, n, &text)? {
                Item::Criterion(c) => goal.criteria.push(c),
                Item::Prose(p) => goal.prose_criteria.push((n, p)),
                Item::Review(text) => goal.reviews.push(super::Review { line: n, text }),
                Item::Human(text) => goal.humans.push(super::Human { line: n, text }),
            },
            Section::Constraints => goal.constraints.push(text),
            Section::Budget => {
                parse_budget_item(path, n, &text, &mut goal.budget, &mut budget_lines)?
            }
            Section::Preamble | Section::EndState | Section::Other => {}
        }
    }
    Ok(goal)
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Section {
    Preamble,
    EndState,
    Criteria,
    Constraints,
    Budget,
    Other,
}

/// A section title kit would ignore where it stands (not a level-2 heading): an error naming
/// the line and the heading kit needs, so that criteria are never silently dropped.
fn misplaced_section(path: &Path, n: usize, found: &str, name: &str, level: usize) -> Error {
    let what = match level {
        0 => "is not a heading".to_string(),
        l => format!("is a level-{l} heading"),
    };
    Error::input(
        path,
        Some(n),
        format!(
            "`{found}` {what}: kit reads this section only under `## {name}`, so what follows \
             would be ignored"
        ),
    )
    .with_hint(format!("write the heading as `## {name}` (two #, then a space)"))
}

impl Section {
    /// The section's canonical title, for a section kit reads.
    fn title(self) -> Option<&'static str> {
        match self {
            Section::EndState => Some("End state"),
            Section::Criteria => Some("Criteria"),
            Section::Constraints => Some("Constraints"),
            Section::Budget => Some("Budget"),
            Section::Preamble | Section::Other => None,
        }
    }

    fn named(title: &str) -> Section {
        let t: String = title
            .to_ascii_lowercase()
            .chars()
            .map(|c| if c == '-' || c == '_' { ' ' } else { c })
            .collect();
        match t.trim().trim_end_matches(':') {
            "end state" => Section::EndState,
            "criteria" | "done criteria" | "acceptance criteria" => Section::Criteria,
            "constraints" => Section::Constraints,
            "budget" => Section::Budget,
            _ => Section::Other,
        }
    }
}

/// The file's lines with HTML comments blanked and fenced code replaced by `None`, so a
/// commented-out or quoted example never counts as a criterion.
fn clean_lines(text: &str) -> Vec<Option<String>> {
    let mut out = Vec::new();
    let mut in_comment = false;
    let mut fence: Option<String> = None;
    for raw in text.lines() {
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        if let Some(f) = &fence {
            if raw.trim_start().starts_with(f.as_str()) {
                fence = None;
            }
            out.push(None);
            continue;
        }
        if !in_comment {
            let t = raw.trim_start();
            let ticks = t.chars().take_while(|&c| c == '`').count();
            let tildes = t.chars().take_while(|&c| c == '~').count();
            if ticks >= 3 || tildes >= 3 {
                let marker = if ticks >= 3 { "`".repeat(ticks) } else { "~".repeat(tildes) };
                fence = Some(marker);
                out.push(None);
                continue;
            }
        }
        let mut line = String::new();
        let mut rest = raw;
        loop {
            if in_comment {
                match rest.find("-->") {
                    Some(i) => {
                        rest = &rest[i + 3..];
                        in_comment = false;
                    }
                    None => break,
                }
            } else {
                match rest.find("<!--") {
                    Some(i) => {
                        line.push_str(&rest[..i]);
                        rest = &rest[i + 4..];
                        in_comment = true;
                    }
                    None => {
                        line.push_str(rest);
                        break;
                    }
                }
            }
        }
        out.push(Some(line));
    }
    out
}

/// `(level, text)` of an ATX heading such as `## Criteria`.
fn heading(line: &str) -> Option<(usize, &str)> {
    let level = line.chars().take_while(|&c| c == '#').count();
    if level == 0 || level > 6 {
        return None;
    }
    let rest = &line[level..];
    if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    Some((level, rest.trim().trim_end_matches('#').trim()))
}

fn strip_goal_prefix(title: &str) -> &str {
    let lower = title.to_ascii_lowercase();
    if lower.starts_with("goal:") {
        title[5..].trim()
    } else {
        title
    }
}

/// The body of a top-level list item (`- `, `* `, `+ `, `1. `), if `line` is one.
fn bullet(line: &str) -> Option<&str> {
    let lead = line.len() - line.trim_start().len();
    if lead > 1 {
        return None;
    }
    let t = line.trim_start();
    for m in ['-', '*', '+'] {
        if let Some(b) = t.strip_prefix(m).and_then(|r| r.strip_prefix([' ', '\t'])) {
            return Some(b);
        }
    }
    if matches!(t, "-" | "*" | "+") {
        return Some("");
    }
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 {
        let r = &t[digits..];
        if let Some(b) = r.strip_prefix(". ").or_else(|| r.strip_prefix(") ")) {
            return Some(b);
        }
    }
    None
}

/// How a line in `## Criteria` that names a kind (`function:`, `Regresion:`) before a
/// backquoted command starts.
enum Start<'a> {
    /// A list item at any indentation, the marker followed by spaces or a tab: the body.
    Item(&'a str),
    /// Not a list item (`-function:`, `function:` alone): the start of the line, for the message.
    NotAnItem(String),
}

/// Whether `line` starts a criterion: a kind word, or a near miss of one, then a colon and a
/// backquote. Markdown would read `  - function:` under a prose item as a nested item and
/// `-function:` as a paragraph; kit reads every such line as a criterion or refuses it.
fn criterion_start(line: &str) -> Option<Start<'_>> {
    let t = line.trim_start();
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    let marker = if t.starts_with(['-', '*', '+']) {
        1
    } else if digits > 0 && t[digits..].starts_with(['.', ')']) {
        digits + 1
    } else {
        0
    };
    let after = &t[marker..];
    let spaced = after.starts_with([' ', '\t']);
    let body = after.trim_start();
    let (word, rest) = body.split_once(':')?;
    if !is_kind_word(word) || !rest.trim_start().starts_with('`') {
        return None;
    }
    let word = word.trim().trim_matches(['*', '_']);
    if Kind::from_word(word).is_none() && near_kind(word).is_none() {
        return None;
    }
    if marker > 0 && spaced {
        Some(Start::Item(body))
    } else {
        let shown: String = t.chars().take(marker + word.len() + 1).collect();
        Some(Start::NotAnItem(shown))
    }
}

/// The kind `word` is probably a misspelling of (`regresion`, `functions`, `Limits`).
fn near_kind(word: &str) -> Option<Kind> {
    let w = word.to_ascii_lowercase();
    if w.len() < 4 {
        return None;
    }
    Kind::ALL.into_iter().find(|k| edit_distance(&w, k.as_str()) <= 2)
}

/// Levenshtein distance between two short ASCII words.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let here = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != cb)).min(row[j] + 1).min(here + 1);
            prev = here;
        }
    }
    row[b.len()]
}

enum Item {
    Criterion(Criterion),
    Prose(String),
    /// `- review: TEXT`: the text the evaluator judges.
    Review(String),
    /// `- human: TEXT`: what a person must approve.
    Human(String),
}

const CRITERION_SHAPE: &str = "write it as - function: `COMMAND` → `EXPECTED OUTPUT` \
(kinds: function, regression, limit; see kit lesson 2)";

const REVIEW_SHAPE: &str = "write it as - review: WHAT THE EVALUATOR MUST JUDGE, e.g. - review: \
every error message names the file and line (the evaluator is [review] evaluator in config.toml)";

const HUMAN_SHAPE: &str = "write it as - human: WHAT A PERSON MUST APPROVE, e.g. - human: the \
error messages read well to a new user (kit loop stops \"needs you\" and kit approve N marks it)";

fn parse_item(path: &Path, line: usize, text: &str) -> Result<Item> {
    let err = |msg: String, hint: &str| Err(Error::input(path, Some(line), msg).with_hint(hint));
    let (word, rest) = match text.split_once(':') {
        Some((w, r)) if is_kind_word(w) => (Some(w.trim().trim_matches(['*', '_'])), r.trim()),
        _ => (None, text.trim()),
    };
    if word.is_some_and(|w| w.eq_ignore_ascii_case("review")) {
        let text = rest.trim().trim_end_matches('.').trim();
        if text.is_empty() {
            return err(
                "the review criterion says nothing for the evaluator to judge".into(),
                REVIEW_SHAPE,
            );
        }
        return Ok(Item::Review(rest.trim().to_string()));
    }
    if word.is_some_and(|w| w.eq_ignore_ascii_case("human")) {
        let text = rest.trim().trim_end_matches('.').trim();
        if text.is_empty() {
            return err(
                "the human criterion says nothing for a person to approve".into(),
                HUMAN_SHAPE,
            );
        }
        return Ok(Item::Human(rest.trim().to_string()));
    }
    let kind = word.and_then(Kind::from_word);
    if kind.is_none() {
        // Prose, unless it looks like a criterion that is only slightly wrong.
        let looks_like_criterion = rest.starts_with('`')
            && match take_span(rest) {
                Ok((_, after)) => has_arrow(after),
                Err(_) => false,
            };
        let near = word.and_then(near_kind).filter(|_| rest.starts_with('`'));
        if let (Some(w), Some(k)) = (word, near) {
            return err(
                format!("unknown criterion kind `{w}` (did you mean `{k}`?)"),
                "use function, regression or limit, e.g. - regression: `COMMAND` → `OUTPUT`",
            );
        }
        if !looks_like_criterion {
            return Ok(Item::Prose(text.trim().to_string()));
        }
        return match word {
            Some(w) => err(
                format!("unknown criterion kind `{w}`"),
                "use function, regression or limit, e.g. - regression: `COMMAND` → `OUTPUT`",
            ),
            None => err(
                "criterion has no kind".into(),
                "start it with function:, regression: or limit:, e.g. - function: `COMMAND` → `OUTPUT`",
            ),
        };
    }
    let kind = kind.unwrap_or(Kind::Function);
    if !rest.starts_with('`') {
        return err(
            format!("the command of a {kind} criterion must be in backquotes"),
            CRITERION_SHAPE,
        );
    }
    let (command, mut rest) = match take_span(rest) {
        Ok(x) => x,
        Err(msg) => return err(msg, CRITERION_SHAPE),
    };
    let command = command.trim().to_string();
    if command.is_empty() {
        return err("the criterion's command is empty".into(), CRITERION_SHAPE);
    }
    let mut exit: Option<i32> = None;
    let mut expectations = Vec::new();
    rest = rest.trim_start();
    if rest.starts_with('(') {
        rest = take_exit(path, line, rest, &mut exit)?.trim_start();
    }
    let arrow = strip_arrow(rest).is_some();
    if let Some(after) = strip_arrow(rest) {
        let mut r = after.trim_start();
        if !r.starts_with('`') {
            let found = r.split_whitespace().next().unwrap_or("");
            let msg = if found.is_empty() {
                "nothing after the arrow: the expected output is missing".to_string()
            } else {
                format!("the expected output must be in backquotes (found `{found}`)")
            };
            return err(
                msg,
                "write → `Ran 9 tests` and `OK`: each item in backquotes, joined by and",
            );
        }
        loop {
            let (item, after) = match take_span(r) {
                Ok(x) => x,
                Err(msg) => return err(msg, "close each expected item with a backquote"),
            };
            expectations.push(expectation(path, line, &item)?);
            r = after.trim_start();
            let next = strip_joiner(r);
            match next {
                Some(n) if n.trim_start().starts_with('`') => r = n.trim_start(),
                Some(_) => {
                    return err(
                        "`and` must be followed by another item in backquotes".into(),
                        "write → `Ran 9 tests` and `OK`",
                    )
                }
                None => break,
            }
        }
        rest = r;
    }
    rest = rest.trim_start();
    if rest.starts_with('(') {
        rest = take_exit(path, line, rest, &mut exit)?;
    }
    let rest = rest.trim().trim_end_matches('.').trim();
    if !rest.is_empty() && has_arrow(&command) {
        return err(
            format!("the command `{command}` holds an arrow: a closing backquote is probably missing after the command"),
            CRITERION_SHAPE,
        );
    }
    if !rest.is_empty() && !arrow {
        return err(
            format!(
                "expected → (or ->) between the command and its expected output, found `{rest}`"
            ),
            CRITERION_SHAPE,
        );
    }
    if !rest.is_empty() {
        return err(
            format!("unexpected text after the criterion: `{rest}`"),
            "join expected items with and, and put (exit N) at the end: \
- limit: `CMD` → `re:^ok$` and `3 files` (exit 0)",
        );
    }
    Ok(Item::Criterion(Criterion { line, kind, command, expectations, exit: exit.unwrap_or(0) }))
}

/// A short word before a colon that could name a kind (`function`, `**limit**`, `perf`).
fn is_kind_word(w: &str) -> bool {
    let w = w.trim().trim_matches(['*', '_']);
    !w.is_empty()
        && w.len() <= 20
        && w.chars().all(|c| c.is_ascii_alphabetic() || c == '-' || c == '_')
}

fn has_arrow(s: &str) -> bool {
    s.contains('→') || s.contains("->")
}

fn strip_arrow(s: &str) -> Option<&str> {
    s.strip_prefix('→').or_else(|| s.strip_prefix("->"))
}

fn strip_joiner(s: &str) -> Option<&str> {
    if let Some(r) = s.strip_prefix(',') {
        let r = r.trim_start();
        return Some(strip_and(r).unwrap_or(r));
    }
    strip_and(s)
}

fn strip_and(s: &str) -> Option<&str> {
    let head = s.get(..3)?;
    let r = &s[3..];
    (head.eq_ignore_ascii_case("and") && (r.is_empty() || r.starts_with([' ', '\t', '`'])))
        .then_some(r)
}

/// `(exit N)` at the start of `s`; returns what follows.
fn take_exit<'a>(path: &Path, line: usize, s: &'a str, exit: &mut Option<i32>) -> Result<&'a str> {
    let bad = |msg: String| {
        Error::input(path, Some(line), msg)
            .with_hint("write the exit status the command must end with as (exit 1), after the expected output")
    };
    let close = s.find(')').ok_or_else(|| bad("`(` without a closing `)`".into()))?;
    let inner = s[1..close].trim();
    let Some(num) = inner.strip_prefix("exit").map(str::trim) else {
        return Err(bad(format!("unexpected `({inner})`; only (exit N) may follow the command")));
    };
    let n: i32 = match num.parse() {
        Ok(n) if (0..=255).contains(&n) => n,
        _ => return Err(bad(format!("`(exit {num})` needs an exit status from 0 to 255"))),
    };
    if exit.is_some() {
        return Err(bad("(exit N) is given twice".into()));
    }
    *exit = Some(n);
    Ok(&s[close + 1..])
}

fn expectation(path: &Path, line: usize, item: &str) -> Result<Expectation> {
    let Some(pattern) = item.strip_prefix("re:") else {
        return Ok(Expectation::Substring(item.to_string()));
    };
    match regex::Regex::new(pattern) {
        Ok(re) => Ok(Expectation::Regex { pattern: pattern.to_string(), re }),
        Err(e) => {
            let detail = e.to_string();
            let detail = detail.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
            let detail = detail.trim().trim_start_matches("error: ");
            Err(Error::input(
                path,
                Some(line),
                format!("invalid regular expression `re:{pattern}`: {detail}"),
            )
            .with_hint(
                "escape characters that have a meaning in regexes with \\, e.g. re:^p95_ms=\\d+$",
            ))
        }
    }
}

/// A backquoted span at the start of `s` (CommonMark code span): returns its content and the
/// rest. A run of N backquotes closes at the next run of exactly N; `` alone is an empty span.
fn take_span(s: &str) -> std::result::Result<(String, &str), String> {
    let n = s.chars().take_while(|&c| c == '`').count();
    let body = &s[n..];
    let bytes = body.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'`' {
            let m = bytes[i..].iter().take_while(|&&b| b == b'`').count();
            if m == n {
                let mut content = &body[..i];
                if content.len() >= 2
                    && content.starts_with(' ')
                    && content.ends_with(' ')
                    && !content.trim().is_empty()
                {
                    content = &content[1..content.len() - 1];
                }
                return Ok((content.to_string(), &body[i + n..]));
            }
            i += m;
        } else {
            i += 1;
        }
    }
    if n == 2 {
        return Ok((String::new(), body));
    }
    Err(format!("unclosed backquote: `{}` has no closing {}", s.trim(), "`".repeat(n)))
}

const BUDGET_SHAPE: &str = "budget items are - iterations: 8, - wall: 2h, - cost: 15 USD";

fn parse_budget_item(
    path: &Path,
    line: usize,
    text: &str,
    budget: &mut Budget,
    seen: &mut [Option<usize>; 3],
) -> Result<()> {
    let err = |msg: String| Err(Error::input(path, Some(line), msg).with_hint(BUDGET_SHAPE));
    let Some((name, value)) = text.split_once(':') else {
        return err(format!("budget item `{text}` has no `name: value`"));
    };
    let name = name.trim().trim_matches(['*', '_', '`']).to_ascii_lowercase();
    let value = value.trim().trim_matches('`').trim();
    let slot = match name.as_str() {
        "iterations" | "max iterations" => 0,
        "wall" | "wall time" | "time" => 1,
        "cost" | "money" | "usd" => 2,
        _ => return err(format!("unknown budget item `{name}`")),
    };
    if let Some(first) = seen[slot] {
        return err(format!("budget item `{name}` is given twice (first at line {first})"));
    }
    seen[slot] = Some(line);
    match slot {
        0 => match value.parse::<u32>() {
            Ok(n) if n > 0 => budget.iterations = Some(n),
            _ => {
                return err(format!(
                    "iterations must be a whole number of at least 1, not `{value}`"
                ))
            }
        },
        1 => match crate::duration::parse_duration(value) {
            Ok(d) if !d.is_zero() => budget.wall = Some(d),
            Ok(_) => return err("wall must be longer than 0".into()),
            Err(msg) => return err(format!("wall: {msg}")),
        },
        _ => match parse_usd(value) {
            Some(x) => budget.cost_usd = Some(x),
            None => {
                return err(format!(
                    "cost must be an amount of USD such as `15 USD` or `$15`, not `{value}`"
                ))
            }
        },
    }
    Ok(())
}

/// `15 USD`, `$15`, `15.50`, `15 usd` → 15.0. None unless a positive finite amount.
fn parse_usd(value: &str) -> Option<f64> {
    let v = value.trim();
    let v = v.strip_prefix('$').unwrap_or(v).trim();
    let lower = v.to_ascii_lowercase();
    let v = lower.strip_suffix("usd").unwrap_or(&lower).trim();
    let x: f64 = v.parse().ok()?;
    (x.is_finite() && x > 0.0).then_some(x)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const DESIGN_EXAMPLE: &str = "# Goal: parse durations in the config loader

## End state
`load_config` accepts \"90s\", \"15m\", \"2h\" and rejects anything else with a line number.

## Criteria
- function: `python3 -m unittest tests.test_durations -v` → `Ran 9 tests` and `OK`
- regression: `python3 -m unittest discover -s tests` → `Ran 14 tests` and `OK`
- limit: `python3 tools/bench_load.py` → `re:^p95_ms=([0-9]|1[0-9])$`

## Constraints
- tests/ is frozen; do not edit it.

## Budget
- iterations: 8
- wall: 2h
- cost: 15 USD
";

    fn p(text: &str) -> Result<Goal> {
        parse(Path::new("goal.md"), text)
    }

    fn one(item: &str) -> Result<Criterion> {
        let g = p(&format!("# G\n## Criteria\n{item}\n"))?;
        assert!(g.prose_criteria.is_empty(), "{item}: parsed as prose");
        Ok(g.criteria.into_iter().next().expect("one criterion"))
    }

    fn written(c: &Criterion) -> Vec<String> {
        c.expectations.iter().map(Expectation::as_written).collect()
    }

    #[test]
    fn parses_the_design_example() {
        let g = p(DESIGN_EXAMPLE).unwrap();
        assert_eq!(g.title, "parse durations in the config loader");
        assert!(g.end_state.starts_with("`load_config` accepts"));
        assert_eq!(g.criteria.len(), 3);
        let kinds: Vec<Kind> = g.criteria.iter().map(|c| c.kind).collect();
        assert_eq!(kinds, [Kind::Function, Kind::Regression, Kind::Limit]);
        assert_eq!(g.criteria[0].line, 7);
        assert_eq!(g.criteria[0].command, "python3 -m unittest tests.test_durations -v");
        assert_eq!(written(&g.criteria[0]), ["Ran 9 tests", "OK"]);
        assert_eq!(written(&g.criteria[2]), ["re:^p95_ms=([0-9]|1[0-9])$"]);
        assert!(matches!(g.criteria[2].expectations[0], Expectation::Regex { .. }));
        assert_eq!(g.constraints, ["tests/ is frozen; do not edit it."]);
        assert_eq!(
            g.budget,
            Budget {
                iterations: Some(8),
                wall: Some(Duration::from_secs(7200)),
                cost_usd: Some(15.0)
            }
        );
    }

    #[test]
    fn criterion_shapes() {
        // (item, command, expectations as written, exit)
        let cases: &[(&str, &str, &[&str], i32)] = &[
            ("- function: `make test` -> `ok`", "make test", &["ok"], 0),
            ("- Function: `a` → `x` and `y` and `re:^z$`", "a", &["x", "y", "re:^z$"], 0),
            ("- limit: `./bench` → `re:ms=\\d+` (exit 0)", "./bench", &["re:ms=\\d+"], 0),
            ("- regression: `./check` (exit 1) → `2 errors`", "./check", &["2 errors"], 1),
            ("- regression: `./check` → `2 errors` (exit 3)", "./check", &["2 errors"], 3),
            ("- function: `cargo test`", "cargo test", &[], 0),
            ("-\tfunction:\t`a` → `x`", "a", &["x"], 0),
            ("  - function: `a` → `x`", "a", &["x"], 0),
            ("   * regression: `a` → `x`", "a", &["x"], 0),
            ("- LIMIT: `a` → `x`", "a", &["x"], 0),
            ("- function: ``echo `x` `` → `x`", "echo `x`", &["x"], 0),
            ("- function: `a` → `` a`b ``", "a", &["a`b"], 0),
            ("- function: `a` → ``", "a", &[""], 0),
            ("- function: `a` → `x`, `y`", "a", &["x", "y"], 0),
            ("* **limit**: `b` → `n=3`.", "b", &["n=3"], 0),
            ("1. function: `a` → `x`", "a", &["x"], 0),
            (
                "- function: `python3 -m unittest\n  tests.test_a` → `Ran 2 tests`",
                "python3 -m unittest tests.test_a",
                &["Ran 2 tests"],
                0,
            ),
        ];
        for (item, command, exp, exit) in cases {
            let c = one(item).unwrap_or_else(|e| panic!("{item}: {e}"));
            assert_eq!(c.command, *command, "{item}");
            assert_eq!(written(&c), *exp, "{item}");
            assert_eq!(c.exit, *exit, "{item}");
        }
    }

    /// A criterion-shaped line right under another item starts its own criterion: it is never
    /// folded into the item above (QA MEDIUM-3: such lines used to vanish).
    #[test]
    fn criterion_lines_are_never_folded_or_dropped() {
        let text = "## Criteria\n- all tests pass, namely:\n  - function: `a` → `x`\n\t- regression: `b` → `y`\n- limit: `c\n  continued` → `z`\n";
        let g = p(text).unwrap();
        let got: Vec<(usize, Kind, &str)> =
            g.criteria.iter().map(|c| (c.line, c.kind, c.command.as_str())).collect();
        assert_eq!(
            got,
            [(3, Kind::Function, "a"), (4, Kind::Regression, "b"), (5, Kind::Limit, "c continued")]
        );
        assert_eq!(g.prose_criteria, [(2, "all tests pass, namely:".to_string())]);
        // Prose that merely has a colon and backquotes stays prose.
        let g = p("## Criteria\nNote: `cargo test` must stay green.\n- Note: `x` too\n").unwrap();
        assert!(g.criteria.is_empty());
    }

    #[test]
    fn review_items_are_kept_apart_from_the_criteria() {
        let g = p("## Criteria\n- function: `a` → `x`\n- review: every error names\n  `goal.md:LINE` and the fix\n- Review: no new dependency\n").unwrap();
        assert_eq!(g.criteria.len(), 1);
        let got: Vec<(usize, &str)> = g.reviews.iter().map(|r| (r.line, r.text.as_str())).collect();
        assert_eq!(
            got,
            [(3, "every error names `goal.md:LINE` and the fix"), (5, "no new dependency")]
        );
        assert!(g.prose_criteria.is_empty());
        match p("## Criteria\n- review:\n") {
            Err(Error::Input { line: Some(2), .. }) => {}
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn human_items_are_decisions_for_a_person_not_criteria_or_prose() {
        // (goal.md's criteria section, (line, text) of each human item, criteria, prose, reviews)
        type Row<'a> = (&'a str, &'a [(usize, &'a str)], usize, usize, usize);
        let ok: &[Row<'_>] = &[
            (
                "- human: the error messages read well",
                &[(2, "the error messages read well")],
                0,
                0,
                0,
            ),
            (
                "- Human: the `--help` text is clear.",
                &[(2, "the `--help` text is clear.")],
                0,
                0,
                0,
            ),
            (
                "- **human**: the design\n  is what the end state asks",
                &[(2, "the design is what the end state asks")],
                0,
                0,
                0,
            ),
            (
                "- function: `a` → `x`\n- human: ship it\n- review: small diff\n- all good",
                &[(3, "ship it")],
                1,
                1,
                1,
            ),
            ("- humane: not a kind, prose", &[], 0, 1, 0),
            ("- the human reads it", &[], 0, 1, 0),
        ];
        for (items, humans, criteria, prose, reviews) in ok {
            let g = p(&format!("## Criteria\n{items}\n")).unwrap();
            let got: Vec<(usize, &str)> =
                g.humans.iter().map(|h| (h.line, h.text.as_str())).collect();
            assert_eq!(got, *humans, "{items}");
            assert_eq!(
                (g.criteria.len(), g.prose_criteria.len(), g.reviews.len()),
                (*criteria, *prose, *reviews),
                "{items}"
            );
        }
        for bad in ["- human:\n", "- human: .\n", "- human:   \n"] {
            match p(&format!("## Criteria\n{bad}")) {
                Err(e @ Error::Input { line: Some(2), .. }) => {
                    assert!(e.to_string().contains("nothing for a person to approve"), "{e}")
                }
                other => panic!("{bad}: {other:?}"),
            }
        }
        // Outside the criteria section it is prose like any other list item.
        assert!(p("## Constraints\n- human: x\n").unwrap().humans.is_empty());
    }

    #[test]
    fn continuation_lines_join_the_item() {
        let g = p("## Criteria\n- function: `python3 -m unittest tests.test_a`\n  → `Ran 2 tests` and `OK`\n").unwrap();
        assert_eq!(g.criteria.len(), 1);
        assert_eq!(g.criteria[0].line, 2);
        assert_eq!(written(&g.criteria[0]), ["Ran 2 tests", "OK"]);
    }

    #[test]
    fn prose_items_are_kept_with_their_line() {
        let g = p("# T\n\n## Criteria\n- all tests pass\n- Note: `cargo test` should be green\n\nSome explanation.\n").unwrap();
        assert!(g.criteria.is_empty());
        assert_eq!(
            g.prose_criteria,
            [
                (4, "all tests pass".to_string()),
                (5, "Note: `cargo test` should be green".to_string())
            ]
        );
    }

    #[test]
    fn comments_fences_and_other_sections_are_ignored() {
        let text = "# Goal: x\n<!-- - function: `rm -rf /` → `gone` -->\n## Criteria\n<!--\n- function: `a` → `b`\n-->\n```\n- function: `c` → `d`\n```\n- function: `e` → `f` <!-- why -->\n## Notes\n- function: `g` → `h`\n";
        let g = p(text).unwrap();
        assert_eq!(g.criteria.len(), 1);
        assert_eq!(g.criteria[0].command, "e");
        assert_eq!(g.criteria[0].line, 10);
    }

    #[test]
    fn crlf_and_a_byte_order_mark_are_read() {
        let text = DESIGN_EXAMPLE.replace('\n', "\r\n");
        let g = p(&format!("\u{feff}{text}")).unwrap();
        assert_eq!(g.title, "parse durations in the config loader");
        assert_eq!(g.criteria.len(), 3);
        assert_eq!(g.criteria[2].expectations[0].as_written(), "re:^p95_ms=([0-9]|1[0-9])$");
    }

    #[test]
    fn a_goal_without_criteria_parses() {
        let g = p("# Goal: make it faster\n\nJust do it.\n").unwrap();
        assert_eq!(g.title, "make it faster");
        assert!(g.criteria.is_empty() && g.prose_criteria.is_empty());
        assert_eq!(p("").unwrap().title, "");
    }

    #[test]
    fn malformed_lines_are_errors_with_their_line() {
        // (goal text, line, a word the message must hold)
        let cases: &[(&str, usize, &str)] = &[
            ("# G\n## Criteria\n- function: python3 x.py → `OK`\n", 3, "backquotes"),
            ("# G\n## Criteria\n\n- function: `python3 x.py → `OK`\n", 4, "closing backquote"),
            ("## Criteria\n- function: `a` → OK\n", 2, "backquotes"),
            ("## Criteria\n- function: `a` →\n", 2, "nothing after the arrow"),
            ("## Criteria\n- function: `a` → `b` `c`\n", 2, "unexpected text"),
            ("## Criteria\n- function: `a` prints `b`\n", 2, "expected → (or ->)"),
            ("## Criteria\n- function: `a` → `b` and\n", 2, "`and`"),
            ("## Criteria\n- function: `a` → `re:(`\n", 2, "regular expression"),
            ("## Criteria\n- function: `a` → `b` (exit x)\n", 2, "exit status"),
            ("## Criteria\n- function: `a` (exit 1) → `b` (exit 1)\n", 2, "twice"),
            ("## Criteria\n- function: `a` → `b` (status 1)\n", 2, "only (exit N)"),
            ("## Criteria\n- function: `` → `b`\n", 2, "empty"),
            ("## Criteria\n- perf: `a` → `b`\n", 2, "unknown criterion kind `perf`"),
            ("## Criteria\n- `a` → `b`\n", 2, "no kind"),
            ("## Criteria\n- regresion: `a` → `b`\n", 2, "did you mean `regression`"),
            ("## Criteria\n- functions: `a`\n", 2, "did you mean `function`"),
            (
                "## Criteria\n-function: `a` → `b`\n",
                2,
                "`-function:` looks like a criterion but is not a list item",
            ),
            ("## Criteria\nfunction: `a` → `b`\n", 2, "`function:` looks like a criterion"),
            ("## Criteria\n- ok\n\n+limit: `a` → `b`\n", 4, "`+limit:`"),
            ("## Criteria\n- all green\nFunction: `a` → `b`\n", 3, "not a list item"),
            ("## Criteria\n1.function: `a` → `b`\n", 2, "`1.function:`"),
            ("## Criteria\n- limit: `a\n", 2, "unclosed"),
            ("## Budget\n- iterations: eight\n", 2, "whole number"),
            ("## Budget\n- wall: forever\n", 2, "wall"),
            ("## Budget\n- cost: lots\n", 2, "USD"),
            ("## Budget\n- tokens: 5\n", 2, "unknown budget item"),
            ("## Budget\n- iterations: 3\n- iterations: 4\n", 3, "twice"),
            ("## Budget\n- nothing here\n", 2, "name: value"),
            ("# G\n### Criteria\n- function: `a` → `b`\n", 2, "level-3 heading"),
            ("# G\n# Criteria\n- function: `a` → `b`\n", 2, "level-1 heading"),
            ("# G\n## End state\nx\nCriteria\n- function: `a` → `b`\n", 4, "not a heading"),
            ("# G\n## End state\n**Budget:**\n- wall: 2h\n", 3, "`## Budget`"),
        ];
        for (text, line, word) in cases {
            match p(text) {
                Err(Error::Input { line: Some(l), msg, hint, .. }) => {
                    assert_eq!(l, *line, "{text:?}: {msg}");
                    assert!(msg.contains(word), "{text:?}: `{msg}` lacks `{word}`");
                    assert!(hint.is_some(), "{text:?}: no hint");
                }
                other => panic!("{text:?}: expected an input error, got {other:?}"),
            }
        }
    }

    #[test]
    fn budget_amounts() {
        for (v, want) in [("15 USD", 15.0), ("$15", 15.0), ("2.5", 2.5), ("7 usd", 7.0)] {
            assert_eq!(parse_usd(v), Some(want), "{v}");
        }
        for v in ["0", "-3", "free", "NaN", "inf USD"] {
            assert_eq!(parse_usd(v), None, "{v}");
        }
    }

    #[test]
    fn arbitrary_text_never_panics() {
        let pieces = [
            "- ",
            "function: ",
            "`",
            "``",
            "→",
            "->",
            " and ",
            "(exit ",
            ")",
            "re:",
            "(",
            "\n",
            "## Criteria\n",
            "## Budget\n",
            "é",
            "<!--",
            "-->",
            "```\n",
            "1. ",
            "x: ",
        ];
        let mut rng = crate::testing::Rng(0x2545F4914F6CDD1D);
        for _ in 0..4000 {
            let mut s = String::new();
            for _ in 0..rng.below(24) {
                s.push_str(pieces[rng.below(pieces.len())]);
            }
            let _ = p(&s);
        }
    }
}
