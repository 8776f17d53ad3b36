//! Running one proof of an exercise's check (a variant or a cheat, [`super::proof`]) as a
//! learner would, and judging it by the check's own output and exit status.

use std::path::Path;
use std::time::Duration;

use super::exercise::Exercise;
use super::proof::{Proof, Side};
use crate::error::{Error, IoContext, Result};
use crate::golden::{Binaries, Failure, Outcome, Toolbox};

/// What a whole proof may take, start to verdict: generous, for a loaded machine.
const PROOF_TIMEOUT: Duration = Duration::from_secs(600);

/// Run `proof` of `ex` as a learner would (see [`super::proof`]'s module doc) with the binaries `bins`, and
/// judge it: a variant passes when the check passes; a cheat passes when the check fails at its
/// `fails_at` step (or refuses the folder, for `refused`).
///
/// Errors: the lab cannot be made, `kit exercise start` fails.
pub fn run(ex: &Exercise, proof: &Proof, bins: &Binaries) -> Result<Outcome> {
    let name = format!("exercise {} {} {}", ex.slug, proof.side.word(), proof.name);
    let tmp = tempfile::Builder::new()
        .prefix("kit-proof-")
        .tempdir_in(crate::golden::scratch_base())
        .map_err(|e| Error::io("a temporary folder", e))?;
    let (home, lab) = (tmp.path().join("home"), tmp.path().join("lab"));
    std::fs::create_dir_all(&home).at(&home)?;
    let tools = Toolbox::in_dir(&tmp.path().join("tools"), bins)?;
    let cheat_path = tmp.path().join("path");
    std::fs::create_dir_all(&cheat_path).at(&cheat_path)?;
    for (rel, bytes) in &proof.path {
        let p = cheat_path.join(rel);
        std::fs::write(&p, bytes).at(&p)?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).at(&p)?;
    }
    // The learner's course key, the same in every proof: a lab's draw (which copy of exercise
    // 13 is which) is keyed with it, so the lab a proof lays out from VERIFY_SEED is the same
    // every run and a proof's stored answer fits it. A learner's own key is random: their lab
    // differs even when they start it from VERIFY_SEED.
    let key_file = home.join(".local/state/kit").join(crate::keys::COURSE_FILE);
    std::fs::create_dir_all(key_file.parent().unwrap_or(&home)).at(&key_file)?;
    std::fs::write(&key_file, format!("{}\n", "6b".repeat(crate::keys::LEN))).at(&key_file)?;
    let mut env = crate::sandbox::environment(&home, vec![], crate::sandbox::LEARNER);
    let path = format!("{}:{}", cheat_path.display(), tools.path());
    for (k, v) in env.iter_mut() {
        if k == "PATH" {
            v.clone_from(&path);
        }
    }
    env.extend(
        [
            ("KIT_LAB", lab.to_string_lossy().as_ref()),
            (super::exercise::SEED_VAR, super::exercise::VERIFY_SEED),
            ("NO_COLOR", "1"),
            ("LANG", "C.UTF-8"),
            ("TZ", "UTC"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string())),
    );
    let fail = |line: usize, command: &str, detail: String| Outcome {
        name: name.clone(),
        failure: Some(Failure { line, command: command.to_string(), detail }),
    };
    // kit itself by absolute path, as a learner's `kit` is the real one: what the proof tests is
    // whether the check's own steps can be fooled.
    let kit = tools.dir().join("kit");
    let kit = shlex::try_quote(&kit.to_string_lossy()).map(|q| q.into_owned()).unwrap_or_default();
    let start = format!("{kit} exercise start {}", ex.meta.id);
    let (code, out) = shell(&start, tmp.path(), &env)?;
    if code != Some(0) {
        return Ok(fail(0, "kit exercise start", format!("`{start}` failed ({code:?}):\n{out}")));
    }
    let folder = lab.join(&ex.slug);
    let mut log = String::new();
    if proof.meta.solution {
        crate::embedded::write_files(&folder, &ex.solution)?;
        for cmd in &ex.meta.solution_steps {
            let (code, out) = shell(cmd, &folder, &env)?;
            log.push_str(&format!("$ {cmd}   (a solution step)\n{out}(exit {code:?})\n"));
        }
    }
    crate::embedded::write_files(&folder, &proof.files)?;
    for cmd in &proof.meta.before {
        let (code, out) = shell(cmd, &folder, &env)?;
        log.push_str(&format!("$ {cmd}\n{out}(exit {code:?})\n"));
    }
    let check = format!("{kit} exercise check");
    let (code, out) = shell(&check, &folder, &env)?;
    let passed = code == Some(0) && out.starts_with("PASS");
    let verdict = match (proof.side, passed) {
        (Side::Variant, true) => None,
        (Side::Variant, false) => Some(format!(
            "an honest variant ({}) fails the check:\n{out}\n(before the check:)\n{log}",
            proof.meta.about
        )),
        (Side::Cheat, true) => Some(format!(
            "a known cheat ({}; class {}) passes the check: {out}\n(what it did:)\n{log}",
            proof.meta.about,
            proof.meta.class.as_deref().unwrap_or("?")
        )),
        (Side::Cheat, false) => {
            let want = proof.meta.fails_at.as_deref().unwrap_or_default();
            let step = failing_step(&out);
            let at_step = match want {
                "refused" => code == Some(2),
                _ => step.is_some_and(|s| s.contains(want)),
            };
            (!at_step).then(|| {
                format!(
                    "the cheat ({}) fails, but not where it must (`{want}`): it failed at {}:\n{out}",
                    proof.meta.about,
                    step.map_or(format!("exit {code:?} with no step"), |s| format!("`{s}`"))
                )
            })
        }
    };
    Ok(match verdict {
        None => Outcome { name, failure: None },
        Some(detail) => fail(0, "kit exercise check", detail),
    })
}

/// The `$ ` command `kit exercise check` names as its first differing step.
fn failing_step(out: &str) -> Option<&str> {
    out.lines().find_map(|l| {
        let rest = l.strip_prefix("first differing step: golden.md:")?;
        rest.split_once("  $ ").map(|(_, cmd)| cmd)
    })
}

/// `command` through `/bin/sh -c` in `dir` with exactly `env`; stdout and stderr merged.
fn shell(command: &str, dir: &Path, env: &[(String, String)]) -> Result<(Option<i32>, String)> {
    let mut cmd = std::process::Command::new("/bin/sh");
    cmd.arg("-c").arg(command).current_dir(dir).env_clear().envs(env.iter().map(|(k, v)| (k, v)));
    let how = crate::proc::Spawn { merge: true, own_group: true, input: None };
    let done = crate::proc::spawn(&mut cmd, how)
        .at(dir)?
        .wait(PROOF_TIMEOUT, Some(crate::golden::EOF_GRACE))
        .at(dir)?;
    Ok((done.code, String::from_utf8_lossy(&done.stdout).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_failing_step_is_read_from_the_check_report() {
        let out = "FAIL  04 Write a goal\nfirst differing step: golden.md:31  $ kit loop --agent fake:lie --max-iterations 2\n  exit status: expected 3, got 0\n";
        assert_eq!(failing_step(out), Some("kit loop --agent fake:lie --max-iterations 2"));
        assert_eq!(failing_step("PASS  04 x\n"), None);
    }
}
