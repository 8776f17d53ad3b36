//! The golden matcher: compares what a command printed against an expected transcript. The same
//! matcher serves the kit test catalogue (`tests/cases/`), the exercises' `golden.md` files and
//! `cargo test`, so a learner's run is judged exactly as the instructors' is.
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
pub struct Redactions {
    pairs: Vec<(String, String)>,
}

impl Redactions {
    /// No redactions.
    pub fn new() -> Self {
        Self::default()
    }

    /// Replace every occurrence of `value` in the actual output by `placeholder`.
    /// Empty values are ignored.
    pub fn add(&mut self, placeholder: &str, value: impl Into<String>) -> &mut Self {
        let value = value.into();
        if !value.is_empty() {
            self.pairs.push((placeholder.to_string(), value));
            self.pairs.sort_by_key(|p| std::cmp::Reverse(p.1.len()));
        }
        self
    }

    /// Apply the redactions to `text`.
    pub fn apply(&self, text: &str) -> String {
        let mut out = text.to_string();
        for (ph, value) in &self.pairs {
            out = out.replace(value.as_str(), ph);
        }
        out
    }
}

/// Normalise line ends and trailing white space.
pub fn normalize(text: &str) -> String {
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
pub fn is_match(expected: &str, actual: &str) -> bool {
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

/// A readable unified diff of expected versus actual (both normalised), for a failed match.
pub fn diff(expected: &str, actual: &str) -> String {
    let exp = normalize(expected) + "\n";
    let act = normalize(actual) + "\n";
    similar::TextDiff::from_lines(&exp, &act)
        .unified_diff()
        .context_radius(3)
        .header("expected", "actual")
        .to_string()
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
    fn diff_names_both_sides() {
        let d = diff("a\nb\n", "a\nc\n");
        assert!(d.contains("-b") && d.contains("+c"), "{d}");
    }
}
