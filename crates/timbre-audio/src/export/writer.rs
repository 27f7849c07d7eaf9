//! [`EncodedWriter`]: any [`Codec`] written block by block, and the per-channel resampling the
//! MP3 and Opus encoders share.

use std::path::{Path, PathBuf};

use super::lossy::{Mp3Writer, VorbisWriter};
use super::ogg_opus::OpusWriter;
use super::{Codec, naming};
use crate::encode::{FlacStreamWriter, WavStreamWriter};
use crate::error::{AudioError, AudioErrorKind};
use crate::resample::StreamResampler;

/// Frames handed to an encoder at a time, so what it holds stays within a piece's worth however
/// long the blocks it is given.
const PIECE: usize = 1 << 14;

/// A file encoded in a [`Codec`] as its audio arrives: [`create`](Self::create) it, hand it
/// blocks of any length with [`write`](Self::write), then [`finish`](Self::finish) it. What it
/// holds is bounded by the codec's frame, the resampler's chunk and an output buffer, not by the
/// length written. The file is untagged and not valid before `finish`.
pub struct EncodedWriter {
    encoder: Encoder,
    path: PathBuf,
    channels: usize,
}

enum Encoder {
    Wav(WavStreamWriter),
    Flac(FlacStreamWriter),
    Mp3(Mp3Writer),
    Vorbis(VorbisWriter),
    Opus(OpusWriter),
}

impl EncodedWriter {
    /// Creates `path` for audio of `channels` channels at `sample_rate`, refusing what `codec`
    /// cannot hold (lossy codecs other than Vorbis take one or two channels) before creating it.
    pub fn create(
        path: &Path,
        codec: Codec,
        sample_rate: u32,
        channels: u16,
    ) -> Result<EncodedWriter, AudioError> {
        let encoder = match codec {
            Codec::Wav(format) => Encoder::Wav(WavStreamWriter::create(
                path,
                sample_rate,
                channels,
                format,
            )?),
            Codec::Flac => {
                Encoder::Flac(FlacStreamWriter::create(path, sample_rate, channels, 16)?)
            }
            Codec::Mp3 => Encoder::Mp3(Mp3Writer::create(path, sample_rate, channels)?),
            Codec::Vorbis => Encoder::Vorbis(VorbisWriter::create(path, sample_rate, channels)?),
            Codec::Opus => Encoder::Opus(OpusWriter::create(path, sample_rate, channels)?),
        };
        Ok(EncodedWriter {
            encoder,
            path: path.to_path_buf(),
            channels: channels.into(),
        })
    }

    /// Encodes `block`, one `Vec` per channel, all of one length (which may be 0).
    pub fn write(&mut self, block: &[Vec<f32>]) -> Result<(), AudioError> {
        let frames = block.first().map_or(0, Vec::len);
        if block.len() != self.channels || block.iter().any(|c| c.len() != frames) {
            let lengths: Vec<_> = block.iter().map(Vec::len).collect();
            return Err(AudioError::new(
                AudioErrorKind::Unsupported,
                Some(&self.path),
                format!(
                    "a block of channels {lengths:?} frames long was written to a file of {} \
                     channels, which takes one of equal lengths per channel",
                    self.channels
                ),
            ));
        }
        // An empty block reaches no encoder (libvorbis would take it for the end of the stream).
        for start in (0..frames).step_by(PIECE) {
            let end = (start + PIECE).min(frames);
            let piece: Vec<&[f32]> = block.iter().map(|c| &c[start..end]).collect();
            match &mut self.encoder {
                Encoder::Wav(wav) => wav.write_planes(&piece)?,
                Encoder::Flac(flac) => flac.write_planes(&piece)?,
                Encoder::Mp3(mp3) => mp3.write(&piece)?,
                Encoder::Vorbis(vorbis) => vorbis.write(&piece)?,
                Encoder::Opus(opus) => opus.write(&piece)?,
            }
        }
        Ok(())
    }

    /// Flushes the encoder, completes the headers and syncs the file, so a full disk shows here.
    pub fn finish(self) -> Result<(), AudioError> {
        match self.encoder {
            Encoder::Wav(wav) => wav.finish(),
            Encoder::Flac(flac) => flac.finish(),
            Encoder::Mp3(mp3) => mp3.finish(),
            Encoder::Vorbis(vorbis) => vorbis.finish(),
            Encoder::Opus(opus) => opus.finish(),
        }
    }

    /// The bytes held in this crate's buffers for audio not yet encoded or written (hound's and
    /// the file's buffers, libvorbis's and LAME's own state and the resampler's chunk are fixed
    /// in size and not counted).
    #[cfg(test)]
    pub(super) fn buffered_bytes(&self) -> usize {
        match &self.encoder {
            Encoder::Wav(_) | Encoder::Vorbis(_) => 0,
            Encoder::Flac(flac) => flac.buffered_samples() * size_of::<i32>(),
            Encoder::Mp3(mp3) => mp3.buffered_bytes(),
            Encoder::Opus(opus) => opus.buffered_bytes(),
        }
    }
}

/// One [`StreamResampler`] per channel (each resamples one), their output side by side.
pub(super) struct PlanarResampler {
    channels: Vec<StreamResampler>,
    planes: Vec<Vec<f32>>,
    path: PathBuf,
}

impl PlanarResampler {
    pub(super) fn new(
        source_rate: u32,
        target_rate: u32,
        channels: u16,
        path: &Path,
    ) -> Result<Self, AudioError> {
        let channels = (0..channels)
            .map(|_| StreamResampler::new(source_rate, target_rate))
            .collect::<Result<Vec<_>, _>>()
            .map_err(naming(path))?;
        Ok(Self {
            planes: vec![Vec::new(); channels.len()],
            channels,
            path: path.to_path_buf(),
        })
    }

    /// Resamples `piece`, returning the output that is ready: as long in every channel, since
    /// each channel's resampler has taken as many samples.
    pub(super) fn push(&mut self, piece: &[&[f32]]) -> Result<&[Vec<f32>], AudioError> {
        for ((resampler, plane), input) in self.channels.iter_mut().zip(&mut self.planes).zip(piece)
        {
            plane.clear();
            resampler.push(input, plane).map_err(naming(&self.path))?;
        }
        Ok(&self.planes)
    }

    /// The end of the stream.
    pub(super) fn finish(self) -> Result<Vec<Vec<f32>>, AudioError> {
        let named = naming(&self.path);
        self.channels
            .into_iter()
            .zip(self.planes)
            .map(|(resampler, mut plane)| {
                plane.clear();
                resampler.finish(&mut plane).map_err(&named)?;
                Ok(plane)
            })
            .collect()
    }

    #[cfg(test)]
    pub(super) fn buffered_samples(&self) -> usize {
        self.planes.iter().map(Vec::capacity).sum()
    }
}
