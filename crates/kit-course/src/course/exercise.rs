//! Exercises: `exercises/NN-slug/` embedded in the binary. Each holds `exercise.toml` (the only
//! place for metadata, [`ExerciseToml`]), `golden.md` (the steps `kit exercise check` runs, in the
//! golden format of [`crate::golden`]), `start/` (files laid over the base sandbox) and, where
//! the learner must write something, `solution/` (files laid over the start that make the golden
//! pass). The sandbox is built in the contract's order by [`build_sandbox`].

use std::path::Path;
use std::process::Stdio;

use serde::Deserialize;

use crate::error::{Error, IoContext, Result};
use crate::golden;

/// `exercise.toml`, field by field.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExerciseToml {
    /// The exercise's number; equals the folder's `NN`.
    pub id: u32,
    /// The lesson (1–8) it belongs to.
    pub lesson: u32,
    /// One line, shown by `kit exercise list` and on a pass.
    pub title: String,
    /// Expected time in minutes.
    #[serde(default)]
    pub minutes: Option<u32>,
    /// Base tree before `start/` is laid over it: `empty`, `git`, `rehearsal` or `transcripts`.
    #[serde(default = "default_sandbox")]
    pub sandbox: String,
    /// Whether the lab is a git repository (commit `start` after setup). Default true.
    #[serde(default = "default_true")]
    pub git: bool,
    /// Commands run (golden environment) after `start/` is laid out, before the commit.
    #[serde(default)]
    pub setup: Vec<String>,
    /// The files the learner is expected to change.
    #[serde(default)]
    pub edit: Vec<String>,
    /// Timeout of one golden step, e.g. `120s` (default: the golden's own, else 120 s).
    #[serde(default)]
    pub timeout: Option<golden::StepTimeout>,
    /// What to do, in the course's words.
    pub task: String,
    /// The hint ladder: the first names the concept, the last nearly gives the answer.
    #[serde(default)]
    pub hints: Vec<String>,
    /// The hint level that fits a failing step.
    #[serde(default)]
    pub step_hints: Vec<StepHint>,
    /// A substring of the `$ ` command of the step that must fail first on the start state: the
    /// step the learner's work changes. `kit verify`'s "start fails" case requires the start to
    /// fail there, not at any step (a golden broken for another reason must not count).
    #[serde(default)]
    pub start_fails_at: Option<String>,
    /// Commands run in the folder after `solution/` is laid (golden environment, in order), for
    /// what files cannot hold: a commit, a freeze, a loop run whose work the check reads (e.g.
    /// `["kit freeze tests tools", "git add -A && git commit -qm longrun"]`). `kit exercise
    /// solution` shows them after the files; a proof with `solution = true` runs them too.
    #[serde(default)]
    pub solution_steps: Vec<String>,
    /// Whether `kit exercise check` lays the lab out anew, from the seed its marker records (as
    /// `kit exercise start` did), and takes only the files `edit` names from the learner's lab,
    /// instead of copying the whole lab (default false). For an exercise whose work is only an
    /// answer about what the setup made (13: which handoff is genuine, forged or stale): the
    /// answer is judged against the lab as the setup left it, so nothing the learner did to the
    /// lab while investigating (a save, a commit, an edited copy, a journal line) can change the
    /// verdict, or be made to fit a chosen answer.
    #[serde(default)]
    pub check_in_new_lab: bool,
}

/// `[[step_hints]]`: when the failing step's command contains `step`, show hint `level`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepHint {
    /// A substring of the step's command.
    pub step: String,
    /// The hint level (1-based) to show.
    pub level: usize,
}

fn default_sandbox() -> String {
    "empty".into()
}
fn default_true() -> bool {
    true
}

/// An exercise as embedded: its metadata and files.
#[derive(Clone, Debug)]
pub struct Exercise {
    /// The folder name, `NN-slug`.
    pub slug: String,
    /// `exercise.toml`.
    pub meta: ExerciseToml,
    /// `golden.md`'s text.
    pub golden: &'static str,
    /// `start/` files, relative to `start/`.
    pub start: Vec<(String, &'static [u8])>,
    /// `solution/` files, relative to `solution/`.
    pub solution: Vec<(String, &'static [u8])>,
    /// `variants/*/`: honest work written another way, which must pass ([`super::proof`]).
    pub variants: Vec<super::proof::Proof>,
    /// `cheats/*/`: shortcuts, which must fail at their step ([`super::proof`]).
    pub cheats: Vec<super::proof::Proof>,
}

impl Exercise {
    /// `exercises/NN-slug/golden.md`, as errors and reports name it.
    pub fn golden_origin(&self) -> String {
        format!("exercises/{}/golden.md", self.slug)
    }

    /// The golden as a case named `name`, with this exercise's sandbox kind and timeout.
    pub fn case(&self, name: &str) -> Result<golden::Case> {
        self.case_of(name, self.golden)
    }

    /// [`Exercise::case`] from another text of `golden.md` (the checkout's, for `--bless`).
    pub fn case_of(&self, name: &str, golden_text: &str) -> Result<golden::Case> {
        let mut case = golden::parse(&self.golden_origin(), golden_text)?;
        case.meta.name = name.to_string();
        case.meta.sandbox = Some(self.meta.sandbox.clone());
        if self.meta.timeout.is_some() {
            case.meta.timeout = self.meta.timeout.clone();
        }
        Ok(case)
    }

    /// The hint of 1-based `level`, clamped to the ladder.
    pub fn hint(&self, level: usize) -> Option<(usize, &str)> {
        if self.meta.hints.is_empty() {
            return None;
        }
        let k = level.clamp(1, self.meta.hints.len());
        Some((k, self.meta.hints[k - 1].as_str()))
    }

    /// The hint level for a failing step's command (`step_hints`, else 1).
    pub fn level_for_step(&self, command: &str) -> usize {
        self.meta.step_hints.iter().find(|h| command.contains(&h.step)).map_or(1, |h| h.level)
    }
}

/// Load every embedded exercise, sorted by number.
///
/// Errors: a malformed or missing `exercise.toml`, a missing `golden.md`, an `id` that is not
/// the folder's number ([`Error::Input`] naming the file and line).
pub fn load_all() -> Result<Vec<Exercise>> {
    let mut out = Vec::new();
    for d in crate::embedded::EXERCISES.dirs() {
        let slug = d.path().to_string_lossy().into_owned();
        let toml_origin = format!("exercises/{slug}/exercise.toml");
        let text = d
            .get_file(d.path().join("exercise.toml"))
            .and_then(|f| f.contents_utf8())
            .ok_or_else(|| Error::input(&toml_origin, None, "missing or not UTF-8"))?;
        let meta = parse_meta(&slug, text)?;
        let golden = d
            .get_file(d.path().join("golden.md"))
            .and_then(|f| f.contents_utf8())
            .ok_or_else(|| {
                Error::input(format!("exercises/{slug}/golden.md"), None, "missing or not UTF-8")
            })?;
        let sub = |name: &str| {
            d.get_dir(d.path().join(name)).map(crate::embedded::files).unwrap_or_default()
        };
        let variants = super::proof::load(&slug, d, super::proof::Side::Variant)?;
        let cheats = super::proof::load(&slug, d, super::proof::Side::Cheat)?;
        out.push(Exercise {
            start: sub("start"),
            solution: sub("solution"),
            slug,
            meta,
            golden,
            variants,
            cheats,
        });
    }
    out.sort_by_key(|e| e.meta.id);
    Ok(out)
}

/// Parse `exercises/<slug>/exercise.toml`'s `text`.
///
/// Errors: [`Error::Input`] naming the file and line of a bad field, or of an `id` that is not
/// the folder's `NN`.
pub fn parse_meta(slug: &str, text: &str) -> Result<ExerciseToml> {
    let origin = format!("exercises/{slug}/exercise.toml");
    let meta: ExerciseToml = toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| crate::longrun::config::line_of(text, s.start));
        Error::input(&origin, line, e.message().to_string())
    })?;
    let nn: Option<u32> = slug.split('-').next().and_then(|n| n.parse().ok());
    if nn != Some(meta.id) {
        return Err(Error::input(
            &origin,
            Some(line_of_key(text, "id")),
            format!("id = {} does not match the folder {slug}", meta.id),
        ));
    }
    Ok(meta)
}

fn line_of_key(text: &str, key: &str) -> usize {
    text.lines()
        .position(|l| {
            l.trim_start().strip_prefix(key).is_some_and(|r| r.trim_start().starts_with('='))
        })
        .map_or(1, |i| i + 1)
}

/// Find exercise `n` in `all`.
///
/// Errors: [`Error::Usage`] listing how to see the exercises.
pub fn find(all: &[Exercise], n: u32) -> Result<&Exercise> {
    all.iter().find(|e| e.meta.id == n).ok_or_else(|| {
        Error::usage(format!("there is no exercise {n}")).with_hint("kit exercise list")
    })
}

/// The variable that gives an exercise's `setup` commands the lab's seed: a text they may derive
/// what differs from lab to lab from (exercise 13 shuffles which handoff is which with it), so
/// that one learner's answer is not another's. `kit exercise start` takes it from its own
/// environment when set (that is how `kit verify`'s proofs lay a lab out), else picks a new
/// one ([`new_seed`]); a sandbox built with no seed in its environment gets [`VERIFY_SEED`].
pub const SEED_VAR: &str = "KIT_LAB_SEED";

/// The variable that gives an exercise's `setup` commands the lab's draw: 64 hex digits, kit's
/// keyed hash ([`lab_draw`]) of the exercise and the lab's seed under the course key, which
/// kit keeps outside the lab. What a setup hides from the learner (exercise 13: which handoff
/// is genuine, forged or stale) is drawn from it, not from the seed: the seed is in plain text
/// in the lab's marker, the draw is in no file of the lab, and without the course key the seed
/// does not give it.
pub const DRAW_VAR: &str = "KIT_LAB_DRAW";

/// The lab's draw ([`DRAW_VAR`]) for exercise `slug` laid out from `seed` under `key` (the
/// course key: the same learner, seed and exercise draw the same lab, so a check that lays the
/// lab out anew lays out the learner's).
pub fn lab_draw(key: &[u8], slug: &str, seed: &str) -> String {
    crate::keys::sign(key, &["kit.lab-draw/1", slug, seed])
}

/// The seed of every lab `kit verify` lays out (its solution, start and proof cases), so that
/// an exercise's stored answers fit its verify labs.
pub const VERIFY_SEED: &str = "kit-verify";

/// A new lab seed: 16 hex digits from `/dev/urandom`.
///
/// Errors: `/dev/urandom` cannot be read.
pub fn new_seed() -> Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 8];
    let urandom = Path::new("/dev/urandom");
    std::fs::File::open(urandom).and_then(|mut f| f.read_exact(&mut bytes)).at(urandom)?;
    Ok(hex::encode(bytes))
}

/// Build exercise `ex`'s sandbox in `dir` with the golden environment `env`: base kind, `git
/// init` where the kind has none, `start/`, `setup` commands (with [`SEED_VAR`] set: `env`'s,
/// else [`VERIFY_SEED`]), commit `start`, the sandbox's marker ([`crate::sandbox`], with the
/// seed, stamped under `marker_key`) and, when `with_solution`,
/// `solution/` laid over it without a commit, then its `solution_steps` run. The setup commands
/// also get [`DRAW_VAR`], the lab's draw under `draw_key` (the course key of the learner whose
/// lab it is).
///
/// Errors: a setup command or a solution step failing ([`Error::Input`] naming `exercise.toml`),
/// git or I/O errors.
pub fn build_sandbox(
    ex: &Exercise,
    dir: &Path,
    env: &[(String, String)],
    marker_key: &[u8],
    draw_key: &[u8],
    with_solution: bool,
) -> Result<()> {
    std::fs::create_dir_all(dir.join(".home")).at(dir)?;
    golden::build_sandbox(&ex.meta.sandbox, dir, env)?;
    if ex.meta.git && !dir.join(".git").exists() {
        crate::git::init_sandbox(dir, env)?;
    }
    crate::embedded::write_files(dir, &ex.start)?;
    let mut setup_env = env.to_vec();
    if !setup_env.iter().any(|(k, _)| k == SEED_VAR) {
        setup_env.push((SEED_VAR.into(), VERIFY_SEED.into()));
    }
    let seed = setup_env.iter().find(|(k, _)| k == SEED_VAR).map_or("", |(_, v)| v.as_str());
    let draw = lab_draw(draw_key, &ex.slug, seed);
    let seed = seed.to_string();
    setup_env.retain(|(k, _)| k != DRAW_VAR);
    setup_env.push((DRAW_VAR.into(), draw));
    for cmd in &ex.meta.setup {
        let out = sh(cmd, dir, &setup_env)?;
        if !out.status.success() {
            return Err(Error::input(
                format!("exercises/{}/exercise.toml", ex.slug),
                None,
                format!(
                    "setup command `{cmd}` failed ({}):\n{}{}",
                    out.status,
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                ),
            ));
        }
    }
    if ex.meta.git {
        // The seed in the start commit's message makes each lab's commits its own, so a stamp,
        // a journal or a ref made in another copy of the exercise names commits this lab has
        // not (kit verify's labs share VERIFY_SEED, so their hashes stay fixed).
        let commit =
            format!("git add -A && git commit -q --allow-empty -m \"start (lab ${SEED_VAR})\"");
        let out = sh(&commit, dir, &setup_env)?;
        if !out.status.success() {
            return Err(Error::internal(format!(
                "git commit of the start state failed in {}: {}",
                dir.display(),
                String::from_utf8_lossy(&out.stderr)
            )));
        }
    }
    crate::sandbox::write(dir, ex.meta.id, &ex.slug, &seed, marker_key)?;
    if with_solution {
        crate::embedded::write_files(dir, &ex.solution)?;
        for cmd in &ex.meta.solution_steps {
            let out = sh(cmd, dir, env)?;
            if !out.status.success() {
                return Err(Error::input(
                    format!("exercises/{}/exercise.toml", ex.slug),
                    Some(line_of_key_in(ex, "solution_steps")),
                    format!(
                        "solution step `{cmd}` failed ({}):\n{}{}",
                        out.status,
                        String::from_utf8_lossy(&out.stdout),
                        String::from_utf8_lossy(&out.stderr)
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The line of `key` in `ex`'s `exercise.toml` (1 when it is not there).
fn line_of_key_in(ex: &Exercise, key: &str) -> usize {
    crate::embedded::EXERCISES
        .get_file(format!("{}/exercise.toml", ex.slug))
        .and_then(|f| f.contents_utf8())
        .map_or(1, |text| line_of_key(text, key))
}

/// The course key of the golden environment `env` (its `XDG_STATE_HOME`, inside the sandbox),
/// created on first use: what `kit verify` stamps its sandboxes' markers with, so that kit run in
/// such a sandbox finds the sandbox's own state as in a learner's lab.
///
/// Errors: `env` has no absolute state folder, or the key cannot be made.
pub fn env_course_key(env: &[(String, String)]) -> Result<Vec<u8>> {
    let var = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let dir = crate::keys::state_dir(var)?;
    crate::keys::load_or_create(&dir.join("kit").join(crate::keys::COURSE_FILE))
}

fn sh(cmd: &str, dir: &Path, env: &[(String, String)]) -> Result<std::process::Output> {
    std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(cmd)
        .current_dir(dir)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .output()
        .at(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_exercise_toml_names_the_file_and_line() {
        let cases: &[(&str, &str, usize)] = &[
            ("01-a", "id = 1\nlesson = 1\ntitle = \"t\"\ntask = \"x\"\ncolour = 3\n", 5),
            ("01-a", "id = 2\nlesson = 1\ntitle = \"t\"\ntask = \"x\"\n", 1),
            ("01-a", "id = 1\nlesson = \"one\"\ntitle = \"t\"\ntask = \"x\"\n", 2),
        ];
        for (slug, text, line) in cases {
            match parse_meta(slug, text) {
                Err(Error::Input { path, line: Some(l), .. }) => {
                    assert_eq!(path.to_string_lossy(), "exercises/01-a/exercise.toml");
                    assert_eq!(l, *line, "{text}");
                }
                other => panic!("{text}: {other:?}"),
            }
        }
        let ok = parse_meta("01-a", "id = 1\nlesson = 1\ntitle = \"t\"\ntask = \"x\"\n").unwrap();
        assert!(ok.git);
        assert_eq!(ok.sandbox, "empty");
    }

    /// The lines of `golden` that hand awk a value worked out by the shell (`-v said="$(kit …)"`,
    /// `-v tool="$tool"`, `awk '…' s="$s"`): any process of the learner's reads a command line in
    /// `/proc/PID/cmdline` while the check runs. A positional parameter (`-v want="$1"`, a
    /// section's name) is the caller's word, not a truth.
    fn truth_on_awk_command_line(golden: &str) -> Vec<String> {
        let handed =
            regex::Regex::new(r#"(-v\s+|'\s+)[A-Za-z_][A-Za-z0-9_]*=["']?\$(\(|\{?[A-Za-z_])"#)
                .unwrap();
        golden.lines().filter(|l| handed.is_match(l)).map(str::to_owned).collect()
    }

    #[test]
    fn no_golden_hands_awk_its_truth_on_the_command_line() {
        for bad in [
            r#"awk -v said="$(kit_says)" '"#,
            r#"awk -v said="$said" -v tool="$tool" '"#,
            r#"      print "rewrote", $5}' s="$s""#,
        ] {
            assert_eq!(truth_on_awk_command_line(bad).len(), 1, "{bad}");
        }
        assert!(truth_on_awk_command_line(r#"awk -v want="$1" '"#).is_empty());
        for ex in load_all().unwrap() {
            let found = truth_on_awk_command_line(ex.golden);
            assert!(found.is_empty(), "exercises/{}/golden.md: {found:?}", ex.slug);
        }
    }
}
