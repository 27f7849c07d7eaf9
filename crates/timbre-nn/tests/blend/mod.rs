//! Voice blending against the reference (`reference.py`: rvc-next 0.2.16's `merge_models`, RVC's
//! `merge`) on the parity fixtures' v1 voice and a scaled copy of it: the blend equals the
//! reference's tensor for tensor and loads as rvc-next loads a voice; incompatible models are
//! refused naming the difference.

use std::path::Path;
use std::process::Command;

use tch::{Device, Kind, Tensor};
use timbre_nn::blend::blend_models;
use timbre_nn::checkpoint::Value;
use timbre_test_support::{reference_python, rvc_parity_fixtures};

fn reference(args: &[&Path]) -> String {
    let out = Command::new(reference_python())
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/blend/reference.py"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the reference failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn blend_parity_with_rvc_merge_and_incompatible_models_are_refused() {
    let fixtures = rvc_parity_fixtures();
    let dir = tempfile::tempdir().unwrap();
    let v1 = fixtures.join("synth_v1_f0_40k/model.pth");
    reference(&[Path::new("prepare"), &v1, dir.path()]);
    let ours = dir.path().join("ours.pth");
    // 3 : 7 is RVC's alpha 0.3; the weights need not add up to 1.
    blend_models(
        &[(&v1, 3.0), (&dir.path().join("scaled.pth"), 7.0)],
        "blend",
        &ours,
    )
    .unwrap();
    let printed: serde_json::Value =
        serde_json::from_str(&reference(&[Path::new("check"), dir.path()])).unwrap();
    println!("{printed}");
    assert_eq!(printed["info"], "blend");
    assert_eq!(printed["dtypes"], serde_json::json!(["torch.float16"]));
    // The same float32 sums rounded to float16: equal.
    assert_eq!(printed["max_abs"].as_f64().unwrap(), 0.0, "{printed}");

    let refused = |other: &str| {
        blend_models(
            &[(&v1, 0.5), (&fixtures.join(other).join("model.pth"), 0.5)],
            "",
            &dir.path().join("refused.pth"),
        )
        .unwrap_err()
        .to_string()
    };
    let err = refused("synth_v2_f0_40k");
    assert!(err.contains("RVC v1 model") && err.contains("v2"), "{err}");
    let err = refused("synth_v1_nono_32k");
    assert!(
        err.contains("40000 Hz") && err.contains("32000 Hz"),
        "{err}"
    );
    assert!(!dir.path().join("refused.pth").exists());
    let err = blend_models(&[(&v1, 1.0)], "", &dir.path().join("one.pth")).unwrap_err();
    assert!(err.to_string().contains("at least two"), "{err}");
}

/// Weights whose sum is infinite (each finite) would normalise to 0, a silent model; negative or
/// non-finite ones are refused by value; a blend beyond float16's range is refused naming the
/// tensor; nothing is written.
/// The entries of a dict, or of an OrderedDict's state.
fn dict_mut(value: &mut Value) -> &mut Vec<(Value, Value)> {
    match value {
        Value::Dict(entries) => entries,
        Value::Object {
            state: Some(state), ..
        } => dict_mut(state),
        other => panic!("not a dict: {other:?}"),
    }
}

#[test]
fn weights_that_cannot_normalise_and_blends_beyond_float16_are_refused() {
    let fixtures = rvc_parity_fixtures();
    let dir = tempfile::tempdir().unwrap();
    let v1 = fixtures.join("synth_v1_f0_40k/model.pth");
    let out = dir.path().join("blend.pth");
    let refusal =
        |models: &[(&Path, f64)]| format!("{:#}", blend_models(models, "", &out).unwrap_err());
    let err = refusal(&[(&v1, 1e308), (&v1, 1e308)]);
    assert!(
        err.contains("the weights 1e308, 1e308 add up to more than a number holds"),
        "{err}"
    );
    let err = refusal(&[(&v1, -1.0), (&v1, 2.0)]);
    assert!(err.contains("weight -1 is negative"), "{err}");
    let err = refusal(&[(&v1, f64::NAN), (&v1, 2.0)]);
    assert!(err.contains("weight NaN is not a finite number"), "{err}");
    let err = refusal(&[(&v1, 0.0), (&v1, 0.0)]);
    assert!(err.contains("add up to 0"), "{err}");

    // A float32 model whose first tensor lies beyond float16's range blends into infinities.
    let mut root = timbre_nn::checkpoint::read_torch_file(&v1).unwrap();
    let weights = dict_mut(&mut root)
        .iter_mut()
        .find(|(key, _)| key.as_str() == Some("weight"))
        .unwrap();
    let (key, tensor) = &mut dict_mut(&mut weights.1)[0];
    let name = key.as_str().unwrap().to_string();
    let shape = tensor.as_tensor().unwrap().size();
    *tensor = Value::Tensor(Tensor::full(shape, 1e6, (Kind::Float, Device::Cpu)));
    let wide = dir.path().join("wide.pth");
    timbre_nn::checkpoint::write_torch_file(&wide, &root).unwrap();
    let err = refusal(&[(&v1, 1.0), (&wide, 1.0)]);
    assert!(
        err.contains(&format!(
            "the blend's `{name}` has values beyond float16's range"
        )),
        "{err}"
    );
    assert!(!out.exists(), "nothing written");
}
