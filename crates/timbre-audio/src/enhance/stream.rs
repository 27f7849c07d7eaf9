//! Mono resampling in pieces, so a long file can go through a 48 kHz or 16 kHz stage one block at
//! a time instead of as a whole converted copy.

use rubato::audioadapter_buffers::direct::SequentialSlice;
use rubato::{Fft, FixedSync, Indexing, Resampler};

use crate::error::{AudioError, AudioErrorKind};

const CHUNK_FRAMES: usize = 1024;

/// Resamples a stream pushed in pieces of any length. Its output is time-aligned with its input
/// (the resampler's delay is dropped) and, once finished, `round(input * to / from)` long, as
/// [`crate::resample`] makes it.
pub(super) struct StreamResampler {
    /// None when the rates are equal.
    resampler: Option<Fft<f32>>,
    ratio: f64,
    pending: Vec<f32>,
    chunk_out: Vec<f32>,
    delay_left: usize,
    consumed: u64,
    produced: u64,
}

impl StreamResampler {
    pub(super) fn new(from: u32, to: u32) -> Result<Self, AudioError> {
        let resampler = if from == to {
            None
        } else {
            let built =
                Fft::<f32>::new(from as usize, to as usize, CHUNK_FRAMES, 1, FixedSync::Both)
                    .map_err(|e| {
                        AudioError::new(
                            AudioErrorKind::Unsupported,
                            None,
                            format!("cannot resample from {from} Hz to {to} Hz: {e}"),
                        )
                    })?;
            Some(built)
        };
        let delay_left = resampler.as_ref().map_or(0, |r| r.output_delay());
        let chunk_out = vec![0.0; resampler.as_ref().map_or(0, |r| r.output_frames_max())];
        Ok(StreamResampler {
            resampler,
            ratio: f64::from(to) / f64::from(from),
            pending: Vec::new(),
            chunk_out,
            delay_left,
            consumed: 0,
            produced: 0,
        })
    }

    /// Feeds `input`, appending whatever output is ready to `out`.
    pub(super) fn push(&mut self, input: &[f32], out: &mut Vec<f32>) -> Result<(), AudioError> {
        self.consumed += input.len() as u64;
        if self.resampler.is_none() {
            out.extend_from_slice(input);
            self.produced += input.len() as u64;
            return Ok(());
        }
        self.pending.extend_from_slice(input);
        let mut start = 0;
        while self.pending.len() - start >= self.chunk_in() {
            start += self.process(start, None, out)?;
        }
        self.pending.drain(..start);
        Ok(())
    }

    /// Flushes the rest: the output then holds `round(input * to / from)` frames in all.
    pub(super) fn finish(&mut self, out: &mut Vec<f32>) -> Result<(), AudioError> {
        let total = (self.consumed as f64 * self.ratio).round() as u64;
        if self.resampler.is_some() {
            let partial = self.pending.len();
            self.process(0, Some(partial), out)?;
            self.pending.clear();
            while self.produced < total {
                self.process(0, Some(0), out)?;
            }
        }
        let excess = (self.produced - total.min(self.produced)) as usize;
        out.truncate(out.len() - excess.min(out.len()));
        self.produced = total;
        Ok(())
    }

    fn chunk_in(&self) -> usize {
        self.resampler
            .as_ref()
            .map_or(CHUNK_FRAMES, |r| r.input_frames_next())
    }

    /// Resamples one chunk of `pending` from `start` (`partial`: how many of its frames are real,
    /// the rest read as silence); returns the frames consumed.
    fn process(
        &mut self,
        start: usize,
        partial: Option<usize>,
        out: &mut Vec<f32>,
    ) -> Result<usize, AudioError> {
        let resampler = self
            .resampler
            .as_mut()
            .expect("only called when resampling");
        let chunk = resampler.input_frames_next();
        let available = partial.unwrap_or(chunk);
        let input_slice = &self.pending[start..start + available];
        let input = SequentialSlice::new(input_slice, 1, available).expect("one channel");
        let indexing = match partial {
            Some(frames) => Indexing::new().partial_len(frames),
            None => Indexing::new(),
        };
        let frames_out = resampler.output_frames_next();
        let mut output = SequentialSlice::new_mut(&mut self.chunk_out[..frames_out], 1, frames_out)
            .expect("one channel of `frames_out`");
        let (used, written) = resampler
            .process_into_buffer(&input, &mut output, Some(&indexing))
            .map_err(|e| {
                AudioError::new(
                    AudioErrorKind::Unsupported,
                    None,
                    format!("resampling failed: {e}"),
                )
            })?;
        let skip = self.delay_left.min(written);
        self.delay_left -= skip;
        out.extend_from_slice(&self.chunk_out[skip..written]);
        self.produced += (written - skip) as u64;
        Ok(used.min(available))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::AudioBuffer;
    use crate::test_util::sine;

    /// Pieces of uneven sizes come out as the whole-buffer resampler makes them.
    #[test]
    fn pieces_match_the_whole_buffer_resampler() {
        for (from, to) in [
            (44100, 48000),
            (48000, 16000),
            (16000, 16000),
            (8000, 48000),
        ] {
            let input = sine(from, 440.0, 0.77, 0.5);
            let whole = crate::resample(&AudioBuffer::new(from, vec![input.clone()]), to)
                .unwrap()
                .channels
                .remove(0);
            let mut stream = StreamResampler::new(from, to).unwrap();
            let mut out = Vec::new();
            for piece in input.chunks(3001) {
                stream.push(piece, &mut out).unwrap();
            }
            stream.finish(&mut out).unwrap();
            assert_eq!(out.len(), whole.len(), "{from} -> {to}");
            let worst = out
                .iter()
                .zip(&whole)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f32::max);
            assert!(worst < 1e-4, "{from} -> {to}: {worst}");
        }
    }
}
