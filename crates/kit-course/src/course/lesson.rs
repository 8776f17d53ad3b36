//! Lessons: `lessons/NN-slug/` embedded in the binary, each `lesson.toml` ([`LessonToml`]) and
//! `README.md` (plain Markdown whose `console` blocks run in order as one golden case, so a lesson
//! can never show output kit does not print).

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::golden;

/// `lesson.toml`, field by field.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LessonToml {
    /// The lesson's number; equals the folder's `NN`.
    pub number: u32,
    /// One line.
    pub title: String,
    /// Expected reading and doing time, minutes.
    pub minutes: u32,
    /// What the README's console blocks start from: `empty`, `git`, `rehearsal`, `transcripts`.
    #[serde(default = "default_sandbox")]
    pub sandbox: String,
}

fn default_sandbox() -> String {
    "empty".into()
}

/// A lesson as embedded.
#[derive(Clone, Debug)]
pub struct Lesson {
    /// The folder name, `NN-slug`.
    pub slug: String,
    /// `lesson.toml`.
    pub meta: LessonToml,
    /// `README.md`.
    pub readme: &'static str,
}

impl Lesson {
    /// The README's console blocks as one case named `lesson NN-slug`.
    pub fn case(&self) -> Result<golden::Case> {
        self.case_of(self.readme)
    }

    /// [`Lesson::case`] from another text of `README.md` (the checkout's, for `--bless`).
    pub fn case_of(&self, readme: &str) -> Result<golden::Case> {
        let origin = format!("lessons/{}/README.md", self.slug);
        let mut case = golden::parse(&origin, readme)?;
        case.meta.name = format!("lesson {}", self.slug);
        case.meta.sandbox = Some(self.meta.sandbox.clone());
        Ok(case)
    }
}

/// Load every embedded lesson, sorted by number.
///
/// Errors: a malformed or missing `lesson.toml` or `README.md`, a number that is not the folder's
/// ([`Error::Input`] naming the file and line).
pub fn load_all() -> Result<Vec<Lesson>> {
    let mut out = Vec::new();
    for d in crate::embedded::LESSONS.dirs() {
        let slug = d.path().to_string_lossy().into_owned();
        let origin = format!("lessons/{slug}/lesson.toml");
        let text = d
            .get_file(d.path().join("lesson.toml"))
            .and_then(|f| f.contents_utf8())
            .ok_or_else(|| Error::input(&origin, None, "missing or not UTF-8"))?;
        let meta: LessonToml = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| crate::longrun::config::line_of(text, s.start));
            Error::input(&origin, line, e.message().to_string())
        })?;
        let nn: Option<u32> = slug.split('-').next().and_then(|n| n.parse().ok());
        if nn != Some(meta.number) {
            return Err(Error::input(
                &origin,
                None,
                format!("number = {} does not match the folder {slug}", meta.number),
            ));
        }
        let readme =
            d.get_file(d.path().join("README.md")).and_then(|f| f.contents_utf8()).ok_or_else(
                || Error::input(format!("lessons/{slug}/README.md"), None, "missing or not UTF-8"),
            )?;
        out.push(Lesson { slug, meta, readme });
    }
    out.sort_by_key(|l| l.meta.number);
    Ok(out)
}

/// Find lesson `n`.
///
/// Errors: [`Error::Usage`] pointing to `kit lesson`.
pub fn find(all: &[Lesson], n: u32) -> Result<&Lesson> {
    all.iter()
        .find(|l| l.meta.number == n)
        .ok_or_else(|| Error::usage(format!("there is no lesson {n}")).with_hint("kit lesson"))
}
