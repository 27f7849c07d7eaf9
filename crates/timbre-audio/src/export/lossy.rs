//! MP3 through LAME and Ogg Vorbis through libvorbis, fed as the audio arrives.

use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom};
use std::num::{NonZeroU8, NonZeroU32};
use std::path::{Path, PathBuf};

use mp3lame_encoder::{Bitrate, Builder, DualPcm, Encoder, FlushGap, Mode, MonoPcm, Quality};
use vorbis_rs::{VorbisBitrateManagementStrategy, VorbisEncoder, VorbisEncoderBuilder};

use super::writer::PlanarResampler;
use super::{check_stereo, close_file, codec_error, create_file, write_all, write_error};
use crate::error::AudioError;

/// The rates MPEG audio has (MPEG-1, 2 and 2.5); others are resampled to the next one up.
const MP3_RATES: [u32; 9] = [
    8_000, 11_025, 12_000, 16_000, 22_050, 24_000, 32_000, 44_100, 48_000,
];
/// What LAME's flush may write at most.
const MP3_FLUSH_BYTES: usize = 7_200;
const VORBIS_QUALITY: f32 = 0.6;

/// 192 kbit/s CBR MP3, resampled to an MPEG rate on the way in.
pub(super) struct Mp3Writer {
    encoder: Encoder,
    resampler: PlanarResampler,
    out: BufWriter<File>,
    /// The encoded bytes of one piece, written out before the next.
    bytes: Vec<u8>,
    path: PathBuf,
}

impl Mp3Writer {
    pub(super) fn create(path: &Path, sample_rate: u32, channels: u16) -> Result<Self, AudioError> {
        check_stereo(channels, path, "MP3")?;
        let rate = MP3_RATES
            .iter()
            .copied()
            .find(|&r| r >= sample_rate)
            .unwrap_or(48_000);
        let resampler = PlanarResampler::new(sample_rate, rate, channels, path)?;
        let failed = |what: &str, detail: String| mp3_error(path, what, detail);
        let mut builder = Builder::new().ok_or_else(|| failed("LAME", "could not start".into()))?;
        let mut setup = || -> Result<(), mp3lame_encoder::BuildError> {
            builder.set_num_channels(channels as u8)?;
            builder.set_sample_rate(rate)?;
            builder.set_brate(Bitrate::Kbps192)?;
            builder.set_mode(if channels == 2 {
                Mode::JointStereo
            } else {
                Mode::Mono
            })?;
            builder.set_quality(Quality::Good)?;
            // The LAME tag states the encoder's delay and padding, which decoders then drop.
            builder.set_to_write_vbr_tag(true)
        };
        setup().map_err(|e| failed("settings", e.to_string()))?;
        let encoder = builder
            .build()
            .map_err(|e| failed("settings", e.to_string()))?;
        Ok(Self {
            encoder,
            resampler,
            out: create_file(path)?,
            bytes: Vec::new(),
            path: path.to_path_buf(),
        })
    }

    pub(super) fn write(&mut self, piece: &[&[f32]]) -> Result<(), AudioError> {
        let planes = self.resampler.push(piece)?;
        encode_mp3(&mut self.encoder, planes, &mut self.bytes, &self.path)?;
        write_all(&mut self.out, &self.bytes, &self.path)?;
        self.bytes.clear();
        Ok(())
    }

    pub(super) fn finish(self) -> Result<(), AudioError> {
        let Self {
            mut encoder,
            resampler,
            mut out,
            mut bytes,
            path,
        } = self;
        encode_mp3(&mut encoder, &resampler.finish()?, &mut bytes, &path)?;
        bytes.reserve(MP3_FLUSH_BYTES);
        encoder
            .flush_to_vec::<FlushGap>(&mut bytes)
            .map_err(|e| mp3_error(&path, "encoding", e.to_string()))?;
        write_all(&mut out, &bytes, &path)?;
        let mut tag = Vec::with_capacity(encoder.lame_tag_size());
        encoder.lame_tag_encode_to_vec(&mut tag);
        // LAME starts the stream with an empty frame of the tag's size, held for it: the tag
        // replaces it, as LAME's own `lame_mp3_tags_fid` does.
        if !tag.is_empty() {
            out.seek(SeekFrom::Start(0))
                .map_err(|e| write_error(&path, &e))?;
            write_all(&mut out, &tag, &path)?;
        }
        close_file(out, &path)
    }

    #[cfg(test)]
    pub(super) fn buffered_bytes(&self) -> usize {
        self.resampler.buffered_samples() * size_of::<f32>() + self.bytes.capacity()
    }
}

/// Appends the MP3 of `planes` (one or two, of one length) to `bytes`.
fn encode_mp3(
    encoder: &mut Encoder,
    planes: &[Vec<f32>],
    bytes: &mut Vec<u8>,
    path: &Path,
) -> Result<(), AudioError> {
    let frames = planes[0].len();
    if frames == 0 {
        return Ok(());
    }
    bytes.reserve(mp3lame_encoder::max_required_buffer_size(frames));
    let encoded = match planes {
        [left, right] => encoder.encode_to_vec(DualPcm { left, right }, bytes),
        [mono] => encoder.encode_to_vec(MonoPcm(mono), bytes),
        _ => unreachable!("MP3 takes one or two channels"),
    };
    encoded
        .map(drop)
        .map_err(|e| mp3_error(path, "encoding", e.to_string()))
}

fn mp3_error(path: &Path, what: &str, detail: String) -> AudioError {
    codec_error(path, "MP3", format!("{what}: {detail}"))
}

/// Quality 6 VBR Ogg Vorbis.
pub(super) struct VorbisWriter {
    encoder: VorbisEncoder<BufWriter<File>>,
    path: PathBuf,
}

impl VorbisWriter {
    pub(super) fn create(path: &Path, sample_rate: u32, channels: u16) -> Result<Self, AudioError> {
        let rate = NonZeroU32::new(sample_rate)
            .ok_or_else(|| codec_error(path, "Ogg Vorbis", "the sample rate is 0"))?;
        let channels = u8::try_from(channels)
            .ok()
            .and_then(NonZeroU8::new)
            .ok_or_else(|| codec_error(path, "Ogg Vorbis", "it holds 1 to 255 channels"))?;
        let failed = |e| vorbis_error(path, e);
        let encoder = VorbisEncoderBuilder::new(rate, channels, create_file(path)?)
            .map_err(failed)?
            .bitrate_management_strategy(VorbisBitrateManagementStrategy::QualityVbr {
                target_quality: VORBIS_QUALITY,
            })
            .build()
            .map_err(failed)?;
        Ok(Self {
            encoder,
            path: path.to_path_buf(),
        })
    }

    /// `piece` is not empty: libvorbis takes an empty block for the end of the stream.
    pub(super) fn write(&mut self, piece: &[&[f32]]) -> Result<(), AudioError> {
        self.encoder
            .encode_audio_block(piece)
            .map_err(|e| vorbis_error(&self.path, e))
    }

    pub(super) fn finish(self) -> Result<(), AudioError> {
        let out = self
            .encoder
            .finish()
            .map_err(|e| vorbis_error(&self.path, e))?;
        close_file(out, &self.path)
    }
}

fn vorbis_error(path: &Path, err: vorbis_rs::VorbisError) -> AudioError {
    codec_error(path, "Ogg Vorbis", err)
}
