//! SwiftF0 parity with the reference (`reference.py`: the swift-f0 0.3.0 package on its bundled
//! `model.onnx`, through onnxruntime) on real speech (espeak-ng) and on generated tones of known
//! pitch, at RVC's range and at the model's full one: the pitch and confidence of every 16 ms
//! frame and the voicing. Prints what it measured.

use std::path::Path;

use timbre_nn::swift_f0::{self, SwiftF0, VOICED_CONFIDENCE};
use timbre_test_support::swift_f0_model;

use crate::pitch_inputs::{Reference, speech, tone};

/// Largest differences of a voiced frame's pitch (cents) and of a frame's confidence allowed on
/// inputs with a noise floor (speech, a noisy tone), where every band has signal.
const NOISY_BOUNDS: (f64, f64) = (0.01, 1e-4);
/// The same on clean generated tones. The features are the log of each band's magnitude plus
/// 1e-8; in a clean tone's empty bands (below 1e-6) the magnitude is the FFT's rounding noise,
/// which differs between the graph's factored DFT and ours: those features differ by up to 1
/// (measured; bands above 1e-2 agree to 1.4e-4), which moves the confidence by up to 0.017 and
/// the pitch by up to 0.76 cents.
const CLEAN_TONE_BOUNDS: (f64, f64) = (1.0, 0.03);
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
        ("short", tone(0.01, |_| 440.0, None)),
        ("noisy_110", tone(1.0, |_| 110.0, Some(10.0))),
        // Longer than one window of 1875 frames (30 s), so the windows' seams are compared.
        (
            "long_glide",
            tone(32.0, |t| 100.0 * 2f64.powf(t / 12.0), None),
        ),
    ]
}

fn cents(a: f64, b: f64) -> f64 {
    1200.0 * (a / b).log2().abs()
}

fn parity(fmin: f64, fmax: f64) {
    let dir = tempfile::tempdir().unwrap();
    let inputs = inputs(dir.path());
    let reference = Reference::run(
        dir.path(),
        &inputs,
        "swift_f0/reference.py",
        &[fmin.to_string(), fmax.to_string()],
    );
    let model_path = reference.read_file("model", &swift_f0_model());
    let model = SwiftF0::load(&model_path, tch::Device::Cpu).unwrap();
    let get = |key: String| reference.get(&key);
    for (input, audio) in &inputs {
        let ours = model.detect(audio, fmin, fmax).unwrap();
        let pitch: Vec<f64> = Vec::try_from(get(format!("{input}.pitch"))).unwrap();
        let confidence: Vec<f32> = Vec::try_from(get(format!("{input}.confidence"))).unwrap();
        assert_eq!(ours.pitch.len(), pitch.len(), "{input}: frames");
        let voiced = |c: f32| c >= VOICED_CONFIDENCE;
        let both_voiced: Vec<usize> = (0..pitch.len())
            .filter(|&f| voiced(confidence[f]) && voiced(ours.confidence[f]))
            .collect();
        let worst_cents = both_voiced
            .iter()
            .map(|&f| cents(ours.pitch[f], pitch[f]))
            .fold(0.0, f64::max);
        let worst_confidence = ours
            .confidence
            .iter()
            .zip(&confidence)
            .map(|(a, b)| f64::from((a - b).abs()))
            .fold(0.0, f64::max);
        let voicing_differs = (0..pitch.len())
            .filter(|&f| voiced(confidence[f]) != voiced(ours.confidence[f]))
            .count();
        println!(
            "{}",
            serde_json::json!({
                "range": [fmin, fmax], "input": input, "frames": pitch.len(),
                "voiced": both_voiced.len(), "pitch_max_cents": worst_cents,
                "confidence_max_abs": worst_confidence, "voicing_differs": voicing_differs,
            })
        );
        let (max_cents, max_confidence) = match *input {
            "speech" | "noisy_110" => NOISY_BOUNDS,
            _ => CLEAN_TONE_BOUNDS,
        };
        assert!(
            worst_cents <= max_cents,
            "{input}: pitch differs by {worst_cents} cents"
        );
        assert!(
            worst_confidence <= max_confidence,
            "{input}: confidence differs by {worst_confidence}"
        );
        assert!(
            voicing_differs as f64 <= VOICING_MAX_DIFFERING * pitch.len() as f64,
            "{input}: voicing differs on {voicing_differs} of {} frames",
            pitch.len()
        );
        if *input == "tone_220" {
            // The tone is where it was generated, and voiced away from the edges.
            let middle = 5..pitch.len() - 5;
            assert!(
                middle
                    .clone()
                    .all(|f| voiced(ours.confidence[f]) && cents(ours.pitch[f], 220.0) < 30.0),
                "{:?}",
                &ours.pitch[middle]
            );
        }
    }
}

#[test]
fn swift_f0_parity_with_the_package_at_rvcs_range() {
    parity(50.0, 1100.0);
}

#[test]
fn swift_f0_parity_with_the_package_at_its_full_range() {
    parity(swift_f0::FMIN, swift_f0::FMAX);
}

#[test]
fn another_onnx_file_or_a_cut_one_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(swift_f0_model()).unwrap();
    let cut = dir.path().join("cut.onnx");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let err = format!("{:#}", SwiftF0::load(&cut, tch::Device::Cpu).err().unwrap());
    assert!(err.contains("cut.onnx"), "{err}");
    let fake = dir.path().join("model.onnx");
    std::fs::write(&fake, b"not a model").unwrap();
    let err = format!(
        "{:#}",
        SwiftF0::load(&fake, tch::Device::Cpu).err().unwrap()
    );
    assert!(
        err.contains("model.onnx") && err.contains("not an ONNX model"),
        "{err}"
    );
}
