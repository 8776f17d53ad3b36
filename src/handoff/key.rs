//! The per-user secret that makes a handoff's stamp id unforgeable by hand (QA finding F2).
//!
//! A stamp id that is a plain hash of the block can be recomputed by anyone who edits the file,
//! agent included. So the id is an HMAC-SHA256 (RFC 2104) of the block and the summary under a
//! key kit keeps outside the repository: `$XDG_STATE_HOME/kit/handoff.key`, else
//! `~/.local/state/kit/handoff.key` (the XDG Base Directory default for state). `kit handoff
//! save` creates it on first use — 32 bytes from `/dev/urandom`, written as 64 hex digits, mode
//! 0600 in a 0700 folder, never overwritten — and `kit handoff verify` only reads it.
//!
//! What it does and does not guard against: an edited summary or stamp block, or a block typed
//! by hand, no longer carries the keyed id, and nothing in the repository lets one compute it.
//! A process running as the same user can still read the key file; the transcript proof and the
//! `handoff_saved` journal event are the other two witnesses (DESIGN §11).

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::{Error, IoContext, Result};

/// File name of the key inside `<state dir>/kit/`.
pub const FILE: &str = "handoff.key";
/// Bytes of key material.
pub const LEN: usize = 32;

/// Where the key lives, from the environment `var` looks up: `$XDG_STATE_HOME/kit/handoff.key`
/// when that variable is an absolute path (the XDG spec says to ignore relative ones), else
/// `$HOME/.local/state/kit/handoff.key`.
///
/// Errors: [`Error::Usage`] when neither variable gives an absolute path.
pub fn path(var: impl Fn(&str) -> Option<String>) -> Result<PathBuf> {
    state_dir(var).map(|d| d.join("kit").join(FILE))
}

/// kit's state folder from the environment `var` looks up: `$XDG_STATE_HOME` when absolute,
/// else `$HOME/.local/state`. Its `kit/` subfolder holds the handoff key and the course key.
///
/// Errors: [`Error::Usage`] when neither variable gives an absolute path.
pub fn state_dir(var: impl Fn(&str) -> Option<String>) -> Result<PathBuf> {
    let abs = |k: &str| var(k).map(PathBuf::from).filter(|p| p.is_absolute());
    if let Some(state) = abs("XDG_STATE_HOME") {
        return Ok(state);
    }
    if let Some(home) = abs("HOME") {
        return Ok(home.join(".local/state"));
    }
    Err(Error::usage(
        "neither XDG_STATE_HOME nor HOME is set to an absolute path: kit has nowhere to keep its handoff key",
    )
    .with_hint("export HOME=/path/to/your/home, then run the command again"))
}

/// [`path`] from this process's environment.
pub fn default_path() -> Result<PathBuf> {
    path(|k| std::env::var(k).ok())
}

/// The key for the project at `root`: a course sandbox that `kit exercise start` laid out (its
/// marker verifies, [`crate::course::marker::own_state_dir`]) keeps its own key in
/// `<sandbox>/.home/.local/state/kit/`, the folder its setup and `kit exercise check` use, so
/// the learner's own `kit handoff save` and the check agree; anywhere else [`default_path`].
///
/// Errors: as [`default_path`].
pub fn project_path(root: &Path) -> Result<PathBuf> {
    match crate::course::marker::own_state_dir(root) {
        Some(state) => Ok(state.join("kit").join(FILE)),
        None => default_path(),
    }
}

/// The key at `path`, or `None` when the file does not exist.
///
/// Errors: [`Error::Input`] naming the file when it does not hold 64 hex digits;
/// [`Error::Io`] when it cannot be read.
pub fn load(path: &Path) -> Result<Option<Vec<u8>>> {
    match std::fs::read_to_string(path) {
        Ok(text) => parse(path, &text).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// The key at `path`, created first when it does not exist (by whichever `kit` process gets
/// there first: the file is created without overwriting, then read back).
///
/// Errors: as [`load`], and [`Error::Io`] when the folder or the file cannot be created.
pub fn load_or_create(path: &Path) -> Result<Vec<u8>> {
    if let Some(key) = load(path)? {
        return Ok(key);
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).at(dir)?;
    }
    let mut bytes = [0u8; LEN];
    {
        use std::io::Read;
        let urandom = Path::new("/dev/urandom");
        std::fs::File::open(urandom).and_then(|mut f| f.read_exact(&mut bytes)).at(urandom)?;
    }
    create_private(path, format!("{}\n", hex::encode(bytes)).as_bytes())?;
    load(path)?
        .ok_or_else(|| Error::internal(format!("{} vanished after creation", path.display())))
}

/// Write `bytes` to `path` with mode 0600 unless it exists (then leave it): a temporary file in
/// the same folder, made 0600 before any byte is written, fsynced, then linked into place
/// without overwriting (so two first saves at once agree on one key).
fn create_private(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new().prefix(".kit-tmp-").tempfile_in(dir).at(path)?;
    tmp.as_file().set_permissions(std::fs::Permissions::from_mode(0o600)).at(path)?;
    tmp.write_all(bytes).at(path)?;
    tmp.as_file().sync_all().at(path)?;
    match tmp.persist_noclobber(path) {
        Ok(_) => Ok(()),
        Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(Error::io(path, e.error)),
    }
}

fn parse(path: &Path, text: &str) -> Result<Vec<u8>> {
    let t = text.trim();
    match hex::decode(t) {
        Ok(k) if k.len() == LEN => Ok(k),
        _ if path.file_name().is_some_and(|n| n == FILE) => Err(Error::input(path, Some(1), "not a kit handoff key (64 hex digits expected)")
            .with_hint(format!(
                "rm {} (the next kit handoff save creates a new key; handoffs saved with the old one will no longer verify)",
                path.display()
            ))),
        _ => Err(Error::input(path, Some(1), "not a kit key (64 hex digits expected)").with_hint(
            format!(
                "rm {} (kit makes a new one; what was stamped with the old one must be checked again)",
                path.display()
            ),
        )),
    }
}

/// HMAC-SHA256 of `msg` under `key` (RFC 2104 with SHA-256, block size 64 bytes).
pub fn hmac_sha256(key: &[u8], msg: &[u8]) -> [u8; 32] {
    let mut block = [0u8; 64];
    if key.len() > block.len() {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let pad = |b: u8| block.map(|k| k ^ b);
    let inner = Sha256::new().chain_update(pad(0x36)).chain_update(msg).finalize();
    Sha256::new().chain_update(pad(0x5c)).chain_update(inner).finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc_4231() {
        // RFC 4231 test cases 1, 2 and 6 (a key longer than the block).
        let cases: [(&[u8], &[u8], &str); 3] = [
            (
                &[0x0b; 20],
                b"Hi There",
                "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
            ),
            (
                b"Jefe",
                b"what do ya want for nothing?",
                "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
            ),
            (
                &[0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First",
                "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
            ),
        ];
        for (key, msg, want) in cases {
            assert_eq!(hex::encode(hmac_sha256(key, msg)), want);
        }
    }

    #[test]
    fn path_prefers_an_absolute_xdg_state_home() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        };
        let p = |pairs| path(env(pairs)).ok().map(|p| p.display().to_string());
        assert_eq!(
            p(&[("XDG_STATE_HOME", "/s"), ("HOME", "/h")]).as_deref(),
            Some("/s/kit/handoff.key")
        );
        assert_eq!(
            p(&[("XDG_STATE_HOME", "rel"), ("HOME", "/h")]).as_deref(),
            Some("/h/.local/state/kit/handoff.key")
        );
        assert_eq!(p(&[("HOME", "")]), None);
        assert_eq!(p(&[]), None);
    }

    #[test]
    fn created_once_with_mode_0600_and_kept() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("state/kit").join(FILE);
        assert_eq!(load(&p).unwrap(), None);
        let k = load_or_create(&p).unwrap();
        assert_eq!(k.len(), LEN);
        assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(
            std::fs::metadata(p.parent().unwrap()).unwrap().permissions().mode() & 0o777,
            0o700
        );
        assert_eq!(load_or_create(&p).unwrap(), k, "never replaced");
        std::fs::write(&p, "not hex\n").unwrap();
        match load(&p) {
            Err(Error::Input { line: Some(1), .. }) => {}
            other => panic!("{other:?}"),
        }
    }
}
