//! Decoding block by block, so a long file never has to be in memory at once. `decode_file` is
//! this reader asked for one block as long as the file.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use symphonia::core::codecs::audio::{AudioDecoder, AudioDecoderOptions};
use symphonia::core::errors::Error as SymError;

use super::samples::check_samples;
use super::{
    AudioInfo, DecodeOptions, Opened, TRUNCATION_TOLERANCE, container_error, guard, header,
    too_long,
};
use crate::buffer::AudioBuffer;
use crate::error::{AudioError, AudioErrorKind};

/// A file being decoded (`open_blocks`): `next_block` returns its audio in order, then the
/// checks `decode_file` makes at the end (no samples, fewer than the header promised) fail the
/// last call instead of returning None.
pub struct BlockReader {
    opened: Opened,
    decoder: Box<dyn AudioDecoder>,
    path: Option<PathBuf>,
    max_secs: Option<f64>,
    rate: u32,
    /// Decoded frames not yet returned, per channel.
    planes: Vec<Vec<f32>>,
    scratch: Vec<Vec<f32>>,
    frames: usize,
    /// Priming frames still to drop, and how many more frames the container marks as audio.
    skip: u64,
    keep: Option<u64>,
    decoded_packets: usize,
    failed_packets: usize,
    last_failure: String,
    ended: bool,
}

impl BlockReader {
    pub(super) fn new(
        opened: Opened,
        opts: &DecodeOptions,
        path: Option<&Path>,
    ) -> Result<Self, AudioError> {
        let max_secs = opts.max_duration_secs;
        if let (Some(max), Some(secs)) = (max_secs, opened.info.duration_secs)
            && secs > max
        {
            return Err(too_long(path, secs, max));
        }
        let decoder = super::opus_codec::codecs()
            .make_audio_decoder(&opened.params, &AudioDecoderOptions::default())
            .map_err(|e| container_error(e, path))?;
        Ok(Self {
            rate: opened.info.sample_rate,
            skip: opened.trim.skip,
            keep: opened.trim.keep,
            opened,
            decoder,
            path: path.map(Path::to_path_buf),
            max_secs,
            planes: Vec::new(),
            scratch: Vec::new(),
            frames: 0,
            decoded_packets: 0,
            failed_packets: 0,
            last_failure: String::new(),
            ended: false,
        })
    }

    /// What the header says.
    pub fn info(&self) -> &AudioInfo {
        &self.opened.info
    }

    /// The rate of the decoded audio (the header's until the first packet says otherwise).
    pub fn sample_rate(&self) -> u32 {
        self.rate
    }

    /// The next `max_frames` frames or fewer (only at the end); None once all were returned.
    pub fn next_block(&mut self, max_frames: usize) -> Result<Option<AudioBuffer>, AudioError> {
        let max_frames = max_frames.max(1);
        while !self.ended && self.planes.first().is_none_or(|p| p.len() < max_frames) {
            self.decode_packet()?;
        }
        let have = self.planes.first().map_or(0, Vec::len);
        if have == 0 {
            self.check_end()?;
            return Ok(None);
        }
        let take = have.min(max_frames);
        let channels = self
            .planes
            .iter_mut()
            .map(|plane| {
                if take == plane.len() {
                    std::mem::take(plane)
                } else {
                    let rest = plane.split_off(take);
                    std::mem::replace(plane, rest)
                }
            })
            .collect();
        Ok(Some(AudioBuffer::new(self.rate, channels)))
    }

    fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    fn seconds(&self, frames: usize) -> f64 {
        frames as f64 / f64::from(self.rate.max(1))
    }

    /// Decodes one packet into `planes`, or marks the end.
    fn decode_packet(&mut self) -> Result<(), AudioError> {
        if self.keep == Some(0) {
            self.ended = true;
            return Ok(());
        }
        let packet = match guard(self.path.as_deref(), || self.opened.reader.next_packet())? {
            Ok(Some(packet)) => packet,
            Ok(None) | Err(SymError::ResetRequired) => {
                self.ended = true;
                return Ok(());
            }
            // A data chunk cut short ends in EOF; the frame count check at the end judges it.
            Err(SymError::IoError(e)) if e.kind() == ErrorKind::UnexpectedEof => {
                self.ended = true;
                return Ok(());
            }
            Err(e) => {
                let mut err = container_error(e, self.path());
                err.detail = format!(
                    "{} after {:.2} s of audio",
                    err.detail,
                    self.seconds(self.frames)
                );
                return Err(err);
            }
        };
        if packet.track_id != self.opened.track_id {
            return Ok(());
        }
        let decoder = &mut self.decoder;
        let buf = match guard(self.path.as_deref(), || decoder.decode(&packet))? {
            Ok(buf) => buf,
            // Players skip a damaged packet and carry on; so do we, unless all of them fail.
            Err(SymError::DecodeError(what)) => {
                self.failed_packets += 1;
                self.last_failure = what.to_string();
                return Ok(());
            }
            Err(SymError::IoError(e)) => {
                self.failed_packets += 1;
                self.last_failure = e.to_string();
                return Ok(());
            }
            Err(SymError::ResetRequired) => {
                self.ended = true;
                return Ok(());
            }
            Err(e) => return Err(container_error(e, self.path.as_deref())),
        };
        self.decoded_packets += 1;
        if buf.frames() == 0 {
            return Ok(());
        }
        if self.frames == 0 && self.planes.is_empty() {
            self.rate = buf.spec().rate();
            let channels = u32::try_from(buf.num_planes()).unwrap_or(u32::MAX);
            header::check_format(channels, self.rate, self.path.as_deref())?;
            self.planes = vec![Vec::new(); buf.num_planes()];
        } else if self.planes.len() != buf.num_planes() {
            return Err(AudioError::new(
                AudioErrorKind::Unsupported,
                self.path.as_deref(),
                "the number of channels changes in the middle of the file",
            ));
        }
        let frames = buf.frames();
        buf.copy_to_vecs_planar::<f32>(&mut self.scratch);
        let (start, end) = self.kept_range(frames);
        if start == end {
            return Ok(());
        }
        let kept: Vec<&[f32]> = self.scratch.iter().map(|s| &s[start..end]).collect();
        check_samples(&kept, self.frames, self.rate, self.path.as_deref())?;
        for (plane, new) in self.planes.iter_mut().zip(kept) {
            plane.extend_from_slice(new);
        }
        self.frames += end - start;
        let secs = self.seconds(self.frames);
        if let Some(max) = self.max_secs
            && secs > max
        {
            return Err(too_long(self.path(), secs, max));
        }
        Ok(())
    }

    /// The part of a packet's `frames` that is audio once the container's priming and padding
    /// are dropped; counts them off.
    fn kept_range(&mut self, frames: usize) -> (usize, usize) {
        let start = usize::try_from(self.skip).unwrap_or(usize::MAX).min(frames);
        self.skip -= start as u64;
        let mut end = frames;
        if let Some(keep) = &mut self.keep {
            end = start
                + usize::try_from(*keep)
                    .unwrap_or(usize::MAX)
                    .min(frames - start);
            *keep -= (end - start) as u64;
        }
        (start, end)
    }

    /// The checks once every packet has been read.
    fn check_end(&self) -> Result<(), AudioError> {
        let path = self.path();
        if self.decoded_packets == 0 && self.failed_packets > 0 {
            return Err(AudioError::new(
                AudioErrorKind::Corrupt,
                path,
                format!(
                    "the file is damaged: none of its {} audio packets could be decoded ({})",
                    self.failed_packets, self.last_failure
                ),
            ));
        }
        if self.frames == 0 {
            return Err(AudioError::new(
                AudioErrorKind::NoSamples,
                path,
                "the file contains no audio samples",
            ));
        }
        if let Some(promised) = self.opened.info.frames.filter(|_| self.opened.exact_frames)
            && (self.frames as f64) < promised as f64 * (1.0 - TRUNCATION_TOLERANCE)
        {
            return Err(AudioError::new(
                AudioErrorKind::Truncated,
                path,
                format!(
                    "the file is cut short: its header promises {:.2} s of audio but only {:.2} s \
                     is there",
                    self.seconds(promised as usize),
                    self.seconds(self.frames)
                ),
            ));
        }
        Ok(())
    }
}
