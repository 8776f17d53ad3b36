//! Exit-status analysis: whose exit status ends up as the criterion's. The command is read as
//! the shell runs it ([`shell::script`]: lists, and-or chains, pipelines, `!`, redirections,
//! nested `sh -c`), and each way the work's status or output is thrown away is named.

use super::runner::Runner;
use super::{cut, shell, show_words, Criterion, Lint};

impl Lint<'_> {
    /// Whether the exit status the loop sees is the work's: read the command as the shell runs
    /// it ([`shell::script`]) and follow which command's status ends up as the criterion's. Names
    /// `|| true`, a `;` or `&` that throws a runner's status away, a last command that only
    /// prints (`echo`, `python3 -c 'print(…)'`, `cat FILE`, `true`, `exit 0`), `!`, a pipe into
    /// `tail`/`true`, `set +e`, and output sent to `/dev/null` or to a file nothing reads.
    pub(super) fn swallowed_failure(&mut self, c: &Criterion) {
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
pub(super) fn inline_script<'a>(base: &str, args: &'a [String]) -> Option<&'a str> {
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

fn show_pipeline(p: &shell::Pipeline) -> String {
    let parts: Vec<String> = p.commands.iter().map(|s| show_words(&s.words)).collect();
    cut(parts.join(" | "))
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
