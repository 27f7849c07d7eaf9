//! Records through cpal's ALSA backend from a fake capture device, so no sound card is needed.
//!
//! What works (alsa-lib 1.2.8, cpal 0.18): `record::fake_alsa_device` (or `fake_alsa_config`)
//! written to `$HOME/.asoundrc`. `pcm.!default` is a `type plug` whose slave is fixed to
//! FLOAT_LE, 48 kHz, stereo, over a `type file` PCM with `slave.pcm "null"`, `infile "<raw>"`
//! and `format "raw"`. On capture the file plugin replaces what the null slave produces with
//! bytes read from `infile`. The raw file is written in the format cpal negotiates (it picks
//! f32 stereo 48 kHz on a device that accepts anything), so `plug` passes it through untouched
//! and the capture is the file, bit for bit.
//!
//! What does not work: a S16_LE 16 kHz mono file with `plug` converting it. Any conversion puts
//! a plugin that reads the file plugin through mmap; the file plugin fills the whole offered
//! region from `infile` but the converter commits only what fits cpal's two-period buffer, so
//! frames vanish at every buffer wrap (a 440 Hz sine measured 460 Hz). `arecord` with its
//! larger default buffer hides this. `type mmap_emul` in between fixes blocking readers but
//! gives cpal's non-blocking reads garbage.
//!
//! The null plugin is always ready, so capture runs faster than real time: 2 s arrive in
//! milliseconds. That is fine because recording counts frames, not wall-clock time.
//!
//! alsa-lib reads its configuration once per process, so the recording runs in a child process
//! (this test binary re-executed with `FAKE_ALSA_CHILD_OUT` set and `HOME` pointing at the
//! temporary `.asoundrc`).

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use timbre_audio::analysis::{self, Level};
use timbre_audio::record::{self, RecordOptions, Recording};
use timbre_audio::signal;
use timbre_audio::{AudioBuffer, DecodeOptions, SampleFormat, decode_file, write_wav};

const CHILD_ENV: &str = "FAKE_ALSA_CHILD_OUT";
const SOURCE_RATE: u32 = 16000;
const FREQ: f64 = 440.0;
const AMPLITUDE: f64 = 0.5;

/// A mono 16 kHz sine, as a microphone test signal would be authored.
fn source_sine(secs: f64) -> AudioBuffer {
    signal::sine(SOURCE_RATE, FREQ as f32, secs, AMPLITUDE as f32)
}

fn crossing_freq(samples: &[f32], rate: u32) -> f64 {
    signal::zero_crossing_frequency(samples, rate).expect("no sine in the capture")
}

#[test]
fn records_exactly_two_seconds_of_the_fake_device() {
    let home = tempfile::tempdir().unwrap();
    let raw = home.path().join("sine.raw");
    let asoundrc = record::fake_alsa_device(&raw, &source_sine(3.0)).unwrap();
    std::fs::write(home.path().join(".asoundrc"), asoundrc).unwrap();
    let captured = home.path().join("captured.wav");

    let (passed, log) = timbre_test_support::run_in_fake_audio_home(
        "child_process_recording",
        home.path(),
        &[(CHILD_ENV, captured.as_os_str())],
    );
    assert!(passed, "child recording failed:\n{log}");

    let buf = decode_file(&captured, &DecodeOptions::default()).unwrap();
    assert_eq!((buf.sample_rate, buf.channel_count()), (48000, 2), "{log}");
    assert_eq!(buf.frames(), 2 * 48000, "{log}");
    for channel in &buf.channels {
        let freq = crossing_freq(channel, buf.sample_rate);
        assert!((freq - FREQ).abs() < FREQ * 0.02, "{freq} Hz\n{log}");
    }
    // Passed through untouched: frame for frame the start of the file.
    let raw: Vec<f32> = std::fs::read(&raw)
        .unwrap()
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    assert!(
        buf.interleaved() == raw[..buf.frames() * 2],
        "not the file's audio"
    );
    let rms = f64::from(analysis::rms(&buf));
    let expected = AMPLITUDE / 2f64.sqrt();
    assert!((rms - expected).abs() < expected * 0.05, "rms {rms}\n{log}");
}

/// The recording half of the test above, which runs it in a child process.
#[test]
#[ignore = "run by records_exactly_two_seconds_of_the_fake_device in a child process"]
fn child_process_recording() {
    let out = std::env::var_os(CHILD_ENV)
        .expect("FAKE_ALSA_CHILD_OUT names the capture to write: the parent test sets it");
    let devices = record::list_input_devices().unwrap();
    println!("devices: {devices:?}");
    let default = devices
        .iter()
        .find(|d| d.is_default)
        .expect("a default device");

    let levels: Arc<Mutex<Vec<(Level, f64)>>> = Arc::default();
    let sink = Arc::clone(&levels);
    let opts = RecordOptions {
        device: Some(default.name.clone()),
        max_duration_secs: Some(2.0),
    };
    let recording = Recording::start(opts, move |level, secs| {
        sink.lock().unwrap().push((level, secs));
    })
    .unwrap();
    recording
        .wait_for_seconds(2.0, Duration::from_secs(20))
        .unwrap();
    assert_eq!(recording.seconds_captured(), 2.0);
    // Let the level thread report at least once.
    std::thread::sleep(Duration::from_millis(150));
    let buf = recording.stop().unwrap();
    println!(
        "captured {} frames x {} channels at {} Hz",
        buf.frames(),
        buf.channel_count(),
        buf.sample_rate
    );
    assert_eq!(
        (buf.sample_rate, buf.channel_count()),
        (default.sample_rate, default.channels)
    );

    let levels = levels.lock().unwrap();
    let (level, secs) = *levels.last().expect("at least one level report");
    assert_eq!(secs, 2.0);
    assert!(
        (f64::from(level.peak) - AMPLITUDE).abs() < 0.02,
        "{level:?}"
    );
    assert!(!level.clipping);
    write_wav(Path::new(&out), &buf, SampleFormat::Float32).unwrap();
}
