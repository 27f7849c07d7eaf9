//! Checks on what a header declares, made before any sample is decoded: the channel count and
//! sample rate of every format, and the WAV `fmt ` chunk before symphonia reads it (symphonia
//! multiplies its fields unchecked: 65535 channels overflow and panic).

use std::io::{ErrorKind, Read, Seek, SeekFrom};
use std::path::Path;

use crate::error::{AudioError, AudioErrorKind};

/// Ambisonics of the 7th order needs 64 channels, the most any recording setup writes to one
/// file; a count above it is a damaged header (and would make each frame a large allocation).
pub const MAX_CHANNELS: u16 = 64;
/// No audio is sampled below 1 kHz (its band would end at 500 Hz, below most of speech).
pub const MIN_SAMPLE_RATE: u32 = 1_000;
/// 768 kHz is the highest rate converters and DAWs offer (DXD × 2); above it is a damaged
/// header, whose "duration" would also be meaningless.
pub const MAX_SAMPLE_RATE: u32 = 768_000;

/// Refuses a channel count or sample rate outside the bounds above, naming the value.
pub(super) fn check_format(
    channels: u32,
    sample_rate: u32,
    path: Option<&Path>,
) -> Result<(), AudioError> {
    check_channels(channels, path)?;
    check_sample_rate(sample_rate, path)
}

pub(super) fn check_channels(channels: u32, path: Option<&Path>) -> Result<(), AudioError> {
    if channels == 0 || channels > u32::from(MAX_CHANNELS) {
        return Err(bad_header(
            path,
            format!("its header declares {channels} channels (1 to {MAX_CHANNELS} are supported)"),
        ));
    }
    Ok(())
}

pub(super) fn check_sample_rate(sample_rate: u32, path: Option<&Path>) -> Result<(), AudioError> {
    if !(MIN_SAMPLE_RATE..=MAX_SAMPLE_RATE).contains(&sample_rate) {
        return Err(bad_header(
            path,
            format!(
                "its header declares a sample rate of {sample_rate} Hz ({MIN_SAMPLE_RATE} to \
                 {MAX_SAMPLE_RATE} Hz are supported)"
            ),
        ));
    }
    Ok(())
}

fn bad_header(path: Option<&Path>, detail: String) -> AudioError {
    AudioError::new(
        AudioErrorKind::Unsupported,
        path,
        format!("not a valid audio file: {detail}"),
    )
}

const TAG_PCM: u16 = 1;
const TAG_FLOAT: u16 = 3;
const TAG_EXTENSIBLE: u16 = 0xFFFE;
/// How many chunks may come before `data`: a valid file has a handful. Symphonia reads every
/// `fmt ` chunk among them, however far in, so the check must see them all.
const MAX_CHUNKS_BEFORE_DATA: usize = 256;

/// What a WAV `fmt ` chunk declares.
#[derive(Debug, PartialEq)]
struct WaveFormat {
    tag: u16,
    channels: u16,
    sample_rate: u32,
    block_align: u16,
    bits_per_sample: u16,
    /// WAVE_FORMAT_EXTENSIBLE's speaker mask.
    channel_mask: Option<u32>,
}

/// When `source` is a RIFF/WAVE file, checks its `fmt ` chunk; leaves other files to symphonia.
/// Rewinds `source` to its start either way.
pub(super) fn check_wave_header<R: Read + Seek>(
    source: &mut R,
    path: Option<&Path>,
) -> Result<(), AudioError> {
    let format = read_wave_format(source, path);
    source
        .seek(SeekFrom::Start(0))
        .map_err(|e| AudioError::io(path, "could not read the file", &e))?;
    match format? {
        Some(format) => check_wave_format(&format, path),
        // Not a WAV file, or one whose chunks symphonia will find damaged and say so.
        None => Ok(()),
    }
}

fn check_wave_format(format: &WaveFormat, path: Option<&Path>) -> Result<(), AudioError> {
    check_format(u32::from(format.channels), format.sample_rate, path)?;
    if format.block_align == 0 {
        return Err(bad_header(
            path,
            "its header declares a block size of 0 bytes".into(),
        ));
    }
    if [TAG_PCM, TAG_FLOAT, TAG_EXTENSIBLE].contains(&format.tag)
        && !(1..=64).contains(&format.bits_per_sample)
    {
        return Err(bad_header(
            path,
            format!(
                "its header declares {} bits per sample (1 to 64 are supported)",
                format.bits_per_sample
            ),
        ));
    }
    if let Some(mask) = format.channel_mask
        && !mask_fits(mask, format.channels)
    {
        return Err(bad_header(
            path,
            format!(
                "its speaker mask 0x{mask:08X} does not fit its {} channels",
                format.channels
            ),
        ));
    }
    Ok(())
}

/// Whether symphonia can fill in the speakers a mask lacks for `channels`: it sets the bits
/// above the mask's highest one, in an i32 shift that overflows (a panic) when 31 or more are
/// missing or the mask's top bit is already set.
fn mask_fits(mask: u32, channels: u16) -> bool {
    let missing = u32::from(channels).saturating_sub(mask.count_ones());
    missing == 0 || (missing <= 30 && mask & 0x8000_0000 == 0)
}

/// How far into a stream symphonia's probe looks for a format's marker (its default
/// `max_probe_depth`): a RIFF/WAVE header that far in, after other bytes, is read as a WAV.
const PROBE_DEPTH: u64 = 1 << 20;

/// Where symphonia would find a RIFF/WAVE header: the first `RIFF` followed by `WAVE` within
/// its probe depth. Read in growing pieces, so a WAV (whose header is at the start) costs one
/// small read, not the whole depth.
fn find_wave_start<R: Read>(source: &mut R) -> std::io::Result<Option<u64>> {
    let mut limited = source.take(PROBE_DEPTH + 12);
    let mut head = Vec::new();
    let mut piece = 4096;
    loop {
        let searched = head.len().saturating_sub(11);
        let read = limited.by_ref().take(piece).read_to_end(&mut head)?;
        let found = head[searched..]
            .windows(12)
            .position(|w| &w[0..4] == b"RIFF" && &w[8..12] == b"WAVE");
        if let Some(at) = found {
            return Ok(Some((searched + at) as u64));
        }
        if read == 0 {
            return Ok(None);
        }
        piece *= 4;
    }
}

/// The `fmt ` chunk of a RIFF/WAVE stream, looked for among all the chunks before `data`; None
/// when the stream is not one or has no such chunk, or ends before it. Refuses a second `fmt `
/// chunk, and more than [`MAX_CHUNKS_BEFORE_DATA`] chunks.
fn read_wave_format<R: Read + Seek>(
    source: &mut R,
    path: Option<&Path>,
) -> Result<Option<WaveFormat>, AudioError> {
    let mut format = None;
    match walk_chunks(source, &mut format, path) {
        Ok(()) => Ok(format),
        // Symphonia stops at the same end and says the file is damaged; a `fmt ` read before
        // it is still checked, as symphonia parses it before reaching the end.
        Err(Walk::Read(e)) if e.kind() == ErrorKind::UnexpectedEof => Ok(format),
        Err(Walk::Read(e)) => Err(AudioError::io(path, "could not read the file", &e)),
        Err(Walk::Refused(err)) => Err(err),
    }
}

enum Walk {
    Read(std::io::Error),
    Refused(AudioError),
}

impl From<std::io::Error> for Walk {
    fn from(e: std::io::Error) -> Self {
        Walk::Read(e)
    }
}

/// Reads the chunks of a RIFF/WAVE stream up to `data`, putting its `fmt ` into `format`.
fn walk_chunks<R: Read + Seek>(
    source: &mut R,
    format: &mut Option<WaveFormat>,
    path: Option<&Path>,
) -> Result<(), Walk> {
    let Some(start) = find_wave_start(source)? else {
        return Ok(());
    };
    source.seek(SeekFrom::Start(start))?;
    let mut riff = [0u8; 12];
    source.read_exact(&mut riff)?;
    if &riff[0..4] != b"RIFF" || &riff[8..12] != b"WAVE" {
        return Ok(());
    }
    for _ in 0..MAX_CHUNKS_BEFORE_DATA {
        let mut header = [0u8; 8];
        source.read_exact(&mut header)?;
        let size = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
        // Chunks are padded to an even length.
        let next = source.stream_position()? + u64::from(size) + u64::from(size & 1);
        match &header[0..4] {
            b"fmt " if format.is_some() => {
                return Err(Walk::Refused(bad_header(
                    path,
                    "its header has two `fmt ` chunks".into(),
                )));
            }
            b"fmt " => *format = Some(read_fmt_body(source, size)?),
            b"data" => return Ok(()),
            _ => {}
        }
        source.seek(SeekFrom::Start(next))?;
    }
    Err(Walk::Refused(bad_header(
        path,
        format!("its header has more than {MAX_CHUNKS_BEFORE_DATA} chunks before the audio"),
    )))
}

/// The fields of a `fmt ` chunk of `size` bytes, read from its start.
fn read_fmt_body<R: Read>(source: &mut R, size: u32) -> std::io::Result<WaveFormat> {
    let mut fmt = [0u8; 16];
    source.read_exact(&mut fmt)?;
    let u16_at = |i: usize| u16::from_le_bytes([fmt[i], fmt[i + 1]]);
    let tag = u16_at(0);
    // cbSize and the valid bits, then the mask.
    let channel_mask = if tag == TAG_EXTENSIBLE && size >= 24 {
        let mut extension = [0u8; 8];
        source.read_exact(&mut extension)?;
        Some(u32::from_le_bytes([
            extension[4],
            extension[5],
            extension[6],
            extension[7],
        ]))
    } else {
        None
    };
    Ok(WaveFormat {
        tag,
        channels: u16_at(2),
        sample_rate: u32::from_le_bytes([fmt[4], fmt[5], fmt[6], fmt[7]]),
        block_align: u16_at(12),
        bits_per_sample: u16_at(14),
        channel_mask,
    })
}

#[cfg(test)]
#[path = "header_tests.rs"]
mod tests;
