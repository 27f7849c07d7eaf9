//! `timbre dataset` through the real binary: RVC preprocessing, pitch and HuBERT features with
//! the fixture extractors of `RVC_PARITY_DIR`, the feature cache, the report's warnings.

use serde_json::Value;
use std::path::PathBuf;
use timbre_audio::SampleFormat;
use timbre_integration_tests::Sandbox;

fn timbre(sb: &Sandbox, args: &[&str]) -> std::process::Output {
    sb.cpu_command()
        .args(args)
        .output()
        .expect("running timbre")
}

fn json(sb: &Sandbox, args: &[&str]) -> (bool, Value) {
    let out = timbre(sb, &[&["--json"], args].concat());
    let value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "timbre {args:?}: no JSON on stdout: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.success(), value)
}

fn warnings(result: &Value) -> Vec<String> {
    result["report"]["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["kind"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_take_is_prepared_with_pm_and_prepared_again_from_the_cache() {
    let sb = Sandbox::with_extractors(false);
    let file = sb.write_speech("speech.wav", 20.0);
    let (ok, imported) = json(&sb, &["import", &file]);
    assert!(ok, "{imported}");
    let take = imported["files"][0]["take_id"].as_i64().expect("a take id");
    let args = [
        "dataset",
        "prepare",
        "--name",
        "Alto set",
        "--voice",
        "Alto",
        "--f0-method",
        "pm",
        &take.to_string(),
    ];
    let (ok, first) = json(&sb, &args);
    assert!(ok, "{first}");
    let result = &first["result"];
    let pieces = result["pieces"].as_u64().unwrap();
    // 20 s of speech cut at its pauses, then into pieces of at most 3.7 s.
    assert!((4..=12).contains(&pieces), "{pieces} pieces");
    assert_eq!(
        (result["computed"].as_u64(), result["cached"].as_u64()),
        (Some(pieces), Some(0))
    );
    let report = &result["report"];
    assert!(
        (report["input_seconds"].as_f64().unwrap() - 20.0).abs() < 0.01,
        "{report}"
    );
    assert_eq!(report["pieces"].as_u64(), Some(pieces));
    assert!(warnings(result).contains(&"too_little_audio".to_string()));

    let folder = PathBuf::from(result["folder"].as_str().unwrap());
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(folder.join("dataset.json")).unwrap()).unwrap();
    assert_eq!(
        (
            manifest["sample_rate"].as_u64(),
            manifest["version"].as_str()
        ),
        (Some(40_000), Some("v2"))
    );
    assert!(manifest["feature_dim"].as_i64().unwrap() > 0);
    for piece in manifest["pieces"].as_array().unwrap() {
        let gt = timbre_audio::decode_file(
            &folder.join(piece["gt_wav"].as_str().unwrap()),
            &Default::default(),
        )
        .unwrap();
        let wav16k = timbre_audio::decode_file(
            &folder.join(piece["wav_16k"].as_str().unwrap()),
            &Default::default(),
        )
        .unwrap();
        assert_eq!((gt.sample_rate, wav16k.sample_rate), (40_000, 16_000));
        assert!(gt.duration_secs() <= 3.7 + 1e-6, "{}", gt.duration_secs());
        assert!((gt.duration_secs() - piece["seconds"].as_f64().unwrap()).abs() < 1e-6);
        // HuBERT: one frame per 20 ms less the edge; pitch: one per 10 ms, plus one.
        let samples = wav16k.channels[0].len() as i64;
        let frames = piece["feature_frames"].as_i64().unwrap();
        assert!(
            (frames - samples / 320).abs() <= 1,
            "{frames} frames for {samples} samples"
        );
        assert_eq!(piece["f0_frames"].as_i64(), Some(samples / 160 + 1));
        assert!(folder.join(piece["features"].as_str().unwrap()).is_file());
    }

    let (ok, again) = json(&sb, &args);
    assert!(ok, "{again}");
    assert_eq!(
        (
            again["result"]["computed"].as_u64(),
            again["result"]["cached"].as_u64()
        ),
        (Some(0), Some(pieces))
    );
    let id = again["result"]["dataset"]["id"].as_i64().unwrap();
    assert_eq!(
        id,
        result["dataset"]["id"].as_i64().unwrap(),
        "the same name is the same dataset"
    );

    let (_, list) = json(&sb, &["dataset", "list"]);
    assert_eq!(list.as_array().unwrap().len(), 1);
    assert_eq!(
        (list[0]["status"].as_str(), list[0]["piece_count"].as_u64()),
        (Some("ready"), Some(pieces))
    );
    let (_, shown) = json(&sb, &["dataset", "show", &id.to_string()]);
    assert_eq!(shown["take_ids"], serde_json::json!([take]));
    assert_eq!(shown["dataset"]["report"]["pieces"].as_u64(), Some(pieces));
    let human = timbre(&sb, &["dataset", "show", &id.to_string()]);
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.contains("warning: too little audio"), "{text}");

    let (ok, _) = json(&sb, &["dataset", "rm", &id.to_string()]);
    assert!(ok);
    assert!(!folder.exists());
    assert_eq!(
        json(&sb, &["library", "list"]).1.as_array().unwrap().len(),
        1,
        "the take stays"
    );
}

#[test]
fn ten_seconds_with_rmvpe_warns_of_too_little_audio() {
    let sb = Sandbox::with_extractors(true);
    let file = sb.write_speech("short.wav", 10.0);
    let (ok, out) = json(
        &sb,
        &[
            "dataset",
            "prepare",
            "--name",
            "short",
            "--rate",
            "32k",
            "--version",
            "v1",
            &file,
        ],
    );
    assert!(ok, "{out}");
    let result = &out["result"];
    assert!(
        warnings(result).contains(&"too_little_audio".to_string()),
        "{result}"
    );
    assert!(result["pieces"].as_u64().unwrap() >= 2);
    let folder = PathBuf::from(result["folder"].as_str().unwrap());
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(folder.join("dataset.json")).unwrap()).unwrap();
    assert_eq!(
        (
            manifest["sample_rate"].as_u64(),
            manifest["f0_method"].as_str()
        ),
        (Some(32_000), Some("rmvpe"))
    );
    assert!(manifest["pieces"][0]["f0_frames"].as_i64().unwrap() > 0);
}

#[test]
fn silence_only_and_a_missing_rmvpe_are_refused_clearly() {
    let sb = Sandbox::with_extractors(false);
    let silent = sb.path("silent.wav");
    let quiet = timbre_audio::AudioBuffer::new(16_000, vec![vec![0.0; 16_000 * 5]]);
    timbre_audio::write_wav(&silent, &quiet, SampleFormat::Int16).unwrap();
    let silent = silent.display().to_string();
    let (ok, out) = json(
        &sb,
        &[
            "dataset",
            "prepare",
            "--name",
            "s",
            "--f0-method",
            "pm",
            &silent,
        ],
    );
    assert!(!ok);
    let error = out["error"].as_str().unwrap();
    assert!(
        error.contains(&silent) && error.contains("silence only"),
        "{error}"
    );

    let file = sb.write_speech("speech.wav", 2.0);
    let (ok, out) = json(&sb, &["dataset", "prepare", "--name", "r", &file]);
    assert!(!ok);
    let error = out["error"].as_str().unwrap();
    assert!(error.contains("needs rmvpe.pt in"), "{error}");
}
