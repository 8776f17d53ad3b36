//! Files embedded in the binary (DESIGN §2): `kit/` (templates, prompt, hook snippets, the
//! rehearsal project, prices), `lessons/`, `exercises/`, `fake-agent/scenarios/` and
//! `tests/cases/`, so an installed `kit` needs no checkout.

use include_dir::{include_dir, Dir};

/// `kit/`: templates and the rehearsal project.
pub static KIT: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/kit");
/// `lessons/`.
pub static LESSONS: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/lessons");
/// `exercises/`.
pub static EXERCISES: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/exercises");
/// `fake-agent/scenarios/`.
pub static SCENARIOS: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/fake-agent/scenarios");
/// `tests/cases/`: the kit test catalogue.
pub static CASES: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/tests/cases");

/// The text of an embedded file under `kit/`, e.g. `templates/goal.md`.
pub fn kit_file(path: &str) -> Option<&'static str> {
    KIT.get_file(path).and_then(|f| f.contents_utf8())
}
