//! The learner's lab and its progress file. The lab is `$KIT_LAB` (a relative one is looked for
//! from the current folder upwards), else `./kit-lab` or the current folder when it holds
//! `.kit/progress.json`, else the nearest folder above that does, else `./kit-lab` ([`locate`];
//! the lab last written is remembered in `<state dir>/kit/last-lab`); exercise N lives in
//! `<lab>/NN-slug/` unless `kit exercise start N --dir DIR` put it elsewhere.
//!
//! `<lab>/.kit/progress.json` is written by [`Progress::save`] only (one writer, atomic):
//!
//! ```json
//! {
//!   "schema": "kit.progress/2",
//!   "exercises": {
//!     "01-init": {
//!       "dir": "/home/me/kit-lab/01-init",
//!       "started": "2026-10-01T09:00:00Z",
//!       "passed": { "time": "2026-10-01T09:10:00Z", "dir": "/home/me/kit-lab/01-init",
//!                   "digest": "…", "lab": "/home/me/kit-lab", "stamp": "…" },
//!       "earned": { …the first pass, the same fields… },
//!       "failed_since_pass": "2026-10-01T09:20:00Z",
//!       "solution_seen": "2026-10-01T09:05:00Z",
//!       "hints_seen": 1
//!     }
//!   }
//! }
//! ```
//!
//! Times are RFC 3339 (kit's clock). `passed` is the pass of the sandbox as it is now (`reset`
//! clears it); `earned` the first pass ever, which unlocks `kit exercise solution` and survives a
//! reset; `failed_since_pass` is when a check failed after a pass (that check cleared `passed`);
//! both passes carry a [`Pass`] stamp under the course key ([`super::stamp`]). [`Progress::load`]
//! ignores a pass whose stamp does not verify (written by hand, copied from another exercise or
//! lab) with a one-line note naming the file and `kit exercise check N`, and a genuine pass
//! recorded in another lab (`lab` is not this one: a progress file copied from there; a pass
//! without `lab`, from an older kit, counts when its `dir` is inside this lab), with one note
//! for them all. `solution_seen` is when
//! `kit exercise solution --show-anyway` showed the solution before any pass; `hints_seen` the
//! highest hint level shown. A `kit.progress/1` file is read too: its passes were not stamped,
//! so they become "started" (check again).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The progress file's schema id.
pub const SCHEMA: &str = "kit.progress/2";
/// The schema before passes were stamped, still read.
pub const SCHEMA_1: &str = "kit.progress/1";

/// How [`locate`] found the lab.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// `$KIT_LAB`.
    Env,
    /// The current folder is the lab, or holds it as `./kit-lab`.
    Here,
    /// A folder above the current one holds `.kit/progress.json`.
    Above,
    /// No lab yet: `./kit-lab`, made by the first `kit exercise start`.
    New,
    /// No lab here; the lab kit last used, shown read-only by `kit lesson` and `kit exercise
    /// list` (see [`locate_for_reading`]).
    Last,
}

/// [`locate`] for the commands that only show progress: with no lab here, the lab last used
/// (it holds the learner's progress), rather than an empty new one.
pub fn locate_for_reading(cwd: &Path) -> (PathBuf, Origin) {
    let (lab, origin) = locate(cwd);
    if origin == Origin::New {
        if let Some(last) = last_lab() {
            if canonical(&last) != canonical(&lab) {
                return (last, Origin::Last);
            }
        }
    }
    (lab, origin)
}

/// The lab folder for a command run in `cwd`.
pub fn lab_dir(cwd: &Path) -> PathBuf {
    locate(cwd).0
}

/// The lab folder for a command run in `cwd`, and how it was found: `$KIT_LAB` (a relative one
/// holds from any folder below the one it was made in), else `./kit-lab` or the current folder
/// when it is a lab, else the nearest lab above, else a new `./kit-lab`.
pub fn locate(cwd: &Path) -> (PathBuf, Origin) {
    let is_lab = |d: &Path| d.join(".kit/progress.json").is_file();
    if let Some(v) = std::env::var_os("KIT_LAB").filter(|v| !v.is_empty()) {
        let lab = cwd
            .ancestors()
            .map(|a| a.join(&v))
            .find(|lab| is_lab(lab))
            .unwrap_or_else(|| cwd.join(&v));
        return (lab, Origin::Env);
    }
    let here = cwd.join("kit-lab");
    if is_lab(&here) {
        return (here, Origin::Here);
    }
    if is_lab(cwd) {
        return (cwd.to_path_buf(), Origin::Here);
    }
    if let Some(found) = cwd.ancestors().skip(1).find(|a| is_lab(a)) {
        return (found.to_path_buf(), Origin::Above);
    }
    (here, Origin::New)
}

/// `<state dir>/kit/last-lab`: the lab kit last wrote progress to, so that a learner back after
/// a pause, in another folder, is told where the lab is.
fn last_lab_file() -> Option<PathBuf> {
    crate::keys::state_dir(|k| std::env::var(k).ok()).ok().map(|d| d.join("kit/last-lab"))
}

/// The lab kit last wrote progress to, if it still holds a progress file.
pub fn last_lab() -> Option<PathBuf> {
    let text = std::fs::read_to_string(last_lab_file()?).ok()?;
    let lab = PathBuf::from(text.trim_end_matches('\n'));
    (lab.is_absolute() && progress_path(&lab).is_file()).then_some(lab)
}

/// The line `kit lesson` and `kit exercise list` print about the lab they read, if any: a lab
/// found above the current folder is named (so a stale, unrelated one is noticed), and with no
/// lab here the one last used is pointed to.
pub fn where_line(lab: &Path, origin: Origin) -> Option<String> {
    match origin {
        Origin::Above => Some(format!(
            "lab: {} (found above this folder; KIT_LAB=DIR picks another)",
            lab.display()
        )),
        Origin::New => {
            let last = last_lab()?;
            (canonical(&last) != canonical(lab)).then(|| {
                format!(
                    "no lab in this folder; your lab is {0}: cd {0}, or export KIT_LAB={0}",
                    last.display()
                )
            })
        }
        Origin::Last => Some(format!(
            "lab: {0} (the last lab you used; there is none in this folder: cd {0} to go on)",
            lab.display()
        )),
        Origin::Env | Origin::Here => None,
    }
}

/// The note a command that makes a new lab in `lab` (`kit exercise start`, `next`, `kit lesson
/// N --lab`, run where [`locate`] found none) prints when the learner used another lab before:
/// it says that this lab is new, and where the old one is, without contradicting what the command
/// does. None when there is no other lab to name.
pub fn made_line(lab: &Path) -> Option<String> {
    let last = last_lab()?;
    (canonical(&last) != canonical(lab)).then(|| {
        format!(
            "no lab in this folder, so this command makes one: {0}; the lab you used before is \
             {1} (to go on there instead: cd {1}, or export KIT_LAB={1})",
            lab.display(),
            last.display()
        )
    })
}

/// What kit knows about one exercise in this lab.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(default)]
pub struct Entry {
    /// Where its sandbox is.
    pub dir: Option<PathBuf>,
    /// When `kit exercise start` laid it out.
    pub started: Option<String>,
    /// The pass of the sandbox as it is now (cleared by `kit exercise reset`).
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "lenient_pass")]
    pub passed: Option<Pass>,
    /// The first pass: unlocks the solution, kept by `kit exercise reset`.
    #[serde(skip_serializing_if = "Option::is_none", deserialize_with = "lenient_pass")]
    pub earned: Option<Pass>,
    /// When a check failed after a pass (which it cleared from `passed`); cleared by the next
    /// pass and by `kit exercise reset`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed_since_pass: Option<String>,
    /// When `kit exercise solution --show-anyway` showed the solution before any pass.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub solution_seen: Option<String>,
    /// The highest hint level shown.
    pub hints_seen: usize,
}

/// A pass record that is not shaped like one (a hand edit dropped a field) is no pass, and the
/// rest of the progress file still loads: it counts as not passed, as an unstamped pass does.
fn lenient_pass<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<Pass>, D::Error> {
    let v = Option::<serde_json::Value>::deserialize(d)?;
    Ok(v.and_then(|v| serde_json::from_value::<Pass>(v).ok()))
}

/// One pass of `kit exercise check`, stamped under the course key.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Pass {
    /// When it passed.
    pub time: String,
    /// The sandbox that passed.
    pub dir: PathBuf,
    /// [`super::stamp::edited_digest`] of the exercise's `edit` files when it passed.
    pub digest: String,
    /// The lab whose progress file recorded it (canonical; absent in passes of kits before it
    /// was recorded, which count only when `dir` is inside the lab).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lab: Option<PathBuf>,
    /// [`crate::keys::sign`] of [`Pass::fields`].
    pub stamp: String,
}

impl Pass {
    /// A pass of exercise `id` (`slug`) in `lab` now, stamped under `key`.
    pub fn new(key: &[u8], id: u32, slug: &str, lab: &Path, dir: &Path, digest: String) -> Pass {
        let mut p = Pass {
            time: crate::clock::now_rfc3339(),
            dir: dir.to_path_buf(),
            digest,
            lab: Some(canonical(lab)),
            stamp: String::new(),
        };
        p.stamp = crate::keys::sign(
            key,
            &p.fields(id, slug).iter().map(String::as_str).collect::<Vec<_>>(),
        );
        p
    }

    /// The signed fields: schema, id, slug, dir, time, digest, and the lab when recorded.
    fn fields(&self, id: u32, slug: &str) -> Vec<String> {
        let mut f = vec![
            SCHEMA.to_string(),
            id.to_string(),
            slug.to_string(),
            self.dir.to_string_lossy().into_owned(),
            self.time.clone(),
            self.digest.clone(),
        ];
        if let Some(lab) = &self.lab {
            f.push(lab.to_string_lossy().into_owned());
        }
        f
    }

    /// Whether the stamp is kit's for exercise `id` (`slug`) under `key`.
    pub fn verifies(&self, key: &[u8], id: u32, slug: &str) -> bool {
        let fields = self.fields(id, slug);
        crate::keys::verify(
            key,
            &fields.iter().map(String::as_str).collect::<Vec<_>>(),
            &self.stamp,
        )
    }

    /// Whether this pass was recorded in `lab`: its recorded lab is `lab`, or (a pass from before
    /// labs were recorded) its sandbox is inside `lab`.
    pub fn of_lab(&self, lab: &Path) -> bool {
        let lab = canonical(lab);
        match &self.lab {
            Some(l) => *l == lab,
            None => canonical(&self.dir).starts_with(&lab),
        }
    }
}

/// `p` with links resolved when it exists, else as it is.
pub(super) fn canonical(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

/// `<lab>/.kit/progress.json`.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct Progress {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// Keyed by the exercise's folder name, `NN-slug`.
    #[serde(default)]
    pub exercises: BTreeMap<String, Entry>,
    /// One line per record [`Progress::load`] ignored, for the learner (not saved).
    #[serde(skip)]
    pub notes: Vec<String>,
}

impl Default for Progress {
    fn default() -> Self {
        Progress { schema: SCHEMA.into(), exercises: BTreeMap::new(), notes: Vec::new() }
    }
}

/// A `kit.progress/1` entry: `passed` was a bare time.
#[derive(Deserialize)]
#[serde(default)]
#[derive(Default)]
struct EntryV1 {
    dir: Option<PathBuf>,
    started: Option<String>,
    passed: Option<String>,
    hints_seen: usize,
}

#[derive(Deserialize)]
struct ProgressV1 {
    #[serde(default)]
    exercises: BTreeMap<String, EntryV1>,
}

#[derive(Deserialize)]
struct SchemaOnly {
    schema: String,
}

/// Where the progress file of `lab` is.
pub fn progress_path(lab: &Path) -> PathBuf {
    lab.join(".kit").join("progress.json")
}

/// The exercise number of a slug `NN-…`.
fn id_of(slug: &str) -> Option<u32> {
    slug.split('-').next()?.parse().ok()
}

impl Progress {
    /// Read the lab's progress (empty when the file does not exist), keeping only the passes
    /// whose stamp verifies under this user's course key; each one dropped adds a line to
    /// [`Progress::notes`].
    ///
    /// Errors: unreadable or malformed file, or an unknown schema ([`Error::Input`]); a
    /// malformed course key.
    pub fn load(lab: &Path) -> Result<Progress> {
        Self::load_with(lab, crate::keys::load_course_key()?.as_deref())
    }

    /// [`Progress::load`] checking stamps against `key` (`None`: nothing verifies).
    ///
    /// Errors: as [`Progress::load`].
    pub fn load_with(lab: &Path, key: Option<&[u8]>) -> Result<Progress> {
        let path = progress_path(lab);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Progress::default()),
            Err(e) => return Err(Error::io(&path, e)),
        };
        let bad = |e: serde_json::Error| Error::input(&path, Some(e.line()), e.to_string());
        let schema = serde_json::from_str::<SchemaOnly>(&text).map_err(bad)?.schema;
        let shown = path.display();
        let mut p = match schema.as_str() {
            SCHEMA => serde_json::from_str::<Progress>(&text).map_err(bad)?,
            SCHEMA_1 => {
                let old: ProgressV1 = serde_json::from_str(&text).map_err(bad)?;
                let mut p = Progress::default();
                let unstamped: Vec<String> = old
                    .exercises
                    .iter()
                    .filter(|(_, e)| e.passed.is_some())
                    .map(|(slug, _)| id_of(slug).unwrap_or(0).to_string())
                    .collect();
                if let Some(first) = unstamped.first() {
                    p.notes.push(format!(
                        "note: {shown}: written by an older kit ({SCHEMA_1}), whose passes were not stamped: exercise{} {} count as started; run `kit exercise check {first}` (and the others) again",
                        if unstamped.len() == 1 { "" } else { "s" },
                        unstamped.join(", ")
                    ));
                }
                for (slug, e) in old.exercises {
                    let started = e.started.or(e.passed);
                    let entry =
                        Entry { dir: e.dir, started, hints_seen: e.hints_seen, ..Entry::default() };
                    p.exercises.insert(slug, entry);
                }
                p
            }
            other => {
                return Err(Error::input(
                    &path,
                    None,
                    format!("schema `{other}`, this kit reads `{SCHEMA}`"),
                )
                .with_hint("update kit"))
            }
        };
        let mut notes = Vec::new();
        let mut elsewhere: Vec<(u32, PathBuf)> = Vec::new();
        for (slug, e) in &mut p.exercises {
            let Some(n) = id_of(slug) else { continue };
            let genuine = |pass: &Pass| key.is_some_and(|k| pass.verifies(k, n, slug));
            let mut dropped = false;
            let mut other_lab = None;
            for slot in [&mut e.passed, &mut e.earned] {
                let Some(pass) = slot.as_ref() else { continue };
                if !genuine(pass) {
                    dropped = true;
                    *slot = None;
                } else if !pass.of_lab(lab) {
                    // Genuine, but another lab's: a progress file copied from there.
                    other_lab = Some(pass.dir.clone());
                    *slot = None;
                }
            }
            if dropped || other_lab.is_some() {
                e.started.get_or_insert_with(crate::clock::now_rfc3339);
            }
            if dropped {
                notes.push(format!(
                    "note: {shown}: exercise {n}'s pass is not stamped by kit (edited by hand or copied), so it is ignored; run `kit exercise check {n}`"
                ));
            } else if let Some(dir) = other_lab {
                elsewhere.push((n, dir));
            }
        }
        if let Some((n, dir)) = elsewhere.first() {
            // One line, not one per exercise: the whole file came from another lab.
            let which: Vec<String> = elsewhere.iter().map(|(n, _)| n.to_string()).collect();
            notes.push(format!(
                "note: {shown}: the passes of exercise{} {} were recorded in another lab (exercise {n}'s sandbox is {}, outside {}), so they are not this lab's; run `kit exercise check N` here",
                if which.len() == 1 { "" } else { "s" },
                which.join(", "),
                dir.display(),
                lab.display()
            ));
        }
        p.notes.extend(notes);
        Ok(p)
    }

    /// Write the progress atomically.
    pub fn save(&self, lab: &Path) -> Result<()> {
        let path = progress_path(lab);
        crate::atomic::create_dir_all(&lab.join(".kit"))?;
        let mut text = serde_json::to_string_pretty(self)
            .map_err(|e| Error::internal(format!("progress JSON: {e}")))?;
        text.push('\n');
        crate::atomic::write_atomic(&path, text.as_bytes())?;
        // Remembered for `where_line`; a courtesy, so a state folder kit cannot write is no error.
        if let Some(file) = last_lab_file() {
            let lab = canonical(lab);
            let _ = file.parent().map(crate::atomic::create_dir_all);
            let _ = crate::atomic::write_atomic(&file, format!("{}\n", lab.display()).as_bytes());
        }
        Ok(())
    }

    /// The entry of exercise `slug`, created empty if missing.
    pub fn entry(&mut self, slug: &str) -> &mut Entry {
        self.exercises.entry(slug.to_string()).or_default()
    }

    /// Whether exercise `slug`'s sandbox has passed (since its last start or reset).
    pub fn passed(&self, slug: &str) -> bool {
        self.exercises.get(slug).is_some_and(|e| e.passed.is_some())
    }

    /// Whether exercise `slug` ever passed: its solution is unlocked.
    pub fn earned(&self, slug: &str) -> bool {
        self.exercises.get(slug).is_some_and(|e| e.earned.is_some() || e.passed.is_some())
    }

    /// Whether the solution of `slug` was shown before any pass.
    pub fn solution_seen(&self, slug: &str) -> bool {
        self.exercises.get(slug).is_some_and(|e| e.solution_seen.is_some())
    }

    /// `not started`, `started`, `passed` or `failed since passing` (a check failed after a
    /// pass).
    pub fn status(&self, slug: &str) -> &'static str {
        match self.exercises.get(slug) {
            Some(e) if e.passed.is_some() => "passed",
            Some(e) if e.failed_since_pass.is_some() => "failed since passing",
            Some(e) if e.started.is_some() => "started",
            _ => "not started",
        }
    }

    /// [`Progress::status`], `passed, changed since` when `changed` (the files the exercise edits
    /// differ from those that passed), `started, passed before` when a reset laid out again an
    /// exercise that had passed (the pass stays on record as `earned`), with ` (solution seen)`
    /// when the solution was shown before a pass.
    pub fn status_line(&self, slug: &str, changed: bool) -> String {
        let s = match self.status(slug) {
            "passed" if changed => "passed, changed since",
            "started" if self.earned(slug) => "started, passed before",
            s => s,
        };
        if self.solution_seen(slug) {
            format!("{s} (solution seen)")
        } else {
            s.to_string()
        }
    }

    /// Print [`Progress::notes`] on `err` (stderr), one line each.
    pub fn print_notes(&self, err: &mut dyn std::io::Write) {
        for n in &self.notes {
            // A note is a courtesy: a closed stderr must not stop the command.
            let _ = writeln!(err, "{n}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pass(key: &[u8], lab: &Path, n: u32, slug: &str) -> Pass {
        Pass::new(key, n, slug, lab, &lab.join(slug), "d".into())
    }

    #[test]
    fn a_pass_missing_a_field_is_no_pass_and_the_rest_still_loads() {
        let d = tempfile::tempdir().unwrap();
        let key = b"k";
        let mut p = Progress::load_with(d.path(), Some(key)).unwrap();
        p.entry("02-who-writes-what").passed = Some(pass(key, d.path(), 2, "02-who-writes-what"));
        p.save(d.path()).unwrap();
        let path = progress_path(d.path());
        let text = std::fs::read_to_string(&path).unwrap();
        // A hand edit: a second exercise whose pass has no `dir`.
        let edited = text.replacen(
            "\"exercises\": {",
            "\"exercises\": {\"01-init\": {\"started\": \"x\", \"passed\": {\"time\": \"t\", \"digest\": \"d\", \"stamp\": \"s\"}},",
            1,
        );
        assert_ne!(edited, text, "{text}");
        std::fs::write(&path, edited).unwrap();
        let p = Progress::load_with(d.path(), Some(key)).unwrap();
        assert_eq!(p.status("01-init"), "started");
        assert_eq!(p.status("02-who-writes-what"), "passed");
    }

    #[test]
    fn progress_round_trips_and_names_its_status() {
        let d = tempfile::tempdir().unwrap();
        let key = b"k";
        let mut p = Progress::load_with(d.path(), Some(key)).unwrap();
        assert_eq!(p.status("01-init"), "not started");
        p.entry("01-init").started = Some("2026-10-01T09:00:00Z".into());
        p.save(d.path()).unwrap();
        let mut p = Progress::load_with(d.path(), Some(key)).unwrap();
        assert_eq!(p.status("01-init"), "started");
        p.entry("01-init").passed = Some(pass(key, d.path(), 1, "01-init"));
        p.save(d.path()).unwrap();
        let p = Progress::load_with(d.path(), Some(key)).unwrap();
        assert_eq!(p.status("01-init"), "passed");
        assert!(p.notes.is_empty(), "{:?}", p.notes);
        std::fs::write(progress_path(d.path()), r#"{"schema":"kit.progress/9"}"#).unwrap();
        assert!(matches!(Progress::load(d.path()), Err(Error::Input { .. })));
    }

    #[test]
    fn a_pass_under_another_key_or_exercise_is_ignored_with_a_note() {
        let d = tempfile::tempdir().unwrap();
        let mut p = Progress::default();
        p.entry("01-init").passed = Some(pass(b"other", d.path(), 1, "01-init"));
        p.entry("02-who").earned = Some(pass(b"k", d.path(), 1, "01-init"));
        p.save(d.path()).unwrap();
        let p = Progress::load_with(d.path(), Some(b"k")).unwrap();
        assert_eq!(p.status("01-init"), "started");
        assert!(!p.earned("02-who"));
        assert_eq!(p.notes.len(), 2, "{:?}", p.notes);
        assert!(p.notes[0].contains("kit exercise check 1"), "{:?}", p.notes);
        assert!(p.notes[1].contains("kit exercise check 2"), "{:?}", p.notes);
        let none = Progress::load_with(d.path(), None).unwrap();
        assert_eq!(none.status("01-init"), "started");
    }

    #[test]
    fn version_1_passes_become_started() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join(".kit")).unwrap();
        std::fs::write(
            progress_path(d.path()),
            r#"{"schema":"kit.progress/1","exercises":{"03-x":{"dir":"/l/03-x","started":"t0","passed":"t1","hints_seen":2}}}"#,
        )
        .unwrap();
        let p = Progress::load_with(d.path(), Some(b"k")).unwrap();
        assert_eq!(p.status("03-x"), "started");
        assert_eq!(p.exercises["03-x"].hints_seen, 2);
        assert_eq!(p.notes.len(), 1);
        assert!(p.notes[0].contains("kit exercise check 3"), "{:?}", p.notes);
        assert_eq!(p.schema, SCHEMA);
    }
}

#[cfg(test)]
mod other_lab_tests {
    use super::*;

    #[test]
    fn a_progress_file_copied_from_another_lab_counts_no_pass_with_one_note() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let key = b"k";
        let mut p = Progress::default();
        for (n, slug) in [(1, "01-init"), (2, "02-who")] {
            let pass = Pass::new(key, n, slug, a.path(), &a.path().join(slug), "d".into());
            p.entry(slug).earned = Some(pass.clone());
            p.entry(slug).passed = Some(pass);
        }
        p.save(a.path()).unwrap();
        let here = Progress::load_with(a.path(), Some(key)).unwrap();
        assert_eq!(here.status("02-who"), "passed");
        assert!(here.notes.is_empty(), "{:?}", here.notes);
        std::fs::create_dir_all(b.path().join(".kit")).unwrap();
        std::fs::copy(progress_path(a.path()), progress_path(b.path())).unwrap();
        let there = Progress::load_with(b.path(), Some(key)).unwrap();
        assert_eq!(there.status("01-init"), "started");
        assert!(!there.earned("02-who"));
        assert_eq!(there.notes.len(), 1, "{:?}", there.notes);
        assert!(
            there.notes[0].contains("exercises 1, 2 were recorded in another lab"),
            "{:?}",
            there.notes
        );
    }

    #[test]
    fn an_older_pass_without_a_lab_counts_only_inside_the_lab() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let mut pass =
            Pass::new(b"k", 1, "01-init", a.path(), &a.path().join("01-init"), "d".into());
        pass.lab = None;
        pass.stamp = crate::keys::sign(
            b"k",
            &pass.fields(1, "01-init").iter().map(String::as_str).collect::<Vec<_>>(),
        );
        assert!(pass.of_lab(a.path()));
        assert!(!pass.of_lab(b.path()));
    }
}
