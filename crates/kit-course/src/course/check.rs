//! Running an exercise's `golden.md`: against a copy of the learner's sandbox (`kit exercise
//! check`: the learner's files cannot influence the checker and the check never writes into the
//! learner's folder) or, for an exercise whose work is only an answer (`check_in_new_lab`), a
//! lab laid out anew from its seed with only the learner's edited files; and against the start
//! and the solution (`kit verify`).

use std::path::{Path, PathBuf};

use super::exercise::{self, Exercise};
use crate::error::{Error, IoContext, Result};
use crate::golden::{self, Binaries, Outcome};

/// Run `ex`'s golden in a temporary copy of `sandbox` ([`copy_sandbox`]), or, for an exercise
/// with `check_in_new_lab`, in a lab laid out anew from `seed` with only the learner's edited
/// files ([`lay_new_lab`]).
///
/// Errors: as [`check_copy_with_progress`].
pub fn check_copy(
    ex: &Exercise,
    sandbox: &Path,
    seed: Option<&str>,
    bins: &Binaries,
) -> Result<Outcome> {
    check_copy_with_progress(ex, sandbox, seed, bins, &|_, _, _| {})
}

/// [`check_copy`], calling `progress` before each step ([`golden::run_case_with_progress`]).
/// `seed` is the lab's seed as its genuine marker records it (`None`: a marker of an older kit).
///
/// Errors: [`Error::Usage`] when the exercise lays its lab out anew and `seed` is `None` (with
/// the fix), or when [`copy_sandbox`] or [`lay_new_lab`] refuses a file; what the run returns.
pub fn check_copy_with_progress(
    ex: &Exercise,
    sandbox: &Path,
    seed: Option<&str>,
    bins: &Binaries,
    progress: &golden::ProgressFn<'_>,
) -> Result<Outcome> {
    let case = ex.case(&format!("exercise {}", ex.slug))?;
    let fence = Fence::of(&case, &ex.meta.edit);
    // `golden::SandboxFn` is `'static`: the closures own what they use.
    let sandbox = sandbox.to_path_buf();
    if ex.meta.check_in_new_lab {
        let id = ex.meta.id;
        let seed = seed.ok_or_else(|| {
            Error::usage(format!(
                "{}: its marker, made by an older kit, does not record the lab's seed, and \
                 exercise {id}'s check judges your answer in the lab laid out anew from that seed",
                sandbox.display()
            ))
            .with_hint(format!(
                "kit exercise reset {id} --yes lays it out again (a new lab: find its answer anew)"
            ))
        })?;
        let (owned, seed) = (ex.clone(), seed.to_string());
        let lay = move |_kind: &str, dir: &Path, env: &[(String, String)]| {
            lay_new_lab(&owned, &sandbox, &seed, dir, env, &fence)
        };
        return golden::run_case_with_progress(&case, bins, &lay, progress);
    }
    let kind = ex.meta.sandbox.clone();
    let copy = move |_kind: &str, dir: &Path, _env: &[(String, String)]| {
        copy_sandbox(&sandbox, &kind, dir, &fence)
    };
    golden::run_case_with_progress(&case, bins, &copy, progress)
}

/// Lay `ex`'s lab out anew in `dir` (golden environment `env`) from the lab's `seed`, as `kit
/// exercise start` laid out the learner's ([`exercise::build_sandbox`]), then take from the
/// learner's lab `from` only the files `edit` names ([`take_edited`]). What the check judges
/// (exercise 13's six handoffs, the journal and the commits they were stamped against) is then
/// the setup's own, never a copy the learner made or changed: the learner's work is the answer.
///
/// Errors: the setup fails; [`take_edited`]'s.
pub fn lay_new_lab(
    ex: &Exercise,
    from: &Path,
    seed: &str,
    dir: &Path,
    env: &[(String, String)],
    fence: &Fence,
) -> Result<()> {
    let mut env = env.to_vec();
    env.retain(|(k, _)| k != exercise::SEED_VAR);
    env.push((exercise::SEED_VAR.into(), seed.into()));
    // The lab's draw is the learner's: under the course key `kit exercise start` drew it with
    // (this process's, as the marker's stamp is), not the key of the check's own environment.
    let draw_key = super::stamp::key()?;
    exercise::build_sandbox(ex, dir, &env, &exercise::env_course_key(&env)?, &draw_key, false)?;
    take_edited(ex, from, dir, fence)
}

/// Copy what `ex`'s `edit` names (a file, or a folder with what is below it) from the learner's
/// lab `from` over the same path in `to`; a path `from` does not have (or holds as neither a file,
/// a folder nor a link) is removed from `to`. A link on the way (the check judges the file
/// itself), and a file over [`MAX_COPIED_FILE`], are refused as [`copy_sandbox`] refuses them
/// ([`refuse_links`], by `fence`).
///
/// Errors: [`Error::Usage`] naming such a link or file; I/O errors naming the file.
pub fn take_edited(ex: &Exercise, from: &Path, to: &Path, fence: &Fence) -> Result<()> {
    for e in &ex.meta.edit {
        let rel = Path::new(e.trim_end_matches('/'));
        let mut on_the_way = std::path::PathBuf::new();
        for c in rel.components() {
            on_the_way.push(c);
            if std::fs::symlink_metadata(from.join(&on_the_way)).is_ok_and(|m| m.is_symlink()) {
                refuse_links(from, &on_the_way, fence)?;
            }
        }
        let (src, dst) = (from.join(rel), to.join(rel));
        let Ok(meta) = std::fs::symlink_metadata(&src) else {
            remove(&dst)?;
            continue;
        };
        remove(&dst)?;
        if let Some(parent) = dst.parent() {
            crate::atomic::create_dir_all(parent)?;
        }
        if meta.is_symlink() {
            let target = std::fs::read_link(&src).at(&src)?;
            std::os::unix::fs::symlink(target, &dst).at(&dst)?;
        } else if meta.is_dir() {
            refuse_what_leaves(from, rel, fence)?;
            super::copy_tree_filtered(&src, &dst, &|_, _| true)?;
        } else if meta.is_file() {
            if meta.len() > MAX_COPIED_FILE {
                return Err(too_big(rel, meta.len()));
            }
            std::fs::copy(&src, &dst).at(&src)?;
        }
        // Anything else (a FIFO, a socket) is no answer: the new lab has none there, as the
        // copy of a lab leaves such a file out.
    }
    Ok(())
}

/// Remove `p` (a file, a link or a folder) when it is there.
fn remove(p: &Path) -> Result<()> {
    match std::fs::symlink_metadata(p) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(p).at(p),
        Ok(_) => std::fs::remove_file(p).at(p),
        Err(_) => Ok(()),
    }
}

/// The largest file a check copies from the lab (16 MiB): no exercise's work comes near it, and a
/// huge file planted in the lab must not cost every check its copy time and temporary space.
pub const MAX_COPIED_FILE: u64 = 16 << 20;

/// The folders a check keeps its own files in (its references, helpers and scratch files,
/// docs/golden-format.md): never copied from the lab, so the check starts without them and
/// makes its own; a link of the lab into them is refused.
pub const CHECK_FOLDERS: [&str; 3] = [".check", ".kit-check", ".git/kit-check"];

/// What of the lab a check copies is the learner's and what is the check's own (issue 21:
/// nothing a check compares may be reachable from, or planted by, the work it judges).
#[derive(Clone, Debug)]
pub struct Fence {
    /// Paths of the check's sandbox (relative) that are the check's own: [`CHECK_FOLDERS`], the
    /// sandbox's `.home/` and `.kit/` (laid anew, not copied), and where the golden's file blocks
    /// write (the top folder of each, a folder inside `.git/` for one under it, or the file
    /// itself at the top).
    owned: Vec<PathBuf>,
    /// The paths the learner edits (`exercise.toml`'s `edit`; a folder ends with `/`): the check
    /// judges them, so each must be the file itself, not a link.
    judged: Vec<PathBuf>,
}

impl Fence {
    /// The fence of a check running `case` on a lab whose learner edits `edit`.
    pub fn of(case: &golden::Case, edit: &[String]) -> Fence {
        let blocks = case.steps.iter().filter_map(|s| match s {
            golden::Step::File { path, .. } => Some(path.as_str()),
            golden::Step::Run { .. } => None,
        });
        Fence::new(blocks, edit)
    }

    /// The fence of a check whose golden writes the file blocks `blocks` (paths relative to the
    /// sandbox) on a lab whose learner edits `edit`.
    pub fn new<'a>(blocks: impl IntoIterator<Item = &'a str>, edit: &[String]) -> Fence {
        let mut owned: Vec<PathBuf> =
            CHECK_FOLDERS.iter().chain(&[".home", ".kit"]).map(PathBuf::from).collect();
        for block in blocks {
            let parts: Vec<_> = Path::new(block).components().collect();
            let take = if parts.first().is_some_and(|c| c.as_os_str() == ".git") { 2 } else { 1 };
            let top: PathBuf = parts.iter().take(take).collect();
            if !top.as_os_str().is_empty() && !owned.contains(&top) {
                owned.push(top);
            }
        }
        let judged = edit.iter().map(|e| PathBuf::from(e.trim_end_matches('/'))).collect();
        Fence { owned, judged }
    }

    /// The path of the check's own that `rel` is, or is inside, if any.
    fn owner_of(&self, rel: &Path) -> Option<&Path> {
        self.owned.iter().find(|o| rel.starts_with(o)).map(PathBuf::as_path)
    }

    /// Whether a link at `rel` would stand for a file the check judges: `rel` is an edited
    /// path, inside an edited folder, or a folder holding one.
    fn judges(&self, rel: &Path) -> bool {
        self.judged.iter().any(|j| rel.starts_with(j) || j.starts_with(rel))
    }

    /// Whether `rel` is one of [`CHECK_FOLDERS`], `.home` or `.kit`: not copied from the lab.
    fn not_copied(rel: &Path) -> bool {
        rel == Path::new(".home")
            || rel == Path::new(".kit")
            || CHECK_FOLDERS.iter().any(|c| rel == Path::new(c))
    }
}

/// Copy what a check of the sandbox `from` needs into `to`: the sandbox's own files and `.git`,
/// without what is not the exercise's work: the sandbox's `.home/` is laid anew for its kind
/// `kind` (the transcript fixtures come from the binary, not from the learner's copy) with only
/// the sandbox's own kit state (`.home/.local/state/kit/handoff.key`, which its setup made), no
/// nested lab (a folder with `.kit/progress.json`) or other exercise's sandbox (a folder with
/// a marker), no leftovers of the learner's experiments that are not work (the fake agent's
/// call counters `.git/fake-agent-*.count`, a loop's `longrun/.lock`), and none of the check's
/// own folders ([`CHECK_FOLDERS`]: a `.check/` the learner made is not the check's).
///
/// A symbolic link is copied as a link only when it stays inside the lab and out of what the
/// check owns ([`refuse_links`], by `fence`); a file over [`MAX_COPIED_FILE`] is refused.
///
/// Errors: [`Error::Usage`] naming a link [`refuse_links`] refuses or a file over
/// [`MAX_COPIED_FILE`]; I/O errors naming the file.
pub fn copy_sandbox(from: &Path, kind: &str, to: &Path, fence: &Fence) -> Result<()> {
    std::fs::create_dir_all(to.join(".home")).at(to)?;
    refuse_what_leaves(from, Path::new(""), fence)?;
    super::copy_tree_filtered(from, to, &|rel: &Path, is_dir: bool| {
        if Fence::not_copied(rel) {
            return false;
        }
        if rel == Path::new("longrun/.lock") {
            return false;
        }
        if rel.parent() == Some(Path::new(".git")) {
            let name = rel.file_name().unwrap_or_default().to_string_lossy();
            if name.starts_with("fake-agent-") && name.ends_with(".count") {
                return false;
            }
        }
        let src = from.join(rel);
        !(is_dir && (src.join(".kit/progress.json").is_file() || is_sandbox(&src)))
    })?;
    if kind == "transcripts" {
        crate::embedded::write_transcript_fixtures(&to.join(".home"))?;
    }
    let key = Path::new(".home/.local/state/kit").join(crate::keys::HANDOFF_FILE);
    if from.join(&key).is_file() {
        crate::atomic::create_dir_all(&to.join(".home/.local/state/kit"))?;
        std::fs::copy(from.join(&key), to.join(&key)).at(&from.join(&key))?;
    }
    Ok(())
}

/// Refuse (before anything is copied) a link under `root/rel` that [`refuse_links`] refuses,
/// and a file larger than [`MAX_COPIED_FILE`]; what is not copied ([`Fence::not_copied`]) is
/// not looked at. Entries are taken in name order, so the same lab names the same file.
fn refuse_what_leaves(root: &Path, rel: &Path, fence: &Fence) -> Result<()> {
    let dir = root.join(rel);
    let mut entries =
        std::fs::read_dir(&dir).at(&dir)?.collect::<std::io::Result<Vec<_>>>().at(&dir)?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let r = rel.join(entry.file_name());
        if Fence::not_copied(&r) {
            continue;
        }
        let ft = entry.file_type().at(&entry.path())?;
        if ft.is_symlink() {
            refuse_links(root, &r, fence)?;
        } else if ft.is_dir() {
            refuse_what_leaves(root, &r, fence)?;
        } else if ft.is_file() {
            let len = entry.metadata().at(&entry.path())?.len();
            if len > MAX_COPIED_FILE {
                return Err(too_big(&r, len));
            }
        }
    }
    Ok(())
}

/// The refusal of a file at `r` (relative to the lab) of `len` bytes, over [`MAX_COPIED_FILE`].
fn too_big(r: &Path, len: u64) -> Error {
    Error::usage(format!(
        "{} is {} MiB: a check copies the exercise's folder and takes files up to {} MiB, and no \
         exercise needs a larger one",
        r.display(),
        len >> 20,
        MAX_COPIED_FILE >> 20
    ))
    .with_hint(format!("remove it (rm {}), then kit exercise check", r.display()))
}

/// The most links [`resolve`] follows for one link (Linux's own limit, `ELOOP`).
pub const MAX_LINK_HOPS: usize = 40;

/// Refuse the link at `root/link` (`link` relative to the lab) when it leaves the lab (by its
/// words, or through the links it passes), leads into what the check owns (`fence`: the
/// check's own files would be judged against themselves, or read by the learner's code), or
/// stands for a file the check judges (an edited path must be the file itself).
///
/// Errors: [`Error::Usage`] naming the link, where it leads and the fix.
fn refuse_links(root: &Path, link: &Path, fence: &Fence) -> Result<()> {
    let target = std::fs::read_link(root.join(link)).at(&root.join(link))?;
    let fix = format!(
        "remove the link (rm {}) and put the file itself there, then kit exercise check",
        link.display()
    );
    let out = || {
        Error::usage(format!(
            "{} is a link to {}, outside the exercise's folder: a check copies only what is \
             inside it, and never follows a link out",
            link.display(),
            target.display()
        ))
        .with_hint(fix.clone())
    };
    if !stays_inside(link, &target) {
        return Err(out());
    }
    match resolve(root, link, fence)? {
        Landing::Outside => Err(out()),
        Landing::TooDeep => Err(Error::usage(format!(
            "{} is a link that leads through more than {MAX_LINK_HOPS} links (a loop of links?)",
            link.display()
        ))
        .with_hint(fix)),
        Landing::Check(at) => Err(Error::usage(format!(
            "{} is a link into the check's own files ({}): a check compares your work with \
             files it writes there itself, so a link to them is not your work; write the file \
             itself",
            link.display(),
            at.display()
        ))
        .with_hint(fix)),
        Landing::Inside(_) if fence.judges(link) => Err(Error::usage(format!(
            "{} is a link (to {}): the check judges {} itself, so it must be the file, not a \
             link to one",
            link.display(),
            target.display(),
            link.display()
        ))
        .with_hint(fix)),
        Landing::Inside(_) => Ok(()),
    }
}

/// Where a link of the lab leads ([`resolve`]).
#[derive(Debug, PartialEq, Eq)]
enum Landing {
    /// A path of the lab (relative), none of the check's own.
    Inside(PathBuf),
    /// Into a path the check owns: the path reached, with the rest of the words after it.
    Check(PathBuf),
    /// Above the lab's root.
    Outside,
    /// More than [`MAX_LINK_HOPS`] links on the way.
    TooDeep,
}

/// Follow the link at `root/link` as the system would, by words and the lab's own links (each
/// met on the way is followed, up to [`MAX_LINK_HOPS`]), never touching anything outside
/// `root`: the first path reached that the check owns ([`Fence::owner_of`]) is where it lands,
/// whatever words follow (the check's copy of that folder is not the lab's, so the lab cannot
/// say where a link inside it would go).
///
/// Errors: a link that cannot be read.
fn resolve(root: &Path, link: &Path, fence: &Fence) -> Result<Landing> {
    use std::path::Component;
    let mut at: Vec<std::ffi::OsString> = match link.parent() {
        Some(p) => p.components().map(|c| c.as_os_str().to_os_string()).collect(),
        None => vec![],
    };
    let first = std::fs::read_link(root.join(link)).at(&root.join(link))?;
    let mut todo: std::collections::VecDeque<std::ffi::OsString> =
        std::collections::VecDeque::new();
    let mut hops = 0;
    let mut pending = Some(first);
    loop {
        if let Some(target) = pending.take() {
            hops += 1;
            if hops > MAX_LINK_HOPS {
                return Ok(Landing::TooDeep);
            }
            let mut parts = Vec::new();
            for c in target.components() {
                match c {
                    Component::RootDir | Component::Prefix(_) => return Ok(Landing::Outside),
                    Component::CurDir => {}
                    Component::ParentDir | Component::Normal(_) => {
                        parts.push(c.as_os_str().to_os_string())
                    }
                }
            }
            for p in parts.into_iter().rev() {
                todo.push_front(p);
            }
        }
        let Some(part) = todo.pop_front() else { break };
        if part == ".." {
            if at.pop().is_none() {
                return Ok(Landing::Outside);
            }
            continue;
        }
        at.push(part);
        let here: PathBuf = at.iter().collect();
        if fence.owner_of(&here).is_some() {
            return Ok(Landing::Check(here.join(todo.iter().collect::<PathBuf>())));
        }
        let full = root.join(&here);
        if std::fs::symlink_metadata(&full).is_ok_and(|m| m.file_type().is_symlink()) {
            at.pop();
            pending = Some(std::fs::read_link(&full).at(&full)?);
        }
    }
    Ok(Landing::Inside(at.iter().collect()))
}

/// Whether a link at `link` (relative to the lab) with `target` resolves inside the lab, by its
/// words alone: relative, and never climbing above the lab's root.
fn stays_inside(link: &Path, target: &Path) -> bool {
    use std::path::Component;
    if target.is_absolute() {
        return false;
    }
    let mut depth = link.components().count() as i64 - 1;
    for c in target.components() {
        match c {
            Component::ParentDir => depth -= 1,
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return false,
        }
        if depth < 0 {
            return false;
        }
    }
    true
}

fn is_sandbox(dir: &Path) -> bool {
    [crate::sandbox::IN_GIT, crate::sandbox::IN_HOME].iter().any(|m| dir.join(m).is_file())
}

/// Run `ex`'s golden on its start state with the solution laid over it (must pass).
pub fn run_solution(ex: &Exercise, bins: &Binaries) -> Result<Outcome> {
    let case = ex.case(&format!("exercise {} solution", ex.slug))?;
    let owned = ex.clone();
    let build = move |_kind: &str, dir: &Path, env: &[(String, String)]| {
        let key = exercise::env_course_key(env)?;
        exercise::build_sandbox(&owned, dir, env, &key, &key, true)
    };
    golden::run_case(&case, bins, &build)
}

/// Run `ex`'s golden on its start state alone. The outcome is inverted: a failure of the golden
/// is a pass of this case, and a pass is reported as a failure saying the exercise passes before
/// the learner works.
pub fn run_start_fails(ex: &Exercise, bins: &Binaries) -> Result<Outcome> {
    let name = format!("exercise {} start fails", ex.slug);
    let case = ex.case(&name)?;
    let owned = ex.clone();
    let build = move |_kind: &str, dir: &Path, env: &[(String, String)]| {
        let key = exercise::env_course_key(env)?;
        exercise::build_sandbox(&owned, dir, env, &key, &key, false)
    };
    let o = golden::run_case(&case, bins, &build)?;
    let toml = format!("exercises/{}/exercise.toml", ex.slug);
    let failure = match (o.failure, ex.meta.start_fails_at.as_deref()) {
        (None, _) => Some(golden::Failure {
            line: 1,
            command: "(every step)".into(),
            detail: format!("{} passes on the start state: {START_PASSES}\n", ex.golden_origin()),
        }),
        (Some(f), None) => Some(golden::Failure {
            detail: format!(
                "{toml} has no start_fails_at: name the step the learner's work changes (the start failed at `{}`, golden.md:{})\n",
                f.command, f.line
            ),
            ..f
        }),
        (Some(f), Some(want)) if !f.command.contains(want) => Some(golden::Failure {
            detail: format!(
                "the start state fails at golden.md:{} `{}`, not at the step {toml}'s start_fails_at names (`{want}`): that step is broken on the start state for another reason, or start_fails_at is wrong\n{}",
                f.line, f.command, f.detail
            ),
            ..f
        }),
        (Some(_), Some(_)) => None,
    };
    Ok(Outcome { name, failure })
}

const START_PASSES: &str = "the exercise passes before the learner works; make golden.md check \
what the learner must change";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_stays_inside_only_by_relative_words_that_never_climb_out() {
        let cases: &[(&str, &str, bool)] = &[
            ("a", "b", true),
            ("d/a", "../b", true),
            ("d/a", "../../b", false),
            ("a", "../a", false),
            ("a", "/etc/passwd", false),
            (".kit-check/yours.txt", "../kit.txt", true),
            ("d/e/a", "../../x/../b", true),
            ("d/a", "./../../b", false),
        ];
        for (link, target, inside) in cases {
            assert_eq!(
                stays_inside(Path::new(link), Path::new(target)),
                *inside,
                "{link} -> {target}"
            );
        }
    }

    fn fence() -> Fence {
        Fence::new(
            [".check/judge.awk", ".git/kit-check/plain-git.sh", "green.sh"],
            &["writers.txt".into(), "longrun/".into()],
        )
    }

    /// Where a lab's link leads, followed as the system would through the lab's own links.
    #[test]
    fn a_link_is_followed_link_by_link_to_where_it_lands() {
        let lab = tempfile::tempdir().unwrap();
        let l = lab.path();
        for d in ["d/e", "notes", ".git/hooks"] {
            std::fs::create_dir_all(l.join(d)).unwrap();
        }
        let links: &[(&str, &str)] = &[
            ("writers.txt", ".check/writers"),
            ("notes/a.txt", "../.check/ref/longrun/goal.md"),
            ("up", "."),
            ("notes/via-up", "../up/.check/writers"),
            ("d/e/top", "../.."),
            ("notes/out", "../d/e/top/../x"),
            ("notes/b.txt", "a.txt"),
            ("notes/fine.txt", "../d/e/../plain.txt"),
            ("loop1", "loop2"),
            ("loop2", "loop1"),
            ("notes/helper", "../.git/kit-check/plain-git.sh"),
            ("notes/hooks", "../.git/hooks/x"),
            ("notes/green", "../green.sh"),
            ("notes/home", "../.home/.claude"),
        ];
        for (link, target) in links {
            std::os::unix::fs::symlink(target, l.join(link)).unwrap();
        }
        let f = fence();
        let at = |link: &str| resolve(l, Path::new(link), &f).unwrap();
        let check = |p: &str| Landing::Check(PathBuf::from(p));
        assert_eq!(at("writers.txt"), check(".check/writers"));
        assert_eq!(at("notes/a.txt"), check(".check/ref/longrun/goal.md"));
        assert_eq!(at("notes/via-up"), check(".check/writers"));
        assert_eq!(at("notes/b.txt"), check(".check/ref/longrun/goal.md"));
        assert_eq!(at("notes/out"), Landing::Outside);
        assert_eq!(at("notes/fine.txt"), Landing::Inside(PathBuf::from("d/plain.txt")));
        assert_eq!(at("loop1"), Landing::TooDeep);
        assert_eq!(at("notes/helper"), check(".git/kit-check/plain-git.sh"));
        assert_eq!(at("notes/hooks"), Landing::Inside(PathBuf::from(".git/hooks/x")));
        assert_eq!(at("notes/green"), check("green.sh"));
        assert_eq!(at("notes/home"), check(".home/.claude"));
    }

    /// A tester's cheats: the lab's files are links into what the check writes in its own
    /// sandbox (`.check/ref`, `.check/writers`); the copy refuses them, naming the link.
    #[test]
    fn the_copy_refuses_links_into_the_checks_own_files_and_links_for_judged_files() {
        let refused = |setup: &dyn Fn(&Path)| {
            let lab = tempfile::tempdir().unwrap();
            std::fs::create_dir_all(lab.path().join("longrun")).unwrap();
            setup(lab.path());
            let to = tempfile::tempdir().unwrap();
            copy_sandbox(lab.path(), "git", to.path(), &fence()).err().map(|e| e.to_string())
        };
        let link = |target: &str, at: &str| {
            let (target, at) = (target.to_string(), at.to_string());
            move |l: &Path| std::os::unix::fs::symlink(&target, l.join(&at)).unwrap()
        };
        let e = refused(&link(".check/writers", "writers.txt")).unwrap();
        assert!(
            e.contains("writers.txt is a link into the check's own files (.check/writers)"),
            "{e}"
        );
        let e = refused(&link("../.check/ref/longrun/goal.md", "longrun/goal.md")).unwrap();
        assert!(e.contains("longrun/goal.md is a link into the check's own files"), "{e}");
        let e = refused(&link("mine.txt", "writers.txt")).unwrap();
        assert!(e.contains("the check judges writers.txt itself"), "{e}");
        let e = refused(&link("other", "longrun/.frozen")).unwrap();
        assert!(e.contains("the check judges longrun/.frozen itself"), "{e}");
        // A link among the learner's own files, to their own files, is theirs.
        assert_eq!(refused(&link("NOTES.md", "README.md")), None);
        // The learner's .check/ is not the check's: not copied, links inside it not looked at.
        let planted = |l: &Path| {
            std::fs::create_dir_all(l.join(".check/ref")).unwrap();
            std::os::unix::fs::symlink("/etc/passwd", l.join(".check/ref/x")).unwrap();
            std::os::unix::fs::symlink("mine", l.join(".kit-check")).unwrap();
        };
        assert_eq!(refused(&planted), None);
    }

    #[test]
    fn the_copy_refuses_a_link_out_and_a_huge_file_and_drops_leftovers() {
        let from = tempfile::tempdir().unwrap();
        let f = from.path();
        std::fs::create_dir_all(f.join(".git")).unwrap();
        std::fs::create_dir_all(f.join("longrun")).unwrap();
        std::fs::write(f.join("work.py"), "x = 1\n").unwrap();
        std::fs::write(f.join(".git/fake-agent-cheat.count"), "2\n").unwrap();
        std::fs::write(f.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(f.join("longrun/.lock"), "pid 1\n").unwrap();
        std::os::unix::fs::symlink("work.py", f.join("alias.py")).unwrap();
        let to = tempfile::tempdir().unwrap();
        copy_sandbox(f, "git", to.path(), &fence()).unwrap();
        assert!(to.path().join("work.py").is_file());
        assert!(to.path().join(".git/HEAD").is_file());
        assert!(!to.path().join(".git/fake-agent-cheat.count").exists());
        assert!(!to.path().join("longrun/.lock").exists());
        assert_eq!(std::fs::read_link(to.path().join("alias.py")).unwrap(), Path::new("work.py"));

        std::fs::create_dir_all(f.join(".check")).unwrap();
        std::fs::write(f.join(".check/writers"), "planted\n").unwrap();
        std::os::unix::fs::symlink(f.join("work.py"), f.join("out.py")).unwrap();
        let to = tempfile::tempdir().unwrap();
        let e = copy_sandbox(f, "git", to.path(), &fence()).unwrap_err().to_string();
        assert!(e.contains("out.py is a link to"), "{e}");
        std::fs::remove_file(f.join("out.py")).unwrap();
        let to = tempfile::tempdir().unwrap();
        copy_sandbox(f, "git", to.path(), &fence()).unwrap();
        assert!(!to.path().join(".check").exists(), "the learner's .check/ is not copied");

        let big = std::fs::File::create(f.join("big.bin")).unwrap();
        big.set_len(MAX_COPIED_FILE + 1).unwrap();
        let to = tempfile::tempdir().unwrap();
        let e = copy_sandbox(f, "git", to.path(), &fence()).unwrap_err().to_string();
        assert!(e.contains("big.bin is 16 MiB"), "{e}");
    }
}
