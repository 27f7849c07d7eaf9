//! Lossless files: WAV through hound, written whole, into memory ([`encode_wav`]) or block by
//! block ([`WavStreamWriter`]) and refused past WAV's 4 GiB limit, and FLAC ([`write_flac`],
//! [`FlacStreamWriter`], in `flac`).

mod flac;

use std::fs::File;
use std::io::{BufWriter, Cursor, Seek, Write};
use std::path::Path;

pub use flac::{FlacStreamWriter, write_flac};

use crate::buffer::AudioBuffer;
use crate::error::{AudioError, AudioErrorKind};

/// Sample encoding of a written WAV file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SampleFormat {
    /// 16-bit signed integer PCM; samples are rounded and clamped to full scale.
    Int16,
    /// 24-bit signed integer PCM; samples are rounded and clamped to full scale.
    Int24,
    /// 32-bit IEEE float, samples written as they are (not clamped).
    Float32,
}

/// Scales by `2^(bits-1)` (the inverse of how decoders map integers to floats) so integer
/// samples survive a decode/encode round trip unchanged.
fn to_int(x: f32, bits: u32) -> i32 {
    let scale = (1i64 << (bits - 1)) as f32;
    (x * scale).round().clamp(-scale, scale - 1.0) as i32
}

fn wav_spec(channels: u16, rate: u32, fmt: SampleFormat) -> hound::WavSpec {
    let (bits_per_sample, sample_format) = match fmt {
        SampleFormat::Int16 => (16, hound::SampleFormat::Int),
        SampleFormat::Int24 => (24, hound::SampleFormat::Int),
        SampleFormat::Float32 => (32, hound::SampleFormat::Float),
    };
    hound::WavSpec {
        channels,
        sample_rate: rate,
        bits_per_sample,
        sample_format,
    }
}

/// Interleaves `planes`, one slice per channel, all of one length.
fn write_frames<W: Write + Seek>(
    wav: &mut hound::WavWriter<W>,
    planes: &[impl AsRef<[f32]>],
    fmt: SampleFormat,
) -> hound::Result<()> {
    let frames = planes.first().map_or(0, |p| p.as_ref().len());
    for i in 0..frames {
        for plane in planes {
            write_sample(wav, plane.as_ref()[i], fmt)?;
        }
    }
    Ok(())
}

fn write_sample<W: Write + Seek>(
    wav: &mut hound::WavWriter<W>,
    x: f32,
    fmt: SampleFormat,
) -> hound::Result<()> {
    match fmt {
        SampleFormat::Int16 => wav.write_sample(to_int(x, 16) as i16),
        SampleFormat::Int24 => wav.write_sample(to_int(x, 24)),
        SampleFormat::Float32 => wav.write_sample(x),
    }
}

fn write_wav_to<W: Write + Seek>(
    writer: W,
    buf: &AudioBuffer,
    fmt: SampleFormat,
) -> hound::Result<()> {
    let spec = wav_spec(buf.channel_count(), buf.sample_rate, fmt);
    let mut wav = hound::WavWriter::new(writer, spec)?;
    write_frames(&mut wav, &buf.channels, fmt)?;
    wav.finalize()
}

/// A WAV file written block by block, for results too long to hold in memory.
pub struct WavStreamWriter {
    wav: hound::WavWriter<BufWriter<File>>,
    /// The same file, to sync once hound has finalized it (hound keeps its writer).
    file: File,
    fmt: SampleFormat,
    path: std::path::PathBuf,
    channels: u16,
    frames: u64,
}

impl WavStreamWriter {
    /// Creates (or truncates) `path` for a WAV of `channels` channels at `sample_rate` Hz.
    pub fn create(
        path: &Path,
        sample_rate: u32,
        channels: u16,
        fmt: SampleFormat,
    ) -> Result<Self, AudioError> {
        let file = File::create(path)
            .map_err(|e| AudioError::io(Some(path), "could not create the file", &e))?;
        let synced = file
            .try_clone()
            .map_err(|e| AudioError::io(Some(path), "could not create the file", &e))?;
        let spec = wav_spec(channels, sample_rate, fmt);
        let wav =
            hound::WavWriter::new(BufWriter::new(file), spec).map_err(|e| hound_error(path, e))?;
        Ok(Self {
            wav,
            file: synced,
            fmt,
            path: path.to_path_buf(),
            channels,
            frames: 0,
        })
    }

    /// Appends `buf`, which has the writer's channels.
    pub fn write(&mut self, buf: &AudioBuffer) -> Result<(), AudioError> {
        self.write_planes(&buf.channels)
    }

    /// Appends `planes`, one slice per channel of the writer, all of one length.
    pub fn write_planes(&mut self, planes: &[impl AsRef<[f32]>]) -> Result<(), AudioError> {
        let added = planes.first().map_or(0, |p| p.as_ref().len());
        let frames = self.frames + added as u64;
        check_wav_size(frames, self.channels, self.fmt, Some(&self.path))?;
        self.frames = frames;
        write_frames(&mut self.wav, planes, self.fmt).map_err(|e| hound_error(&self.path, e))
    }

    /// Completes the header and syncs the file, so a full disk shows here; the file is not a
    /// valid WAV before this.
    pub fn finish(self) -> Result<(), AudioError> {
        self.wav
            .finalize()
            .map_err(|e| hound_error(&self.path, e))?;
        self.file
            .sync_all()
            .map_err(|e| AudioError::io(Some(&self.path), "could not write the file", &e))
    }
}

fn hound_error(path: &Path, err: hound::Error) -> AudioError {
    match err {
        hound::Error::IoError(e) => AudioError::io(Some(path), "could not write the file", &e),
        other => AudioError::new(
            AudioErrorKind::Unsupported,
            Some(path),
            format!("cannot be written as WAV: {other}"),
        ),
    }
}

/// Writes `buf` to `path` as a WAV file in `fmt`; refuses audio past the 4 GiB limit.
pub fn write_wav(path: &Path, buf: &AudioBuffer, fmt: SampleFormat) -> Result<(), AudioError> {
    check_wav_size(buf.frames() as u64, buf.channel_count(), fmt, Some(path))?;
    let file = File::create(path)
        .map_err(|e| AudioError::io(Some(path), "could not create the file", &e))?;
    write_wav_to(BufWriter::new(file), buf, fmt).map_err(|e| hound_error(path, e))
}

/// A complete WAV file in memory, e.g. to hand audio to the web UI.
pub fn encode_wav(buf: &AudioBuffer, fmt: SampleFormat) -> Result<Vec<u8>, AudioError> {
    check_wav_size(buf.frames() as u64, buf.channel_count(), fmt, None)?;
    let mut bytes = Cursor::new(Vec::new());
    write_wav_to(&mut bytes, buf, fmt).map_err(|e| match e {
        hound::Error::IoError(e) => AudioError::io(None, "could not encode WAV", &e),
        other => AudioError::new(
            AudioErrorKind::Unsupported,
            None,
            format!("cannot be written as WAV: {other}"),
        ),
    })?;
    Ok(bytes.into_inner())
}

/// Room left in WAV's 32-bit sizes for the header chunks hound writes before the data.
const WAV_HEADER_ROOM: u64 = 1024;

/// Refuses audio whose samples would not fit WAV's 32-bit chunk sizes (4 GiB), which hound
/// would overflow (a panic, or a corrupt header in a release build).
fn check_wav_size(
    frames: u64,
    channels: u16,
    fmt: SampleFormat,
    path: Option<&Path>,
) -> Result<(), AudioError> {
    let bytes_per_sample = match fmt {
        SampleFormat::Int16 => 2,
        SampleFormat::Int24 | SampleFormat::Float32 => 4,
    };
    let limit = u64::from(u32::MAX) - WAV_HEADER_ROOM;
    let bytes = u128::from(frames) * u128::from(channels) * bytes_per_sample;
    if bytes <= u128::from(limit) {
        return Ok(());
    }
    Err(AudioError::new(
        AudioErrorKind::TooLong,
        path,
        format!(
            "the audio is too long for a WAV file: {:.2} GiB of samples, and WAV holds at most \
             4 GiB (choose FLAC, or a shorter excerpt)",
            bytes as f64 / f64::from(1u32 << 30)
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::{DecodeOptions, decode_bytes, decode_file};
    use timbre_test_support::max_abs_difference;

    fn sine(rate: u32, channels: usize, secs: f32) -> AudioBuffer {
        let frames = (rate as f32 * secs) as usize;
        let chans = (0..channels)
            .map(|c| {
                (0..frames)
                    .map(|i| {
                        let t = i as f32 / rate as f32;
                        0.8 * (2.0 * std::f32::consts::PI * (440.0 + 110.0 * c as f32) * t).sin()
                    })
                    .collect()
            })
            .collect();
        AudioBuffer::new(rate, chans)
    }

    fn assert_close(a: &AudioBuffer, b: &AudioBuffer, tol: f32) {
        assert_eq!(a.sample_rate, b.sample_rate);
        assert_eq!(a.channels.len(), b.channels.len());
        assert_eq!(a.frames(), b.frames());
        for (x, y) in a.channels.iter().zip(&b.channels) {
            let worst = max_abs_difference(x, y);
            assert!(worst <= tol, "max error {worst} > {tol}");
        }
    }

    #[test]
    fn int_conversion_clamps_and_rounds() {
        assert_eq!(to_int(1.0, 16), 32767);
        assert_eq!(to_int(-1.0, 16), -32768);
        assert_eq!(to_int(2.0, 24), 8_388_607);
        assert_eq!(to_int(0.5, 16), 16384);
    }

    #[test]
    fn wav_round_trips_in_each_format() {
        let dir = tempfile::tempdir().unwrap();
        let src = sine(22050, 2, 0.25);
        for (fmt, tol) in [
            (SampleFormat::Int16, 1.0 / 32768.0),
            (SampleFormat::Int24, 1.0 / 8_388_608.0),
            (SampleFormat::Float32, 0.0),
        ] {
            let path = dir.path().join(format!("{fmt:?}.wav"));
            write_wav(&path, &src, fmt).unwrap();
            let back = decode_file(&path, &DecodeOptions::default()).unwrap();
            assert_close(&src, &back, tol);
            let bytes = encode_wav(&src, fmt).unwrap();
            let mem = decode_bytes(bytes, Some("wav"), &Default::default());
            assert_close(&src, &mem.unwrap(), tol);
        }
    }

    #[test]
    fn a_streamed_wav_equals_the_whole_written_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let src = sine(8000, 2, 0.7);
        let (whole, streamed) = (dir.path().join("whole.wav"), dir.path().join("parts.wav"));
        write_wav(&whole, &src, SampleFormat::Int24).unwrap();
        let mut writer = WavStreamWriter::create(&streamed, 8000, 2, SampleFormat::Int24).unwrap();
        for start in (0..src.frames()).step_by(1000) {
            let end = (start + 1000).min(src.frames());
            let part = src
                .channels
                .iter()
                .map(|c| c[start..end].to_vec())
                .collect();
            writer.write(&AudioBuffer::new(8000, part)).unwrap();
        }
        writer.finish().unwrap();
        assert_eq!(
            std::fs::read(&whole).unwrap(),
            std::fs::read(&streamed).unwrap()
        );
        let err = WavStreamWriter::create(
            Path::new("/nonexistent-dir/x.wav"),
            8000,
            1,
            SampleFormat::Float32,
        )
        .err()
        .unwrap();
        assert!(
            err.to_string().starts_with("/nonexistent-dir/x.wav: "),
            "{err}"
        );
    }

    #[test]
    fn flac_round_trips_16_and_24_bit() {
        let dir = tempfile::tempdir().unwrap();
        // Several blocks with a short last one, and a single short block.
        for src in [sine(44100, 2, 0.3), sine(16000, 1, 0.05)] {
            for (bits, tol) in [(16, 1.0 / 32768.0), (24, 1.0 / 8_388_608.0)] {
                let path = dir.path().join(format!("{bits}.flac"));
                write_flac(&path, &src, bits).unwrap();
                let back = decode_file(&path, &DecodeOptions::default()).unwrap();
                assert_close(&src, &back, tol);
            }
        }
    }

    #[test]
    fn wav_past_4_gib_is_an_error_naming_the_limit() {
        let limit = u64::from(u32::MAX) - WAV_HEADER_ROOM;
        // 2 bytes a sample: the largest stereo 16-bit length that fits, and one frame more.
        let fits = limit / 4;
        assert!(check_wav_size(fits, 2, SampleFormat::Int16, None).is_ok());
        let err = check_wav_size(fits + 1, 2, SampleFormat::Int16, None).unwrap_err();
        assert_eq!(err.kind, AudioErrorKind::TooLong);
        assert!(err.to_string().contains("WAV holds at most 4 GiB"), "{err}");
        // An hour and a half of 8-channel float at 96 kHz, and a length no u64 product holds.
        let path = Path::new("long.wav");
        let frames = 96_000 * 5_400;
        let err = check_wav_size(frames, 8, SampleFormat::Float32, Some(path)).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("long.wav: the audio is too long for a WAV file: 15.45 GiB"),
            "{err}"
        );
        assert!(check_wav_size(u64::MAX, u16::MAX, SampleFormat::Float32, None).is_err());
    }

    #[test]
    fn the_stream_writer_stops_before_the_4_gib_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stream.wav");
        let mut writer = WavStreamWriter::create(&path, 8000, 1, SampleFormat::Float32).unwrap();
        writer.write(&sine(8000, 1, 0.1)).unwrap();
        // As if the file already held all but one frame of the limit.
        writer.frames = (u64::from(u32::MAX) - WAV_HEADER_ROOM) / 4 - 1;
        let err = writer.write(&sine(8000, 1, 0.1)).unwrap_err();
        assert_eq!(err.kind, AudioErrorKind::TooLong);
        assert!(err.to_string().contains("WAV holds at most 4 GiB"), "{err}");
    }

    #[test]
    fn flac_rejects_bad_depth_and_empty_audio() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.flac");
        let err = write_flac(&path, &sine(8000, 1, 0.1), 8).unwrap_err();
        assert_eq!(err.kind, AudioErrorKind::Unsupported);
        let err = write_flac(&path, &AudioBuffer::new(8000, vec![vec![]]), 16).unwrap_err();
        assert_eq!(err.kind, AudioErrorKind::NoSamples);
    }

    #[test]
    fn write_into_missing_directory_is_io_error() {
        let err = write_wav(
            Path::new("/nonexistent-dir/x.wav"),
            &sine(8000, 1, 0.1),
            SampleFormat::Int16,
        )
        .unwrap_err();
        assert_eq!(err.kind, AudioErrorKind::Io);
        assert!(err.to_string().starts_with("/nonexistent-dir/x.wav: "));
    }
}
