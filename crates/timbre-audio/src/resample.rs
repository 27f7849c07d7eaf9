use rubato::audioadapter_buffers::direct::SequentialSliceOfVecs;
use rubato::{Fft, FixedSync, Resampler};

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
    let frames = buf.frames();
    let out_frames =
        (frames as f64 * f64::from(target_rate) / f64::from(buf.sample_rate)).round() as usize;
    let channels = buf.channels.len();
    if frames == 0 || channels == 0 {
        return Ok(AudioBuffer::new(target_rate, vec![Vec::new(); channels]));
    }
    let fail = |detail: String| AudioError::new(AudioErrorKind::Unsupported, None, detail);
    let mut resampler = Fft::<f32>::new(
        buf.sample_rate as usize,
        target_rate as usize,
        CHUNK_FRAMES,
        channels,
        FixedSync::Both,
    )
    .map_err(|e| {
        fail(format!(
            "cannot resample from {} Hz to {target_rate} Hz: {e}",
            buf.sample_rate
        ))
    })?;
    let input = SequentialSliceOfVecs::new(&buf.channels, channels, frames)
        .expect("AudioBuffer channels all hold `frames` samples");
    let output = resampler
        .process_all(&input, frames, None)
        .map_err(|e| fail(format!("resampling failed: {e}")))?;
    let mut interleaved = output.take_data();
    interleaved.resize(out_frames * channels, 0.0);
    let count = u16::try_from(channels).expect("channel count came from a u16");
    Ok(AudioBuffer::from_interleaved(
        target_rate,
        count,
        &interleaved,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::{crossing_freq, sine};

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
        let worst = mid
            .iter()
            .zip(&expected[2000..14000])
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f32::max);
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
    fn zero_rate_is_an_error() {
        let src = AudioBuffer::new(48000, vec![vec![0.0; 100]]);
        assert_eq!(
            resample(&src, 0).unwrap_err().kind,
            AudioErrorKind::Unsupported
        );
    }
}
