//! Expectation tests: whether a criterion's expected output pins what only the finished work
//! prints (a count of tests, a bounded value), and the examples its fix texts give.

use super::runner::count_example;
use super::status::inline_script;
use super::{cut, shell, Criterion, Expectation, Kind, Lint};

impl Lint<'_> {
    pub(super) fn expectations(&mut self, c: &Criterion) {
        let line = c.line;
        if c.expectations.is_empty() {
            let fix = match c.kind {
                Kind::Limit => {
                    format!("add → with the bound written in, {}", limit_example(c, None))
                }
                _ => {
                    format!("add → with output only the finished work prints: {}", count_example(c))
                }
            };
            self.flag(
                line,
                format!(
                    "no expected output: any run that exits {} passes, even one that tests nothing",
                    c.exit
                ),
                fix,
            );
            return;
        }
        let all_anything = c.expectations.iter().all(matches_anything);
        for e in &c.expectations {
            if matches_anything(e) {
                let fix = if all_anything {
                    match c.kind {
                        Kind::Limit => {
                            format!("write the bound into it, {}", limit_example(c, None))
                        }
                        _ => format!(
                            "expect text that only the finished work prints: {}",
                            count_example(c)
                        ),
                    }
                } else {
                    let rest: Vec<String> = c
                        .expectations
                        .iter()
                        .filter(|o| !matches_anything(o))
                        .map(|o| format!("`{}`", o.as_written()))
                        .collect();
                    format!("drop `{}`: it adds nothing to {}", e.as_written(), rest.join(" and "))
                };
                self.flag(line, format!("`{}` matches any output", e.as_written()), fix);
            }
        }
        if all_anything {
            return;
        }
        match c.kind {
            Kind::Function | Kind::Regression => {
                if !c.expectations.iter().any(pins_a_count) {
                    let items: Vec<String> =
                        c.expectations.iter().map(|e| format!("`{}`", e.as_written())).collect();
                    self.flag(
                        line,
                        format!(
                            "{} pins no count: it still passes after tests are deleted or skipped",
                            items.join(" and ")
                        ),
                        format!("pin the number of tests too: {}", count_example(c)),
                    );
                }
            }
            Kind::Limit => {
                if !c.expectations.iter().any(has_a_number) {
                    let items: Vec<String> =
                        c.expectations.iter().map(|e| format!("`{}`", e.as_written())).collect();
                    let unbounded = c.expectations.iter().find(|e| !matches_anything(e));
                    self.flag(
                        line,
                        format!(
                            "limit without a number: {} accepts any value",
                            items.join(" and ")
                        ),
                        format!(
                            "write the bound into the expectation, {}",
                            limit_example(c, unbounded)
                        ),
                    );
                } else if let Some((e, tok)) = c.expectations.iter().find_map(|e| {
                    let tok = unbounded_digits(e)?;
                    // Another expectation of the same criterion may hold the bound.
                    let other_bound = c
                        .expectations
                        .iter()
                        .any(|o| o != e && has_a_number(o) && unbounded_digits(o).is_none());
                    (!other_bound).then_some((e, tok))
                }) {
                    self.flag(
                        line,
                        format!(
                            "limit without a bound: `{}` accepts any value, `{tok}` has no upper limit",
                            e.as_written()
                        ),
                        format!("write the bound into the expectation, {}", limit_example(c, Some(e))),
                    );
                }
            }
        }
    }

    pub(super) fn own_output(&mut self, c: &Criterion, words: &[String]) {
        let Some((prog, args)) = shell::program(words) else { return };
        let base = prog.rsplit('/').next().unwrap_or(prog);
        let text = if matches!(base, "echo" | "printf" | "cat") {
            args.join(" ")
        } else if let Some(script) = inline_script(base, args) {
            // `print("Ran 14 tests\nOK")`: the source holds the text, escapes as written.
            script.replace("\\n", "\n")
        } else {
            return;
        };
        let printed: Vec<String> = c
            .expectations
            .iter()
            .filter(|e| !matches_anything(e) && e.is_met(&text))
            .map(|e| format!("`{}`", e.as_written()))
            .collect();
        if !printed.is_empty() {
            self.flag(
                c.line,
                format!("`{base}` prints the expected {} itself", printed.join(" and ")),
                "run the real test runner or program, whose output is the evidence",
            );
        }
    }
}

/// An example bound for a limit, built from the criterion's own expectation: its unbounded
/// number (`\d+`, `[0-9]+`, `.*`) replaced by `[0-9]{1,3}`, or a `NAME=` substring followed by
/// one; without one, a bare value on its own line.
fn limit_example(c: &Criterion, unbounded: Option<&Expectation>) -> String {
    const BOUND: &str = "[0-9]{1,3}";
    let bounded = unbounded.and_then(|e| match e {
        Expectation::Regex { pattern, .. } => {
            ["\\d+", "[0-9]+", "\\d*", "[0-9]*", "\\S+", "\\w+", ".+", ".*"].iter().find_map(
                |tok| {
                    let at = pattern.find(tok)?;
                    let rest = &pattern[at + tok.len()..];
                    // Without anything after it, `[0-9]{1,3}` would also match the start of 1234.
                    let end = if rest.is_empty() { "\\b" } else { "" };
                    Some(format!("re:{}{BOUND}{end}{rest}", &pattern[..at]))
                },
            )
        }
        Expectation::Substring(s) => {
            let t = s.trim_end();
            t.ends_with(['=', ':']).then(|| format!("re:{}{BOUND}\\b", regex::escape(t)))
        }
    });
    match bounded {
        Some(e) => format!("e.g. `{e}` for a value under 1000"),
        None => format!(
            "e.g. `re:^{BOUND}$` for under 1000 if `{}` prints the value alone on a line",
            cut(c.command.clone())
        ),
    }
}

/// An expectation that every output meets: empty text, or a regex that matches an empty line
/// and an arbitrary one (`re:.*`, `re:^`, `re:`).
fn matches_anything(e: &Expectation) -> bool {
    match e {
        Expectation::Substring(s) => s.trim().is_empty(),
        Expectation::Regex { re, .. } => re.is_match("") && re.is_match("zq 7 \u{1}!"),
    }
}

/// The literal text of an expectation: a regex without its classes (`[0-9]`), escapes (`\d`)
/// and repetition counts (`{2}`), which say nothing about a value.
fn literal_text(e: &Expectation) -> String {
    match e {
        Expectation::Substring(s) => s.clone(),
        Expectation::Regex { pattern, .. } => {
            let mut out = String::new();
            let mut chars = pattern.chars();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => {
                        chars.next();
                    }
                    '[' => {
                        let mut first = true;
                        for d in chars.by_ref() {
                            if d == ']' && !first {
                                break;
                            }
                            first = false;
                        }
                    }
                    '{' => {
                        for d in chars.by_ref() {
                            if d == '}' {
                                break;
                            }
                        }
                    }
                    _ => out.push(c),
                }
            }
            out
        }
    }
}

/// Whether the expectation pins a count or value a deletion would change: some non-zero number
/// in its literal text (`Ran 14 tests`, `14 passed`). `0 failed` survives deleting the failures.
pub(super) fn pins_a_count(e: &Expectation) -> bool {
    numbers(&literal_text(e)).iter().any(|n| n.bytes().any(|b| b != b'0'))
}

/// The runs of digits in `text` that stand as numbers, not inside a name (`p95_ms`, `test_2`).
pub(super) fn numbers(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = None;
    let mut prev = ' ';
    for (i, c) in text.char_indices().chain([(text.len(), ' ')]) {
        match (c.is_ascii_digit(), start) {
            (true, None) if !(prev.is_alphanumeric() || prev == '_') => start = Some(i),
            (false, Some(s)) => {
                out.push(&text[s..i]);
                start = None;
            }
            _ => {}
        }
        prev = c;
    }
    out
}

/// The digits of a regex with no upper limit on their count (`\d+`, `[0-9]*`, `\d{2,}`), which
/// a limit's number must not be: `cpu_ms=\d+` accepts 99999 as well as 9.
/// A pattern that also bounds some digits (`[0-9]{1,3}`) is taken to hold its bound there:
/// `rows=[0-9]+ took_ms=[0-9]{1,3}` counts rows and limits the time.
fn unbounded_digits(e: &Expectation) -> Option<String> {
    let Expectation::Regex { pattern, .. } = e else { return None };
    const CLASSES: [&str; 3] = ["\\d", "[0-9]", "[[:digit:]]"];
    let bounded = CLASSES.iter().any(|class| {
        pattern.match_indices(class).any(|(at, _)| {
            let rest = &pattern[at + class.len()..];
            rest.starts_with('{') && rest.find('}').is_some_and(|k| !rest[1..k].ends_with(','))
        })
    });
    if bounded {
        return None;
    }
    for class in CLASSES {
        let mut from = 0;
        while let Some(at) = pattern[from..].find(class) {
            let end = from + at + class.len();
            let rest = &pattern[end..];
            let open_brace =
                rest.starts_with('{') && rest.find('}').is_some_and(|k| rest[1..k].ends_with(','));
            if rest.starts_with(['+', '*']) || open_brace {
                let len = if open_brace { rest.find('}').unwrap_or(0) + 1 } else { 1 };
                return Some(pattern[from + at..end + len].to_string());
            }
            from = end;
        }
    }
    None
}

/// Whether a limit's expectation holds any digit (a bound), classes included: `[0-9]|1[0-9]`.
fn has_a_number(e: &Expectation) -> bool {
    let text = match e {
        Expectation::Substring(s) => s.clone(),
        Expectation::Regex { pattern, .. } => {
            // `\d` is an escape, not a bound: drop escapes, keep classes.
            let mut out = String::new();
            let mut chars = pattern.chars();
            while let Some(c) = chars.next() {
                if c == '\\' {
                    chars.next();
                } else {
                    out.push(c);
                }
            }
            out
        }
    };
    !numbers(&text).is_empty()
}
