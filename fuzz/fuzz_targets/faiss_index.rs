//! faiss IVF-Flat indexes through `IvfFlatIndex::read` (a path, so one scratch file).
#![no_main]

use std::path::PathBuf;
use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use timbre_nn::index::IvfFlatIndex;

static SCRATCH: LazyLock<(tempfile::TempDir, PathBuf)> = LazyLock::new(|| {
    let dir = tempfile::tempdir().expect("a scratch folder");
    let path = dir.path().join("added.index");
    (dir, path)
});

fuzz_target!(|data: &[u8]| {
    let path = &SCRATCH.1;
    std::fs::write(path, data).expect("writing the scratch file");
    if let Ok(index) = IvfFlatIndex::read(path) {
        let _ = index.dim();
    }
});
