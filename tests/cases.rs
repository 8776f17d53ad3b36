//! One test per `kit verify` case: every catalogue case (`tests/cases/*.md`), every exercise's
//! solution and start, every lesson, built by `kit_course::verify::jobs` and run by `Job::check_or_bless`,
//! the same code `kit verify` runs, so a failure names its case and the cases run in parallel
//! (`--test-threads`). `cargo test --test cases -- NAME` runs the cases whose name contains NAME;
//! `KIT_GOLDEN=overwrite cargo test --test cases` rewrites the failing ones' expected lines in
//! this checkout, as `kit verify --bless` does.

use std::path::PathBuf;

use kit_course::golden::Binaries;
use kit_course::verify::{Checkout, Options};
use libtest_mimic::{Arguments, Failed, Trial};

fn main() {
    let mut args = Arguments::from_args();
    // The cases mostly wait on their children, as in `kit verify`: as many at once by default.
    args.test_threads = args.test_threads.or(Some(kit_course::verify::default_jobs()));
    let bins = Binaries {
        kit: PathBuf::from(env!("CARGO_BIN_EXE_kit")),
        fake_agent: Some(PathBuf::from(env!("CARGO_BIN_EXE_fake-agent"))),
    };
    let bless = kit_course::verify::overwrite_requested()
        .then(|| Checkout(PathBuf::from(env!("CARGO_MANIFEST_DIR"))));
    let mut jobs = kit_course::verify::jobs(&Options::default());
    // The cases that wait for seconds start first, as `kit verify` starts them.
    jobs.sort_by_key(|j| !j.waits());
    let trials = jobs
        .into_iter()
        .map(|job| {
            let (bins, bless) = (bins.clone(), bless.clone());
            Trial::test(job.name(), move || {
                let v = job.check_or_bless(&bins, bless.as_ref());
                let Some((head, detail)) = v.failure else { return Ok(()) };
                let blessed = v
                    .blessed
                    .map(|p| format!("blessed: {} now expects this output\n", p.display()));
                Err(Failed::from(format!("{head}\n{detail}{}", blessed.unwrap_or_default())))
            })
        })
        .collect();
    libtest_mimic::run(&args, trials).exit();
}
