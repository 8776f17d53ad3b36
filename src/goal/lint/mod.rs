//! The done-criterion scale and the shortcut linter (DESIGN §4). A criterion is only as good as
//! the cheapest way to make it pass: if deleting tests, skipping them, swallowing the exit status
//! or editing the test itself satisfies it, an agent under pressure will find that way. The linter
//! names each such shortcut with its goal.md line and how to close it, and caps the level at 2.
//!
//! | level | meaning |
//! |---|---|
//! | 0 | no criteria section, or nothing checkable |
//! | 1 | criteria in prose only, no commands |
//! | 2 | commands, but some criterion has no expected output, or can be met by a shortcut |
//! | 3 | every criterion is command → expected output, none is shortcut-able, every test file the commands exercise is frozen |
//! | 4 | level 3, and the criteria cover function, regression and limit |
//!
//! Whose exit status is the criterion's: the command is read as the shell runs it
//! ([`super::shell::script`]: lists, and-or chains, pipelines, `!`, redirections, nested
//! `sh -c`), and the last command that runs must be work, not a step that only prints (`echo`,
//! `printf`, `cat FILE`, `python3 -c 'print(…)'`, `true`, `exit 0`). A runner whose status `;` or
//! `&` throws away, `|| true`, `! runner`, and a runner's output sent to /dev/null or to a file
//! nothing reads are each named. A pipe hands the status to its last command, so
//! `pytest -q tests/ 2>&1 | tail -5` is a shortcut too (a failing run that prints `14 passed`
//! before an error still passes) unless `set -o pipefail` comes first; expectations already
//! search the whole output, so the `tail` adds nothing. `set -e` keeps a failing step's status,
//! so `set -e; runner; echo done` is not named.
//!
//! The checks read the command with [`super::shell`] (words, operators, nested `sh -c`) and know
//! the common runners: `python -m unittest` (module names, `discover -s DIR -p PATTERN`),
//! `pytest`, `cargo test`, `go test`. Any other path in a command that names a test (a path
//! component containing `test`) must be frozen too, and so must the script a `limit` runs.

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::shell;
use super::{Criterion, Expectation, Goal, Kind, IMPLICITLY_FROZEN};

/// Separates the problem from its fix in [`Shortcut::what`].
pub(crate) const FIX_SEP: &str = "; fix: ";

/// A way to satisfy a criterion without doing the work.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shortcut {
    /// 1-based line of the criterion in goal.md.
    pub line: usize,
    /// What the shortcut is, then `; fix: ` and how to close it.
    pub what: String,
}

/// A goal's place on the done-criterion scale.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rating {
    /// 0 to 4.
    pub level: u8,
    /// Four sentences, one per point 1–4 of the scale: why it is reached or not. Point `i` is
    /// reached when `i <= level`.
    pub reasons: Vec<String>,
    /// Every shortcut found, in goal.md order. Any shortcut caps the level at 2.
    pub shortcuts: Vec<Shortcut>,
}

/// Rate `goal`. `frozen` holds the repo-relative paths (files and folders, `tests` or `tests/`)
/// that frozen.toml protects; goal.md, config.toml and frozen.toml count as frozen anyway. `root`
/// is the repository root, where the test files that commands name are looked up.
pub fn rate(goal: &Goal, frozen: &[String], root: &Path) -> Rating {
    let frozen = Frozen::new(frozen);
    let mut lint = Lint {
        root,
        frozen: &frozen,
        shortcuts: Vec::new(),
        exercised: BTreeSet::new(),
        status_lost: BTreeSet::new(),
    };
    for c in &goal.criteria {
        lint.criterion(c);
    }
    let Lint { mut shortcuts, exercised, status_lost, .. } = lint;
    let mut seen = BTreeSet::new();
    shortcuts.retain(|s| seen.insert((s.line, s.what.clone())));
    shortcuts.sort_by_key(|s| s.line);

    let commands = goal.criteria.len();
    let prose = goal.prose_criteria.len();
    let kinds: BTreeSet<&str> = goal.criteria.iter().map(|c| c.kind.as_str()).collect();
    let missing: Vec<&str> =
        Kind::ALL.iter().map(|k| k.as_str()).filter(|k| !kinds.contains(k)).collect();

    let level: u8 = if commands == 0 && prose == 0 {
        0
    } else if commands == 0 {
        1
    } else if !shortcuts.is_empty() || prose > 0 {
        2
    } else if !missing.is_empty() {
        3
    } else {
        4
    };

    let mut reasons = Vec::with_capacity(4);
    reasons.push(if commands + prose == 0 {
        "criteria: none — list under `## Criteria` what must be true when the work is done"
            .to_string()
    } else {
        format!(
            "criteria: {} written under `## Criteria`",
            count(commands + prose, "criterion", "criteria")
        )
    });
    reasons.push(if commands == 0 {
        if prose == 0 {
            "commands: none to run".to_string()
        } else {
            format!(
                "commands: none — {} in prose, which only the agent can judge; write each as - function: `COMMAND` → `EXPECTED OUTPUT`",
                if prose == 1 { "the criterion is" } else { "all criteria are" }
            )
        }
    } else if status_lost.is_empty() {
        format!("commands: {commands} of {} run by the loop itself, each with its exit status checked", commands + prose)
    } else {
        // The ✓ of this point says commands exist; it must not also claim their status counts.
        let lines: Vec<String> = status_lost.iter().map(|l| format!("goal.md:{l}")).collect();
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let (which, verb) = match lines.as_slice() {
            [one] => (one.to_string(), "is"),
            [rest @ .., last] => (format!("{} and {last}", rest.join(", ")), "are"),
            [] => (String::new(), "is"),
        };
        format!(
            "commands: {commands} of {} run by the loop itself, but the exit status of {which} {verb} thrown away (see the shortcuts)",
            commands + prose,
        )
    });
    reasons.push(if level < 2 {
        "no shortcut: needs commands first".to_string()
    } else if level >= 3 {
        let tests = if exercised.is_empty() {
            String::new()
        } else {
            // A file inside an exercised folder is named by the folder.
            let list: Vec<&str> = exercised
                .iter()
                .map(String::as_str)
                .filter(|p| {
                    !exercised
                        .iter()
                        .any(|d| d.ends_with('/') && d != p && p.starts_with(d.as_str()))
                })
                .collect();
            format!(", and what they exercise is frozen ({})", abbreviate(&list, 4))
        };
        format!("no shortcut: every criterion pins output a shortcut would change{tests}")
    } else {
        let mut parts = Vec::new();
        if !shortcuts.is_empty() {
            parts.push(format!(
                "{} that let{} a criterion pass without the work",
                count(shortcuts.len(), "shortcut", "shortcuts"),
                if shortcuts.len() == 1 { "s" } else { "" }
            ));
        }
        if prose > 0 {
            let lines: Vec<String> =
                goal.prose_criteria.iter().map(|(l, _)| format!("goal.md:{l}")).collect();
            let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
            parts.push(format!(
                "{} in prose the loop cannot check ({})",
                count(prose, "criterion", "criteria"),
                abbreviate(&lines, 3)
            ));
        }
        format!("no shortcut: not yet — {}", parts.join("; "))
    });
    reasons.push(if missing.is_empty() {
        if level >= 4 {
            "coverage: function, regression and limit — the new work, nothing broken, a bound held".to_string()
        } else {
            "coverage: function, regression and limit are all there; it counts once level 3 is reached".to_string()
        }
    } else {
        format!(
            "coverage: no {} criterion (function proves the new work, regression that nothing broke, limit that a bound holds)",
            join_or(&missing)
        )
    });
    Rating { level, reasons, shortcuts }
}

/// `a`, `a or b`, `a, b or c`.
fn join_or(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn abbreviate(items: &[&str], max: usize) -> String {
    if items.len() <= max {
        items.join(", ")
    } else {
        format!("{}, and {} more", items[..max].join(", "), items.len() - max)
    }
}

/// The frozen paths, normalised (`./tests/` → `tests`).
struct Frozen {
    paths: Vec<String>,
}

impl Frozen {
    fn new(frozen: &[String]) -> Frozen {
        let paths = frozen
            .iter()
            .map(String::as_str)
            .chain(IMPLICITLY_FROZEN)
            .map(normalise)
            .filter(|p| !p.is_empty())
            .collect();
        Frozen { paths }
    }

    /// Whether `path` (normalised, repo-relative) is frozen itself or lies in a frozen folder.
    fn covers(&self, path: &str) -> bool {
        self.paths.iter().any(|f| {
            f == "."
                || path == f
                || (path.starts_with(f.as_str()) && path[f.len()..].starts_with('/'))
        })
    }
}

/// `./tests/` → `tests`; `a//b` → `a/b`.
fn normalise(p: &str) -> String {
    let parts: Vec<&str> = p.split('/').filter(|s| !s.is_empty() && *s != ".").collect();
    if parts.is_empty() {
        ".".to_string()
    } else {
        parts.join("/")
    }
}

struct Lint<'a> {
    root: &'a Path,
    frozen: &'a Frozen,
    shortcuts: Vec<Shortcut>,
    /// Frozen test files and folders the criteria exercise (for the level 3 reason).
    exercised: BTreeSet<String>,
    /// Lines of criteria whose exit status is not the work's (`; exit 0`, `|| true`…).
    status_lost: BTreeSet<usize>,
}

/// What a command exercises that must be frozen.
#[derive(Debug, PartialEq)]
enum Target {
    /// One file (which may not exist yet).
    File(String),
    /// The files under a folder whose names match one of the patterns (`test*.py`).
    Dir(String, Vec<String>),
    /// A script or program from the repository the command runs (`./run_tests.sh`,
    /// `python3 tools/check.py`), which may not exist yet.
    Script(String),
    /// A file that decides what a runner runs (`Makefile` for `make test`, `package.json` for
    /// `npm test`, `pytest.ini`, `.cargo/config.toml`), with the runner it configures. Must
    /// be frozen when it exists; `must_exist` when the command cannot run without it.
    Config { path: String, runner: &'static str, must_exist: bool },
}

impl Target {
    /// The target seen from the root when it was found from folder `cwd` ("" for the root).
    fn under(self, cwd: &str) -> Target {
        if cwd.is_empty() {
            return self;
        }
        let join = |p: String| normalise(&format!("{cwd}/{p}"));
        match self {
            Target::File(p) => Target::File(join(p)),
            Target::Dir(d, pats) => Target::Dir(join(d), pats),
            Target::Script(p) => Target::Script(join(p)),
            Target::Config { path, runner, must_exist } => {
                Target::Config { path: join(path), runner, must_exist }
            }
        }
    }
}

const UNITTEST_PATTERN: &str = "test*.py";
const PYTEST_PATTERNS: [&str; 2] = ["test_*.py", "*_test.py"];

impl Lint<'_> {
    fn flag(&mut self, line: usize, problem: impl Into<String>, fix: impl Into<String>) {
        let what = format!("{}{FIX_SEP}{}", problem.into(), fix.into());
        self.shortcuts.push(Shortcut { line, what });
    }

    /// A shortcut that makes the criterion's exit status something other than the work's.
    fn flag_status(&mut self, line: usize, problem: impl Into<String>, fix: impl Into<String>) {
        self.status_lost.insert(line);
        self.flag(line, problem, fix);
    }

    fn criterion(&mut self, c: &Criterion) {
        let line = c.line;
        self.expectations(c);
        self.swallowed_failure(c);
        let commands = shell::simple_commands(&c.command);
        let pinned = c.expectations.iter().any(pins_a_count);
        for words in &commands {
            self.agent_files(line, words);
            self.own_output(c, words);
            if let Some(runner) = Runner::of(words) {
                self.runner_flags(c, &runner, pinned);
            }
        }
        let mut targets = Vec::new();
        // The folder a `cd DIR &&` moved to, relative to the root ("" for the root itself).
        let mut cwd = String::new();
        for words in &commands {
            if words[0] == "cd" {
                cwd = match words.get(1) {
                    Some(d) if !d.starts_with('/') && !d.split('/').any(|c| c == "..") => {
                        let joined = normalise(&format!("{cwd}/{d}"));
                        if joined == "." {
                            String::new()
                        } else {
                            joined
                        }
                    }
                    _ => String::new(),
                };
                continue;
            }
            let here = self.root.join(&cwd);
            let mut found = Vec::new();
            if let Some(runner) = Runner::of(words) {
                found.extend(runner.targets(&here));
                found.extend(runner.config_files(&here));
            }
            found.extend(test_paths(words, &here));
            // A script is the test when it measures a limit, or when its name says it runs
            // tests or checks (a program the goal asks for is the work, not the test).
            found.extend(script_run(words, &here).filter(|t| {
                c.kind == Kind::Limit || matches!(t, Target::Script(p) if runs_tests(p))
            }));
            found.extend(build_files(words, &here));
            targets.extend(found.into_iter().map(|t| t.under(&cwd)));
        }
        // One check per path: what a runner found (with its file patterns) comes first.
        let mut seen = BTreeSet::new();
        for t in targets {
            let key = match &t {
                Target::File(p)
                | Target::Dir(p, _)
                | Target::Script(p)
                | Target::Config { path: p, .. } => p.clone(),
            };
            if seen.insert(key) {
                self.target(line, c.kind, &t);
            }
        }
    }

    fn expectations(&mut self, c: &Criterion) {
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

    /// Whether the exit status the loop sees is the work's: read the command as the shell runs
    /// it ([`shell::script`]) and follow which command's status ends up as the criterion's. Names
    /// `|| true`, a `;` or `&` that throws a runner's status away, a last command that only
    /// prints (`echo`, `python3 -c 'print(…)'`, `cat FILE`, `true`, `exit 0`), `!`, a pipe into
    /// `tail`/`true`, `set +e`, and output sent to `/dev/null` or to a file nothing reads.
    fn swallowed_failure(&mut self, c: &Criterion) {
        self.status_in(c, &c.command, 0, false, false);
    }

    fn status_in(&mut self, c: &Criterion, cmd: &str, depth: usize, errexit: bool, pipefail: bool) {
        let line = c.line;
        let mut errexit = errexit;
        let pipefail = pipefail || cmd.contains("pipefail");
        let mut lists = shell::script(cmd);
        // `runner; exit` and `runner; exit $?` end with the runner's own status.
        while lists.len() > 1 && lists.last().is_some_and(passes_status_on) {
            lists.pop();
        }
        let last = lists.len().saturating_sub(1);
        // Work whose exit status was thrown away by `;` or `&`: (shown, separator).
        let mut discarded: Vec<(String, &str)> = Vec::new();
        for (i, list) in lists.iter().enumerate() {
            for p in &list.pipelines {
                for s in &p.commands {
                    let w = &s.words;
                    if w.first().is_some_and(|f| f == "set") {
                        if w.iter().any(|a| a == "+e") {
                            errexit = false;
                            self.flag_status(
                                line,
                                "`set +e` keeps going after a failure",
                                "remove `set +e` so a failing step fails the criterion",
                            );
                        }
                        if w.iter().any(|a| {
                            (a.starts_with('-') && !a.starts_with("--") && a.contains('e'))
                                || a == "errexit"
                        }) {
                            errexit = true;
                        }
                    }
                }
            }
            self.redirections(line, list, &lists[i + 1..]);
            for (k, p) in list.pipelines.iter().enumerate() {
                if k > 0 && list.ops[k - 1] == "||" && !p.negated && !fails(&p.commands[0].words) {
                    self.flag_status(
                        line,
                        format!("`|| {}` swallows the failure: the criterion passes when the command fails", show_pipeline(p)),
                        "remove the `|| …` part so the runner's exit status decides",
                    );
                }
                if p.negated && p.commands.iter().any(|s| role(&s.words) == Role::Work) {
                    let shown = show_pipeline(p);
                    self.flag_status(
                        line,
                        format!("`! {shown}` inverts the exit status: the criterion passes when `{shown}` fails"),
                        "remove the `!`; if a failure is the expected result, say so with (exit N)",
                    );
                }
            }
            let work: Vec<String> = list
                .pipelines
                .iter()
                .flat_map(|p| &p.commands)
                .filter(|s| role(&s.words) == Role::Work)
                .map(|s| show_words(&s.words))
                .collect();
            if list.background {
                for w in &work {
                    self.flag_status(
                        line,
                        format!("`{w} &` runs in the background: its exit status is never seen"),
                        "remove the `&` so the command's exit status decides",
                    );
                }
            } else if i < last && !errexit {
                discarded.extend(work.into_iter().map(|w| (w, ";")));
            }
            if depth < 4 {
                for s in list.pipelines.iter().flat_map(|p| &p.commands) {
                    if let Some(script) = shell::nested_script(&s.words) {
                        let nested_errexit =
                            s.words.iter().skip(1).any(|a| {
                                a.starts_with('-') && !a.starts_with("--") && a.contains('e')
                            });
                        let nested_pipefail = pipefail || s.words.iter().any(|a| a == "pipefail");
                        self.status_in(c, &script, depth + 1, nested_errexit, nested_pipefail);
                    }
                }
            }
        }
        let Some(final_list) = lists.get(last).filter(|l| !l.background) else { return };
        if c.exit != 0 {
            return; // a criterion that expects a failure is not passed by `true`
        }
        // The pipelines whose exit status can end up as the criterion's: the first one and each
        // after `&&` (a pipeline after `||` is the fallback named above).
        let deciding: Vec<&shell::Pipeline> = final_list
            .pipelines
            .iter()
            .enumerate()
            .filter(|(k, _)| *k == 0 || final_list.ops[k - 1] == "&&")
            .map(|(_, p)| p)
            .collect();
        for p in &deciding {
            let [.., before, end] = p.commands.as_slice() else { continue };
            let _ = before;
            let prog = end.words.first().map(String::as_str).unwrap_or("");
            let runner_before =
                p.commands[..p.commands.len() - 1].iter().any(|s| Runner::of(&s.words).is_some());
            if !pipefail && !prog.is_empty() && (is_passthrough(prog) || runner_before) {
                self.flag_status(
                    line,
                    format!("`| {prog}` makes the exit status {prog}'s: a failing runner still exits 0"),
                    "drop the pipe and match the full output (expectations already search all of it), or start with set -o pipefail;",
                );
            }
        }
        let any_work =
            deciding.iter().any(|p| p.commands.iter().any(|s| role(&s.words) == Role::Work));
        let deciding_work = deciding.iter().any(|p| {
            if pipefail {
                p.commands.iter().any(|s| role(&s.words) == Role::Work)
            } else {
                p.commands.last().is_some_and(|s| role(&s.words) == Role::Work)
            }
        });
        let shown = show_list(final_list);
        if let Some((first, _)) = discarded.first() {
            if deciding_work {
                self.flag_status(
                    line,
                    format!("`; {shown}` decides the exit status: `{first}` may fail and the criterion still passes"),
                    "join the steps with && so each one must succeed",
                );
            } else {
                self.flag_status(
                    line,
                    format!("`; {shown}` replaces the runner's exit status with its own"),
                    "end the command with the runner, or join the steps with &&",
                );
            }
        } else if !any_work && depth == 0 && !errexit_work_before(&lists, last) {
            self.flag_status(
                line,
                format!("`{shown}` only prints or does nothing and exits 0: the criterion passes without any work being checked"),
                "run the real test runner or program, whose output and exit status are the evidence",
            );
        }
    }

    /// Output that never reaches the loop: a work command's stdout or stderr sent to
    /// /dev/null, or its stdout to a file no later command reads.
    fn redirections(&mut self, line: usize, list: &shell::AndOr, later: &[shell::AndOr]) {
        let later_words: Vec<&str> = list
            .pipelines
            .iter()
            .flat_map(|p| &p.commands)
            .chain(later.iter().flat_map(|l| l.pipelines.iter().flat_map(|p| &p.commands)))
            .flat_map(|s| {
                s.words
                    .iter()
                    .map(String::as_str)
                    .chain(s.redirects.iter().map(|r| r.target.as_str()))
            })
            .collect();
        for s in list.pipelines.iter().flat_map(|p| &p.commands) {
            if s.redirects.is_empty() || role(&s.words) != Role::Work {
                continue;
            }
            let written: Vec<&str> = s.redirects.iter().map(|r| r.written.as_str()).collect();
            let written = written.join(" ");
            let prog = show_words(&s.words);
            if s.discards(1) {
                self.flag(
                    line,
                    format!("`{written}` throws away what `{prog}` prints, so the expected output must come from something else"),
                    "remove the redirection; kit captures stdout and stderr together",
                );
            } else if s.discards(2) {
                self.flag(
                    line,
                    format!("`{written}` hides the runner's error output, where its failures are reported"),
                    "let stderr through; kit captures stdout and stderr together",
                );
            } else if let Some(file) = s.stdout_file() {
                let read =
                    later_words.iter().filter(|w| w.trim_start_matches('<') == file).count() > 1;
                if !read {
                    self.flag(
                        line,
                        format!("`{written}` sends what `{prog}` prints to a file the criterion never reads"),
                        "remove the redirection so the expectations see the runner's own output",
                    );
                }
            }
        }
    }

    fn agent_files(&mut self, line: usize, words: &[String]) {
        for w in words {
            let w = w.trim_start_matches(['<', '>']);
            let p = normalise(w);
            let base = p.rsplit('/').next().unwrap_or(&p);
            let in_longrun = p == "longrun" || p.starts_with("longrun/");
            let protected =
                IMPLICITLY_FROZEN.contains(&p.as_str()) || p.starts_with("longrun/.frozen");
            let agent_written = matches!(base, "progress.md" | "decisions.md" | "handoff.md");
            if (in_longrun && !protected) || (agent_written && !w.contains("://")) {
                self.flag(
                    line,
                    format!("reads `{w}`, which the agent writes: it can put the expected text there instead of doing the work"),
                    "check the work itself (tests, the program's output), never the agent's notes",
                );
            }
        }
    }

    fn own_output(&mut self, c: &Criterion, words: &[String]) {
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

    fn runner_flags(&mut self, c: &Criterion, r: &Runner, pinned: bool) {
        let line = c.line;
        for (flag, value) in &r.selecting {
            let shown = match value {
                Some(v) => format!("{flag} {v}"),
                None => flag.clone(),
            };
            self.flag(
                line,
                format!("`{shown}` selects or skips tests: the ones left out may fail unseen"),
                "run the whole file or suite the criterion names",
            );
        }
        if !pinned {
            for flag in &r.stop_early {
                self.flag(
                    line,
                    format!("`{flag}` stops at the first failure and the expectation pins no count, so a partial run can pass"),
                    format!("drop `{flag}`, or pin the count a full run reports: {}", count_example(c)),
                );
            }
        }
    }

    fn target(&mut self, line: usize, kind: Kind, t: &Target) {
        match t {
            Target::File(p) => {
                if self.frozen.covers(p) {
                    self.exercised.insert(p.clone());
                } else if !self.root.join(p).exists() {
                    self.flag(
                        line,
                        format!("{p} is run by this criterion but does not exist, so it is not frozen: the agent would write the test it is judged by"),
                        format!("write the test first, then kit freeze {p}"),
                    );
                } else if kind == Kind::Limit && !looks_like_test(p) {
                    self.flag(
                        line,
                        format!("{p} measures the limit but is not frozen: the agent could change what it measures"),
                        format!("kit freeze {p}"),
                    );
                } else {
                    self.flag(
                        line,
                        format!("{p} is not frozen: the agent can edit the test until it passes"),
                        format!("kit freeze {p}"),
                    );
                }
            }
            Target::Script(p) => {
                if self.frozen.covers(p) {
                    self.exercised.insert(p.clone());
                } else if !self.root.join(p).exists() {
                    self.flag(
                        line,
                        format!("{p} is run by this criterion but does not exist, so it is not frozen: the agent could write a {p} that prints the expected output"),
                        format!("write {p} first, then kit freeze {p}"),
                    );
                } else if kind == Kind::Limit {
                    self.flag(
                        line,
                        format!("{p} measures the limit but is not frozen: the agent could change what it measures"),
                        format!("kit freeze {p}"),
                    );
                } else {
                    self.flag(
                        line,
                        format!("{p} is run by this criterion but is not frozen: the agent could change what it checks"),
                        format!("kit freeze {p}"),
                    );
                }
            }
            Target::Config { path, runner, must_exist } => {
                if self.frozen.covers(path) {
                    self.exercised.insert(path.clone());
                } else if self.root.join(path).exists() {
                    self.flag(
                        line,
                        format!("{path} decides what `{runner}` runs, but is not frozen: the agent could change it until nothing fails"),
                        format!("kit freeze {path}"),
                    );
                } else if *must_exist {
                    self.flag(
                        line,
                        format!("{path}, which `{runner}` runs from, does not exist: the agent would write what the criterion runs"),
                        format!("write {path} first, then kit freeze {path}"),
                    );
                }
            }
            Target::Dir(d, patterns) => {
                if self.frozen.covers(d) {
                    self.exercised.insert(format!("{d}/"));
                    return;
                }
                let files = walk_matching(self.root, d, patterns);
                if files.is_empty() {
                    let what = if self.root.join(d).is_dir() {
                        format!("{d} holds no test file ({}) yet", patterns.join(", "))
                    } else {
                        format!("{d} does not exist")
                    };
                    self.flag(
                        line,
                        format!("{what}, and the criterion runs the tests found there: the agent would write the tests it is judged by"),
                        format!("write the tests first, then kit freeze {d}/"),
                    );
                    return;
                }
                let unfrozen: Vec<&str> =
                    files.iter().map(String::as_str).filter(|f| !self.frozen.covers(f)).collect();
                if unfrozen.is_empty() {
                    self.exercised.extend(files.iter().cloned());
                    return;
                }
                let folder = if d == "." { common_folder(&unfrozen) } else { Some(d.clone()) };
                let fix = match folder {
                    Some(f) => format!("kit freeze {f}/ (a frozen folder also catches new files)"),
                    None => format!("kit freeze {}", unfrozen.join(" ")),
                };
                let what = if unfrozen.len() == 1 {
                    format!(
                        "{} is not frozen: the agent can edit the test until it passes",
                        unfrozen[0]
                    )
                } else {
                    format!(
                        "{} test files the command runs are not frozen ({}): the agent can edit them until they pass",
                        unfrozen.len(),
                        abbreviate(&unfrozen, 3)
                    )
                };
                self.flag(line, what, fix);
            }
        }
    }
}

/// How a full run of this criterion's runner states its count, for a fix text: the runner's own
/// words with `N` for the count. The linter never guesses how many tests a file holds (a class
/// can inherit tests, a loop can make them), so N is what the criterion's command prints.
fn count_example(c: &Criterion) -> String {
    let commands = shell::simple_commands(&c.command);
    let Some((runner, words)) = commands.iter().find_map(|w| Runner::of(w).map(|r| (r, w))) else {
        return format!(
            "a count or value that `{}` prints only once the work is done",
            cut(c.command.clone())
        );
    };
    let plain: Vec<String> = words.iter().filter(|w| !w.contains(['<', '>'])).cloned().collect();
    let cmd = show_words(&plain);
    match runner.kind {
        RunnerKind::Unittest => {
            format!("→ `Ran N tests` and `re:^OK$`, N being the count `{cmd}` reports for a full run")
        }
        RunnerKind::Pytest => {
            format!("→ `N passed`, N being the count `{cmd}` reports for a full run")
        }
        RunnerKind::Cargo => format!(
            "→ `test result: ok. N passed`, N being the count `{cmd}` reports for a full run"
        ),
        RunnerKind::Go => format!(
            "→ `--- PASS: TestName` for each new test (`go test` prints no count; add -v to `{cmd}`)"
        ),
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

/// The first folder shared by all `files`, if they share one.
fn common_folder(files: &[&str]) -> Option<String> {
    let first = files.first()?.split_once('/')?.0;
    files
        .iter()
        .all(|f| f.split_once('/').is_some_and(|(d, _)| d == first))
        .then(|| first.to_string())
}

/// `|| exit 1`, `|| false`: a fallback that still fails.
fn fails(words: &[String]) -> bool {
    match words[0].as_str() {
        "false" => true,
        "exit" | "return" => words.get(1).is_some_and(|n| n.parse::<i32>().is_ok_and(|n| n != 0)),
        _ => false,
    }
}

/// What a simple command is there for, as far as the exit status goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// Preparation whose status nobody needs: `cd`, `export`, `mkdir`, `rm`, an assignment, a
    /// command that always fails (`false`, `exit 1`).
    Setup,
    /// Prints text or nothing and exits 0 whatever the code does: `echo`, `printf`, `cat FILE`,
    /// `true`, `:`, `exit 0`, `python3 -c 'print("…")'`.
    Prints,
    /// Anything else: a test runner, a program, a script; its exit status is evidence.
    Work,
}

fn role(words: &[String]) -> Role {
    let Some((prog, args)) = shell::program(words) else { return Role::Setup };
    let base = prog.rsplit('/').next().unwrap_or(prog);
    match base {
        "true" | ":" | "echo" | "printf" | "cat" | "tac" | "head" | "tail" | "yes" => Role::Prints,
        "exit" | "return" => {
            if args.first().is_none_or(|n| n == "0") {
                Role::Prints
            } else {
                Role::Setup
            }
        }
        "cd" | "pushd" | "popd" | "set" | "export" | "unset" | "umask" | "ulimit" | "source"
        | "." | "shopt" | "trap" | "alias" | "mkdir" | "rm" | "touch" | "sleep" | "cp" | "mv"
        | "ln" | "chmod" | "wait" | "hash" | "false" | "local" | "declare" | "readonly" | "for"
        | "case" | "in" | "esac" => Role::Setup,
        _ if inline_script(base, args).is_some_and(prints_only) => Role::Prints,
        _ => Role::Work,
    }
}

/// The program text of `python3 -c SCRIPT`, `node -e SCRIPT`, `perl -e`, `ruby -e`.
fn inline_script<'a>(base: &str, args: &'a [String]) -> Option<&'a str> {
    let flag = if base.starts_with("python") {
        "-c"
    } else if matches!(base, "node" | "perl" | "ruby" | "deno" | "bun") {
        "-e"
    } else {
        return None;
    };
    let i = args.iter().position(|a| a == flag)?;
    args.get(i + 1).map(String::as_str)
}

/// Whether an inline script only prints literals or exits: once its string literals are
/// removed, every name left is one of `print`, `sys.exit`, `console.log`, `puts`… A script that
/// imports or calls the project's code (`from loader import parse; print(parse("9s"))`) is work.
fn prints_only(script: &str) -> bool {
    const NAMES: [&str; 16] = [
        "print", "import", "sys", "exit", "stdout", "write", "flush", "end", "sep", "console",
        "log", "puts", "say", "process", "pass", "True",
    ];
    let mut code = String::new();
    let mut chars = script.chars().peekable();
    while let Some(c) = chars.next() {
        if matches!(c, '\'' | '"' | '`') {
            while let Some(d) = chars.next() {
                if d == '\\' {
                    chars.next();
                } else if d == c {
                    break;
                }
            }
            code.push(' ');
        } else {
            code.push(c);
        }
    }
    code.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_'))
        .all(|w| NAMES.contains(&w) || w == "f" || w == "r")
}

/// `exit` or `exit $?` alone: the script ends with the status of the command before.
fn passes_status_on(list: &shell::AndOr) -> bool {
    match list.pipelines.as_slice() {
        [p] if !p.negated && p.commands.len() == 1 => {
            let w = &p.commands[0].words;
            w.first().is_some_and(|f| f == "exit")
                && (w.len() == 1 || (w.len() == 2 && w[1] == "$?"))
        }
        _ => false,
    }
}

/// Whether work ran under `set -e` before the last list: its failure would end the script.
fn errexit_work_before(lists: &[shell::AndOr], last: usize) -> bool {
    let mut errexit = false;
    for l in &lists[..last] {
        for s in l.pipelines.iter().flat_map(|p| &p.commands) {
            if s.words.first().is_some_and(|f| f == "set")
                && s.words
                    .iter()
                    .any(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('e'))
            {
                errexit = true;
            } else if errexit && role(&s.words) == Role::Work {
                return true;
            }
        }
    }
    false
}

/// A command for a message: its words, quoted again where the shell needs it, cut after 60
/// characters.
fn show_words(words: &[String]) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_./:=@%+,-$".contains(c);
    let quoted: Vec<String> = words
        .iter()
        .map(|w| {
            if !w.is_empty() && w.chars().all(plain) {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect();
    cut(quoted.join(" "))
}

fn show_pipeline(p: &shell::Pipeline) -> String {
    let parts: Vec<String> = p.commands.iter().map(|s| show_words(&s.words)).collect();
    cut(parts.join(" | "))
}

fn cut(text: String) -> String {
    if text.chars().count() > 60 {
        format!("{}…", text.chars().take(59).collect::<String>())
    } else {
        text
    }
}

fn show_list(l: &shell::AndOr) -> String {
    let mut text = String::new();
    for (k, p) in l.pipelines.iter().enumerate() {
        if k > 0 {
            text.push_str(&format!(" {} ", l.ops[k - 1]));
        }
        text.push_str(&show_pipeline(p));
    }
    cut(text)
}

/// Programs at the end of a pipe that exit 0 whatever came in.
fn is_passthrough(prog: &str) -> bool {
    matches!(
        prog,
        "tee"
            | "cat"
            | "tail"
            | "head"
            | "sort"
            | "uniq"
            | "less"
            | "more"
            | "true"
            | "cut"
            | "tr"
            | "sed"
            | "awk"
            | "wc"
            | "column"
            | "fold"
    )
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
fn pins_a_count(e: &Expectation) -> bool {
    numbers(&literal_text(e)).iter().any(|n| n.bytes().any(|b| b != b'0'))
}

/// The runs of digits in `text` that stand as numbers, not inside a name (`p95_ms`, `test_2`).
fn numbers(text: &str) -> Vec<&str> {
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

/// Whether a script's name says it runs the tests: a path component with `test` in it
/// ([`looks_like_test`]), or a name such as `check.sh`, `verify`, `ci.sh`, `run_checks.py`.
fn runs_tests(p: &str) -> bool {
    let base = p.rsplit('/').next().unwrap_or(p);
    let stem = base.split('.').next().unwrap_or(base).to_ascii_lowercase();
    looks_like_test(p)
        || matches!(
            stem.as_str(),
            "check"
                | "checks"
                | "verify"
                | "ci"
                | "spec"
                | "specs"
                | "run_checks"
                | "run-checks"
                | "check_all"
                | "check-all"
                | "runchecks"
        )
}

fn looks_like_test(p: &str) -> bool {
    p.split('/').any(|c| c.to_ascii_lowercase().contains("test"))
}

/// A test runner the linter understands, with what its arguments select.
#[derive(Debug, Default)]
struct Runner {
    kind: RunnerKind,
    /// Positional arguments (test names, files, folders), flags removed.
    positional: Vec<String>,
    /// Flags that select or skip tests: `(flag, value)`.
    selecting: Vec<(String, Option<String>)>,
    /// Flags that stop at the first failure.
    stop_early: Vec<String>,
    /// `-s`/`-p` of `unittest discover`, `--test` of `cargo test`.
    options: Vec<(String, String)>,
}

#[derive(Debug, Default, PartialEq)]
enum RunnerKind {
    #[default]
    Unittest,
    Pytest,
    Cargo,
    Go,
}

impl Runner {
    fn of(words: &[String]) -> Option<Runner> {
        let (prog, args) = shell::program(words)?;
        let base = prog.rsplit('/').next().unwrap_or(prog);
        let module = if base.starts_with("python") { python_module(args) } else { None };
        let (kind, args) = if matches!(base, "pytest" | "py.test") {
            (RunnerKind::Pytest, args)
        } else if let Some(("pytest", rest)) = module {
            (RunnerKind::Pytest, rest)
        } else if let Some(("unittest", rest)) = module {
            (RunnerKind::Unittest, rest)
        } else if base == "cargo" && args.first().is_some_and(|a| a == "test") {
            (RunnerKind::Cargo, &args[1..])
        } else if base == "go" && args.first().is_some_and(|a| a == "test") {
            (RunnerKind::Go, &args[1..])
        } else {
            return None;
        };
        let mut r = Runner { kind, ..Runner::default() };
        r.read_args(args);
        Some(r)
    }

    fn read_args(&mut self, args: &[String]) {
        let mut i = 0;
        let mut after_dashdash = false;
        while i < args.len() {
            let a = args[i].as_str();
            let next = args.get(i + 1).cloned();
            i += 1;
            if a == "--" {
                after_dashdash = true;
                continue;
            }
            if a.contains('>') || a.contains('<') {
                continue; // a redirection
            }
            let (flag, inline) = match a.split_once('=') {
                Some((f, v)) if f.starts_with('-') => (f, Some(v.to_string())),
                _ => (a, None),
            };
            let take = |i: &mut usize| -> Option<String> {
                if inline.is_some() {
                    return inline.clone();
                }
                *i += 1;
                next.clone()
            };
            match (&self.kind, after_dashdash) {
                (RunnerKind::Pytest, _) => match flag {
                    "-k" | "-m" | "--deselect" | "--ignore" | "--ignore-glob" => {
                        let v = take(&mut i);
                        self.selecting.push((flag.into(), v));
                    }
                    "--lf" | "--last-failed" | "--sw" | "--stepwise" | "--sw-skip" => {
                        self.selecting.push((flag.into(), None))
                    }
                    "-x" | "--exitfirst" => self.stop_early.push(flag.into()),
                    "--maxfail" => {
                        let v = take(&mut i).unwrap_or_default();
                        self.stop_early.push(format!("--maxfail {v}"));
                    }
                    "-p" | "-c" | "-o" | "-W" | "-r" | "--rootdir" | "--tb" | "--durations"
                    | "--junitxml" | "--basetemp" | "--confcutdir" | "--timeout" => {
                        take(&mut i);
                    }
                    f if f.starts_with("--") => {}
                    f if f.starts_with('-') && f.len() > 1 => {
                        // A cluster of short flags: -xvs, -vk NAME.
                        for (k, c) in f[1..].char_indices() {
                            match c {
                                'x' => self.stop_early.push("-x".into()),
                                'k' | 'm' => {
                                    let rest = &f[1 + k + 1..];
                                    let v = if rest.is_empty() {
                                        take(&mut i)
                                    } else {
                                        Some(rest.to_string())
                                    };
                                    self.selecting.push((format!("-{c}"), v));
                                    break;
                                }
                                'p' | 'c' | 'o' | 'W' | 'r' => {
                                    if f[1 + k + 1..].is_empty() {
                                        take(&mut i);
                                    }
                                    break;
                                }
                                _ => {}
                            }
                        }
                    }
                    _ => self.positional.push(a.into()),
                },
                (RunnerKind::Unittest, _) => match flag {
                    "-k" => {
                        let v = take(&mut i);
                        self.selecting.push((flag.into(), v));
                    }
                    "-f" | "--failfast" => self.stop_early.push(flag.into()),
                    "-s"
                    | "--start-directory"
                    | "-p"
                    | "--pattern"
                    | "-t"
                    | "--top-level-directory" => {
                        let v = take(&mut i).unwrap_or_default();
                        self.options.push((flag.into(), v));
                    }
                    "--durations" => {
                        take(&mut i);
                    }
                    f if f.starts_with('-') => {
                        if f.len() > 2 && !f.starts_with("--") && f.contains('f') {
                            self.stop_early.push("-f".into());
                        }
                    }
                    _ => self.positional.push(a.into()),
                },
                (RunnerKind::Cargo, false) => match flag {
                    "--test" | "--bench" | "--example" | "--bin" => {
                        let v = take(&mut i).unwrap_or_default();
                        self.options.push((flag.into(), v));
                    }
                    "-p" | "--package" | "--features" | "-F" | "--target" | "--profile" | "-j"
                    | "--jobs" | "--manifest-path" | "--color" | "--message-format"
                    | "--target-dir" | "-Z" | "--config" | "--exclude" => {
                        take(&mut i);
                    }
                    f if f.starts_with('-') => {}
                    _ => self.selecting.push(("a test name filter".into(), Some(a.into()))),
                },
                (RunnerKind::Cargo, true) => match flag {
                    "--skip" => {
                        let v = take(&mut i);
                        self.selecting.push((flag.into(), v));
                    }
                    "--ignored" => self.selecting.push((flag.into(), None)),
                    "--exact" => {}
                    "--test-threads" | "--format" | "--color" | "-Z" => {
                        take(&mut i);
                    }
                    f if f.starts_with('-') => {}
                    _ => self.selecting.push(("a test name filter".into(), Some(a.into()))),
                },
                (RunnerKind::Go, _) => match flag.trim_start_matches('-') {
                    "run" | "skip" => {
                        let v = take(&mut i);
                        self.selecting.push((flag.into(), v));
                    }
                    "failfast" => self.stop_early.push(flag.into()),
                    "timeout" | "count" | "tags" | "p" | "parallel" | "coverprofile" | "o"
                    | "exec" | "bench" | "cpu" | "covermode" => {
                        if inline.is_none() && !flag.is_empty() && flag.starts_with('-') {
                            take(&mut i);
                        }
                    }
                    _ if flag.starts_with('-') => {}
                    _ => self.positional.push(a.into()),
                },
            }
        }
    }

    fn option(&self, names: &[&str]) -> Option<&str> {
        self.options
            .iter()
            .rev()
            .find(|(f, _)| names.contains(&f.as_str()))
            .map(|(_, v)| v.as_str())
    }

    /// The runner's configuration files that exist: each can skip, deselect or rewrite tests.
    /// pytest: `pytest.ini`, `conftest.py` at the root, and `pyproject.toml` / `tox.ini` /
    /// `setup.cfg` when they hold a pytest section (source: pytest's "Configuration" page,
    /// rootdir and configfile rules); cargo: `.cargo/config.toml` / `.cargo/config` (a
    /// `runner` there replaces the test binary). A conftest.py inside a test folder is frozen
    /// with the folder.
    fn config_files(&self, root: &Path) -> Vec<Target> {
        let exists = |p: &str| root.join(p).is_file();
        let holds = |p: &str, section: &str| {
            std::fs::read_to_string(root.join(p)).is_ok_and(|t| t.contains(section))
        };
        let mut out = Vec::new();
        let mut add = |p: &str, runner: &'static str| {
            out.push(Target::Config { path: p.to_string(), runner, must_exist: false })
        };
        match self.kind {
            RunnerKind::Pytest => {
                for p in ["pytest.ini", ".pytest.ini", "conftest.py"] {
                    if exists(p) {
                        add(p, "pytest");
                    }
                }
                for (p, section) in [
                    ("pyproject.toml", "[tool.pytest"),
                    ("tox.ini", "[pytest]"),
                    ("setup.cfg", "[tool:pytest]"),
                ] {
                    if holds(p, section) {
                        add(p, "pytest");
                    }
                }
            }
            RunnerKind::Cargo => {
                for p in [".cargo/config.toml", ".cargo/config"] {
                    if exists(p) {
                        add(p, "cargo test");
                    }
                }
            }
            RunnerKind::Unittest | RunnerKind::Go => {}
        }
        out
    }

    /// What this run exercises that must be frozen.
    fn targets(&self, root: &Path) -> Vec<Target> {
        match self.kind {
            RunnerKind::Unittest => {
                if self.positional.first().is_some_and(|p| p == "discover")
                    || self.positional.is_empty()
                {
                    let pos =
                        if self.positional.is_empty() { &[][..] } else { &self.positional[1..] };
                    let start = self
                        .option(&["-s", "--start-directory"])
                        .or(pos.first().map(String::as_str))
                        .unwrap_or(".");
                    let pattern = self
                        .option(&["-p", "--pattern"])
                        .or(pos.get(1).map(String::as_str))
                        .unwrap_or(UNITTEST_PATTERN);
                    return vec![Target::Dir(normalise(start), vec![pattern.to_string()])];
                }
                self.positional.iter().map(|p| unittest_target(p, root)).collect()
            }
            RunnerKind::Pytest => {
                let patterns: Vec<String> = PYTEST_PATTERNS.iter().map(|s| s.to_string()).collect();
                if self.positional.is_empty() {
                    return vec![Target::Dir(".".into(), patterns)];
                }
                self.positional
                    .iter()
                    .map(|p| {
                        let path = normalise(p.split("::").next().unwrap_or(p));
                        if root.join(&path).is_dir() {
                            Target::Dir(path, patterns.clone())
                        } else {
                            Target::File(path)
                        }
                    })
                    .collect()
            }
            RunnerKind::Cargo => {
                if let Some(name) = self.option(&["--test"]) {
                    let file = format!("tests/{name}.rs");
                    if root.join(&file).exists() || !root.join("tests").join(name).is_dir() {
                        return vec![Target::File(file)];
                    }
                    return vec![Target::Dir(format!("tests/{name}"), vec!["*.rs".into()])];
                }
                vec![Target::Dir("tests".into(), vec!["*.rs".into()])]
            }
            RunnerKind::Go => vec![Target::Dir(".".into(), vec!["*_test.go".into()])],
        }
    }
}

/// The language of the test files a known runner runs, for the canary ([`super::canary`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TestLanguage {
    /// unittest or pytest: `.py` files.
    Python,
    /// `cargo test`: the integration test crates directly under `tests/`.
    Rust,
    /// `go test`: `*_test.go` files.
    Go,
}

/// The test files criterion `c` runs through a runner kit knows (unittest, pytest, cargo test,
/// go test), repo-relative and existing, with their language; None when no known runner runs
/// (a script, `make test`) or it runs no file kit can find.
pub(crate) fn runner_test_files(c: &Criterion, root: &Path) -> Option<(TestLanguage, Vec<String>)> {
    let mut cwd = String::new();
    let mut lang = None;
    let mut files: Vec<String> = Vec::new();
    for words in shell::simple_commands(&c.command) {
        if words[0] == "cd" {
            cwd = match words.get(1) {
                Some(d) if !d.starts_with('/') && !d.split('/').any(|c| c == "..") => {
                    let joined = normalise(&format!("{cwd}/{d}"));
                    if joined == "." {
                        String::new()
                    } else {
                        joined
                    }
                }
                _ => String::new(),
            };
            continue;
        }
        let Some(runner) = Runner::of(&words) else {
            // `python3 tests/test_x.py`: a test file run as a script (unittest.main()).
            if let Some((prog, args)) = shell::program(&words) {
                let base = prog.rsplit('/').next().unwrap_or(prog);
                let script = args.iter().find(|a| !a.starts_with('-'));
                if let Some(script) =
                    script.filter(|s| base.starts_with("python") && s.ends_with(".py"))
                {
                    let p = normalise(&format!("{cwd}/{script}"));
                    let p = p.trim_start_matches("./").to_string();
                    if looks_like_test(&p)
                        && root.join(&p).is_file()
                        && lang != Some(TestLanguage::Rust)
                        && lang != Some(TestLanguage::Go)
                    {
                        lang = Some(TestLanguage::Python);
                        if !files.contains(&p) {
                            files.push(p);
                        }
                    }
                }
            }
            continue;
        };
        let this = match runner.kind {
            RunnerKind::Unittest | RunnerKind::Pytest => TestLanguage::Python,
            RunnerKind::Cargo => TestLanguage::Rust,
            RunnerKind::Go => TestLanguage::Go,
        };
        if lang.is_some_and(|l| l != this) {
            continue;
        }
        lang = Some(this);
        for t in runner.targets(&root.join(&cwd)) {
            match t.under(&cwd) {
                Target::File(p) => {
                    if root.join(&p).is_file() && !files.contains(&p) {
                        files.push(p);
                    }
                }
                Target::Script(_) | Target::Config { .. } => {}
                Target::Dir(d, patterns) => {
                    for f in walk_matching(root, &d, &patterns) {
                        let direct =
                            f.strip_prefix(&format!("{d}/")).is_some_and(|r| !r.contains('/'));
                        if (this != TestLanguage::Rust || direct) && !files.contains(&f) {
                            files.push(f);
                        }
                    }
                }
            }
        }
    }
    let lang = lang?;
    (!files.is_empty()).then_some((lang, files))
}

/// The module of `python [OPTIONS] -m MODULE ARGS…` and its arguments: interpreter options
/// such as `-B`, `-u`, `-X dev` may come before `-m`.
fn python_module(args: &[String]) -> Option<(&str, &[String])> {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        match a.as_str() {
            "-m" => return args.get(i + 1).map(|m| (m.as_str(), &args[i + 2..])),
            "-X" | "-W" | "--check-hash-based-pycs" => i += 2,
            a if a.starts_with('-') && a != "-c" && a != "-" => i += 1,
            _ => return None,
        }
    }
    None
}

/// `tests.test_durations.TestX.test_y` → the longest prefix that is a file (`tests/test_durations.py`)
/// or a package folder; a path (`tests/test_a.py`) as is.
fn unittest_target(name: &str, root: &Path) -> Target {
    if name.ends_with(".py") || name.contains('/') {
        return Target::File(normalise(name));
    }
    let parts: Vec<&str> = name.split('.').collect();
    for k in (1..=parts.len()).rev() {
        let base = parts[..k].join("/");
        if root.join(format!("{base}.py")).is_file() {
            return Target::File(format!("{base}.py"));
        }
        if root.join(&base).is_dir() {
            return Target::Dir(base, vec![UNITTEST_PATTERN.into()]);
        }
    }
    Target::File(format!("{}.py", parts.join("/")))
}

/// Paths in a command's words that name a test (a component containing `test`) and exist.
fn test_paths(words: &[String], root: &Path) -> Vec<Target> {
    let mut out = Vec::new();
    for w in words {
        if w.starts_with('-') || w.contains("://") || w.contains('$') {
            continue;
        }
        let w = w.trim_start_matches(['<', '>']);
        let w = w.split("::").next().unwrap_or(w);
        if w.starts_with('/') || w.split('/').any(|c| c == "..") || !w.contains(['/', '.']) {
            continue;
        }
        let p = normalise(w);
        if p == "." || !looks_like_test(&p) {
            continue;
        }
        let full = root.join(&p);
        if full.is_file() {
            out.push(Target::File(p));
        } else if full.is_dir() {
            out.push(Target::Dir(p, vec!["*".into()]));
        }
    }
    out
}

/// The script or program from the repository a command runs: `./run_tests.sh`,
/// `scripts/check`, `sh run_tests.sh`, `python3 tools/bench.py`, `node check.js` — whether or
/// not it exists yet (a criterion that runs a file the agent will write is judged by the agent).
/// Not `python3 -m MODULE` or `sh -c SCRIPT` (their own checks read those).
fn script_run(words: &[String], root: &Path) -> Option<Target> {
    let _ = root;
    let (prog, args) = shell::program(words)?;
    let base = prog.rsplit('/').next().unwrap_or(prog);
    let interpreter = base.starts_with("python")
        || matches!(
            base,
            "sh" | "bash" | "dash" | "zsh" | "node" | "ruby" | "perl" | "deno" | "bun" | "php"
        );
    let script = if interpreter {
        if args.iter().any(|a| {
            a == "-c"
                || a == "-m"
                || (a.starts_with('-') && !a.starts_with("--") && a.contains('c'))
        }) {
            return None;
        }
        let s = args.iter().find(|a| !a.starts_with('-'))?.as_str();
        let known = [".py", ".sh", ".bash", ".js", ".mjs", ".ts", ".rb", ".pl", ".php"];
        if !s.contains('/') && !known.iter().any(|e| s.ends_with(e)) {
            return None;
        }
        s
    } else if prog.contains('/') {
        prog
    } else {
        return None;
    };
    if script.starts_with('/')
        || script.starts_with('~')
        || script.contains('$')
        || script.split('/').any(|c| c == "..")
    {
        return None;
    }
    let p = normalise(script);
    (p != ".").then_some(Target::Script(p))
}

/// The build file that defines what `make TARGET` or `npm test` runs: `Makefile` (or `-f FILE`,
/// in `-C DIR`), `package.json` for `npm`/`yarn`/`pnpm`/`bun` `test`/`run NAME`/`t`.
fn build_files(words: &[String], root: &Path) -> Vec<Target> {
    let Some((prog, args)) = shell::program(words) else { return Vec::new() };
    let base = prog.rsplit('/').next().unwrap_or(prog);
    match base {
        "make" | "gmake" => {
            let mut dir = String::new();
            let mut file = None;
            let mut i = 0;
            while i < args.len() {
                match args[i].as_str() {
                    "-C" | "--directory" => {
                        dir = args.get(i + 1).cloned().unwrap_or_default();
                        i += 1;
                    }
                    "-f" | "--file" | "--makefile" => {
                        file = args.get(i + 1).cloned();
                        i += 1;
                    }
                    a if a.starts_with("-C") && a.len() > 2 => dir = a[2..].to_string(),
                    a if a.starts_with("-f") && a.len() > 2 => file = Some(a[2..].to_string()),
                    _ => {}
                }
                i += 1;
            }
            let at = |name: &str| {
                if dir.is_empty() {
                    name.to_string()
                } else {
                    normalise(&format!("{dir}/{name}"))
                }
            };
            let path = match file {
                Some(f) => at(&f),
                None => ["GNUmakefile", "makefile", "Makefile"]
                    .iter()
                    .map(|n| at(n))
                    .find(|p| root.join(p).is_file())
                    .unwrap_or_else(|| at("Makefile")),
            };
            vec![Target::Config { path, runner: "make", must_exist: true }]
        }
        "npm" | "yarn" | "pnpm" | "bun" => {
            let sub = args.iter().find(|a| !a.starts_with('-')).map(String::as_str);
            if matches!(sub, Some("test" | "t" | "run" | "run-script" | "tst")) {
                let runner: &'static str = match base {
                    "npm" => "npm test",
                    "yarn" => "yarn",
                    "pnpm" => "pnpm",
                    _ => "bun",
                };
                vec![Target::Config { path: "package.json".into(), runner, must_exist: true }]
            } else {
                Vec::new()
            }
        }
        _ => Vec::new(),
    }
}

/// Repo-relative files under `dir` whose names match one of `patterns`, sorted. Skips hidden
/// folders, longrun/, build outputs and virtual environments; stops after 10,000 entries.
fn walk_matching(root: &Path, dir: &str, patterns: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![if dir == "." { String::new() } else { dir.to_string() }];
    let mut budget = 10_000usize;
    while let Some(rel) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(root.join(&rel)) else { continue };
        for e in entries.flatten() {
            if budget == 0 {
                return out;
            }
            budget -= 1;
            let name = e.file_name().to_string_lossy().into_owned();
            let path = if rel.is_empty() { name.clone() } else { format!("{rel}/{name}") };
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() {
                let skip = name.starts_with('.')
                    || matches!(
                        name.as_str(),
                        "longrun"
                            | "target"
                            | "node_modules"
                            | "__pycache__"
                            | "venv"
                            | "build"
                            | "dist"
                    );
                if !skip {
                    stack.push(path);
                }
            } else if patterns.iter().any(|p| glob_match(p, &name)) {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Shell-style name matching with `*` and `?` (what unittest's `-p` and pytest's patterns use).
fn glob_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    let (mut pi, mut ni) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ni;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ni = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// A repository with a unittest suite, a pytest file, a bench script and a Rust tests/ folder.
    fn repo() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for f in [
            "tests/test_durations.py",
            "tests/test_config.py",
            "tests/helpers.py",
            "tools/bench_load.py",
            "pyt/test_api.py",
            "rs/tests/cli.rs",
            "longrun/goal.md",
        ] {
            let p = d.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, "x\n").unwrap();
        }
        d
    }

    fn goal(criteria: &str) -> Goal {
        super::super::parse(
            &PathBuf::from("goal.md"),
            &format!("# Goal: g\n\n## Criteria\n{criteria}\n"),
        )
        .unwrap()
    }

    fn all_frozen() -> Vec<String> {
        vec!["tests/".into(), "tools/bench_load.py".into(), "pyt/test_api.py".into()]
    }

    const GOOD: &str =
        "- function: `python3 -m unittest tests.test_durations -v` → `Ran 9 tests` and `OK`
- regression: `python3 -m unittest discover -s tests` → `Ran 14 tests` and `OK`
- limit: `python3 tools/bench_load.py` → `re:^p95_ms=([0-9]|1[0-9])$`";

    #[test]
    fn levels() {
        let root = repo();
        let r = |text: &str, frozen: &[String]| rate(&goal(text), frozen, root.path()).level;
        let none: Vec<String> = Vec::new();
        let all = all_frozen();
        // (criteria section body, frozen, level)
        let cases: Vec<(&str, &[String], u8)> = vec![
            ("", &none, 0),
            ("Nothing here yet.", &none, 0),
            ("- all tests pass\n- it is fast", &none, 1),
            ("- function: `python3 -m unittest tests.test_durations` → `OK`", &none, 2),
            ("- function: `python3 -m unittest tests.test_durations` → `Ran 9 tests`", &none, 2),
            (GOOD, &none, 2),
            ("- function: `python3 -m unittest tests.test_durations` → `Ran 9 tests`\n- and it is fast", &all, 2),
            ("- function: `python3 -m unittest tests.test_durations` → `Ran 9 tests` and `OK`", &all, 3),
            (GOOD, &all, 4),
        ];
        for (text, frozen, level) in cases {
            let rating = rate(&goal(text), frozen, root.path());
            assert_eq!(rating.level, level, "{text}\n{:#?}", rating);
            assert_eq!(rating.reasons.len(), 4);
        }
        // Without a criteria section at all.
        let g =
            super::super::parse(Path::new("goal.md"), "# Goal: g\n\n## End state\nfast\n").unwrap();
        assert_eq!(rate(&g, &none, root.path()).level, 0);
        assert_eq!(r(GOOD, &["tests".into(), "./tools/bench_load.py".into()]), 4);
    }

    /// Each criterion alone, with everything frozen: the shortcut it must raise (a phrase of
    /// its message), or none.
    #[test]
    fn shortcuts() {
        let root = repo();
        let cases: &[(&str, Option<&str>)] = &[
            // Expectations that pin nothing or match anything.
            ("- function: `python3 -m unittest tests.test_durations`", Some("no expected output")),
            ("- function: `python3 -m unittest tests.test_durations` → `OK`", Some("pins no count")),
            ("- regression: `pytest pyt/test_api.py` → `0 failed`", Some("pins no count")),
            ("- regression: `pytest pyt/test_api.py` → `re:\\d+ passed`", Some("pins no count")),
            ("- regression: `pytest pyt/test_api.py` → `re:[0-9]{2} passed`", Some("pins no count")),
            ("- regression: `pytest pyt/test_api.py` → `14 passed`", None),
            ("- regression: `pytest pyt/test_api.py` → `re:^14 passed`", None),
            ("- function: `python3 -m unittest tests.test_durations` → `Ran 9 tests` and ``", Some("matches any output")),
            ("- function: `python3 -m unittest tests.test_durations` → `Ran 9 tests` and `re:.*`", Some("matches any output")),
            ("- function: `python3 -m unittest tests.test_durations` → `Ran 9 tests` and `re:^`", Some("matches any output")),
            ("- function: `python3 -m unittest tests.test_durations` → `re:`", Some("matches any output")),
            // Swallowed failures.
            ("- function: `python3 -m unittest tests.test_durations || true` → `Ran 9 tests`", Some("`|| true` swallows")),
            ("- function: `python3 -m unittest tests.test_durations || :` → `Ran 9 tests`", Some("`|| :` swallows")),
            ("- function: `python3 -m unittest tests.test_durations || echo failed` → `Ran 9 tests`", Some("swallows")),
            ("- function: `python3 -m unittest tests.test_durations || exit 1` → `Ran 9 tests`", None),
            ("- function: `python3 -m unittest tests.test_durations; exit 0` → `Ran 9 tests`", Some("`; exit 0`")),
            ("- function: `python3 -m unittest tests.test_durations; true` → `Ran 9 tests`", Some("`; true`")),
            ("- function: `python3 -m unittest tests.test_durations > out.txt; cat out.txt` → `Ran 9 tests`", Some("`; cat out.txt`")),
            ("- function: `python3 -m unittest tests.test_durations 2>&1 | tee log` → `Ran 9 tests`", Some("`| tee`")),
            ("- function: `set -o pipefail; python3 -m unittest tests.test_durations 2>&1 | tee log` → `Ran 9 tests`", None),
            ("- function: `cd . ; python3 -m unittest tests.test_durations` → `Ran 9 tests`", None),
            ("- function: `set +e; python3 -m unittest tests.test_durations` → `Ran 9 tests`", Some("set +e")),
            ("- function: `python3 -m unittest tests.test_durations 2>/dev/null` → `Ran 9 tests`", Some("2>/dev/null")),
            ("- function: `python3 -m unittest tests.test_durations 2> /dev/null` → `Ran 9 tests`", Some("2> /dev/null")),
            ("- function: `python3 -m unittest tests.test_durations >/dev/null 2>&1` → `Ran 9 tests`", Some(">/dev/null")),
            ("- function: `python3 -m unittest tests.test_durations 2>&1 | tail -3` → `Ran 9 tests`", Some("`| tail`")),
            // A pipe loses the runner's status: grep decides, and grep passes on any output
            // with `ok` in it, a failing run included.
            ("- function: `python3 -m unittest tests.test_durations 2>&1 | grep -c ok` → `Ran 9 tests`", Some("`| grep`")),
            ("- function: `sh -c 'python3 -m unittest tests.test_durations || true'` → `Ran 9 tests`", Some("swallows")),
            // Files the agent writes.
            ("- function: `grep -c DONE longrun/progress.md` → `3`", Some("which the agent writes")),
            ("- function: `cat progress.md` → `done 3`", Some("which the agent writes")),
            ("- function: `grep -r finished longrun/` → `finished 3`", Some("which the agent writes")),
            ("- function: `grep -c Criteria longrun/goal.md` → `1`", None),
            // Unfrozen or missing test files (here nothing else is wrong).
            ("- function: `python3 -m unittest tests.test_nothere` → `Ran 2 tests`", None),
            ("- function: `python3 -m unittest nothere.test_x` → `Ran 2 tests`", Some("nothere/test_x.py is run by this criterion but does not exist")),
            ("- function: `python3 -m unittest rs` → `Ran 2 tests`", Some("rs holds no test file (test*.py) yet")),
            // Scripts, build files and runner configuration the criterion runs (issue 10).
            ("- function: `sh run_tests.sh` → `Ran 14 tests` and `OK`", Some("run_tests.sh is run by this criterion but does not exist")),
            ("- function: `./run_tests.sh` → `Ran 14 tests` and `OK`", Some("run_tests.sh is run by this criterion but does not exist")),
            ("- function: `bash scripts/check` → `Ran 14 tests` and `OK`", Some("scripts/check is run by this criterion but does not exist")),
            ("- function: `python3 tools/bench_load.py --check` → `Ran 14 tests` and `OK`", None),
            // A program the goal asks for is the work: its output is the evidence.
            ("- function: `python3 tools/convert.py in.txt` → `converted 3 lines`", None),
            ("- limit: `python3 tools/bench_new.py` → `re:^p95_ms=[0-9]$`", Some("tools/bench_new.py is run by this criterion but does not exist")),
            ("- function: `make test` → `Ran 14 tests` and `OK`", Some("Makefile, which `make` runs from, does not exist")),
            ("- function: `make -C sub check` → `Ran 14 tests` and `OK`", Some("sub/Makefile")),
            ("- function: `npm test` → `14 passing`", Some("package.json, which `npm test` runs from, does not exist")),
            ("- function: `python3 -m unittest discover -s nothere` → `Ran 14 tests` and `OK`", Some("nothere does not exist")),
            ("- function: `python3 -m unittest discover -s tools` → `Ran 14 tests` and `OK`", Some("tools holds no test file")),
            ("- function: `sh -c 'python3 -m unittest discover -s tests'` → `Ran 14 tests` and `OK`", None),
            ("- function: `cargo test --manifest-path rs/Cargo.toml` → `test result: ok. 3 passed`", None),
            ("- function: `python3 -m unittest newtests/test_new.py` → `Ran 2 tests`", Some("does not exist")),
            // Runner flags that select, skip or stop early.
            ("- function: `pytest pyt/test_api.py -k parse` → `14 passed`", Some("`-k parse` selects")),
            ("- function: `pytest -vk parse pyt/test_api.py` → `14 passed`", Some("`-k parse` selects")),
            ("- function: `pytest pyt/test_api.py --deselect pyt/test_api.py::test_x` → `14 passed`", Some("--deselect")),
            ("- function: `pytest --lf pyt/test_api.py` → `14 passed`", Some("`--lf` selects")),
            ("- function: `python3 -m unittest -k parse tests.test_durations` → `Ran 9 tests`", Some("`-k parse`")),
            ("- function: `pytest -x pyt/test_api.py` → `passed`", Some("`-x` stops")),
            ("- function: `pytest -x pyt/test_api.py` → `14 passed`", None),
            ("- function: `python3 -m unittest -f tests.test_durations` → `OK`", Some("`-f` stops")),
            ("- function: `cargo test parse` → `test result: ok. 3 passed`", Some("test name filter")),
            ("- function: `cargo test -- --skip slow` → `test result: ok. 3 passed`", Some("--skip slow")),
            ("- function: `go test -run Parse ./...` → `ok 3`", Some("-run Parse")),
            // Limits.
            ("- limit: `python3 tools/bench_load.py` → `re:^p95_ms=\\d+$`", Some("limit without a number")),
            ("- limit: `python3 tools/bench_load.py` → `p95_ms=`", Some("limit without a number")),
            ("- limit: `python3 tools/bench_load.py` → `re:^p95_ms=([0-9]|1[0-9])$`", None),
            ("- limit: `python3 tools/bench_load.py` → `re:^p95_ms=[0-9]$`", None),
            // A command that prints its own evidence.
            ("- function: `echo Ran 9 tests` → `Ran 9 tests`", Some("prints the expected")),
        ];
        check_table(&root, cases);
    }

    #[test]
    fn runner_configuration_and_scripts_must_be_frozen_once_they_exist() {
        let root = repo();
        for (f, text) in [
            ("pytest.ini", "[pytest]\naddopts = -q\n"),
            ("pyproject.toml", "[tool.pytest.ini_options]\naddopts = \"-q\"\n"),
            ("Makefile", "test:\n\tpython3 -m unittest discover -s tests\n"),
            ("run_tests.sh", "python3 -m unittest discover -s tests\n"),
            (".cargo/config.toml", "[target.x86_64-unknown-linux-gnu]\nrunner = \"sh fake.sh\"\n"),
        ] {
            let p = root.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let cases: &[(&str, Option<&str>)] = &[
            (
                "- function: `pytest pyt/test_api.py` → `14 passed`",
                Some("pytest.ini decides what `pytest` runs, but is not frozen"),
            ),
            (
                "- function: `pytest pyt/test_api.py` → `14 passed`",
                Some("pyproject.toml decides what `pytest` runs"),
            ),
            (
                "- function: `make test` → `Ran 14 tests` and `OK`",
                Some("Makefile decides what `make` runs, but is not frozen"),
            ),
            (
                "- function: `sh run_tests.sh` → `Ran 14 tests` and `OK`",
                Some("run_tests.sh is not frozen"),
            ),
            (
                "- function: `cargo test` → `test result: ok. 3 passed`",
                Some(".cargo/config.toml decides what `cargo test` runs"),
            ),
        ];
        check_table(&root, cases);
        let frozen: Vec<String> = [
            "tests/",
            "pyt/test_api.py",
            "pytest.ini",
            "pyproject.toml",
            "Makefile",
            "run_tests.sh",
            ".cargo/",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for (text, _) in cases {
            let rating = rate(&goal(text), &frozen, root.path());
            assert!(rating.shortcuts.is_empty(), "{text}: {:#?}", rating.shortcuts);
        }
    }

    fn check_table(root: &tempfile::TempDir, cases: &[(&str, Option<&str>)]) {
        for (text, want) in cases {
            let rating = rate(&goal(text), &all_frozen(), root.path());
            let whats: Vec<&str> = rating.shortcuts.iter().map(|s| s.what.as_str()).collect();
            match want {
                None => assert!(whats.is_empty(), "{text}: unexpected {whats:#?}"),
                Some(phrase) => {
                    assert!(
                        whats.iter().any(|w| w.contains(phrase)),
                        "{text}: no shortcut mentions `{phrase}`: {whats:#?}"
                    );
                    assert!(rating.level <= 2, "{text}: level {}", rating.level);
                    assert!(
                        rating.shortcuts.iter().all(|s| s.line == 4),
                        "{text}: {:?}",
                        rating.shortcuts
                    );
                    assert!(
                        whats.iter().all(|w| w.contains(FIX_SEP)),
                        "{text}: a shortcut without a fix"
                    );
                }
            }
        }
    }

    /// Criteria whose exit status or output is not the runner's (QA HIGH-1): the last command
    /// that runs decides the status, so each of these passes with the work undone. Everything is
    /// frozen and the count pinned, so the shortcut named is the only thing wrong.
    #[test]
    fn the_runner_must_decide_the_exit_status() {
        let root = repo();
        const R: &str = "python3 -B -m unittest discover -s tests -v";
        let cases: Vec<(String, Option<&str>)> = [
            // `;`, a newline and `&` throw an earlier status away.
            (format!("{R} > /dev/null 2>&1; python3 -c 'print(\"Ran 14 tests\\nOK\")'"), Some("replaces the runner's exit status")),
            (format!("{R} > /dev/null 2>&1; python3 -c 'print(\"Ran 14 tests\\nOK\")'"), Some("`> /dev/null 2>&1` throws away")),
            (format!("{R} > /dev/null 2>&1; python3 -c 'print(\"Ran 14 tests\\nOK\")'"), Some("`python3` prints the expected `Ran 14 tests`")),
            (format!("{R} >/dev/null; python3 -c \"print(\\\"Ran 14 tests\\\")\""), Some("replaces the runner's exit status")),
            (format!("{R}; true"), Some("`; true` replaces")),
            (format!("{R}; :"), Some("`; :` replaces")),
            (format!("{R} ; exit 0"), Some("`; exit 0` replaces")),
            (format!("{R}; rm -rf build"), Some("`; rm -rf build` replaces")),
            (format!("{R}; python3 tools/bench_load.py"), Some("`; python3 tools/bench_load.py` decides the exit status: `python3 -B -m unittest")),
            (format!("{R} & wait"), Some("runs in the background")),
            (format!("{R} &"), Some("runs in the background")),
            (format!("({R}; true)"), Some("`; true` replaces")),
            (format!("{{ {R}; true; }}"), Some("`; true` replaces")),
            (format!("if {R}; then echo Ran 14 tests; fi"), Some("replaces the runner's exit status")),
            (format!("sh -c '{R}; true'"), Some("`; true` replaces")),
            // Harmless: the runner still runs last, or every step must succeed.
            (format!("true; python3 -c \"print(1)\"; {R}"), None),
            (format!("cd . ; {R}"), None),
            (format!("set -e; {R}; echo finished"), None),
            (format!("bash -ec '{R}; echo finished'"), None),
            (format!("{R}; exit $?"), None),
            (format!("{R}; exit"), None),
            (format!("{R} && echo finished"), None),
            (format!("cd tests && cd .. && {R}"), None),
            (format!("timeout 600 {R}"), None),
            (format!("{R} 2>&1"), None),
            (format!("{R} >&2"), None),
            (format!("{R} > out.txt && cat out.txt"), None),
            // Output sent away, with any spacing.
            (format!("{R} > /dev/null"), Some("`> /dev/null` throws away")),
            (format!("{R} >/dev/null"), Some("`>/dev/null` throws away")),
            (format!("{R}>/dev/null"), Some("`>/dev/null` throws away")),
            (format!("{R} 1>/dev/null"), Some("throws away")),
            (format!("{R} 2>&1 >/dev/null"), Some("`2>&1 >/dev/null` throws away")),
            (format!("{R} &>/dev/null"), Some("`&>/dev/null` throws away")),
            (format!("{R} &> /dev/null"), Some("`&> /dev/null` throws away")),
            (format!("{R} >&/dev/null"), Some("throws away")),
            (format!("{R} 2>/dev/null"), Some("`2>/dev/null` hides")),
            (format!("{R} > out.txt && cat expected.txt"), Some("to a file the criterion never reads")),
            // Swallowed, inverted, piped away.
            (format!("{R} || true"), Some("`|| true` swallows")),
            (format!("{R} || :"), Some("`|| :` swallows")),
            (format!("{R} || exit 0"), Some("`|| exit 0` swallows")),
            (format!("{R} || exit 1"), None),
            (format!("! {R}"), Some("inverts the exit status")),
            (format!("! ( {R} )"), Some("inverts the exit status")),
            (format!("{R} | true"), Some("`| true` makes the exit status")),
            (format!("{R} 2>&1 | cat >/dev/null"), Some("`| cat` makes the exit status")),
            (format!("{R} 2>&1 | tee log.txt"), Some("`| tee` makes the exit status")),
            (format!("{R} 2>&1 | tail -5"), Some("`| tail` makes the exit status")),
            (format!("set -o pipefail; {R} 2>&1 | tail -5"), None),
            (format!("bash -o pipefail -c '{R} 2>&1 | tail -5'"), None),
            // Commands that only print the expected text, or nothing.
            ("echo Ran 14 tests OK".to_string(), Some("only prints or does nothing")),
            ("printf 'Ran 14 tests\\nOK\\n'".to_string(), Some("`printf` prints the expected")),
            ("python3 -c 'print(\"Ran 14 tests\")'".to_string(), Some("only prints or does nothing")),
            ("python3 -c 'import sys; sys.stdout.write(\"Ran 14 tests\")'".to_string(), Some("only prints")),
            ("cat tests/expected.txt".to_string(), Some("only prints or does nothing")),
            ("true".to_string(), Some("only prints or does nothing")),
            ("exit 0".to_string(), Some("only prints or does nothing")),
            ("sh -c 'echo Ran 14 tests'".to_string(), Some("prints the expected")),
            // A real check through an inline script is work.
            ("python3 -B -c 'from tests.test_config import TestConfig; print(TestConfig)'".to_string(), None),
            // Genuine runners.
            (R.to_string(), None),
            ("python3 -m unittest discover -s tests -v".to_string(), None),
        ]
        .into_iter()
        .map(|(cmd, want)| (format!("- regression: `{cmd}` → `Ran 14 tests` and `OK`"), want))
        .collect();
        let cases: Vec<(&str, Option<&str>)> =
            cases.iter().map(|(t, w)| (t.as_str(), *w)).collect();
        check_table(&root, &cases);
        // Other runners: genuine forms pass, their faked forms do not.
        let cargo: &[(&str, Option<&str>)] = &[
            ("- regression: `cargo test --locked` → `test result: ok. 3 passed`", None),
            (
                "- regression: `cargo test --locked; true` → `test result: ok. 3 passed`",
                Some("`; true` replaces"),
            ),
            ("- regression: `pytest -q pyt/test_api.py` → `14 passed`", None),
            (
                "- regression: `pytest -q pyt/test_api.py 2>&1 | tail -5` → `14 passed`",
                Some("`| tail`"),
            ),
        ];
        check_table(&root, cargo);
    }

    /// Which test files each command exercises, seen through what must be frozen.
    #[test]
    fn unfrozen_test_files_are_named() {
        let root = repo();
        let none: Vec<String> = Vec::new();
        // (criterion, frozen, a phrase the shortcut must hold)
        let cases: Vec<(&str, Vec<String>, &str)> = vec![
            ("- function: `python3 -m unittest tests.test_durations -v` → `Ran 9 tests`", none.clone(), "tests/test_durations.py is not frozen"),
            ("- function: `python3 -m unittest tests.test_durations.TestParse.test_90s` → `Ran 1 test`", none.clone(), "tests/test_durations.py is not frozen"),
            ("- regression: `python3 -m unittest discover -s tests` → `Ran 14 tests`", none.clone(), "2 test files the command runs are not frozen (tests/test_config.py, tests/test_durations.py)"),
            ("- regression: `python3 -m unittest discover -s tests` → `Ran 14 tests`", vec!["tests/test_config.py".into()], "tests/test_durations.py is not frozen"),
            ("- regression: `python3 -m unittest` → `Ran 14 tests`", none.clone(), "kit freeze pyt/test_api.py tests/test_config.py tests/test_durations.py"),
            ("- regression: `python3 -m unittest` → `Ran 14 tests`", vec!["pyt".into()], "kit freeze tests/ (a frozen folder"),
            ("- regression: `pytest pyt` → `14 passed`", none.clone(), "pyt/test_api.py is not frozen"),
            ("- regression: `pytest pyt/test_api.py::test_one` → `1 passed`", none.clone(), "pyt/test_api.py is not frozen"),
            ("- regression: `cd rs && cargo test` → `3 passed`", none.clone(), "rs/tests/cli.rs is not frozen"),
            ("- regression: `sh tests/helpers.py` → `3 passed`", none.clone(), "tests/helpers.py is not frozen"),
            ("- function: `python3 -B -m unittest tests.test_durations -v` → `Ran 9 tests`", none.clone(), "tests/test_durations.py is not frozen"),
            ("- regression: `python3 -X dev -u -m unittest discover -s tests` → `Ran 9 tests`", none.clone(), "kit freeze tests/"),
            ("- regression: `python3 -B -m pytest -k x pyt` → `9 passed`", none.clone(), "`-k x` selects"),
            ("- regression: `pytest tests/` → `3 passed`", none.clone(), "2 test files the command runs are not frozen (tests/test_config.py, tests/test_durations.py)"),
            ("- limit: `python3 tools/bench_load.py` → `re:^p95_ms=[0-9]$`", none.clone(), "tools/bench_load.py measures the limit but is not frozen"),
        ];
        for (text, frozen, phrase) in cases {
            let rating = rate(&goal(text), &frozen, root.path());
            let whats: Vec<&str> = rating.shortcuts.iter().map(|s| s.what.as_str()).collect();
            assert!(
                whats.iter().any(|w| w.contains(phrase)),
                "{text}: no `{phrase}` in {whats:#?}"
            );
        }
    }

    #[test]
    fn a_folder_named_twice_is_reported_once() {
        let root = repo();
        let rating = rate(&goal("- regression: `pytest tests/` → `3 passed`"), &[], root.path());
        assert_eq!(rating.shortcuts.len(), 1, "{:#?}", rating.shortcuts);
    }

    #[test]
    fn the_whole_tests_folder_frozen_covers_discover() {
        let root = repo();
        let rating = rate(
            &goal("- regression: `python3 -m unittest discover -s tests -p 'test_*.py'` → `Ran 14 tests`"),
            &["tests".into()],
            root.path(),
        );
        assert_eq!(rating.shortcuts, []);
        assert!(rating.reasons[2].contains("tests/"), "{}", rating.reasons[2]);
    }

    #[test]
    fn arbitrary_commands_never_panic() {
        let root = repo();
        let pieces = [
            "python3 -m unittest ",
            "pytest ",
            "cargo test ",
            "go test ",
            "discover ",
            "-s ",
            "-k",
            " -p ",
            "tests",
            "/",
            ".",
            "::",
            "'",
            "\"",
            "\\",
            " || ",
            "; ",
            " | ",
            "&",
            " 2>",
            "/dev/null",
            "sh -c '",
            "cd ",
            "..",
            "longrun/",
            "é",
            "--",
            "-x",
            "exit 0",
            "$",
            "=",
            "test_durations",
            "py",
            " ",
        ];
        let kinds = ["function", "regression", "limit"];
        let exps = ["`OK`", "`Ran 3 tests`", "`re:.*`", "``", "`re:^p95_ms=[0-9]$`"];
        let mut seed = 0x9E3779B97F4A7C15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..1500 {
            let mut cmd = String::new();
            for _ in 0..(next() % 12) + 1 {
                cmd.push_str(pieces[(next() % pieces.len() as u64) as usize]);
            }
            let cmd = cmd.replace('`', "");
            let kind = kinds[(next() % 3) as usize];
            let exp = exps[(next() % exps.len() as u64) as usize];
            let Ok(g) = super::super::parse(
                Path::new("goal.md"),
                &format!("## Criteria\n- {kind}: ``{cmd} `` → {exp}\n"),
            ) else {
                continue;
            };
            let r = rate(&g, &[], root.path());
            assert!(r.level <= 4 && r.reasons.len() == 4);
        }
    }

    /// Every fix text is built from the criterion it is about (QA): no count, metric name or
    /// runner from some other goal. Each criterion below has one shortcut whose fix is checked
    /// for what it must and must not say.
    #[test]
    fn fix_texts_come_from_their_own_criterion() {
        let root = repo();
        // (criterion, a phrase of the problem, what the fix must hold, what it must not)
        let cases: &[(&str, &str, &[&str], &[&str])] = &[
            (
                "- function: `python3 -m unittest tests.test_durations -v` → `OK`",
                "pins no count",
                &["`Ran N tests`", "`python3 -m unittest tests.test_durations -v`"],
                &["14", "9 tests", "passed"],
            ),
            (
                "- regression: `pytest pyt/test_api.py` → `0 failed`",
                "pins no count",
                &["`N passed`", "`pytest pyt/test_api.py`"],
                &["14", "Ran "],
            ),
            (
                "- regression: `cargo test --locked` → `ok`",
                "pins no count",
                &["test result: ok. N passed", "`cargo test --locked`"],
                &["14", "Ran "],
            ),
            (
                "- function: `python3 -m unittest tests.test_durations 2>/dev/null` → `OK`",
                "pins no count",
                &["`python3 -m unittest tests.test_durations`"],
                &["/dev/null"],
            ),
            (
                "- function: `python3 -m unittest tests.test_durations`",
                "no expected output",
                &["`Ran N tests`", "tests.test_durations"],
                &["14"],
            ),
            (
                "- function: `python3 -m unittest tests.test_durations` → `Ran 9 tests` and `re:.*`",
                "matches any output",
                &["drop `re:.*`", "`Ran 9 tests`"],
                &["14"],
            ),
            (
                "- function: `python3 -m unittest tests.test_durations` → `re:.*`",
                "matches any output",
                &["`Ran N tests`"],
                &["14"],
            ),
            (
                "- function: `python3 -m unittest -f tests.test_durations` → `OK`",
                "stops at the first failure",
                &["drop `-f`", "`Ran N tests`"],
                &["14", "passed"],
            ),
            (
                "- limit: `python3 tools/bench_load.py` → `re:^parsed=20000 cpu_ms=\\d+$`",
                "limit without a bound",
                &["`re:^parsed=20000 cpu_ms=[0-9]{1,3}$`"],
                &["p95"],
            ),
            (
                "- limit: `python3 tools/bench_load.py` → `re:^rows=[0-9]+ took_ms=[0-9]{1,3}$`",
                "",
                &[],
                &[],
            ),
            (
                "- limit: `python3 tools/bench_load.py` → `re:cpu_ms=\\d+`",
                "limit without a number",
                &["`re:cpu_ms=[0-9]{1,3}\\b`"],
                &["p95"],
            ),
            (
                "- limit: `python3 tools/bench_load.py` → `rss_kb=`",
                "limit without a number",
                &["`re:rss_kb=[0-9]{1,3}\\b`"],
                &["p95", "cpu"],
            ),
            (
                "- limit: `python3 tools/bench_load.py` → `re:^took (.*) ms$`",
                "limit without a number",
                &["`re:^took ([0-9]{1,3}) ms$`"],
                &["p95"],
            ),
            (
                "- limit: `python3 tools/bench_load.py`",
                "no expected output",
                &["`python3 tools/bench_load.py` prints the value alone"],
                &["p95", "Ran "],
            ),
        ];
        for (text, problem, must, must_not) in cases {
            let rating = rate(&goal(text), &all_frozen(), root.path());
            if problem.is_empty() {
                // `rows=[0-9]+` is a count, not the bound; the bound is there too. Known gap:
                // the linter cannot tell which number is the limited one.
                assert!(rating.shortcuts.iter().all(|s| !s.what.contains("bound")), "{text}");
                continue;
            }
            let Some(s) = rating.shortcuts.iter().find(|s| s.what.contains(problem)) else {
                panic!("{text}: no `{problem}` in {:#?}", rating.shortcuts);
            };
            let fix = s.what.split_once(FIX_SEP).map(|(_, f)| f).unwrap_or("");
            for m in *must {
                assert!(fix.contains(m), "{text}: fix lacks `{m}`: {fix}");
            }
            for m in *must_not {
                assert!(!fix.contains(m), "{text}: fix has `{m}`: {fix}");
            }
        }
        // A bound written that way really is a bound: 1000 and more fail, 999 passes.
        let re = regex::Regex::new("cpu_ms=[0-9]{1,3}\\b").unwrap();
        assert!(re.is_match("parsed=20000 cpu_ms=999"));
        assert!(!re.is_match("parsed=20000 cpu_ms=1000"));
    }

    /// Point 2 of the scale says each command's exit status is checked only when it is.
    #[test]
    fn the_commands_point_does_not_claim_a_swallowed_status() {
        let root = repo();
        let honest = rate(
            &goal(
                "- regression: `python3 -m unittest discover -s tests` → `Ran 14 tests` and `OK`",
            ),
            &all_frozen(),
            root.path(),
        );
        assert!(
            honest.reasons[1].contains("each with its exit status checked"),
            "{:?}",
            honest.reasons
        );
        for cmd in [
            "python3 -m unittest discover -s tests; exit 0",
            "python3 -m unittest discover -s tests || true",
            "python3 -m unittest discover -s tests 2>&1 | tail -3",
            "! python3 -m unittest discover -s tests",
            "echo Ran 14 tests OK",
        ] {
            let text = format!(
                "- function: `python3 -m unittest tests.test_durations` → `Ran 9 tests` and `OK`\n- regression: `{cmd}` → `Ran 14 tests` and `OK`"
            );
            let r = rate(&goal(&text), &all_frozen(), root.path());
            assert_eq!(r.level, 2, "{cmd}");
            assert!(
                !r.reasons[1].contains("each with its exit status checked"),
                "{cmd}: {}",
                r.reasons[1]
            );
            assert!(
                r.reasons[1].contains("exit status of goal.md:5 is thrown away"),
                "{cmd}: {}",
                r.reasons[1]
            );
        }
    }

    #[test]
    fn numbers_inside_names_do_not_count() {
        assert_eq!(numbers("Ran 14 tests"), ["14"]);
        assert_eq!(numbers("p95_ms=12 test_2 v3"), ["12"]);
        assert_eq!(numbers("^p95_ms=([0-9]|1[0-9])$"), ["0", "9", "1", "0", "9"]);
    }

    #[test]
    fn globs() {
        for (p, n, want) in [
            ("test*.py", "test_a.py", true),
            ("test*.py", "a_test.py", false),
            ("*_test.py", "a_test.py", true),
            ("*.rs", "cli.rs", true),
            ("t?st.py", "test.py", true),
            ("*", "", true),
        ] {
            assert_eq!(glob_match(p, n), want, "{p} {n}");
        }
    }
}
