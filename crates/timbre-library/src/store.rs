//! Content-addressed audio store: `objects/<first two hex>/<sha256>.<ext>`.
//! Files are written under `tmp/` and renamed into place, so an object is never half written;
//! an object whose row never got committed is an orphan that [`ContentStore::collect_garbage`]
//! removes at the next start.

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use std::collections::HashSet;
use std::fs::{self, File};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

pub struct ContentStore {
    root: PathBuf,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredObject {
    pub sha256: String,
    pub path: PathBuf,
    pub size: u64,
}

#[derive(Debug, Default, PartialEq, Eq)]
pub struct GarbageReport {
    pub orphan_objects: usize,
    pub partial_files: usize,
}

impl ContentStore {
    pub fn open(root: PathBuf) -> Result<Self> {
        for dir in [root.join("objects"), root.join("tmp")] {
            fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        Ok(ContentStore { root })
    }

    /// Where every temporary file of the library's work goes: emptied at a start when no other
    /// process is alive.
    pub fn tmp_dir(&self) -> PathBuf {
        self.root.join("tmp")
    }

    pub fn object_path(&self, sha256: &str, ext: &str) -> PathBuf {
        self.root
            .join("objects")
            .join(&sha256[..2])
            .join(format!("{sha256}.{ext}"))
    }

    pub fn ingest_file(&self, src: &Path, ext: &str) -> Result<StoredObject> {
        let file = File::open(src).with_context(|| format!("{}: cannot open", src.display()))?;
        self.ingest(file, ext)
            .with_context(|| format!("{}: cannot copy into the library", src.display()))
    }

    pub fn ingest_bytes(&self, bytes: &[u8], ext: &str) -> Result<StoredObject> {
        self.ingest(bytes, ext)
            .context("cannot save audio into the library")
    }

    fn ingest(&self, mut reader: impl Read, ext: &str) -> Result<StoredObject> {
        let tmp_path = self
            .tmp_dir()
            .join(format!("{}.part", uuid::Uuid::new_v4()));
        let result = (|| {
            let mut tmp = File::create(&tmp_path)?;
            let mut hasher = Sha256::new();
            let mut buf = vec![0u8; 1 << 16];
            let mut size = 0u64;
            loop {
                let n = reader.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                hasher.update(&buf[..n]);
                tmp.write_all(&buf[..n])?;
                size += n as u64;
            }
            tmp.sync_all()?;
            let sha256 = hex(&hasher.finalize());
            let path = self.object_path(&sha256, ext);
            let dir = path.parent().expect("object paths have a parent");
            fs::create_dir_all(dir)?;
            if path.exists() {
                fs::remove_file(&tmp_path)?;
            } else {
                fs::rename(&tmp_path, &path)?;
                File::open(dir)?.sync_all()?;
            }
            Ok::<_, std::io::Error>(StoredObject { sha256, path, size })
        })();
        if result.is_err() {
            let _ = fs::remove_file(&tmp_path);
        }
        Ok(result?)
    }

    pub fn remove(&self, sha256: &str, ext: &str) -> Result<()> {
        let path = self.object_path(sha256, ext);
        match fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(e).with_context(|| format!("removing {}", path.display()))
            }
            _ => Ok(()),
        }
    }

    /// Removes the temporary files (partial writes, outputs of killed jobs); how many.
    /// Only safe while no other process is working.
    pub fn clean_tmp(&self) -> Result<usize> {
        let mut removed = 0;
        for entry in fs::read_dir(self.tmp_dir())? {
            let path = entry?.path();
            fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
            removed += 1;
        }
        Ok(removed)
    }

    /// Removes partial writes and every object not named in `keep` (sha256, ext).
    /// Only safe while no other process is importing.
    pub fn collect_garbage(&self, keep: &HashSet<(String, String)>) -> Result<GarbageReport> {
        let mut report = GarbageReport {
            partial_files: self.clean_tmp()?,
            ..GarbageReport::default()
        };
        for shard in fs::read_dir(self.root.join("objects"))? {
            for entry in fs::read_dir(shard?.path())? {
                let path = entry?.path();
                let (Some(stem), Some(ext)) = (path.file_stem(), path.extension()) else {
                    continue;
                };
                let key = (
                    stem.to_string_lossy().into_owned(),
                    ext.to_string_lossy().into_owned(),
                );
                if !keep.contains(&key) {
                    fs::remove_file(&path)
                        .with_context(|| format!("removing orphan {}", path.display()))?;
                    report.orphan_objects += 1;
                }
            }
        }
        Ok(report)
    }
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_content_is_stored_once_under_its_hash() {
        let dir = tempfile::tempdir().unwrap();
        let store = ContentStore::open(dir.path().join("store")).unwrap();
        let a = store.ingest_bytes(b"hello", "wav").unwrap();
        let b = store.ingest_bytes(b"hello", "wav").unwrap();
        assert_eq!(a, b);
        assert_eq!(a.sha256, sha256_hex(b"hello"));
        assert_eq!(fs::read(&a.path).unwrap(), b"hello");
        assert_eq!(
            fs::read_dir(dir.path().join("store/tmp")).unwrap().count(),
            0
        );
    }

    #[test]
    fn garbage_collection_keeps_referenced_objects_only() {
        let dir = tempfile::tempdir().unwrap();
        let store = ContentStore::open(dir.path().join("store")).unwrap();
        let kept = store.ingest_bytes(b"kept", "wav").unwrap();
        let orphan = store.ingest_bytes(b"orphan", "flac").unwrap();
        fs::write(dir.path().join("store/tmp/x.part"), b"half").unwrap();
        let keep = HashSet::from([(kept.sha256.clone(), "wav".to_string())]);
        let report = store.collect_garbage(&keep).unwrap();
        assert_eq!(
            report,
            GarbageReport {
                orphan_objects: 1,
                partial_files: 1
            }
        );
        assert!(kept.path.exists() && !orphan.path.exists());
    }

    #[test]
    fn a_missing_source_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let store = ContentStore::open(dir.path().join("store")).unwrap();
        let err = store
            .ingest_file(Path::new("/nope/missing.wav"), "wav")
            .unwrap_err();
        assert!(format!("{err:#}").contains("/nope/missing.wav"));
    }
}
