//! The WAV header check on hand-made chunk layouts: where `fmt ` is found, what is refused and
//! how it is named.

use std::io::Cursor;

use super::*;

fn wave(chunks: &[(&[u8; 4], Vec<u8>)]) -> Vec<u8> {
    let mut out = b"RIFF\0\0\0\0WAVE".to_vec();
    for (id, body) in chunks {
        out.extend_from_slice(*id);
        out.extend_from_slice(&(body.len() as u32).to_le_bytes());
        out.extend_from_slice(body);
        if body.len() % 2 == 1 {
            out.push(0);
        }
    }
    out
}

fn fmt(tag: u16, channels: u16, rate: u32, align: u16, bits: u16) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&tag.to_le_bytes());
    out.extend_from_slice(&channels.to_le_bytes());
    out.extend_from_slice(&rate.to_le_bytes());
    out.extend_from_slice(&rate.wrapping_mul(u32::from(align)).to_le_bytes());
    out.extend_from_slice(&align.to_le_bytes());
    out.extend_from_slice(&bits.to_le_bytes());
    out
}

#[test]
fn finds_fmt_after_other_chunks_including_odd_sized_ones() {
    let bytes = wave(&[
        (b"JUNK", vec![0; 3]),
        (b"fmt ", fmt(TAG_PCM, 2, 44_100, 4, 16)),
        (b"data", vec![0; 8]),
    ]);
    let mut cursor = Cursor::new(bytes);
    assert_eq!(
        read_wave_format(&mut cursor, None).unwrap(),
        Some(WaveFormat {
            tag: TAG_PCM,
            channels: 2,
            sample_rate: 44_100,
            block_align: 4,
            bits_per_sample: 16,
            channel_mask: None,
        })
    );
    assert!(check_wave_header(&mut cursor, None).is_ok());
    assert_eq!(cursor.position(), 0, "rewound for symphonia");
}

#[test]
fn other_files_pass_untouched() {
    for bytes in [b"fLaC\0\0\0\x22".to_vec(), b"RIFF".to_vec(), Vec::new()] {
        assert!(check_wave_header(&mut Cursor::new(bytes), None).is_ok());
    }
}

#[test]
fn each_absurd_field_is_named() {
    let cases = [
        (fmt(TAG_PCM, 65_535, 44_100, 2, 16), "65535 channels"),
        (fmt(TAG_PCM, 0, 44_100, 2, 16), "0 channels"),
        (fmt(TAG_PCM, 1, 0, 2, 16), "sample rate of 0 Hz"),
        (
            fmt(TAG_PCM, 1, u32::MAX, 2, 16),
            "sample rate of 4294967295 Hz",
        ),
        (fmt(TAG_PCM, 1, 44_100, 0, 16), "block size of 0 bytes"),
        (fmt(TAG_FLOAT, 1, 44_100, 2, 0), "0 bits per sample"),
    ];
    let path = Path::new("take.wav");
    for (body, words) in cases {
        let bytes = wave(&[(b"fmt ", body), (b"data", vec![0; 4])]);
        let err = check_wave_header(&mut Cursor::new(bytes), Some(path)).unwrap_err();
        assert_eq!(err.kind, AudioErrorKind::Unsupported);
        let message = err.to_string();
        assert!(message.starts_with("take.wav: "), "{message}");
        assert!(message.contains(words), "{message} should say {words}");
    }
}

#[test]
fn an_extensible_mask_that_cannot_hold_the_channels_is_refused() {
    let extensible = |channels: u16, mask: u32| {
        let mut body = fmt(TAG_EXTENSIBLE, channels, 48_000, channels * 2, 16);
        body.extend_from_slice(&22u16.to_le_bytes());
        body.extend_from_slice(&16u16.to_le_bytes());
        body.extend_from_slice(&mask.to_le_bytes());
        body.extend_from_slice(&[0; 16]);
        wave(&[(b"fmt ", body), (b"data", vec![0; 4])])
    };
    for (channels, mask) in [(2, 0x3), (6, 0x3F), (8, 0), (30, 0), (2, 0xFFFF_FFFF)] {
        let bytes = extensible(channels, mask);
        assert!(
            check_wave_header(&mut Cursor::new(bytes), None).is_ok(),
            "{channels} {mask:x}"
        );
    }
    for (channels, mask) in [(32, 0), (40, 0x3), (3, 0x8000_0001), (2, 0x8000_0000)] {
        let err =
            check_wave_header(&mut Cursor::new(extensible(channels, mask)), None).unwrap_err();
        assert!(err.detail.contains("speaker mask"), "{err}");
    }
}

#[test]
fn every_fmt_chunk_symphonia_would_read_is_checked() {
    let overflowing = || fmt(TAG_PCM, 40_000, 44_100, 2, 16);
    let path = Path::new("take.wav");
    let refusal = |bytes: Vec<u8>| {
        let err = check_wave_header(&mut Cursor::new(bytes), Some(path)).unwrap_err();
        assert_eq!(err.kind, AudioErrorKind::Unsupported);
        assert!(err.to_string().starts_with("take.wav: "), "{err}");
        err.detail
    };
    // Far behind other chunks.
    let mut chunks = vec![(b"JUNK", vec![0; 3]); 100];
    chunks.extend([(b"fmt ", overflowing()), (b"data", vec![0; 4])]);
    assert!(refusal(wave(&chunks)).contains("40000 channels"));
    // A sound one first, then another.
    let two = wave(&[
        (b"fmt ", fmt(TAG_PCM, 1, 16_000, 2, 16)),
        (b"fmt ", overflowing()),
        (b"data", vec![0; 4]),
    ]);
    assert!(refusal(two).contains("two `fmt ` chunks"));
    // So many chunks that it cannot be a real file's header.
    let endless = wave(&vec![(b"JUNK", Vec::new()); MAX_CHUNKS_BEFORE_DATA + 1]);
    assert!(refusal(endless).contains("more than 256 chunks"));
    // A file that ends after its `fmt `, before any `data`: the `fmt ` is still checked.
    let cut = wave(&[(b"fmt ", overflowing())]);
    assert!(refusal(cut).contains("40000 channels"));
}

#[test]
fn a_header_after_junk_is_found_where_the_probe_finds_it_across_read_pieces() {
    let bad = wave(&[
        (b"fmt ", fmt(TAG_PCM, 0, 44_100, 4, 16)),
        (b"data", vec![0; 4]),
    ]);
    // Straddling the first 4 KiB piece, and deep in a later one.
    for junk in [4090, 300_000] {
        let mut bytes = vec![0x55; junk];
        bytes.extend_from_slice(&bad);
        let err = check_wave_header(&mut Cursor::new(bytes), None).unwrap_err();
        assert!(err.detail.contains("channels"), "{junk}: {err}");
    }
    // Beyond the probe's depth symphonia does not look, so neither does the check.
    let mut beyond = vec![0x55; PROBE_DEPTH as usize + 1];
    beyond.extend_from_slice(&bad);
    assert!(check_wave_header(&mut Cursor::new(beyond), None).is_ok());
}

#[test]
fn bounds_are_inclusive() {
    assert!(check_format(1, MIN_SAMPLE_RATE, None).is_ok());
    assert!(check_format(u32::from(MAX_CHANNELS), MAX_SAMPLE_RATE, None).is_ok());
    assert!(check_format(u32::from(MAX_CHANNELS) + 1, 44_100, None).is_err());
    assert!(check_format(1, MAX_SAMPLE_RATE + 1, None).is_err());
    assert!(check_format(1, MIN_SAMPLE_RATE - 1, None).is_err());
}
