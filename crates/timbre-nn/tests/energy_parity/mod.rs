//! Energy-conditioned voices against PhamHuynhAnh16/Vietnamese-RVC's own code, on the fixtures
//! `tests/data/energy-parity/make_fixtures.py` made with it (`ENERGY_PARITY_DIR`, else that
//! folder): the synthesizer with `emb_energy` against the fork's `net_g.infer(…, energy)`, the
//! energy curve against the one its conversion pipeline hands each segment, and the voice
//! converting live.

use std::path::PathBuf;

use serde_json::Value as Json;
use tch::{Device, Kind, Tensor};
use timbre_nn::Shared;
use timbre_nn::hubert::Hubert;
use timbre_nn::pipeline::{Chunking, F0Method, energy_curve};
use timbre_nn::stream::{StreamEngine, StreamModels, StreamParams};
use timbre_nn::synthesizer::{Noise, Synthesizer};
use timbre_nn::voice::VoiceParams;
use timbre_test_support::{energy_parity_fixtures, rvc_parity_fixtures};

fn manifest() -> Json {
    let path = energy_parity_fixtures().join("manifest.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn case(kind: &str) -> Json {
    manifest()["cases"]
        .as_array()
        .and_then(|cases| cases.iter().find(|c| c["kind"] == kind).cloned())
        .unwrap_or_else(|| panic!("the energy manifest has no `{kind}` case"))
}

fn tensors(file: &str) -> Vec<(String, Tensor)> {
    let path = energy_parity_fixtures().join(file);
    Tensor::read_safetensors(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn get(tensors: &[(String, Tensor)], name: &str) -> Tensor {
    tensors
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, t)| t.shallow_clone())
        .unwrap_or_else(|| panic!("no tensor `{name}`"))
}

fn snr_db(ours: &Tensor, reference: &Tensor) -> f64 {
    assert_eq!(ours.size(), reference.size());
    let reference = reference.to_device(Device::Cpu).to_kind(Kind::Double);
    let noise = ours.to_device(Device::Cpu).to_kind(Kind::Double) - &reference;
    let signal = reference.square().sum(Kind::Double).double_value(&[]);
    let noise = noise.square().sum(Kind::Double).double_value(&[]);
    10.0 * (signal / noise.max(1e-30)).log10()
}

fn voice_path() -> PathBuf {
    let case = case("synthesizer_energy");
    energy_parity_fixtures().join(case["model"].as_str().unwrap())
}

#[test]
fn energy_synthesizer_matches_vietnamese_rvc() {
    let case = case("synthesizer_energy");
    let device = timbre_nn::device::default_device().expect("TIMBRE_DEVICE");
    let model = Synthesizer::load(&voice_path(), device).unwrap();
    let info = model.info();
    assert!(
        info.energy,
        "the fixture voice reads as not energy-conditioned"
    );
    assert_eq!(u64::from(info.sample_rate), case["sr"].as_u64().unwrap());
    assert_eq!(info.vocoder.name(), case["vocoder"].as_str().unwrap());
    let io = tensors(case["io"].as_str().unwrap());
    let energy = get(&io, "energy");
    let render = |energy: &Tensor| {
        model
            .infer_stretched(
                &get(&io, "phone"),
                &get(&io, "phone_lengths"),
                Some(&get(&io, "pitch")),
                Some(&get(&io, "pitchf")),
                Some(energy),
                get(&io, "sid").int64_value(&[0]),
                Noise::None,
                None,
                None,
            )
            .unwrap()
    };
    let expected = get(&io, "audio");
    let snr = snr_db(&render(&energy), &expected);
    let floor = case["tolerance"]["snr_db_min"].as_f64().unwrap();
    // The energy must matter: the same voice without it lands far below the floor.
    let without = snr_db(&render(&energy.zeros_like()), &expected);
    println!(
        "energy synthesizer parity: snr {snr:.1} dB (min {floor}); without the energy {without:.1} dB"
    );
    assert!(snr >= floor, "snr {snr:.1} dB < {floor} dB");
    assert!(
        without < floor - 10.0,
        "the energy hardly changes the output ({without:.1} dB)"
    );
}

#[test]
fn energy_curve_matches_vietnamese_rvc() {
    let case = case("energy_curve");
    let io = tensors(case["io"].as_str().unwrap());
    let audio = Vec::<f32>::try_from(get(&io, "audio_16k")).unwrap();
    let expected = Vec::<f32>::try_from(get(&io, "energy")).unwrap();
    let chunking: Chunking = serde_json::from_value(case["chunking"].clone()).unwrap();
    let ours = energy_curve(&audio, &chunking);
    assert_eq!(ours.len(), expected.len(), "frames");
    let worst = ours
        .iter()
        .zip(&expected)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    let tolerance = case["tolerance"]["max_abs"].as_f64().unwrap() as f32;
    let peak = expected.iter().fold(0f32, |m, v| m.max(*v));
    println!(
        "energy curve parity: {} frames, max abs {worst:.2e} (tol {tolerance:.0e}, peak {peak:.3})",
        ours.len()
    );
    assert!(worst <= tolerance, "max abs {worst:.2e} > {tolerance:.0e}");
}

#[test]
fn energy_voice_converts_live() {
    let fixtures = rvc_parity_fixtures();
    let device = Device::Cpu;
    let models = StreamModels {
        hubert: Shared::new(Hubert::load(&fixtures.join("hubert_tiny/hf"), device).unwrap()),
        voice: Shared::new(Synthesizer::load(&voice_path(), device).unwrap()),
        index: None,
        rmvpe: None,
        fcpe: None,
        swift_f0: None,
        pesto: None,
    };
    let params = StreamParams {
        block_ms: 200.0,
        context_ms: 1000.0,
        threshold_db: -60.0,
        voice: VoiceParams {
            f0_method: F0Method::Pm,
            ..VoiceParams::default()
        },
        ..StreamParams::default()
    };
    let rate = 48_000;
    let mut engine = StreamEngine::new(models, params, rate).unwrap();
    let input = timbre_test_support::tone(rate, 2.0, |t| 180.0 + 30.0 * (2.0 * t).sin(), None);
    let output: Vec<f32> = input
        .chunks_exact(engine.block_size())
        .flat_map(|block| engine.process(block).unwrap())
        .collect();
    assert!(output.iter().all(|s| s.is_finite()));
    let tail = &output[output.len() / 2..];
    let rms = (tail.iter().map(|s| s * s).sum::<f32>() / tail.len() as f32).sqrt();
    println!(
        "energy voice live: {} samples out, rms {rms:.4}",
        output.len()
    );
    assert!(rms > 1e-3, "the live output is silent (rms {rms})");
}
