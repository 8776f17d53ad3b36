//! `kit report [PATH…] [--out FILE] [--open]`: one self-contained HTML page of the loop (when
//! a `longrun/` is around the folder kit runs in) and of the sessions `kit measure` would
//! list, for a person to look at rather than read in a terminal.
//!
//! - **Same figures.** The loop part is [`crate::status::gather`] (what `kit status --json`
//!   prints) and the journal read by [`History`]; the session part is
//!   [`crate::measure::scan_with`] (what `kit measure --json` reads, with each session's API
//!   calls as `--turns` lists them). Numbers are formatted by measure's and status's own
//!   functions. Both documents are embedded whole as JSON islands
//!   (`<script type="application/json" id="kit-measure">`, `id="kit-status"`), so a script or
//!   a test can compare them with the commands' output.
//! - **Self-contained.** Styles, charts and the few lines of script (sorting the session table,
//!   opening every per-call table before printing) are inline; nothing is fetched. The page
//!   reads the same without JavaScript.
//! - **Charts** are drawn by plotters' SVG backend (`charts.rs`), one function per
//!   chart, into inline `<svg>`; plotters is the most used plotting crate in Rust and draws
//!   SVG without fonts or a browser, so each chart is built from the records, not from
//!   coordinates written by hand. The HTML around them is maud templates
//!   (`page.rs`): compiled, and every text interpolated is escaped.
//! - **Fast.** Sessions are read in parallel as for `kit measure`, and each session's article
//!   (charts and per-call table) is rendered on the thread that read it while its calls are in
//!   memory; only the article's text is kept.
//! - **Never fatal on a damaged transcript**: damaged lines are counted and listed on the page
//!   as `kit measure` lists them.
//!
//! Where it is written: `--out FILE` (relative to the folder kit runs in); by default
//! `longrun/.runs/report.html` inside a repository with `longrun/` (ignored by git, beside the
//! iterations' logs), else `kit-report.html` in the current folder. Written atomically
//! ([`crate::atomic`]).

pub(crate) mod charts;
pub(crate) mod page;
pub mod serve;
pub(crate) mod timeline;

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, IoContext, Result, EXIT_OK};
use crate::longrun::history::History;
use crate::longrun::Project;
use crate::measure::{self, MeasureOptions};
use crate::transcript::EngineOptions;
use crate::units;

/// `kit report`'s options.
#[derive(Clone, Debug, Default)]
pub struct ReportOptions {
    /// The folder kit runs in (the loop is looked for from here; relative paths start here).
    pub cwd: PathBuf,
    /// Roots, project folders or transcript files, as for `kit measure` (relative ones from
    /// the process's folder, as there); empty = the default roots.
    pub paths: Vec<PathBuf>,
    /// Where to write the page; None = the default (see the module doc).
    pub out: Option<PathBuf>,
    /// Open it with the desktop's opener afterwards (the URL, when serving).
    pub open: bool,
    /// Serve the page on this loopback address instead of writing it ([`serve`]).
    pub serve: Option<std::net::SocketAddr>,
}

/// The default page name outside a loop project.
pub(crate) const DEFAULT_NAME: &str = "kit-report.html";

/// Run `kit report`: gather, render, write atomically, say where; optionally open it. With
/// `serve`, serve it instead until Ctrl-C ([`serve`]). Returns the exit code (0).
///
/// Errors: a PATH that does not exist (as `kit measure`), a page that cannot be written.
/// An unreadable `longrun/` or damaged transcripts are shown on the page instead.
pub fn run(opts: &ReportOptions, out: &mut dyn Write) -> Result<u8> {
    if let Some(addr) = opts.serve {
        return serve::serve(opts, addr, out);
    }
    let project = Project::discover_initialised(&opts.cwd).ok();
    let (path, shown) = destination(opts, project.as_ref())?;
    let (_, scan, measure_json) = with_page(opts, project.as_ref(), None, |page| {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            crate::atomic::create_dir_all(dir)?;
        }
        crate::atomic::write_atomic_with(&path, |w| page::write_document(page, w))
    })?;
    let stdout = Path::new("stdout");
    summary(out, Some(&shown), &scan, &measure_json, project.is_some()).at(stdout)?;
    if opts.open {
        open(path.as_os_str(), out).at(stdout)?;
    }
    Ok(EXIT_OK)
}

/// Gather the loop's status and journal and the sessions, make the page (with `live` when it
/// is served) and hand it to `emit`. Returns what `emit` returned, the scan and the
/// `kit.measure/1` document (for the summary).
///
/// Errors: a PATH that does not exist (as `kit measure`), and those of `emit`.
fn with_page<T>(
    opts: &ReportOptions,
    project: Option<&Project>,
    live: Option<page::Live>,
    emit: impl FnOnce(&page::Page<'_>) -> Result<T>,
) -> Result<(T, measure::Scan, serde_json::Value)> {
    let status;
    let rows;
    let mut status_json = None;
    let lp = match project {
        None => page::LoopPart::Absent,
        Some(p) => match crate::status::gather(&opts.cwd)
            .and_then(|s| History::read(&p.journal()).map(|h| (s, h)))
        {
            Ok((s, h)) => {
                status = s;
                rows = timeline::rows(&h);
                status_json = serde_json::to_value(&status).ok();
                page::LoopPart::Loop { status: &status, rows: &rows }
            }
            Err(e) => page::LoopPart::Unreadable(e.to_string()),
        },
    };
    // The PATHs exactly as `kit measure` takes them, so that its document is the same.
    let mopts = MeasureOptions { paths: opts.paths.clone(), ..MeasureOptions::default() };
    let (scan, articles) =
        measure::scan_with(&mopts, EngineOptions::standard(), page::session_article)?;
    let measure_json = measure::to_json(&scan);
    let page = page::Page {
        generated: crate::clock::now_rfc3339(),
        looked_in: scan.looked_in.iter().map(|p| p.display().to_string()).collect(),
        lp,
        sessions: &scan.sessions,
        articles: &articles,
        damage: &scan.damage,
        measure: &measure_json,
        status_json,
        live,
    };
    let emitted = emit(&page)?;
    Ok((emitted, scan, measure_json))
}

/// The file to write and how to name it to the user (relative to the folder kit runs in
/// when it is under it).
fn destination(opts: &ReportOptions, project: Option<&Project>) -> Result<(PathBuf, String)> {
    let path = match (&opts.out, project) {
        (Some(p), _) => opts.cwd.join(p),
        (None, Some(p)) => p.dir.join(".runs").join("report.html"),
        (None, None) => opts.cwd.join(DEFAULT_NAME),
    };
    if path.is_dir() {
        return Err(Error::usage(format!("--out {} is a folder", path.display()))
            .with_hint(format!("name a file, e.g. --out {}", path.join(DEFAULT_NAME).display())));
    }
    let shown = match (&opts.out, path.strip_prefix(&opts.cwd)) {
        (Some(p), _) => p.display().to_string(),
        (None, Ok(rel)) => rel.display().to_string(),
        (None, Err(_)) => path.display().to_string(),
    };
    Ok((path, shown))
}

/// What the page holds, in a few lines; the first names where it was written (`shown`), when
/// it was.
fn summary(
    out: &mut dyn Write,
    shown: Option<&str>,
    scan: &measure::Scan,
    doc: &serde_json::Value,
    has_loop: bool,
) -> std::io::Result<()> {
    let t = &doc["totals"];
    if let Some(shown) = shown {
        writeln!(out, "report: {shown}")?;
    }
    if !has_loop {
        writeln!(out, "  loop: none here (no longrun/)")?;
    } else {
        writeln!(out, "  loop: goal, outcome, iterations and last evidence, as kit status")?;
    }
    let n = scan.sessions.len() as u64;
    if n == 0 {
        writeln!(out, "  sessions: none found")?;
    } else {
        writeln!(
            out,
            "  sessions: {} · {} · {} · {} · {}, each charted",
            n,
            units::plural(t["api_calls"].as_u64().unwrap_or(0), "API call"),
            t["cost_usd"].as_f64().map(units::usd).unwrap_or_else(|| "unpriced".into()),
            units::plural(t["compactions"].as_u64().unwrap_or(0), "compaction"),
            units::plural(t["resumes"].as_u64().unwrap_or(0), "resume"),
        )?;
    }
    let d = &scan.damage;
    if d.skipped() > 0 || !d.unreadable.is_empty() {
        writeln!(
            out,
            "  damaged: {} skipped, {} unreadable (listed in the report)",
            units::plural(d.skipped(), "line"),
            units::plural(d.unreadable.len() as u64, "file")
        )?;
    }
    Ok(())
}

/// The desktop's opener for a file: `open` on macOS, `xdg-open` elsewhere when a display is
/// set; None when there is none.
fn opener() -> Option<PathBuf> {
    if cfg!(target_os = "macos") {
        return crate::proc::find_on_path("open");
    }
    let display = ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|k| std::env::var_os(k).is_some_and(|v| !v.is_empty()));
    display.then(|| crate::proc::find_on_path("xdg-open")).flatten()
}

/// Start the opener on `path` (a file or a URL) without waiting for it (a browser may stay
/// open for hours), or say there is none. Neither is an error: the page is there either way.
fn open(path: &std::ffi::OsStr, out: &mut dyn Write) -> std::io::Result<()> {
    let Some(cmd) = opener() else {
        return writeln!(
            out,
            "  --open: no desktop opener here (xdg-open with a display, or open on macOS); open {} in a browser",
            path.to_string_lossy()
        );
    };
    // Not waited for: kit ends right after, and the opener may run the browser in the
    // foreground; the opener is reparented and reaped by init.
    #[allow(clippy::zombie_processes)]
    let started = std::process::Command::new(&cmd)
        .arg(path)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    match started {
        Ok(_) => writeln!(out, "  opened with {}", cmd.display()),
        Err(e) => writeln!(
            out,
            "  --open: {} could not start ({e}); open the file in a browser",
            cmd.display()
        ),
    }
}
