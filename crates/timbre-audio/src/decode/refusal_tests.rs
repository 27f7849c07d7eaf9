//! Files whose header declares absurd values, or whose samples are not audio: refused by every
//! decoding path with the file, the problem and the value named.

use std::path::{Path, PathBuf};

use super::tests::{PCM, pcm16, write};
use super::*;
use crate::test_util::sine;

/// A WAV header with every field as given, however absurd, and `data` after it.
fn raw_wav(fields: RawFormat, data: &[u8], declared_len: u32) -> Vec<u8> {
    let mut out = b"RIFF".to_vec();
    out.extend_from_slice(&declared_len.saturating_add(36).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&fields.tag.to_le_bytes());
    out.extend_from_slice(&fields.channels.to_le_bytes());
    out.extend_from_slice(&fields.rate.to_le_bytes());
    out.extend_from_slice(
        &fields
            .rate
            .wrapping_mul(u32::from(fields.block_align))
            .to_le_bytes(),
    );
    out.extend_from_slice(&fields.block_align.to_le_bytes());
    out.extend_from_slice(&fields.bits.to_le_bytes());
    out.extend_from_slice(b"data");
    out.extend_from_slice(&declared_len.to_le_bytes());
    out.extend_from_slice(data);
    out
}

#[derive(Clone, Copy)]
struct RawFormat {
    tag: u16,
    channels: u16,
    rate: u32,
    block_align: u16,
    bits: u16,
}

const MONO_16: RawFormat = RawFormat {
    tag: PCM,
    channels: 1,
    rate: 16_000,
    block_align: 2,
    bits: 16,
};

#[test]
fn absurd_header_fields_are_refused_by_every_path_naming_the_value() {
    let dir = tempfile::tempdir().unwrap();
    let data = pcm16(&sine(16000, 440.0, 0.1, 0.5));
    let cases = [
        (
            "channels",
            RawFormat {
                channels: 65_535,
                block_align: 65_534,
                ..MONO_16
            },
            "65535 channels",
        ),
        (
            "no_channels",
            RawFormat {
                channels: 0,
                ..MONO_16
            },
            "0 channels",
        ),
        (
            "rate_0",
            RawFormat { rate: 0, ..MONO_16 },
            "sample rate of 0 Hz",
        ),
        (
            "rate_max",
            RawFormat {
                rate: u32::MAX,
                ..MONO_16
            },
            "sample rate of 4294967295 Hz",
        ),
        (
            "bits_0",
            RawFormat { bits: 0, ..MONO_16 },
            "0 bits per sample",
        ),
        (
            "align_0",
            RawFormat {
                block_align: 0,
                ..MONO_16
            },
            "block size of 0 bytes",
        ),
    ];
    for (name, format, words) in cases {
        let bytes = raw_wav(format, &data, data.len() as u32);
        let path = write(dir.path(), &format!("{name}.wav"), &bytes);
        let errors = [
            decode_file(&path, &DecodeOptions::default()).unwrap_err(),
            probe_file(&path).unwrap_err(),
            open_blocks(&path, &DecodeOptions::default()).err().unwrap(),
            decode_bytes(bytes, Some("wav"), &DecodeOptions::default()).unwrap_err(),
        ];
        for err in errors {
            assert_eq!(err.kind, AudioErrorKind::Unsupported, "{name}: {err}");
            assert!(
                err.detail.contains(words),
                "{name}: {err} should say {words}"
            );
        }
    }
}

#[test]
fn a_data_size_past_the_end_of_the_file_is_truncation() {
    let data = pcm16(&sine(16000, 440.0, 0.5, 0.5));
    let bytes = raw_wav(MONO_16, &data, 50 * data.len() as u32);
    let err = decode_bytes(bytes, Some("wav"), &DecodeOptions::default()).unwrap_err();
    assert_eq!(err.kind, AudioErrorKind::Truncated, "{err}");
}

/// A float WAV written by hound with `bad` at frame `at` of its second channel.
fn float_wav_with(dir: &Path, name: &str, bad: f32, at: usize) -> PathBuf {
    let path = dir.join(name);
    let spec = hound::WavSpec {
        channels: 2,
        sample_rate: 48_000,
        bits_per_sample: 32,
        sample_format: hound::SampleFormat::Float,
    };
    let mut writer = hound::WavWriter::create(&path, spec).unwrap();
    for i in 0..48_000 {
        writer.write_sample(0.25f32).unwrap();
        writer
            .write_sample(if i == at { bad } else { -0.25f32 })
            .unwrap();
    }
    writer.finalize().unwrap();
    path
}

#[test]
fn non_finite_or_absurd_float_samples_are_refused_by_every_path() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (f32::NAN, "is NaN"),
        (f32::INFINITY, "is infinite"),
        (3e29, "589.5 dB above full scale"),
    ];
    for (i, (bad, words)) in cases.into_iter().enumerate() {
        let path = float_wav_with(dir.path(), &format!("take{i}.wav"), bad, 12_345);
        let expected = format!("{}: sample 12,345 (0.257 s, channel 2) is ", path.display());
        let mut reader = open_blocks(&path, &DecodeOptions::default()).unwrap();
        let from_blocks = loop {
            match reader.next_block(4096) {
                Ok(Some(_)) => {}
                Ok(None) => panic!("{expected}: decoded without an error"),
                Err(err) => break err,
            }
        };
        let bytes = std::fs::read(&path).unwrap();
        for err in [
            decode_file(&path, &DecodeOptions::default()).unwrap_err(),
            from_blocks,
        ] {
            assert_eq!(err.kind, AudioErrorKind::Corrupt);
            assert!(err.to_string().starts_with(&expected), "{err}");
            assert!(
                err.detail.contains("refused rather than cleaned up"),
                "{err}"
            );
        }
        let err = decode_bytes(bytes, Some("wav"), &DecodeOptions::default()).unwrap_err();
        assert!(err.detail.contains(words), "{err}");
    }
}

/// The inputs `make fuzz` found panicking inside symphonia's RIFF reader (a PCM `fmt ` chunk
/// whose channel count overflows its block-align arithmetic): refused by our header check
/// before symphonia reads them.
#[test]
fn fuzz_found_fmt_chunks_are_refused_before_symphonia_reads_them() {
    let testdata = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/fuzz");
    let options = DecodeOptions {
        max_duration_secs: Some(600.0),
    };
    // The audio_decode target's input: a hint byte (0 = wav), then the file.
    let decoded = std::fs::read(testdata.join("riff-fmt-multiply-overflow.wav.bin")).unwrap();
    // The wav_header target's input: 16 `fmt ` bytes, the data size, then the samples.
    let fields =
        std::fs::read(testdata.join("pcm-block-align-multiply-overflow.fields.bin")).unwrap();
    let (fmt, rest) = fields.split_at(16);
    let (data_size, samples) = rest.split_at(4);
    let mut wav = b"RIFF".to_vec();
    wav.extend((36 + samples.len() as u32).to_le_bytes());
    wav.extend(b"WAVEfmt ");
    wav.extend(16u32.to_le_bytes());
    wav.extend(fmt);
    wav.extend(b"data");
    wav.extend(data_size);
    wav.extend(samples);
    for bytes in [decoded[1..].to_vec(), wav] {
        let err = decode_bytes(bytes, Some("wav"), &options).unwrap_err();
        assert!(err.to_string().contains("channels"), "{err}");
    }
    // A WAVE header 577 bytes in, after junk, which symphonia's probe still finds: its
    // extensible speaker mask has the top bit set.
    let junk_first = std::fs::read(testdata.join("riff-after-junk-channel-mask.wav.bin")).unwrap();
    let err = decode_bytes(junk_first[1..].to_vec(), Some("wav"), &options).unwrap_err();
    assert!(err.to_string().contains("speaker mask"), "{err}");
}
