//! A regression runs the whole frozen suite (issue 22). "Nothing broke" is only evidence when
//! every frozen test runs: a regression criterion that names a module list, a `-p` pattern, a
//! test path narrower than the frozen test folders or a filter checks part of the suite, and a
//! regression in the rest goes unseen. And the count it pins must be what the frozen test files
//! hold, counted by the runner's own collection (`unittest` discovery without running, `pytest
//! --collect-only -q`), run the way the loop runs criteria: `sh -c` in the repository root, in
//! the criteria's environment, with a timeout. When the collection cannot run (no Python, a
//! test module that does not import yet), kit says so and judges by the rest.

use std::collections::BTreeSet;
use std::time::Duration;

use super::adversary::pinned_count;
use super::runner::{in_folders, runner_test_files, walk_matching, Runner, RunnerKind};
use super::{abbreviate, shell, show_words, Criterion, Kind, Lint};

/// How long one collection may take.
const COLLECT_TIMEOUT: Duration = Duration::from_secs(20);

/// Counts unittest's discovery without running a test: `KIT_COUNT <tests> <failed imports>`.
const UNITTEST_COUNT: &str = "import sys, unittest\n\
def walk(s):\n    for t in s:\n        if isinstance(t, unittest.TestSuite):\n            yield from walk(t)\n        else:\n            yield t\n\
top = sys.argv[3] or None\n\
tests = list(walk(unittest.defaultTestLoader.discover(sys.argv[1], pattern=sys.argv[2], top_level_dir=top)))\n\
bad = [t for t in tests if type(t).__name__ == '_FailedTest']\n\
print('KIT_COUNT', sum(t.countTestCases() for t in tests), len(bad))\n";

impl Lint<'_> {
    /// For a regression criterion: the frozen test files it leaves out, and the count it pins
    /// against the runner's own collection. Returns the collected count when there is one.
    pub(super) fn whole_suite(&mut self, c: &Criterion) -> Option<u64> {
        if c.kind != Kind::Regression {
            return None;
        }
        let commands = shell::simple_commands(&c.command);
        let (cwd, words, runner) = in_folders(&commands)
            .into_iter()
            .find_map(|(cwd, w)| Runner::of(w).map(|r| (cwd, w.to_vec(), r)))?;
        let line = c.line;
        // A narrowed regression beside one that runs the whole frozen suite adds evidence and
        // hides nothing (a person may pin the loader tests on their own, too): only the goal's
        // regressions together must run every frozen test.
        if runner.kind == RunnerKind::Unittest
            && runner.names_modules()
            && self.others_run_the_whole_suite(c, &runner.kind)
        {
            return None;
        }
        if runner.kind == RunnerKind::Unittest && runner.names_modules() {
            self.flag(
                line,
                format!("`{}` runs only the modules it names: a regression criterion must run the whole frozen suite", show_words(&words)),
                whole_fix(&runner.kind),
            );
            return None;
        }
        // Two regression criteria (a unittest suite and a pytest one) may share the suite.
        let runs: BTreeSet<String> = self
            .goal
            .criteria
            .iter()
            .filter(|o| o.kind == Kind::Regression)
            .filter_map(|o| runner_test_files(o, self.root))
            .flat_map(|(_, f)| f)
            .collect();
        let frozen = self.frozen_test_files(&runner.kind);
        let left: Vec<&str> =
            frozen.iter().filter(|f| !runs.contains(*f)).map(String::as_str).collect();
        if !left.is_empty() {
            self.flag(
                line,
                format!(
                    "the regression runs {} of the {} frozen test files (left out: {}): a regression there goes unseen",
                    frozen.len() - left.len(),
                    frozen.len(),
                    abbreviate(&left, 3)
                ),
                whole_fix(&runner.kind),
            );
            return None;
        }
        // A line already named needs its fix first; the collection waits for it.
        if self.shortcuts.iter().any(|s| s.line == line) {
            return None;
        }
        let pinned = pinned_count(c, &runner.kind);
        if let Some(drifted) = frozen_drift(self.root) {
            // Counting a suite someone changed after the freeze would judge their change, not
            // the goal: `kit loop` restores the frozen files first, `kit freeze --check` names
            // the drift.
            self.notes.push(format!(
                "{drifted} differs from its frozen copy, so the count the regression pins is not checked against the suite (kit freeze --check names the drift)"
            ));
            return None;
        }
        let counted = self.collect(&cwd, &words, &runner)?;
        if let Some(p) = pinned.filter(|p| *p != counted) {
            let unit = if runner.kind == RunnerKind::Unittest { "Ran" } else { "passed" };
            self.flag(
                line,
                format!(
                    "pins {p} tests (`{unit}`) but the frozen suite holds {counted}, counted by the runner's own collection: the criterion does not stand for the whole suite"
                ),
                format!("pin {counted}, the count a full run reports"),
            );
        }
        Some(counted)
    }

    /// Whether the goal's other regression criteria (not `c`), together, run every frozen test
    /// file of `kind`, with no module list among them.
    fn others_run_the_whole_suite(&self, c: &Criterion, kind: &RunnerKind) -> bool {
        let others: Vec<&Criterion> = self
            .goal
            .criteria
            .iter()
            .filter(|o| o.kind == Kind::Regression && o.line != c.line)
            .collect();
        let narrowed = others.iter().any(|o| {
            shell::simple_commands(&o.command).iter().any(|w| {
                Runner::of(w).is_some_and(|r| r.kind == RunnerKind::Unittest && r.names_modules())
            })
        });
        if others.is_empty() || narrowed {
            return false;
        }
        let runs: BTreeSet<String> = others
            .iter()
            .filter_map(|o| runner_test_files(o, self.root))
            .flat_map(|(_, f)| f)
            .collect();
        let frozen = self.frozen_test_files(kind);
        !frozen.is_empty() && frozen.iter().all(|f| runs.contains(f))
    }

    /// The frozen files the runner would collect with its default patterns.
    fn frozen_test_files(&self, kind: &RunnerKind) -> BTreeSet<String> {
        let patterns: Vec<String> = match kind {
            RunnerKind::Unittest => vec!["test*.py".into()],
            RunnerKind::Pytest => vec!["test_*.py".into(), "*_test.py".into()],
            RunnerKind::Cargo => vec!["*.rs".into()],
            RunnerKind::Go => vec!["*_test.go".into()],
        };
        let mut out = BTreeSet::new();
        for p in self.frozen.user_paths() {
            let full = self.root.join(&p);
            let files = if full.is_dir() {
                walk_matching(self.root, &p, &patterns)
            } else if full.is_file() {
                let base = p.rsplit('/').next().unwrap_or(&p).to_string();
                if patterns.iter().any(|pat| super::runner::glob_match(pat, &base)) {
                    vec![p.clone()]
                } else {
                    Vec::new()
                }
            } else {
                Vec::new()
            };
            for f in files {
                // cargo runs the crates directly under tests/ only.
                let direct = f.strip_prefix("tests/").is_some_and(|r| !r.contains('/'));
                if *kind == RunnerKind::Cargo && !direct {
                    continue;
                }
                out.insert(f);
            }
        }
        out
    }

    /// The number of tests the runner collects, or None (with a note) when kit cannot count.
    fn collect(&mut self, cwd: &str, words: &[String], runner: &Runner) -> Option<u64> {
        let (prog, _) = shell::program(words)?;
        let cd = if cwd.is_empty() { String::new() } else { format!("cd {} && ", quote(cwd)) };
        let command = match runner.kind {
            RunnerKind::Unittest => {
                let (start, pattern, top) = runner.discovery();
                format!(
                    "{cd}{} -B -c {} {} {} {}",
                    quote(prog),
                    quote(UNITTEST_COUNT),
                    quote(&start),
                    quote(&pattern),
                    quote(&top)
                )
            }
            RunnerKind::Pytest => {
                let args: Vec<String> = plain_words(words).iter().map(|w| quote(w)).collect();
                format!("{cd}{} --collect-only -q", args.join(" "))
            }
            RunnerKind::Cargo | RunnerKind::Go => return None,
        };
        if let Some(hit) = self.collected.get(&command) {
            return *hit;
        }
        let identity = match runner.kind {
            RunnerKind::Unittest => {
                let (start, _, top) = runner.discovery();
                let here = self.root.join(cwd);
                let mut folders = vec![here.join(&start)];
                if !top.is_empty() {
                    folders.push(here.join(&top));
                }
                tree_identity(&folders)
            }
            _ => None,
        };
        if let Some(n) = identity.as_ref().and_then(|id| remembered(&command, id)) {
            self.collected.insert(command, Some(n));
            return Some(n);
        }
        let probe = Criterion {
            line: 0,
            kind: Kind::Regression,
            command: command.clone(),
            expectations: Vec::new(),
            exit: 0,
        };
        let env = self
            .env
            .get_or_insert_with(|| super::super::env::CriteriaEnv::capture(self.goal, self.root));
        let r = super::super::criteria::run_until(
            &probe,
            self.root,
            COLLECT_TIMEOUT,
            Some(env),
            &|| false,
        );
        let count = match runner.kind {
            RunnerKind::Unittest => r.output_tail.lines().find_map(|l| {
                let rest = l.strip_prefix("KIT_COUNT ")?;
                let (n, bad) = rest.split_once(' ')?;
                (bad.trim() == "0").then(|| n.trim().parse().ok()).flatten()
            }),
            _ => r.output_tail.lines().rev().find_map(|l| {
                let l = l.trim().trim_matches('=').trim();
                if l.contains("error") {
                    return None;
                }
                let (n, rest) = l.split_once(' ')?;
                rest.starts_with("test").then(|| n.parse().ok()).flatten()
            }),
        };
        let count =
            if r.exit == Some(0) || runner.kind == RunnerKind::Pytest { count } else { None };
        if count.is_none() {
            self.notes.push(format!(
                "kit could not count the tests `{}` runs with the runner's own collection, so the count the regression pins is not checked (a test module that does not import yet, or the runner is not installed)",
                super::cut(show_words(&plain_words(words)))
            ));
        }
        if let (Some(n), Some(id)) = (count, identity) {
            remember(&command, id, n);
        }
        self.collected.insert(command, count);
        count
    }
}

/// Counts collected earlier in this process: (command, root's [`tree_identity`]) → tests. A
/// loop rates its goal twice at its start (before and under the lock), and each rating would
/// start the runner's collection again (a Python start and an import of every test module)
/// on the same files.
type Collected = std::sync::Mutex<Vec<(String, String, u64)>>;
static COLLECTED: std::sync::OnceLock<Collected> = std::sync::OnceLock::new();

fn remembered(command: &str, identity: &str) -> Option<u64> {
    let seen = COLLECTED.get_or_init(Collected::default).lock().unwrap_or_else(|p| p.into_inner());
    seen.iter().find(|(c, i, _)| c == command && i == identity).map(|(_, _, n)| *n)
}

fn remember(command: &str, identity: String, n: u64) {
    let mut seen =
        COLLECTED.get_or_init(Collected::default).lock().unwrap_or_else(|p| p.into_inner());
    seen.push((command.to_string(), identity, n));
}

/// Most entries [`tree_identity`] looks at before it gives up (a test folder that large is
/// not walked twice to save one collection).
const IDENTITY_FILES: usize = 5000;

/// What a unittest collection over `folders` (its start and top-level folders) reads besides
/// the code they import, as one string: for every entry below each (but `__pycache__`), its
/// path, mode, size, inode and modification and change times in nanoseconds (a write changes
/// the change time, which nobody can set back) and the target of a link. None past
/// [`IDENTITY_FILES`] entries, or when a folder cannot be read. Two writes within one tick of
/// the file system's clock (a few ms) with the same size are not told apart; the count is the
/// linter's check of a goal, and the loop's own criteria run after it. The code under test is not in
/// it: a change there that breaks an import makes the collection fail, and a failed
/// collection is not remembered.
fn tree_identity(folders: &[std::path::PathBuf]) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let mut out = String::new();
    let mut todo: Vec<std::path::PathBuf> =
        folders.iter().map(|f| std::fs::canonicalize(f).ok()).collect::<Option<_>>()?;
    let mut seen = 0;
    while let Some(dir) = todo.pop() {
        let mut entries: Vec<std::fs::DirEntry> =
            std::fs::read_dir(&dir).ok()?.collect::<std::io::Result<_>>().ok()?;
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            seen += 1;
            if seen > IDENTITY_FILES {
                return None;
            }
            if e.file_name() == "__pycache__" {
                continue;
            }
            let path = e.path();
            let m = std::fs::symlink_metadata(&path).ok()?;
            let link = if m.file_type().is_symlink() {
                std::fs::read_link(&path).ok()?.display().to_string()
            } else {
                String::new()
            };
            out.push_str(&format!(
                "{} {:o} {} {} {}.{} {}.{} {link}\n",
                path.display(),
                m.mode(),
                m.size(),
                m.ino(),
                m.mtime(),
                m.mtime_nsec(),
                m.ctime(),
                m.ctime_nsec()
            ));
            if m.is_dir() {
                todo.push(path);
            }
        }
    }
    Some(out)
}

/// The words of a command before its first redirection.
fn plain_words(words: &[String]) -> Vec<String> {
    words.iter().take_while(|w| !w.contains(['<', '>'])).cloned().collect()
}

fn whole_fix(kind: &RunnerKind) -> String {
    match kind {
        RunnerKind::Unittest => "run the whole frozen suite: `python3 -m unittest discover -s DIR -v` over the frozen test folder, no -p, no -k, no module list".into(),
        RunnerKind::Pytest => "run the whole frozen suite: `python3 -m pytest -q` over the frozen test folders, no -k, -m, --ignore or deselection".into(),
        RunnerKind::Cargo => "run `cargo test` with no test name filter and no --test selection".into(),
        RunnerKind::Go => "run `go test ./...` with no -run or -skip".into(),
    }
}

/// `word` quoted for `sh` when it needs it.
fn quote(word: &str) -> String {
    let plain = |ch: char| ch.is_ascii_alphanumeric() || "_./:=@%+,-".contains(ch);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

impl Runner {
    /// `python -m unittest a.b c` (not `discover`, not bare): a module list.
    pub(super) fn names_modules(&self) -> bool {
        self.kind == RunnerKind::Unittest
            && self.positional.first().is_some_and(|p| p != "discover")
    }
}

/// The first frozen file (by `longrun/frozen.toml` under `root`) whose content or mode differs
/// from what was frozen; None when all match or there is no manifest.
fn frozen_drift(root: &std::path::Path) -> Option<String> {
    let manifest =
        crate::frozen::manifest::Manifest::load(&root.join("longrun/frozen.toml")).ok()?;
    manifest.files.iter().find_map(|(rel, e)| {
        crate::frozen::inspect(root, rel, &e.sha256, crate::frozen::ModeRule::Git(&e.mode))
            .map(|_| rel.clone())
    })
}

#[cfg(test)]
mod tests {
    use super::tree_identity;

    #[test]
    fn the_identity_of_a_test_folder_follows_every_change_in_it() {
        let d = tempfile::tempdir().unwrap();
        let tests = d.path().join("tests");
        std::fs::create_dir_all(tests.join("__pycache__")).unwrap();
        std::fs::write(tests.join("test_a.py"), "x = 1\n").unwrap();
        let folders = vec![tests.clone()];
        let first = tree_identity(&folders).unwrap();
        assert_eq!(tree_identity(&folders).unwrap(), first, "nothing changed");
        // Bytecode Python writes is not part of it.
        std::fs::write(tests.join("__pycache__/test_a.cpython-311.pyc"), "b").unwrap();
        assert_eq!(tree_identity(&folders).unwrap(), first, "__pycache__ is left out");
        // Past the file system's timestamp granularity (a few ms), as any real edit is.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(tests.join("test_a.py"), "x = 2\n").unwrap();
        let edited = tree_identity(&folders).unwrap();
        assert_ne!(edited, first, "an edit, same size");
        std::fs::write(tests.join("test_b.py"), "").unwrap();
        assert_ne!(tree_identity(&folders).unwrap(), edited, "a new file");
        assert!(tree_identity(&[d.path().join("missing")]).is_none());
    }
}
