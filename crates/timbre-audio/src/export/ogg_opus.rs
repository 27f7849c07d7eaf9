//! Opus in Ogg (RFC 7845): the identification and comment headers each on a page of their own,
//! then 20 ms packets, the last page's granule position marking where the audio ends, so
//! decoders drop the encoder's lookahead at the start and the padding at the end.

use std::io::Write;
use std::path::Path;

use ogg::writing::{PacketWriteEndInfo, PacketWriter};

use super::{check_stereo, codec_error, write_error};
use crate::buffer::AudioBuffer;
use crate::error::AudioError;

/// Opus codes at 48 kHz; other rates are resampled to it.
const RATE: u32 = 48_000;
/// 20 ms.
const FRAME: usize = 960;
const BITRATE: i32 = 128_000;
/// The longest packet libopus writes.
const MAX_PACKET: usize = 4_000;
const SERIAL: u32 = 0x7469_6d62;
const VENDOR: &str = "Timbre Studio (libopus)";

pub(super) fn encode(
    buffer: &AudioBuffer,
    out: &mut impl Write,
    path: &Path,
) -> Result<(), AudioError> {
    check_stereo(buffer, path, "Opus")?;
    let source_rate = buffer.sample_rate;
    let resampled;
    let buffer = if buffer.sample_rate == RATE {
        buffer
    } else {
        resampled = crate::resample::resample(buffer, RATE)?;
        &resampled
    };
    let failed = |e: opus::Error| codec_error(path, "Opus", e);
    let channels = buffer.channels.len();
    let mode = if channels == 2 {
        opus::Channels::Stereo
    } else {
        opus::Channels::Mono
    };
    let mut encoder = opus::Encoder::new(RATE, mode, opus::Application::Audio).map_err(failed)?;
    encoder
        .set_bitrate(opus::Bitrate::Bits(BITRATE))
        .map_err(failed)?;
    let pre_skip = u16::try_from(encoder.get_lookahead().map_err(failed)?).unwrap_or(0);
    let mut writer = PacketWriter::new(out);
    let page = |writer: &mut PacketWriter<_>, data: Vec<u8>, end, granule| {
        writer
            .write_packet(data, SERIAL, end, granule)
            .map_err(|e| write_error(path, &e))
    };
    page(
        &mut writer,
        identification_header(channels as u8, pre_skip, source_rate),
        PacketWriteEndInfo::EndPage,
        0,
    )?;
    page(
        &mut writer,
        comment_header(),
        PacketWriteEndInfo::EndPage,
        0,
    )?;
    // The lookahead is coded too: packets run until they cover it and all the audio.
    let total = u64::from(pre_skip) + buffer.frames() as u64;
    let packets = total.div_ceil(FRAME as u64);
    let mut interleaved = vec![0.0f32; FRAME * channels];
    let mut packet = vec![0u8; MAX_PACKET];
    for index in 0..packets {
        let start = index as usize * FRAME;
        for (i, frame) in interleaved.chunks_exact_mut(channels).enumerate() {
            for (sample, channel) in frame.iter_mut().zip(&buffer.channels) {
                *sample = channel.get(start + i).copied().unwrap_or(0.0);
            }
        }
        let size = encoder
            .encode_float(&interleaved, &mut packet)
            .map_err(failed)?;
        let last = index + 1 == packets;
        let (end, granule) = if last {
            (PacketWriteEndInfo::EndStream, total)
        } else {
            (PacketWriteEndInfo::NormalPacket, (index + 1) * FRAME as u64)
        };
        page(&mut writer, packet[..size].to_vec(), end, granule)?;
    }
    Ok(())
}

/// `OpusHead`: version 1, the channels, the pre-skip, the rate the audio had before encoding,
/// no output gain, channel mapping family 0 (mono or stereo).
fn identification_header(channels: u8, pre_skip: u16, source_rate: u32) -> Vec<u8> {
    let mut head = b"OpusHead".to_vec();
    head.push(1);
    head.push(channels);
    head.extend_from_slice(&pre_skip.to_le_bytes());
    head.extend_from_slice(&source_rate.to_le_bytes());
    head.extend_from_slice(&0i16.to_le_bytes());
    head.push(0);
    head
}

/// `OpusTags` with the vendor and no comments (lofty adds the tags afterwards).
fn comment_header() -> Vec<u8> {
    let mut tags = b"OpusTags".to_vec();
    tags.extend_from_slice(&(VENDOR.len() as u32).to_le_bytes());
    tags.extend_from_slice(VENDOR.as_bytes());
    tags.extend_from_slice(&0u32.to_le_bytes());
    tags
}
