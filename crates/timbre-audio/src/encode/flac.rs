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
        let config = flacenc::config::Encoder::default()
            .into_verified()
            .map_err(|(_, e)| AudioError::new(AudioErrorKind::Io, Some(path), e.to_string()))?;
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
        let frame =
            flacenc::encode_fixed_size_frame(&self.config, &self.frame.0, number, &self.info)
                .map_err(|e| failed(e.to_string()))?;
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

/// Writes a FLAC file with `bits` (16 or 24) bits per sample.
pub fn write_flac(path: &Path, buf: &AudioBuffer, bits: u8) -> Result<(), AudioError> {
    let mut writer = FlacStreamWriter::create(path, buf.sample_rate, buf.channel_count(), bits)?;
    writer.write_planes(&buf.channels)?;
    writer.finish()
}
