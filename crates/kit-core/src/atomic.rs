//! Atomic writes and durable appends: the only way kit writes its state files (DESIGN §3).
//! A write goes to a temporary file in the same folder, is fsynced, then renamed over the
//! target, and the folder is fsynced, so a reader (or a crash) sees the old file or the new one,
//! never half of one.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::Path;

use crate::error::{IoContext, Result};

/// A temporary file in `path`'s folder holding `bytes`, fsynced, created with mode 0o666 less the
/// umask (what `open(2)` would give a new file), ready to be renamed over `path`.
fn temp_with(path: &Path, bytes: &[u8]) -> Result<tempfile::NamedTempFile> {
    use std::os::unix::fs::PermissionsExt;
    let dir = folder(path);
    let mut tmp = tempfile::Builder::new()
        .prefix(".kit-tmp-")
        .permissions(fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)
        .at(path)?;
    tmp.write_all(bytes).at(path)?;
    Ok(tmp)
}

fn folder(path: &Path) -> &Path {
    path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

/// Write `bytes` to `path` atomically (temp file in the same folder, fsync, rename, fsync dir).
/// An existing file keeps its permission bits; a new one gets 0o666 less the umask, as with any
/// program that creates a file. A symbolic link at `path` is replaced, not followed.
///
/// Errors: [`crate::Error::Io`] naming `path` if any step fails; the target is then unchanged.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = temp_with(path, bytes)?;
    persist(tmp, path)
}

/// The last steps of [`write_atomic`] and [`write_atomic_with`]: `tmp` (written whole) takes
/// the mode of the file it replaces, reaches the disk, and is renamed over `path`.
fn persist(tmp: tempfile::NamedTempFile, path: &Path) -> Result<()> {
    if let Ok(meta) = fs::symlink_metadata(path) {
        if meta.is_file() {
            tmp.as_file().set_permissions(meta.permissions()).at(path)?;
        }
    }
    tmp.as_file().sync_all().at(path)?;
    tmp.persist(path).map_err(|e| crate::Error::io(path, e.error))?;
    sync_dir(folder(path));
    Ok(())
}

/// Like [`write_atomic`], with the bytes written by `fill` into a buffered writer on the
/// temporary file, so a large file (`kit report`'s page) need not be held in memory whole.
///
/// Errors: [`crate::Error::Io`] naming `path` if `fill` or any step fails; the target is then
/// unchanged.
pub fn write_atomic_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    let tmp = temp_with(path, b"")?;
    {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, tmp.as_file());
        fill(&mut w).at(path)?;
        w.flush().at(path)?;
    }
    persist(tmp, path)
}

/// Like [`write_atomic`], and give the file the Unix permission bits `perm` (e.g. `0o755`)
/// before it is renamed into place, so no reader ever sees the right bytes with the wrong mode.
/// A symbolic link at `path` is replaced, not followed.
pub fn write_atomic_mode(path: &Path, bytes: &[u8], perm: u32) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let tmp = temp_with(path, bytes)?;
    tmp.as_file().set_permissions(fs::Permissions::from_mode(perm)).at(path)?;
    tmp.as_file().sync_all().at(path)?;
    tmp.persist(path).map_err(|e| crate::Error::io(path, e.error))?;
    sync_dir(folder(path));
    Ok(())
}

/// Write `bytes` atomically, but only if `path` does not exist yet (never overwrites); the new
/// file gets 0o666 less the umask. Returns `Ok(false)` when the file already existed and was
/// left alone.
pub fn create_new_atomic(path: &Path, bytes: &[u8]) -> Result<bool> {
    create_new_atomic_inner(path, bytes, None)
}

/// Like [`create_new_atomic`], with the Unix permission bits `perm` set before the file appears.
pub fn create_new_atomic_mode(path: &Path, bytes: &[u8], perm: u32) -> Result<bool> {
    create_new_atomic_inner(path, bytes, Some(perm))
}

fn create_new_atomic_inner(path: &Path, bytes: &[u8], perm: Option<u32>) -> Result<bool> {
    let tmp = temp_with(path, bytes)?;
    if let Some(perm) = perm {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file().set_permissions(fs::Permissions::from_mode(perm)).at(path)?;
    }
    tmp.as_file().sync_all().at(path)?;
    match tmp.persist_noclobber(path) {
        Ok(_) => {
            sync_dir(folder(path));
            Ok(true)
        }
        Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(crate::Error::io(path, e.error)),
    }
}

/// Append one whole line (a `\n` is added) to `path` with a single `write` call on an
/// `O_APPEND` descriptor, then fsync. If the file does not end in a newline (a torn line left by
/// a killed writer), a newline is written first so the new line stays whole.
///
/// Returns the byte range the line (with its `\n`, without a repair newline) occupies in the
/// file, read from this descriptor's offset after the write: exact even when another process
/// appends at the same instant.
pub fn append_line(path: &Path, line: &str) -> Result<std::ops::Range<u64>> {
    debug_assert!(!line.contains('\n'));
    let mut f = OpenOptions::new().create(true).append(true).read(true).open(path).at(path)?;
    let len = f.metadata().at(path)?.len();
    let mut buf = Vec::with_capacity(line.len() + 2);
    if len > 0 && !ends_with_newline(&mut f, len) {
        buf.push(b'\n');
    }
    buf.extend_from_slice(line.as_bytes());
    buf.push(b'\n');
    f.write_all(&buf).at(path)?;
    let end = std::io::Seek::stream_position(&mut f).at(path)?;
    f.sync_data().at(path)?;
    Ok(end - (line.len() as u64 + 1)..end)
}

fn ends_with_newline(f: &mut File, len: u64) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let mut last = [0u8; 1];
    f.seek(SeekFrom::Start(len - 1)).is_ok() && f.read_exact(&mut last).is_ok() && last[0] == b'\n'
}

fn sync_dir(dir: &Path) {
    // Best effort: some filesystems refuse fsync on a directory.
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Create `dir` and its parents; errors name the folder.
pub fn create_dir_all(dir: &Path) -> Result<()> {
    fs::create_dir_all(dir).at(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_keep_an_existing_mode_and_give_new_files_what_open_would() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o7777;
        let d = tempfile::tempdir().unwrap();
        let plain = d.path().join("plain");
        fs::write(&plain, "x").unwrap(); // what the umask gives a new file here
        let fresh = d.path().join("fresh");
        write_atomic(&fresh, b"x").unwrap();
        assert_eq!(mode(&fresh), mode(&plain));
        let created = d.path().join("created");
        assert!(create_new_atomic(&created, b"x").unwrap());
        assert_eq!(mode(&created), mode(&plain));
        for kept in [0o664, 0o600, 0o755] {
            let p = d.path().join(format!("kept{kept:o}"));
            fs::write(&p, "old").unwrap();
            fs::set_permissions(&p, fs::Permissions::from_mode(kept)).unwrap();
            write_atomic(&p, b"new").unwrap();
            assert_eq!((mode(&p), fs::read(&p).unwrap()), (kept, b"new".to_vec()));
        }
    }

    #[test]
    fn append_repairs_a_torn_last_line() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("j.jsonl");
        fs::write(&p, "{\"a\":1}\n{\"torn\":").unwrap();
        append_line(&p, "{\"b\":2}").unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "{\"a\":1}\n{\"torn\":\n{\"b\":2}\n");
    }

    #[test]
    fn create_new_never_overwrites() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        assert!(create_new_atomic(&p, b"one").unwrap());
        assert!(!create_new_atomic(&p, b"two").unwrap());
        assert_eq!(fs::read(&p).unwrap(), b"one");
    }
}
