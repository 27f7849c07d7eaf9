//! Memory of `timbre isolate` with a separation model does not grow with the input: the file is
//! decoded, separated and written block by block. The peak resident memory of the child process
//! (VmHWM, polled from /proc) for 4 minutes of stereo 44.1 kHz audio stays within a margin of the
//! peak for 20 s. Held whole, the 220 s more would add 78 MB per copy of the audio (input, vocals,
//! instrumental: well over 200 MB); streamed, the peaks differ by the allocator's noise, measured
//! at up to 100 MB in one run, so each input runs twice and the lower peak counts.

use std::path::Path;
use std::time::Duration;

use timbre_audio::{AudioBuffer, SampleFormat, WavStreamWriter};
use timbre_integration_tests::{Sandbox, separation_fixtures};

const RATE: u32 = 44_100;

/// `blocks` × 10 s of a stereo mix, written 10 s at a time.
fn write_mix(path: &Path, blocks: usize) {
    let mut writer = WavStreamWriter::create(path, RATE, 2, SampleFormat::Int16).unwrap();
    let block = 10 * RATE as usize;
    for b in 0..blocks {
        let t = |i: usize| (b * block + i) as f32 / RATE as f32;
        let tone = |f: f32, i: usize| (std::f32::consts::TAU * f * t(i)).sin();
        let left = (0..block).map(|i| 0.3 * tone(220.0, i) + 0.1 * tone(1234.0, i));
        let right = (0..block).map(|i| 0.3 * tone(330.0, i) + 0.1 * tone(987.0, i));
        let audio = AudioBuffer::new(RATE, vec![left.collect(), right.collect()]);
        writer.write(&audio).unwrap();
    }
    writer.finish().unwrap();
}

fn vm_hwm_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Isolates `input` into a fresh library; returns the child's peak resident memory in MB.
fn isolate_peak_mb(models: &Path, input: &Path) -> f64 {
    let sb = Sandbox::new();
    let mut child = sb
        .command()
        .env("TIMBRE_MODELS_DIR", models)
        .env("TIMBRE_DEVICE", "cpu")
        .args(["--json", "isolate", input.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut peak = 0;
    while child.try_wait().unwrap().is_none() {
        peak = peak.max(vm_hwm_kb(child.id()).unwrap_or(0));
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let frames = result[0]["result"]["takes"][0]["take"]["frames"].as_u64();
    let expected = timbre_audio::probe_file(input).unwrap().frames;
    assert_eq!(frames, expected, "{result}");
    peak as f64 / 1024.0
}

#[test]
fn isolating_four_minutes_takes_no_more_memory_than_twenty_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let models = dir.path().join("models");
    let separation = models.join("separation");
    std::fs::create_dir_all(&separation).unwrap();
    let tiny = separation_fixtures().join("bs_roformer_tiny");
    std::fs::copy(tiny.join("model.ckpt"), separation.join("tiny.ckpt")).unwrap();
    std::fs::copy(tiny.join("config.yaml"), separation.join("tiny.yaml")).unwrap();
    let (short, long) = (dir.path().join("short.wav"), dir.path().join("long.wav"));
    write_mix(&short, 2);
    write_mix(&long, 24);
    // The allocator's noise only adds to a peak: the lower of two runs is the steadier measure.
    let lower_peak =
        |input: &Path| isolate_peak_mb(&models, input).min(isolate_peak_mb(&models, input));
    let short_peak = lower_peak(&short);
    let long_peak = lower_peak(&long);
    println!("peak RSS: 20 s {short_peak:.0} MB, 4 min {long_peak:.0} MB");
    assert!(
        long_peak < short_peak + 120.0,
        "4 minutes peaked at {long_peak:.0} MB against {short_peak:.0} MB for 20 s"
    );
}
