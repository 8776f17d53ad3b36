//! Frozen coverage: which paths frozen.toml protects ([`Frozen`]), whether each test file,
//! folder, script and runner configuration a criterion exercises is among them, the programs a
//! criterion runs that kit cannot see (so cannot check are frozen), and the files the agent
//! writes itself (its notes, longrun/) that no criterion may read.

use super::runner::{
    is_interpreter, looks_like_test, normalise, repo_path, source, stdin_file, walk_matching,
    Source, Target,
};
use super::{abbreviate, shell, show_words, Criterion, Kind, Lint, IMPLICITLY_FROZEN};
use crate::frozen::manifest;

/// The frozen paths, normalised (`./tests/` → `tests`).
pub(super) struct Frozen {
    paths: Vec<String>,
}

impl Frozen {
    pub(super) fn new(frozen: &[String]) -> Frozen {
        let paths = frozen
            .iter()
            .map(String::as_str)
            .chain(IMPLICITLY_FROZEN)
            .map(normalise)
            .filter(|p| !p.is_empty())
            .collect();
        Frozen { paths }
    }

    /// The paths frozen.toml protects, without the implicitly frozen files.
    pub(super) fn user_paths(&self) -> Vec<String> {
        let implicit: Vec<String> = IMPLICITLY_FROZEN.iter().map(|p| normalise(p)).collect();
        self.paths.iter().filter(|p| !implicit.contains(p)).cloned().collect()
    }

    /// Whether `path` (normalised, repo-relative) is frozen itself or lies in a frozen folder.
    pub(super) fn covers(&self, path: &str) -> bool {
        self.paths.iter().any(|f| {
            f == "."
                || path == f
                || (path.starts_with(f.as_str()) && path[f.len()..].starts_with('/'))
        })
    }
}

impl Lint<'_> {
    pub(super) fn agent_files(&mut self, line: usize, words: &[String]) {
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

    /// Programs the criterion runs whose text kit cannot see, so cannot check are frozen: an
    /// interpreter that reads its program from a pipe (`cat tools/bench.py | python3 -`), and
    /// a program, script or input file named by a variable or a command's output
    /// (`B=tools/bench.py; python3 $B`, `python3 - < "$B"`). Whatever a frozen file would pin,
    /// the agent could change by changing what runs. A program piped from `echo`/`printf` of
    /// literal text is the goal's own text, which is frozen; `$PWD/…` is placed as a path.
    pub(super) fn unseen_programs(&mut self, c: &Criterion) {
        self.unseen_in(c.line, &c.command, 0);
    }

    fn unseen_in(&mut self, line: usize, script: &str, depth: usize) {
        for list in shell::script(script) {
            for pipe in &list.pipelines {
                for (i, simple) in pipe.commands.iter().enumerate() {
                    if depth < 4 {
                        if let Some(inner) = shell::nested_script(&simple.words) {
                            self.unseen_in(line, &inner, depth + 1);
                            continue;
                        }
                    }
                    let previous = i.checked_sub(1).map(|p| &pipe.commands[p]);
                    self.unseen_program(line, simple, previous);
                }
            }
        }
    }

    fn unseen_program(
        &mut self,
        line: usize,
        simple: &shell::Simple,
        previous: Option<&shell::Simple>,
    ) {
        let Some((prog, args)) = shell::program(&simple.words) else { return };
        let shown = show_words(&simple.words);
        let fix = "write the program's path in the command itself (`python3 tools/bench.py`), not through a variable, a command's output or a pipe, then kit freeze it";
        if self.unseen(prog) {
            self.flag(
                line,
                format!("`{shown}` runs a program named by `{prog}`: kit cannot see which file that is, so it cannot check that it is frozen"),
                fix,
            );
            return;
        }
        let base = prog.rsplit('/').next().unwrap_or(prog);
        if !is_interpreter(base) {
            return;
        }
        let named = match source(base, args) {
            Source::File(w) | Source::Module(w) => Some(w),
            Source::Inline => return,
            Source::Stdin => match stdin_file(simple) {
                Some(r) => Some(r.target.as_str()),
                None => {
                    let Some(before) = previous.filter(|p| !literal_text(p)) else { return };
                    let fix = match piped_file(before) {
                        Some(f) => format!("run it by its path: `{prog} {f}`, then kit freeze {f}"),
                        None => fix.to_string(),
                    };
                    self.flag(
                        line,
                        format!("`{shown}` runs the program it reads from a pipe: kit cannot see which file that is, so it cannot check that it is frozen"),
                        fix,
                    );
                    return;
                }
            },
        };
        if let Some(w) = named.filter(|w| self.unseen(w)) {
            self.flag(
                line,
                format!("`{shown}` runs a program named by `{w}`: kit cannot see which file that is, so it cannot check that it is frozen"),
                fix,
            );
        }
    }

    /// Whether word `w` names a file through a variable or a command's output that
    /// [`repo_path`] cannot place (`$B`, `${B}`, `$(…)`, backquotes; not `$PWD/…`).
    fn unseen(&self, w: &str) -> bool {
        w.contains(['$', '`']) && repo_path(w, self.root).is_none()
    }

    /// Check that `t`, which the criterion at `line` runs, is frozen, and name it when it is
    /// not. `inits` holds the unfrozen `__init__.py` files of the packages the criterion imports
    /// (see [`Lint::package`]): a test file's shortcut names those of its own package in its
    /// fix, and takes them out of `inits`.
    pub(super) fn target(&mut self, line: usize, kind: Kind, t: &Target, inits: &mut Vec<String>) {
        let p = t.path();
        if p == ".." || p.starts_with("../") {
            // Outside the repository: nothing kit can freeze.
            return;
        }
        match t {
            Target::File(p) | Target::Script(p) => {
                // A test file and a script the criterion runs differ only in what the agent
                // could do with them, so in the words.
                let script = matches!(t, Target::Script(_));
                if self.frozen.covers(p) {
                    self.exercised.insert(p.clone());
                } else if !self.root.join(p).exists() {
                    let (could, first) = if script {
                        (
                            format!("could write a {p} that prints the expected output"),
                            format!("write {p} first"),
                        )
                    } else {
                        (
                            "would write the test it is judged by".to_string(),
                            "write the test first".to_string(),
                        )
                    };
                    self.flag(
                        line,
                        format!("{p} is run by this criterion but does not exist, so it is not frozen: the agent {could}"),
                        format!("{first}, then kit freeze {p}"),
                    );
                } else if kind == Kind::Limit && (script || !looks_like_test(p)) {
                    self.flag(
                        line,
                        format!("{p} measures the limit but is not frozen: the agent could change what it measures"),
                        format!("kit freeze {p}"),
                    );
                } else if script {
                    self.flag(
                        line,
                        format!("{p} is run by this criterion but is not frozen: the agent could change what it checks"),
                        format!("kit freeze {p}"),
                    );
                } else {
                    let mine = take_inits_under(inits, |folder| manifest::is_under(p, folder));
                    let (also, more) = if mine.is_empty() {
                        (String::new(), String::new())
                    } else {
                        (
                            format!(", nor {} (run when its package is imported)", mine.join(", ")),
                            format!(" {}", mine.join(" ")),
                        )
                    };
                    self.flag(
                        line,
                        format!(
                            "{p} is not frozen{also}: the agent can edit the test until it passes"
                        ),
                        format!("kit freeze {p}{more}"),
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
            Target::Package(_) => {}
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
                    Some(f) => {
                        // The folder takes the packages' `__init__.py` files inside it along.
                        take_inits_under(inits, |i| manifest::is_under(i, &f));
                        format!("kit freeze {f}/ (a frozen folder also catches new files)")
                    }
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

impl Lint<'_> {
    /// An unfrozen `__init__.py` at `p` that the criterion at `line` runs when it imports the
    /// package of a test file (no test file of that package is named: they are frozen).
    pub(super) fn package(&mut self, line: usize, p: &str) {
        let folder = p.rsplit_once('/').map_or(".", |(f, _)| f);
        self.flag(
            line,
            format!("{p} runs whenever the tests of its package are imported, but is not frozen: the agent could skip or rewrite the tests there without touching a test file"),
            format!("kit freeze {p}, or the whole folder: kit freeze {folder}/ (a frozen folder also catches new files)"),
        );
    }
}

/// Remove from `inits` the `__init__.py` files whose path or folder `keep` accepts, and return
/// them.
fn take_inits_under(inits: &mut Vec<String>, keep: impl Fn(&str) -> bool) -> Vec<String> {
    let (taken, left): (Vec<String>, Vec<String>) =
        std::mem::take(inits).into_iter().partition(|i| {
            let folder = i.rsplit_once('/').map_or(".", |(f, _)| f);
            keep(folder) || keep(i)
        });
    *inits = left;
    taken
}

/// The first folder shared by all `files`, if they share one.
fn common_folder(files: &[&str]) -> Option<String> {
    let first = files.first()?.split_once('/')?.0;
    files
        .iter()
        .all(|f| f.split_once('/').is_some_and(|(d, _)| d == first))
        .then(|| first.to_string())
}

/// Whether `simple` prints text written in the command itself: `echo`/`printf` with no
/// variable or command output in its words (a program piped from it is the goal's own text).
fn literal_text(simple: &shell::Simple) -> bool {
    shell::program(&simple.words).is_some_and(|(p, args)| {
        matches!(p, "echo" | "printf") && args.iter().all(|a| !a.contains(['$', '`']))
    }) && simple.redirects.is_empty()
}

/// The one file `cat FILE` prints, for a fix text.
fn piped_file(simple: &shell::Simple) -> Option<&str> {
    match shell::program(&simple.words)? {
        ("cat", [f]) if !f.starts_with('-') && !f.contains(['$', '`']) => Some(f.as_str()),
        _ => None,
    }
}
