//! `kit verify`: the instructors' proof that the kit works on this machine. It runs every case
//! of the embedded test catalogue (`tests/cases/*.md`, DESIGN §13), every exercise's golden
//! (against its solution: must pass; against its start: must fail) and every lesson's console
//! blocks, against this very binary, each in its own temporary sandbox, with the same runner and
//! matcher as `cargo test`. One line per case, then the failures' diffs, then `N passed, N
//! failed`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::course::exercise::Exercise;
use crate::course::lesson::Lesson;
use crate::error::{Error, Result, EXIT_CHECK_FAILED, EXIT_OK};
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
    /// Cases run at once (None: [`default_jobs`]).
    pub jobs: Option<usize>,
    /// Write a JUnit XML report here.
    pub junit: Option<PathBuf>,
    /// Rewrite the expected lines of failing cases in the checkout's files ([`Job::bless`]).
    pub bless: bool,
    /// Print each case's wall time to stderr, slowest first.
    pub timings: bool,
}

use crate::golden::this_binaries;

/// One case `kit verify` runs.
pub enum Job {
    /// A catalogue case: `(tests/cases/NAME.md, text)`.
    Catalogue(String, &'static str),
    /// An exercise's golden on start + solution (must pass).
    Solution(Exercise),
    /// An exercise's golden on its start (must fail).
    StartFails(Exercise),
    /// An honest variant (must pass) or a known cheat (must fail at its step), run as a learner
    /// runs it ([`crate::course::proof`]).
    Proof(Exercise, crate::course::proof::Proof),
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
            Job::Proof(ex, p) => format!("exercise {} {} {}", ex.slug, p.side.word(), p.name),
            Job::Lesson(l) => format!("lesson {}", l.slug),
            Job::Broken(name, _) => name.clone(),
        }
    }

    /// The file a failure's line refers to.
    pub fn origin(&self) -> String {
        match self {
            Job::Catalogue(origin, _) => origin.clone(),
            Job::Solution(ex) | Job::StartFails(ex) => ex.golden_origin(),
            Job::Proof(ex, p) => p.origin(&ex.slug),
            Job::Lesson(l) => format!("lessons/{}/README.md", l.slug),
            Job::Broken(name, _) => name.clone(),
        }
    }

    /// The kind of case, for JUnit's `classname` and the test harness.
    pub fn kind(&self) -> &'static str {
        match self {
            Job::Catalogue(..) => "catalogue",
            Job::Solution(_) => "exercise solution",
            Job::StartFails(_) => "exercise start fails",
            Job::Proof(_, p) => match p.side {
                crate::course::proof::Side::Variant => "exercise variant",
                crate::course::proof::Side::Cheat => "exercise cheat",
            },
            Job::Lesson(_) => "lesson",
            Job::Broken(..) => "course",
        }
    }

    /// Whether the case runs a fake-agent scenario that really sleeps (`fake:hang`, `fake:race`):
    /// such a case waits for seconds, so [`run_jobs`] starts it first.
    pub fn waits(&self) -> bool {
        let text = match self {
            Job::Catalogue(_, text) => *text,
            Job::Solution(ex) | Job::StartFails(ex) | Job::Proof(ex, _) => ex.golden,
            Job::Lesson(l) => l.readme,
            Job::Broken(..) => return false,
        };
        crate::fake_agent::SCENARIOS.files().any(|f| {
            let sleeps = f.contents_utf8().is_some_and(|t| t.contains("do = \"sleep\""));
            let name = f.path().file_stem().map(|s| format!("fake:{}", s.to_string_lossy()));
            sleeps && name.is_some_and(|n| text.contains(&n))
        })
    }

    fn lesson(&self) -> Option<u32> {
        match self {
            Job::Catalogue(origin, text) => {
                golden::parse(origin, text).ok().and_then(|c| c.meta.lesson).map(u32::from)
            }
            Job::Solution(ex) | Job::StartFails(ex) | Job::Proof(ex, _) => Some(ex.meta.lesson),
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
            Job::Proof(ex, p) => crate::course::prove::run(ex, p, bins),
            Job::Lesson(l) => {
                l.case().and_then(|c| golden::run_case(&c, bins, &golden::build_sandbox))
            }
            Job::Broken(_, e) => Err(Error::internal(e.to_string())),
        }
    }

    /// Run the case and judge it: whether it failed, with the failure's heading and text.
    pub fn check(&self, bins: &Binaries) -> Verdict {
        let start = Instant::now();
        let failure = match self.run(bins) {
            Ok(Outcome { failure: None, .. }) => None,
            Ok(Outcome { failure: Some(fl), .. }) => Some((
                format!("{}: {}:{}: `{}`", self.name(), self.origin(), fl.line, fl.command),
                fl.detail,
            )),
            Err(e) => Some((format!("{}: {}", self.name(), self.origin()), e.to_string())),
        };
        Verdict { failure, elapsed: start.elapsed(), blessed: None }
    }

    /// Whether `--bless` may rewrite this case's file. A "start fails" case never: its golden is
    /// the solution's, and making it match the start would let the exercise pass unsolved.
    pub fn blessable(&self) -> bool {
        matches!(self, Job::Catalogue(..) | Job::Solution(_) | Job::Lesson(_))
    }

    /// Run the case from its file in `checkout` and rewrite that file's failing steps to expect
    /// what they printed ([`golden::bless`]: wildcards that still match stay, prose stays).
    /// Returns the file when it changed.
    ///
    /// Errors: the file cannot be read or parsed, the sandbox cannot be built.
    pub fn bless(&self, checkout: &Checkout, bins: &Binaries) -> Result<Option<PathBuf>> {
        let origin = self.origin();
        let path = checkout.0.join(&origin);
        let (_, changed) = match self {
            Job::Catalogue(..) => golden::bless_file(&path, &origin, bins, &golden::build_sandbox)?,
            Job::Solution(ex) => {
                let owned = ex.clone();
                let build = move |_: &str, dir: &Path, env: &[(String, String)]| {
                    let key = crate::course::exercise::env_course_key(env)?;
                    crate::course::exercise::build_sandbox(&owned, dir, env, &key, &key, true)
                };
                let name = self.name();
                let case_of = |text: &str| ex.case_of(&name, text);
                golden::bless_file_as(&path, &origin, &case_of, bins, &build)?
            }
            Job::Lesson(l) => {
                let case_of = |text: &str| l.case_of(text);
                golden::bless_file_as(&path, &origin, &case_of, bins, &golden::build_sandbox)?
            }
            Job::StartFails(_) | Job::Proof(..) | Job::Broken(..) => return Ok(None),
        };
        Ok(changed.then_some(path))
    }

    /// [`Job::check`], then, when the case failed and `bless` names a checkout, [`Job::bless`]:
    /// the verdict names the file rewritten, or says why none was.
    pub fn check_or_bless(&self, bins: &Binaries, bless: Option<&Checkout>) -> Verdict {
        let mut v = self.check(bins);
        let (Some(checkout), Some((_, detail))) = (bless, v.failure.as_mut()) else { return v };
        if !self.blessable() {
            detail.push_str(NOT_BLESSED_START);
            return v;
        }
        match self.bless(checkout, bins) {
            Ok(Some(path)) => v.blessed = Some(path),
            Ok(None) => detail.push_str(&format!(
                "(--bless left {} as it is: the checkout's copy passes; rebuild kit)\n",
                self.origin()
            )),
            Err(e) => detail.push_str(&format!("(--bless failed: {e})\n")),
        }
        v
    }
}

const NOT_BLESSED_START: &str = "(--bless never rewrites a \"start fails\" case: the golden is \
the solution's; change the exercise's start/ or golden.md by hand)\n";

/// How one case went.
#[derive(Clone, Debug)]
pub struct Verdict {
    /// `(heading, detail)` of the failure; None when the case passed.
    pub failure: Option<(String, String)>,
    /// Wall time of the case.
    pub elapsed: Duration,
    /// The file `--bless` rewrote.
    pub blessed: Option<PathBuf>,
}

/// The kit checkout whose source files `--bless` rewrites.
#[derive(Clone, Debug)]
pub struct Checkout(pub PathBuf);

impl Checkout {
    /// The checkout holding `dir` (its nearest ancestor that is one), else the folder this binary
    /// was built from, if that is still a checkout.
    ///
    /// Errors: [`Error::Usage`] when neither is a kit checkout (an installed binary).
    pub fn find(dir: &Path) -> Result<Checkout> {
        // This crate's manifest folder is `crates/kit-course` in the checkout kit was built from.
        let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
        Checkout::find_from(dir, crate_dir.ancestors().nth(2).unwrap_or(crate_dir))
    }

    /// [`Checkout::find`] with `built` as the folder the binary was built from.
    ///
    /// Errors: [`Error::Usage`] when neither is a kit checkout.
    pub fn find_from(dir: &Path, built: &Path) -> Result<Checkout> {
        dir.ancestors()
            .chain(std::iter::once(built))
            .find(|d| is_checkout(d))
            .map(|d| Checkout(d.to_path_buf()))
            .ok_or_else(|| {
                Error::usage(format!(
                    "--bless rewrites the course's source files, but neither {} nor {} (where \
                     this kit was built) is a kit checkout",
                    dir.display(),
                    built.display()
                ))
                .with_hint("run it inside a clone of the kit repository: kit verify --bless")
            })
    }
}

/// A folder is a kit checkout when it has kit's `Cargo.toml` and the folders `--bless` writes.
fn is_checkout(d: &Path) -> bool {
    let manifest = std::fs::read_to_string(d.join("Cargo.toml")).unwrap_or_default();
    manifest.lines().any(|l| l.replace(' ', "") == "name=\"kit\"")
        && ["tests/cases", "exercises", "lessons"].iter().all(|s| d.join(s).is_dir())
}

/// Whether `KIT_GOLDEN=overwrite` asks to bless (`kit verify` and `cargo test` alike).
pub fn overwrite_requested() -> bool {
    std::env::var("KIT_GOLDEN").is_ok_and(|v| v == "overwrite")
}

/// Cases run at once by default: four per CPU. A case mostly waits on its child processes (the
/// whole course used 11% of one CPU run sequentially), and the cases that wait for seconds (a
/// hung agent's timeout, a race) must all start at once for the run to last no longer than the
/// longest of them (BENCHMARKS.md, "kit verify").
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get()) * 4
}

/// Run `jobs` on `n` threads, those that [wait](Job::waits) first (so the run is not as long as
/// the last of them started late). `done(i, verdict)` is called in job order, each as soon as
/// every job before it has finished, so what it prints is the same for any `n` and schedule.
/// Returns the verdicts in job order.
///
/// Errors: the first error `done` returns (no further case starts).
pub fn run_jobs(
    jobs: &[Job],
    bins: &Binaries,
    n: usize,
    bless: Option<&Checkout>,
    done: &mut dyn FnMut(usize, &Verdict) -> Result<()>,
) -> Result<Vec<Verdict>> {
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| !jobs[i].waits());
    let order = &order;
    let next = AtomicUsize::new(0);
    let mut slots: Vec<Option<Verdict>> = vec![None; jobs.len()];
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::channel::<(usize, Verdict)>();
        for _ in 0..n.clamp(1, jobs.len().max(1)) {
            let (tx, next) = (tx.clone(), &next);
            scope.spawn(move || {
                while let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
                    if tx.send((i, jobs[i].check_or_bless(bins, bless))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        let mut printed = 0;
        for (i, v) in rx {
            slots[i] = Some(v);
            while let Some(Some(v)) = slots.get(printed) {
                if let Err(e) = done(printed, v) {
                    next.store(jobs.len(), Ordering::Relaxed);
                    return Err(e);
                }
                printed += 1;
            }
        }
        Ok(())
    })?;
    Ok(slots.into_iter().flatten().collect())
}

/// Run the cases; returns exit 0 when every case passed, 1 otherwise.
pub fn run(
    opts: &Options,
    cwd: &Path,
    theme: &Theme,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8> {
    let bless = if opts.bless || overwrite_requested() { Some(Checkout::find(cwd)?) } else { None };
    let (bins, _bin_dir) = this_binaries()?;
    let jobs = jobs(opts);
    if jobs.is_empty() {
        return Err(Error::usage("no case matched")
            .with_hint("kit verify (without --case or --lesson) runs them all"));
    }
    let n = opts.jobs.unwrap_or_else(default_jobs);
    let w = |e: std::io::Error| Error::io("stdout", e);
    let verdicts = run_jobs(&jobs, &bins, n, bless.as_ref(), &mut |i, v| {
        let name = jobs[i].name();
        match v.failure {
            None => writeln!(out, "{}      {name}", theme.ok("ok")).map_err(w)?,
            Some(_) => writeln!(out, "{}  {name}", theme.bad("FAILED")).map_err(w)?,
        }
        out.flush().map_err(w)
    })?;
    let limit = if opts.verbose { usize::MAX } else { 40 };
    let mut failed = 0;
    for v in &verdicts {
        let Some((head, detail)) = &v.failure else { continue };
        failed += 1;
        writeln!(out, "\n--- {head}").map_err(w)?;
        let lines: Vec<&str> = detail.lines().collect();
        for line in lines.iter().take(limit) {
            writeln!(out, "    {line}").map_err(w)?;
        }
        if lines.len() > limit {
            writeln!(out, "    … {} more lines (kit verify -v)", lines.len() - limit).map_err(w)?;
        }
        if let Some(p) = &v.blessed {
            writeln!(out, "    blessed: {} now expects this output", p.display()).map_err(w)?;
        }
    }
    if failed > 0 {
        writeln!(out).map_err(w)?;
    }
    if let Some(path) = &opts.junit {
        write_junit(&cwd.join(path), &jobs, &verdicts)?;
    }
    if opts.timings {
        let mut t: Vec<(Duration, String)> =
            verdicts.iter().zip(&jobs).map(|(v, j)| (v.elapsed, j.name())).collect();
        t.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        let sum: Duration = t.iter().map(|x| x.0).sum();
        let e = |e: std::io::Error| Error::io("stderr", e);
        writeln!(err, "timings: {} cases, {:.1}s summed, {n} jobs", t.len(), sum.as_secs_f64())
            .map_err(e)?;
        for (d, name) in t {
            writeln!(err, "{:8.2}s  {name}", d.as_secs_f64()).map_err(e)?;
        }
    }
    writeln!(out, "{} passed, {failed} failed", verdicts.len() - failed).map_err(w)?;
    Ok(if failed == 0 { EXIT_OK } else { EXIT_CHECK_FAILED })
}

/// Write the JUnit XML report of a run to `path`, atomically: one test suite, one test case per
/// case (classname: its kind), a failure's heading and text in its `<failure>`.
///
/// Errors: the file cannot be written.
pub fn write_junit(path: &Path, jobs: &[Job], verdicts: &[Verdict]) -> Result<()> {
    use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
    let mut suite = TestSuite::new("kit verify");
    for (job, v) in jobs.iter().zip(verdicts) {
        let status = match &v.failure {
            None => TestCaseStatus::success(),
            Some((head, detail)) => {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                s.set_message(head.as_str()).set_description(detail.as_str());
                s
            }
        };
        let mut case = TestCase::new(job.name(), status);
        case.set_classname(job.kind()).set_time(v.elapsed);
        suite.add_test_case(case);
    }
    let mut report = Report::new("kit verify");
    report.add_test_suite(suite);
    let xml = report
        .to_string()
        .map_err(|e| Error::internal(format!("cannot write the JUnit report: {e}")))?;
    crate::atomic::write_atomic(path, xml.as_bytes())
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
                jobs.push(Job::StartFails(ex.clone()));
                for p in ex.variants.iter().chain(&ex.cheats) {
                    jobs.push(Job::Proof(ex.clone(), p.clone()));
                }
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
