//! The RVC export of each synthesizer of the fixture set (`RVC_PARITY_DIR`, else
//! `../shared/fixtures/rvc-parity`): re-exported from its own weights, the model reads as the
//! same model and synthesises the same audio.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value as Json;
use tch::{Device, Kind, Tensor};
use timbre_nn::checkpoint::{Value, read_torch_file, write_torch_file};
use timbre_nn::export::{RvcModelMeta, Trained, export_rvc_model};
use timbre_nn::hubert::Embedder;
use timbre_nn::synthesizer::{
    Noise, Synthesizer, SynthesizerConfig, TrainableSynthesizer, read_model_info,
};

use timbre_test_support::rvc_parity_fixtures;

use super::{assert_same, tensor_bytes, text};

struct Fixture {
    root: Value,
    state_dict: Vec<(String, Tensor)>,
    config: SynthesizerConfig,
    io: HashMap<String, Tensor>,
    model: PathBuf,
}

impl Fixture {
    fn meta(&self) -> RvcModelMeta<'_> {
        let get = |key: &str| self.root.get(key).unwrap_or_else(|| panic!("no {key}"));
        RvcModelMeta {
            config: &self.config,
            sr: get("sr").as_str().unwrap(),
            f0: get("f0").as_i64().unwrap() != 0,
            version: get("version").as_str().unwrap(),
            info: get("info").as_str().unwrap(),
            embedder: Embedder::Contentvec,
            trained: None,
        }
    }

    fn infer(&self, path: &Path) -> Tensor {
        let model = Synthesizer::load(path, Device::Cpu).unwrap();
        let io = |name: &str| self.io.get(name);
        let sid = io("sid").unwrap().int64_value(&[0]);
        model
            .infer(
                io("phone").unwrap(),
                io("phone_lengths").unwrap(),
                io("pitch"),
                io("pitchf"),
                sid,
                Noise::None,
            )
            .unwrap()
    }
}

fn synthesizer_fixtures() -> Vec<Fixture> {
    let dir = rvc_parity_fixtures();
    let manifest: Json =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    let cases = manifest["cases"].as_array().unwrap();
    let fixtures: Vec<Fixture> = cases
        .iter()
        .filter(|case| case["kind"] == "synthesizer")
        .map(|case| {
            let model = dir.join(case["model"].as_str().unwrap());
            let root = read_torch_file(&model).unwrap();
            let state_dict = root
                .get("weight")
                .and_then(Value::as_dict)
                .unwrap()
                .iter()
                .map(|(k, v)| {
                    (
                        k.as_str().unwrap().to_string(),
                        v.as_tensor().unwrap().shallow_clone(),
                    )
                })
                .collect();
            let config =
                SynthesizerConfig::from_list(root.get("config").and_then(Value::as_list).unwrap())
                    .unwrap();
            let io = Tensor::read_safetensors(dir.join(case["io"].as_str().unwrap()))
                .unwrap()
                .into_iter()
                .collect();
            Fixture {
                root,
                state_dict,
                config,
                io,
                model,
            }
        })
        .collect();
    assert!(
        !fixtures.is_empty(),
        "no synthesizer case in {}",
        dir.display()
    );
    fixtures
}

/// `state_dict` with the posterior encoder's tensors a training generator also has.
fn with_enc_q(state_dict: &[(String, Tensor)]) -> Vec<(String, Tensor)> {
    let mut full: Vec<_> = state_dict
        .iter()
        .map(|(k, t)| (k.clone(), t.shallow_clone()))
        .collect();
    let extra = |name: &str| {
        (
            name.to_string(),
            Tensor::ones([4, 2], (Kind::Float, Device::Cpu)),
        )
    };
    full.insert(1, extra("enc_q.pre.weight"));
    full.push(extra("enc_q.proj.bias"));
    full
}

#[test]
fn exported_fixtures_read_and_synthesise_as_the_originals() {
    let dir = tempfile::tempdir().unwrap();
    for fixture in synthesizer_fixtures() {
        let name = fixture
            .model
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_string_lossy();
        let exported = dir.path().join(format!("{name}.pth"));
        export_rvc_model(&exported, &with_enc_q(&fixture.state_dict), &fixture.meta()).unwrap();

        let root = read_torch_file(&exported).unwrap();
        let keys: Vec<_> = root
            .as_dict()
            .unwrap()
            .iter()
            .map(|(k, _)| k.as_str().unwrap())
            .collect();
        assert_eq!(
            keys,
            ["weight", "config", "info", "sr", "f0", "version"],
            "{name}"
        );
        // The fixtures were written by the reference (fp16 weights), so the export equals them.
        assert_same(&fixture.root, &root, &name);

        let (original, ours) = (
            read_model_info(&fixture.model).unwrap(),
            read_model_info(&exported).unwrap(),
        );
        assert_eq!(original.config, ours.config, "{name}");
        assert_eq!(
            (
                original.version,
                original.sample_rate,
                original.f0,
                original.speakers
            ),
            (ours.version, ours.sample_rate, ours.f0, ours.speakers),
            "{name}"
        );
        assert!(
            ours.config_mismatches.is_empty(),
            "{name}: {:?}",
            ours.config_mismatches
        );
        assert_eq!(ours.metadata.info, original.metadata.info);

        let (expected, audio) = (fixture.infer(&fixture.model), fixture.infer(&exported));
        let again = fixture.infer(&fixture.model);
        assert!(
            tensor_bytes(&again) == tensor_bytes(&expected),
            "{name}: the synthesizer itself gives different audio for the same file twice \
             (max difference {:?})",
            (&again - &expected).abs().max()
        );
        // Bit for bit (NaN included, which `equal` would call different).
        assert!(
            tensor_bytes(&audio) == tensor_bytes(&expected),
            "{name}: the exported model sounds different (max difference {:?})",
            (&audio - &expected).abs().max()
        );
    }
}

#[test]
fn float32_weights_are_rounded_to_half_as_torch_rounds() {
    let fixture = synthesizer_fixtures().remove(0);
    let dir = tempfile::tempdir().unwrap();
    // Training weights: float32 values between the fp16 ones.
    let trained: Vec<(String, Tensor)> = fixture
        .state_dict
        .iter()
        .map(|(k, t)| (k.clone(), t.to_kind(Kind::Float) * 1.000_123))
        .collect();
    let exported = dir.path().join("trained.pth");
    export_rvc_model(&exported, &trained, &fixture.meta()).unwrap();
    let root = read_torch_file(&exported).unwrap();
    let weight = root.get("weight").and_then(Value::as_dict).unwrap();
    assert_eq!(weight.len(), trained.len());
    for ((key, value), (name, full)) in weight.iter().zip(&trained) {
        let half = value.as_tensor().unwrap();
        assert_eq!(
            (key.as_str(), half.kind()),
            (Some(name.as_str()), Kind::Half)
        );
        assert_eq!(
            tensor_bytes(half),
            tensor_bytes(&full.to_kind(Kind::Half)),
            "{name}"
        );
    }

    // Against the float32 model itself, the export differs by fp16 rounding only.
    let full_precision = dir.path().join("full.pth");
    let mut entries: Vec<(Value, Value)> = Vec::new();
    for (key, value) in fixture.root.as_dict().unwrap() {
        let value = match key.as_str() {
            Some("weight") => Value::Dict(
                trained
                    .iter()
                    .map(|(k, t)| (text(k), Value::Tensor(t.shallow_clone())))
                    .collect(),
            ),
            _ => copy(value),
        };
        entries.push((copy(key), value));
    }
    write_torch_file(&full_precision, &Value::ordered_dict(entries)).unwrap();
    let (reference, audio) = (fixture.infer(&full_precision), fixture.infer(&exported));
    assert!(
        bool::try_from(reference.isfinite().all()).unwrap(),
        "the synthesizer gives non-finite audio for the float32 model"
    );
    let error = (&audio - &reference).abs().max().double_value(&[]);
    let peak = reference.abs().max().double_value(&[]);
    assert!(
        error <= 0.01 * peak.max(1e-3),
        "max error {error} for a peak of {peak}"
    );
}

/// A copy of a value without tensors (the fixtures' metadata).
fn copy(value: &Value) -> Value {
    match value {
        Value::None => Value::None,
        Value::Bool(b) => Value::Bool(*b),
        Value::Int(i) => Value::Int(*i),
        Value::Float(f) => Value::Float(*f),
        Value::Str(s) => Value::Str(s.clone()),
        Value::List(items) => Value::List(items.iter().map(copy).collect()),
        Value::Tuple(items) => Value::Tuple(items.iter().map(copy).collect()),
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn metadata_that_contradicts_the_weights_is_refused() {
    let fixture = synthesizer_fixtures()
        .into_iter()
        .find(|f| f.meta().f0 && f.meta().version == "v2")
        .expect("a v2 pitch fixture");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wrong.pth");
    let meta = fixture.meta();
    for (wrong, expected) in [
        (
            RvcModelMeta {
                sr: "48k",
                ..meta.clone()
            },
            "sample rate",
        ),
        (
            RvcModelMeta {
                version: "v1",
                ..meta.clone()
            },
            "256-d",
        ),
        (
            RvcModelMeta {
                version: "v3",
                ..meta.clone()
            },
            "neither",
        ),
        (
            RvcModelMeta {
                f0: false,
                ..meta.clone()
            },
            "takes pitch",
        ),
    ] {
        let message = export_rvc_model(&path, &fixture.state_dict, &wrong)
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("wrong.pth") && message.contains(expected),
            "{message}"
        );
        assert!(!path.exists());
    }
}

/// A voice trained here against Applio's own HiFi-GAN voice of the same shape
/// (`tests/data/applio-parity/hifigan_40k`, written by Applio's `extract_model`): every entry
/// Applio writes, its values where they are the voice's, and the weights key for key and shape
/// for shape, so that Applio's `load_state_dict` finds what it looks for.
#[test]
fn a_trained_voice_has_applios_entries_and_its_weights_key_for_key() {
    let applio_path = timbre_test_support::applio_parity_fixtures().join("hifigan_40k/model.pth");
    let applio = read_torch_file(&applio_path).unwrap();
    let info = read_model_info(&applio_path).unwrap();
    let generator = TrainableSynthesizer::new(&info.config, "v2", true, Device::Cpu).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ours.pth");
    let meta = RvcModelMeta {
        config: &info.config,
        sr: "40k",
        f0: true,
        version: "v2",
        info: "7epoch",
        embedder: Embedder::Contentvec,
        trained: Some(Trained {
            epoch: 7,
            step: 700,
            model_name: "hifigan_40k",
        }),
    };
    export_rvc_model(&path, &generator.state_dict(), &meta).unwrap();
    let ours = read_torch_file(&path).unwrap();

    let keys = |root: &Value| -> Vec<String> {
        let entries = root.as_dict().unwrap().iter();
        entries
            .map(|(k, _)| k.as_str().unwrap().to_string())
            .collect()
    };
    let missing: Vec<String> = keys(&applio)
        .into_iter()
        .filter(|key| ours.get(key).is_none())
        .collect();
    assert!(
        missing.is_empty(),
        "entries Applio writes and we do not: {missing:?}"
    );
    for key in [
        "config",
        "sr",
        "version",
        "epoch",
        "step",
        "model_name",
        "embedder_model",
        "vocoder",
    ] {
        assert_eq!(
            format!("{:?}", ours.get(key).unwrap()),
            format!("{:?}", applio.get(key).unwrap()),
            "{key}"
        );
    }
    let hash = ours.get("model_hash").and_then(Value::as_str).unwrap();
    assert!(
        hash.len() == 64 && hash.chars().all(|c| c.is_ascii_hexdigit()),
        "{hash}"
    );

    let shapes = |root: &Value| -> Vec<(String, Vec<i64>, Kind)> {
        let mut weights: Vec<_> = root
            .get("weight")
            .and_then(Value::as_dict)
            .unwrap()
            .iter()
            .map(|(k, v)| {
                let t = v.as_tensor().unwrap();
                (k.as_str().unwrap().to_string(), t.size(), t.kind())
            })
            .collect();
        weights.sort_by(|a, b| a.0.cmp(&b.0));
        weights
    };
    assert_eq!(shapes(&ours), shapes(&applio));
    // And ours reads back as the voice it is.
    let read = read_model_info(&path).unwrap();
    assert_eq!(
        (read.metadata.embedder_model.as_deref(), read.config),
        (Some("contentvec"), info.config)
    );
}
