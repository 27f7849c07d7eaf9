//! [`AudioBuffer`]: planar audio at one sample rate, one `Vec<f32>` per channel, with
//! conversions from and to interleaved samples and a mono mix.

/// Planar audio: one `Vec<f32>` per channel, all the same length, samples in `[-1, 1]`.
#[derive(Debug, Clone, PartialEq)]
pub struct AudioBuffer {
    /// Sample rate in Hz.
    pub sample_rate: u32,
    /// One sample vector per channel, all of equal length (frames).
    pub channels: Vec<Vec<f32>>,
}

impl AudioBuffer {
    /// Wraps planar channels; all channels must have the same length (checked in debug builds).
    pub fn new(sample_rate: u32, channels: Vec<Vec<f32>>) -> Self {
        debug_assert!(
            channels.windows(2).all(|w| w[0].len() == w[1].len()),
            "all channels of an AudioBuffer must have the same length"
        );
        AudioBuffer {
            sample_rate,
            channels,
        }
    }

    /// Splits interleaved samples into channels; a trailing partial frame is dropped.
    pub fn from_interleaved(sample_rate: u32, channel_count: u16, samples: &[f32]) -> Self {
        let n = usize::from(channel_count.max(1));
        let frames = samples.len() / n;
        let channels = (0..n)
            .map(|c| samples.chunks_exact(n).map(|frame| frame[c]).collect())
            .collect::<Vec<Vec<f32>>>();
        debug_assert!(channels.iter().all(|ch| ch.len() == frames));
        AudioBuffer::new(sample_rate, channels)
    }

    /// Samples per channel; 0 when there are no channels.
    pub fn frames(&self) -> usize {
        self.channels.first().map_or(0, Vec::len)
    }

    /// Number of channels, saturating at `u16::MAX`.
    pub fn channel_count(&self) -> u16 {
        u16::try_from(self.channels.len()).unwrap_or(u16::MAX)
    }

    /// Length in seconds; 0.0 when the sample rate is 0.
    pub fn duration_secs(&self) -> f64 {
        if self.sample_rate == 0 {
            return 0.0;
        }
        self.frames() as f64 / f64::from(self.sample_rate)
    }

    /// Average of all channels.
    pub fn to_mono(&self) -> AudioBuffer {
        let mono = match self.channels.as_slice() {
            [] => Vec::new(),
            [only] => only.clone(),
            all => {
                let scale = 1.0 / all.len() as f32;
                (0..self.frames())
                    .map(|i| all.iter().map(|ch| ch[i]).sum::<f32>() * scale)
                    .collect()
            }
        };
        AudioBuffer::new(self.sample_rate, vec![mono])
    }

    /// Samples frame by frame, channels interleaved within each frame.
    pub fn interleaved(&self) -> Vec<f32> {
        let mut out = Vec::with_capacity(self.frames() * self.channels.len());
        for i in 0..self.frames() {
            out.extend(self.channels.iter().map(|ch| ch[i]));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleave_round_trip() {
        let samples = [0.1, -0.1, 0.2, -0.2, 0.3, -0.3];
        let buf = AudioBuffer::from_interleaved(8000, 2, &samples);
        assert_eq!(buf.frames(), 3);
        assert_eq!(buf.channel_count(), 2);
        assert_eq!(buf.channels[0], vec![0.1, 0.2, 0.3]);
        assert_eq!(buf.channels[1], vec![-0.1, -0.2, -0.3]);
        assert_eq!(buf.interleaved(), samples);
    }

    #[test]
    fn partial_trailing_frame_is_dropped() {
        let buf = AudioBuffer::from_interleaved(8000, 2, &[0.1, 0.2, 0.3]);
        assert_eq!(buf.frames(), 1);
    }

    #[test]
    fn mono_is_channel_average() {
        let buf = AudioBuffer::new(8000, vec![vec![1.0, 0.5], vec![0.0, -0.5]]);
        let mono = buf.to_mono();
        assert_eq!(mono.channels, vec![vec![0.5, 0.0]]);
        assert_eq!(mono.sample_rate, 8000);
    }

    #[test]
    fn duration_and_empty() {
        let buf = AudioBuffer::new(16000, vec![vec![0.0; 8000]]);
        assert!((buf.duration_secs() - 0.5).abs() < 1e-12);
        let empty = AudioBuffer::new(16000, Vec::new());
        assert_eq!(empty.frames(), 0);
        assert_eq!(empty.duration_secs(), 0.0);
        assert!(empty.to_mono().channels[0].is_empty());
    }
}
