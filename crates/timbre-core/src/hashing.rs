//! Content hashes and cache keys, the same for every job: a file's (or a folder's) SHA-256, a
//! cheap identity that changes whenever a file is replaced, and short keys built from parts.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

/// The SHA-256 of a file, or of a folder's files (names and contents, in name order).
pub fn content_sha256(path: &Path) -> Result<String> {
    let mut hasher = Sha256::new();
    for file in files_of(path)? {
        if path.is_dir() {
            hasher.update(file.file_name().unwrap_or_default().as_encoded_bytes());
            hasher.update([0]);
        }
        // Through timbre_audio's check, so a FIFO is refused instead of blocking the job.
        let mut reader = timbre_audio::open_audio_file(&file)?;
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = std::io::Read::read(&mut reader, &mut buf)
                .with_context(|| format!("{}: cannot read", file.display()))?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
        }
    }
    Ok(hex(&hasher.finalize()))
}

/// Path, size and modification time of a file, or of every file of a folder: cheap, and
/// changes whenever a file is replaced.
pub fn identity(path: &Path) -> Result<String> {
    let mut identity = String::new();
    for file in files_of(path)? {
        let meta =
            std::fs::metadata(&file).with_context(|| format!("{}: cannot read", file.display()))?;
        let modified = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
        identity += &format!("{}|{}|{:?};", file.display(), meta.len(), modified);
    }
    Ok(identity)
}

/// A cache key: the first 16 bytes of the SHA-256 of the parts, each ended by a NUL, in hex.
pub fn cache_key(parts: &[&str]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    hex(&hasher.finalize()[..16])
}

/// `bytes` as lower-case hex, two digits per byte.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Bytes `path` (a file, or a folder's files) takes on disk; 0 when it cannot be read.
pub fn disk_bytes(path: &Path) -> u64 {
    files_of(path).map_or(0, |files| {
        files
            .iter()
            .filter_map(|f| std::fs::metadata(f).ok())
            .map(|m| m.len())
            .sum()
    })
}

fn files_of(path: &Path) -> Result<Vec<PathBuf>> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)
        .with_context(|| format!("{}: cannot list", path.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_hashes_to_its_contents_and_a_folder_to_its_names_and_contents() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.bin");
        std::fs::write(&file, b"abc").unwrap();
        assert_eq!(
            content_sha256(&file).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let folder = content_sha256(dir.path()).unwrap();
        std::fs::rename(&file, dir.path().join("b.bin")).unwrap();
        assert_ne!(content_sha256(dir.path()).unwrap(), folder);
        assert!(identity(dir.path()).unwrap().contains("b.bin|3|"));
    }

    #[test]
    fn cache_keys_separate_their_parts() {
        assert_eq!(cache_key(&["ab", "c"]).len(), 32);
        assert_ne!(cache_key(&["ab", "c"]), cache_key(&["a", "bc"]));
    }
}
