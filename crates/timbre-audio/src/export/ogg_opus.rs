//! Opus in Ogg (RFC 7845): the identification and comment headers each on a page of their own,
//! then 20 ms packets, the last page's granule position marking where the audio ends, so
//! decoders drop the encoder's lookahead at the start and the padding at the end. The packets
//! are coded as the audio arrives, each written once the next shows it is not the last.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use ogg::writing::{PacketWriteEndInfo, PacketWriter};

use super::writer::PlanarResampler;
use super::{check_stereo, close_file, codec_error, create_file, write_error};
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

/// 128 kbit/s Opus in Ogg, resampled to 48 kHz on the way in.
pub(super) struct OpusWriter {
    resampler: PlanarResampler,
    coder: FrameCoder,
}

impl OpusWriter {
    pub(super) fn create(path: &Path, sample_rate: u32, channels: u16) -> Result<Self, AudioError> {
        check_stereo(channels, path, "Opus")?;
        let resampler = PlanarResampler::new(sample_rate, RATE, channels, path)?;
        let failed = |e| opus_error(path, e);
        let mode = if channels == 2 {
            opus::Channels::Stereo
        } else {
            opus::Channels::Mono
        };
        let mut encoder =
            opus::Encoder::new(RATE, mode, opus::Application::Audio).map_err(failed)?;
        encoder
            .set_bitrate(opus::Bitrate::Bits(BITRATE))
            .map_err(failed)?;
        let pre_skip = u16::try_from(encoder.get_lookahead().map_err(failed)?).unwrap_or(0);
        let mut pages = PacketWriter::new(create_file(path)?);
        for header in [
            identification_header(channels as u8, pre_skip, sample_rate),
            comment_header(),
        ] {
            pages
                .write_packet(header, SERIAL, PacketWriteEndInfo::EndPage, 0)
                .map_err(|e| write_error(path, &e))?;
        }
        let coder = FrameCoder {
            encoder,
            pages,
            channels: channels.into(),
            pre_skip,
            frame: Vec::with_capacity(FRAME * usize::from(channels)),
            packet: vec![0; MAX_PACKET],
            held: Vec::with_capacity(MAX_PACKET),
            packets: 0,
            audio_frames: 0,
            path: path.to_path_buf(),
        };
        Ok(Self { resampler, coder })
    }

    pub(super) fn write(&mut self, piece: &[&[f32]]) -> Result<(), AudioError> {
        let planes = self.resampler.push(piece)?;
        self.coder.take(planes)
    }

    pub(super) fn finish(self) -> Result<(), AudioError> {
        let Self {
            resampler,
            mut coder,
        } = self;
        coder.take(&resampler.finish()?)?;
        coder.end()
    }

    #[cfg(test)]
    pub(super) fn buffered_bytes(&self) -> usize {
        let coder = &self.coder;
        (self.resampler.buffered_samples() + coder.frame.capacity()) * size_of::<f32>()
            + coder.packet.capacity()
            + coder.held.capacity()
    }
}

/// 48 kHz audio coded a 20 ms frame at a time into Ogg pages.
struct FrameCoder {
    encoder: opus::Encoder,
    pages: PacketWriter<'static, BufWriter<File>>,
    channels: usize,
    pre_skip: u16,
    /// Interleaved samples of the frame being gathered: fewer than a whole frame.
    frame: Vec<f32>,
    packet: Vec<u8>,
    /// The last packet coded (once one is), written when the next shows it is not the last.
    held: Vec<u8>,
    packets: u64,
    /// 48 kHz frames of audio taken so far.
    audio_frames: u64,
    path: PathBuf,
}

impl FrameCoder {
    fn take(&mut self, planes: &[Vec<f32>]) -> Result<(), AudioError> {
        let frames = planes[0].len();
        self.audio_frames += frames as u64;
        for i in 0..frames {
            self.frame.extend(planes.iter().map(|plane| plane[i]));
            if self.frame.len() == FRAME * self.channels {
                self.code_frame()?;
            }
        }
        Ok(())
    }

    /// Codes what is left, padded with silence until the packets cover the encoder's lookahead
    /// and all the audio, and ends the stream at the audio's end.
    fn end(mut self) -> Result<(), AudioError> {
        let total = u64::from(self.pre_skip) + self.audio_frames;
        while self.packets < total.div_ceil(FRAME as u64) {
            self.frame.resize(FRAME * self.channels, 0.0);
            self.code_frame()?;
        }
        if self.packets > 0 {
            let last = std::mem::take(&mut self.held);
            self.write_packet(last, PacketWriteEndInfo::EndStream, total)?;
        }
        close_file(self.pages.into_inner(), &self.path)
    }

    /// Codes the whole frame gathered, and writes the packet before it.
    fn code_frame(&mut self) -> Result<(), AudioError> {
        let size = self
            .encoder
            .encode_float(&self.frame, &mut self.packet)
            .map_err(|e| opus_error(&self.path, e))?;
        self.frame.clear();
        if self.packets > 0 {
            // Packet n ends at sample (n + 1) · FRAME.
            let granule = self.packets * FRAME as u64;
            let previous = std::mem::replace(&mut self.held, self.packet[..size].to_vec());
            self.write_packet(previous, PacketWriteEndInfo::NormalPacket, granule)?;
        } else {
            self.held = self.packet[..size].to_vec();
        }
        self.packets += 1;
        Ok(())
    }

    fn write_packet(
        &mut self,
        packet: Vec<u8>,
        end: PacketWriteEndInfo,
        granule: u64,
    ) -> Result<(), AudioError> {
        self.pages
            .write_packet(packet, SERIAL, end, granule)
            .map_err(|e| write_error(&self.path, &e))
    }
}

fn opus_error(path: &Path, err: opus::Error) -> AudioError {
    codec_error(path, "Opus", err)
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
