//! The rehearsal sample project (DESIGN §14), embedded from `kit/rehearsal/`: a small real
//! Python 3 project (standard-library `unittest`, 14 tests, `parse_duration` missing) and the
//! level-4 goal that `kit rehearse` gives it. The golden sandbox kind `rehearsal` and
//! `kit rehearse` both start from [`write_sample_project`] and [`commit_sample_project`].

use std::path::Path;

use crate::error::{Error, Result};

/// Where the project lives inside the embedded `kit/` folder.
const PROJECT: &str = "rehearsal/project";

/// Number of tests in the project (`python3 -m unittest discover -s tests`).
pub const TEST_COUNT: usize = 14;

/// The frozen paths: the tests and the limit criterion's script.
pub const FROZEN: [&str; 2] = ["tests", "tools"];

/// The level-4 goal (`kit/rehearsal/goal.md`) written into `longrun/goal.md`.
pub fn goal_text() -> &'static str {
    crate::templates::kit_file("rehearsal/goal.md").unwrap_or_default()
}

/// The original bytes of a project file, e.g. `tests/test_durations.py`.
pub fn original(rel: &str) -> Option<&'static [u8]> {
    crate::templates::KIT.get_file(format!("{PROJECT}/{rel}")).map(|f| f.contents())
}

/// Write the project's files under `dir` (created if missing).
///
/// Errors: [`Error::Io`] naming the file that could not be written.
pub fn write_sample_project(dir: &Path) -> Result<()> {
    write_sample_files(dir).map(|_| ())
}

/// [`write_sample_project`], returning the relative paths written, sorted.
pub fn write_sample_files(dir: &Path) -> Result<Vec<String>> {
    let root = crate::templates::KIT
        .get_dir(PROJECT)
        .ok_or_else(|| Error::internal("this kit was built without kit/rehearsal/project"))?;
    crate::embedded::write_tree(root, dir)
}

/// Make `dir` a git repository whose history is [`crate::git::init_sandbox`]'s empty commit and
/// one commit of everything in the tree, with the identities and dates in `env` (so the commit
/// ids are the same on every machine when `env` pins them). Returns the commit id.
///
/// Errors: [`Error::Internal`] when a git command fails, with its stderr.
pub fn commit_sample_project(dir: &Path, env: &[(String, String)]) -> Result<String> {
    crate::git::init_sandbox(dir, env)?;
    git(dir, env, &["add", "-A"])?;
    git(dir, env, &["commit", "-q", "-m", "confload: the sample project, parse_duration missing"])?;
    git(dir, env, &["rev-parse", "HEAD"]).map(|s| s.trim().to_string())
}

/// Run `git ARGS` in `dir` and return its stdout ([`crate::git::output_in`]).
pub(crate) fn git(dir: &Path, env: &[(String, String)], args: &[&str]) -> Result<String> {
    crate::git::output_in(dir, env, args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_project_has_its_files_and_the_goal_pins_the_counts() {
        let tmp = tempfile::tempdir().unwrap();
        let files = write_sample_files(tmp.path()).unwrap();
        for f in ["confload/durations.py", "tests/test_durations.py", "tests/test_loader.py"] {
            assert!(files.iter().any(|x| x == f), "{f} in {files:?}");
        }
        let goal = goal_text();
        assert!(goal.contains("Ran 9 tests") && goal.contains("Ran 14 tests"));
        assert!(original("tests/test_durations.py").is_some());
    }
}
