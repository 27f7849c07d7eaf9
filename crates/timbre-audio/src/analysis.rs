//! Levels, loudness and waveform thumbnails.

use std::collections::VecDeque;

use crate::buffer::AudioBuffer;

/// Samples at or above this magnitude count as clipping.
const CLIP_LEVEL: f32 = 0.999;
const DBFS_FLOOR: f32 = -120.0;

/// numpy's median of `values` (reordered): the mean of the two middle values of an even
/// count; None when empty.
pub fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len().is_multiple_of(2) {
        (values[mid - 1] + values[mid]) / 2.0
    } else {
        values[mid]
    })
}

/// Largest absolute sample over all channels.
pub fn peak(buf: &AudioBuffer) -> f32 {
    buf.channels
        .iter()
        .flatten()
        .fold(0.0, |m, x| m.max(x.abs()))
}

/// Root mean square over all samples of all channels.
pub fn rms(buf: &AudioBuffer) -> f32 {
    let count = buf.channels.iter().map(Vec::len).sum::<usize>();
    if count == 0 {
        return 0.0;
    }
    let sum: f64 = buf
        .channels
        .iter()
        .flatten()
        .map(|&x| f64::from(x) * f64::from(x))
        .sum();
    (sum / count as f64).sqrt() as f32
}

/// Linear amplitude to dBFS, floored at -120 dB so silence gives a finite number.
pub fn to_dbfs(linear: f32) -> f32 {
    if linear > 0.0 {
        (20.0 * linear.log10()).max(DBFS_FLOOR)
    } else {
        DBFS_FLOOR
    }
}

/// EBU R128 integrated loudness in LUFS; `None` when the audio is too short (under one 400 ms
/// gating block) or silent.
pub fn loudness_lufs(buf: &AudioBuffer) -> Option<f64> {
    let channels = u32::try_from(buf.channels.len()).ok()?;
    let mut meter = ebur128::EbuR128::new(channels, buf.sample_rate, ebur128::Mode::I).ok()?;
    let planes: Vec<&[f32]> = buf.channels.iter().map(Vec::as_slice).collect();
    meter.add_frames_planar_f32(&planes).ok()?;
    meter.loudness_global().ok().filter(|l| l.is_finite())
}

/// Per-bin peak of the mono mix, `bins` values long, for waveform thumbnails.
pub fn waveform_peaks(buf: &AudioBuffer, bins: usize) -> Vec<f32> {
    let frames = buf.frames();
    if frames == 0 {
        return vec![0.0; bins];
    }
    let mono = buf.to_mono();
    let samples = &mono.channels[0];
    (0..bins)
        .map(|i| {
            let start = (i * frames / bins).min(frames - 1);
            let end = ((i + 1) * frames / bins).clamp(start + 1, frames);
            samples[start..end]
                .iter()
                .fold(0.0f32, |m, x| m.max(x.abs()))
        })
        .collect()
}

/// `peak`, `loudness_lufs` and `waveform_peaks` of audio that arrives block by block (`add`),
/// with the same results as over the whole; the total length must be known up front for the
/// waveform's bins.
pub struct Summary {
    total_frames: usize,
    seen: usize,
    peak: f32,
    meter: Option<ebur128::EbuR128>,
    waveform: Vec<f32>,
}

impl Summary {
    /// Summary of `total_frames` frames of `channels`-channel audio at `sample_rate` Hz, with
    /// `bins` waveform bins.
    pub fn new(sample_rate: u32, channels: usize, total_frames: usize, bins: usize) -> Self {
        let meter = u32::try_from(channels)
            .ok()
            .and_then(|c| ebur128::EbuR128::new(c, sample_rate, ebur128::Mode::I).ok());
        Summary {
            total_frames,
            seen: 0,
            peak: 0.0,
            meter,
            waveform: vec![0.0; bins],
        }
    }

    /// Feeds the next block; blocks come in order, at the rate and channel count given to `new`.
    pub fn add(&mut self, buf: &AudioBuffer) {
        self.peak = self.peak.max(peak(buf));
        let planes: Vec<&[f32]> = buf.channels.iter().map(Vec::as_slice).collect();
        if let Some(meter) = &mut self.meter
            && meter.add_frames_planar_f32(&planes).is_err()
        {
            self.meter = None;
        }
        let (frames, bins) = (self.total_frames, self.waveform.len());
        let (first, n) = (self.seen, buf.frames());
        self.seen += n;
        if frames == 0 || n == 0 {
            return;
        }
        let mono = buf.to_mono();
        for (i, value) in self.waveform.iter_mut().enumerate() {
            let start = (i * frames / bins).min(frames - 1);
            let end = ((i + 1) * frames / bins).clamp(start + 1, frames);
            let (from, to) = (start.max(first), end.min(first + n));
            if from < to {
                *value = mono.channels[0][from - first..to - first]
                    .iter()
                    .fold(*value, |m, x| m.max(x.abs()));
            }
        }
    }

    /// Frames fed so far.
    pub fn frames(&self) -> usize {
        self.seen
    }

    /// Largest absolute sample seen so far, linear (0.0 to 1.0 for in-range audio).
    pub fn peak(&self) -> f32 {
        self.peak
    }

    /// Integrated loudness in LUFS of everything fed so far; `None` when too short or silent,
    /// or when the meter could not be built or fed.
    pub fn loudness_lufs(&self) -> Option<f64> {
        let meter = self.meter.as_ref()?;
        meter.loudness_global().ok().filter(|l| l.is_finite())
    }

    /// Per-bin peaks of the mono mix; bins not yet reached stay 0.0.
    pub fn waveform(&self) -> &[f32] {
        &self.waveform
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
/// Levels of a stream over the meter's recent window.
pub struct Level {
    /// Largest absolute sample in the window, linear.
    pub peak: f32,
    /// Root mean square over the window, linear.
    pub rms: f32,
    /// Any sample in the window reached full scale.
    pub clipping: bool,
}

/// Level of the most recent `window_secs` of a stream.
#[derive(Debug, Clone)]
pub struct LevelMeter {
    window_frames: usize,
    /// Per frame: peak over channels and mean square over channels.
    frames: VecDeque<(f32, f32)>,
}

impl LevelMeter {
    /// Meter over the last `window_secs` seconds at `sample_rate` Hz (at least one frame).
    pub fn new(sample_rate: u32, window_secs: f32) -> Self {
        let window_frames = ((sample_rate as f32 * window_secs).round() as usize).max(1);
        LevelMeter {
            window_frames,
            frames: VecDeque::with_capacity(window_frames),
        }
    }

    /// Appends interleaved samples of `channels` channels, dropping frames older than the window.
    pub fn push_interleaved(&mut self, samples: &[f32], channels: u16) {
        let n = usize::from(channels.max(1));
        // Older frames would be evicted at once, so skip them.
        let keep = samples.len() / n - (samples.len() / n).min(self.window_frames);
        for frame in samples.chunks_exact(n).skip(keep) {
            let peak = frame.iter().fold(0.0f32, |m, x| m.max(x.abs()));
            let mean_square = frame.iter().map(|x| x * x).sum::<f32>() / n as f32;
            self.frames.push_back((peak, mean_square));
        }
        let excess = self.frames.len().saturating_sub(self.window_frames);
        self.frames.drain(..excess);
    }

    /// Level of the frames now in the window; all zeros when nothing has been pushed.
    pub fn reading(&self) -> Level {
        if self.frames.is_empty() {
            return Level::default();
        }
        let peak = self.frames.iter().fold(0.0f32, |m, f| m.max(f.0));
        let mean =
            self.frames.iter().map(|f| f64::from(f.1)).sum::<f64>() / self.frames.len() as f64;
        Level {
            peak,
            rms: mean.sqrt() as f32,
            clipping: peak >= CLIP_LEVEL,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::sine;

    #[test]
    fn peak_rms_and_dbfs_of_a_sine() {
        let buf = AudioBuffer::new(48000, vec![sine(48000, 1000.0, 1.0, 0.5), vec![0.0; 48000]]);
        assert!((peak(&buf) - 0.5).abs() < 1e-3);
        // Half the samples are silent: rms = 0.5/sqrt(2)/sqrt(2).
        assert!((rms(&buf) - 0.25).abs() < 1e-3);
        assert!((to_dbfs(0.5) + 6.0206).abs() < 1e-3);
        assert_eq!(to_dbfs(0.0), -120.0);
        assert_eq!(to_dbfs(1e-9), -120.0);
        assert_eq!(rms(&AudioBuffer::new(48000, vec![])), 0.0);
    }

    #[test]
    fn loudness_of_full_scale_sine_and_edge_cases() {
        // A full-scale 997 Hz sine in one channel reads -3.01 LUFS; half scale is 6.02 dB less.
        let buf = AudioBuffer::new(48000, vec![sine(48000, 997.0, 2.0, 0.5)]);
        let lufs = loudness_lufs(&buf).unwrap();
        assert!((lufs + 9.03).abs() < 0.1, "{lufs}");
        assert_eq!(
            loudness_lufs(&AudioBuffer::new(48000, vec![vec![0.0; 96000]])),
            None
        );
        assert_eq!(
            loudness_lufs(&AudioBuffer::new(48000, vec![sine(48000, 997.0, 0.1, 0.5)])),
            None
        );
        assert_eq!(loudness_lufs(&AudioBuffer::new(48000, vec![])), None);
    }

    #[test]
    fn waveform_peaks_have_requested_length() {
        let mut samples = vec![0.0; 1000];
        samples[10] = -0.9;
        samples[990] = 0.4;
        let buf = AudioBuffer::new(8000, vec![samples]);
        let peaks = waveform_peaks(&buf, 10);
        assert_eq!(peaks.len(), 10);
        assert_eq!(peaks[0], 0.9);
        assert_eq!(peaks[9], 0.4);
        assert!(peaks[1..9].iter().all(|&p| p == 0.0));
        // More bins than frames still gives one value per bin.
        let tiny = AudioBuffer::new(8000, vec![vec![0.5, -1.0, 0.25]]);
        assert_eq!(
            waveform_peaks(&tiny, 6),
            vec![0.5, 0.5, 1.0, 1.0, 0.25, 0.25]
        );
        assert_eq!(
            waveform_peaks(&AudioBuffer::new(8000, vec![]), 4),
            vec![0.0; 4]
        );
        assert!(waveform_peaks(&tiny, 0).is_empty());
    }

    #[test]
    fn level_meter_tracks_the_window() {
        let mut meter = LevelMeter::new(1000, 0.1);
        assert_eq!(meter.reading(), Level::default());
        // Stereo: loud frames then quiet frames; only the last 100 frames count.
        let loud: Vec<f32> = [1.0, -1.0].repeat(50);
        let quiet: Vec<f32> = [0.1, 0.1].repeat(150);
        meter.push_interleaved(&loud, 2);
        let level = meter.reading();
        assert!(level.clipping);
        assert_eq!(level.peak, 1.0);
        meter.push_interleaved(&quiet, 2);
        let level = meter.reading();
        assert!(!level.clipping);
        assert!((level.peak - 0.1).abs() < 1e-6);
        assert!((level.rms - 0.1).abs() < 1e-6);
    }

    #[test]
    fn summary_over_blocks_equals_the_whole() {
        let whole = AudioBuffer::new(
            8000,
            vec![sine(8000, 440.0, 1.3, 0.5), sine(8000, 300.0, 1.3, 0.25)],
        );
        let frames = whole.frames();
        for block in [1000, 777, frames] {
            let mut summary = Summary::new(8000, 2, frames, 100);
            for start in (0..frames).step_by(block) {
                let end = (start + block).min(frames);
                let part: Vec<Vec<f32>> = whole
                    .channels
                    .iter()
                    .map(|c| c[start..end].to_vec())
                    .collect();
                summary.add(&AudioBuffer::new(8000, part));
            }
            assert_eq!(summary.frames(), frames);
            assert_eq!(summary.peak(), peak(&whole));
            assert_eq!(summary.waveform(), waveform_peaks(&whole, 100).as_slice());
            assert_eq!(summary.loudness_lufs(), loudness_lufs(&whole));
        }
    }
}
