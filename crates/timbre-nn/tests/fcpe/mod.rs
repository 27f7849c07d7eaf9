//! FCPE parity with the reference (`reference.py`: rvc-next's port, equal to torchfcpe, on
//! torchfcpe 0.0.4's real bundled weights) on real speech (espeak-ng) and on generated tones of
//! known pitch: the posterior and the f0 of every frame. Prints what it measured for each input.

use std::path::Path;
use std::process::Command;

use tch::{Kind, Tensor};
use timbre_audio::{AudioBuffer, SampleFormat};
use timbre_nn::fcpe::{Fcpe, THRESHOLD};
use timbre_test_support::reference_python;

use crate::pitch_inputs::{RATE, speech, tone};

/// Largest difference of the posterior (a sigmoid, 0..1) allowed.
const LATENT_MAX_ABS: f64 = 1e-5;
/// Largest difference of a voiced frame's f0 allowed, in cents.
const F0_MAX_CENTS: f64 = 0.1;

fn inputs(dir: &Path) -> Vec<(&'static str, Vec<f32>)> {
    let mut silence_then_tone = vec![0.0f32; 8000];
    silence_then_tone.extend(tone(1.0, |_| 196.0, None));
    vec![
        (
            "speech",
            speech(dir, "The quick brown fox jumps over the lazy dog."),
        ),
        ("tone_220", tone(1.5, |_| 220.0, None)),
        ("glide", tone(2.0, |t| 150.0 * 4f64.powf(t / 2.0), None)),
        (
            "vibrato",
            tone(
                2.0,
                |t| 300.0 * 2f64.powf((t * 5.5 * std::f64::consts::TAU).sin() * 50.0 / 1200.0),
                None,
            ),
        ),
        ("noisy_110", tone(1.5, |_| 110.0, Some(10.0))),
        ("silence_then_tone", silence_then_tone),
        ("short", tone(0.05, |_| 440.0, None)),
    ]
}

fn cents(a: f32, b: f32) -> f64 {
    1200.0 * (f64::from(a) / f64::from(b)).log2().abs()
}

#[test]
fn fcpe_matches_the_reference_on_speech_and_tones_with_the_real_weights() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = inputs(dir.path());
    for (name, audio) in &inputs {
        let buffer = AudioBuffer::new(RATE, vec![audio.clone()]);
        timbre_audio::write_wav(
            &dir.path().join(format!("{name}.wav")),
            &buffer,
            SampleFormat::Float32,
        )
        .unwrap();
    }
    let output = Command::new(reference_python())
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fcpe/reference.py"))
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "the reference failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let weights = Path::new(printed["weights"].as_str().unwrap());
    let model = Fcpe::load(weights, tch::Device::Cpu).unwrap();
    let reference: Vec<(String, Tensor)> =
        Tensor::read_safetensors(dir.path().join("reference.safetensors")).unwrap();
    let get = |key: String| {
        reference
            .iter()
            .find(|(n, _)| *n == key)
            .map(|(_, t)| t.shallow_clone())
            .unwrap_or_else(|| panic!("{key} missing from the reference"))
    };
    for (name, audio) in &inputs {
        let latent = tch::no_grad(|| model.latent(&model.mel(audio))).squeeze_dim(0);
        let expected_latent = get(format!("{name}.latent"));
        assert_eq!(
            latent.size(),
            expected_latent.size(),
            "{name}: posterior shape"
        );
        let latent_error = (latent - expected_latent)
            .abs()
            .max()
            .to_kind(Kind::Double)
            .double_value(&[]);
        let f0 = model.f0(audio, THRESHOLD).unwrap();
        let expected: Vec<f32> = Vec::try_from(get(format!("{name}.f0"))).unwrap();
        assert_eq!(f0.len(), expected.len(), "{name}: frames");
        assert_eq!(
            f0.len(),
            audio.len() / 160 + 1,
            "{name}: one frame per 10 ms"
        );
        let voicing_differs = f0
            .iter()
            .zip(&expected)
            .filter(|(a, b)| (**a > 0.0) != (**b > 0.0))
            .count();
        let worst_cents = f0
            .iter()
            .zip(&expected)
            .filter(|(a, b)| **a > 0.0 && **b > 0.0)
            .map(|(a, b)| cents(*a, *b))
            .fold(0.0, f64::max);
        let voiced = expected.iter().filter(|f| **f > 0.0).count();
        println!(
            "{}",
            serde_json::json!({
                "input": name, "frames": f0.len(), "voiced": voiced,
                "latent_max_abs": latent_error, "f0_max_cents": worst_cents,
                "voicing_differs": voicing_differs,
            })
        );
        assert!(
            latent_error <= LATENT_MAX_ABS,
            "{name}: posterior differs by {latent_error}"
        );
        assert!(
            worst_cents <= F0_MAX_CENTS,
            "{name}: f0 differs by {worst_cents} cents"
        );
        assert_eq!(voicing_differs, 0, "{name}: voicing differs");
    }
    // The tones are where they were generated: the reference and ours both track them.
    let tone = model.f0(&inputs[1].1, THRESHOLD).unwrap();
    let middle = &tone[20..tone.len() - 20];
    assert!(middle.iter().all(|f| cents(*f, 220.0) < 30.0), "{middle:?}");
}
