//! RMVPE's log-mel front end, matching `MelSpectrogram` in RVC-Project/Retrieval-based-Voice-
//! Conversion-WebUI `infer/lib/rmvpe.py`: a periodic-Hann STFT with reflect padding (center),
//! magnitudes, librosa's HTK mel filterbank (Slaney area normalisation) and log(clamp(·, 1e-5)).

use tch::{Device, Kind, Tensor};

/// The analysis parameters; the default is RMVPE's (16 kHz, 1024/160, 128 mels, 30–8000 Hz).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MelConfig {
    /// Rate of the input audio, in Hz.
    pub sample_rate: u32,
    /// STFT size in samples; gives `n_fft / 2 + 1` frequency bins.
    pub n_fft: i64,
    /// Periodic Hann window length, in samples.
    pub win_length: i64,
    /// Samples between frames (160: 10 ms at 16 kHz).
    pub hop_length: i64,
    /// Mel bands of the output.
    pub n_mels: i64,
    /// Lowest frequency of the mel filterbank, in Hz.
    pub fmin: f64,
    /// Highest frequency of the mel filterbank, in Hz.
    pub fmax: f64,
    /// The floor under the mel energies before the log.
    pub clamp: f64,
}

impl Default for MelConfig {
    fn default() -> Self {
        Self {
            sample_rate: 16_000,
            n_fft: 1024,
            win_length: 1024,
            hop_length: 160,
            n_mels: 128,
            fmin: 30.0,
            fmax: 8000.0,
            clamp: 1e-5,
        }
    }
}

impl MelConfig {
    /// Frames for `samples` of audio: `samples / hop + 1` (centred frames).
    pub fn frames(&self, samples: i64) -> i64 {
        samples / self.hop_length + 1
    }
}

/// The log-mel spectrogram of mono audio.
pub struct MelSpectrogram {
    config: MelConfig,
    window: Tensor,
    /// `[n_mels, n_fft / 2 + 1]`.
    filterbank: Tensor,
}

impl MelSpectrogram {
    /// Builds the window and the HTK mel filterbank for `config` on `device`.
    pub fn new(config: MelConfig, device: Device) -> Self {
        let bins = config.n_fft / 2 + 1;
        let weights = mel_filterbank(
            config.sample_rate,
            config.n_fft,
            config.n_mels,
            config.fmin,
            config.fmax,
            MelScale::Htk,
        );
        let filterbank = Tensor::from_slice(&weights)
            .view([config.n_mels, bins])
            .to_device(device);
        let window = Tensor::hann_window_periodic(config.win_length, true, (Kind::Float, device));
        Self {
            config,
            window,
            filterbank,
        }
    }

    /// The analysis parameters.
    pub fn config(&self) -> &MelConfig {
        &self.config
    }

    /// `[1, n_mels, samples / hop + 1]` in float32 for 1-D audio, on the audio's device.
    pub fn forward(&self, audio: &Tensor) -> Tensor {
        // In float32 even under autocast, as the reference computes it: the log of small
        // magnitudes turns float16 rounding into errors the pitch decoder sees.
        tch::autocast(false, || self.forward_float32(audio))
    }

    fn forward_float32(&self, audio: &Tensor) -> Tensor {
        let device = audio.device();
        let audio = audio.to_kind(Kind::Float);
        // Silence stands in for empty audio so that it still gives its one frame.
        let audio = if audio.numel() == 0 {
            Tensor::zeros([1], (Kind::Float, device))
        } else {
            audio
        };
        let padded = reflect_pad(&audio, self.config.n_fft / 2);
        let spectrum = padded.unsqueeze(0).stft(
            self.config.n_fft,
            self.config.hop_length,
            self.config.win_length,
            Some(self.window.to_device(device)),
            false,
            true,
            true,
            false,
        );
        let magnitude = spectrum.abs();
        let mel = self.filterbank.to_device(device).matmul(&magnitude);
        mel.clamp_min(self.config.clamp).log()
    }
}

/// Reflect padding on both sides of a 1-D signal, as torch's `reflect` mode for pads shorter
/// than the signal, and continuing the reflection periodically (numpy's rule) for longer ones,
/// so that audio shorter than half a window still gives frames.
fn reflect_pad(signal: &Tensor, pad: i64) -> Tensor {
    let len = signal.size()[0];
    if pad < len {
        // On the device, with no indices from the host (a live block's graph captures this).
        return signal
            .unsqueeze(0)
            .reflection_pad1d([pad, pad])
            .squeeze_dim(0);
    }
    let reflect = |i: i64| {
        if len == 1 {
            return 0;
        }
        let period = 2 * (len - 1);
        let m = i.rem_euclid(period);
        if m < len { m } else { period - m }
    };
    let left: Vec<i64> = (-pad..0).map(reflect).collect();
    let right: Vec<i64> = (len..len + pad).map(reflect).collect();
    let device = signal.device();
    let edge =
        |indices: &[i64]| signal.index_select(0, &Tensor::from_slice(indices).to_device(device));
    Tensor::cat(&[edge(&left), signal.shallow_clone(), edge(&right)], 0)
}

fn hz_to_mel_htk(hz: f64) -> f64 {
    2595.0 * (1.0 + hz / 700.0).log10()
}

fn mel_to_hz_htk(mel: f64) -> f64 {
    700.0 * (10f64.powf(mel / 2595.0) - 1.0)
}

/// librosa's Slaney mel scale (its default, `htk=False`): linear below 1 kHz, logarithmic above.
const SLANEY_LINEAR_HZ_PER_MEL: f64 = 200.0 / 3.0;
const SLANEY_LOG_START_HZ: f64 = 1000.0;

fn slaney_log_step() -> f64 {
    6.4f64.ln() / 27.0
}

fn hz_to_mel_slaney(hz: f64) -> f64 {
    let start_mel = SLANEY_LOG_START_HZ / SLANEY_LINEAR_HZ_PER_MEL;
    if hz >= SLANEY_LOG_START_HZ {
        start_mel + (hz / SLANEY_LOG_START_HZ).ln() / slaney_log_step()
    } else {
        hz / SLANEY_LINEAR_HZ_PER_MEL
    }
}

fn mel_to_hz_slaney(mel: f64) -> f64 {
    let start_mel = SLANEY_LOG_START_HZ / SLANEY_LINEAR_HZ_PER_MEL;
    if mel >= start_mel {
        SLANEY_LOG_START_HZ * (slaney_log_step() * (mel - start_mel)).exp()
    } else {
        mel * SLANEY_LINEAR_HZ_PER_MEL
    }
}

type MelConversion = fn(f64) -> f64;

/// Which mel scale a filterbank spaces its bands on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MelScale {
    /// `htk=True` (RMVPE).
    Htk,
    /// librosa's default (RVC's training mel).
    Slaney,
}

/// `librosa.filters.mel(sr, n_fft, n_mels, fmin, fmax, htk=…)` with its default Slaney
/// normalisation (each triangle scaled to unit area over its mel band), row-major
/// `[n_mels][n_fft / 2 + 1]`.
pub fn mel_filterbank(
    sample_rate: u32,
    n_fft: i64,
    n_mels: i64,
    fmin: f64,
    fmax: f64,
    scale: MelScale,
) -> Vec<f32> {
    let bins = (n_fft / 2 + 1) as usize;
    let n_mels = n_mels as usize;
    let bin_hz: Vec<f64> = (0..bins)
        .map(|k| k as f64 * f64::from(sample_rate) / n_fft as f64)
        .collect();
    let (to_mel, to_hz): (MelConversion, MelConversion) = match scale {
        MelScale::Htk => (hz_to_mel_htk, mel_to_hz_htk),
        MelScale::Slaney => (hz_to_mel_slaney, mel_to_hz_slaney),
    };
    let (mel_min, mel_max) = (to_mel(fmin), to_mel(fmax));
    let edges: Vec<f64> = (0..n_mels + 2)
        .map(|i| to_hz(mel_min + (mel_max - mel_min) * i as f64 / (n_mels + 1) as f64))
        .collect();
    let mut weights = Vec::with_capacity(n_mels * bins);
    for m in 0..n_mels {
        let (low, centre, high) = (edges[m], edges[m + 1], edges[m + 2]);
        let area_norm = 2.0 / (high - low);
        weights.extend(bin_hz.iter().map(|&f| {
            let rising = (f - low) / (centre - low);
            let falling = (high - f) / (high - centre);
            (rising.min(falling).max(0.0) * area_norm) as f32
        }));
    }
    weights
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f32, b: f32) -> bool {
        (a - b).abs() <= 1e-6 * b.abs().max(1e-3)
    }

    /// Reference values from librosa 0.11:
    /// `librosa.filters.mel(sr=8000, n_fft=64, n_mels=8, fmin=30, fmax=3000, htk=True)`.
    #[test]
    fn filterbank_matches_librosa() {
        let fb = mel_filterbank(8000, 64, 8, 30.0, 3000.0, MelScale::Htk);
        assert_eq!(fb.len(), 8 * 33);
        let row = |m: usize| &fb[m * 33..(m + 1) * 33];
        let expected_rows: [(usize, usize, &[f32]); 3] = [
            (0, 1, &[0.004_154_157_4, 0.003_543_097]),
            (
                3,
                5,
                &[
                    0.001_052_844_5,
                    0.002_905_31,
                    0.002_766_257_4,
                    0.001_219_471_5,
                ],
            ),
            (
                7,
                16,
                &[
                    0.000_421_406_93,
                    0.000_859_121_6,
                    0.001_296_836_3,
                    0.001_734_551,
                    0.001_461_945_6,
                    0.001_096_459_2,
                    0.000_730_972_8,
                    0.000_365_486_4,
                ],
            ),
        ];
        for (m, first, values) in expected_rows {
            let row = row(m);
            let nonzero: Vec<usize> = (0..33).filter(|&k| row[k] != 0.0).collect();
            assert_eq!(nonzero.first(), Some(&first), "row {m}");
            assert_eq!(nonzero.len(), values.len(), "row {m}");
            for (k, &v) in values.iter().enumerate() {
                assert!(
                    close(row[first + k], v),
                    "row {m} bin {}: {} vs {v}",
                    first + k,
                    row[first + k]
                );
            }
        }
        let sums = [
            0.007_697_254_4,
            0.008_238_146,
            0.007_901_783,
            0.007_943_884,
            0.008_084_417,
            0.007_896_418,
            0.008_079_163,
            0.007_966_779,
        ];
        for (m, &sum) in sums.iter().enumerate() {
            assert!(close(row(m).iter().sum(), sum), "row {m} sum");
        }
    }

    /// RMVPE's own filterbank: sums of rows 0, 64 and 127 and the largest weight from librosa.
    #[test]
    fn rmvpe_filterbank_matches_librosa() {
        let fb = mel_filterbank(16_000, 1024, 128, 30.0, 8000.0, MelScale::Htk);
        let row_sum = |m: usize| fb[m * 513..(m + 1) * 513].iter().sum::<f32>();
        for (m, sum) in [(0, 0.062_960_68), (64, 0.064_415_81), (127, 0.063_863_82)] {
            assert!((row_sum(m) - sum).abs() < 1e-6, "row {m}: {}", row_sum(m));
        }
        assert!(close(fb[3], 0.056_785_04));
        assert!(fb.iter().all(|&w| w <= fb[3]));
    }

    #[test]
    fn reflect_padding_follows_torch_and_continues_for_short_signals() {
        let signal = Tensor::from_slice(&[1.0f32, 2.0, 3.0, 4.0]);
        assert_eq!(
            Vec::<f32>::try_from(reflect_pad(&signal, 2)).unwrap(),
            [3.0, 2.0, 1.0, 2.0, 3.0, 4.0, 3.0, 2.0]
        );
        assert_eq!(
            Vec::<f32>::try_from(reflect_pad(&signal, 5)).unwrap(),
            [
                2.0, 3.0, 4.0, 3.0, 2.0, 1.0, 2.0, 3.0, 4.0, 3.0, 2.0, 1.0, 2.0, 3.0
            ]
        );
    }

    #[test]
    fn frames_follow_the_hop_for_any_length() {
        let mel = MelSpectrogram::new(MelConfig::default(), Device::Cpu);
        for samples in [0, 1, 100, 513, 16_000, 16_161] {
            let audio = Tensor::zeros([samples], (Kind::Float, Device::Cpu));
            let out = mel.forward(&audio);
            assert_eq!(out.size(), [1, 128, samples / 160 + 1], "{samples} samples");
            let floor = (1e-5f64).ln();
            assert!((out.max().double_value(&[]) - floor).abs() < 1e-6);
        }
    }

    #[test]
    fn a_sine_peaks_in_the_mel_band_of_its_frequency() {
        let config = MelConfig::default();
        let mel = MelSpectrogram::new(config, Device::Cpu);
        let hz = 440.0;
        let audio = Tensor::arange(16_000, (Kind::Float, Device::Cpu))
            .g_mul_scalar(2.0 * std::f64::consts::PI * hz / 16_000.0)
            .sin();
        let out = mel.forward(&audio);
        let peak = out.select(2, 50).argmax(1, false).int64_value(&[0]);
        let (mel_min, mel_max) = (hz_to_mel_htk(config.fmin), hz_to_mel_htk(config.fmax));
        let expected = ((hz_to_mel_htk(hz) - mel_min) / (mel_max - mel_min)
            * (config.n_mels + 1) as f64)
            .round() as i64
            - 1;
        assert!(
            (peak - expected).abs() <= 1,
            "peak band {peak}, expected about {expected}"
        );
    }
}
