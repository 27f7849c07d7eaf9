//! The synthesizer's training forward against the reference's (`synthesizer_training.py`, beside
//! this file, run by `.venv/bin/python` with rvc-next): small seeded generators of both state-dict
//! layouts (v2 with pitch, v1 without) load by name from the `G` checkpoint the script saved, run
//! on its inputs with the random draws it made, and give its outputs and every parameter's
//! gradient. A fresh model has the reference's state dict names and shapes, in its order, for
//! those and for two of RVC's own generators (v2 40k with pitch, v1 32k without).

use std::path::Path;
use std::process::Command;

use serde_json::Value as Json;
use tch::{Device, Kind, Tensor};
use timbre_nn::checkpoint::{Value, read_torch_file};
use timbre_nn::synthesizer::{
    SynthesizerConfig, TrainableSynthesizer, TrainingBatch, TrainingNoise,
};
use timbre_test_support::reference_python;

const SCRIPT: &str = include_str!("synthesizer_training.py");
/// Largest difference over the reference's largest magnitude, per tensor.
const OUTPUT_TOLERANCE: f64 = 1e-5;
const GRADIENT_TOLERANCE: f64 = 2e-5;

fn entry<'a>(value: &'a Value, key: &str) -> &'a Value {
    value
        .get(key)
        .unwrap_or_else(|| panic!("the reference wrote no `{key}`"))
}

fn tensor(value: &Value, key: &str) -> Tensor {
    entry(value, key)
        .as_tensor()
        .unwrap_or_else(|| panic!("`{key}` is not a tensor"))
        .shallow_clone()
}

fn largest(t: &Tensor) -> f64 {
    t.abs().max().double_value(&[])
}

/// max |ours − theirs| / `scale`.
fn error_of(ours: &Tensor, theirs: &Tensor, scale: f64, what: &str) -> f64 {
    assert_eq!(ours.size(), theirs.size(), "{what}: shapes");
    let difference = ours.to_kind(Kind::Double) - theirs.to_kind(Kind::Double);
    largest(&difference) / scale.max(1e-30)
}

/// max |ours − theirs| / max |theirs|.
fn relative_error(ours: &Tensor, theirs: &Tensor, what: &str) -> f64 {
    error_of(ours, theirs, largest(theirs), what)
}

/// A fresh model of the case's config, whose state dict has the reference's names and shapes
/// in its order.
fn fresh_model(case: &Json) -> TrainableSynthesizer {
    let name = case["name"].as_str().unwrap();
    let config: SynthesizerConfig = serde_json::from_value(case["config"].clone()).unwrap();
    let (version, f0) = (case["version"].as_str().unwrap(), case["f0"] == true);
    let model = TrainableSynthesizer::new(&config, version, f0, Device::Cpu).unwrap();
    let ours: Vec<(String, Vec<i64>)> = model
        .state_dict()
        .into_iter()
        .map(|(n, t)| (n, t.size()))
        .collect();
    let theirs: Vec<(String, Vec<i64>)> =
        serde_json::from_value(case["state_dict"].clone()).unwrap();
    assert_eq!(
        ours, theirs,
        "{name}: the fresh state dict's names and shapes"
    );
    model
}

fn check_case(case: &Json, dir: &Path) -> String {
    let name = case["name"].as_str().unwrap();
    let mut model = fresh_model(case);
    model
        .load_checkpoint(&dir.join(format!("{name}_G.pth")))
        .unwrap();
    let reference = read_torch_file(&dir.join(format!("{name}.pt"))).unwrap();
    let inputs = entry(&reference, "inputs");
    let draws = entry(&reference, "draws")
        .as_list()
        .unwrap()
        .iter()
        .map(|d| d.as_tensor().unwrap().shallow_clone())
        .collect();
    let (pitch, pitchf) = (
        inputs.get("pitch").and_then(Value::as_tensor),
        inputs.get("pitchf").and_then(Value::as_tensor),
    );
    let batch = TrainingBatch {
        phone: &tensor(inputs, "phone"),
        phone_lengths: &tensor(inputs, "phone_lengths"),
        pitch,
        pitchf,
        spec: &tensor(inputs, "spec"),
        spec_lengths: &tensor(inputs, "spec_lengths"),
        sid: &tensor(inputs, "sid"),
    };
    let output = model.forward(&batch, TrainingNoise::Given(draws)).unwrap();

    let expected = entry(&reference, "outputs");
    assert!(
        output.ids_slice.equal(&tensor(expected, "ids_slice")),
        "{name}: ids_slice"
    );
    let mut worst_output = (0.0, "");
    for (key, ours) in [
        ("audio", &output.audio),
        ("x_mask", &output.x_mask),
        ("y_mask", &output.y_mask),
        ("z", &output.z),
        ("z_p", &output.z_p),
        ("m_p", &output.m_p),
        ("logs_p", &output.logs_p),
        ("m_q", &output.m_q),
        ("logs_q", &output.logs_q),
    ] {
        let error = relative_error(ours, &tensor(expected, key), key);
        assert!(
            error < OUTPUT_TOLERANCE,
            "{name}: {key} differs by {error:.2e} of its largest value"
        );
        if error > worst_output.0 {
            worst_output = (error, key);
        }
    }

    let loss = output.audio.mean(Kind::Float)
        + (&output.z_p * &output.m_p).sum(Kind::Float)
        + (&output.logs_p * &output.logs_q).sum(Kind::Float) * 0.1;
    let loss_error = relative_error(&loss, &tensor(expected, "loss"), "loss");
    assert!(
        loss_error < OUTPUT_TOLERANCE,
        "{name}: loss differs by {loss_error:.2e}"
    );
    loss.backward();
    let gradients = entry(&reference, "grads");
    let mut worst_gradient = (0.0, String::new());
    for (parameter, variable) in model.parameters() {
        let theirs = tensor(gradients, parameter);
        // Softmax ignores a shift shared by all keys, so the key bias's gradient is zero but for
        // rounding, which scales with the gradient through the key projection.
        let scale = match parameter.strip_suffix("conv_k.bias") {
            Some(layer) => largest(&tensor(gradients, &format!("{layer}conv_k.weight"))),
            None => largest(&theirs),
        };
        let error = error_of(&variable.grad(), &theirs, scale, parameter);
        assert!(
            error < GRADIENT_TOLERANCE,
            "{name}: the gradient of {parameter} differs by {error:.2e} of its largest value"
        );
        if error > worst_gradient.0 {
            worst_gradient = (error, parameter.clone());
        }
    }
    format!(
        "{name}: outputs within {:.1e} ({}), {} gradients within {:.1e} ({})",
        worst_output.0,
        worst_output.1,
        model.parameters().len(),
        worst_gradient.0,
        worst_gradient.1
    )
}

#[test]
fn synthesizer_training_forward_and_gradients_match_the_reference() {
    let python = reference_python();
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("synthesizer_training.py");
    std::fs::write(&script, SCRIPT).unwrap();
    let status = Command::new(&python)
        .arg(&script)
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(status.success(), "the reference script failed");
    let summary: Json =
        serde_json::from_slice(&std::fs::read(dir.path().join("cases.json")).unwrap()).unwrap();
    for case in summary["cases"].as_array().unwrap() {
        println!("{}", check_case(case, dir.path()));
    }
    for standard in summary["standard"].as_array().unwrap() {
        let model = fresh_model(standard);
        println!(
            "{}: the fresh state dict's {} names and shapes",
            standard["name"].as_str().unwrap(),
            model.parameters().len()
        );
    }
}
