use std::fs::File;
use std::io::{Cursor, ErrorKind};
use std::path::Path;

use symphonia::core::codecs::audio::{AudioCodecParameters, AudioDecoderOptions};
use symphonia::core::errors::Error as SymError;
use symphonia::core::formats::probe::Hint;
use symphonia::core::formats::well_known::{FORMAT_ID_AIFF, FORMAT_ID_FLAC, FORMAT_ID_WAVE};
use symphonia::core::formats::{FormatOptions, FormatReader, TrackType};
use symphonia::core::io::{MediaSource, MediaSourceStream};
use symphonia::core::meta::MetadataOptions;

use crate::buffer::AudioBuffer;
use crate::error::{AudioError, AudioErrorKind};

#[cfg(test)]
mod tests;

#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DecodeOptions {
    /// Reject files longer than this, from the header when it states the length, otherwise as
    /// soon as decoding passes it.
    pub max_duration_secs: Option<f64>,
}

/// What the header of a file says, without decoding it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AudioInfo {
    pub sample_rate: u32,
    pub channels: u16,
    pub frames: Option<u64>,
    pub duration_secs: Option<f64>,
    pub codec: String,
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
}

/// Allowed shortfall against the header's frame count before a file counts as truncated.
const TRUNCATION_TOLERANCE: f64 = 0.01;

pub fn probe_file(path: &Path) -> Result<AudioInfo, AudioError> {
    let file = open_file(path)?;
    Ok(open(Box::new(file), extension(path), Some(path))?.info)
}

pub fn decode_file(path: &Path, opts: &DecodeOptions) -> Result<AudioBuffer, AudioError> {
    let file = open_file(path)?;
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

fn open_file(path: &Path) -> Result<File, AudioError> {
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        ErrorKind::NotFound => {
            AudioError::new(AudioErrorKind::NotFound, Some(path), "no such file")
        }
        _ => AudioError::io(Some(path), "could not read the file", &e),
    })?;
    if meta.is_dir() {
        return Err(AudioError::new(
            AudioErrorKind::IsDirectory,
            Some(path),
            "this is a folder, not an audio file",
        ));
    }
    if meta.len() == 0 {
        return Err(empty_error(Some(path)));
    }
    File::open(path).map_err(|e| AudioError::io(Some(path), "could not open the file", &e))
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
    source: Box<dyn MediaSource>,
    extension_hint: Option<&str>,
    path: Option<&Path>,
) -> Result<Opened, AudioError> {
    let mut hint = Hint::new();
    if let Some(ext) = extension_hint {
        hint.with_extension(ext);
    }
    let mss = MediaSourceStream::new(source, Default::default());
    let reader = symphonia::default::get_probe()
        .probe(
            &hint,
            mss,
            FormatOptions::default(),
            MetadataOptions::default(),
        )
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
    let codec = symphonia::default::get_codecs()
        .get_audio_decoder(params.codec)
        .ok_or_else(|| unsupported("the audio codec in this file is not supported"))?
        .codec
        .info
        .short_name;
    let sample_rate = params.sample_rate.unwrap_or(0);
    let duration_secs = match (track.num_frames, track.time_base, track.duration) {
        (Some(frames), _, _) if sample_rate > 0 => Some(frames as f64 / f64::from(sample_rate)),
        (_, Some(tb), Some(dur)) => tb.calc_duration(dur).map(|t| t.as_secs_f64()),
        _ => None,
    };
    let info = AudioInfo {
        sample_rate,
        channels: params
            .channels
            .as_ref()
            .map_or(0, |c| u16::try_from(c.count()).unwrap_or(u16::MAX)),
        frames: track.num_frames,
        duration_secs,
        codec: codec.to_string(),
        container: reader.format_info().short_name.to_string(),
    };
    let format = reader.format_info().format;
    Ok(Opened {
        track_id: track.id,
        exact_frames: [FORMAT_ID_WAVE, FORMAT_ID_FLAC, FORMAT_ID_AIFF].contains(&format),
        params,
        info,
        reader,
    })
}

fn too_long(path: Option<&Path>, secs: f64, max: f64) -> AudioError {
    AudioError::new(
        AudioErrorKind::TooLong,
        path,
        format!("the audio is too long ({secs:.1} s; the limit is {max:.1} s)"),
    )
}

fn decode_opened(
    mut opened: Opened,
    opts: &DecodeOptions,
    path: Option<&Path>,
) -> Result<AudioBuffer, AudioError> {
    let max_secs = opts.max_duration_secs;
    if let (Some(max), Some(secs)) = (max_secs, opened.info.duration_secs)
        && secs > max
    {
        return Err(too_long(path, secs, max));
    }
    let mut decoder = symphonia::default::get_codecs()
        .make_audio_decoder(&opened.params, &AudioDecoderOptions::default())
        .map_err(|e| container_error(e, path))?;

    let mut planes: Vec<Vec<f32>> = Vec::new();
    let mut scratch: Vec<Vec<f32>> = Vec::new();
    let mut rate = opened.info.sample_rate;
    let (mut decoded_packets, mut failed_packets) = (0usize, 0usize);
    let mut last_failure = String::new();
    let seconds = |frames: usize, rate: u32| frames as f64 / f64::from(rate.max(1));

    loop {
        let packet = match opened.reader.next_packet() {
            Ok(Some(packet)) => packet,
            Ok(None) | Err(SymError::ResetRequired) => break,
            // A data chunk cut short ends in EOF; the frame count check below judges it.
            Err(SymError::IoError(e)) if e.kind() == ErrorKind::UnexpectedEof => break,
            Err(e) => {
                let frames = planes.first().map_or(0, Vec::len);
                let mut err = container_error(e, path);
                err.detail = format!(
                    "{} after {:.2} s of audio",
                    err.detail,
                    seconds(frames, rate)
                );
                return Err(err);
            }
        };
        if packet.track_id != opened.track_id {
            continue;
        }
        let buf = match decoder.decode(&packet) {
            Ok(buf) => buf,
            // Players skip a damaged packet and carry on; so do we, unless all of them fail.
            Err(SymError::DecodeError(what)) => {
                failed_packets += 1;
                last_failure = what.to_string();
                continue;
            }
            Err(SymError::IoError(e)) => {
                failed_packets += 1;
                last_failure = e.to_string();
                continue;
            }
            Err(SymError::ResetRequired) => break,
            Err(e) => return Err(container_error(e, path)),
        };
        decoded_packets += 1;
        if buf.frames() == 0 {
            continue;
        }
        if planes.is_empty() {
            rate = buf.spec().rate();
            planes = vec![Vec::new(); buf.num_planes()];
        } else if planes.len() != buf.num_planes() {
            return Err(AudioError::new(
                AudioErrorKind::Unsupported,
                path,
                "the number of channels changes in the middle of the file",
            ));
        }
        buf.copy_to_vecs_planar::<f32>(&mut scratch);
        for (plane, new) in planes.iter_mut().zip(&scratch) {
            plane.extend_from_slice(new);
        }
        let secs = seconds(planes[0].len(), rate);
        if let Some(max) = max_secs
            && secs > max
        {
            return Err(too_long(path, secs, max));
        }
    }

    if decoded_packets == 0 && failed_packets > 0 {
        return Err(AudioError::new(
            AudioErrorKind::Corrupt,
            path,
            format!(
                "the file is damaged: none of its {failed_packets} audio packets could be \
                 decoded ({last_failure})"
            ),
        ));
    }
    let frames = planes.first().map_or(0, Vec::len);
    if frames == 0 {
        return Err(AudioError::new(
            AudioErrorKind::NoSamples,
            path,
            "the file contains no audio samples",
        ));
    }
    if let Some(promised) = opened.info.frames.filter(|_| opened.exact_frames)
        && (frames as f64) < promised as f64 * (1.0 - TRUNCATION_TOLERANCE)
    {
        return Err(AudioError::new(
            AudioErrorKind::Truncated,
            path,
            format!(
                "the file is cut short: its header promises {:.2} s of audio but only {:.2} s \
                 is there",
                seconds(promised as usize, rate),
                seconds(frames, rate)
            ),
        ));
    }
    Ok(AudioBuffer::new(rate, planes))
}
