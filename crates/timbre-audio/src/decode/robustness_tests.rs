//! Damaged WAV and FLAC files (bytes flipped, cut short, header fields set to extremes) decode
//! or fail with an error: never a panic, never a hang. The lossy fixtures are damaged too, for
//! our MP4 box reader and trimming (symphonia's own MP4 reader panics on some damaged `stts`
//! boxes, which the decode guard turns into an error).

use std::sync::OnceLock;
use std::sync::mpsc;
use std::time::Duration;

use proptest::prelude::*;
use proptest::sample::Index;

use super::{DecodeOptions, decode_bytes};
use crate::buffer::AudioBuffer;
use crate::encode::{SampleFormat, encode_wav, write_flac};
use crate::test_util::sine;

/// Far above what decoding a few KB takes even in a debug build.
const PER_FILE: Duration = Duration::from_secs(5);

/// Small valid files to damage: 16-bit stereo and float mono WAV, 16-bit FLAC, and an M4A, an
/// MP3 and an Ogg Vorbis file of the lossy fixtures.
fn seeds() -> &'static [(Vec<u8>, &'static str)] {
    static SEEDS: OnceLock<Vec<(Vec<u8>, &'static str)>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let stereo = AudioBuffer::new(
            8000,
            vec![sine(8000, 440.0, 0.05, 0.5), sine(8000, 660.0, 0.05, 0.5)],
        );
        let mono = AudioBuffer::new(8000, vec![sine(8000, 440.0, 0.05, 0.5)]);
        let dir = tempfile::tempdir().unwrap();
        let flac = dir.path().join("seed.flac");
        write_flac(&flac, &stereo, 16).unwrap();
        vec![
            (encode_wav(&stereo, SampleFormat::Int16).unwrap(), "wav"),
            (encode_wav(&mono, SampleFormat::Float32).unwrap(), "wav"),
            (std::fs::read(&flac).unwrap(), "flac"),
            (lossy("aac_mono44.m4a"), "m4a"),
            (lossy("lame_stereo22.mp3"), "mp3"),
            (lossy("vorbis_stereo22.ogg"), "ogg"),
        ]
    })
}

fn lossy(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/lossy")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[derive(Debug, Clone)]
enum Mutation {
    Flip(Index, u8),
    Truncate(Index),
    SetU16(Index, u16),
    SetU32(Index, u32),
}

/// Header fields live in the first bytes: positions there are drawn more often.
fn mutation() -> impl Strategy<Value = Mutation> {
    let u16s = prop_oneof![
        Just(0u16),
        Just(1),
        Just(0x8000),
        Just(0xFFFF),
        any::<u16>()
    ];
    let u32s = prop_oneof![
        Just(0u32),
        Just(1),
        Just(0x7FFF_FFFF),
        Just(0x8000_0000),
        Just(u32::MAX),
        any::<u32>()
    ];
    prop_oneof![
        (any::<Index>(), 1..=255u8).prop_map(|(at, mask)| Mutation::Flip(at, mask)),
        any::<Index>().prop_map(Mutation::Truncate),
        (any::<Index>(), u16s).prop_map(|(at, v)| Mutation::SetU16(at, v)),
        (any::<Index>(), u32s).prop_map(|(at, v)| Mutation::SetU32(at, v)),
    ]
}

/// Where a mutation lands: half of them in the first 64 bytes, where the headers are.
fn position(bytes: &[u8], at: &Index, width: usize) -> Option<usize> {
    let room = bytes.len().checked_sub(width)? + 1;
    let header = room.min(64);
    let i = at.index(room * 2);
    Some(if i < room { i } else { (i - room) % header })
}

fn apply(bytes: &mut Vec<u8>, mutation: &Mutation) {
    match mutation {
        Mutation::Flip(at, mask) => {
            if let Some(i) = position(bytes, at, 1) {
                bytes[i] ^= mask;
            }
        }
        Mutation::Truncate(at) => bytes.truncate(at.index(bytes.len() + 1)),
        Mutation::SetU16(at, value) => {
            if let Some(i) = position(bytes, at, 2) {
                bytes[i..i + 2].copy_from_slice(&value.to_le_bytes());
            }
        }
        Mutation::SetU32(at, value) => {
            if let Some(i) = position(bytes, at, 4) {
                // WAV's and Ogg's header fields are little-endian, the others' big-endian.
                let value = if bytes.starts_with(b"RIFF") || bytes.starts_with(b"OggS") {
                    value.to_le_bytes()
                } else {
                    value.to_be_bytes()
                };
                bytes[i..i + 4].copy_from_slice(&value);
            }
        }
    }
}

/// Decodes on another thread so that a hang fails the test instead of stalling it.
fn decode_in_time(bytes: Vec<u8>, hint: &'static str) -> Result<(), String> {
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        let opts = DecodeOptions {
            max_duration_secs: Some(60.0),
        };
        let outcome = std::panic::catch_unwind(|| decode_bytes(bytes, Some(hint), &opts).is_ok());
        send.send(outcome).ok();
    });
    match receive.recv_timeout(PER_FILE) {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(_)) => Err("decoding panicked".into()),
        Err(_) => Err(format!("decoding took more than {PER_FILE:?}")),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6_000, ..ProptestConfig::default() })]

    #[test]
    fn damaged_files_never_panic_or_hang(
        seed in 0..6usize,
        mutations in prop::collection::vec(mutation(), 1..4),
    ) {
        let (bytes, hint) = &seeds()[seed];
        let mut bytes = bytes.clone();
        for m in &mutations {
            apply(&mut bytes, m);
        }
        decode_in_time(bytes, hint).map_err(TestCaseError::fail)?;
    }
}
