//! Formant shift and autotune against the reference (`reference.py`: rvc-next 0.2.16's
//! `OfflineConverter` with its `formant` and `autotune` parameters) on the RVC parity fixtures:
//! the whole conversion's int16 output, with the pitch ours tracked given to both. A formant shift
//! of 0 is compared too, and is the identity of the plain conversion by construction.

use std::path::Path;
use std::process::Command;

use timbre_audio::{AudioBuffer, SampleFormat};
use timbre_nn::hubert::{FeatureVersion, Hubert};
use timbre_nn::pipeline::{self, Autotune, ConvertOptions, PitchTracker, Scale};
use timbre_nn::synthesizer::Synthesizer;
use timbre_nn::voice::VoiceParams;
use timbre_test_support::{reference_python, rvc_parity_fixtures};

/// The whole pipeline's parity (tests/parity) holds 40 dB on these fixtures; the formant path
/// adds a resample of the same arithmetic.
const SNR_DB_MIN: f64 = 40.0;

struct Case {
    name: &'static str,
    transpose: f32,
    formant: f32,
    /// Chromatic strength (rvc-next has no keys).
    autotune: f32,
}

const CASES: [Case; 4] = [
    Case {
        name: "plain",
        transpose: 0.0,
        formant: 0.0,
        autotune: 0.0,
    },
    Case {
        name: "formant_up",
        transpose: 2.0,
        formant: 1.0,
        autotune: 0.0,
    },
    Case {
        name: "formant_down_autotuned",
        transpose: 0.0,
        formant: -1.5,
        autotune: 1.0,
    },
    Case {
        name: "half_autotune",
        transpose: -3.0,
        formant: 0.0,
        autotune: 0.5,
    },
];

fn snr_db(ours: &[f32], reference: &[f32]) -> f64 {
    let signal: f64 = reference.iter().map(|&r| f64::from(r).powi(2)).sum();
    let noise: f64 = ours
        .iter()
        .zip(reference)
        .map(|(&o, &r)| (f64::from(o) - f64::from(r)).powi(2))
        .sum();
    10.0 * (signal / noise.max(1e-12)).log10()
}

#[test]
fn formant_shift_and_autotune_parity_with_rvc_next() {
    let fixtures = rvc_parity_fixtures();
    let dir = tempfile::tempdir().unwrap();
    // A sung-like glide with vibrato, voiced throughout, so that autotune has notes to find.
    let input = timbre_test_support::tone(
        16_000,
        2.5,
        |t| {
            180.0
                * 2f64.powf(t / 2.5)
                * 2f64.powf((t * 5.0 * std::f64::consts::TAU).sin() * 0.3 / 12.0)
        },
        None,
    );
    let wav = dir.path().join("input.wav");
    timbre_audio::write_wav(
        &wav,
        &AudioBuffer::new(16_000, vec![input.clone()]),
        SampleFormat::Float32,
    )
    .unwrap();
    let device = tch::Device::Cpu;
    let hubert = Hubert::load(&fixtures.join("hubert_tiny/hf"), device).unwrap();
    let model = Synthesizer::load(&fixtures.join("synth_v1_f0_40k/model.pth"), device).unwrap();
    let defaults = ConvertOptions::default();
    let analysis = pipeline::analyze(
        input.clone(),
        &hubert,
        FeatureVersion::V1,
        Some(&PitchTracker::Yin),
        defaults.chunking,
        &mut |_| Ok(()),
    )
    .unwrap();
    let f0 = analysis.f0.clone().unwrap();
    assert!(
        f0.iter().all(|f| *f > 0.0),
        "the glide is voiced throughout"
    );
    let f0_file = dir.path().join("f0.safetensors");
    tch::Tensor::write_safetensors(&[("f0", tch::Tensor::from_slice(&f0))], &f0_file).unwrap();
    let cases: Vec<serde_json::Value> = CASES
        .iter()
        .map(|c| {
            serde_json::json!({
                "name": c.name, "transpose": c.transpose, "formant": c.formant, "autotune": c.autotune,
            })
        })
        .collect();
    let cases_file = dir.path().join("cases.json");
    std::fs::write(&cases_file, serde_json::to_string(&cases).unwrap()).unwrap();
    let out = dir.path().join("reference.safetensors");
    let run = Command::new(reference_python())
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/formant_parity/reference.py"))
        .args([&fixtures, &wav, &f0_file, &cases_file, &out])
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "the reference failed:\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let reference = tch::Tensor::read_safetensors(&out).unwrap();
    let mut outputs = Vec::new();
    for case in &CASES {
        let options = ConvertOptions {
            voice: VoiceParams {
                transpose: case.transpose,
                formant_shift: case.formant,
                autotune: (case.autotune > 0.0).then_some(Autotune {
                    scale: Scale::Chromatic,
                    strength: case.autotune,
                }),
                index_rate: 0.0,
                ..VoiceParams::default()
            },
            ..ConvertOptions::default()
        };
        let converted =
            pipeline::render(&analysis, &model, None, &options, &mut |_| Ok(())).unwrap();
        let ours: Vec<f32> = pipeline::to_int16(&converted.samples)
            .into_iter()
            .map(f32::from)
            .collect();
        let expected: Vec<f32> = reference
            .iter()
            .find(|(name, _)| name == case.name)
            .map(|(_, t)| Vec::try_from(t).unwrap())
            .unwrap();
        assert_eq!(ours.len(), expected.len(), "{}: samples", case.name);
        let snr = snr_db(&ours, &expected);
        println!(
            "{}",
            serde_json::json!({"case": case.name, "samples": ours.len(), "snr_db": snr})
        );
        assert!(
            snr >= SNR_DB_MIN,
            "{}: SNR {snr:.1} dB below {SNR_DB_MIN} dB",
            case.name
        );
        outputs.push(ours);
    }
    // The shifts change the output far beyond the parity's error: not a parity that holds
    // because nothing happened.
    for (i, case) in CASES.iter().enumerate().skip(1) {
        let apart = snr_db(&outputs[i], &outputs[0]);
        println!(
            "{}",
            serde_json::json!({"case": case.name, "snr_db_vs_plain": apart})
        );
        assert!(
            apart < SNR_DB_MIN,
            "{}: {apart:.1} dB from the plain conversion",
            case.name
        );
    }
}
