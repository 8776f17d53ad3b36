//! `kit rehearse` (DESIGN §14): the one-minute tour. It builds a sandbox holding the embedded
//! sample project ([`sample`]), then runs the real commands — `kit init`, `kit goal check`,
//! `kit freeze`, `kit loop` with the fake agent, `kit status`, `kit measure` — as subprocesses of
//! this very binary, narrating what each step proves and showing their output indented.
//!
//! Nothing touches the user's real files: the sandbox has its own `HOME` and `CLAUDE_CONFIG_DIR`
//! (so the fake agent's transcripts land inside it) and its own git identity.
//!
//! The hook scenarios (`bands`, `forged`) rehearse `kit hook claude` instead of the loop
//! ([`hooked`]). `--all` runs every scenario in its own sandbox and prints, scenario by scenario,
//! the expected outcome next to the actual one, judged from exit statuses, the journal
//! (`longrun/journal.jsonl`, whose events `kit loop` and `kit hook claude` document), the files
//! and `/proc`; it exits 1 if any differs.

mod hooked;
mod plan;
pub mod sample;
mod scenarios;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::{Error, IoContext, Result, EXIT_CHECK_FAILED, EXIT_OK};
use crate::term::Theme;

pub use plan::SCENARIOS;

/// The fake agent's program name. `kit loop` looks for it beside `kit`, else on `PATH`; the
/// `kit` binary itself acts as the fake agent when started under this name.
pub const FAKE_AGENT: &str = "fake-agent";

/// What `kit rehearse` was asked to do (from the command line, validated).
#[derive(Clone, Debug)]
pub struct Options {
    /// The scenario to run (default `finish`); ignored with `all`.
    pub scenario: String,
    /// Run every scenario and compare expected with actual outcomes.
    pub all: bool,
    /// Build the sandbox in this folder (absolute, empty or missing) and keep it.
    pub keep: Option<PathBuf>,
}

/// Run the rehearsal, narrating to `out`. Returns 0 when every outcome is the expected one,
/// 1 otherwise.
///
/// Errors: [`Error::Usage`] for an unknown scenario or a `--keep` folder that is not empty;
/// [`Error::Internal`]/[`Error::Io`] when the sandbox cannot be built or a command cannot start.
pub fn run(opts: &Options, theme: &Theme, out: &mut dyn Write) -> Result<u8> {
    let exe = std::env::current_exe().map_err(|e| Error::io("the kit executable", e))?;
    let (root, tmp) = sandbox_root(opts.keep.as_deref())?;
    let mut n = Narrator { out, theme: theme.clone(), quiet: opts.all };
    let code = if opts.all {
        run_all(&exe, &root, &mut n)?
    } else {
        let plan = plan::plan(&opts.scenario).ok_or_else(|| unknown(&opts.scenario))?;
        n.line(&format!(
            "kit rehearse: {} on a sample project, with the fake agent `{}`",
            if plan.hook { "the context-band hook" } else { "a real loop" },
            plan.name
        ))?;
        n.line(&format!("sandbox: {}", root.display()))?;
        let verdict = rehearse_one(&exe, &root, &plan, &mut n)?;
        n.blank()?;
        let mark =
            if verdict.ok { n.theme.ok("as expected") } else { n.theme.bad("NOT as expected") };
        n.line(&format!("outcome: {} ({mark})", verdict.actual))?;
        n.line(&format!("expected: {}", plan.expected))?;
        u8::from(!verdict.ok)
    };
    match tmp {
        Some(t) => drop(t),
        None => {
            let project = if opts.all { root.join("finish/project") } else { root.join("project") };
            n.line(&format!("the sandbox is kept: cd {} && kit status", project.display()))?;
        }
    }
    Ok(code)
}

/// Rehearse `plan` in a new sandbox under `root`: a hook scenario through [`hooked`], a loop
/// scenario through [`scenarios`].
fn rehearse_one(
    exe: &Path,
    root: &Path,
    plan: &plan::Plan,
    n: &mut Narrator<'_>,
) -> Result<plan::Verdict> {
    if plan.hook {
        hooked::rehearse(exe, root, plan, n)
    } else {
        scenarios::rehearse(exe, root, plan, n)
    }
}

fn run_all(exe: &Path, root: &Path, n: &mut Narrator<'_>) -> Result<u8> {
    n.line("kit rehearse --all: every fake-agent scenario in its own sandbox")?;
    n.line(&format!("sandboxes: {}", root.display()))?;
    n.blank()?;
    let mut rows = Vec::new();
    for name in SCENARIOS {
        let plan = plan::plan(name).ok_or_else(|| unknown(name))?;
        let dir = root.join(name);
        crate::atomic::create_dir_all(&dir)?;
        let started = Instant::now();
        let verdict = rehearse_one(exe, &dir, &plan, n)?;
        let mark = if verdict.ok { n.theme.ok("ok") } else { n.theme.bad("DIFFERS") };
        n.line(&format!(
            "{name:<9} {mark} ({})",
            crate::units::format_duration(started.elapsed())
        ))?;
        rows.push((plan, verdict));
    }
    n.blank()?;
    n.line("scenario  expected")?;
    n.line("          actual")?;
    let mut differ = 0;
    for (plan, v) in &rows {
        let mark = if v.ok { n.theme.ok("✓") } else { n.theme.bad("✗") };
        differ += usize::from(!v.ok);
        n.line(&format!("{:<9} {}", plan.name, plan.expected))?;
        n.line(&format!("        {mark} {}", v.actual))?;
    }
    n.blank()?;
    if differ == 0 {
        n.line(&format!("{} of {} scenarios as expected", rows.len(), rows.len()))?;
        Ok(EXIT_OK)
    } else {
        n.line(&format!("{differ} of {} scenarios differ from what was expected", rows.len()))?;
        Ok(EXIT_CHECK_FAILED)
    }
}

fn unknown(name: &str) -> Error {
    Error::usage(format!("no fake-agent scenario `{name}`; there are: {}", SCENARIOS.join(", ")))
        .with_hint("kit rehearse --scenario finish")
}

/// The sandbox folder: `--keep DIR` (must be empty or missing; kept), else a temporary folder
/// removed at the end.
fn sandbox_root(keep: Option<&Path>) -> Result<(PathBuf, Option<tempfile::TempDir>)> {
    match keep {
        Some(dir) => {
            if dir.exists() {
                let mut entries = std::fs::read_dir(dir).at(dir)?;
                if entries.next().is_some() {
                    return Err(Error::usage(format!(
                        "{} is not empty; kit rehearse keeps its sandbox only in a new folder",
                        dir.display()
                    ))
                    .with_hint("kit rehearse --keep NEW_DIR"));
                }
            }
            crate::atomic::create_dir_all(dir)?;
            let abs = dir.canonicalize().at(dir)?;
            Ok((abs, None))
        }
        None => {
            let t = tempfile::Builder::new()
                .prefix("kit-rehearse-")
                .tempdir()
                .map_err(|e| Error::io("a temporary folder", e))?;
            let abs = t.path().canonicalize().at(t.path())?;
            Ok((abs, Some(t)))
        }
    }
}

/// Prints the tour: numbered steps, commands and their indented output. In `quiet` mode
/// (`--all`) only the lines the caller prints with [`Narrator::line`] appear.
pub(crate) struct Narrator<'a> {
    out: &'a mut dyn Write,
    theme: Theme,
    quiet: bool,
}

impl Narrator<'_> {
    fn io(e: std::io::Error) -> Error {
        Error::io("stdout", e)
    }

    /// A line that is always printed.
    pub(crate) fn line(&mut self, s: &str) -> Result<()> {
        writeln!(self.out, "{s}").map_err(Self::io)
    }

    fn blank(&mut self) -> Result<()> {
        writeln!(self.out).map_err(Self::io)
    }

    /// A numbered step: what it does and what it proves.
    pub(crate) fn step(&mut self, n: usize, total: usize, title: &str, proves: &str) -> Result<()> {
        if self.quiet {
            return Ok(());
        }
        let head = self.theme.bold(&format!("[{n}/{total}] {title}"));
        writeln!(self.out, "\n{head}").map_err(Self::io)?;
        writeln!(self.out, "      {}", self.theme.dim(proves)).map_err(Self::io)
    }

    /// A remark under the current step.
    pub(crate) fn note(&mut self, s: &str) -> Result<()> {
        if self.quiet {
            return Ok(());
        }
        for l in s.lines() {
            writeln!(self.out, "      {l}").map_err(Self::io)?;
        }
        Ok(())
    }

    /// A command that was run, its output indented and its exit status when not 0.
    pub(crate) fn ran(&mut self, shown: &str, r: &Ran) -> Result<()> {
        if self.quiet {
            return Ok(());
        }
        writeln!(self.out, "      $ {shown}").map_err(Self::io)?;
        for l in r.output.trim_end().lines() {
            writeln!(self.out, "        {l}").map_err(Self::io)?;
        }
        match r.code {
            Some(0) => Ok(()),
            Some(c) => writeln!(self.out, "        (exit {c})").map_err(Self::io),
            None => writeln!(self.out, "        (killed)").map_err(Self::io),
        }
    }
}

/// The outcome of one kit command run by the rehearsal.
#[derive(Clone, Debug)]
pub(crate) struct Ran {
    /// Exit status (`None`: killed by a signal or the rehearsal's own time limit).
    pub code: Option<i32>,
    /// stdout and stderr, merged in order.
    pub output: String,
}

impl Ran {
    /// True when the command does not exist in this build (another part of kit not landed).
    pub(crate) fn missing(&self) -> bool {
        self.code == Some(1) && self.output.contains("is not in this build")
    }
}

/// One sandbox: the project (a git repository) and a `HOME` beside it.
pub(crate) struct Sandbox {
    /// The git repository the loop works on.
    pub project: PathBuf,
    /// `HOME` and `CLAUDE_CONFIG_DIR`'s parent for every command.
    pub home: PathBuf,
    /// The environment every command gets on top of the inherited one.
    pub env: Vec<(String, String)>,
    /// The kit binary.
    pub exe: PathBuf,
    /// The fake agent: the `fake-agent` binary beside `exe`, else a link to `exe` under that name.
    pub fake_agent: PathBuf,
}

/// Longest a single command of the rehearsal may run before it is killed.
const COMMAND_LIMIT: Duration = Duration::from_secs(300);

impl Sandbox {
    /// Folders and environment for a sandbox under `root`.
    pub(crate) fn new(exe: &Path, root: &Path) -> Result<Sandbox> {
        let project = root.join("project");
        let home = root.join("home");
        crate::atomic::create_dir_all(&project)?;
        crate::atomic::create_dir_all(&home)?;
        let s = |p: &Path| p.to_string_lossy().into_owned();
        let link_dir = fake_agent_link(exe, root)?;
        let fake_agent = link_dir
            .as_deref()
            .or_else(|| exe.parent())
            .map_or_else(|| PathBuf::from(FAKE_AGENT), |d| d.join(FAKE_AGENT));
        let mut path_dirs: Vec<PathBuf> = link_dir.into_iter().collect();
        path_dirs.extend(exe.parent().map(Path::to_path_buf));
        // kit's handoff key (crate::handoff::key) stays in the sandbox too.
        let mut env = crate::sandbox::environment(
            &home,
            path_dirs,
            ("Kit Rehearsal", "rehearsal@kit.invalid"),
        );
        env.push(("KIT_REHEARSAL_SANDBOX".into(), s(root)));
        if let Some(base) = crate::clock::fake_base() {
            // Under a fake clock the commits (and so their ids) are the same on every machine.
            let date = crate::clock::format_ts(base);
            env.push(("GIT_AUTHOR_DATE".into(), date.clone()));
            env.push(("GIT_COMMITTER_DATE".into(), date));
        }
        Ok(Sandbox { project, home, env, exe: exe.to_path_buf(), fake_agent })
    }

    /// Step 1 of every rehearsal, numbered out of `total`: lay out the sample project and
    /// commit it, saying what it `proves`.
    pub(crate) fn sample_step(
        &self,
        n: &mut Narrator<'_>,
        total: usize,
        proves: &str,
    ) -> Result<()> {
        n.step(1, total, "The sample project", proves)?;
        let files = sample::write_sample_files(&self.project)?;
        let commit = sample::commit_sample_project(&self.project, &self.env)?;
        n.note(&format!(
            "wrote {} files in {} and committed them ({})",
            files.len(),
            self.project.display(),
            &commit[..commit.len().min(7)]
        ))
    }

    /// A `kit ARGS` command in the project with the sandbox environment.
    pub(crate) fn kit_command(&self, args: &[&str]) -> Command {
        self.command(&self.exe, args)
    }

    /// A `fake-agent ARGS` command in the project with the sandbox environment (its invocation
    /// number from its own counter, not from a loop).
    pub(crate) fn fake_agent_command(&self, args: &[&str]) -> Command {
        self.command(&self.fake_agent, args)
    }

    /// `program ARGS` in the project with the sandbox environment, without a loop's variables.
    fn command(&self, program: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(program);
        c.args(args)
            .current_dir(&self.project)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .env_remove("KIT_FAKE_SCENARIO")
            .env_remove("KIT_ITERATION")
            .env_remove("KIT_FAKE_INVOCATION")
            .stdin(Stdio::null());
        c
    }

    /// Run `kit ARGS` to the end (at most [`COMMAND_LIMIT`]).
    pub(crate) fn kit(&self, args: &[&str]) -> Result<Ran> {
        Running::start(self.kit_command(args))?.wait(COMMAND_LIMIT)
    }

    /// The events of `longrun/journal.jsonl` (empty when it does not exist yet).
    pub(crate) fn journal(&self) -> Vec<crate::longrun::journal::Entry> {
        let path = self.project.join("longrun/journal.jsonl");
        crate::longrun::journal::read(&path).map(|r| r.entries).unwrap_or_default()
    }

    /// The fake agent's transcripts in this sandbox, sorted.
    pub(crate) fn transcripts(&self) -> Vec<PathBuf> {
        let mut found = Vec::new();
        let projects = self.home.join(".claude/projects");
        for dir in std::fs::read_dir(&projects).into_iter().flatten().flatten() {
            for f in std::fs::read_dir(dir.path()).into_iter().flatten().flatten() {
                let p = f.path();
                if p.extension().is_some_and(|e| e == "jsonl") {
                    found.push(p);
                }
            }
        }
        found.sort();
        found
    }
}

/// Make sure `kit loop` finds a fake agent: when no `fake-agent` binary sits beside `exe` (as
/// after `cargo run`, which builds only `kit`), link `<root>/bin/fake-agent` to `exe` and return
/// that folder to put first on `PATH`.
fn fake_agent_link(exe: &Path, root: &Path) -> Result<Option<PathBuf>> {
    if exe.parent().is_some_and(|d| d.join(FAKE_AGENT).is_file()) {
        return Ok(None);
    }
    let bin = root.join("bin");
    crate::atomic::create_dir_all(&bin)?;
    let link = bin.join(FAKE_AGENT);
    std::os::unix::fs::symlink(exe, &link).at(&link)?;
    Ok(Some(bin))
}

/// A kit command running in the background, its merged output collected ([`crate::proc`]).
pub(crate) struct Running(crate::proc::Running);

/// How long the output may stay open after the command ended (a leftover process holding the
/// pipe must not stall the rehearsal; the checks report such leftovers).
const DRAIN_LIMIT: Duration = Duration::from_secs(5);

impl Running {
    /// Start `cmd` with stdout and stderr on one pipe.
    pub(crate) fn start(mut cmd: Command) -> Result<Running> {
        let how = crate::proc::Spawn { merge: true, ..Default::default() };
        crate::proc::spawn(&mut cmd, how).at(Path::new("kit")).map(Running)
    }

    /// The process id.
    pub(crate) fn pid(&self) -> u32 {
        self.0.id()
    }

    /// Wait for the end (killing it after `limit`) and collect the output.
    pub(crate) fn wait(self, limit: Duration) -> Result<Ran> {
        let f = self.0.wait(limit, Some(DRAIN_LIMIT)).at(Path::new("kit"))?;
        Ok(Ran { code: f.code, output: String::from_utf8_lossy(&f.stdout).into_owned() })
    }
}
