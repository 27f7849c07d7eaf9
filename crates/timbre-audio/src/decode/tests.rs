use std::path::PathBuf;
use std::time::Instant;

use super::*;
use crate::encode::{SampleFormat, write_wav};
use crate::test_util::sine;
use timbre_test_support::max_abs_difference;

pub(super) const PCM: u16 = 1;
const FLOAT: u16 = 3;

/// A canonical 44-byte-header WAV whose data chunk declares `declared_len` bytes, whatever
/// `data` holds.
fn wav_bytes(
    tag: u16,
    bits: u16,
    channels: u16,
    rate: u32,
    data: &[u8],
    declared_len: u32,
) -> Vec<u8> {
    let block = channels * bits / 8;
    let mut out = Vec::with_capacity(44 + data.len());
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&declared_len.saturating_add(36).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&tag.to_le_bytes());
    out.extend_from_slice(&channels.to_le_bytes());
    out.extend_from_slice(&rate.to_le_bytes());
    out.extend_from_slice(&(rate * u32::from(block)).to_le_bytes());
    out.extend_from_slice(&block.to_le_bytes());
    out.extend_from_slice(&bits.to_le_bytes());
    out.extend_from_slice(b"data");
    out.extend_from_slice(&declared_len.to_le_bytes());
    out.extend_from_slice(data);
    out
}

pub(super) fn pcm16(samples: &[f32]) -> Vec<u8> {
    samples
        .iter()
        .flat_map(|x| ((x * 32767.0) as i16).to_le_bytes())
        .collect()
}

pub(super) fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn kind_of(result: Result<AudioBuffer, AudioError>) -> AudioErrorKind {
    result.expect_err("decoding should have failed").kind
}

#[test]
fn decodes_every_wav_sample_encoding() {
    let src = sine(8000, 440.0, 0.5, 0.6);
    type Enc = fn(f32) -> Vec<u8>;
    let encodings: [(u16, u16, Enc, f32); 6] = [
        (
            PCM,
            8,
            |x| vec![((x * 128.0).round() + 128.0) as u8],
            1.0 / 128.0,
        ),
        (
            PCM,
            16,
            |x| ((x * 32768.0).round() as i16).to_le_bytes().to_vec(),
            1e-4,
        ),
        (
            PCM,
            24,
            |x| ((x * 8_388_608.0).round() as i32).to_le_bytes()[..3].to_vec(),
            1e-6,
        ),
        (
            PCM,
            32,
            |x| {
                ((f64::from(x) * 2_147_483_648.0) as i32)
                    .to_le_bytes()
                    .to_vec()
            },
            1e-6,
        ),
        (FLOAT, 32, |x| x.to_le_bytes().to_vec(), 0.0),
        (FLOAT, 64, |x| f64::from(x).to_le_bytes().to_vec(), 0.0),
    ];
    for (tag, bits, enc, tol) in encodings {
        let data: Vec<u8> = src.iter().flat_map(|&x| enc(x)).collect();
        let bytes = wav_bytes(tag, bits, 1, 8000, &data, data.len() as u32);
        let buf = decode_bytes(bytes, Some("wav"), &DecodeOptions::default()).unwrap();
        assert_eq!(
            (buf.sample_rate, buf.frames()),
            (8000, src.len()),
            "{bits}-bit"
        );
        let worst = max_abs_difference(&src, &buf.channels[0]);
        assert!(worst <= tol, "{bits}-bit tag {tag}: error {worst}");
    }
}

#[test]
fn keeps_all_channels_and_odd_rates() {
    let frames = 1000;
    let data: Vec<u8> = (0..frames * 6)
        .flat_map(|i| (((i % 6) as i16 + 1) * 1000).to_le_bytes())
        .collect();
    let bytes = wav_bytes(PCM, 16, 6, 11025, &data, data.len() as u32);
    let buf = decode_bytes(bytes, None, &DecodeOptions::default()).unwrap();
    assert_eq!(
        (buf.sample_rate, buf.channel_count(), buf.frames()),
        (11025, 6, frames)
    );
    for (c, plane) in buf.channels.iter().enumerate() {
        let expected = (c as f32 + 1.0) * 1000.0 / 32768.0;
        assert!(plane.iter().all(|&x| (x - expected).abs() < 1e-6));
    }
}

#[test]
fn file_system_errors() {
    let dir = tempfile::tempdir().unwrap();
    let opts = DecodeOptions::default();
    let missing = dir.path().join("missing.wav");
    let err = decode_file(&missing, &opts).unwrap_err();
    assert_eq!(err.kind, AudioErrorKind::NotFound);
    assert_eq!(
        err.to_string(),
        format!("{}: no such file", missing.display())
    );
    assert_eq!(
        probe_file(&missing).unwrap_err().kind,
        AudioErrorKind::NotFound
    );

    assert_eq!(
        kind_of(decode_file(dir.path(), &opts)),
        AudioErrorKind::IsDirectory
    );

    let empty = write(dir.path(), "empty.wav", &[]);
    let err = decode_file(&empty, &opts).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("{}: the file is empty (0 bytes)", empty.display())
    );
    let err = decode_bytes(Vec::new(), Some("wav"), &opts).unwrap_err();
    assert_eq!((err.kind, err.path), (AudioErrorKind::Empty, None));
}

#[test]
fn garbage_is_unsupported_or_corrupt_with_a_plain_message() {
    let dir = tempfile::tempdir().unwrap();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let noise: Vec<u8> = (0..50_000)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect();
    let text = b"This is not audio, just a note someone saved with the wrong name.\n".repeat(50);
    for (name, bytes) in [("noise.wav", noise), ("notes.wav", text)] {
        let path = write(dir.path(), name, &bytes);
        let err = decode_file(&path, &DecodeOptions::default()).unwrap_err();
        assert!(
            matches!(
                err.kind,
                AudioErrorKind::Unsupported | AudioErrorKind::Corrupt
            ),
            "{name}: {err}"
        );
        assert!(
            err.to_string()
                .starts_with(&format!("{}: ", path.display())),
            "{err}"
        );
    }
}

#[test]
fn truncated_wav_is_an_error() {
    let data = pcm16(&sine(16000, 440.0, 1.0, 0.5));
    let cut = &data[..data.len() / 2];
    let bytes = wav_bytes(PCM, 16, 1, 16000, cut, data.len() as u32);
    let err = decode_bytes(bytes, Some("wav"), &DecodeOptions::default()).unwrap_err();
    assert_eq!(err.kind, AudioErrorKind::Truncated);
    assert!(err.detail.contains("1.00 s"), "{err}");
}

#[test]
fn blocks_join_into_the_whole_file_and_the_end_checks_fail_the_last_call() {
    let dir = tempfile::tempdir().unwrap();
    let src = AudioBuffer::new(
        8000,
        vec![sine(8000, 440.0, 1.0, 0.5), sine(8000, 220.0, 1.0, 0.3)],
    );
    let path = dir.path().join("two.wav");
    write_wav(&path, &src, SampleFormat::Float32).unwrap();
    let whole = decode_file(&path, &DecodeOptions::default()).unwrap();
    let mut reader = open_blocks(&path, &DecodeOptions::default()).unwrap();
    assert_eq!(reader.info().frames, Some(8000));
    let mut sizes = Vec::new();
    let mut joined = vec![Vec::new(); 2];
    while let Some(block) = reader.next_block(3000).unwrap() {
        sizes.push(block.frames());
        for (all, part) in joined.iter_mut().zip(&block.channels) {
            all.extend_from_slice(part);
        }
    }
    assert_eq!(sizes, [3000, 3000, 2000]);
    assert_eq!(joined, whole.channels);

    let data = pcm16(&sine(16000, 440.0, 1.0, 0.5));
    let cut = write(
        dir.path(),
        "cut.wav",
        &wav_bytes(
            PCM,
            16,
            1,
            16000,
            &data[..data.len() / 2],
            data.len() as u32,
        ),
    );
    let mut reader = open_blocks(&cut, &DecodeOptions::default()).unwrap();
    assert_eq!(reader.next_block(4000).unwrap().unwrap().frames(), 4000);
    assert_eq!(reader.next_block(4000).unwrap().unwrap().frames(), 4000);
    let err = reader.next_block(4000).unwrap_err();
    assert_eq!(err.kind, AudioErrorKind::Truncated);
    assert_eq!(err.path.as_deref(), Some(cut.as_path()));
}

#[test]
fn slightly_short_or_overlong_data_is_accepted() {
    let data = pcm16(&sine(16000, 440.0, 1.0, 0.5));
    // 0.5% short: within tolerance, decodes what is there.
    let short = &data[..data.len() - 160];
    let bytes = wav_bytes(PCM, 16, 1, 16000, short, data.len() as u32);
    let buf = decode_bytes(bytes, Some("wav"), &DecodeOptions::default()).unwrap();
    assert!(buf.frames() > 15_800);
    // Header promises fewer frames than present: the promised part is the audio.
    let bytes = wav_bytes(PCM, 16, 1, 16000, &data, 8000 * 2);
    let buf = decode_bytes(bytes, Some("wav"), &DecodeOptions::default()).unwrap();
    assert_eq!(buf.frames(), 8000);
}

#[test]
fn header_without_samples_is_no_samples() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "silent.wav",
        &wav_bytes(PCM, 16, 1, 16000, &[], 0),
    );
    assert_eq!(probe_file(&path).unwrap().frames, Some(0));
    assert_eq!(
        kind_of(decode_file(&path, &DecodeOptions::default())),
        AudioErrorKind::NoSamples
    );
}

#[test]
fn too_long_is_rejected_from_the_header_of_a_sparse_file() {
    let dir = tempfile::tempdir().unwrap();
    let data_len: u32 = 10 * 3600 * 8000 * 2;
    let path = write(
        dir.path(),
        "ten_hours.wav",
        &wav_bytes(PCM, 16, 1, 8000, &[], data_len),
    );
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(44 + u64::from(data_len)).unwrap();

    let start = Instant::now();
    let info = probe_file(&path).unwrap();
    assert_eq!(info.frames, Some(10 * 3600 * 8000));
    assert_eq!(info.duration_secs, Some(36_000.0));
    assert_eq!((info.sample_rate, info.channels), (8000, 1));
    assert_eq!(
        (info.container.as_str(), info.codec.as_str()),
        ("wave", "pcm_s16le")
    );
    let opts = DecodeOptions {
        max_duration_secs: Some(600.0),
    };
    let err = decode_file(&path, &opts).unwrap_err();
    assert_eq!(err.kind, AudioErrorKind::TooLong);
    assert!(err.detail.contains("36000.0 s"), "{err}");
    assert!(
        start.elapsed().as_millis() < 200,
        "took {:?}",
        start.elapsed()
    );
}

#[test]
fn too_long_without_a_length_stops_once_past_the_limit() {
    let data = pcm16(&sine(8000, 440.0, 3.0, 0.5));
    let bytes = wav_bytes(PCM, 16, 1, 8000, &data, u32::MAX);
    let opened = open(Box::new(Cursor::new(bytes.clone())), Some("wav"), None).unwrap();
    assert_eq!(opened.info.frames, None);
    let opts = DecodeOptions {
        max_duration_secs: Some(1.0),
    };
    let err = decode_bytes(bytes.clone(), Some("wav"), &opts).unwrap_err();
    assert_eq!(err.kind, AudioErrorKind::TooLong);
    let whole = decode_bytes(bytes, Some("wav"), &DecodeOptions::default()).unwrap();
    assert!(whole.duration_secs() > 2.9);
}

#[test]
fn flac_cut_short_is_truncated() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.flac");
    let buf = AudioBuffer::new(16000, vec![sine(16000, 440.0, 2.0, 0.5)]);
    crate::encode::write_flac(&path, &buf, 16).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let cut = bytes[..bytes.len() / 2].to_vec();
    assert_eq!(
        kind_of(decode_bytes(cut, Some("flac"), &Default::default())),
        AudioErrorKind::Truncated
    );
}
