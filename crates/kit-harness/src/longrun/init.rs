//! `kit init [DIR]`: create `longrun/` at the root of a git repository with its seven state files
//! (DESIGN §3), from the templates in `kit/templates/`, and add kit's runtime files to the
//! repository's `.gitignore`.
//!
//! It never overwrites: a file that exists is listed and left alone, a missing one is created
//! (atomically, so a crash leaves either no file or the whole template). Running it twice is
//! harmless, and so is running it on a half-initialised folder.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, IoContext, Result, EXIT_OK};
use crate::longrun::{Project, DIR, STATE_FILES};
use crate::term::Theme;

/// Entries `kit init` adds to the repository's `.gitignore`: runtime files that are not state.
pub const GITIGNORE_ENTRIES: [&str; 5] =
    ["longrun/.lock", "longrun/.frozen/", "longrun/.runs/", "longrun/.hook/", "longrun/PAUSE"];

/// Options of `kit init`.
#[derive(Clone, Debug)]
pub struct InitOptions {
    /// A folder inside the repository to initialise; `None` for the current one.
    pub dir: Option<PathBuf>,
}

/// What `kit init` did, for callers that print it their own way (`kit rehearse`).
#[derive(Clone, Debug, Default)]
pub struct InitReport {
    /// State files created, relative to the root (`longrun/goal.md`).
    pub created: Vec<String>,
    /// State files that already existed and were left alone.
    pub existing: Vec<String>,
    /// Entries added to `.gitignore`.
    pub ignored: Vec<String>,
}

/// Create whatever is missing of `longrun/` in the repository containing `start`.
///
/// Errors: [`Error::Usage`] (exit 2) when `start` is not inside a git repository, with the hint
/// `git init`; [`Error::Io`] naming the file that could not be written.
pub fn init(start: &Path) -> Result<(Project, InitReport)> {
    let project = Project::discover(start).map_err(|_| {
        Error::usage(format!("{} is not inside a git repository", start.display()))
            .with_hint("git init   (then kit init again)")
    })?;
    crate::atomic::create_dir_all(&project.dir)?;
    let mut report = InitReport::default();
    for name in STATE_FILES {
        let text = crate::templates::kit_file(&format!("templates/{name}"))
            .ok_or_else(|| Error::internal(format!("template {name} missing from this build")))?;
        let shown = format!("{DIR}/{name}");
        let path = project.dir.join(name);
        if crate::atomic::create_new_atomic(&path, text.as_bytes())? {
            // The temporary file was private (0600); state files are ordinary project files.
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).at(&path)?;
            report.created.push(shown);
        } else {
            report.existing.push(shown);
        }
    }
    report.ignored = add_gitignore_entries(&project.root.join(".gitignore"))?;
    Ok((project, report))
}

/// Run `kit init` and print what it did. Exit 0 whether it created files or all existed.
pub fn run(cwd: &Path, opts: &InitOptions, theme: &Theme, out: &mut dyn Write) -> Result<u8> {
    let start = match &opts.dir {
        Some(d) => cwd.join(d),
        None => cwd.to_path_buf(),
    };
    if !start.is_dir() {
        return Err(Error::usage(format!("{}: no such folder", start.display()))
            .with_hint("kit init DIR takes a folder inside a git repository"));
    }
    let (project, report) = init(&start)?;
    let stdout = Path::new("stdout");
    writeln!(out, "{} {}", theme.bold("longrun/ in"), project.root.display()).at(stdout)?;
    for name in STATE_FILES {
        let shown = format!("{DIR}/{name}");
        let purpose = purpose(name);
        if report.created.contains(&shown) {
            writeln!(out, "  {} {shown:<22} {purpose}", theme.ok("created")).at(stdout)?;
        } else {
            writeln!(out, "  {} {shown:<22} left alone", theme.warn("exists ")).at(stdout)?;
        }
    }
    if report.ignored.is_empty() {
        writeln!(out, ".gitignore already ignores kit's runtime files").at(stdout)?;
    } else {
        writeln!(out, ".gitignore: added {}", report.ignored.join(", ")).at(stdout)?;
    }
    if report.created.is_empty() {
        writeln!(out, "already initialised: all seven files exist; nothing was overwritten")
            .at(stdout)?;
    } else if !report.existing.is_empty() {
        writeln!(
            out,
            "created {} missing {}; the {} existing left unchanged",
            report.created.len(),
            if report.created.len() == 1 { "file" } else { "files" },
            report.existing.len()
        )
        .at(stdout)?;
    }
    writeln!(out, "{NEXT_STEP}").at(stdout)?;
    Ok(EXIT_OK)
}

/// Append the missing [`GITIGNORE_ENTRIES`] to `path` (created if absent); returns those added.
/// An entry counts as present when a line equals it, with or without a leading `/`.
pub fn add_gitignore_entries(path: &Path) -> Result<Vec<String>> {
    let old = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(Error::io(path, e)),
    };
    let present =
        |entry: &str| old.lines().map(str::trim).any(|l| l.trim_start_matches('/') == entry);
    let missing: Vec<String> =
        GITIGNORE_ENTRIES.iter().filter(|e| !present(e)).map(|e| e.to_string()).collect();
    if missing.is_empty() {
        return Ok(missing);
    }
    let mut text = old.clone();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str("# kit: runtime files of longrun/ (not state; see kit init)\n");
    for e in &missing {
        text.push_str(e);
        text.push('\n');
    }
    crate::atomic::write_atomic(path, text.as_bytes())?;
    Ok(missing)
}

/// One line on what each state file is for and who writes it.
fn purpose(name: &str) -> &'static str {
    match name {
        "goal.md" => "the goal as a contract (you write it)",
        "config.toml" => "caps, timeouts, agent (you edit it; defaults inside)",
        "frozen.toml" => "frozen files (kit freeze writes it)",
        "progress.md" => "done / remaining / next action (the agent writes it)",
        "decisions.md" => "decisions and why (the agent appends)",
        "handoff.md" => "the last handoff (kit handoff save writes it)",
        "journal.jsonl" => "event log (kit only)",
        _ => "",
    }
}

const NEXT_STEP: &str = "next: edit longrun/goal.md (end state, criteria, constraints, budget),\n\
     \x20     freeze the tests your criteria run (kit freeze tests), then kit goal check";
