//! What the tests of every crate share: the project venv's Python, which runs the reference
//! implementations (torch 2.11.0, rvc_next), and the fixture sets of `../shared/fixtures`.

use std::path::{Path, PathBuf};

pub mod pulse;

/// `.venv/bin/python` beside the workspace. Panics when it is missing, so that a parity test
/// never passes without having compared anything.
pub fn reference_python() -> PathBuf {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: the parity tests run the reference code in the project venv \
         (`scripts/setup.sh --test`, which `make test` runs, creates it)",
        python.display()
    );
    python
}

/// FCPE's real weights, as torchfcpe 0.0.4 ships them in the project venv
/// (`scripts/setup.sh --test` installs it). Panics when they are missing.
pub fn fcpe_weights() -> PathBuf {
    let site = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/lib");
    std::fs::read_dir(&site)
        .into_iter()
        .flatten()
        .flatten()
        .map(|python| {
            python
                .path()
                .join("site-packages/torchfcpe/assets/fcpe_c_v001.pt")
        })
        .find(|weights| weights.is_file())
        .unwrap_or_else(|| {
            panic!(
                "torchfcpe's fcpe_c_v001.pt is not in {}: `scripts/setup.sh --test` installs it",
                site.display()
            )
        })
}

/// The RVC fixture set: `RVC_PARITY_DIR`, else `../shared/fixtures/rvc-parity` beside the
/// repository.
pub fn rvc_parity_fixtures() -> PathBuf {
    fixture_set("RVC_PARITY_DIR", "rvc-parity")
}

/// The separation fixture set: `SEPARATION_PARITY_DIR`, else `../shared/fixtures/separation`.
pub fn separation_fixtures() -> PathBuf {
    fixture_set("SEPARATION_PARITY_DIR", "separation")
}

fn fixture_set(variable: &str, folder: &str) -> PathBuf {
    std::env::var_os(variable).map_or_else(
        || {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../../shared/fixtures")
                .join(folder)
        },
        PathBuf::from,
    )
}
