//! Reading audio files through symphonia (Opus through libopus): [`probe_file`] for what the
//! header says; [`decode_file`], [`decode_bytes`] and [`open_blocks`] for the samples, with the
//! header checked first, MP4 priming and padding trimmed, and truncated or too long files refused.

use std::io::{Cursor, ErrorKind};
use std::path::Path;

use symphonia::core::codecs::audio::AudioCodecParameters;
use symphonia::core::errors::Error as SymError;
use symphonia::core::formats::probe::Hint;
use symphonia::core::formats::well_known::{FORMAT_ID_AIFF, FORMAT_ID_FLAC, FORMAT_ID_WAVE};
use symphonia::core::formats::{FormatOptions, FormatReader, TrackType};
use symphonia::core::io::{MediaSource, MediaSourceStream};
use symphonia::core::meta::MetadataOptions;

use crate::buffer::AudioBuffer;
use crate::error::{AudioError, AudioErrorKind};
use guard::guard;

mod blocks;
mod guard;
mod header;
#[cfg(test)]
mod lossy_tests;
mod mp4;
mod opus_codec;
#[cfg(test)]
mod refusal_tests;
#[cfg(test)]
mod robustness_tests;
mod samples;
mod source;
#[cfg(test)]
mod tests;

pub use blocks::BlockReader;
pub use header::{MAX_CHANNELS, MAX_SAMPLE_RATE, MIN_SAMPLE_RATE};
pub use samples::MAX_SAMPLE_MAGNITUDE;
pub use source::open_audio_file;

#[derive(Debug, Clone, Copy, Default, PartialEq)]
/// Limits applied while decoding; the default applies none.
pub struct DecodeOptions {
    /// Reject files longer than this, from the header when it states the length, otherwise as
    /// soon as decoding passes it.
    pub max_duration_secs: Option<f64>,
}

/// What the header of a file says, without decoding it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AudioInfo {
    /// Sample rate in Hz; 0 when the header does not state it.
    pub sample_rate: u32,
    /// Channel count; 0 when the header does not state it.
    pub channels: u16,
    /// Length in frames after MP4 priming and padding are trimmed; `None` when not stated.
    pub frames: Option<u64>,
    /// Length in seconds, from the frame count or the track duration; `None` when neither is known.
    pub duration_secs: Option<f64>,
    /// Short name of the audio codec, as symphonia names it (e.g. "pcm_s16le", "opus").
    pub codec: String,
    /// Short name of the container format, as symphonia names it (e.g. "wave").
    pub container: String,
}

/// A demuxer positioned at the start of the audio, with what we know about the chosen track.
struct Opened {
    reader: Box<dyn FormatReader>,
    track_id: u32,
    params: AudioCodecParameters,
    info: AudioInfo,
    /// Whether the container states the frame count exactly, so a shortfall means truncation.
    exact_frames: bool,
    /// Encoder priming and padding that the container marks but symphonia leaves in.
    trim: Trim,
}

/// Frames to drop from the decoded audio: `skip` at the start, and all after `keep` more.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Trim {
    skip: u64,
    keep: Option<u64>,
}

/// Allowed shortfall against the header's frame count before a file counts as truncated.
const TRUNCATION_TOLERANCE: f64 = 0.01;

/// Reads and checks the header of `path` without decoding the audio.
pub fn probe_file(path: &Path) -> Result<AudioInfo, AudioError> {
    let file = open_audio_file(path)?;
    Ok(open(Box::new(file), extension(path), Some(path))?.info)
}

/// Opens `path` to be decoded block by block (`BlockReader::next_block`), with the checks of
/// `decode_file`.
pub fn open_blocks(path: &Path, opts: &DecodeOptions) -> Result<BlockReader, AudioError> {
    let file = open_audio_file(path)?;
    let opened = open(Box::new(file), extension(path), Some(path))?;
    BlockReader::new(opened, opts, Some(path))
}

/// Decodes all of `path`, refusing bad headers, truncated files and files over the length limit.
pub fn decode_file(path: &Path, opts: &DecodeOptions) -> Result<AudioBuffer, AudioError> {
    let file = open_audio_file(path)?;
    let opened = open(Box::new(file), extension(path), Some(path))?;
    decode_opened(opened, opts, Some(path))
}

/// Decodes an in-memory file; errors carry no path.
pub fn decode_bytes(
    bytes: Vec<u8>,
    extension_hint: Option<&str>,
    opts: &DecodeOptions,
) -> Result<AudioBuffer, AudioError> {
    if bytes.is_empty() {
        return Err(empty_error(None));
    }
    let opened = open(Box::new(Cursor::new(bytes)), extension_hint, None)?;
    decode_opened(opened, opts, None)
}

fn extension(path: &Path) -> Option<&str> {
    path.extension().and_then(|e| e.to_str())
}

fn empty_error(path: Option<&Path>) -> AudioError {
    AudioError::new(AudioErrorKind::Empty, path, "the file is empty (0 bytes)")
}

/// Maps a symphonia error met while reading the container.
fn container_error(err: SymError, path: Option<&Path>) -> AudioError {
    let (kind, detail) = match err {
        SymError::IoError(e) if e.kind() == ErrorKind::UnexpectedEof => (
            AudioErrorKind::Corrupt,
            "the file ends in the middle of its header".to_string(),
        ),
        SymError::IoError(e) => return AudioError::io(path, "could not read the file", &e),
        SymError::Unsupported(what) => (
            AudioErrorKind::Unsupported,
            format!("not a supported audio file ({what})"),
        ),
        SymError::DecodeError(what) => (
            AudioErrorKind::Corrupt,
            format!("the file is damaged ({what})"),
        ),
        other => (
            AudioErrorKind::Unsupported,
            format!("cannot be read as audio ({other})"),
        ),
    };
    AudioError::new(kind, path, detail)
}

fn open(
    mut source: Box<dyn MediaSource>,
    extension_hint: Option<&str>,
    path: Option<&Path>,
) -> Result<Opened, AudioError> {
    header::check_wave_header(&mut source, path)?;
    let gapless = mp4::read_gapless(&mut source);
    let mut hint = Hint::new();
    if let Some(ext) = extension_hint {
        hint.with_extension(ext);
    }
    let mss = MediaSourceStream::new(source, Default::default());
    let reader = guard(path, || {
        symphonia::default::get_probe().probe(
            &hint,
            mss,
            FormatOptions::default(),
            MetadataOptions::default(),
        )
    })?
    .map_err(|e| match e {
        SymError::Unsupported(_) => AudioError::new(
            AudioErrorKind::Unsupported,
            path,
            "not an audio file, or an audio format that is not supported",
        ),
        other => container_error(other, path),
    })?;
    let unsupported = |detail: &str| AudioError::new(AudioErrorKind::Unsupported, path, detail);
    let track = reader
        .default_track(TrackType::Audio)
        .ok_or_else(|| unsupported("the file has no audio track"))?;
    let params = track
        .codec_params
        .as_ref()
        .and_then(|p| p.audio())
        .ok_or_else(|| unsupported("the file has no audio track"))?
        .clone();
    let codec = opus_codec::codecs()
        .get_audio_decoder(params.codec)
        .ok_or_else(|| unsupported("the audio codec in this file is not supported"))?
        .codec
        .info
        .short_name;
    // What the header states; the first decoded packet is checked again (blocks.rs), which
    // covers formats whose header leaves either out.
    if let Some(rate) = params.sample_rate {
        header::check_sample_rate(rate, path)?;
    }
    let channels = params.channels.as_ref().map(|c| c.count());
    if let Some(count) = channels {
        header::check_channels(u32::try_from(count).unwrap_or(u32::MAX), path)?;
    }
    let sample_rate = params.sample_rate.unwrap_or(0);
    let trim = match gapless {
        Some(mp4::Gapless::EditList(edits)) => trim_of(&edits, sample_rate, track.num_frames),
        Some(mp4::Gapless::ITunSmpb { priming, frames }) => Trim {
            skip: priming,
            keep: Some(frames),
        },
        None => Trim::default(),
    };
    let frames = track.num_frames.map(|all| {
        trim.keep
            .unwrap_or(u64::MAX)
            .min(all.saturating_sub(trim.skip))
    });
    let duration_secs = match (frames, track.time_base, track.duration) {
        (Some(frames), _, _) if sample_rate > 0 => Some(frames as f64 / f64::from(sample_rate)),
        (_, Some(tb), Some(dur)) => tb.calc_duration(dur).map(|t| t.as_secs_f64()),
        _ => None,
    };
    let info = AudioInfo {
        sample_rate,
        channels: channels.map_or(0, |c| u16::try_from(c).unwrap_or(u16::MAX)),
        frames,
        duration_secs,
        codec: codec.to_string(),
        container: reader.format_info().short_name.to_string(),
    };
    let format = reader.format_info().format;
    Ok(Opened {
        track_id: track.id,
        exact_frames: [FORMAT_ID_WAVE, FORMAT_ID_FLAC, FORMAT_ID_AIFF].contains(&format),
        trim,
        params,
        info,
        reader,
    })
}

/// The frames an MP4 edit list keeps, at the track's sample rate. The end is the sooner of the
/// edit's duration (in the movie's coarse timescale, so rounded up) and the last sample's end
/// (`total`, which muxers that shorten the last packet's duration make exact).
fn trim_of(edits: &mp4::EditList, rate: u32, total: Option<u64>) -> Trim {
    let rescale = |value: u64, from: u32, round_up: bool| -> Option<u64> {
        let scaled = u128::from(value) * u128::from(rate);
        let from = u128::from(from);
        let frames = if round_up {
            scaled.checked_add(from - 1)? / from
        } else {
            (scaled + from / 2) / from
        };
        u64::try_from(frames).ok()
    };
    if edits.media_timescale == 0 || edits.movie_timescale == 0 {
        return Trim::default();
    }
    let skip = rescale(edits.media_time, edits.media_timescale, false).unwrap_or(0);
    let by_edit = (edits.duration > 0)
        .then(|| rescale(edits.duration, edits.movie_timescale, true))
        .flatten();
    let by_samples = total.map(|total| total.saturating_sub(skip));
    let keep = match (by_edit, by_samples) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    Trim { skip, keep }
}

fn too_long(path: Option<&Path>, secs: f64, max: f64) -> AudioError {
    AudioError::new(
        AudioErrorKind::TooLong,
        path,
        format!("the audio is too long ({secs:.1} s; the limit is {max:.1} s)"),
    )
}

fn decode_opened(
    opened: Opened,
    opts: &DecodeOptions,
    path: Option<&Path>,
) -> Result<AudioBuffer, AudioError> {
    let mut reader = BlockReader::new(opened, opts, path)?;
    let mut planes: Vec<Vec<f32>> = Vec::new();
    while let Some(block) = reader.next_block(usize::MAX)? {
        if planes.is_empty() {
            planes = block.channels;
        } else {
            for (plane, new) in planes.iter_mut().zip(&block.channels) {
                plane.extend_from_slice(new);
            }
        }
    }
    Ok(AudioBuffer::new(reader.sample_rate(), planes))
}
