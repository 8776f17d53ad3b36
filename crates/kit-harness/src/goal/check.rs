//! `kit goal check [--json]`: the rating as a lesson. It prints each point of the scale with why
//! it is reached or not, every criterion as kit reads it, and every shortcut with its goal.md
//! line and its fix, then the next step. Exit 0 when the level meets `config.goal.required_level`
//! (the level `kit loop` demands), 2 below it. `--json` prints the same facts as schema
//! `kit.goal/1`.

use std::io::Write;

use serde::Serialize;

use super::lint::FIX_SEP;
use super::{frozen_paths, load, rate, Goal, Rating};
use crate::error::{IoContext, Result, EXIT_BAD_INPUT, EXIT_OK};
use crate::longrun::config::Config;
use crate::longrun::Project;
use crate::term::Theme;

/// The JSON schema id of `kit goal check --json`.
pub(super) const SCHEMA: &str = "kit.goal/1";

/// Width the text output wraps at.
const WIDTH: usize = 100;

/// Options of `kit goal check`.
#[derive(Clone, Debug, Default)]
pub struct CheckOptions {
    /// Print JSON instead of text.
    pub json: bool,
}

/// Run `kit goal check` on `project`, writing to `out`. Returns the exit code: 0 when the goal
/// meets the required level, 2 below it.
///
/// Errors: goal.md missing ([`crate::Error::Usage`]) or malformed, config.toml or frozen.toml
/// malformed ([`crate::Error::Input`] with file and line), I/O.
pub fn check(
    project: &Project,
    opts: &CheckOptions,
    theme: &Theme,
    out: &mut dyn Write,
) -> Result<u8> {
    let goal = load(project)?;
    let config = Config::load(&project.config())?;
    let frozen = frozen_paths(project)?;
    let rating = rate(&goal, &frozen, &project.root);
    let required = config.goal.required_level;
    let code = if rating.level >= required { EXIT_OK } else { EXIT_BAD_INPUT };
    let at = std::path::Path::new("stdout");
    if opts.json {
        writeln!(out, "{}", to_json(&goal, &rating, required)).at(at)?;
    } else {
        let text = render(&goal, &rating, required, theme);
        out.write_all(text.as_bytes()).at(at)?;
        // The rating trusts frozen.toml; say when the tree no longer matches it.
        if let Ok(drifts) = crate::frozen::freeze::drift_of_user_files(project) {
            if let Some(first) = drifts.first() {
                let list = crate::frozen::guard::list_drifts(
                    drifts.iter().map(|d| (d.path.as_str(), d.kind)),
                );
                writeln!(
                    out,
                    "{} frozen files differ from frozen.toml: {}; kit loop refuses to start until \
                     you run kit freeze {} (keep the change) or kit freeze --restore (discard it)",
                    theme.warn("note:"),
                    list,
                    first.path
                )
                .at(at)?;
            }
        }
    }
    Ok(code)
}

/// The `--json` document, fields in the order they print.
#[derive(Serialize)]
struct Report<'a> {
    schema: &'static str,
    title: &'a str,
    level: u8,
    required: u8,
    ok: bool,
    reasons: &'a [String],
    shortcuts: &'a [super::Shortcut],
    notes: &'a [String],
    criteria: &'a [super::Criterion],
    adversarial: &'a [super::Trial],
    prose_criteria: Vec<Prose<'a>>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    humans: &'a [super::Human],
    budget: BudgetJson,
}

#[derive(Serialize)]
struct Prose<'a> {
    line: usize,
    text: &'a str,
}

#[derive(Serialize)]
struct BudgetJson {
    iterations: Option<u32>,
    wall_s: Option<u64>,
    cost_usd: Option<f64>,
}

fn to_json(goal: &Goal, rating: &Rating, required: u8) -> String {
    let report = Report {
        schema: SCHEMA,
        title: &goal.title,
        level: rating.level,
        required,
        ok: rating.level >= required,
        reasons: &rating.reasons,
        shortcuts: &rating.shortcuts,
        notes: &rating.notes,
        criteria: &goal.criteria,
        adversarial: &rating.trials,
        prose_criteria: goal
            .prose_criteria
            .iter()
            .map(|(line, text)| Prose { line: *line, text })
            .collect(),
        humans: &goal.humans,
        budget: BudgetJson {
            iterations: goal.budget.iterations,
            wall_s: goal.budget.wall.map(|d| d.as_secs()),
            cost_usd: goal.budget.cost_usd,
        },
    };
    serde_json::to_string_pretty(&report).unwrap_or_default()
}

fn render(goal: &Goal, rating: &Rating, required: u8, theme: &Theme) -> String {
    let mut s = String::new();
    let title = if goal.title.is_empty() {
        theme.dim("(no title: start goal.md with `# Goal: …`)")
    } else {
        goal.title.clone()
    };
    s += &format!("{} {title}\n", theme.bold("Goal:"));
    let level = format!("level {} of 4", rating.level);
    let level = if rating.level >= required { theme.ok(&level) } else { theme.bad(&level) };
    s += &format!("Rated {level} (required: {required})\n\n");

    for (i, reason) in rating.reasons.iter().enumerate() {
        let point = i + 1;
        let mark = if point <= rating.level as usize { theme.ok("✓") } else { theme.bad("✗") };
        s += &wrap(&format!("  {mark} {point}  "), 7, reason);
    }

    if !goal.criteria.is_empty() || !goal.prose_criteria.is_empty() || !goal.humans.is_empty() {
        s += &format!("\n{}\n", theme.bold("Criteria"));
        let mut rows: Vec<(usize, String)> = Vec::new();
        for c in &goal.criteria {
            let mut row = format!("{:<12}{}", c.kind.as_str(), c.command);
            let mut exp: Vec<String> =
                c.expectations.iter().map(|e| format!("`{}`", e.as_written())).collect();
            if c.exit != 0 {
                exp.push(format!("(exit {})", c.exit));
            }
            let arrow = if c.expectations.is_empty() { "→ (nothing expected)" } else { "→" };
            let exp =
                if exp.is_empty() { String::new() } else { format!(" {}", exp.join(" and ")) };
            let exp = exp.replace("and (exit", "(exit");
            row += &format!("\n{:12}{arrow}{exp}", "");
            rows.push((c.line, row));
        }
        for (line, text) in &goal.prose_criteria {
            rows.push((*line, format!("{:<12}{}", "prose", text)));
        }
        for h in &goal.humans {
            rows.push((
                h.line,
                format!(
                    "{:<12}{}\n{:12}→ waits for a person: kit approve N when kit loop stops \
                     \"needs you\"",
                    "human", h.text, ""
                ),
            ));
        }
        rows.sort_by_key(|r| r.0);
        for (line, row) in rows {
            let loc = format!("goal.md:{line}");
            let mut lines = row.lines();
            s += &format!("  {loc:<12}{}\n", lines.next().unwrap_or(""));
            for l in lines {
                s += &format!("  {:<12}{l}\n", "");
            }
        }
    }

    if !rating.shortcuts.is_empty() {
        s += &format!(
            "\n{}\n",
            theme.bold(&format!(
                "Shortcuts: {} way{} to pass without doing the work (each caps the level at 2)",
                rating.shortcuts.len(),
                if rating.shortcuts.len() == 1 { "" } else { "s" }
            ))
        );
        for sc in &rating.shortcuts {
            let (problem, fix) = sc.what.split_once(FIX_SEP).unwrap_or((sc.what.as_str(), ""));
            let loc = format!("goal.md:{}", sc.line);
            s += &wrap(&format!("  {} ", theme.warn(&format!("{loc:<11}"))), 14, problem);
            if !fix.is_empty() {
                s += &wrap(&format!("  {:12}", ""), 19, &format!("fix: {fix}"));
            }
        }
    }

    if !rating.notes.is_empty() {
        s += &format!("\n{}\n", theme.bold("Not checked"));
        for n in &rating.notes {
            s += &wrap("  ", 2, n);
        }
    }

    let b = &goal.budget;
    let mut budget = Vec::new();
    if let Some(n) = b.iterations {
        budget.push(format!("{n} iteration{}", if n == 1 { "" } else { "s" }));
    }
    if let Some(w) = b.wall {
        budget.push(format!("{} wall time", crate::units::format_duration(w)));
    }
    if let Some(c) = b.cost_usd {
        budget.push(format!("{c} USD"));
    }
    if !budget.is_empty() {
        s += &format!("\n{} {}\n", theme.bold("Budget:"), budget.join(", "));
    }

    s.push('\n');
    if rating.level >= required {
        s += &format!(
            "{} level {} meets the required level {required}: kit loop will run this goal\n",
            theme.ok("ok:"),
            rating.level
        );
        if rating.level < 4 {
            let climb = format!("to reach level {}: {}", rating.level + 1, next_step(goal, rating));
            s += &wrap("  ", 2, &climb);
        }
        s += "next: kit loop\n";
    } else {
        s += &wrap(
            &format!("{} ", theme.bad("not ready:")),
            11,
            &format!(
                "level {} is below the required level {required} (config.toml [goal] required_level), so kit loop refuses this goal",
                rating.level
            ),
        );
        s += &wrap("next: ", 6, &format!("{}, then kit goal check", next_step(goal, rating)));
    }
    s
}

/// What to do to climb one point.
fn next_step(goal: &Goal, rating: &Rating) -> String {
    match rating.level {
        0 => "write criteria under `## Criteria` in longrun/goal.md, like - function: `COMMAND` → `EXPECTED OUTPUT` (kit lesson 2)".to_string(),
        1 => format!(
            "turn the prose criterion at goal.md:{} into a command with its expected output: - function: `COMMAND` → `EXPECTED OUTPUT`",
            goal.prose_criteria.first().map_or(0, |p| p.0)
        ),
        2 => match (rating.shortcuts.first(), goal.prose_criteria.first()) {
            (Some(sc), _) => format!(
                "close the shortcut{} above, starting at goal.md:{}",
                if rating.shortcuts.len() == 1 { "" } else { "s" },
                sc.line
            ),
            (None, Some((line, _))) => {
                format!("turn the prose criterion at goal.md:{line} into a command with its expected output")
            }
            (None, None) => "make every criterion a command with its expected output".to_string(),
        },
        _ => {
            let have: Vec<_> = goal.criteria.iter().map(|c| c.kind).collect();
            let missing: Vec<&str> = super::Kind::ALL
                .iter()
                .filter(|k| !have.contains(k))
                .map(|k| k.as_str())
                .collect();
            if missing.is_empty() {
                "run every function and regression criterion through unittest, pytest, cargo test or go test, so that kit can canary it".to_string()
            } else {
                format!("add a {} criterion", missing.join(" and a "))
            }
        }
    }
}

/// `text` wrapped at [`WIDTH`] columns: the first line after `first` (which is `indent` columns
/// wide as printed), the rest indented by `indent` spaces.
fn wrap(first: &str, indent: usize, text: &str) -> String {
    let mut out = String::from(first);
    let mut col = indent;
    let mut line_empty = true;
    for word in unbroken_words(text) {
        let word = word.as_str();
        let w = word.chars().count();
        if !line_empty && col + 1 + w > WIDTH {
            out.push('\n');
            out.push_str(&" ".repeat(indent));
            col = indent;
            line_empty = true;
        }
        if !line_empty {
            out.push(' ');
            col += 1;
        }
        out.push_str(word);
        col += w;
        line_empty = false;
    }
    out.push('\n');
    out
}

/// The words of `text`, a backquoted span with spaces (`` `14 passed` ``) kept as one.
fn unbroken_words(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut open = false;
    for word in text.split(' ') {
        match out.last_mut() {
            Some(last) if open => {
                last.push(' ');
                last.push_str(word);
            }
            _ => out.push(word.to_string()),
        }
        if word.matches('`').count() % 2 == 1 {
            open = !open;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_indents_continuation_lines() {
        let text = "word ".repeat(40);
        let got = wrap("  >> ", 5, text.trim());
        let lines: Vec<&str> = got.lines().collect();
        assert!(lines.len() > 1);
        assert!(lines.iter().all(|l| l.chars().count() <= WIDTH), "{got}");
        assert!(lines[1].starts_with("     word"));
    }

    #[test]
    fn wrap_keeps_backquoted_spans_whole() {
        let text = format!("{}`14 passed` (pytest)", "x ".repeat(46));
        let got = wrap("", 0, &text);
        assert!(got.contains("\n`14 passed` (pytest)"), "{got}");
        assert_eq!(unbroken_words("a `b c` d"), ["a", "`b c`", "d"]);
    }
}
