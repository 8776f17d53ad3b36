//! `kit verify`: the instructors' proof that the kit works on this machine. It runs every case
//! of the embedded test catalogue (`tests/cases/*.md`, DESIGN §13), every exercise's golden
//! (against its solution: must pass; against its start: must fail) and every lesson's console
//! blocks, against this very binary, each in its own temporary sandbox, with the same runner and
//! matcher as `cargo test`. One line per case, then the failures' diffs, then `N passed, N
//! failed`.

use std::io::Write;

use crate::course::exercise::Exercise;
use crate::course::lesson::Lesson;
use crate::error::{Error, IoContext, Result, EXIT_INTERNAL, EXIT_OK};
use crate::golden::{self, Binaries, Outcome};
use crate::term::Theme;

/// Options of `kit verify`.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Only cases whose file name or case name contains this text.
    pub filter: Option<String>,
    /// Only the cases of this lesson (catalogue `lesson =`, exercises' `lesson`, the lesson).
    pub lesson: Option<u32>,
    /// Print each failure's detail in full (otherwise the first 40 lines).
    pub verbose: bool,
}

/// The binaries to test: this executable and the `fake-agent` beside it, else a `fake-agent`
/// link to this executable (which is also the fake agent) in a temporary folder, returned so it
/// lives as long as the run. So the `kit` binary alone verifies the whole catalogue.
pub fn this_binaries() -> Result<(Binaries, Option<tempfile::TempDir>)> {
    let kit = std::env::current_exe()
        .map_err(|e| Error::internal(format!("cannot locate the kit binary: {e}")))?;
    let beside = kit.with_file_name(crate::rehearse::FAKE_AGENT);
    if beside.is_file() {
        return Ok((Binaries { kit, fake_agent: Some(beside) }, None));
    }
    let dir = tempfile::Builder::new()
        .prefix("kit-verify-bin-")
        .tempdir()
        .map_err(|e| Error::io("a temporary folder", e))?;
    let link = dir.path().join(crate::rehearse::FAKE_AGENT);
    std::os::unix::fs::symlink(&kit, &link).at(&link)?;
    Ok((Binaries { kit, fake_agent: Some(link) }, Some(dir)))
}

/// One case `kit verify` runs.
pub enum Job {
    /// A catalogue case: `(tests/cases/NAME.md, text)`.
    Catalogue(String, &'static str),
    /// An exercise's golden on start + solution (must pass).
    Solution(Exercise),
    /// An exercise's golden on its start (must fail).
    StartFails(Exercise),
    /// A lesson's console blocks.
    Lesson(Lesson),
    /// The course could not be loaded.
    Broken(String, Error),
}

impl Job {
    /// The name printed on the case's line.
    pub fn name(&self) -> String {
        match self {
            Job::Catalogue(origin, _) => {
                origin.trim_start_matches("tests/cases/").trim_end_matches(".md").to_string()
            }
            Job::Solution(ex) => format!("exercise {} solution", ex.slug),
            Job::StartFails(ex) => format!("exercise {} start fails", ex.slug),
            Job::Lesson(l) => format!("lesson {}", l.slug),
            Job::Broken(name, _) => name.clone(),
        }
    }

    /// The file a failure's line refers to.
    pub fn origin(&self) -> String {
        match self {
            Job::Catalogue(origin, _) => origin.clone(),
            Job::Solution(ex) | Job::StartFails(ex) => ex.golden_origin(),
            Job::Lesson(l) => format!("lessons/{}/README.md", l.slug),
            Job::Broken(name, _) => name.clone(),
        }
    }

    fn lesson(&self) -> Option<u32> {
        match self {
            Job::Catalogue(origin, text) => {
                golden::parse(origin, text).ok().and_then(|c| c.meta.lesson).map(u32::from)
            }
            Job::Solution(ex) | Job::StartFails(ex) => Some(ex.meta.lesson),
            Job::Lesson(l) => Some(l.meta.number),
            Job::Broken(..) => None,
        }
    }

    /// Run the case.
    pub fn run(&self, bins: &Binaries) -> Result<Outcome> {
        match self {
            Job::Catalogue(origin, text) => golden::parse(origin, text)
                .and_then(|case| golden::run_case(&case, bins, &golden::build_sandbox)),
            Job::Solution(ex) => crate::course::check::run_solution(ex, bins),
            Job::StartFails(ex) => crate::course::check::run_start_fails(ex, bins),
            Job::Lesson(l) => {
                l.case().and_then(|c| golden::run_case(&c, bins, &golden::build_sandbox))
            }
            Job::Broken(_, e) => Err(Error::internal(e.to_string())),
        }
    }
}

/// Every case: the catalogue, then each exercise (solution, start fails), then each lesson,
/// filtered by `opts`.
pub fn jobs(opts: &Options) -> Vec<Job> {
    let mut files: Vec<_> = crate::embedded::CASES
        .files()
        .filter(|f| f.path().extension().is_some_and(|e| e == "md"))
        .collect();
    files.sort_by_key(|f| f.path());
    let mut jobs: Vec<Job> = files
        .into_iter()
        .map(|f| {
            let origin = format!("tests/cases/{}", f.path().display());
            Job::Catalogue(origin, f.contents_utf8().unwrap_or_default())
        })
        .collect();
    match crate::course::exercise::load_all() {
        Ok(all) => {
            for ex in all {
                jobs.push(Job::Solution(ex.clone()));
                jobs.push(Job::StartFails(ex));
            }
        }
        Err(e) => jobs.push(Job::Broken("exercises".into(), e)),
    }
    match crate::course::lesson::load_all() {
        Ok(all) => jobs.extend(all.into_iter().map(Job::Lesson)),
        Err(e) => jobs.push(Job::Broken("lessons".into(), e)),
    }
    jobs.retain(|j| {
        let text_ok =
            opts.filter.as_deref().is_none_or(|x| j.name().contains(x) || j.origin().contains(x));
        let lesson_ok = opts.lesson.is_none_or(|n| j.lesson() == Some(n));
        text_ok && lesson_ok
    });
    jobs
}

/// Run the cases; returns exit 0 when every case passed, 1 otherwise.
pub fn run(opts: &Options, theme: &Theme, out: &mut dyn Write) -> Result<u8> {
    let (bins, _bin_dir) = this_binaries()?;
    let jobs = jobs(opts);
    if jobs.is_empty() {
        return Err(Error::usage("no case matched")
            .with_hint("kit verify (without --case or --lesson) runs them all"));
    }
    let w = |e: std::io::Error| Error::io("stdout", e);
    let mut failures = Vec::new();
    let mut passed = 0usize;
    for job in &jobs {
        let name = job.name();
        match job.run(&bins) {
            Ok(Outcome { failure: None, .. }) => {
                passed += 1;
                writeln!(out, "{}      {name}", theme.ok("ok")).map_err(w)?;
            }
            Ok(Outcome { failure: Some(fl), .. }) => {
                writeln!(out, "{}  {name}", theme.bad("FAILED")).map_err(w)?;
                let head = format!("{name}: {}:{}: `{}`", job.origin(), fl.line, fl.command);
                failures.push((head, fl.detail));
            }
            Err(e) => {
                writeln!(out, "{}  {name}", theme.bad("FAILED")).map_err(w)?;
                failures.push((format!("{name}: {}", job.origin()), e.to_string()));
            }
        }
        out.flush().at(std::path::Path::new("stdout"))?;
    }
    let limit = if opts.verbose { usize::MAX } else { 40 };
    for (head, detail) in &failures {
        writeln!(out, "\n--- {head}").map_err(w)?;
        let lines: Vec<&str> = detail.lines().collect();
        for line in lines.iter().take(limit) {
            writeln!(out, "    {line}").map_err(w)?;
        }
        if lines.len() > limit {
            writeln!(out, "    … {} more lines (kit verify -v)", lines.len() - limit).map_err(w)?;
        }
    }
    if !failures.is_empty() {
        writeln!(out).map_err(w)?;
    }
    writeln!(out, "{passed} passed, {} failed", failures.len()).map_err(w)?;
    Ok(if failures.is_empty() { EXIT_OK } else { EXIT_INTERNAL })
}
