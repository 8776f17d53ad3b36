//! The course (DESIGN §13): lessons (`lessons/NN-slug/`) and exercises (`exercises/NN-slug/`)
//! embedded in the binary, the learner's lab with its progress file, and the checker that runs
//! an exercise's `golden.md` against a copy of the learner's work. The file formats are fixed by
//! the course contract; [`lesson`] and [`exercise`] document them field by field.

pub mod check;
pub mod commands;
pub mod diagnose;
pub mod exercise;
pub mod lab;
pub mod lesson;
pub mod proof;
pub mod prove;
pub mod stamp;

use std::path::Path;

use crate::error::{IoContext, Result};

/// Copy the tree `from` into `to` (created if missing), `.git` included, keeping only the
/// entries `keep(path relative to from, is a folder)` accepts (a folder refused is skipped whole);
/// symbolic links are copied as links. Used so that a check never runs in the learner's own
/// folder.
pub(crate) fn copy_tree_filtered(
    from: &Path,
    to: &Path,
    keep: &dyn Fn(&Path, bool) -> bool,
) -> Result<()> {
    fn walk(root: &Path, rel: &Path, to: &Path, keep: &dyn Fn(&Path, bool) -> bool) -> Result<()> {
        let from = root.join(rel);
        let dest = to.join(rel);
        std::fs::create_dir_all(&dest).at(&dest)?;
        for entry in std::fs::read_dir(&from).at(&from)? {
            let entry = entry.at(&from)?;
            let src = entry.path();
            let r = rel.join(entry.file_name());
            let ft = entry.file_type().at(&src)?;
            if !keep(&r, ft.is_dir()) {
                continue;
            }
            let dst = to.join(&r);
            if ft.is_dir() {
                walk(root, &r, to, keep)?;
            } else if ft.is_symlink() {
                let target = std::fs::read_link(&src).at(&src)?;
                let _ = std::fs::remove_file(&dst);
                std::os::unix::fs::symlink(target, &dst).at(&dst)?;
            } else if ft.is_file() {
                std::fs::copy(&src, &dst).at(&src)?;
            }
        }
        Ok(())
    }
    walk(from, Path::new(""), to, keep)
}
