//! `torch.save` files, zip and legacy: `read_torch_file` takes a path, so each input goes
//! through one scratch file. Errors are expected; panics, aborts and runaway memory are not.
#![no_main]

use std::path::PathBuf;
use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;

static SCRATCH: LazyLock<(tempfile::TempDir, PathBuf)> = LazyLock::new(|| {
    let dir = tempfile::tempdir().expect("a scratch folder");
    let path = dir.path().join("model.pth");
    (dir, path)
});

fuzz_target!(|data: &[u8]| {
    let path = &SCRATCH.1;
    std::fs::write(path, data).expect("writing the scratch file");
    let _ = timbre_nn::checkpoint::read_torch_file(path);
});
