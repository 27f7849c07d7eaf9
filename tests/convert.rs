//! `timbre models` and `timbre convert` through the real binary, with the small random-weight
//! models of the parity fixtures standing in for real ones (`RVC_PARITY_DIR`).

use std::path::Path;
use timbre_integration_tests::{Sandbox, rvc_parity_fixtures, write_sine_wav};

fn fixture(path: &str) -> String {
    rvc_parity_fixtures().join(path).display().to_string()
}

#[test]
fn models_convert_in_a_batch_and_a_second_model_reuses_the_analysis() {
    let sb = Sandbox::with_extractors(true);
    let (a, b) = (sb.path("a.wav"), sb.path("b.wav"));
    write_sine_wav(&a, 1.5, 220.0);
    write_sine_wav(&b, 1.0, 330.0);
    let with_pitch = sb.cpu_json(&[
        "models",
        "import",
        &fixture("synth_v1_f0_40k/model.pth"),
        "--index",
        &fixture("index_v1/added_IVF51_Flat_nprobe_1_tiny_v1.index"),
        "--name",
        "pitched",
    ]);
    assert_eq!(
        (
            with_pitch[0]["version"].as_str(),
            with_pitch[0]["sample_rate"].as_u64()
        ),
        (Some("v1"), Some(40_000))
    );
    assert!(with_pitch[0]["index_sha256"].is_string());
    let out_dir = sb.path("out");
    let results = sb.cpu_json(&[
        "convert",
        "--model",
        "pitched",
        "-t",
        "3",
        "--out",
        out_dir.to_str().unwrap(),
        a.to_str().unwrap(),
        b.to_str().unwrap(),
    ]);
    let results = results.as_array().unwrap();
    assert_eq!(results.len(), 2);
    for (result, seconds) in results.iter().zip([1.5, 1.0]) {
        assert_eq!(result["ok"], true, "{result}");
        let path = result["result"]["output_path"].as_str().unwrap();
        assert!(path.starts_with(out_dir.to_str().unwrap()), "{path}");
        let audio = timbre_audio::decode_file(Path::new(path), &Default::default()).unwrap();
        assert_eq!(audio.sample_rate, 40_000);
        // As in the reference, HuBERT's framing leaves the output about 20 ms short.
        assert!(
            (audio.duration_secs() - seconds).abs() < 0.05,
            "{} s",
            audio.duration_secs()
        );
        assert_eq!(result["result"]["analysis_cache"], "computed");
    }
    // Another model on the same input (a new process) takes the analysis from the disk cache.
    sb.cpu_json(&[
        "models",
        "import",
        &fixture("synth_v1_nono_32k/model.pth"),
        "--name",
        "plain",
    ]);
    let again = sb.cpu_json(&[
        "convert",
        "--model",
        "pitched",
        "-t",
        "-2",
        a.to_str().unwrap(),
    ]);
    assert_eq!(again[0]["result"]["analysis_cache"], "disk");
    let plain = sb.cpu_json(&["convert", "--model", "plain", a.to_str().unwrap()]);
    assert_eq!(plain[0]["ok"], true, "{}", plain[0]);
    assert_eq!(plain[0]["result"]["conversion"]["sample_rate"], 32_000);
    let listed = sb.cpu_json(&["models", "list"]);
    assert_eq!(listed.as_array().unwrap().len(), 2);
}

#[test]
fn bad_models_and_inputs_are_refused_with_the_file_named() {
    let sb = Sandbox::with_extractors(true);
    let junk = sb.path("junk.pth");
    std::fs::write(&junk, b"definitely not a checkpoint").unwrap();
    let out = sb.cpu_run(&["models", "import", junk.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("junk.pth"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let truncated = sb.path("truncated.pth");
    let bytes = std::fs::read(rvc_parity_fixtures().join("synth_v2_f0_40k/model.pth")).unwrap();
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let out = sb.cpu_run(&["models", "import", truncated.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("truncated.pth"));

    // A v2 model with a v1 index: refused, naming the index and the fix.
    let out = sb.cpu_run(&[
        "models",
        "import",
        &fixture("synth_v2_f0_40k/model.pth"),
        "--index",
        &fixture("index_v1/added_IVF51_Flat_nprobe_1_tiny_v1.index"),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("added_IVF51_Flat_nprobe_1_tiny_v1.index") && err.contains("v1"),
        "{err}"
    );
    assert_eq!(
        sb.cpu_json(&["models", "list"]).as_array().unwrap().len(),
        0,
        "nothing half-imported"
    );

    sb.cpu_json(&[
        "models",
        "import",
        &fixture("synth_v2_f0_40k/model.pth"),
        "--name",
        "v2",
    ]);
    let blip = sb.path("blip.wav");
    write_sine_wav(&blip, 0.05, 440.0);
    let out = sb.cpu_run(&["--json", "convert", "--model", "v2", blip.to_str().unwrap()]);
    assert!(!out.status.success());
    let results: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let error = results[0]["error"].as_str().unwrap();
    assert!(
        error.contains("blip.wav") && error.contains("too short"),
        "{error}"
    );

    std::fs::remove_file(sb.path("models/hubert_base.pt")).unwrap();
    let tone = sb.path("tone.wav");
    write_sine_wav(&tone, 1.0, 440.0);
    let out = sb.cpu_run(&["--json", "convert", "--model", "v2", tone.to_str().unwrap()]);
    let results: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let error = results[0]["error"].as_str().unwrap();
    assert!(error.contains("hubert_base.pt"), "{error}");
}
