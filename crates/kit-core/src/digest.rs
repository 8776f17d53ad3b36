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
}
