//! Each format decodes back (lossy ones within what their codec keeps), its tags read back, and
//! a full disk leaves no file behind.

use std::path::Path;
use std::process::Command;

use super::*;
use crate::decode::decode_file;
use crate::signal::speech_like;

fn tags() -> Tags {
    Tags {
        title: "take 1 (Alto)".into(),
        artist: "Alto".into(),
        comment: r#"{"transpose":2.0}"#.into(),
    }
}

/// A voice-like signal: mono, or with a second channel a little different from the first.
fn voice(rate: u32, channels: usize) -> AudioBuffer {
    let mono = speech_like(rate, 2.0, 7).audio.channels.remove(0);
    let planes = (0..channels)
        .map(|c| mono.iter().map(|x| x * (0.8 - 0.2 * c as f32)).collect())
        .collect();
    AudioBuffer::new(rate, planes)
}

/// The lag (within ±50 ms) at which `decoded` best matches a 100 ms stretch of `original`, so a
/// codec's delay does not count as noise.
fn best_lag(original: &[f32], decoded: &[f32], rate: u32) -> isize {
    let reach = (rate / 20) as isize;
    let (from, to) = (
        original.len() / 2,
        original.len() / 2 + (rate / 10) as usize,
    );
    let at = |j: isize| {
        usize::try_from(j)
            .ok()
            .and_then(|j| decoded.get(j))
            .copied()
    };
    let error = |lag: isize| -> f64 {
        (from..to)
            .map(|i| f64::from(original[i] - at(i as isize + lag).unwrap_or(0.0)).powi(2))
            .sum()
    };
    (-reach..=reach)
        .min_by(|a, b| error(*a).total_cmp(&error(*b)))
        .unwrap()
}

/// The signal-to-noise ratio of `decoded` against `original` at their best lag.
fn aligned_snr_db(original: &[f32], decoded: &[f32], rate: u32) -> (f64, isize) {
    let lag = best_lag(original, decoded, rate);
    let (mut signal, mut noise) = (0.0f64, 0.0f64);
    for (i, &x) in original.iter().enumerate() {
        let j = i as isize + lag;
        let y = usize::try_from(j)
            .ok()
            .and_then(|j| decoded.get(j))
            .copied()
            .unwrap_or(0.0);
        signal += f64::from(x).powi(2);
        noise += f64::from(x - y).powi(2);
    }
    (10.0 * (signal / noise).log10(), lag)
}

#[test]
fn every_format_decodes_back_with_its_tags() {
    let dir = tempfile::tempdir().unwrap();
    // (codec, rate in, channels, rate out, minimum SNR in dB): lengths come back exact.
    let cases = [
        (Codec::Wav(SampleFormat::Int16), 40_000, 1, 40_000, 80.0),
        (Codec::Wav(SampleFormat::Float32), 48_000, 2, 48_000, 200.0),
        (Codec::Flac, 32_000, 1, 32_000, 80.0),
        (Codec::Mp3, 48_000, 1, 48_000, 25.0),
        (Codec::Mp3, 44_100, 2, 44_100, 25.0),
        (Codec::Mp3, 40_000, 1, 44_100, 25.0),
        (Codec::Vorbis, 40_000, 1, 40_000, 30.0),
        (Codec::Vorbis, 48_000, 2, 48_000, 30.0),
        (Codec::Opus, 48_000, 1, 48_000, 25.0),
        (Codec::Opus, 48_000, 2, 48_000, 25.0),
        (Codec::Opus, 40_000, 1, 48_000, 25.0),
    ];
    for (n, (codec, rate, channels, rate_out, min_snr)) in cases.into_iter().enumerate() {
        let original = voice(rate, channels);
        let path = dir.path().join(format!("out{n}.{}", codec.extension()));
        export(&path, &original, codec, &tags()).unwrap();
        let label = format!("{codec:?} {rate} Hz ×{channels}");
        let decoded = decode_file(&path, &Default::default()).unwrap();
        assert_eq!(decoded.sample_rate, rate_out, "{label}");
        assert_eq!(decoded.channels.len(), channels, "{label}");
        let expected = original.frames() * rate_out as usize / rate as usize;
        let frames = decoded.frames();
        assert_eq!(frames, expected, "{label}");
        let reference = if rate_out == rate {
            original.clone()
        } else {
            crate::resample::resample(&original, rate_out).unwrap()
        };
        for (o, d) in reference.channels.iter().zip(&decoded.channels) {
            let (snr, lag) = aligned_snr_db(o, d, rate_out);
            assert!(snr >= min_snr, "{label}: SNR {snr:.1} dB at lag {lag}");
        }
        assert_eq!(read_tags(&path).unwrap(), tags(), "{label}");
    }
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[cfg(unix)]
#[test]
fn an_export_gets_the_mode_any_new_file_gets() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let exported = dir.path().join("take 1 (Alto).wav");
    export(
        &exported,
        &voice(40_000, 1),
        Codec::Wav(SampleFormat::Int16),
        &tags(),
    )
    .unwrap();
    let plain = dir.path().join("plain");
    std::fs::write(&plain, b"").unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode();
    assert_eq!(mode(&exported), mode(&plain));
}

#[test]
fn lossy_codecs_refuse_more_than_two_channels_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("surround.mp3");
    for codec in [Codec::Mp3, Codec::Opus] {
        let err = export(&path, &voice(48_000, 3), codec, &tags()).unwrap_err();
        assert_eq!(err.path.as_deref(), Some(path.as_path()));
        assert!(err.detail.contains("not 3"), "{err}");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// Set in the child that runs on the small disk.
const FULL_DISK_DIR: &str = "TIMBRE_TEST_FULL_DISK_DIR";

/// Runs the export on a 64 KiB tmpfs mounted in an unprivileged user namespace (as the
/// library's full-disk tests do): this test again, in a child process, does the writing.
#[test]
fn a_full_disk_leaves_no_partial_file_and_names_it() {
    if let Ok(dir) = std::env::var(FULL_DISK_DIR) {
        return export_onto_a_full_disk(Path::new(&dir));
    }
    let namespaces = Command::new("unshare").args(["-rm", "true"]).output();
    assert!(
        namespaces.as_ref().is_ok_and(|out| out.status.success()),
        "this test needs unprivileged user namespaces (`unshare -rm true` failed: {namespaces:?})"
    );
    let dir = tempfile::tempdir().unwrap();
    let script = r#"mount -t tmpfs -o size=64k tmpfs "$1" || exit 97
        TIMBRE_TEST_FULL_DISK_DIR="$1" "$2" --exact --nocapture "$3""#;
    let ran = Command::new("unshare")
        .args(["-rm", "sh", "-c", script, "sh"])
        .arg(dir.path())
        .arg(std::env::current_exe().unwrap())
        .arg("export::tests::a_full_disk_leaves_no_partial_file_and_names_it")
        .output()
        .unwrap();
    let log =
        String::from_utf8_lossy(&ran.stdout).into_owned() + &String::from_utf8_lossy(&ran.stderr);
    assert!(ran.status.success(), "{log}");
    assert!(log.contains("1 passed"), "{log}");
}

fn export_onto_a_full_disk(dir: &Path) {
    // 20 s of stereo: every format needs more than the disk has.
    let long = AudioBuffer::new(48_000, vec![voice(48_000, 1).channels[0].repeat(10); 2]);
    for codec in [
        Codec::Wav(SampleFormat::Int16),
        Codec::Flac,
        Codec::Mp3,
        Codec::Vorbis,
        Codec::Opus,
    ] {
        let path = dir.join(format!("cover.{}", codec.extension()));
        let outcome = export(&path, &long, codec, &tags());
        let sizes: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().metadata().unwrap().len())
            .collect();
        let err = outcome.expect_err(&format!("{codec:?} fitted: {sizes:?}"));
        assert_eq!(
            err.path.as_deref(),
            Some(path.as_path()),
            "{codec:?}: {err}"
        );
        assert!(
            err.to_string().contains("No space left"),
            "{codec:?}: {err}"
        );
        let left: Vec<_> = std::fs::read_dir(dir).unwrap().collect();
        assert!(left.is_empty(), "{codec:?} left {left:?}");
    }
}
