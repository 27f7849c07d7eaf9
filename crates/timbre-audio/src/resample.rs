//! Sample-rate conversion with rubato's FFT resampler: [`resample`] for a whole buffer and
//! [`StreamResampler`] for one channel fed piece by piece, the same sample for sample, both
//! time-aligned with the input (the resampler's delay removed).

use timbre_fft::fft_resampler;
use timbre_fft::rubato::audioadapter_buffers::direct::SequentialSliceOfVecs;
use timbre_fft::rubato::{Fft, FixedSync, Indexing, Resampler};

use crate::buffer::AudioBuffer;
use crate::error::{AudioError, AudioErrorKind};

const CHUNK_FRAMES: usize = 1024;

/// Converts to `target_rate` with rubato's FFT resampler. The output has
/// `round(frames * target / source)` frames and is time-aligned with the input (the
/// resampler's delay is removed).
pub fn resample(buf: &AudioBuffer, target_rate: u32) -> Result<AudioBuffer, AudioError> {
    if buf.sample_rate == target_rate {
        return Ok(buf.clone());
    }
    let channels = buf.channels.len();
    if buf.frames() == 0 || channels == 0 {
        return Ok(AudioBuffer::new(target_rate, vec![Vec::new(); channels]));
    }
    let mut out = Vec::with_capacity(channels);
    for channel in &buf.channels {
        let mut stream = StreamResampler::new(buf.sample_rate, target_rate)?;
        let mut samples = Vec::new();
        stream.push(channel, &mut samples)?;
        stream.finish(&mut samples)?;
        out.push(samples);
    }
    Ok(AudioBuffer::new(target_rate, out))
}

/// [`resample`] of one channel fed piece by piece: the concatenated output of [`push`] and
/// [`finish`] equals `resample` of the concatenated input, sample for sample, while only one
/// resampler chunk is held. Between equal rates it passes the samples through.
///
/// [`push`]: StreamResampler::push
/// [`finish`]: StreamResampler::finish
pub struct StreamResampler {
    /// None between equal rates.
    inner: Option<Fft<f32>>,
    source_rate: u32,
    target_rate: u32,
    chunk: Vec<Vec<f32>>,
    filled: usize,
    out: Vec<Vec<f32>>,
    consumed: usize,
    /// Raw output frames produced so far, the resampler's delay included.
    produced: usize,
    emitted: usize,
}

impl StreamResampler {
    /// Resampler from `source_rate` to `target_rate` Hz; fails when rubato cannot build one.
    pub fn new(source_rate: u32, target_rate: u32) -> Result<Self, AudioError> {
        let inner = (source_rate != target_rate)
            .then(|| {
                fft_resampler(
                    source_rate as usize,
                    target_rate as usize,
                    CHUNK_FRAMES,
                    1,
                    FixedSync::Both,
                )
            })
            .transpose()
            .map_err(|e| {
                unsupported(format!(
                    "cannot resample from {source_rate} Hz to {target_rate} Hz: {e}"
                ))
            })?;
        let chunk = vec![vec![
            0.0;
            inner.as_ref().map_or(0, |i| i.input_frames_next())
        ]];
        let out = vec![vec![
            0.0;
            inner.as_ref().map_or(0, |i| i.output_frames_max())
        ]];
        Ok(Self {
            inner,
            source_rate,
            target_rate,
            chunk,
            filled: 0,
            out,
            consumed: 0,
            produced: 0,
            emitted: 0,
        })
    }

    /// Feeds `input`, appending the output that is ready to `output`.
    pub fn push(&mut self, mut input: &[f32], output: &mut Vec<f32>) -> Result<(), AudioError> {
        if self.inner.is_none() {
            output.extend_from_slice(input);
            return Ok(());
        }
        let size = self.chunk[0].len();
        self.consumed += input.len();
        while !input.is_empty() {
            // A full chunk waits until more input shows it is not the last one, as
            // rubato's `process_all` treats the last chunk as a partial one.
            if self.filled == size {
                self.process(None, output)?;
                self.filled = 0;
            }
            let take = (size - self.filled).min(input.len());
            self.chunk[0][self.filled..self.filled + take].copy_from_slice(&input[..take]);
            self.filled += take;
            input = &input[take..];
        }
        Ok(())
    }

    /// Flushes the end of the stream into `output`.
    pub fn finish(mut self, output: &mut Vec<f32>) -> Result<(), AudioError> {
        let ratio = f64::from(self.target_rate) / f64::from(self.source_rate);
        let total = (self.consumed as f64 * ratio).round() as usize;
        let Some(inner) = &self.inner else {
            return Ok(());
        };
        if self.consumed == 0 {
            return Ok(());
        }
        let expected = (inner.resample_ratio() * self.consumed as f64).ceil() as usize;
        let delay = inner.output_delay();
        if self.filled > 0 {
            self.process(Some(self.filled), output)?;
        }
        while self.produced < expected + delay && self.emitted < total {
            self.process(Some(0), output)?;
        }
        output.truncate(output.len() - self.emitted.saturating_sub(total));
        let short = total.saturating_sub(self.emitted);
        output.extend(std::iter::repeat_n(0.0, short));
        Ok(())
    }

    fn process(&mut self, partial: Option<usize>, output: &mut Vec<f32>) -> Result<(), AudioError> {
        let size = self.chunk[0].len();
        let max = self.out[0].len();
        let input = SequentialSliceOfVecs::new(&self.chunk, 1, size)
            .expect("the chunk holds one channel of `size` frames");
        let mut out = SequentialSliceOfVecs::new_mut(&mut self.out, 1, max)
            .expect("the output holds one channel of `max` frames");
        let indexing = Indexing {
            input_offset: 0,
            output_offset: 0,
            active_channels_mask: None,
            partial_len: partial,
        };
        let inner = self.inner.as_mut().expect("only called when resampling");
        let (_, frames) = inner
            .process_into_buffer(&input, &mut out, Some(&indexing))
            .map_err(|e| unsupported(format!("resampling failed: {e}")))?;
        let delay = inner.output_delay();
        let skip = delay.saturating_sub(self.produced).min(frames);
        self.produced += frames;
        output.extend_from_slice(&self.out[0][skip..frames]);
        self.emitted += frames - skip;
        Ok(())
    }
}

fn unsupported(detail: String) -> AudioError {
    AudioError::new(AudioErrorKind::Unsupported, None, detail)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{crossing_freq, sine};
    use timbre_test_support::max_abs_difference;

    #[test]
    fn downsampling_keeps_frequency_length_and_alignment() {
        let src = AudioBuffer::new(44100, vec![sine(44100, 1000.0, 1.0, 0.5); 2]);
        let out = resample(&src, 16000).unwrap();
        assert_eq!(out.sample_rate, 16000);
        assert_eq!(out.frames(), 16000);
        assert_eq!(out.channel_count(), 2);
        let freq = crossing_freq(&out.channels[0], 16000);
        assert!((freq - 1000.0).abs() < 2.0, "{freq} Hz");
        // No leading delay: the sine starts at phase 0, so compare against a fresh one.
        let expected = sine(16000, 1000.0, 1.0, 0.5);
        let mid = &out.channels[0][2000..14000];
        let worst = max_abs_difference(mid, &expected[2000..14000]);
        // The resampler's delay is removed to the nearest output sample; the fraction left over
        // (about 0.2 samples here) costs ~0.04 at this frequency, a whole sample would be ~0.2.
        assert!(worst < 0.05, "max deviation {worst}");
    }

    #[test]
    fn upsampling_rounds_the_length() {
        let src = AudioBuffer::new(16000, vec![sine(16000, 440.0, 0.3333, 0.5)]);
        let out = resample(&src, 48000).unwrap();
        assert_eq!(out.frames(), src.frames() * 3);
        let odd = AudioBuffer::new(44100, vec![vec![0.0; 1001]]);
        assert_eq!(resample(&odd, 16000).unwrap().frames(), 363); // 1001 * 16000 / 44100 = 363.17
    }

    #[test]
    fn same_rate_is_identity_and_empty_stays_empty() {
        let src = AudioBuffer::new(48000, vec![sine(48000, 440.0, 0.1, 0.5)]);
        assert_eq!(resample(&src, 48000).unwrap(), src);
        let empty = AudioBuffer::new(48000, vec![Vec::new()]);
        let out = resample(&empty, 16000).unwrap();
        assert_eq!(
            (out.sample_rate, out.frames(), out.channel_count()),
            (16000, 0, 1)
        );
    }

    #[test]
    fn streaming_in_any_pieces_equals_resampling_the_whole() {
        let src = sine(40000, 440.0, 0.5, 0.5);
        let whole = resample(&AudioBuffer::new(40000, vec![src.clone()]), 48000).unwrap();
        for piece in [1, 1000, 1024, 2048, 3001, src.len()] {
            let mut stream = StreamResampler::new(40000, 48000).unwrap();
            let mut out = Vec::new();
            for chunk in src.chunks(piece) {
                stream.push(chunk, &mut out).unwrap();
            }
            stream.finish(&mut out).unwrap();
            assert_eq!(out, whole.channels[0], "pieces of {piece}");
        }
    }

    #[test]
    fn a_stream_between_equal_rates_passes_the_samples_through() {
        let src = sine(16000, 440.0, 0.1, 0.5);
        let mut stream = StreamResampler::new(16000, 16000).unwrap();
        let mut out = Vec::new();
        for chunk in src.chunks(333) {
            stream.push(chunk, &mut out).unwrap();
        }
        stream.finish(&mut out).unwrap();
        assert_eq!(out, src);
    }

    #[test]
    fn zero_rate_is_an_error() {
        let src = AudioBuffer::new(48000, vec![vec![0.0; 100]]);
        assert_eq!(
            resample(&src, 0).unwrap_err().kind,
            AudioErrorKind::Unsupported
        );
    }
}
