//! The golden matcher: compares what a command printed against an expected transcript. The same
//! matcher serves the kit test catalogue (`tests/cases/`), the exercises' `golden.md` files and
//! `cargo test`, so a learner's run is judged exactly as the instructors' is.
//!
//! Reference with examples: `docs/golden-format.md`.
//!
//! It is kit's own (not `trycmd`'s) because kit must run it from an installed binary against
//! embedded goldens, with placeholders for what varies between machines. The syntax is the
//! trycmd-compatible subset (DESIGN §13):
//!
//! | in the expected text | matches |
//! |---|---|
//! | `...` alone on a line | any number of lines, including none |
//! | `[..]` inside a line | any run of characters within that line |
//! | `[ROOT]`, `[HOME]`, … | the literal value the caller redacted (see [`Redactions`]) |
//! | `[TIME]` | an RFC 3339 timestamp, e.g. `2026-10-01T09:00:00Z` |
//! | `[DURATION]` | a duration as kit prints it: `850ms`, `1.2s`, `4m05s`, `2h10m` |
//! | `[N]` | an unsigned integer (a pid, a count) |
//! | `[HASH]` | 7 to 64 lowercase hex digits (a commit, a sha256, a stamp id) |
//!
//! Both sides are normalised first: CRLF to LF, trailing spaces trimmed, trailing blank lines
//! dropped.

use regex::Regex;

/// Values replaced by placeholders in the actual output before matching, longest value first,
/// e.g. `("[ROOT]", "/tmp/.tmpA1b2/sandbox")`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Redactions {
    pairs: Vec<(String, String)>,
}

impl Redactions {
    /// No redactions.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Replace every occurrence of `value` in the actual output by `placeholder`.
    /// Empty values are ignored.
    pub(crate) fn add(&mut self, placeholder: &str, value: impl Into<String>) -> &mut Self {
        let value = value.into();
        if !value.is_empty() {
            self.pairs.push((placeholder.to_string(), value));
            self.pairs.sort_by_key(|p| std::cmp::Reverse(p.1.len()));
        }
        self
    }

    /// Apply the redactions to `text`.
    pub(crate) fn apply(&self, text: &str) -> String {
        let mut out = text.to_string();
        for (ph, value) in &self.pairs {
            out = out.replace(value.as_str(), ph);
        }
        out
    }
}

/// Normalise line ends and trailing white space.
pub(crate) fn normalize(text: &str) -> String {
    let text = text.replace("\r\n", "\n");
    let mut lines: Vec<&str> = text.split('\n').map(|l| l.trim_end()).collect();
    while lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    lines.join("\n")
}

enum Pattern {
    AnyLines,
    Literal(String),
    Regex(Regex),
}

impl Pattern {
    fn matches(&self, line: &str) -> bool {
        match self {
            Pattern::AnyLines => true,
            Pattern::Literal(s) => s == line,
            Pattern::Regex(r) => r.is_match(line),
        }
    }
}

const TOKENS: &[(&str, &str)] = &[
    ("[..]", ".*?"),
    ("[TIME]", r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)"),
    ("[DURATION]", r"(?:\d+ms|\d+(?:\.\d+)?s|\d+m\d\ds|\d+h\d\dm)"),
    ("[N]", r"\d+"),
    ("[HASH]", r"[0-9a-f]{7,64}"),
];

fn compile_line(line: &str) -> Pattern {
    if line.trim() == "..." {
        return Pattern::AnyLines;
    }
    if !TOKENS.iter().any(|(t, _)| line.contains(t)) {
        return Pattern::Literal(line.to_string());
    }
    let mut re = String::from("^");
    let mut rest = line;
    'outer: while !rest.is_empty() {
        for (tok, pat) in TOKENS {
            if let Some(after) = rest.strip_prefix(tok) {
                re.push_str(pat);
                rest = after;
                continue 'outer;
            }
        }
        let next = TOKENS.iter().filter_map(|(t, _)| rest.find(t)).min().unwrap_or(rest.len());
        let cut = if next == 0 { rest.chars().next().map_or(1, char::len_utf8) } else { next };
        re.push_str(&regex::escape(&rest[..cut]));
        rest = &rest[cut..];
    }
    re.push('$');
    // The pattern is built from escaped text and fixed fragments, so it always compiles.
    Regex::new(&re).map(Pattern::Regex).unwrap_or_else(|_| Pattern::Literal(line.to_string()))
}

/// True if `actual` matches the `expected` golden text (after [`normalize`] on both sides).
pub(crate) fn is_match(expected: &str, actual: &str) -> bool {
    let exp = normalize(expected);
    let act = normalize(actual);
    let pats: Vec<Pattern> = exp.split('\n').map(compile_line).collect();
    let lines: Vec<&str> = if act.is_empty() { Vec::new() } else { act.split('\n').collect() };
    let pats: Vec<Pattern> = if exp.is_empty() { Vec::new() } else { pats };
    match_from(&pats, &lines, 0, 0, &mut vec![None; (pats.len() + 1) * (lines.len() + 1)])
}

fn match_from(
    pats: &[Pattern],
    lines: &[&str],
    p: usize,
    l: usize,
    memo: &mut Vec<Option<bool>>,
) -> bool {
    let key = p * (lines.len() + 1) + l;
    if let Some(v) = memo[key] {
        return v;
    }
    let v = if p == pats.len() {
        l == lines.len()
    } else if let Pattern::AnyLines = pats[p] {
        (l..=lines.len()).any(|k| match_from(pats, lines, p + 1, k, memo))
    } else {
        l < lines.len() && pats[p].matches(lines[l]) && match_from(pats, lines, p + 1, l + 1, memo)
    };
    memo[key] = Some(v);
    v
}

/// How one expected line (or `...`) lines up with the actual output, from [`align`].
/// Indices are 0-based into the normalised expected and actual lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Row {
    /// Expected line `exp` matched actual line `act` (literally or through `[..]`/placeholders).
    Same { exp: usize, act: usize },
    /// A `...` line at `exp` matched the actual lines `act` (possibly none).
    Folded { exp: usize, act: std::ops::Range<usize> },
    /// Expected line `exp` has no counterpart in the actual output.
    Missing { exp: usize },
    /// Actual line `act` was not expected.
    Extra { act: usize },
}

impl Row {
    fn is_change(&self) -> bool {
        matches!(self, Row::Missing { .. } | Row::Extra { .. })
    }
}

/// An actual line, compared against a compiled expected line by the diff algorithm.
struct Act<'a>(&'a str);

impl PartialEq<Pattern> for Act<'_> {
    fn eq(&self, p: &Pattern) -> bool {
        // `...` is never "equal" to one line: runs of changes next to it are folded into it.
        !matches!(p, Pattern::AnyLines) && p.matches(self.0)
    }
}

fn split_lines(text: &str) -> Vec<&str> {
    if text.is_empty() {
        Vec::new()
    } else {
        text.split('\n').collect()
    }
}

/// Line up the `expected` golden text with the `actual` output (both [`normalize`]d), with a
/// Myers diff (`similar`) in which an expected line equals every actual line it matches. In each
/// run of changes that holds a `...`, the `...` takes all the unexpected actual lines, so a
/// wildcard never shows as a change. Keeping every `Same`/`Folded` expected line and writing
/// each `Extra` actual line literally gives a golden that matches `actual` (see [`bless`]).
pub(crate) fn align(expected: &str, actual: &str) -> Vec<Row> {
    let exp = normalize(expected);
    let act = normalize(actual);
    let exp_lines = split_lines(&exp);
    let pats: Vec<Pattern> = exp_lines.iter().map(|l| compile_line(l)).collect();
    let acts: Vec<Act> = split_lines(&act).into_iter().map(Act).collect();
    let mut cap = similar::algorithms::Capture::new();
    // The capture hook never fails.
    let _ = similar::algorithms::myers::diff(
        &mut cap,
        &pats[..],
        0..pats.len(),
        &acts[..],
        0..acts.len(),
    );
    let mut rows = Vec::new();
    let (mut dels, mut ins): (Vec<usize>, Vec<usize>) = (Vec::new(), Vec::new());
    // One run of changes: literal expected lines before the first `...` pair with as many
    // leading actual lines, those after the last `...` with as many trailing ones; the `...`
    // takes the actual lines in between.
    let flush = |rows: &mut Vec<Row>, dels: &mut Vec<usize>, ins: &mut Vec<usize>| {
        let is_any = |e: &usize| matches!(pats[*e], Pattern::AnyLines);
        let Some(first) = dels.iter().position(is_any) else {
            rows.extend(dels.iter().map(|&exp| Row::Missing { exp }));
            rows.extend(ins.iter().map(|&act| Row::Extra { act }));
            dels.clear();
            ins.clear();
            return;
        };
        let last = dels.iter().rposition(is_any).unwrap_or(first);
        let lead = first.min(ins.len());
        let trail = (dels.len() - last - 1).min(ins.len() - lead);
        rows.extend(dels[..first].iter().map(|&exp| Row::Missing { exp }));
        rows.extend(ins[..lead].iter().map(|&act| Row::Extra { act }));
        let middle = &ins[lead..ins.len() - trail];
        let mut taken = false;
        for &e in &dels[first..=last] {
            if matches!(pats[e], Pattern::AnyLines) {
                let act = match middle {
                    [a, .., b] if !taken => *a..*b + 1,
                    [a] if !taken => *a..*a + 1,
                    _ => {
                        let at = ins.get(lead + middle.len()).copied().unwrap_or(acts.len());
                        at..at
                    }
                };
                rows.push(Row::Folded { exp: e, act });
                taken = true;
            } else {
                rows.push(Row::Missing { exp: e });
            }
        }
        rows.extend(dels[last + 1..].iter().map(|&exp| Row::Missing { exp }));
        rows.extend(ins[ins.len() - trail..].iter().map(|&act| Row::Extra { act }));
        dels.clear();
        ins.clear();
    };
    for op in cap.into_ops() {
        let (tag, old, new) = op.as_tag_tuple();
        match tag {
            similar::DiffTag::Equal => {
                flush(&mut rows, &mut dels, &mut ins);
                rows.extend(old.zip(new).map(|(exp, act)| Row::Same { exp, act }));
            }
            _ => {
                dels.extend(old);
                ins.extend(new);
            }
        }
    }
    flush(&mut rows, &mut dels, &mut ins);
    rows
}

/// The golden text rewritten to match `actual`: expected lines that still match (wildcards
/// included) are kept as written, lines no longer printed are dropped, new lines are added
/// literally. Used by `KIT_GOLDEN=overwrite` and `kit verify --bless`.
pub(crate) fn bless(expected: &str, actual: &str) -> String {
    let exp = normalize(expected);
    let act = normalize(actual);
    let (exp_lines, act_lines) = (split_lines(&exp), split_lines(&act));
    let mut out: Vec<&str> = Vec::new();
    for row in align(expected, actual) {
        match row {
            Row::Same { exp, .. } | Row::Folded { exp, .. } => out.push(exp_lines[exp]),
            Row::Missing { .. } => {}
            Row::Extra { act } => out.push(act_lines[act]),
        }
    }
    out.join("\n")
}

/// Lines of context shown around each change in [`diff`].
pub(crate) const CONTEXT: usize = 3;

/// A readable unified diff of expected versus actual, for a failed match: each row shows the
/// expected line number, the actual line number, a sign (`-` expected but missing, `+` printed but
/// not expected, blank: matched) and the text. Lines matched by `[..]` or a placeholder show as
/// matched (with the actual text); a `...` shows once with the range of actual lines it took.
/// Only [`CONTEXT`] lines around each change are shown; skipped stretches print as `@@ … @@`.
/// Line numbers count from 1 within the expected block and the actual output.
pub(crate) fn diff(expected: &str, actual: &str) -> String {
    diff_numbered(expected, actual, 1)
}

/// [`diff`], numbering the expected lines from `first_expected_line` (its line in the case file).
pub(crate) fn diff_numbered(expected: &str, actual: &str, first_expected_line: usize) -> String {
    let exp = normalize(expected);
    let act = normalize(actual);
    let (exp_lines, act_lines) = (split_lines(&exp), split_lines(&act));
    let rows = align(expected, actual);
    let e_no = |e: usize| (e + first_expected_line).to_string();
    let a_no = |a: usize| (a + 1).to_string();
    let changes: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].is_change()).collect();
    let near = |i: usize| changes.iter().any(|&c| c.abs_diff(i) <= CONTEXT);
    let mut out = String::from("expected actual\n");
    if changes.is_empty() {
        out.push_str("  (no line differs)\n");
        return out;
    }
    let mut skipped = 0usize;
    for (i, row) in rows.iter().enumerate() {
        if !near(i) {
            skipped += 1;
            continue;
        }
        if skipped > 0 {
            out.push_str(&format!("@@ {skipped} matching line(s) @@\n"));
            skipped = 0;
        }
        let (en, an, sign, text) = match row {
            Row::Same { exp, act } => (e_no(*exp), a_no(*act), ' ', act_lines[*act].to_string()),
            Row::Folded { exp, act } => {
                let range = match act.len() {
                    0 => String::new(),
                    1 => a_no(act.start),
                    _ => format!("{}-{}", a_no(act.start), act.end),
                };
                (e_no(*exp), range, ' ', format!("... ({} line(s))", act.len()))
            }
            Row::Missing { exp } => (e_no(*exp), String::new(), '-', exp_lines[*exp].to_string()),
            Row::Extra { act } => (String::new(), a_no(*act), '+', act_lines[*act].to_string()),
        };
        out.push_str(format!("{en:>8} {an:>6} {sign} {text}").trim_end());
        out.push('\n');
    }
    if skipped > 0 {
        out.push_str(&format!("@@ {skipped} matching line(s) @@\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_of_cases() {
        let cases: &[(&str, &str, bool)] = &[
            ("a\nb", "a\nb", true),
            ("a\nb", "a\nc", false),
            ("a\r\nb  \n\n", "a\nb", true),
            ("a\n...\nz", "a\nz", true),
            ("a\n...\nz", "a\nb\nc\nz", true),
            ("a\n...", "a", true),
            ("...\nz", "x\ny", false),
            ("took [DURATION]", "took 1.2s", true),
            ("took [DURATION]", "took 850ms", true),
            ("took [DURATION]", "took 4m05s", true),
            ("took [DURATION]", "took soon", false),
            ("at [TIME]", "at 2026-10-01T09:00:00Z", true),
            ("pid [N] holds it", "pid 4242 holds it", true),
            ("commit [HASH]", "commit 3f2a9c1", true),
            ("commit [HASH]", "commit XYZ", false),
            ("x [..] z", "x anything at all z", true),
            ("x [..] z", "x anything\nz", false),
            ("[..]", "", false),
            ("", "", true),
            ("cost $0.94 (a.b)", "cost $0.94 (a.b)", true),
            ("cost $0.94 [..]", "cost $0.94 (a.b)", true),
            ("a.b", "axb", false),
        ];
        for (exp, act, want) in cases {
            assert_eq!(is_match(exp, act), *want, "expected {exp:?} vs actual {act:?}");
        }
    }

    #[test]
    fn redactions_longest_first() {
        let mut r = Redactions::new();
        r.add("[HOME]", "/tmp/x").add("[ROOT]", "/tmp/x/sandbox");
        assert_eq!(r.apply("/tmp/x/sandbox/a and /tmp/x/b"), "[ROOT]/a and [HOME]/b");
    }

    #[test]
    fn table_of_placeholders() {
        let cases: &[(&str, &str, bool)] = &[
            ("at [TIME]", "at 2026-10-01T09:00:00.123+02:00", true),
            ("at [TIME]", "at yesterday", false),
            ("[N] files", "12 files", true),
            ("[N] files", "-1 files", false),
            ("[HASH]", "abcdef0", true),
            ("[HASH]", "abc", false),
            ("[HASH]", "ABCDEF0", false),
            ("took [DURATION]", "took 2h10m", true),
            ("[ROOT]/a", "[ROOT]/a", true),
            ("a\nb", "a\r\nb", true),
            ("a\nb\n", "a\nb", true),
            ("a\nb", "a\nb\n\n", true),
            ("a ", "a", true),
            ("a\n...\nb\n...\nc", "a\nb\nx\nc", true),
        ];
        for (exp, act, want) in cases {
            assert_eq!(is_match(exp, act), *want, "expected {exp:?} vs actual {act:?}");
        }
    }

    #[test]
    fn redactions_replace_every_occurrence() {
        let mut r = Redactions::new();
        r.add("[ROOT]", "/r").add("[BIN]", "");
        assert_eq!(r.apply("/r and /r"), "[ROOT] and [ROOT]");
    }

    /// (expected, actual, diff) — the whole report, so the format itself is pinned.
    #[test]
    fn table_of_diffs() {
        let cases: &[(&str, &str, &str)] = &[
            // A changed line: one missing, one extra, numbered on both sides.
            ("a\nb\nc", "a\nB\nc", "       1      1   a\n       2        - b\n              2 + B\n       3      3   c\n"),
            // A missing line at the end.
            ("a\nb", "a", "       1      1   a\n       2        - b\n"),
            // An extra line; no final newline and CRLF make no difference.
            ("a", "a\r\nz", "       1      1   a\n              2 + z\n"),
            // `...` folds the lines it took; `[..]` and placeholders show as matched.
            (
                "start [..]\n...\nend [N]\nlast",
                "start 42\nx\ny\nend 7\nLAST",
                "       1      1   start 42\n       2    2-3   ... (2 line(s))\n       3      4   end 7\n       4        - last\n              5 + LAST\n",
            ),
            // Far from the change, matching lines are folded away.
            (
                "1\n2\n3\n4\n5\n6\n7\nx",
                "1\n2\n3\n4\n5\n6\n7\ny",
                "@@ 4 matching line(s) @@\n       5      5   5\n       6      6   6\n       7      7   7\n       8        - x\n              8 + y\n",
            ),
            // Missing output entirely.
            ("a", "", "       1        - a\n"),
        ];
        for (exp, act, want) in cases {
            let d = diff(exp, act);
            assert_eq!(
                d,
                format!("expected actual\n{want}"),
                "expected {exp:?} vs actual {act:?}:\n{d}"
            );
            assert!(!is_match(exp, act));
        }
    }

    #[test]
    fn diff_numbers_expected_lines_from_the_case_file() {
        let d = diff_numbered("a", "b", 40);
        assert!(d.contains("      40        - a\n"), "{d}");
    }

    #[test]
    fn bless_keeps_wildcards_that_still_match() {
        let cases: &[(&str, &str, &str)] = &[
            ("a\nb", "a\nc", "a\nc"),
            ("took [DURATION]\nold", "took 3s\nnew\nmore", "took [DURATION]\nnew\nmore"),
            ("head\n...\ntail", "head\nx\ny\nTAIL", "head\n...\nTAIL"),
            ("x [..] z\ngone", "x y z", "x [..] z"),
            ("", "out", "out"),
            ("a", "", ""),
        ];
        for (exp, act, want) in cases {
            let b = bless(exp, act);
            assert_eq!(&b, want, "expected {exp:?} vs actual {act:?}");
            assert!(is_match(&b, act), "{b:?} must match {act:?}");
        }
    }
}
