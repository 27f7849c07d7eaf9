//! MP3 through LAME and Ogg Vorbis through libvorbis, whole buffers at a time.

use std::io::Write;
use std::num::{NonZeroU8, NonZeroU32};
use std::path::Path;

use mp3lame_encoder::{Bitrate, Builder, DualPcm, FlushGap, Mode, MonoPcm, Quality};
use vorbis_rs::{VorbisBitrateManagementStrategy, VorbisEncoderBuilder};

use super::{check_stereo, codec_error, write_all};
use crate::buffer::AudioBuffer;
use crate::error::AudioError;

/// The rates MPEG audio has (MPEG-1, 2 and 2.5); others are resampled to the next one up.
const MP3_RATES: [u32; 9] = [
    8_000, 11_025, 12_000, 16_000, 22_050, 24_000, 32_000, 44_100, 48_000,
];
/// Samples handed to an encoder at a time.
const CHUNK: usize = 1 << 14;
const VORBIS_QUALITY: f32 = 0.6;

pub(super) fn encode_mp3(
    buffer: &AudioBuffer,
    out: &mut impl Write,
    path: &Path,
) -> Result<(), AudioError> {
    check_stereo(buffer, path, "MP3")?;
    let rate = MP3_RATES
        .iter()
        .copied()
        .find(|&r| r >= buffer.sample_rate)
        .unwrap_or(48_000);
    let resampled;
    let buffer = if rate == buffer.sample_rate {
        buffer
    } else {
        resampled = crate::resample::resample(buffer, rate)?;
        &resampled
    };
    let failed = |what: &str, detail: String| codec_error(path, "MP3", format!("{what}: {detail}"));
    let stereo = buffer.channels.len() == 2;
    let mut builder = Builder::new().ok_or_else(|| failed("LAME", "could not start".into()))?;
    let mut setup = || -> Result<(), mp3lame_encoder::BuildError> {
        builder.set_num_channels(buffer.channels.len() as u8)?;
        builder.set_sample_rate(rate)?;
        builder.set_brate(Bitrate::Kbps192)?;
        builder.set_mode(if stereo {
            Mode::JointStereo
        } else {
            Mode::Mono
        })?;
        builder.set_quality(Quality::Good)?;
        // The LAME tag states the encoder's delay and padding, which decoders then drop.
        builder.set_to_write_vbr_tag(true)
    };
    setup().map_err(|e| failed("settings", e.to_string()))?;
    let mut encoder = builder
        .build()
        .map_err(|e| failed("settings", e.to_string()))?;
    // Whole, so the LAME tag can go in front once the encoder knows what it holds.
    let mut bytes = Vec::new();
    for start in (0..buffer.frames()).step_by(CHUNK) {
        let end = (start + CHUNK).min(buffer.frames());
        bytes.reserve(mp3lame_encoder::max_required_buffer_size(end - start));
        let encoded = if stereo {
            let input = DualPcm {
                left: &buffer.channels[0][start..end],
                right: &buffer.channels[1][start..end],
            };
            encoder.encode_to_vec(input, &mut bytes)
        } else {
            encoder.encode_to_vec(MonoPcm(&buffer.channels[0][start..end]), &mut bytes)
        };
        encoded.map_err(|e| failed("encoding", e.to_string()))?;
    }
    bytes.reserve(7_200);
    encoder
        .flush_to_vec::<FlushGap>(&mut bytes)
        .map_err(|e| failed("encoding", e.to_string()))?;
    let mut tag = Vec::with_capacity(encoder.lame_tag_size());
    encoder.lame_tag_encode_to_vec(&mut tag);
    // LAME starts the stream with an empty frame of the tag's size, held for it: replace it.
    let placeholder = tag.len() > 4
        && bytes.len() >= tag.len()
        && bytes[0] == 0xFF
        && bytes[4..tag.len()].iter().all(|&b| b == 0);
    if placeholder {
        bytes[..tag.len()].copy_from_slice(&tag);
    } else {
        write_all(out, &tag, path)?;
    }
    write_all(out, &bytes, path)
}

pub(super) fn encode_vorbis(
    buffer: &AudioBuffer,
    out: &mut impl Write,
    path: &Path,
) -> Result<(), AudioError> {
    let failed = |e: vorbis_rs::VorbisError| codec_error(path, "Ogg Vorbis", e);
    let rate = NonZeroU32::new(buffer.sample_rate)
        .ok_or_else(|| codec_error(path, "Ogg Vorbis", "the sample rate is 0"))?;
    let channels = u8::try_from(buffer.channels.len())
        .ok()
        .and_then(NonZeroU8::new)
        .ok_or_else(|| codec_error(path, "Ogg Vorbis", "it holds 1 to 255 channels"))?;
    let mut encoder = VorbisEncoderBuilder::new(rate, channels, out)
        .map_err(failed)?
        .bitrate_management_strategy(VorbisBitrateManagementStrategy::QualityVbr {
            target_quality: VORBIS_QUALITY,
        })
        .build()
        .map_err(failed)?;
    for start in (0..buffer.frames()).step_by(CHUNK) {
        let end = (start + CHUNK).min(buffer.frames());
        let block: Vec<&[f32]> = buffer.channels.iter().map(|c| &c[start..end]).collect();
        encoder.encode_audio_block(&block).map_err(failed)?;
    }
    encoder.finish().map_err(failed)?;
    Ok(())
}
