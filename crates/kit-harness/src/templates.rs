//! `kit/`, embedded in the binary (DESIGN §2): the files the harness installs into a user's
//! project (templates of the state files, the loop's prompt, the hook's settings snippet, the
//! schedule's units) and the rehearsal's sample project. The course's own files (lessons,
//! exercises, the test catalogue) are [`crate::embedded`]'s; the fake agent's scenarios are
//! [`crate::fake_agent`]'s.

use include_dir::{include_dir, Dir};

/// `kit/`: templates and the rehearsal project.
pub static KIT: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/../../kit");

/// The text of an embedded file under `kit/`, e.g. `templates/goal.md` (`None`: no such file,
/// or not UTF-8).
pub fn kit_file(path: &str) -> Option<&'static str> {
    KIT.get_file(path).and_then(|f| f.contents_utf8())
}
