//! The embedders Applio ships beside contentvec (spin, spin-v2, the chinese, japanese and korean
//! HuBERT bases: every one a transformers `HubertModel` with a `final_proj`), against
//! transformers itself (`reference.py`) on random weights in each architecture they and a
//! `custom` folder come in, read from Applio's layout (config.json + pytorch_model.bin): v2 =
//! the last layer, Applio's v1 = final_proj of the last layer. Prints what it measured.

use std::process::Command;

use tch::{Device, Kind, Tensor};
use timbre_nn::hubert::{FeatureVersion, Hubert};
use timbre_test_support::reference_python;

/// Largest feature difference allowed (float32 against float32, the same operations).
const MAX_ABS: f64 = 1e-4;

#[test]
fn every_embedder_architecture_matches_transformers() {
    let dir = tempfile::tempdir().unwrap();
    let status = Command::new(reference_python())
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/embedders/reference.py"
        ))
        .arg(dir.path())
        .status()
        .expect("running the reference");
    assert!(status.success(), "reference.py failed");
    for variant in ["base", "large"] {
        let folder = dir.path().join(variant);
        let io = Tensor::read_safetensors(folder.join("io.safetensors")).unwrap();
        let get = |name: &str| {
            io.iter()
                .find(|(n, _)| n == name)
                .map(|(_, t)| t.shallow_clone())
                .unwrap()
        };
        let hubert = Hubert::load(&folder, Device::Cpu).unwrap();
        let audio: Vec<f32> = Vec::try_from(get("audio").flatten(0, -1)).unwrap();
        for (version, expected) in [
            (FeatureVersion::V2, get("v2")),
            (FeatureVersion::V1LastLayer, get("v1")),
        ] {
            let ours = hubert.features_of(&audio, version).unwrap();
            let expected = expected.squeeze_dim(0);
            assert_eq!(ours.size(), expected.size(), "{variant} {version:?}");
            let max_abs = (ours.to_kind(Kind::Double) - expected.to_kind(Kind::Double))
                .abs()
                .max()
                .double_value(&[]);
            println!("embedder {variant} {version:?}: max_abs {max_abs:.2e} (tol {MAX_ABS:.0e})");
            assert!(
                max_abs < MAX_ABS,
                "{variant} {version:?}: max_abs {max_abs}"
            );
        }
    }
}
