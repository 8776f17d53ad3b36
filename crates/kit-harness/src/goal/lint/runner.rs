//! Runner knowledge: the test runners kit understands (`python -m unittest`, `pytest`,
//! `cargo test`, `go test`), what their arguments select or skip, which test files, scripts and
//! configuration files a command runs ([`Target`]), and [`runner_test_files`] for the canary.

use std::path::Path;

use super::{cut, shell, show_words, Criterion, Lint};

#[derive(Debug, PartialEq)]
pub(super) enum Target {
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
    /// The `__init__.py` of a package Python imports on its way to a test file the runner runs
    /// (`tests/__init__.py` for `python -m unittest tests.test_x`): code that runs with the
    /// tests, so it must be frozen as they are (see [`package_inits`]).
    Package(String),
}

impl Target {
    /// The target seen from the root when it was found from folder `cwd` ("" for the root).
    pub(super) fn under(self, cwd: &str) -> Target {
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
            Target::Package(p) => Target::Package(join(p)),
        }
    }

    /// The path it names, repo-relative.
    pub(super) fn path(&self) -> &str {
        match self {
            Target::File(p)
            | Target::Dir(p, _)
            | Target::Script(p)
            | Target::Config { path: p, .. }
            | Target::Package(p) => p,
        }
    }
}

pub(super) const UNITTEST_PATTERN: &str = "test*.py";
const PYTEST_PATTERNS: [&str; 2] = ["test_*.py", "*_test.py"];

impl Lint<'_> {
    pub(super) fn runner_flags(&mut self, c: &Criterion, r: &Runner, pinned: bool) {
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
}

/// Whether a script's name says it runs the tests: a path component with `test` in it
/// ([`looks_like_test`]), or a name such as `check.sh`, `verify`, `ci.sh`, `run_checks.py`.
pub(super) fn runs_tests(p: &str) -> bool {
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

pub(super) fn looks_like_test(p: &str) -> bool {
    p.split('/').any(|c| c.to_ascii_lowercase().contains("test"))
}

/// A test runner the linter understands, with what its arguments select.
#[derive(Debug, Default)]
pub(super) struct Runner {
    /// Which runner it is.
    pub(super) kind: RunnerKind,
    /// Positional arguments (test names, files, folders), flags removed.
    pub(super) positional: Vec<String>,
    /// Flags that select or skip tests: `(flag, value)`.
    selecting: Vec<(String, Option<String>)>,
    /// Flags that stop at the first failure.
    stop_early: Vec<String>,
    /// `-s`/`-p` of `unittest discover`, `--test` of `cargo test`.
    options: Vec<(String, String)>,
}

#[derive(Debug, Default, PartialEq)]
pub(super) enum RunnerKind {
    #[default]
    Unittest,
    Pytest,
    Cargo,
    Go,
}

impl RunnerKind {
    /// The language of the test files this runner runs.
    fn language(&self) -> TestLanguage {
        match self {
            RunnerKind::Unittest | RunnerKind::Pytest => TestLanguage::Python,
            RunnerKind::Cargo => TestLanguage::Rust,
            RunnerKind::Go => TestLanguage::Go,
        }
    }
}

impl Runner {
    pub(super) fn of(words: &[String]) -> Option<Runner> {
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

    pub(super) fn option(&self, names: &[&str]) -> Option<&str> {
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
    pub(super) fn config_files(&self, root: &Path) -> Vec<Target> {
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

    /// unittest discovery's start folder, pattern and top-level folder ("" for none).
    pub(super) fn discovery(&self) -> (String, String, String) {
        let pos: &[String] = if self.positional.is_empty() { &[] } else { &self.positional[1..] };
        let start = self
            .option(&["-s", "--start-directory"])
            .or(pos.first().map(String::as_str))
            .unwrap_or(".");
        let pattern = self
            .option(&["-p", "--pattern"])
            .or(pos.get(1).map(String::as_str))
            .unwrap_or(UNITTEST_PATTERN);
        let top = self.option(&["-t", "--top-level-directory"]).or(pos.get(2).map(String::as_str));
        (normalise(start), pattern.to_string(), top.unwrap_or("").to_string())
    }

    /// What this run exercises that must be frozen.
    pub(super) fn targets(&self, root: &Path) -> Vec<Target> {
        match self.kind {
            RunnerKind::Unittest => {
                if self.positional.first().is_some_and(|p| p == "discover")
                    || self.positional.is_empty()
                {
                    // Discovery imports each test file as a module of the top-level folder
                    // (`-t`, else the start folder): the packages between them run first.
                    let (start, pattern, top) = self.discovery();
                    let top = if top.is_empty() { start.clone() } else { normalise(&top) };
                    let files = walk_matching(root, &start, std::slice::from_ref(&pattern));
                    let mut out = vec![Target::Dir(start, vec![pattern])];
                    out.extend(packages_of(root, &files, &top));
                    return out;
                }
                let mut out = Vec::new();
                for p in &self.positional {
                    let t = unittest_target(p, root);
                    // `tests.test_x` imports the package `tests` first; `tests` alone, its
                    // `__init__.py` itself. A path (`tests/test_x.py`) is imported the same way.
                    let module = match &t {
                        Target::Dir(d, _) => Some(format!("{d}/__init__.py")),
                        Target::File(f) if root.join(f).is_file() => Some(f.clone()),
                        _ => None,
                    };
                    out.push(t);
                    out.extend(packages_of(root, module.as_slice(), "."));
                }
                out
            }
            RunnerKind::Pytest => {
                let patterns: Vec<String> = PYTEST_PATTERNS.iter().map(|s| s.to_string()).collect();
                let mut out: Vec<Target> = if self.positional.is_empty() {
                    vec![Target::Dir(".".into(), patterns.clone())]
                } else {
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
                };
                // pytest imports a test file inside a package (its default `prepend` import
                // mode) as a module of the outermost package around it.
                let mut files = Vec::new();
                for t in &out {
                    match t {
                        Target::Dir(d, pats) => files.extend(walk_matching(root, d, pats)),
                        Target::File(f) if root.join(f).is_file() => files.push(f.clone()),
                        _ => {}
                    }
                }
                out.extend(packages_of(root, &files, "."));
                out
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
    let mut lang = None;
    let mut files: Vec<String> = Vec::new();
    for (cwd, words) in in_folders(&shell::simple_commands(&c.command)) {
        let Some(runner) = Runner::of(words) else {
            // `python3 tests/test_x.py`: a test file run as a script (unittest.main()).
            if let Some((prog, args)) = shell::program(words) {
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
        let this = runner.kind.language();
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
                Target::Script(_) | Target::Config { .. } | Target::Package(_) => {}
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

/// Where the canary ([`crate::goal::canary`]) adds its failing test so that the criterion's own
/// selection runs it: the test files, each with the names selected in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CanaryPlan {
    /// The language of the files.
    pub(crate) lang: TestLanguage,
    /// Repo-relative test files, each with the attribute paths the criterion selects in it
    /// (`["LoaderDurationTest"]` for `tests.test_durations.LoaderDurationTest`,
    /// `["ParseDurationTest", "test_seconds"]` for one test); empty when the whole file runs.
    pub(crate) files: Vec<(String, Vec<Vec<String>>)>,
}

/// THE rule of which criteria kit can canary, shared by the linter (level 4 needs every function
/// and regression criterion canaried) and the loop (which refuses done only when a canary it
/// could plant is missed, and skips the rest): Ok with where the failing test goes, or Err with
/// why kit cannot canary the criterion, in a phrase. kit can canary a criterion that expects exit
/// status 0 and runs unittest, pytest, cargo test or go test over test files kit finds, either
/// whole or selected by name down to a class or one test (`tests.test_x.Class`,
/// `tests.test_x.Class.test_y`, `tests/test_x.py::Class::test_y`, `python3 tests/test_x.py
/// Class`): a failing method is added to a selected class, and a selected test is replaced by
/// a failing one for the run. It cannot when the run selects by pattern, mark or earlier
/// results (`-k`, `-m`, `--lf`, a cargo test name filter, `go test -run`, `--ignored`), a
/// parametrised case (`test_y[1]`), or a name inside a package rather than a file: no test
/// kit adds is sure to be run there.
pub(crate) fn canary_plan(c: &Criterion, root: &Path) -> Result<CanaryPlan, String> {
    if c.exit != 0 {
        return Err("the criterion expects a failing exit status".into());
    }
    let unknown = || "no unittest, pytest, cargo test or go test run kit can add a failing test to";
    let mut lang = None;
    let mut files: Vec<(String, Option<Vec<Vec<String>>>)> = Vec::new();
    let add =
        |files: &mut Vec<(String, Option<Vec<Vec<String>>>)>, p: String, rest: Vec<String>| {
            let at = match files.iter().position(|(f, _)| *f == p) {
                Some(i) => i,
                None => {
                    files.push((p, Some(Vec::new())));
                    files.len() - 1
                }
            };
            match (&mut files[at].1, rest.is_empty()) {
                (sel, true) => *sel = None,
                (Some(sel), false) => {
                    if !sel.contains(&rest) {
                        sel.push(rest)
                    }
                }
                (None, false) => {}
            }
        };
    for (cwd, words) in in_folders(&shell::simple_commands(&c.command)) {
        let Some(runner) = Runner::of(words) else {
            // `python3 tests/test_x.py [NAME…]`: a test file run as a script (unittest.main()),
            // whose arguments select as unittest's do.
            let Some((prog, args)) = shell::program(words) else { continue };
            let base = prog.rsplit('/').next().unwrap_or(prog);
            let Some(at) = args.iter().position(|a| !a.starts_with('-')) else { continue };
            let script = &args[at];
            if !(base.starts_with("python") && script.ends_with(".py")) {
                continue;
            }
            let p = normalise(&format!("{cwd}/{script}"));
            let p = p.trim_start_matches("./").to_string();
            if !(looks_like_test(&p) && root.join(&p).is_file()) {
                continue;
            }
            if lang.is_some_and(|l| l != TestLanguage::Python) {
                continue;
            }
            lang = Some(TestLanguage::Python);
            let mut names = Vec::new();
            for a in &args[at + 1..] {
                if a == "-k" || (a.starts_with("-k") && !a.starts_with("--")) {
                    return Err("`-k` selects tests by pattern".into());
                }
                if !a.starts_with('-') && !a.contains(['<', '>']) {
                    names.push(a);
                }
            }
            if names.is_empty() {
                add(&mut files, p.clone(), Vec::new());
            }
            for n in names {
                add(&mut files, p.clone(), attribute_path(n)?);
            }
            continue;
        };
        if let Some((flag, value)) = runner.selecting.iter().find(|(f, _)| {
            !matches!(f.as_str(), "--deselect" | "--ignore" | "--ignore-glob" | "--skip" | "-skip")
        }) {
            let shown = match value {
                Some(v) => format!("{flag} {v}"),
                None => flag.clone(),
            };
            return Err(format!(
                "`{shown}` selects the tests to run, so a test kit adds may not be one of them"
            ));
        }
        let this = runner.kind.language();
        if lang.is_some_and(|l| l != this) {
            continue;
        }
        lang = Some(this);
        let here = root.join(&cwd);
        let selected: Vec<(Target, Vec<String>)> = if runner.names_modules() {
            let mut out = Vec::new();
            for p in &runner.positional {
                let (t, rest) = unittest_split(p, &here);
                out.push((t, rest.iter().map(|s| s.to_string()).collect()));
            }
            out
        } else if runner.kind == RunnerKind::Pytest
            && runner.positional.iter().any(|p| p.contains("::"))
        {
            let mut out = Vec::new();
            for p in &runner.positional {
                let mut parts = p.split("::");
                let path = normalise(parts.next().unwrap_or(p));
                let rest: Vec<String> = parts.map(str::to_string).collect();
                let t = if here.join(&path).is_dir() {
                    Target::Dir(path, PYTEST_PATTERNS.iter().map(|s| s.to_string()).collect())
                } else {
                    Target::File(path)
                };
                out.push((t, rest));
            }
            out
        } else {
            runner.targets(&here).into_iter().map(|t| (t, Vec::new())).collect()
        };
        for (t, rest) in selected {
            let rest = if rest.is_empty() { Vec::new() } else { attribute_path(&rest.join("."))? };
            match t.under(&cwd) {
                Target::File(p) => {
                    if root.join(&p).is_file() {
                        add(&mut files, p, rest);
                    }
                }
                Target::Script(_) | Target::Config { .. } | Target::Package(_) => {}
                Target::Dir(d, patterns) => {
                    if !rest.is_empty() {
                        return Err(format!(
                            "`{}` names a test inside the package {d}, not in a test file",
                            rest.join(".")
                        ));
                    }
                    for f in walk_matching(root, &d, &patterns) {
                        let direct =
                            f.strip_prefix(&format!("{d}/")).is_some_and(|r| !r.contains('/'));
                        if this != TestLanguage::Rust || direct {
                            add(&mut files, f, Vec::new());
                        }
                    }
                }
            }
        }
    }
    let lang = lang.ok_or_else(|| unknown().to_string())?;
    if files.is_empty() {
        return Err(unknown().into());
    }
    let files = files.into_iter().map(|(f, sel)| (f, sel.unwrap_or_default())).collect();
    Ok(CanaryPlan { lang, files })
}

/// `Class.test_y` → `["Class", "test_y"]`, each a Python identifier; Err for a parametrised id
/// (`test_y[1]`) or anything else kit cannot plant a test at.
fn attribute_path(name: &str) -> Result<Vec<String>, String> {
    let ident = |p: &str| {
        p.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_')
            && p.chars().all(|c| c.is_alphanumeric() || c == '_')
    };
    let parts: Vec<String> =
        name.split(['.', ':']).filter(|p| !p.is_empty()).map(str::to_string).collect();
    if parts.is_empty() || !parts.iter().all(|p| ident(p)) {
        return Err(format!("`{name}` selects a test kit cannot add a failing test beside"));
    }
    Ok(parts)
}

/// The simple commands (from [`shell::simple_commands`]) other than `cd`, each with the folder
/// the `cd DIR` commands before it moved to, relative to the root ("" for the root itself). A
/// `cd` to an absolute path, to one with `..` or to nowhere goes back to the root: kit looks
/// only inside the repository.
pub(super) fn in_folders(commands: &[Vec<String>]) -> Vec<(String, &[String])> {
    let mut cwd = String::new();
    let mut out = Vec::new();
    for words in commands {
        if words.first().is_some_and(|w| w == "cd") {
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
        out.push((cwd.clone(), words.as_slice()));
    }
    out
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

/// The `__init__.py` files Python runs when it imports each of `files` (repo-relative test
/// modules) as part of its package: in each folder from the file's own up to, not including,
/// `top` (the folder the import starts from: `.` for the root, or discovery's top-level
/// folder), as long as the folder has one (the first without is where the package ends). Each
/// once, in the order found. Source: the import system's packages (a regular package's
/// `__init__.py` runs on import), `unittest` discovery and pytest's `prepend` import mode.
pub(super) fn packages_of(root: &Path, files: &[String], top: &str) -> Vec<Target> {
    let top = normalise(top);
    let mut out: Vec<Target> = Vec::new();
    for f in files {
        let mut at = f.as_str();
        while let Some((folder, _)) = at.rsplit_once('/') {
            if folder == top {
                break;
            }
            let init = format!("{folder}/__init__.py");
            if !root.join(&init).is_file() {
                break;
            }
            if !out.iter().any(|t| t.path() == init) {
                out.push(Target::Package(init));
            }
            at = folder;
        }
    }
    out
}

/// `tests.test_durations.TestX.test_y` → the longest prefix that is a file (`tests/test_durations.py`)
/// or a package folder; a path (`tests/test_a.py`) as is.
fn unittest_target(name: &str, root: &Path) -> Target {
    unittest_split(name, root).0
}

/// [`unittest_target`] with the rest of the name: the attributes selected inside the module
/// (`["TestX", "test_y"]`), empty when the whole module or package runs.
fn unittest_split<'a>(name: &'a str, root: &Path) -> (Target, Vec<&'a str>) {
    if name.ends_with(".py") || name.contains('/') {
        return (Target::File(normalise(name)), Vec::new());
    }
    let parts: Vec<&str> = name.split('.').collect();
    for k in (1..=parts.len()).rev() {
        let base = parts[..k].join("/");
        if root.join(format!("{base}.py")).is_file() {
            return (Target::File(format!("{base}.py")), parts[k..].to_vec());
        }
        if root.join(&base).is_dir() {
            return (Target::Dir(base, vec![UNITTEST_PATTERN.into()]), parts[k..].to_vec());
        }
    }
    (Target::File(format!("{}.py", parts.join("/"))), Vec::new())
}

/// Paths in a command's words that name a test (a component containing `test`) and exist.
pub(super) fn test_paths(words: &[String], root: &Path) -> Vec<Target> {
    let mut out = Vec::new();
    for w in words {
        if w.starts_with('-') || w.contains("://") {
            continue;
        }
        let w = w.trim_start_matches(['<', '>']);
        let w = w.split("::").next().unwrap_or(w);
        if !w.contains(['/', '.']) {
            continue;
        }
        let Some(p) = repo_path(w, root) else { continue };
        if !looks_like_test(&p) {
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
/// Not `python3 -m unittest`/`pytest` or `sh -c SCRIPT` (their own checks read those).
pub(super) fn script_run(words: &[String], root: &Path) -> Option<Target> {
    let (prog, args) = shell::program(words)?;
    let base = prog.rsplit('/').next().unwrap_or(prog);
    // `. ./env.sh`, `source env.sh`: the file runs in the criterion's own shell.
    if matches!(base, "." | "source") {
        let s = args.first()?;
        return repo_path(s, root).map(Target::Script);
    }
    if !is_interpreter(base) {
        return if prog.contains('/') { repo_path(prog, root).map(Target::Script) } else { None };
    }
    match source(base, args) {
        // `python3 -m tools.check`: the module's file runs as the program.
        Source::Module(module) => {
            if matches!(module, "unittest" | "pytest") {
                return None;
            }
            let rel = module.replace('.', "/");
            [format!("{rel}.py"), format!("{rel}/__main__.py")]
                .into_iter()
                .find(|p| root.join(p).is_file())
                .map(Target::Script)
        }
        Source::File(s) => {
            let known = [".py", ".sh", ".bash", ".js", ".mjs", ".ts", ".rb", ".pl", ".php"];
            if !s.contains('/') && !known.iter().any(|e| s.ends_with(e)) {
                return None;
            }
            repo_path(s, root).map(Target::Script)
        }
        Source::Inline | Source::Stdin => None,
    }
}

/// Whether `base` (a program's file name) is an interpreter that runs a program file given as
/// an argument, or the program on its standard input when given none.
pub(super) fn is_interpreter(base: &str) -> bool {
    base.starts_with("python")
        || matches!(
            base,
            "sh" | "bash" | "dash" | "zsh" | "node" | "ruby" | "perl" | "deno" | "bun" | "php"
        )
}

/// Where an interpreter's program comes from.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Source<'a> {
    /// A file, the word as written: `python3 -X dev tools/bench.py`, `sh check.sh`.
    File(&'a str),
    /// `python3 -m MODULE`.
    Module(&'a str),
    /// Code written in the command itself: `-c CODE` (a short option cluster with `c`: `-ec`),
    /// `-e`/`-p`/`--eval` for node, `-e`/`-E` for ruby and perl, `-r` for php.
    Inline,
    /// Its standard input: no program argument, `-`, or a shell's `-s`.
    Stdin,
}

/// Where interpreter `base` (see [`is_interpreter`]) takes its program from, given its
/// arguments: the first argument that is not an option (nor an option's value: `-X dev`,
/// `-W ignore`, `-o pipefail`, `-r MODULE`) is the file, and what follows it is the file's.
pub(super) fn source<'a>(base: &str, args: &'a [String]) -> Source<'a> {
    let python = base.starts_with("python");
    let shell = matches!(base, "sh" | "bash" | "dash" | "zsh");
    let mut i = 0;
    while let Some(a) = args.get(i) {
        let a = a.as_str();
        i += 1;
        if a == "-" {
            return Source::Stdin;
        }
        if a == "--" {
            return args.get(i).map_or(Source::Stdin, |s| Source::File(s));
        }
        // `set +o pipefail` style options of a shell.
        if shell && (a == "+o" || a == "+O") {
            i += 1;
            continue;
        }
        if !a.starts_with('-') {
            return Source::File(a);
        }
        let cluster = !a.starts_with("--");
        if python {
            match a {
                "-m" => return args.get(i).map_or(Source::Stdin, |m| Source::Module(m)),
                "-X" | "-W" | "--check-hash-based-pycs" => i += 1,
                _ if a.starts_with("-m") => return Source::Module(&a[2..]),
                _ if a.starts_with("-X") || a.starts_with("-W") => {}
                _ if cluster && a.contains('c') => return Source::Inline,
                _ => {}
            }
        } else if shell {
            match a {
                "-o" | "-O" => i += 1,
                _ if cluster && a.contains('c') => return Source::Inline,
                _ if cluster && a.contains('s') => return Source::Stdin,
                _ => {}
            }
        } else {
            match base {
                "node" | "deno" | "bun" => match a {
                    "-e" | "-p" | "--eval" | "--print" => return Source::Inline,
                    "-r" | "--require" | "--import" | "--loader" | "-C" | "--conditions" => i += 1,
                    _ => {}
                },
                "ruby" | "perl" => match a {
                    "-I" | "-r" | "-M" => i += 1,
                    _ if cluster && (a.contains('e') || a.contains('E')) => return Source::Inline,
                    _ => {}
                },
                "php" => match a {
                    "-r" => return Source::Inline,
                    "-f" => return args.get(i).map_or(Source::Stdin, |s| Source::File(s)),
                    "-d" | "-c" => i += 1,
                    _ => {}
                },
                _ => {}
            }
        }
    }
    Source::Stdin
}

/// The script an interpreter reads from its standard input (`python3 - < tools/bench.py`,
/// `sh < check.sh`): the last `<` redirection of a simple command whose program is an
/// interpreter, placed as [`repo_path`] does. The redirection is not among the command's words.
pub(super) fn stdin_script(simple: &shell::Simple, here: &Path) -> Option<Target> {
    let (prog, _) = shell::program(&simple.words)?;
    let base = prog.rsplit('/').next().unwrap_or(prog);
    if !is_interpreter(base) {
        return None;
    }
    let file = stdin_file(simple)?;
    repo_path(&file.target, here).map(Target::Script)
}

/// The last `<` redirection of standard input of `simple`, if any.
pub(super) fn stdin_file(simple: &shell::Simple) -> Option<&shell::Redirect> {
    simple.redirects.iter().rev().find(|r| r.op == "<" && r.fd.is_none_or(|fd| fd == 0))
}

/// A word of a command as a path relative to the folder `here` the command runs in, however it
/// is written: `$PWD/`, `${PWD}/` and `$(pwd)/` stand for `here`, an absolute path inside `here`
/// is made relative, `..` is resolved (`tools/../tools/x.py` is `tools/x.py`; a result starting
/// with `../` leaves `here`, and [`Target::under`] places it). None for what cannot be placed: another
/// variable, `~`, an absolute path outside `here`, `here` itself.
pub(super) fn repo_path(w: &str, here: &Path) -> Option<String> {
    let mut w = w;
    for prefix in ["$PWD/", "${PWD}/", "$(pwd)/", "`pwd`/"] {
        if let Some(rest) = w.strip_prefix(prefix) {
            w = rest;
            break;
        }
    }
    if w.starts_with('~') || w.contains(['$', '`']) {
        return None;
    }
    let rel;
    if w.starts_with('/') {
        let abs = Path::new(w);
        let real = std::fs::canonicalize(here).ok();
        rel = [Some(here.to_path_buf()), real]
            .into_iter()
            .flatten()
            .filter(|h| h.is_absolute())
            .find_map(|h| abs.strip_prefix(&h).ok().map(|r| r.to_string_lossy().into_owned()))?;
        w = &rel;
    }
    let p = normalise(w);
    (p != ".").then_some(p)
}

/// What a script the command runs reads from the repository: each argument that names an
/// existing file (`in.txt`, `tests/test_clamp.py`) or a Python module (`tests.test_clamp`).
/// The agent could rewrite any of them to change what the criterion prints.
pub(super) fn script_inputs(words: &[String], root: &Path) -> Vec<Target> {
    let Some(Target::Script(_)) = script_run(words, root) else { return Vec::new() };
    let Some((_, args)) = shell::program(words) else { return Vec::new() };
    let mut out = Vec::new();
    // Skip the interpreter's own options and the script itself.
    let mut past_script = !matches!(
        shell::program(words).map(|(p, _)| p.rsplit('/').next().unwrap_or(p)),
        Some(b) if b.starts_with("python") || matches!(b, "sh" | "bash" | "dash" | "zsh" | "node" | "ruby" | "perl" | "." | "source")
    );
    for a in args {
        if !past_script {
            // `-m` and other interpreter options come before the script or module.
            if !a.starts_with('-') {
                past_script = true;
            }
            continue;
        }
        if a.starts_with('-') || a.contains(['<', '>', '=']) || a.contains("://") {
            continue;
        }
        let Some(p) = repo_path(a, root) else { continue };
        if root.join(&p).is_file() {
            out.push(Target::File(p));
        } else if !a.contains('/')
            && a.contains('.')
            && a.split('.')
                .all(|c| !c.is_empty() && c.chars().all(|ch| ch.is_alphanumeric() || ch == '_'))
        {
            if let Target::File(f) = unittest_target(a, root) {
                if root.join(&f).is_file() {
                    out.push(Target::File(f));
                }
            }
        }
    }
    out
}

/// The build file that defines what `make TARGET` or `npm test` runs: `Makefile` (or `-f FILE`,
/// in `-C DIR`), `package.json` for `npm`/`yarn`/`pnpm`/`bun` `test`/`run NAME`/`t`.
pub(super) fn build_files(words: &[String], root: &Path) -> Vec<Target> {
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
pub(super) fn walk_matching(root: &Path, dir: &str, patterns: &[String]) -> Vec<String> {
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
pub(super) fn glob_match(pattern: &str, name: &str) -> bool {
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

/// `./tests/` → `tests`; `a//b` → `a/b`; `tools/../tools/x.py` → `tools/x.py` (`..` resolved
/// by name; a path that leaves the folder keeps its leading `..`: `../x`).
pub(super) fn normalise(p: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for s in p.split('/') {
        match s {
            "" | "." => {}
            ".." if parts.last().is_some_and(|l| *l != "..") => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    if parts.is_empty() {
        ".".to_string()
    } else {
        parts.join("/")
    }
}

/// How a full run of this criterion's runner states its count, for a fix text: the runner's own
/// words with `N` for the count. The linter never guesses how many tests a file holds (a class
/// can inherit tests, a loop can make them), so N is what the criterion's command prints.
pub(super) fn count_example(c: &Criterion) -> String {
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
