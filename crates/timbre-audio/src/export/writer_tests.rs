//! A file written block by block equals the one written whole, reaches the disk as it is
//! written, and the writer holds no more for a long song than for a short one.

use std::path::Path;

use super::*;
use crate::decode::{decode_file, probe_file};
use crate::signal::speech_like;

/// Block lengths to cycle through: a single frame, a short one, an empty one, longer ones than
/// any encoder's frame and than the writer's piece.
const IRREGULAR: [usize; 5] = [1, 441, 0, 10_000, 65_536];

const ALL_CODECS: [Codec; 5] = [
    Codec::Wav(SampleFormat::Int16),
    Codec::Flac,
    Codec::Mp3,
    Codec::Vorbis,
    Codec::Opus,
];

/// 3 s of voice; a second channel, when asked for, from another voice.
fn voice(rate: u32, channels: usize) -> AudioBuffer {
    let planes = (0..channels)
        .map(|c| {
            speech_like(rate, 3.0, 3 + c as u64)
                .audio
                .channels
                .remove(0)
        })
        .collect();
    AudioBuffer::new(rate, planes)
}

fn write_in_irregular_blocks(path: &Path, codec: Codec, audio: &AudioBuffer) {
    let mut writer =
        EncodedWriter::create(path, codec, audio.sample_rate, audio.channel_count()).unwrap();
    let mut start = 0;
    for length in IRREGULAR.into_iter().cycle() {
        let end = (start + length).min(audio.frames());
        let block: Vec<_> = audio
            .channels
            .iter()
            .map(|c| c[start..end].to_vec())
            .collect();
        writer.write(&block).unwrap();
        start = end;
        if start == audio.frames() {
            break;
        }
    }
    writer.finish().unwrap();
}

/// Writes `audio` whole and in irregular blocks, and checks both decode to `rate_out` with the
/// length the existing tests assert; returns the two files' bytes and decoded audio.
fn whole_and_streamed(
    dir: &Path,
    codec: Codec,
    audio: &AudioBuffer,
    rate_out: u32,
) -> [(Vec<u8>, AudioBuffer); 2] {
    let label = format!(
        "{codec:?} {} Hz ×{}",
        audio.sample_rate,
        audio.channels.len()
    );
    let whole = dir.join(format!("whole.{}", codec.extension()));
    let streamed = dir.join(format!("streamed.{}", codec.extension()));
    write_encoded(&whole, audio, codec).unwrap();
    write_in_irregular_blocks(&streamed, codec, audio);
    [whole, streamed].map(|path| {
        let decoded = decode_file(&path, &Default::default()).unwrap();
        assert_eq!(decoded.sample_rate, rate_out, "{label}");
        assert_eq!(decoded.channels.len(), audio.channels.len(), "{label}");
        let expected = audio.frames() * rate_out as usize / audio.sample_rate as usize;
        assert_eq!(decoded.frames(), expected, "{label}");
        (std::fs::read(&path).unwrap(), decoded)
    })
}

#[test]
fn every_codec_written_in_irregular_blocks_equals_it_written_whole() {
    let dir = tempfile::tempdir().unwrap();
    let stereo = voice(44_100, 2);
    for codec in ALL_CODECS {
        let rate_out = if codec == Codec::Opus { 48_000 } else { 44_100 };
        let [(whole_bytes, whole), (streamed_bytes, streamed)] =
            whole_and_streamed(dir.path(), codec, &stereo, rate_out);
        if codec == Codec::Vorbis {
            // Each Vorbis stream gets a random serial number, so only the audio can match.
            assert_eq!(streamed, whole, "{codec:?}");
        } else {
            assert!(streamed_bytes == whole_bytes, "{codec:?}");
        }
    }
}

#[test]
fn mono_mp3_and_opus_resampled_in_irregular_blocks_equal_them_written_whole() {
    let dir = tempfile::tempdir().unwrap();
    for (codec, rate, rate_out) in [
        (Codec::Mp3, 16_000, 16_000),
        (Codec::Mp3, 40_000, 44_100),
        (Codec::Opus, 16_000, 48_000),
        (Codec::Opus, 40_000, 48_000),
    ] {
        let mono = voice(rate, 1);
        let [(whole_bytes, whole), (streamed_bytes, streamed)] =
            whole_and_streamed(dir.path(), codec, &mono, rate_out);
        assert!(streamed_bytes == whole_bytes, "{codec:?} {rate} Hz");
        assert_eq!(streamed, whole, "{codec:?} {rate} Hz");
    }
}

/// The oracle for FLAC: flacenc's own whole-stream encoder, which builds the stream in memory.
#[test]
fn flac_written_frame_by_frame_equals_flacencs_whole_stream() {
    use flacenc::component::BitRepr;
    use flacenc::error::Verify;

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("streamed.flac");
    let stereo = voice(44_100, 2);
    write_in_irregular_blocks(&path, Codec::Flac, &stereo);
    let samples: Vec<i32> = stereo
        .interleaved()
        .into_iter()
        .map(|x| (x * 32_768.0).round().clamp(-32_768.0, 32_767.0) as i32)
        .collect();
    let config = flacenc::config::Encoder::default().into_verified().unwrap();
    let source = flacenc::source::MemSource::from_samples(&samples, 2, 16, 44_100);
    let mut stream =
        flacenc::encode_with_fixed_block_size(&config, source, config.block_size).unwrap();
    let block = stream.stream_info().max_block_size();
    stream
        .stream_info_mut()
        .set_block_sizes(block, block)
        .unwrap();
    assert_ne!(stream.stream_info().md5_digest(), &[0; 16]);
    let mut sink = flacenc::bitsink::ByteSink::new();
    stream.write(&mut sink).unwrap();
    assert!(std::fs::read(&path).unwrap() == sink.as_slice());
}

/// What is written reaches the file before `finish`: of 21 s of audio, all but what the
/// encoder, an Ogg page (at most 255 × 255 bytes) and the file's buffer hold.
#[test]
fn every_codec_writes_its_file_as_the_audio_arrives() {
    let dir = tempfile::tempdir().unwrap();
    let long: Vec<Vec<f32>> = voice(44_100, 2)
        .channels
        .iter()
        .map(|c| c.repeat(7))
        .collect();
    for codec in ALL_CODECS {
        let path = dir.path().join(format!("partial.{}", codec.extension()));
        let mut writer = EncodedWriter::create(&path, codec, 44_100, 2).unwrap();
        writer.write(&long).unwrap();
        let before = std::fs::metadata(&path).unwrap().len();
        writer.finish().unwrap();
        let after = std::fs::metadata(&path).unwrap().len();
        assert!(
            after - before < 80 << 10,
            "{codec:?}: {before} of {after} bytes"
        );
    }
}

/// 2 minutes of mono at 16 kHz (7.7 MB of samples), one block of 16 s and then blocks of 4096
/// frames: the writer's buffers stay within what a few pieces of a block take.
#[test]
fn what_a_writer_holds_does_not_grow_with_the_length_written() {
    const RATE: u32 = 16_000;
    const SECONDS: usize = 120;
    const BOUND: usize = 512 << 10;
    let dir = tempfile::tempdir().unwrap();
    // A tone with a little noise, so no encoder finds it trivially compressible.
    let hiss = crate::signal::white_noise(RATE, 1.0, 5).channels.remove(0);
    let tone = |frames: usize, at: usize| -> Vec<Vec<f32>> {
        let plane = (at..at + frames)
            .map(|i| {
                let t = i as f32 / RATE as f32;
                0.4 * (std::f32::consts::TAU * 220.0 * t).sin() + 1e-3 * hiss[i % hiss.len()]
            })
            .collect();
        vec![plane]
    };
    for codec in ALL_CODECS {
        let path = dir.path().join(format!("long.{}", codec.extension()));
        let mut writer = EncodedWriter::create(&path, codec, RATE, 1).unwrap();
        let (mut at, mut peak) = (0, 0);
        for frames in std::iter::once(1 << 18).chain(std::iter::repeat(4096)) {
            let frames = frames.min(SECONDS * RATE as usize - at);
            if frames == 0 {
                break;
            }
            writer.write(&tone(frames, at)).unwrap();
            at += frames;
            peak = peak.max(writer.buffered_bytes());
        }
        assert!(peak <= BOUND, "{codec:?} held {peak} bytes");
        writer.finish().unwrap();
        let seconds = probe_file(&path).unwrap().duration_secs.unwrap();
        assert!(
            (seconds - SECONDS as f64).abs() < 0.05,
            "{codec:?}: {seconds} s"
        );
    }
}

#[test]
fn a_writer_refuses_blocks_of_the_wrong_shape_and_lossy_surround_before_creating_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.flac");
    let mut writer = EncodedWriter::create(&path, Codec::Flac, 8_000, 2).unwrap();
    for block in [vec![vec![0.0; 10]], vec![vec![0.0; 10], vec![0.0; 9]]] {
        let err = writer.write(&block).unwrap_err();
        assert_eq!(err.path.as_deref(), Some(path.as_path()));
        assert!(err.detail.contains("a file of 2 channels"), "{err}");
    }
    std::fs::remove_file(&path).unwrap();
    for codec in [Codec::Mp3, Codec::Opus] {
        let path = dir.path().join(format!("surround.{}", codec.extension()));
        let err = EncodedWriter::create(&path, codec, 48_000, 3)
            .err()
            .unwrap();
        assert_eq!(err.path.as_deref(), Some(path.as_path()));
        assert!(err.detail.contains("not 3"), "{err}");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
