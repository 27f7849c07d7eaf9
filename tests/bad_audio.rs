//! Files that decode to something that is not audio (NaN, infinite or absurd samples), WAV
//! headers with absurd fields, and paths that are not regular files (a FIFO): every command
//! that reads them fails promptly, naming the file and the problem, without a panic or abort.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use timbre_integration_tests::{Sandbox, write_sine_wav};

/// Runs `cmd`, failing the test if it takes longer than `limit` (a FIFO used to block forever).
fn run_within(mut cmd: Command, limit: Duration) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running timbre");
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            child.kill().ok();
            panic!("{cmd:?} still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// What a failed command said: stdout and stderr together.
fn said(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Fails unless the command failed cleanly: non-zero exit (not a signal), no panic, and its
/// output names `file` and says `words`.
fn assert_refused(out: &Output, file: &Path, words: &str) {
    let text = said(out);
    assert!(out.status.code().is_some_and(|c| c != 0), "{text}");
    assert!(!text.contains("panicked"), "{text}");
    assert!(text.contains(&file.display().to_string()), "{text}");
    assert!(text.contains(words), "{text} should say {words:?}");
}

/// A float stereo WAV of one second at 48 kHz with `bad` at frame 12,345 of its second channel.
fn float_wav_with(path: &Path, bad: f32) {
    let spec = hound::WavSpec {
        channels: 2,
        sample_rate: 48_000,
        bits_per_sample: 32,
        sample_format: hound::SampleFormat::Float,
    };
    let mut writer = hound::WavWriter::create(path, spec).unwrap();
    for i in 0..48_000 {
        let x = (i as f32 * 0.05).sin() * 0.3;
        writer.write_sample(x).unwrap();
        writer
            .write_sample(if i == 12_345 { bad } else { x })
            .unwrap();
    }
    writer.finalize().unwrap();
}

#[test]
fn samples_that_are_not_audio_fail_import_enhance_and_isolate() {
    let sb = Sandbox::new();
    let cases = [
        (
            "nan.wav",
            f32::NAN,
            "sample 12,345 (0.257 s, channel 2) is NaN",
        ),
        (
            "inf.wav",
            f32::INFINITY,
            "sample 12,345 (0.257 s, channel 2) is infinite",
        ),
        ("huge.wav", 3e29, "589.5 dB above full scale"),
    ];
    for (name, bad, words) in cases {
        let path = sb.path(name);
        float_wav_with(&path, bad);
        let file = path.to_str().unwrap();
        for args in [
            &["import", file][..],
            &["enhance", file],
            &["isolate", "--rough", file],
        ] {
            let mut cmd = sb.command();
            cmd.args(args);
            assert_refused(&run_within(cmd, Duration::from_secs(60)), &path, words);
        }
    }
    let takes = sb.json(&["library", "list"]);
    assert_eq!(takes.as_array().unwrap().len(), 0, "nothing imported");
}

#[test]
fn absurd_wav_headers_fail_import_naming_the_value() {
    let sb = Sandbox::new();
    let good = sb.path("good.wav");
    write_sine_wav(&good, 0.2, 440.0);
    let bytes = std::fs::read(&good).unwrap();
    let with_field = |name: &str, at: usize, value: &[u8]| -> PathBuf {
        let mut bytes = bytes.clone();
        bytes[at..at + value.len()].copy_from_slice(value);
        let path = sb.path(name);
        std::fs::write(&path, bytes).unwrap();
        path
    };
    // Offsets in the canonical 44-byte header hound writes: channels 22, rate 24.
    let cases = [
        (
            with_field("channels.wav", 22, &65_535u16.to_le_bytes()),
            "65535 channels",
        ),
        (
            with_field("rate0.wav", 24, &0u32.to_le_bytes()),
            "sample rate of 0 Hz",
        ),
        (
            with_field("ratemax.wav", 24, &u32::MAX.to_le_bytes()),
            "sample rate of 4294967295 Hz",
        ),
    ];
    for (path, words) in cases {
        let mut cmd = sb.command();
        cmd.args(["import", path.to_str().unwrap()]);
        assert_refused(&run_within(cmd, Duration::from_secs(60)), &path, words);
    }
}

#[cfg(unix)]
#[test]
fn a_fifo_is_refused_by_every_command_without_blocking() {
    let sb = Sandbox::with_extractors(false);
    let fifo = sb.path("live.wav");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let file = fifo.to_str().unwrap();
    let words = "is not a regular file (a FIFO)";

    for args in [
        &["import", file][..],
        &["enhance", file],
        &["isolate", "--rough", file],
    ] {
        let mut cmd = sb.command();
        cmd.args(args);
        assert_refused(&run_within(cmd, Duration::from_secs(60)), &fifo, words);
    }

    sb.import_fixture_voice("synth_v1_nono_32k/model.pth", "plain");
    let mut cmd = sb.cpu_command();
    cmd.args(["convert", "--model", "plain", file]);
    assert_refused(&run_within(cmd, Duration::from_secs(120)), &fifo, words);
}

/// A RIFF/WAVE file of `chunks` (each an id and a body, padded to an even length).
fn riff_wave(chunks: &[(&[u8; 4], Vec<u8>)]) -> Vec<u8> {
    let mut body = b"WAVE".to_vec();
    for (id, chunk) in chunks {
        body.extend_from_slice(*id);
        body.extend_from_slice(&(chunk.len() as u32).to_le_bytes());
        body.extend_from_slice(chunk);
        if chunk.len() % 2 == 1 {
            body.push(0);
        }
    }
    let mut file = b"RIFF".to_vec();
    file.extend_from_slice(&(body.len() as u32).to_le_bytes());
    file.extend(body);
    file
}

/// A PCM `fmt ` chunk's body: 16-bit samples at 16 kHz.
fn pcm_fmt(channels: u16) -> Vec<u8> {
    let mut fmt = Vec::new();
    fmt.extend_from_slice(&1u16.to_le_bytes());
    fmt.extend_from_slice(&channels.to_le_bytes());
    fmt.extend_from_slice(&16_000u32.to_le_bytes());
    fmt.extend_from_slice(&(32_000 * u32::from(channels)).to_le_bytes());
    fmt.extend_from_slice(&channels.wrapping_mul(2).to_le_bytes());
    fmt.extend_from_slice(&16u16.to_le_bytes());
    fmt
}

/// A WAVE_FORMAT_EXTENSIBLE `fmt ` chunk's body: 16-bit PCM, stereo, with `mask` as its
/// speaker mask.
fn extensible_stereo_fmt(mask: u32) -> Vec<u8> {
    let mut fmt = pcm_fmt(2);
    fmt[0..2].copy_from_slice(&0xFFFEu16.to_le_bytes());
    fmt.extend_from_slice(&22u16.to_le_bytes());
    fmt.extend_from_slice(&16u16.to_le_bytes());
    fmt.extend_from_slice(&mask.to_le_bytes());
    // KSDATAFORMAT_SUBTYPE_PCM.
    fmt.extend_from_slice(&[
        0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xaa, 0x00, 0x38, 0x9b,
        0x71,
    ]);
    fmt
}

/// The lossy fixture `aac_mono44.m4a` with its time-to-sample table (two entries: 44 packets of
/// 1,024 samples, then one of 68) made one packet of 1,024 samples, then 2³² − 1 packets of one:
/// symphonia adds the packet counts up in a u32 when it times the second packet, and panics.
fn overflowing_stts_m4a() -> Vec<u8> {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crates/timbre-audio/testdata/lossy/aac_mono44.m4a");
    let mut bytes = std::fs::read(&fixture).unwrap();
    let stts = bytes.windows(4).position(|w| w == b"stts").unwrap();
    let entries = stts + 12;
    assert_eq!(bytes[stts + 8..entries], 2u32.to_be_bytes(), "two entries");
    for (i, value) in [1u32, 1024, u32::MAX, 1].into_iter().enumerate() {
        bytes[entries + 4 * i..entries + 4 * i + 4].copy_from_slice(&value.to_be_bytes());
    }
    bytes
}

/// Crafted files on which symphonia panics: three WAV layouts that the header check refuses
/// before symphonia reads them (a `fmt ` after many other chunks, a second `fmt `, a speaker
/// mask with its top bit set), and an M4A it has no check for, whose panic the decode guard
/// turns into an error. None prints a panic's message or a backtrace.
#[test]
fn crafted_files_that_panic_symphonia_are_refused_without_panic_text() {
    let sb = Sandbox::new();
    let data = || vec![0u8; 8];
    let mut junk_first = vec![(b"JUNK", vec![0u8; 4]); 100];
    junk_first.extend([(b"fmt ", pcm_fmt(40_000)), (b"data", data())]);
    let cases = [
        (
            "junk-then-fmt.wav",
            riff_wave(&junk_first),
            "its header declares 40000 channels",
        ),
        (
            "two-fmt.wav",
            riff_wave(&[
                (b"fmt ", pcm_fmt(1)),
                (b"fmt ", pcm_fmt(40_000)),
                (b"data", data()),
            ]),
            "its header has two `fmt ` chunks",
        ),
        (
            "speaker-mask.wav",
            riff_wave(&[
                (b"fmt ", extensible_stereo_fmt(0x8000_0000)),
                (b"data", data()),
            ]),
            "its speaker mask 0x80000000 does not fit its 2 channels",
        ),
        (
            "stts.m4a",
            overflowing_stts_m4a(),
            "the file is damaged (its decoder failed on it)",
        ),
    ];
    for (name, bytes, words) in cases {
        let path = sb.path(name);
        std::fs::write(&path, bytes).unwrap();
        let mut cmd = sb.command();
        cmd.env("RUST_BACKTRACE", "1")
            .args(["import", path.to_str().unwrap()]);
        let out = run_within(cmd, Duration::from_secs(60));
        assert_refused(&out, &path, words);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("panicked at") && !stderr.to_lowercase().contains("backtrace"),
            "{name}: {stderr}"
        );
    }
}
