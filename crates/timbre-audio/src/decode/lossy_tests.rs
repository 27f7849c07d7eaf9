//! Lossy files made by ffmpeg and sox (`testdata/lossy/`, see its README), each against
//! ffmpeg's own decode of it: the same length (the container's priming and padding trimmed as
//! ffmpeg trims them), the same samples at zero lag, and the sine still at its pitch.

use std::path::{Path, PathBuf};

use super::{DecodeOptions, decode_file, probe_file};
use crate::signal::zero_crossing_frequency;

/// Measured: 89 to 140 dB on these files (decoders differ by float rounding, not by samples);
/// a shift of one sample already costs more than 30 dB of it.
const MIN_SNR_DB: f64 = 80.0;

/// Each file, the encoder that made it, and the sine in each channel.
const CASES: [(&str, &[f64]); 7] = [
    ("sox_mono44.mp3", &[440.0]),
    ("lame_stereo22.mp3", &[440.0, 660.0]),
    ("sox_mono44.ogg", &[440.0]),
    ("vorbis_stereo22.ogg", &[440.0, 660.0]),
    ("aac_mono44.m4a", &[440.0]),
    ("aac_stereo22.m4a", &[440.0, 660.0]),
    ("sox_mono16.aiff", &[440.0]),
];

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/lossy")
}

/// The reference decode's channels.
fn read_reference(path: &Path) -> (u32, Vec<Vec<f32>>) {
    let mut reader =
        hound::WavReader::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let spec = reader.spec();
    let samples: Vec<f32> = reader.samples::<f32>().map(Result::unwrap).collect();
    let channels = usize::from(spec.channels);
    let planes = (0..channels)
        .map(|c| samples.iter().skip(c).step_by(channels).copied().collect())
        .collect();
    (spec.sample_rate, planes)
}

fn snr_db(reference: &[f32], ours: &[f32]) -> f64 {
    let (mut signal, mut noise) = (0.0f64, 0.0f64);
    for (&r, &o) in reference.iter().zip(ours) {
        signal += f64::from(r).powi(2);
        noise += f64::from(r - o).powi(2);
    }
    10.0 * (signal / noise.max(1e-30)).log10()
}

#[test]
fn lossy_files_decode_as_ffmpeg_decodes_them() {
    for (name, freqs) in CASES {
        let path = testdata().join(name);
        let (rate, reference) = read_reference(&testdata().join(format!("{name}.ref.wav")));
        let decoded =
            decode_file(&path, &DecodeOptions::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(decoded.sample_rate, rate, "{name}: rate");
        assert_eq!(decoded.channels.len(), reference.len(), "{name}: channels");
        assert_eq!(
            decoded.frames(),
            reference[0].len(),
            "{name}: frames against ffmpeg's decode"
        );
        let info = probe_file(&path).unwrap();
        if let Some(frames) = info.frames {
            assert_eq!(frames as usize, decoded.frames(), "{name}: probed frames");
        }
        for ((ours, theirs), &freq) in decoded.channels.iter().zip(&reference).zip(freqs) {
            let snr = snr_db(theirs, ours);
            // The middle 80 %: a file that keeps its encoder's delay (an mp3 without a LAME
            // tag) starts with a few ms of near-silence whose noise crosses zero at random.
            let middle = &ours[ours.len() / 10..ours.len() - ours.len() / 10];
            let measured = zero_crossing_frequency(middle, rate).unwrap();
            println!("{name}: {snr:.1} dB against ffmpeg, {measured:.1} Hz");
            assert!(
                snr >= MIN_SNR_DB,
                "{name}: {snr:.1} dB against ffmpeg's decode"
            );
            assert!(
                (measured - freq).abs() < freq * 0.01,
                "{name}: {measured:.1} Hz instead of {freq} Hz"
            );
        }
    }
}

#[test]
fn blocks_see_the_same_trimmed_audio() {
    for (name, _) in CASES {
        let path = testdata().join(name);
        let whole = decode_file(&path, &DecodeOptions::default()).unwrap();
        let mut reader = super::open_blocks(&path, &DecodeOptions::default()).unwrap();
        let mut joined = vec![Vec::new(); whole.channels.len()];
        while let Some(block) = reader.next_block(1000).unwrap() {
            for (all, part) in joined.iter_mut().zip(&block.channels) {
                all.extend_from_slice(part);
            }
        }
        assert_eq!(joined, whole.channels, "{name}");
    }
}

/// An MP4 box of `kind` around `body`.
fn mp4_box(kind: &[u8; 4], body: &[u8]) -> Vec<u8> {
    let mut out = ((body.len() + 8) as u32).to_be_bytes().to_vec();
    out.extend_from_slice(kind);
    out.extend_from_slice(body);
    out
}

#[test]
fn an_itunsmpb_tag_trims_as_the_edit_list_does() {
    let original = std::fs::read(testdata().join("aac_mono44.m4a")).unwrap();
    // The fixture ends with its `moov`; its edit list is hidden (renamed `free`) and an iTunes
    // tag saying the same (1,024 frames of priming, 44,100 of audio) appended to it.
    let moov = original
        .windows(4)
        .rposition(|w| w == b"moov")
        .expect("a moov box")
        - 4;
    assert_eq!(
        u32::from_be_bytes(original[moov..moov + 4].try_into().unwrap()) as usize,
        original.len() - moov,
        "moov is the last box"
    );
    let mut bytes = original.clone();
    let edts = moov + bytes[moov..].windows(4).position(|w| w == b"edts").unwrap();
    bytes[edts..edts + 4].copy_from_slice(b"free");
    let full = |text: &str| [&[0u8; 4][..], text.as_bytes()].concat();
    let value = " 00000000 00000400 000003BC 000000000000AC44 00000000";
    let tag = mp4_box(
        b"----",
        &[
            mp4_box(b"mean", &full("com.apple.iTunes")),
            mp4_box(b"name", &full("iTunSMPB")),
            mp4_box(
                b"data",
                &[&[0, 0, 0, 1, 0, 0, 0, 0][..], value.as_bytes()].concat(),
            ),
        ]
        .concat(),
    );
    let udta = mp4_box(
        b"udta",
        &mp4_box(b"meta", &[&[0u8; 4][..], &mp4_box(b"ilst", &tag)].concat()),
    );
    bytes.extend_from_slice(&udta);
    let moov_size = (bytes.len() - moov) as u32;
    bytes[moov..moov + 4].copy_from_slice(&moov_size.to_be_bytes());

    let opts = DecodeOptions::default();
    let expected = super::decode_bytes(original, Some("m4a"), &opts).unwrap();
    let tagged = super::decode_bytes(bytes.clone(), Some("m4a"), &opts).unwrap();
    assert_eq!(tagged.frames(), 44_100);
    assert_eq!(tagged, expected);

    let untagged_len = bytes.len() - udta.len();
    let mut plain = bytes[..untagged_len].to_vec();
    plain[moov..moov + 4].copy_from_slice(&((untagged_len - moov) as u32).to_be_bytes());
    let untrimmed = super::decode_bytes(plain, Some("m4a"), &opts).unwrap();
    assert_eq!(
        untrimmed.frames(),
        46_080,
        "no edit list, no tag: every decoded frame"
    );
}
