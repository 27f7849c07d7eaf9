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
/// How many chunks before `fmt ` are skipped looking for it; a valid file has a handful.
const MAX_CHUNKS_BEFORE_FMT: usize = 64;

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
    let format = read_wave_format(source);
    source
        .seek(SeekFrom::Start(0))
        .map_err(|e| AudioError::io(path, "could not read the file", &e))?;
    match format {
        Ok(Some(format)) => check_wave_format(&format, path),
        // Not a WAV file, or one whose chunks symphonia will find damaged and say so.
        Ok(None) => Ok(()),
        Err(e) if e.kind() == ErrorKind::UnexpectedEof => Ok(()),
        Err(e) => Err(AudioError::io(path, "could not read the file", &e)),
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

/// The `fmt ` chunk of a RIFF/WAVE stream; None when the stream is not one or has no such chunk
/// before its `data` chunk.
fn read_wave_format<R: Read + Seek>(source: &mut R) -> std::io::Result<Option<WaveFormat>> {
    let Some(start) = find_wave_start(source)? else {
        return Ok(None);
    };
    source.seek(SeekFrom::Start(start))?;
    let mut riff = [0u8; 12];
    source.read_exact(&mut riff)?;
    if &riff[0..4] != b"RIFF" || &riff[8..12] != b"WAVE" {
        return Ok(None);
    }
    for _ in 0..MAX_CHUNKS_BEFORE_FMT {
        let mut header = [0u8; 8];
        source.read_exact(&mut header)?;
        let size = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
        match &header[0..4] {
            b"fmt " => {
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
                return Ok(Some(WaveFormat {
                    tag,
                    channels: u16_at(2),
                    sample_rate: u32::from_le_bytes([fmt[4], fmt[5], fmt[6], fmt[7]]),
                    block_align: u16_at(12),
                    bits_per_sample: u16_at(14),
                    channel_mask,
                }));
            }
            b"data" => return Ok(None),
            // Chunks are padded to an even length.
            _ => {
                source.seek(SeekFrom::Current(i64::from(size) + i64::from(size & 1)))?;
            }
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
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
            read_wave_format(&mut cursor).unwrap(),
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
        for (channels, mask) in [(32, 0), (40, 0x3), (3, 0x8000_0001)] {
            let err =
                check_wave_header(&mut Cursor::new(extensible(channels, mask)), None).unwrap_err();
            assert!(err.detail.contains("speaker mask"), "{err}");
        }
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
}
