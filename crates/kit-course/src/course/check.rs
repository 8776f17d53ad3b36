//! Running an exercise's `golden.md`: against a copy of the learner's sandbox (`kit exercise
//! check`: the learner's files cannot influence the checker and the check never writes into the
//! learner's folder) or, for an exercise whose work is only an answer (`check_in_new_lab`), a
//! lab laid out anew from its seed with only the learner's edited files; and against the start
//! and the solution (`kit verify`).

use std::path::Path;

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
            lay_new_lab(&owned, &sandbox, &seed, dir, env)
        };
        return golden::run_case_with_progress(&case, bins, &lay, progress);
    }
    let kind = ex.meta.sandbox.clone();
    let copy = move |_kind: &str, dir: &Path, _env: &[(String, String)]| {
        copy_sandbox(&sandbox, &kind, dir)
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
) -> Result<()> {
    let mut env = env.to_vec();
    env.retain(|(k, _)| k != exercise::SEED_VAR);
    env.push((exercise::SEED_VAR.into(), seed.into()));
    exercise::build_sandbox(ex, dir, &env, &exercise::env_course_key(&env)?, false)?;
    take_edited(ex, from, dir)
}

/// Copy what `ex`'s `edit` names (a file, or a folder with what is below it) from the learner's
/// lab `from` over the same path in `to`; a path `from` does not have (or holds as neither a file,
/// a folder nor a link) is removed from `to`. A
/// link on the way that leaves the lab, and a file over [`MAX_COPIED_FILE`], are refused as
/// [`copy_sandbox`] refuses them.
///
/// Errors: [`Error::Usage`] naming such a link or file; I/O errors naming the file.
pub fn take_edited(ex: &Exercise, from: &Path, to: &Path) -> Result<()> {
    for e in &ex.meta.edit {
        let rel = Path::new(e.trim_end_matches('/'));
        let mut on_the_way = std::path::PathBuf::new();
        for c in rel.components() {
            on_the_way.push(c);
            let p = from.join(&on_the_way);
            if let Ok(target) = std::fs::read_link(&p) {
                if !stays_inside(&on_the_way, &target) {
                    return Err(link_out(&on_the_way, &target));
                }
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
            refuse_what_leaves(from, rel)?;
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

/// Copy what a check of the sandbox `from` needs into `to`: the sandbox's own files and `.git`,
/// without what is not the exercise's work: the sandbox's `.home/` is laid anew for its kind
/// `kind` (the transcript fixtures come from the binary, not from the learner's copy) with only
/// the sandbox's own kit state (`.home/.local/state/kit/handoff.key`, which its setup made), no
/// nested lab (a folder with `.kit/progress.json`) or other exercise's sandbox (a folder with
/// a marker), no leftovers of the learner's experiments that are not work (the fake agent's
/// call counters `.git/fake-agent-*.count`, a loop's `longrun/.lock`).
///
/// A symbolic link is copied as a link only when it stays inside the lab (relative, and not
/// climbing out): a link that leaves the lab would let the check read or write the learner's
/// own files (or anything else), so the check refuses it, naming it.
///
/// Errors: [`Error::Usage`] naming a link that leaves the lab or a file over
/// [`MAX_COPIED_FILE`]; I/O errors naming the file.
pub fn copy_sandbox(from: &Path, kind: &str, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to.join(".home")).at(to)?;
    refuse_what_leaves(from, Path::new(""))?;
    super::copy_tree_filtered(from, to, &|rel: &Path, is_dir: bool| {
        if rel == Path::new(".home") || rel == Path::new(".kit") {
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

/// Refuse (before anything is copied) a link under `root/rel` that leaves `root`, and a file
/// larger than [`MAX_COPIED_FILE`]; `.home/` and `.kit/` are not copied and not looked at.
fn refuse_what_leaves(root: &Path, rel: &Path) -> Result<()> {
    let dir = root.join(rel);
    for entry in std::fs::read_dir(&dir).at(&dir)? {
        let entry = entry.at(&dir)?;
        let r = rel.join(entry.file_name());
        if r == Path::new(".home") || r == Path::new(".kit") {
            continue;
        }
        let ft = entry.file_type().at(&entry.path())?;
        if ft.is_symlink() {
            let target = std::fs::read_link(entry.path()).at(&entry.path())?;
            if !stays_inside(&r, &target) {
                return Err(link_out(&r, &target));
            }
        } else if ft.is_dir() {
            refuse_what_leaves(root, &r)?;
        } else if ft.is_file() {
            let len = entry.metadata().at(&entry.path())?.len();
            if len > MAX_COPIED_FILE {
                return Err(too_big(&r, len));
            }
        }
    }
    Ok(())
}

/// The refusal of a link at `r` (relative to the lab) to `target`, outside the lab.
fn link_out(r: &Path, target: &Path) -> Error {
    Error::usage(format!(
        "{} is a link to {}, outside the exercise's folder: a check copies only what is inside \
         it, and never follows a link out",
        r.display(),
        target.display()
    ))
    .with_hint(format!(
        "remove the link (rm {}) or put the file itself there, then kit exercise check",
        r.display()
    ))
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
        exercise::build_sandbox(&owned, dir, env, &exercise::env_course_key(env)?, true)
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
        exercise::build_sandbox(&owned, dir, env, &exercise::env_course_key(env)?, false)
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
        copy_sandbox(f, "git", to.path()).unwrap();
        assert!(to.path().join("work.py").is_file());
        assert!(to.path().join(".git/HEAD").is_file());
        assert!(!to.path().join(".git/fake-agent-cheat.count").exists());
        assert!(!to.path().join("longrun/.lock").exists());
        assert_eq!(std::fs::read_link(to.path().join("alias.py")).unwrap(), Path::new("work.py"));

        std::os::unix::fs::symlink(f.join("work.py"), f.join(".check")).unwrap();
        let to = tempfile::tempdir().unwrap();
        let e = copy_sandbox(f, "git", to.path()).unwrap_err().to_string();
        assert!(e.contains(".check is a link to"), "{e}");
        std::fs::remove_file(f.join(".check")).unwrap();

        let big = std::fs::File::create(f.join("big.bin")).unwrap();
        big.set_len(MAX_COPIED_FILE + 1).unwrap();
        let to = tempfile::tempdir().unwrap();
        let e = copy_sandbox(f, "git", to.path()).unwrap_err().to_string();
        assert!(e.contains("big.bin is 16 MiB"), "{e}");
    }
}
