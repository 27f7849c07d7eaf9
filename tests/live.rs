//! `timbre live`, through the real binary: a file streamed block by block through the live engine
//! with the fixture voice, as the devices would stream it.

use std::path::Path;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use timbre_audio::DecodeOptions;
use timbre_integration_tests::Sandbox;
use timbre_test_support::{pesto_weights, swift_f0_model};

/// The cores, shared by the tests of this file; the tuning test takes them alone: it measures
/// what a stream keeps up with, so a sibling's conversion beside its tune or its stream would
/// measure the sibling.
static CORES: RwLock<()> = RwLock::new(());

fn shared_cores() -> RwLockReadGuard<'static, ()> {
    CORES
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn cores_alone() -> RwLockWriteGuard<'static, ()> {
    CORES
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn sandbox() -> Sandbox {
    let sb = Sandbox::with_extractors(false);
    sb.import_fixture_voice("synth_v1_f0_40k/model.pth", "Alto");
    sb
}

fn samples(path: &Path) -> (u32, Vec<f32>) {
    let audio = timbre_audio::decode_file(path, &DecodeOptions::default()).unwrap();
    (audio.sample_rate, audio.channels[0].clone())
}

/// `timbre live file` with the fixture voice, pm pitch, 100 ms blocks and 500 ms of context,
/// unless `extra` sets them.
fn stream(sb: &Sandbox, input: &str, out: &str, extra: &[&str]) -> std::process::Output {
    let mut cmd = sb.cpu_command();
    cmd.args(["--json", "live", "file", input, "--out"])
        .arg(sb.path(out))
        .args(["--model", "Alto"])
        .args(extra);
    for (flag, value) in [
        ("--f0-method", "pm"),
        ("--block-ms", "100"),
        ("--context-ms", "500"),
    ] {
        if !extra.contains(&flag) {
            cmd.args([flag, value]);
        }
    }
    cmd.output().unwrap()
}

#[test]
fn a_file_streams_block_by_block_reproducibly_and_reports_its_block_times() {
    let _cores = shared_cores();
    let sb = sandbox();
    let input = sb.write_speech("speech.wav", 1.0);
    let first = stream(&sb, &input, "a.wav", &[]);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&first.stdout).unwrap();
    // 1 s at 48 kHz in 100 ms blocks: 10 blocks, and one of silence to let the crossfade out.
    assert_eq!(report["block_samples"], 4800);
    assert_eq!(report["times"]["blocks"], 11);
    assert_eq!(report["times"]["budget_ms"], 100.0);
    let mean = report["times"]["mean_ms"].as_f64().unwrap();
    assert!(mean > 0.0 && mean <= report["times"]["max_ms"].as_f64().unwrap());
    let (rate, a) = samples(&sb.path("a.wav"));
    assert_eq!((rate, a.len()), (48_000, 11 * 4800));
    let rms = (a.iter().map(|x| x * x).sum::<f32>() / a.len() as f32).sqrt();
    assert!(rms > 1e-3, "the voice is silent: rms {rms}");

    let again = stream(&sb, &input, "b.wav", &[]);
    assert!(again.status.success());
    assert_eq!(samples(&sb.path("b.wav")).1, a, "no noise: the same output");
    let seeded = stream(&sb, &input, "c.wav", &["--seed", "7"]);
    assert!(seeded.status.success());
    assert_ne!(samples(&sb.path("c.wav")).1, a, "a seed draws noise");
}

#[test]
fn swiftf0_and_pesto_track_the_pitch_live_once_their_models_are_in_place() {
    let _cores = shared_cores();
    let sb = sandbox();
    let input = sb.write_speech("speech.wav", 1.0);
    assert!(stream(&sb, &input, "pm.wav", &[]).status.success());
    let (_, pm) = samples(&sb.path("pm.wav"));
    for (method, asset, file, source) in [
        ("swiftf0", "swift-f0", "swift-f0.onnx", swift_f0_model()),
        ("pesto", "pesto", "pesto.ckpt", pesto_weights()),
    ] {
        let missing = stream(&sb, &input, "x.wav", &["--f0-method", method]);
        let err = String::from_utf8_lossy(&missing.stderr);
        assert!(
            !missing.status.success() && err.contains(&format!("timbre assets download {asset}")),
            "{method}: {err}"
        );
        std::fs::copy(source, sb.models_dir().join(file)).unwrap();
        let out = format!("{method}.wav");
        let tracked = stream(&sb, &input, &out, &["--f0-method", method]);
        assert!(
            tracked.status.success(),
            "{method}: {}",
            String::from_utf8_lossy(&tracked.stderr)
        );
        let (_, voice) = samples(&sb.path(&out));
        assert_eq!(voice.len(), pm.len(), "{method}");
        let rms = (voice.iter().map(|x| x * x).sum::<f32>() / voice.len() as f32).sqrt();
        assert!(rms > 1e-3, "{method}: the voice is silent: rms {rms}");
        assert_ne!(voice, pm, "{method}: another tracker, another pitch");
    }
}

#[test]
fn formant_shift_and_denoise_change_the_stream_and_keep_its_length() {
    let _cores = shared_cores();
    let sb = sandbox();
    let input = sb.write_speech("speech.wav", 1.0);
    let run = |out: &str, extra: &[&str]| {
        let result = stream(&sb, &input, out, extra);
        assert!(
            result.status.success(),
            "{extra:?}: {}",
            String::from_utf8_lossy(&result.stderr)
        );
        samples(&sb.path(out)).1
    };
    let plain = run("plain.wav", &[]);
    for (out, extra) in [
        ("formant.wav", &["--formant-shift", "1.5"][..]),
        ("denoised.wav", &["--input-denoise", "--output-denoise"][..]),
    ] {
        let changed = run(out, extra);
        assert_eq!(changed.len(), plain.len(), "{extra:?}");
        let rms = (changed.iter().map(|x| x * x).sum::<f32>() / changed.len() as f32).sqrt();
        assert!(rms > 1e-3, "{extra:?}: silent, rms {rms}");
        assert_ne!(changed, plain, "{extra:?} changed nothing");
    }
}

#[test]
fn passthrough_returns_the_input_behind_the_crossfade() {
    let _cores = shared_cores();
    let sb = sandbox();
    let input = sb.write_speech("speech.wav", 1.0);
    let out = stream(
        &sb,
        &input,
        "through.wav",
        &["--passthrough", "--rate", "44100"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (rate, through) = samples(&sb.path("through.wav"));
    assert_eq!(rate, 44_100);
    let (_, original) = samples(Path::new(&input));
    // Each block comes out behind the input by the crossfade plus the SOLA search less the
    // alignment SOLA found for it (0–10 ms), and otherwise unchanged.
    let block = 4410;
    let mut checked = 0;
    for (n, streamed) in through.chunks_exact(block).enumerate().skip(1).take(9) {
        let energy: f32 = streamed.iter().map(|x| x * x).sum();
        if energy < 1e-4 {
            continue; // a pause in the speech: any lag matches
        }
        checked += 1;
        let (lag, err) = (0..=block.min(n * block))
            .map(|lag| {
                let start = n * block - lag;
                let err: f32 = original[start..start + block]
                    .iter()
                    .zip(streamed)
                    .map(|(a, b)| (a - b) * (a - b))
                    .sum();
                (lag, err)
            })
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap();
        let snr = 10.0 * (energy / err.max(1e-20)).log10();
        let delay_ms = lag as f32 / 44.1;
        assert!(
            snr > 60.0 && (49.9..=60.1).contains(&delay_ms),
            "block {n}: SNR {snr} dB at {delay_ms} ms"
        );
    }
    assert!(
        checked >= 5,
        "only {checked} blocks were loud enough to check"
    );
}

#[test]
fn bad_settings_and_missing_models_are_refused_by_name() {
    let _cores = shared_cores();
    let sb = sandbox();
    let input = sb.write_speech("speech.wav", 0.5);
    let out = stream(&sb, &input, "x.wav", &["--block-ms", "5"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("block_ms must be between 10"));
    // Issue 34's hostile values: each refused by name at once, before any buffer is made.
    for (flag, value, expected) in [
        (
            "--rate",
            "100000000",
            "the device rate must be between 8000 and 192000",
        ),
        (
            "--rate",
            "4294967200",
            "the device rate must be between 8000 and 192000",
        ),
        ("--block-ms", "1e300", "block_ms must be between"),
        ("--crossfade-ms", "1e300", "crossfade_ms must be between"),
        ("--context-ms", "-5", "context_ms must be between"),
        ("--transpose", "1e9", "transpose must be between -48 and 48"),
        ("--speaker", "9", "speaker 9 asked for, but this model has"),
    ] {
        let out = stream(&sb, &input, "x.wav", &[flag, value]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(expected),
            "{flag} {value}: {err}"
        );
    }
    let out = stream(&sb, &input, "x.wav", &["--crossfade-ms", "600"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("crossfade"));
    let out = stream(&sb, &input, "x.wav", &["--f0-method", "crepe-tiny"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("offline conversion"));
    let out = stream(&sb, &input, "x.wav", &["--formant-shift", "3"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("between -2 and 2"));
    let out = stream(&sb, &input, "x.wav", &["--f0-method", "rmvpe"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("rmvpe.pt"));
    std::fs::remove_file(sb.models_dir().join("hubert_base.pt")).unwrap();
    let out = stream(&sb, &input, "x.wav", &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.to_lowercase().contains("hubert"),
        "{err}"
    );
    assert!(!sb.path("x.wav").exists(), "nothing written on failure");
}

#[test]
fn tune_picks_the_smallest_block_that_keeps_up_and_a_stream_with_it_does() {
    let _cores = cores_alone();
    let sb = sandbox();
    let tuned = sb
        .cpu_command()
        .args(["--json", "live", "tune", "--model", "Alto"])
        .args([
            "--f0-method",
            "pm",
            "--context-ms",
            "500",
            "--crossfade-ms",
            "50",
        ])
        .output()
        .unwrap();
    assert!(
        tuned.status.success(),
        "{}",
        String::from_utf8_lossy(&tuned.stderr)
    );
    let outcome: serde_json::Value = serde_json::from_slice(&tuned.stdout).unwrap();
    let report = &outcome["report"];
    let candidates = report["candidates"].as_array().unwrap();
    let pick = candidates.last().unwrap();
    let share = report["budget_share"].as_f64().unwrap();
    // Every size before the pick was too slow, and the pick kept every block within its share.
    for candidate in &candidates[..candidates.len() - 1] {
        assert_eq!(candidate["keeps_up"], false, "{candidate}");
        assert!(
            candidate["times"]["max_ms"].as_f64().unwrap()
                > share * candidate["times"]["budget_ms"].as_f64().unwrap()
        );
    }
    assert_eq!(pick["keeps_up"], true, "{report}");
    let budget = pick["times"]["budget_ms"].as_f64().unwrap();
    assert!(pick["times"]["max_ms"].as_f64().unwrap() <= share * budget);
    assert!(pick["times"]["blocks"].as_u64().unwrap() >= 6);
    let block_ms = report["params"]["block_ms"].as_f64().unwrap();
    let crossfade_ms = report["params"]["crossfade_ms"].as_f64().unwrap();
    assert_eq!(block_ms, pick["block_ms"].as_f64().unwrap());
    assert_eq!(crossfade_ms, 50f64.min(block_ms));
    assert_eq!(report["params"]["context_ms"], 500.0, "the rest is kept");
    // Block gathered + crossfade + 10 ms + output prefill.
    let latency = report["latency_ms"].as_f64().unwrap();
    assert!(
        (latency - (2.0 * block_ms + crossfade_ms + 10.0)).abs() < 1.0,
        "{latency}"
    );

    // A stream of speech with the pick keeps up on its recorded block times.
    let input = sb.write_speech("speech.wav", 2.0);
    let (block, crossfade) = (block_ms.to_string(), crossfade_ms.to_string());
    let streamed = stream(
        &sb,
        &input,
        "tuned.wav",
        &["--block-ms", &block, "--crossfade-ms", &crossfade],
    );
    assert!(
        streamed.status.success(),
        "{}",
        String::from_utf8_lossy(&streamed.stderr)
    );
    let times = &serde_json::from_slice::<serde_json::Value>(&streamed.stdout).unwrap()["times"];
    assert_eq!(times["budget_ms"].as_f64().unwrap(), budget);
    assert!(
        times["p95_ms"].as_f64().unwrap() <= budget,
        "the tuned stream falls behind: {times}"
    );
}

#[test]
fn the_speech_gate_skips_the_voice_in_silence_and_lets_nothing_through() {
    let _cores = shared_cores();
    let sb = sandbox();
    // Words (0.3 to 2.7 s), 2.7 to 4.3 s of silence with a room's noise (-60 dBFS) in its
    // middle second, words again (4.3 to 4.9 s); 48 kHz.
    let rate = 48_000;
    let first = timbre_audio::signal::speech_like(rate, 3.0, 3);
    let second = timbre_audio::signal::speech_like(rate, 1.2, 4);
    let mut gapped = first.audio.channels[0].clone();
    let mut seed = 1u32;
    gapped.extend((0..rate).map(|_| {
        seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        (f64::from(seed) / f64::from(u32::MAX) * 2.0 - 1.0) as f32 * 1e-3
    }));
    let second_at = gapped.len();
    gapped.extend_from_slice(&second.audio.channels[0]);
    // The blocks (100 ms) that hold a syllable: the gate must never skip them.
    let syllables: Vec<_> = first
        .syllables
        .iter()
        .cloned()
        .chain(
            second
                .syllables
                .iter()
                .map(|s| s.start + second_at..s.end + second_at),
        )
        .collect();
    let blocks = gapped.len().div_ceil(4800) + 1;
    let without_speech = (0..blocks)
        .filter(|b| {
            !syllables
                .iter()
                .any(|s| s.start < (b + 1) * 4800 && s.end > b * 4800)
        })
        .count() as u64;
    let input = sb.path("gapped.wav");
    let audio = timbre_audio::AudioBuffer::new(rate, vec![gapped]);
    timbre_audio::write_wav(&input, &audio, timbre_audio::SampleFormat::Float32).unwrap();
    let input = input.display().to_string();

    let report = |out: &std::process::Output| -> serde_json::Value {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let plain = report(&stream(&sb, &input, "plain.wav", &[]));
    let gated = report(&stream(&sb, &input, "gated.wav", &["--speech-gate"]));
    assert_eq!(plain["skipped_blocks"], 0);
    let skipped = gated["skipped_blocks"].as_u64().unwrap();
    // At least the long silence less the 300 ms hangover; never more than the blocks without a
    // syllable.
    assert!(
        (10..=without_speech).contains(&skipped),
        "{skipped} blocks skipped, {without_speech} hold no speech: {gated}"
    );

    let (_, plain) = samples(&sb.path("plain.wav"));
    let (_, gated) = samples(&sb.path("gated.wav"));
    assert_eq!(plain.len(), gated.len());
    // Inside the silence, past the hangover and the crossfade: nothing at all with the gate,
    // the voice made of the room's noise without it.
    let quiet = 3 * 48_000 + 19_200..4 * 48_000 + 4_800;
    assert!(
        gated[quiet.clone()].iter().all(|&x| x == 0.0),
        "noise through the gate"
    );
    assert!(
        plain[quiet].iter().any(|&x| x != 0.0),
        "the ungated voice is silent too"
    );
    // The words before and after the silence are converted.
    let rms = |x: &[f32]| (x.iter().map(|v| v * v).sum::<f32>() / x.len() as f32).sqrt();
    for words in [48_000..2 * 48_000, second_at + 14_400..second_at + 43_200] {
        let (with, without) = (rms(&gated[words.clone()]), rms(&plain[words]));
        assert!(
            with > 0.5 * without && with > 1e-3,
            "rms {with} with the gate, {without} without"
        );
    }
}
