//! Vietnamese-RVC's energy-conditioned voices (the `energy-parity` fixture voice, made with the
//! fork's own code): import shows them as such, and they convert, taking a cached analysis only
//! when it holds the energy curve.

use std::path::{Path, PathBuf};

use timbre_integration_tests::{Sandbox, write_sine_wav};
use timbre_test_support::{energy_parity_fixtures, reference_python};

/// The analyses the sandbox's conversions saved.
fn saved_analyses(sb: &Sandbox) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut folders = vec![sb.data_dir()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                folders.push(path);
            } else if path.parent().is_some_and(|p| p.ends_with("analysis"))
                && path.extension().is_some_and(|e| e == "safetensors")
            {
                found.push(path);
            }
        }
    }
    found
}

/// Rewrites a saved analysis without its energy curve, as one saved before analyses held it.
fn strip_energy(analysis: &Path) {
    let script = "import sys\n\
                  from safetensors.numpy import load_file, save_file\n\
                  t = load_file(sys.argv[1])\n\
                  assert 'energy' in t, sorted(t)\n\
                  del t['energy']\n\
                  save_file(t, sys.argv[1])\n";
    let out = std::process::Command::new(reference_python())
        .arg("-c")
        .arg(script)
        .arg(analysis)
        .output()
        .expect("running the venv's Python");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn an_energy_voice_from_vietnamese_rvc_shows_as_such_and_converts() {
    let sb = Sandbox::with_extractors(true);
    let voice = energy_parity_fixtures().join("energy_v1_40k/model.pth");
    sb.cpu_json(&[
        "models",
        "import",
        voice.to_str().unwrap(),
        "--name",
        "energy",
    ]);
    sb.import_fixture_voice("synth_v1_f0_40k/model.pth", "plain");
    let info = sb.cpu_json(&["models", "info", "energy"]);
    assert_eq!(info["energy"], true, "{info}");
    // The fork names its HiFi-GAN `Default`.
    assert_eq!(info["vocoder"], "HiFi-GAN", "{info}");
    assert_eq!(sb.cpu_json(&["models", "info", "plain"])["energy"], false);
    let text = sb
        .cpu_command()
        .args(["models", "info", "energy"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("energy    conditioned on the input's loudness"),
        "{text}"
    );

    let tone = sb.path("tone.wav");
    write_sine_wav(&tone, 1.0, 220.0);
    let plain = sb.cpu_json(&["convert", "--model", "plain", tone.to_str().unwrap()]);
    assert_eq!(
        plain[0]["result"]["analysis_cache"], "computed",
        "{}",
        plain[0]
    );
    // An analysis saved without the energy curve does not serve the energy voice.
    let saved = saved_analyses(&sb);
    assert_eq!(saved.len(), 1, "{saved:?}");
    strip_energy(&saved[0]);
    let converted = sb.cpu_json(&["convert", "--model", "energy", tone.to_str().unwrap()]);
    assert_eq!(converted[0]["ok"], true, "{}", converted[0]);
    assert_eq!(converted[0]["result"]["analysis_cache"], "computed");
    let path = converted[0]["result"]["output_path"].as_str().unwrap();
    let audio = timbre_audio::decode_file(Path::new(path), &Default::default()).unwrap();
    assert_eq!(audio.sample_rate, 40_000);
    assert!(
        (audio.duration_secs() - 1.0).abs() < 0.05,
        "{}",
        audio.duration_secs()
    );
    let peak = audio.channels[0].iter().fold(0.0f32, |m, s| m.max(s.abs()));
    assert!(peak > 1e-3, "silent output (peak {peak})");
    // The analysis made again holds it, and serves both voices from the disk.
    for model in ["energy", "plain"] {
        let again = sb.cpu_json(&["convert", "--model", model, tone.to_str().unwrap()]);
        assert_eq!(
            again[0]["result"]["analysis_cache"], "disk",
            "{model}: {}",
            again[0]
        );
    }
}
