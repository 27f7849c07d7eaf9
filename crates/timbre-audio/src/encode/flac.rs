//! FLAC written frame by frame with flacenc: the `fLaC` marker and a provisional STREAMINFO
//! first, each fixed-size frame as soon as its samples are in, and STREAMINFO rewritten in place
//! at the end with the totals, the frame sizes and the MD5 of the samples.

use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use flacenc::bitsink::ByteSink;
use flacenc::component::{BitRepr, Stream, StreamInfo};
use flacenc::error::{Verified, Verify};
use flacenc::source::{Context, Fill, FrameBuf};

use super::to_int;
use crate::buffer::AudioBuffer;
use crate::error::{AudioError, AudioErrorKind};

/// A FLAC file written block by block; only one FLAC frame of samples is held.
pub struct FlacStreamWriter {
    out: BufWriter<File>,
    path: PathBuf,
    config: Verified<flacenc::config::Encoder>,
    /// Samples written plainly, for the frames where `config`'s coding came out larger.
    verbatim: Verified<flacenc::config::Encoder>,
    info: StreamInfo,
    /// The next frame's samples, and the running MD5 and counts of all samples so far.
    frame: (FrameBuf, Context),
    /// Interleaved samples of the frame being gathered: fewer than a whole frame.
    pending: Vec<i32>,
    bits: u32,
    block_size: usize,
    sink: ByteSink,
}

impl FlacStreamWriter {
    /// Creates `path` for `channels` channels at `sample_rate` with `bits` (16 or 24) bits per
    /// sample.
    pub fn create(
        path: &Path,
        sample_rate: u32,
        channels: u16,
        bits: u8,
    ) -> Result<Self, AudioError> {
        if bits != 16 && bits != 24 {
            return Err(AudioError::new(
                AudioErrorKind::Unsupported,
                Some(path),
                format!("FLAC can be written with 16 or 24 bits per sample, not {bits}"),
            ));
        }
        let verified = |config: flacenc::config::Encoder| {
            config
                .into_verified()
                .map_err(|(_, e)| AudioError::new(AudioErrorKind::Io, Some(path), e.to_string()))
        };
        let config = verified(flacenc::config::Encoder::default())?;
        let verbatim = verified(verbatim_config())?;
        let block_size = config.block_size;
        let unsupported = |e: flacenc::error::VerifyError| {
            AudioError::new(
                AudioErrorKind::Unsupported,
                Some(path),
                format!("cannot be encoded as FLAC ({channels} channels at {sample_rate} Hz): {e}"),
            )
        };
        let mut info = StreamInfo::new(sample_rate as usize, channels.into(), bits.into())
            .map_err(unsupported)?;
        info.set_block_sizes(block_size, block_size)
            .map_err(unsupported)?;
        let frame = (
            FrameBuf::with_size(channels.into(), block_size).map_err(unsupported)?,
            Context::new(bits.into(), channels.into()),
        );
        let file = File::create(path)
            .map_err(|e| AudioError::io(Some(path), "could not create the file", &e))?;
        let mut writer = Self {
            out: BufWriter::new(file),
            path: path.to_path_buf(),
            config,
            verbatim,
            info,
            frame,
            pending: Vec::with_capacity(block_size * usize::from(channels)),
            bits: bits.into(),
            block_size,
            sink: ByteSink::new(),
        };
        writer.write_header()?;
        Ok(writer)
    }

    /// Appends `planes`, one slice per channel of the writer, all of one length.
    pub fn write_planes(&mut self, planes: &[impl AsRef<[f32]>]) -> Result<(), AudioError> {
        let frames = planes.first().map_or(0, |p| p.as_ref().len());
        let whole = self.block_size * planes.len();
        for i in 0..frames {
            self.pending.extend(
                planes
                    .iter()
                    .map(|plane| to_int(plane.as_ref()[i], self.bits)),
            );
            if self.pending.len() == whole {
                self.encode_pending()?;
            }
        }
        Ok(())
    }

    /// Encodes the last, short frame, completes STREAMINFO and syncs the file, so a full disk
    /// shows here.
    pub fn finish(mut self) -> Result<(), AudioError> {
        if !self.pending.is_empty() {
            self.encode_pending()?;
        }
        if self.info.total_samples() == 0 {
            return Err(AudioError::new(
                AudioErrorKind::NoSamples,
                Some(&self.path),
                "there is no audio to write",
            ));
        }
        // Fixed-size blocks: the short last block does not count, as the spec says (decoders,
        // symphonia among them, take min != max for variable-size blocks and reject frames).
        self.info
            .set_block_sizes(self.block_size, self.block_size)
            .expect("the block size was accepted at the start");
        self.info.set_md5_digest(&self.frame.1.md5_digest());
        self.out
            .seek(SeekFrom::Start(0))
            .map_err(|e| self.write_error(&e))?;
        self.write_header()?;
        let file = self
            .out
            .into_inner()
            .map_err(|e| AudioError::io(Some(&self.path), "could not write the file", e.error()))?;
        file.sync_all()
            .map_err(|e| AudioError::io(Some(&self.path), "could not write the file", &e))
    }

    /// The samples gathered for the next frame.
    #[cfg(test)]
    pub(crate) fn buffered_samples(&self) -> usize {
        self.pending.capacity()
    }

    /// `fLaC` and STREAMINFO as the stream stands (the same length whatever it holds).
    fn write_header(&mut self) -> Result<(), AudioError> {
        let header = Stream::with_stream_info(self.info.clone());
        self.write_bits(&header)
    }

    fn encode_pending(&mut self) -> Result<(), AudioError> {
        let failed = |detail: String| {
            AudioError::new(
                AudioErrorKind::Unsupported,
                Some(&self.path),
                format!("cannot be encoded as FLAC: {detail}"),
            )
        };
        self.frame
            .fill_interleaved(&self.pending)
            .map_err(|e| failed(e.to_string()))?;
        self.pending.clear();
        let number = self
            .frame
            .1
            .current_frame_number()
            .expect("a frame was just filled");
        let encode = |config| {
            flacenc::encode_fixed_size_frame(config, &self.frame.0, number, &self.info)
                .map_err(|e| failed(e.to_string()))
        };
        let mut frame = encode(&self.config)?;
        // flacenc 0.5.1's Rice-parameter search overflows on bursts of loud noise in quiet
        // blocks and codes the residual in unary, up to gigabytes a frame; no coding is worth
        // more than the samples written plainly.
        let plain_bits = self.block_size * self.info.channels() * self.bits as usize;
        if frame.count_bits() > plain_bits + PLAIN_FRAME_OVERHEAD_BITS {
            frame = encode(&self.verbatim)?;
        }
        self.info.update_frame_info(&frame);
        self.write_bits(&frame)
    }

    fn write_bits(&mut self, part: &impl BitRepr) -> Result<(), AudioError> {
        self.sink.clear();
        part.write(&mut self.sink)
            .map_err(|e| AudioError::new(AudioErrorKind::Io, Some(&self.path), e.to_string()))?;
        self.out
            .write_all(self.sink.as_slice())
            .map_err(|e| self.write_error(&e))
    }

    fn write_error(&self, err: &std::io::Error) -> AudioError {
        AudioError::io(Some(&self.path), "could not write the file", err)
    }
}

/// A frame's header, subframe headers and CRC, beyond its samples: generous, as it only
/// tells a sane coding from a runaway one.
const PLAIN_FRAME_OVERHEAD_BITS: usize = 1024;

fn verbatim_config() -> flacenc::config::Encoder {
    let mut config = flacenc::config::Encoder::default();
    config.stereo_coding.use_leftside = false;
    config.stereo_coding.use_rightside = false;
    config.stereo_coding.use_midside = false;
    config.subframe_coding.use_fixed = false;
    config.subframe_coding.use_lpc = false;
    config
}

/// Writes a FLAC file with `bits` (16 or 24) bits per sample.
pub fn write_flac(path: &Path, buf: &AudioBuffer, bits: u8) -> Result<(), AudioError> {
    let mut writer = FlacStreamWriter::create(path, buf.sample_rate, buf.channel_count(), bits)?;
    writer.write_planes(&buf.channels)?;
    writer.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A burst of full-scale noise in a near-silent block (a separator's random-weight stem had
    /// one) overflows flacenc 0.5.1's Rice-parameter search, which then codes the residual in
    /// unary: a frame of hundreds of megabytes that symphonia refuses as cut short.
    #[test]
    fn a_burst_of_full_scale_noise_stays_a_small_readable_file() {
        let rate = 44100;
        let blocks = 32;
        let frames = blocks * 4096;
        let mut state = 0x9e37_79b9_u32;
        let mut noise = move || {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state as f32 / u32::MAX as f32 * 2.0 - 1.0
        };
        let quiet =
            |i: usize, f: f32| 1e-4 * (i as f32 * f / rate as f32 * std::f32::consts::TAU).sin();
        let mut left: Vec<f32> = (0..frames).map(|i| quiet(i, 220.0)).collect();
        let right: Vec<f32> = (0..frames).map(|i| quiet(i, 330.0)).collect();
        for block in 0..blocks {
            let start = block * 4096 + block * 97 % 3000;
            for sample in &mut left[start..start + 50 + block * 5] {
                *sample = noise();
            }
        }
        let buf = AudioBuffer::new(rate, vec![left, right]);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("jump.flac");
        write_flac(&path, &buf, 24).unwrap();
        let plain = frames * 2 * 3;
        let size = std::fs::metadata(&path).unwrap().len() as usize;
        assert!(
            size < plain + 4096,
            "{size} bytes for {plain} bytes of samples"
        );
        let back = crate::decode_file(&path, &Default::default()).unwrap();
        assert_eq!(back.frames(), frames);
        for (a, b) in back.channels.iter().zip(&buf.channels) {
            let worst = a
                .iter()
                .zip(b)
                .map(|(x, y)| (x - y).abs())
                .fold(0.0, f32::max);
            assert!(worst < 2.0 / (1 << 23) as f32, "off by {worst}");
        }
    }
}
