//! kit's per-user secrets, kept outside every repository: the state folder they live in
//! ([`state_dir`]: `$XDG_STATE_HOME`, else `~/.local/state`, as the XDG Base Directory spec
//! says), how a key file is made and read ([`load_or_create`], [`load`]), and the HMAC-SHA256
//! (RFC 2104) they sign with — the `hmac` crate over `sha2`, its `verify_slice` comparing in
//! constant time.
//!
//! Two keys live in `<state dir>/kit/`: the handoff key (`handoff.key`, [`crate::handoff::key`]:
//! what makes a handoff's stamp id unforgeable by hand) and the course key (`course.key`,
//! [`course_key_path`]: what makes the course's records and sandbox markers trustworthy). Each
//! is 32 bytes from `/dev/urandom`, written as 64 hex digits, mode 0600 in a 0700 folder,
//! created atomically and never overwritten. A process running as the same user can read them:
//! they stop hand edits and copies, not a determined forger.

use std::path::{Path, PathBuf};

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::error::{Error, IoContext, Result};

/// File name of the handoff key inside `<state dir>/kit/`.
pub const HANDOFF_FILE: &str = "handoff.key";
/// File name of the course key inside `<state dir>/kit/`.
pub const COURSE_FILE: &str = "course.key";
/// Bytes of key material.
pub const LEN: usize = 32;

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
        _ if path.file_name().is_some_and(|n| n == HANDOFF_FILE) => Err(Error::input(path, Some(1), "not a kit handoff key (64 hex digits expected)")
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

/// Where the course key is, from this process's environment: `<state dir>/kit/course.key`.
///
/// Errors: [`Error::Usage`] when neither `XDG_STATE_HOME` nor `HOME` is absolute.
pub fn course_key_path() -> Result<PathBuf> {
    state_dir(|k| std::env::var(k).ok()).map(|d| d.join("kit").join(COURSE_FILE))
}

/// The course key, `None` when it was never made (then nothing was ever stamped here).
///
/// Errors: an unreadable or malformed key file.
pub fn load_course_key() -> Result<Option<Vec<u8>>> {
    load(&course_key_path()?)
}

fn mac(key: &[u8], msg: &[u8]) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(msg);
    mac
}

/// HMAC-SHA256 of `msg` under `key` (RFC 2104 with SHA-256), 32 bytes.
pub fn hmac_sha256(key: &[u8], msg: &[u8]) -> [u8; 32] {
    mac(key, msg).finalize().into_bytes().into()
}

/// Whether `tag` (hex digits, lowercase as kit writes them) is [`hmac_sha256`]`(key, msg)` or,
/// when shorter, its first bytes; compared in constant time. An empty, odd-length or
/// non-lowercase-hex `tag` is never one.
pub fn verify_hex(key: &[u8], msg: &[u8], tag: &str) -> bool {
    let lower = tag.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    let Ok(bytes) = hex::decode(tag) else { return false };
    lower && !bytes.is_empty() && mac(key, msg).verify_truncated_left(&bytes).is_ok()
}

/// HMAC-SHA256 of `fields` (joined by newlines) under `key`, as 64 hex digits.
pub fn sign(key: &[u8], fields: &[&str]) -> String {
    hex::encode(hmac_sha256(key, fields.join("\n").as_bytes()))
}

/// Whether `stamp` is [`sign`]`(key, fields)` (compared in constant time).
pub fn verify(key: &[u8], fields: &[&str], stamp: &str) -> bool {
    let Ok(bytes) = hex::decode(stamp) else { return false };
    mac(key, fields.join("\n").as_bytes()).verify_slice(&bytes).is_ok()
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
    fn a_stamp_verifies_only_its_own_fields_under_its_own_key() {
        let s = sign(b"k1", &["4", "04-x", "/lab/04-x"]);
        assert!(verify(b"k1", &["4", "04-x", "/lab/04-x"], &s));
        assert!(!verify(b"k2", &["4", "04-x", "/lab/04-x"], &s));
        assert!(!verify(b"k1", &["3", "04-x", "/lab/04-x"], &s));
        assert!(!verify(b"k1", &["4", "04-x", "/lab/04-x"], "not hex"));
        // RFC 4231 test case 2, through the same code.
        assert_eq!(
            sign(b"Jefe", &["what do ya want for nothing?"]),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn a_truncated_tag_verifies_in_lowercase_hex_only() {
        let full = hex::encode(hmac_sha256(b"k", b"msg"));
        assert!(verify_hex(b"k", b"msg", &full));
        assert!(verify_hex(b"k", b"msg", &full[..12]));
        assert!(!verify_hex(b"k", b"msg2", &full[..12]));
        assert!(!verify_hex(b"k2", b"msg", &full[..12]));
        assert!(!verify_hex(b"k", b"msg", &full[..12].to_uppercase()));
        assert!(!verify_hex(b"k", b"msg", &full[..11]));
        assert!(!verify_hex(b"k", b"msg", ""));
    }

    #[test]
    fn the_state_dir_prefers_an_absolute_xdg_state_home() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        };
        let p = |pairs| state_dir(env(pairs)).ok().map(|p| p.display().to_string());
        assert_eq!(p(&[("XDG_STATE_HOME", "/s"), ("HOME", "/h")]).as_deref(), Some("/s"));
        assert_eq!(
            p(&[("XDG_STATE_HOME", "rel"), ("HOME", "/h")]).as_deref(),
            Some("/h/.local/state")
        );
        assert_eq!(p(&[("HOME", "")]), None);
        assert_eq!(p(&[]), None);
    }

    #[test]
    fn created_once_with_mode_0600_and_kept() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("state/kit").join(HANDOFF_FILE);
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
