//! PESTO parity with the reference (`reference.py`: pesto-pitch 2.0.1 itself on its bundled
//! `mir-1k_g7.ckpt`) on real speech (espeak-ng) and on generated tones of known pitch: the
//! network's output, the pitch and confidence of every 10 ms frame, and the voicing. Prints what
//! it measured.

use std::path::Path;

use tch::Kind;
use timbre_nn::pesto::{Pesto, VOICED_CONFIDENCE};
use timbre_test_support::pesto_weights;

use crate::pitch_inputs::{Reference, speech, tone};

/// Largest difference of the network's output (softmax probabilities) allowed.
const ACTIVATION_MAX_ABS: f64 = 1e-4;
/// Largest difference of a frame's pitch allowed where both sides call it voiced, in cents.
const PITCH_MAX_CENTS: f64 = 0.05;
/// Largest difference of a frame's confidence allowed.
const CONFIDENCE_MAX_ABS: f64 = 1e-4;
/// Frames whose voicing may differ (confidence a hair from 0.5).
const VOICING_MAX_DIFFERING: f64 = 0.01;

fn inputs(dir: &Path) -> Vec<(&'static str, Vec<f32>)> {
    let mut silence_then_tone = vec![0.0f32; 8000];
    silence_then_tone.extend(tone(0.8, |_| 196.0, None));
    vec![
        (
            "speech",
            speech(dir, "The quick brown fox jumps over the lazy dog."),
        ),
        ("tone_220", tone(1.0, |_| 220.0, None)),
        ("glide", tone(1.5, |t| 150.0 * 4f64.powf(t / 1.5), None)),
        ("silence_then_tone", silence_then_tone),
        ("noisy_110", tone(1.0, |_| 110.0, Some(10.0))),
        // More frames than one run of the network, so the runs' seams are compared.
        (
            "long_glide",
            tone(12.0, |t| 100.0 * 2f64.powf(t / 6.0), None),
        ),
    ]
}

fn cents(a: f32, b: f32) -> f64 {
    1200.0 * (f64::from(a) / f64::from(b)).log2().abs()
}

fn max_abs(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| f64::from((x - y).abs()))
        .fold(0.0, f64::max)
}

#[test]
fn pesto_parity_with_pesto_pitch_on_speech_and_tones() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = inputs(dir.path());
    let reference = Reference::run(dir.path(), &inputs, "pesto/reference.py", &[]);
    let weights = reference.read_file("weights", &pesto_weights());
    let model = Pesto::load(&weights, tch::Device::Cpu).unwrap();
    let get = |key: String| reference.get(&key);
    for (input, audio) in &inputs {
        let (pitch, confidence) = model.predict(audio).unwrap();
        let activations = model.activations(audio).unwrap();
        let expected_pitch: Vec<f32> = Vec::try_from(get(format!("{input}.pitch"))).unwrap();
        let expected_confidence: Vec<f32> =
            Vec::try_from(get(format!("{input}.confidence"))).unwrap();
        let expected_activations = get(format!("{input}.activations"));
        assert_eq!(pitch.len(), expected_pitch.len(), "{input}: frames");
        assert_eq!(
            pitch.len(),
            audio.len() / 160 + 1,
            "{input}: one frame per 10 ms"
        );
        assert_eq!(
            activations.size(),
            expected_activations.size(),
            "{input}: output shape"
        );
        let activation_error = (activations - expected_activations)
            .abs()
            .max()
            .to_kind(Kind::Double)
            .double_value(&[]);
        let voiced = |c: f32| c >= VOICED_CONFIDENCE;
        let both_voiced: Vec<usize> = (0..pitch.len())
            .filter(|&f| voiced(confidence[f]) && voiced(expected_confidence[f]))
            .collect();
        let worst_cents = both_voiced
            .iter()
            .map(|&f| cents(pitch[f], expected_pitch[f]))
            .fold(0.0, f64::max);
        let worst_confidence = max_abs(&confidence, &expected_confidence);
        let voicing_differs = (0..pitch.len())
            .filter(|&f| voiced(confidence[f]) != voiced(expected_confidence[f]))
            .count();
        println!(
            "{}",
            serde_json::json!({
                "input": input, "frames": pitch.len(), "voiced": both_voiced.len(),
                "activation_max_abs": activation_error, "pitch_max_cents": worst_cents,
                "confidence_max_abs": worst_confidence, "voicing_differs": voicing_differs,
            })
        );
        assert!(
            activation_error <= ACTIVATION_MAX_ABS,
            "{input}: the network's output differs by {activation_error}"
        );
        assert!(
            worst_cents <= PITCH_MAX_CENTS,
            "{input}: pitch differs by {worst_cents} cents"
        );
        assert!(
            worst_confidence <= CONFIDENCE_MAX_ABS,
            "{input}: confidence differs by {worst_confidence}"
        );
        assert!(
            voicing_differs as f64 <= VOICING_MAX_DIFFERING * pitch.len() as f64,
            "{input}: voicing differs on {voicing_differs} of {} frames",
            pitch.len()
        );
        if *input == "tone_220" {
            let middle = 10..pitch.len() - 10;
            assert!(
                middle.clone().all(|f| cents(pitch[f], 220.0) < 30.0),
                "{:?}",
                &pitch[middle]
            );
        }
    }
}

#[test]
fn another_checkpoint_or_a_cut_one_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(pesto_weights()).unwrap();
    let cut = dir.path().join("cut.ckpt");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let err = format!("{:#}", Pesto::load(&cut, tch::Device::Cpu).err().unwrap());
    assert!(err.contains("cut.ckpt"), "{err}");
    let crepe = timbre_test_support::crepe_weights("tiny");
    let err = format!("{:#}", Pesto::load(&crepe, tch::Device::Cpu).err().unwrap());
    assert!(err.contains("not a PESTO checkpoint"), "{err}");
}
