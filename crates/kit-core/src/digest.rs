//! SHA-256 as kit writes it everywhere (frozen manifest, handoff fingerprints and stamps, the
//! journal): 64 lowercase hex digits, of bytes in memory or of a file read as a stream.

use std::io::Read;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::error::{IoContext, Result};

/// The SHA-256 of `bytes` as 64 lowercase hex digits.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The SHA-256 of everything `reader` yields, as 64 lowercase hex digits.
///
/// Errors: the read fails (`std::io::Error`, for the caller to name the file).
pub fn sha256_reader(mut reader: impl Read) -> std::io::Result<String> {
    let mut h = Sha256::new();
    std::io::copy(&mut reader, &mut h)?;
    Ok(hex::encode(h.finalize()))
}

/// The SHA-256 of the file at `path`, read as a stream.
///
/// Errors: [`crate::Error::Io`] naming `path` when it cannot be opened or read.
pub fn sha256_file(path: &Path) -> Result<String> {
    let f = std::fs::File::open(path).at(path)?;
    sha256_reader(f).at(path)
}

/// The SHA-256 of the file at `path`, remembered for the life of this process while the file
/// keeps its identity: the same device, inode, size, modification and change times (the rule git
/// uses for its index). For large files that rarely change and are hashed again and again (the
/// programs a loop pins: a Python interpreter is ~7 MB, read four times at a loop's start).
/// A write changes the change time, which no user can set back; a file whose change time is
/// within two seconds of the moment it was hashed may still be being written (git's "racily
/// clean" case), so its hash is not remembered.
///
/// Errors: [`crate::Error::Io`] naming `path` when it cannot be read.
pub fn sha256_file_remembered(path: &Path) -> Result<String> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    remembered_at(path, now)
}

/// [`sha256_file_remembered`] with the clock's `now` (Unix seconds) given.
fn remembered_at(path: &Path, now: i64) -> Result<String> {
    use std::os::unix::fs::MetadataExt;
    type Seen = std::sync::Mutex<std::collections::HashMap<std::path::PathBuf, (Identity, String)>>;
    #[derive(PartialEq, Clone, Copy)]
    struct Identity([i64; 7]);
    static SEEN: std::sync::OnceLock<Seen> = std::sync::OnceLock::new();
    let identity = |m: &std::fs::Metadata| {
        Identity([
            m.dev() as i64,
            m.ino() as i64,
            m.size() as i64,
            m.mtime(),
            m.mtime_nsec(),
            m.ctime(),
            m.ctime_nsec(),
        ])
    };
    let before = std::fs::metadata(path).at(path)?;
    let seen = SEEN.get_or_init(Seen::default);
    if let Some((id, hash)) = seen.lock().unwrap_or_else(|p| p.into_inner()).get(path) {
        if *id == identity(&before) {
            return Ok(hash.clone());
        }
    }
    let hash = sha256_file(path)?;
    let after = std::fs::metadata(path).at(path)?;
    if identity(&before) == identity(&after) && now - after.ctime() > 2 {
        seen.lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(path.to_path_buf(), (identity(&after), hash.clone()));
    }
    Ok(hash)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_and_files_hash_alike() {
        // FIPS 180-2 example "abc".
        let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert_eq!(sha256_hex(b"abc"), abc);
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, "abc").unwrap();
        assert_eq!(sha256_file(&p).unwrap(), abc);
        assert!(sha256_file(&d.path().join("missing")).is_err());
    }

    #[test]
    fn a_remembered_hash_follows_every_change_of_the_file() {
        use std::os::unix::fs::MetadataExt;
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("prog");
        std::fs::write(&p, "abc").unwrap();
        // Made now, so racily clean: hashed each time, never remembered.
        assert_eq!(sha256_file_remembered(&p).unwrap(), sha256_hex(b"abc"));
        std::fs::write(&p, "abd").unwrap();
        assert_eq!(sha256_file_remembered(&p).unwrap(), sha256_hex(b"abd"));
        // An old file (times set back; the change time is the kernel's, now): still racy.
        let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
        std::fs::File::options().write(true).open(&p).unwrap().set_modified(old).unwrap();
        assert_eq!(sha256_file_remembered(&p).unwrap(), sha256_hex(b"abd"));
        // A file replaced by another (new inode), or rewritten: the new content's hash.
        let q = d.path().join("other");
        std::fs::write(&q, "xyz").unwrap();
        std::fs::rename(&q, &p).unwrap();
        assert_eq!(sha256_file_remembered(&p).unwrap(), sha256_hex(b"xyz"));
        assert!(sha256_file_remembered(&d.path().join("missing")).is_err());
        // Remembered (hashed "an hour later"), then rewritten with the same size and its
        // modification time set back: the change time moved, so the new content is hashed.
        std::fs::write(&p, "one").unwrap();
        let hour_later = std::fs::metadata(&p).unwrap().ctime() + 3600;
        assert_eq!(remembered_at(&p, hour_later).unwrap(), sha256_hex(b"one"));
        let mtime = std::fs::metadata(&p).unwrap().modified().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&p, "two").unwrap();
        std::fs::File::options().write(true).open(&p).unwrap().set_modified(mtime).unwrap();
        assert_eq!(remembered_at(&p, hour_later).unwrap(), sha256_hex(b"two"));
        // A program on this machine, unchanged for long: the same hash twice, as sha256_file.
        let sh = Path::new("/bin/sh");
        if sh.exists() {
            let want = sha256_file(sh).unwrap();
            assert_eq!(sha256_file_remembered(sh).unwrap(), want);
            assert_eq!(sha256_file_remembered(sh).unwrap(), want);
        }
    }
}
