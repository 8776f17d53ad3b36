//! The learner's commands: `kit exercise list|start|check|hint|reset|solution` and `kit lesson`.
//! Every command works without a terminal; a terminal only adds a progress bar, a pager and a
//! confirmation prompt.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::diagnose::Cause;
use super::exercise::{self, Exercise};
use super::lab::{self, Pass, Progress};
use super::lesson::{self, Lesson};
use super::stamp;
use crate::error::{Error, IoContext, Result, EXIT_CHECK_FAILED, EXIT_OK};
use crate::sandbox::{self as marker, Found};
use crate::term::Theme;

fn w(e: std::io::Error) -> Error {
    Error::io("stdout", e)
}

/// The whole course, loaded from the binary.
pub struct Course {
    /// Lessons by number.
    pub lessons: Vec<Lesson>,
    /// Exercises by number.
    pub exercises: Vec<Exercise>,
}

impl Course {
    /// Load lessons and exercises.
    pub fn load() -> Result<Course> {
        Ok(Course { lessons: lesson::load_all()?, exercises: exercise::load_all()? })
    }
}

/// The lab for an exercise command run in `cwd`; with no lab here, a note on `err` (stderr)
/// names the lab last used (the command then works on `./kit-lab`, as asked).
fn lab_noting_the_last(cwd: &Path, err: &mut dyn Write) -> PathBuf {
    let (lab, origin) = lab::locate(cwd);
    if origin == lab::Origin::New {
        if let Some(line) = lab::where_line(&lab, origin) {
            let _ = writeln!(err, "note: {line}");
        }
    }
    lab
}

/// The lab for a command run in `cwd` that lays something out in it (`start`, `next`, `kit
/// lesson N --lab`): with no lab here, it makes `./kit-lab`, and a note on `err` (stderr) says
/// so and names the lab used before ([`lab::made_line`]), rather than "no lab in this folder".
fn lab_made_noting_the_last(cwd: &Path, err: &mut dyn Write) -> PathBuf {
    let (lab, origin) = lab::locate(cwd);
    if origin == lab::Origin::New {
        if let Some(line) = lab::made_line(&lab) {
            let _ = writeln!(err, "note: {line}");
        }
    }
    lab
}

/// Where exercise `ex`'s sandbox is in `lab`: recorded by `start`, else `<lab>/NN-slug`.
fn sandbox_of(progress: &Progress, lab: &Path, ex: &Exercise) -> PathBuf {
    progress
        .exercises
        .get(&ex.slug)
        .and_then(|e| e.dir.clone())
        .unwrap_or_else(|| lab.join(&ex.slug))
}

/// Make `p` absolute against `cwd` (without resolving links).
fn absolute(cwd: &Path, p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        cwd.join(p)
    }
}

/// `kit exercise start N [--into DIR]`: lay the sandbox out, record it, print the task.
pub fn start(
    cwd: &Path,
    n: u32,
    into: Option<&Path>,
    theme: &Theme,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8> {
    let course = Course::load()?;
    let ex = exercise::find(&course.exercises, n)?;
    let lab = lab_made_noting_the_last(cwd, err);
    let folder = into.map(|d| absolute(cwd, d)).unwrap_or_else(|| lab.join(&ex.slug));
    if folder.exists() && std::fs::read_dir(&folder).at(&folder)?.next().is_some() {
        return Err(Error::usage(format!(
            "exercise {n} is already laid out in {}",
            folder.display()
        ))
        .with_hint(format!(
            "kit exercise task {n} shows its task again; kit exercise check {n} checks it; kit exercise reset {n} starts it again"
        )));
    }
    lay_out(ex, &lab, &folder, err)?;
    print_task(ex, &folder, true, theme, out)?;
    Ok(EXIT_OK)
}

/// `kit exercise task [N]`: exercise N's task again (N defaults as for `check`), with where its
/// sandbox is, or where `start` will lay it out.
pub fn task(
    cwd: &Path,
    n: Option<u32>,
    theme: &Theme,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8> {
    let Picked { lab, progress, ex, .. } = pick(cwd, n, "task", err)?;
    let folder = sandbox_of(&progress, &lab, &ex);
    print_task(&ex, &folder, folder.is_dir(), theme, out)?;
    Ok(EXIT_OK)
}

/// `kit exercise next`: the first exercise not passed yet, in course order: its task when it is
/// laid out already, else laid out as `start` does.
pub fn next(cwd: &Path, theme: &Theme, out: &mut dyn Write, err: &mut dyn Write) -> Result<u8> {
    let course = Course::load()?;
    let lab = lab_made_noting_the_last(cwd, err);
    let progress = Progress::load(&lab)?;
    progress.print_notes(err);
    let Some(ex) = course.exercises.iter().find(|e| !progress.passed(&e.slug)) else {
        writeln!(out, "every exercise has passed: the course is done").map_err(w)?;
        return Ok(EXIT_OK);
    };
    let folder = sandbox_of(&progress, &lab, ex);
    if folder.exists() && std::fs::read_dir(&folder).at(&folder)?.next().is_some() {
        writeln!(
            out,
            "exercise {} is the first not passed yet; it is laid out already:",
            ex.meta.id
        )
        .map_err(w)?;
        print_task(ex, &folder, true, theme, out)?;
        return Ok(EXIT_OK);
    }
    lay_out(ex, &lab, &folder, err)?;
    print_task(ex, &folder, true, theme, out)?;
    Ok(EXIT_OK)
}

/// Lay `ex` out in `folder` and record it as started (not passed: a pass earned before stays
/// as `earned`, which keeps the solution unlocked).
fn lay_out(ex: &Exercise, lab: &Path, folder: &Path, err: &mut dyn Write) -> Result<()> {
    let (bins, _bin_dir) = crate::golden::this_binaries()?;
    let key = stamp::key()?;
    std::fs::create_dir_all(folder).at(folder)?;
    let mut env = crate::golden::golden_env(folder, &bins);
    let seed = match std::env::var(exercise::SEED_VAR) {
        Ok(s) if !s.is_empty() => s,
        _ => exercise::new_seed()?,
    };
    env.push((exercise::SEED_VAR.into(), seed));
    exercise::build_sandbox(ex, folder, &env, &key, &key, false)?;
    let mut progress = Progress::load(lab)?;
    progress.print_notes(err);
    let e = progress.entry(&ex.slug);
    e.dir = Some(folder.to_path_buf());
    e.started = Some(crate::clock::now_rfc3339());
    e.passed = None;
    e.failed_since_pass = None;
    progress.save(lab)
}

/// The task of `ex`, its sandbox `folder` (`laid_out`: it exists; else where `start` puts it)
/// and how to check it.
fn print_task(
    ex: &Exercise,
    folder: &Path,
    laid_out: bool,
    theme: &Theme,
    out: &mut dyn Write,
) -> Result<()> {
    let m = &ex.meta;
    let minutes = m.minutes.map(|x| format!(", {x} min")).unwrap_or_default();
    writeln!(
        out,
        "{}  (lesson {}{minutes})",
        theme.bold(&format!("exercise {:02}: {}", m.id, m.title)),
        m.lesson
    )
    .map_err(w)?;
    if laid_out {
        writeln!(out, "sandbox: {}", folder.display()).map_err(w)?;
    } else {
        writeln!(
            out,
            "sandbox: not laid out yet (kit exercise start {} lays it out in {})",
            m.id,
            folder.display()
        )
        .map_err(w)?;
    }
    writeln!(out).map_err(w)?;
    writeln!(out, "{}", m.task.trim_end()).map_err(w)?;
    writeln!(out).map_err(w)?;
    if !m.edit.is_empty() {
        writeln!(out, "edit: {}", m.edit.join(", ")).map_err(w)?;
    }
    writeln!(out, "check it: kit exercise check {}", m.id).map_err(w)?;
    if matches!(m.sandbox.as_str(), "transcripts" | "rehearsal") || m.task.contains("kit loop") {
        // Its sessions (recorded ones, or the fake agent's) live in the sandbox's .home, where
        // the check's `kit measure` reads them; the learner's shell must look there too. A task
        // that runs `kit loop` in any sandbox needs it as well: the fake agents write their
        // transcripts under CLAUDE_CONFIG_DIR, and without it they land among the learner's own.
        let home = folder.join(".home");
        writeln!(
            out,
            "its sessions are in {0}: in your shell, first: export CLAUDE_CONFIG_DIR={0}/.claude CODEX_HOME={0}/.codex (unset them when done)",
            home.display()
        )
        .map_err(w)?;
    }
    Ok(())
}

/// Which exercise's sandbox holds `cwd`: the nearest genuine marker above it, else the
/// sandbox folders the progress file records.
fn exercise_here<'a>(
    course: &'a Course,
    progress: &Progress,
    lab: &Path,
    cwd: &Path,
    key: &[u8],
) -> Option<&'a Exercise> {
    if let Some((_, id)) = marker::find_up(cwd, Some(key)) {
        return course.exercises.iter().find(|e| e.meta.id == id);
    }
    let here = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    course.exercises.iter().find(|ex| {
        let dir = sandbox_of(progress, lab, ex);
        let dir = dir.canonicalize().unwrap_or(dir);
        here.starts_with(&dir)
    })
}

/// What `check`, `hint`, `task`, `watch` and `solution` start from: the course, the lab, the course key, the lab's progress
/// (its notes printed) and the exercise — number `n`, else the one whose sandbox holds `cwd`.
struct Picked {
    course: Course,
    lab: PathBuf,
    key: Vec<u8>,
    progress: Progress,
    ex: Exercise,
}

/// See [`Picked`]; `verb` names the command in the hint when no exercise is found.
///
/// Errors: no such exercise, or none given outside a sandbox ([`Error::Usage`]); progress or key
/// unreadable.
fn pick(cwd: &Path, n: Option<u32>, verb: &str, err: &mut dyn Write) -> Result<Picked> {
    let course = Course::load()?;
    let lab = lab_noting_the_last(cwd, err);
    let key = stamp::key()?;
    let progress = Progress::load_with(&lab, Some(&key))?;
    progress.print_notes(err);
    let ex = match n {
        Some(n) => exercise::find(&course.exercises, n)?,
        None => exercise_here(&course, &progress, &lab, cwd, &key).ok_or_else(|| {
            Error::usage("which exercise? this folder is not inside an exercise's sandbox")
                .with_hint(format!("kit exercise {verb} N (kit exercise list shows them)"))
        })?,
    }
    .clone();
    Ok(Picked { course, lab, key, progress, ex })
}

/// `kit exercise check [N] [--json]`: run the golden in a copy of the learner's sandbox.
/// Exit 0 on a pass, 1 on a mismatch, 2 on a usage error.
pub fn check(
    cwd: &Path,
    n: Option<u32>,
    json: bool,
    theme: &Theme,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8> {
    let Picked { course, lab, key, mut progress, ex } = pick(cwd, n, "check", err)?;
    let ex = &ex;
    let id = ex.meta.id;
    let folder = sandbox_of(&progress, &lab, ex);
    if !folder.is_dir() {
        return Err(Error::usage(format!(
            "exercise {id} is not started in this lab ({} does not exist)",
            folder.display()
        ))
        .with_hint(not_started_hint(id, "check", &lab)));
    }
    let seed = own_sandbox(ex, &folder, &key, &lab)?;
    let (bins, _bin_dir) = crate::golden::this_binaries()?;
    let digest = stamp::edited_digest(&folder, &ex.meta.edit)?;
    let outcome = {
        let line = crate::term::StepLine::on_stderr();
        let show = |n, total, cmd: &str| line.show(n, total, cmd);
        super::check::check_copy_with_progress(ex, &folder, seed.as_deref(), &bins, &show)?
    };
    let passed = outcome.failure.is_none();
    if passed {
        let pass = Pass::new(&key, id, &ex.slug, &lab, &folder, digest);
        let e = progress.entry(&ex.slug);
        e.started.get_or_insert_with(|| pass.time.clone());
        e.earned.get_or_insert_with(|| pass.clone());
        e.passed = Some(pass);
        e.failed_since_pass = None;
        e.dir.get_or_insert(folder.clone());
        progress.save(&lab)?;
    } else if progress.passed(&ex.slug) {
        // The pass was of the sandbox as it was; this one fails: it is no longer passed (the
        // solution stays unlocked by `earned`).
        let e = progress.entry(&ex.slug);
        e.passed = None;
        e.failed_since_pass = Some(crate::clock::now_rfc3339());
        progress.save(&lab)?;
    }
    // Next: the first exercise of this lesson not yet passed, else the first not passed after
    // this one, else from the start: a learner who skipped one of the lesson's exercises is sent
    // back to it, and a lesson is called done only when every exercise of it has passed.
    let unpassed = |e: &&Exercise| e.meta.id != id && !progress.passed(&e.slug);
    let next = course
        .exercises
        .iter()
        .filter(unpassed)
        .find(|e| e.meta.lesson == ex.meta.lesson)
        .or_else(|| course.exercises.iter().filter(unpassed).find(|e| e.meta.id > id))
        .or_else(|| course.exercises.iter().find(unpassed));
    // The hint ladder climbs one rung at a time: a check shows the rung the failing step's hint
    // fits when the learner has seen the rungs below it, else the next unseen one, and names the
    // command that climbs on.
    let seen = progress.exercises.get(&ex.slug).map_or(0, |e| e.hints_seen);
    let cause = outcome.failure.as_ref().map(|f| super::diagnose::cause(ex, &folder, f));
    // A failure that is not the work the task asks for gets no rung of the ladder: its hints
    // are about that work.
    let blames_work = matches!(cause, Some(Cause::Work | Cause::Stopped));
    let fits =
        outcome.failure.as_ref().filter(|_| blames_work).map(|f| ex.level_for_step(&f.command));
    let hint = fits.and_then(|k| ex.hint(k.min(seen + 1)));
    let solution_seen = progress.solution_seen(&ex.slug);
    if json {
        let v = serde_json::json!({
            "schema": "kit.check/1",
            "exercise": id,
            "slug": ex.slug,
            "title": ex.meta.title,
            "passed": passed,
            "failure": outcome.failure.as_ref().map(|f| serde_json::json!({
                "file": "golden.md",
                "line": f.line,
                "command": f.command,
                "detail": f.detail,
            })),
            "cause": cause.as_ref().map(|c| serde_json::json!({
                "kind": c.kind(), "text": c.text(ex),
            })),
            "hint": hint.map(|(k, t)| serde_json::json!({
                "level": k, "text": t, "fits_level": fits, "more": format!("kit exercise hint {id}"),
            })),
            "solution_seen": solution_seen,
            "next": next.map(|e| e.meta.id),
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&v).unwrap_or_default()).map_err(w)?;
        return Ok(if passed { EXIT_OK } else { EXIT_CHECK_FAILED });
    }
    let Some(f) = outcome.failure else {
        let seen = if solution_seen { "  (solution seen before passing)" } else { "" };
        writeln!(out, "{}  {id:02} {}{seen}", theme.ok("PASS"), ex.meta.title).map_err(w)?;
        match next {
            Some(nx) if nx.meta.lesson > ex.meta.lesson => {
                writeln!(
                    out,
                    "lesson {} done; next: kit lesson {}",
                    ex.meta.lesson, nx.meta.lesson
                )
                .map_err(w)?;
            }
            Some(nx) if sandbox_of(&progress, &lab, nx).is_dir() => writeln!(
                out,
                "next: kit exercise task {0} (started, not passed yet), then kit exercise check {0}",
                nx.meta.id
            )
            .map_err(w)?,
            Some(nx) => writeln!(out, "next: kit exercise start {}", nx.meta.id).map_err(w)?,
            None if course.exercises.last().is_some_and(|l| l.meta.id == id) => {
                writeln!(out, "that was the last exercise: the course is done").map_err(w)?
            }
            None => writeln!(out, "every exercise has passed: the course is done").map_err(w)?,
        }
        return Ok(EXIT_OK);
    };
    writeln!(out, "{}  {id:02} {}", theme.bad("FAIL"), ex.meta.title).map_err(w)?;
    writeln!(out, "first differing step: golden.md:{}  $ {}", f.line, f.command).map_err(w)?;
    for line in f.detail.lines() {
        writeln!(out, "  {line}").map_err(w)?;
    }
    if let Some(text) = cause.as_ref().and_then(|c| c.text(ex)) {
        writeln!(out, "{text}").map_err(w)?;
    }
    if let Some((k, text)) = hint {
        let total = ex.meta.hints.len();
        writeln!(out, "hint {k}/{total}: {}", text.trim()).map_err(w)?;
        match fits {
            Some(f) if f > k => writeln!(
                out,
                "more: kit exercise hint {id} shows hint {}/{total} (hint {f}/{total} is the one for this step; the ladder climbs one hint at a time)",
                k + 1
            )
            .map_err(w)?,
            _ if k < total => {
                writeln!(out, "more: kit exercise hint {id} shows hint {}/{total}", k + 1)
                    .map_err(w)?
            }
            _ => {}
        }
        if progress.exercises.contains_key(&ex.slug) {
            let e = progress.entry(&ex.slug);
            e.hints_seen = e.hints_seen.max(k);
            progress.save(&lab)?;
        }
    }
    Ok(EXIT_CHECK_FAILED)
}

/// Refuse to check `folder` for `ex` unless it holds `ex`'s genuine marker (left by `kit
/// exercise start`): a progress file pointed at another exercise's sandbox, or a folder copied
/// or moved from elsewhere, is not this exercise's work. Returns the lab's seed the marker
/// records (`None`: a marker of an older kit).
///
/// Errors: [`Error::Usage`] naming the folder and the fix.
fn own_sandbox(ex: &Exercise, folder: &Path, key: &[u8], lab: &Path) -> Result<Option<String>> {
    let id = ex.meta.id;
    let shown = folder.display();
    let from = lab::progress_path(lab);
    let reset = format!(
        "kit exercise reset {id} --yes lays exercise {id} out again there (move your edits aside first)"
    );
    match marker::read(folder, Some(key)) {
        Found::Of { id: m, genuine: true, seed } if m == id => Ok(seed),
        Found::Of { id: m, .. } if m != id => Err(Error::usage(format!(
            "{shown} is exercise {m}'s sandbox, not exercise {id}'s ({} points exercise {id} there)",
            from.display()
        ))
        .with_hint(format!(
            "kit exercise check {m} checks that one; kit exercise start {id} --into DIR lays exercise {id} out elsewhere"
        ))),
        Found::Of { .. } => Err(Error::usage(format!(
            "{shown}: its exercise marker ({} or {}) was not written there by kit exercise start {id} (edited, or the folder was copied or moved)",
            marker::IN_GIT,
            marker::IN_HOME
        ))
        .with_hint(reset)),
        Found::Missing => Err(Error::usage(format!(
            "{shown} is not exercise {id}'s sandbox: it has no marker from kit exercise start {id}"
        ))
        .with_hint(reset)),
    }
}

/// `kit exercise hint [N] [--level K]`: a rung of the hint ladder (default: the next unseen);
/// N defaults to the exercise of the current folder, as for `check`.
pub fn hint(
    cwd: &Path,
    n: Option<u32>,
    level: Option<usize>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8> {
    let Picked { lab, mut progress, ex, .. } = pick(cwd, n, "hint", err)?;
    let ex = &ex;
    let n = ex.meta.id;
    let seen = progress.exercises.get(&ex.slug).map_or(0, |e| e.hints_seen);
    let want = level.unwrap_or(seen + 1);
    let Some((k, text)) = ex.hint(want) else {
        writeln!(out, "exercise {n} has no hints; its task: kit exercise task {n}").map_err(w)?;
        return Ok(EXIT_OK);
    };
    let total = ex.meta.hints.len();
    writeln!(out, "hint {k}/{total}: {}", text.trim()).map_err(w)?;
    if k < total {
        writeln!(out, "more: kit exercise hint {n} shows hint {}/{total}", k + 1).map_err(w)?;
    }
    if lab.is_dir() {
        let e = progress.entry(&ex.slug);
        e.hints_seen = e.hints_seen.max(k);
        progress.save(&lab)?;
    }
    Ok(EXIT_OK)
}

/// `kit exercise reset N [--yes]`: empty the sandbox and lay it out again. Without `--yes` it
/// asks on a terminal, saying what is deleted, and refuses (exit 2) without one. A pass stays on
/// record (`earned`): the exercise is started again, `kit exercise list` shows `started, passed
/// before`, the solution stays unlocked, and the prompt and the output say so.
// Twin of `start`'s opening (course, exercise, lab): both act on one exercise's folder.
pub fn reset(
    cwd: &Path,
    n: u32,
    yes: bool,
    theme: &Theme,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8> {
    use std::io::IsTerminal;
    let course = Course::load()?;
    let ex = exercise::find(&course.exercises, n)?;
    let lab = lab_noting_the_last(cwd, err);
    let progress = Progress::load(&lab)?;
    let folder = sandbox_of(&progress, &lab, ex);
    // Never remove another exercise's work: a progress file pointed at its sandbox.
    if let Found::Of { id: m, .. } = marker::read(&folder, None) {
        if m != n {
            return Err(Error::usage(format!(
                "{} is exercise {m}'s sandbox, not exercise {n}'s ({} points exercise {n} there): reset would remove it",
                folder.display(),
                lab::progress_path(&lab).display()
            ))
            .with_hint(format!(
                "kit exercise reset {m} resets that one; kit exercise start {n} --into DIR lays exercise {n} out elsewhere"
            )));
        }
    }
    let kept = progress.exercises.get(&ex.slug).and_then(|e| e.earned.clone().or(e.passed.clone()));
    let kept_note = kept.as_ref().map(|p| {
        format!("your pass of {} stays on record: kit exercise list shows \"started, passed before\" and the solution stays unlocked", p.time)
    });
    if folder.exists() && !yes {
        let what = format!(
            "reset exercise {n}: delete everything in {} (your files and its git history) and lay out its start again",
            folder.display()
        );
        if !(std::io::stdin().is_terminal() && crate::term::stderr_is_term()) {
            let mut e =
                Error::usage(format!("{what}? Without a terminal to ask on, say so with --yes"));
            e = e.with_hint(match &kept_note {
                Some(k) => format!("kit exercise reset {n} --yes ({k})"),
                None => format!("kit exercise reset {n} --yes"),
            });
            return Err(e);
        }
        let note = kept_note.as_ref().map(|k| format!("\n({k})")).unwrap_or_default();
        if !crate::term::ask_yes(&format!("{what}?{note}\ndelete and start again?"))? {
            writeln!(out, "kept {}: nothing deleted", folder.display()).map_err(w)?;
            return Ok(EXIT_OK);
        }
    }
    if folder.exists() {
        // Emptied in place, not removed: a shell whose current folder is the sandbox stays in
        // it (a removed folder would leave it in a deleted directory).
        empty_folder(&folder)?;
    }
    lay_out(ex, &lab, &folder, err)?;
    print_task(ex, &folder, true, theme, out)?;
    if let Some(k) = &kept_note {
        writeln!(out, "reset: exercise {n} is laid out afresh, and {k}").map_err(w)?;
    }
    Ok(EXIT_OK)
}

/// Remove everything inside `folder`, keeping the folder itself.
fn empty_folder(folder: &Path) -> Result<()> {
    for entry in std::fs::read_dir(folder).at(folder)? {
        let p = entry.at(folder)?.path();
        let is_dir = std::fs::symlink_metadata(&p).at(&p)?.is_dir();
        if is_dir {
            std::fs::remove_dir_all(&p).at(&p)?;
        } else {
            std::fs::remove_file(&p).at(&p)?;
        }
    }
    Ok(())
}

/// `kit exercise solution [N] [--show-anyway]`: the solution's files, only once the exercise
/// passed (looking first spoils it); N defaults as for `check`.
pub fn solution(
    cwd: &Path,
    n: Option<u32>,
    show_anyway: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8> {
    let Picked { lab, mut progress, ex, .. } = pick(cwd, n, "solution", err)?;
    let ex = &ex;
    let n = ex.meta.id;
    let earned = progress.earned(&ex.slug);
    if !show_anyway && !earned {
        return Err(Error::usage(format!(
            "exercise {n} has not passed yet; looking at the solution first spoils it"
        ))
        .with_hint(format!(
            "kit exercise hint {n} for a nudge; kit exercise solution {n} --show-anyway if you must"
        )));
    }
    if !earned {
        // Seen before any pass: recorded, and shown by `list` and `check --json`.
        let e = progress.entry(&ex.slug);
        if e.solution_seen.is_none() {
            e.solution_seen = Some(crate::clock::now_rfc3339());
            progress.save(&lab)?;
        }
        let _ = writeln!(
            err,
            "warning: exercise {n} has not passed yet, so this spoils it; its solution is shown because of --show-anyway, and kit exercise list will say so"
        );
    }
    if ex.solution.is_empty() {
        writeln!(out, "exercise {n} has no solution files: it is solved by commands.")
            .map_err(w)?;
        if let Some(last) = ex.meta.hints.last() {
            writeln!(out, "the last hint: {}", last.trim()).map_err(w)?;
        }
        return Ok(EXIT_OK);
    }
    for (path, bytes) in &ex.solution {
        writeln!(out, "--- solution/{path}").map_err(w)?;
        if bytes.is_empty() {
            writeln!(out, "(empty file)").map_err(w)?;
            continue;
        }
        let text = String::from_utf8_lossy(bytes);
        write!(out, "{text}").map_err(w)?;
        if !text.ends_with('\n') {
            writeln!(out).map_err(w)?;
        }
    }
    if !ex.meta.solution_steps.is_empty() {
        writeln!(out, "--- then, in the exercise's folder:").map_err(w)?;
        for cmd in &ex.meta.solution_steps {
            writeln!(out, "$ {cmd}").map_err(w)?;
        }
    }
    Ok(EXIT_OK)
}

/// `kit exercise list [--json]`: number, lesson, title, status; a progress bar on a terminal.
pub fn list(
    cwd: &Path,
    json: bool,
    tty: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8> {
    let course = Course::load()?;
    let (lab, origin) = lab::locate_for_reading(cwd);
    let where_line = lab::where_line(&lab, origin);
    let progress = Progress::load(&lab)?;
    progress.print_notes(err);
    let total = course.exercises.len();
    let passed = course.exercises.iter().filter(|e| progress.passed(&e.slug)).count();
    if json {
        let rows: Vec<_> = course
            .exercises
            .iter()
            .map(|e| {
                serde_json::json!({
                    "id": e.meta.id,
                    "lesson": e.meta.lesson,
                    "slug": e.slug,
                    "title": e.meta.title,
                    "status": progress.status(&e.slug),
                    "changed_since_pass": changed_since_pass(&progress, e),
                    "solution_seen": progress.solution_seen(&e.slug),
                })
            })
            .collect();
        let v = serde_json::json!({
            "schema": "kit.exercises/1", "exercises": rows, "passed": passed, "total": total,
            "lab": lab, "lab_note": where_line,
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&v).unwrap_or_default()).map_err(w)?;
        return Ok(EXIT_OK);
    }
    if let Some(l) = &where_line {
        writeln!(out, "{l}").map_err(w)?;
    }
    let tw = course.exercises.iter().map(|e| e.meta.title.chars().count()).max().unwrap_or(5);
    writeln!(out, " #  lesson  {:<tw$}  status", "title").map_err(w)?;
    for e in &course.exercises {
        let m = &e.meta;
        writeln!(
            out,
            "{:>2}  {:>6}  {:<tw$}  {}",
            m.id,
            m.lesson,
            m.title,
            progress.status_line(&e.slug, changed_since_pass(&progress, e))
        )
        .map_err(w)?;
    }
    if tty {
        let width = 20;
        let filled = (passed * width).checked_div(total).unwrap_or(0);
        writeln!(out, "[{}{}] {passed}/{total}", "#".repeat(filled), "-".repeat(width - filled))
            .map_err(w)?;
    } else {
        writeln!(out, "{passed}/{total} passed").map_err(w)?;
    }
    Ok(EXIT_OK)
}

/// Whether exercise `ex` passed and its sandbox changed since: the digest of its `edit` files is
/// not the pass's (or the sandbox is gone). A check will say whether it still passes.
fn changed_since_pass(progress: &Progress, ex: &Exercise) -> bool {
    let Some(pass) = progress.exercises.get(&ex.slug).and_then(|e| e.passed.as_ref()) else {
        return false;
    };
    !pass.dir.is_dir()
        || stamp::edited_digest(&pass.dir, &ex.meta.edit).map_or(true, |d| d != pass.digest)
}

/// `kit exercise watch [N] [--max-checks K]`: check exercise N (default as for `check`), then
/// check again each time a file of its sandbox changes, until Ctrl-C (or K checks). A pass does
/// not end it, as in rustlings' watch: the learner may go on refining, and a later failing check
/// is recorded ("failed since passing"). On a terminal the screen is cleared before each check.
///
/// Changes are found by polling the sandbox's files (path, size, mtime, inode) every
/// [`WATCH_POLL`], then waiting until they settle for [`WATCH_SETTLE`] (an editor's save is
/// several writes): no new dependency, it works on any file system (network mounts and
/// containers where inotify does not), and a sandbox is a few dozen files. `.git/`, `.home/`,
/// `.kit/`, kit's runtime files in `longrun/` (names starting with a dot: `.lock`, `.runs/`,
/// `.frozen/`, `.hook/`) and editors' scratch files ([`editor_scratch`]) are not watched.
///
/// Exit status: that of the last check (with `--max-checks`).
pub fn watch(
    cwd: &Path,
    n: Option<u32>,
    max_checks: Option<u32>,
    tty: bool,
    theme: &Theme,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8> {
    let Picked { lab, progress, ex, .. } = pick(cwd, n, "watch", err)?;
    let id = ex.meta.id;
    let folder = sandbox_of(&progress, &lab, &ex);
    if !folder.is_dir() {
        return Err(Error::usage(format!(
            "exercise {id} is not started in this lab ({} does not exist)",
            folder.display()
        ))
        .with_hint(not_started_hint(id, "watch", &lab)));
    }
    let mut checks = 0;
    loop {
        let before = sandbox_files(&folder);
        if tty {
            crate::term::clear_screen();
        }
        let code = check(cwd, Some(id), false, theme, out, err)?;
        checks += 1;
        if max_checks.is_some_and(|m| checks >= m) {
            return Ok(code);
        }
        writeln!(
            out,
            "{}",
            theme.dim(&format!(
                "watching {} (exercise {id}): saving a file checks again; Ctrl-C stops",
                folder.display()
            ))
        )
        .map_err(w)?;
        out.flush().map_err(w)?;
        let mut now = sandbox_files(&folder);
        while now == before {
            std::thread::sleep(WATCH_POLL);
            now = sandbox_files(&folder);
        }
        loop {
            std::thread::sleep(WATCH_SETTLE);
            let again = sandbox_files(&folder);
            if again == now {
                break;
            }
            now = again;
        }
        if !tty {
            writeln!(out).map_err(w)?;
        }
    }
}

/// Whether `name` is an editor's scratch file (vim's swap files and `4913` probe, Emacs' lock
/// and backup files) or Python's byte-code folder, which change while the learner types, not
/// when they save.
fn editor_scratch(name: &str) -> bool {
    name == "4913"
        || name == "__pycache__"
        || name.starts_with(".#")
        || name.ends_with('~')
        || [".swp", ".swo", ".swx"].iter().any(|x| name.ends_with(x))
}

/// How often `watch` looks at the sandbox.
const WATCH_POLL: std::time::Duration = std::time::Duration::from_millis(300);
/// How long the sandbox must stay unchanged before `watch` checks.
const WATCH_SETTLE: std::time::Duration = std::time::Duration::from_millis(200);

/// One entry of a sandbox as `watch` compares it: path, size, mtime, inode.
type Seen = (PathBuf, u64, Option<std::time::SystemTime>, u64);

/// The files of `dir` that `watch` watches (see [`watch`]), sorted; unreadable entries are
/// skipped (a file being replaced shows up on the next look).
fn sandbox_files(dir: &Path) -> Vec<Seen> {
    use std::os::unix::fs::MetadataExt;
    fn walk(root: &Path, rel: &Path, out: &mut Vec<Seen>) {
        let Ok(entries) = std::fs::read_dir(root.join(rel)) else { return };
        for e in entries.flatten() {
            let name = e.file_name();
            let r = rel.join(&name);
            let top = rel.as_os_str().is_empty();
            let dot = name.to_string_lossy().starts_with('.');
            if (top && [".git", ".home", ".kit"].iter().any(|n| name == *n))
                || (dot && rel == Path::new("longrun"))
                || editor_scratch(&name.to_string_lossy())
            {
                continue;
            }
            let Ok(m) = std::fs::symlink_metadata(root.join(&r)) else { continue };
            if m.is_dir() {
                walk(root, &r, out);
            } else {
                out.push((r, m.len(), m.modified().ok(), m.ino()));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, Path::new(""), &mut out);
    out.sort();
    out
}

/// `kit lesson`: the lessons with their exercises done, and where the learner is.
pub fn lessons(cwd: &Path, out: &mut dyn Write, err: &mut dyn Write) -> Result<u8> {
    let course = Course::load()?;
    let (lab, origin) = lab::locate_for_reading(cwd);
    let progress = Progress::load(&lab)?;
    progress.print_notes(err);
    let go = if origin == lab::Origin::Last {
        format!("cd {}, then ", lab.display())
    } else {
        String::new()
    };
    if let Some(l) = lab::where_line(&lab, origin) {
        writeln!(out, "{l}").map_err(w)?;
    }
    let tw = course.lessons.iter().map(|l| l.meta.title.chars().count()).max().unwrap_or(5);
    writeln!(out, " #  {:<tw$}  minutes  exercises", "title").map_err(w)?;
    for l in &course.lessons {
        let mine: Vec<_> =
            course.exercises.iter().filter(|e| e.meta.lesson == l.meta.number).collect();
        let done = mine.iter().filter(|e| progress.passed(&e.slug)).count();
        let ex = format!("{done}/{}", mine.len());
        writeln!(out, "{:>2}  {:<tw$}  {:>7}  {ex}", l.meta.number, l.meta.title, l.meta.minutes)
            .map_err(w)?;
    }
    match course.exercises.iter().find(|e| !progress.passed(&e.slug)) {
        Some(e) if progress.status(&e.slug) != "not started" => writeln!(
            out,
            "next: {go}kit exercise check {} ({})",
            e.meta.id,
            progress.status(&e.slug)
        )
        .map_err(w)?,
        Some(e) => {
            let l = e.meta.lesson;
            writeln!(out, "next: {go}kit lesson {l}, then kit exercise start {}", e.meta.id)
                .map_err(w)?
        }
        None => writeln!(out, "every exercise passed").map_err(w)?,
    }
    Ok(EXIT_OK)
}

/// `kit lesson N`: the README, rendered and paged on a terminal, plain Markdown otherwise.
pub fn show_lesson(n: u32, tty: bool, theme: &Theme, out: &mut dyn Write) -> Result<u8> {
    let all = lesson::load_all()?;
    let l = lesson::find(&all, n)?;
    if !tty {
        write!(out, "{}", l.readme).map_err(w)?;
        return Ok(EXIT_OK);
    }
    let width = crate::term::columns().unwrap_or(100).clamp(40, 100);
    let text = render_markdown(l.readme, width, theme);
    if page(&text).is_err() {
        write!(out, "{text}").map_err(w)?;
    }
    Ok(EXIT_OK)
}

/// Send `text` through `$PAGER` (else `less -R`).
fn page(text: &str) -> std::io::Result<()> {
    let pager = std::env::var("PAGER").ok().filter(|p| !p.trim().is_empty());
    let pager = pager.unwrap_or_else(|| "less -R".into());
    let mut child = std::process::Command::new("sh")
        .arg("-c")
        .arg(&pager)
        .stdin(std::process::Stdio::piped())
        .spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(text.as_bytes());
    }
    let st = child.wait()?;
    if st.code() == Some(127) {
        return Err(std::io::Error::other("pager not found"));
    }
    Ok(())
}

/// `kit lesson N --path`: where the lesson's files are: the README of a kit checkout holding
/// the current folder, else a sentence saying it is embedded (never a path of the machine kit
/// was built on).
pub fn lesson_path(cwd: &Path, n: u32, out: &mut dyn Write) -> Result<u8> {
    let all = lesson::load_all()?;
    let l = lesson::find(&all, n)?;
    let rel = format!("lessons/{}/README.md", l.slug);
    let checkout = cwd
        .ancestors()
        .find(|a| a.join(&rel).is_file() && a.join("Cargo.toml").is_file())
        .map(|a| a.join(&rel));
    match checkout {
        Some(p) => writeln!(out, "{}", p.display()).map_err(w)?,
        None => writeln!(
            out,
            "{rel} is embedded in kit (no checkout here): kit lesson {n} > lesson.md saves a copy; kit lesson {n} --lab lays out the sandbox its commands run in"
        )
        .map_err(w)?,
    }
    Ok(EXIT_OK)
}

/// `kit lesson N --lab`: lay out lesson N's sandbox — what its `console` blocks run in, built as
/// `kit verify` builds it (`lesson.toml`'s `sandbox`: empty, git, rehearsal, transcripts) — in
/// `<lab>/lesson-NN-slug/`, and print how to follow the lesson there: `cd` into it and point
/// `CLAUDE_CONFIG_DIR` and `CODEX_HOME` at its `.home/`, so that `kit measure` reads the
/// lesson's sessions and the fake agent's transcripts land there, not among the learner's own
/// (the ledger, in the learner's HOME, counts their calls only in a measurement of that root).
///
/// Errors: [`Error::Usage`] when the folder is already laid out.
pub fn lesson_lab(cwd: &Path, n: u32, out: &mut dyn Write, err: &mut dyn Write) -> Result<u8> {
    let all = lesson::load_all()?;
    let l = lesson::find(&all, n)?;
    let lab = lab_made_noting_the_last(cwd, err);
    let folder = lab.join(format!("lesson-{}", l.slug));
    if folder.exists() && std::fs::read_dir(&folder).at(&folder)?.next().is_some() {
        return Err(Error::usage(format!(
            "lesson {n}'s sandbox is already laid out in {}",
            folder.display()
        ))
        .with_hint(format!(
            "cd {} (or remove it and run kit lesson {n} --lab again to start afresh)",
            folder.display()
        )));
    }
    let (bins, _bin_dir) = crate::golden::this_binaries()?;
    crate::atomic::create_dir_all(&folder)?;
    let env = crate::golden::golden_env(&folder, &bins);
    crate::golden::build_sandbox(&l.meta.sandbox, &folder, &env)?;
    let home = folder.join(".home");
    crate::atomic::create_dir_all(&home.join(".claude"))?;
    crate::atomic::create_dir_all(&home.join(".codex"))?;
    let what = match l.meta.sandbox.as_str() {
        "git" => "a git repository with one empty commit",
        "rehearsal" => "the sample project (confload), committed",
        "transcripts" => "recorded Claude Code and Codex sessions in .home/",
        _ => "an empty folder",
    };
    let d = folder.display();
    writeln!(out, "lesson {n}'s sandbox ({what}): {d}").map_err(w)?;
    writeln!(out, "follow the lesson's commands there, in this shell:").map_err(w)?;
    writeln!(out, "  cd {d}").map_err(w)?;
    writeln!(out, "  export CLAUDE_CONFIG_DIR={0}/.claude CODEX_HOME={0}/.codex", home.display())
        .map_err(w)?;
    writeln!(
        out,
        "kit measure then reads the lesson's sessions, and fake agents write theirs there, not among yours (kit's ledger counts their calls only here, never in your own totals); when done: unset CLAUDE_CONFIG_DIR CODEX_HOME"
    )
    .map_err(w)?;
    Ok(EXIT_OK)
}

/// Render Markdown for a terminal: headings bold, code blocks indented and dim, paragraphs and
/// list items wrapped to `width`.
pub fn render_markdown(md: &str, width: usize, theme: &Theme) -> String {
    let mut out = String::new();
    let mut para: Vec<&str> = Vec::new();
    let mut in_code = false;
    let flush = |para: &mut Vec<&str>, out: &mut String| {
        if para.is_empty() {
            return;
        }
        let text = para.join(" ");
        let (first, rest) = match text.split_once(' ') {
            Some((m, _))
                if m == "-" || m == "*" || m.trim_end_matches('.').parse::<u32>().is_ok() =>
            {
                (String::new(), " ".repeat(m.len() + 1))
            }
            _ => (String::new(), String::new()),
        };
        out.push_str(&wrap(&text, width, &first, &rest));
        para.clear();
    };
    let mut table: Vec<&str> = Vec::new();
    for line in md.lines() {
        if !table.is_empty() && !line.trim_start().starts_with('|') {
            out.push_str(&render_table(&table, width, theme));
            table.clear();
        }
        if let Some(info) = line.trim_start().strip_prefix("```") {
            flush(&mut para, &mut out);
            // A block that a lesson writes into a file (`file=PATH`, as the golden format
            // reads it) is headed by the file's name: the learner must know where it goes.
            if !in_code {
                if let Some(path) = info.split_whitespace().find_map(|w| w.strip_prefix("file=")) {
                    out.push_str(&format!("  {}\n", theme.bold(&format!("file {path}:"))));
                }
            }
            in_code = !in_code;
            continue;
        }
        if in_code {
            for l in wrap_code(line, width) {
                out.push_str(&theme.dim(&l));
                out.push('\n');
            }
        } else if line.trim_start().starts_with('|') {
            // A table: kept whole (never reflowed), its columns aligned.
            flush(&mut para, &mut out);
            table.push(line.trim());
            continue;
        } else if line.starts_with('#') {
            flush(&mut para, &mut out);
            for l in wrap(line.trim_start_matches('#').trim(), width, "", "").lines() {
                out.push_str(&theme.bold(l));
                out.push('\n');
            }
        } else if line.trim().is_empty() {
            flush(&mut para, &mut out);
            out.push('\n');
        } else {
            let t = line.trim_start();
            let item = t.starts_with("- ")
                || t.starts_with("* ")
                || t.split_once(". ").is_some_and(|(n, _)| n.parse::<u32>().is_ok());
            if item {
                flush(&mut para, &mut out);
            }
            para.push(line.trim());
        }
    }
    flush(&mut para, &mut out);
    out.push_str(&render_table(&table, width, theme));
    out
}

/// A line of a code block, indented by four, as lines of at most `width` columns: a longer one
/// is broken at a space, its rest indented two more. A `$ ` command is broken only outside
/// quotes, and each broken line ends with ` \`, so that it still pastes into a shell as one
/// command. A line with no space to break at is kept whole.
fn wrap_code(line: &str, width: usize) -> Vec<String> {
    const INDENT: &str = "    ";
    let command = line.starts_with("$ ");
    let mut out = Vec::new();
    let mut rest = line.to_string();
    let mut indent = INDENT.to_string();
    loop {
        let room = width.saturating_sub(indent.len() + if command { 2 } else { 0 });
        if console::measure_text_width(&rest) + indent.len() <= width {
            out.push(format!("{indent}{rest}"));
            return out;
        }
        // Spaces where the line may break (outside quotes, for a command), as byte offsets.
        let (mut single, mut double) = (false, false);
        let mut breaks = Vec::new();
        for (i, c) in rest.char_indices() {
            match c {
                '\'' if !double => single = !single,
                '"' if !single => double = !double,
                ' ' if !command || !(single || double) => breaks.push(i),
                _ => {}
            }
        }
        let fits = breaks
            .iter()
            .copied()
            .rfind(|&i| i > 0 && console::measure_text_width(&rest[..i]) <= room)
            .or_else(|| breaks.iter().copied().find(|&i| i > 0));
        let Some(mut at) = fits else {
            if command {
                out.push(format!("{indent}{rest}"));
                return out;
            }
            // Output with no space (a JSON line) is cut at the width: it is read, not pasted.
            let cut = rest.char_indices().nth(room.max(1)).map_or(rest.len(), |(i, _)| i);
            out.push(format!("{indent}{}", &rest[..cut]));
            rest = rest[cut..].to_string();
            indent = format!("{INDENT}  ");
            continue;
        };
        // A word too long for any line (quoted JSON) stays on the line it starts, rather than
        // being left alone on one of its own.
        let after = breaks.iter().copied().find(|&i| i > at);
        let word = rest[at..after.unwrap_or(rest.len())].trim();
        if command && console::measure_text_width(word) + indent.len() + 2 > width {
            match after {
                Some(a) => at = a,
                None => {
                    out.push(format!("{indent}{rest}"));
                    return out;
                }
            }
        }
        let head = rest[..at].trim_end();
        out.push(if command { format!("{indent}{head} \\") } else { format!("{indent}{head}") });
        rest = rest[at..].trim_start().to_string();
        indent = format!("{INDENT}  ");
    }
}

/// A Markdown table as aligned columns: `| a | b |` rows, the `|---|` row as a rule under the
/// header. Widths are display widths (`console::measure_text_width`). When the table is wider
/// than `width`, the last column's cells are wrapped under it.
fn render_table(rows: &[&str], width: usize, theme: &Theme) -> String {
    let cells = |row: &str| -> Vec<String> {
        let inner = row.trim().trim_start_matches('|').trim_end_matches('|');
        inner.split('|').map(|c| c.trim().replace('`', "").replace("**", "")).collect()
    };
    let is_rule = |row: &str| row.chars().all(|c| matches!(c, '|' | '-' | ':' | ' '));
    let body: Vec<(bool, Vec<String>)> =
        rows.iter().map(|r| (is_rule(r), if is_rule(r) { vec![] } else { cells(r) })).collect();
    let ncols = body.iter().map(|(_, c)| c.len()).max().unwrap_or(0);
    let mut widths = vec![0usize; ncols];
    for (_, row) in &body {
        for (i, c) in row.iter().enumerate() {
            widths[i] = widths[i].max(console::measure_text_width(c));
        }
    }
    // Wider than `width`: the widest column gives a column at a time (none below 12), and
    // every cell is wrapped to its column.
    let total = |w: &[usize]| 2 + w.iter().sum::<usize>() + 2 * w.len().saturating_sub(1);
    while total(&widths) > width {
        let Some((i, w)) = widths.iter().enumerate().max_by_key(|(_, w)| **w) else { break };
        if *w <= 12 {
            break;
        }
        widths[i] -= 1;
    }
    let mut out = String::new();
    for (k, (rule, row)) in body.iter().enumerate() {
        let lines: Vec<String> = if *rule {
            vec![widths.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>().join("  ")]
        } else {
            let cells: Vec<Vec<String>> = row
                .iter()
                .enumerate()
                .map(|(i, c)| wrap(c, widths[i], "", "").lines().map(str::to_string).collect())
                .collect();
            let height = cells.iter().map(Vec::len).max().unwrap_or(1).max(1);
            (0..height)
                .map(|h| {
                    let mut l = String::new();
                    for (i, c) in cells.iter().enumerate() {
                        let part = c.get(h).map_or("", String::as_str);
                        l.push_str(part);
                        if i + 1 < cells.len() {
                            let pad = widths[i].saturating_sub(console::measure_text_width(part));
                            l.push_str(&" ".repeat(pad + 2));
                        }
                    }
                    l.trim_end().to_string()
                })
                .collect()
        };
        let header = k == 0 && body.get(1).is_some_and(|(r, _)| *r);
        for line in lines {
            out.push_str("  ");
            out.push_str(&if header { theme.bold(&line) } else { line });
            out.push('\n');
        }
    }
    out
}

fn wrap(text: &str, width: usize, first: &str, rest: &str) -> String {
    let mut out = String::new();
    let mut line = first.to_string();
    let mut empty = true;
    for word in text.split_whitespace() {
        if !empty && line.chars().count() + 1 + word.chars().count() > width {
            out.push_str(&line);
            out.push('\n');
            line = rest.to_string();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    if !empty {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The next command for `kit exercise VERB N` on an exercise not started in `lab`: when the
/// learner's lab is elsewhere (this folder has none, and kit remembers the one used last), going
/// back there, not starting a second, empty lab here; else starting it.
fn not_started_hint(id: u32, verb: &str, lab: &Path) -> String {
    match super::lab::last_lab().filter(|last| super::lab::canonical(last) != super::lab::canonical(lab)) {
        Some(last) => format!(
            "cd {} (your lab), then kit exercise {verb} {id}; or kit exercise start {id} to begin it in a new lab here",
            last.display()
        ),
        None if verb == "check" => format!("kit exercise start {id}"),
        None => format!("kit exercise start {id}, then kit exercise {verb} {id}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `md` rendered at `width` columns without colour is `want`.
    fn renders(md: &str, width: usize, want: &str) {
        assert_eq!(render_markdown(md, width, &Theme::plain()), want, "{md:?} at {width}");
    }

    #[test]
    fn markdown_renders_headings_code_and_wrapped_paragraphs() {
        let md = "# Title\n\none two three four five six\n\n- item one two three\n\n```console\n$ kit init\n```\n";
        renders(
            md,
            14,
            "Title\n\none two three\nfour five six\n\n- item one two\n  three\n\n    $ kit init\n",
        );
    }

    #[test]
    fn watch_sees_the_learners_files_and_not_runtime_or_scratch_files() {
        let d = tempfile::tempdir().unwrap();
        let files = [
            "longrun/goal.md",
            ".claude/settings.json",
            "longrun/.runs/1/out.log",
            "longrun/.lock",
            ".git/index",
            ".home/.claude/x.jsonl",
            ".kit/progress.json",
            "src/.lib.py.swp",
            "src/lib.py~",
            "src/__pycache__/lib.pyc",
            "src/lib.py",
        ];
        for f in files {
            let p = d.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x").unwrap();
        }
        let seen: Vec<String> = sandbox_files(d.path())
            .into_iter()
            .map(|(p, ..)| p.to_string_lossy().into_owned())
            .collect();
        assert_eq!(seen, [".claude/settings.json", "longrun/goal.md", "src/lib.py"]);
    }

    #[test]
    fn a_code_block_written_to_a_file_is_headed_by_its_name() {
        let md = "Write it:\n\n```text file=longrun/config.toml\n[caps]\n```\n";
        renders(md, 80, "Write it:\n\n  file longrun/config.toml:\n    [caps]\n");
    }

    #[test]
    fn long_code_lines_break_at_a_space_and_commands_stay_pasteable() {
        let cases: &[(&str, usize, &[&str])] = &[
            ("short", 80, &["    short"]),
            ("one two three four", 14, &["    one two", "      three", "      four"]),
            (
                "$ git commit -m 'a b c d' && git status",
                34,
                &["    $ git commit -m 'a b c d' && \\", "      git status"],
            ),
            ("$ nospacesatallhere", 10, &["    $ nospacesatallhere"]),
            ("{\"a\":1,\"b\":2}", 10, &["    {\"a\":1", "      ,\"b\"", "      :2}"]),
        ];
        for (line, width, want) in cases {
            assert_eq!(wrap_code(line, *width), *want, "{line}");
        }
    }

    #[test]
    fn a_wide_table_wraps_its_cells() {
        let md = "| who | what |\n|---|---|\n| you | one two three four five six |\n";
        renders(
            md,
            22,
            "  who  what\n  ---  ---------------\n  you  one two three\n       four five six\n",
        );
    }

    #[test]
    fn every_lesson_reads_at_80_columns() {
        // Prose wraps; tables and console blocks are kept as written, so they must fit. Lines
        // of data a lesson writes into a file (a transcript's JSON) may not, and are not
        // measured.
        for l in lesson::load_all().unwrap() {
            let text = render_markdown(l.readme, 80, &Theme::plain());
            let mut in_file = false;
            let mut long = Vec::new();
            for line in text.lines() {
                if line.starts_with("  file ") && line.ends_with(':') {
                    in_file = true;
                    continue;
                }
                if !line.starts_with("    ") {
                    in_file = false;
                }
                // A command whose quoted argument (JSON, a sed script) is too long cannot be
                // broken and stay a command.
                let one_word = line.trim_start().starts_with("$ ") && line.contains('\'');
                if !in_file && !one_word && console::measure_text_width(line) > 80 {
                    long.push(line.to_string());
                }
            }
            assert!(
                long.is_empty(),
                "lessons/{}/README.md wider than 80:\n{}",
                l.slug,
                long.join("\n")
            );
        }
    }

    #[test]
    fn markdown_tables_keep_their_rows_and_align_columns() {
        let md = "Before.\n\n| who | file |\n|---|---|\n| you | `goal.md` |\n| kit only | journal.jsonl |\nAfter.\n";
        renders(md, 80, "Before.\n\n  who       file\n  --------  -------------\n  you       goal.md\n  kit only  journal.jsonl\nAfter.\n");
    }
}
