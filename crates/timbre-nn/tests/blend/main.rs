//! Voice blending against the reference (`reference.py`: rvc-next 0.2.16's `merge_models`, RVC's
//! `merge`) on the parity fixtures' v1 voice and a scaled copy of it: the blend equals the
//! reference's tensor for tensor and loads as rvc-next loads a voice; incompatible models are
//! refused naming the difference.

use std::path::Path;
use std::process::Command;

use timbre_nn::blend::blend_models;
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
