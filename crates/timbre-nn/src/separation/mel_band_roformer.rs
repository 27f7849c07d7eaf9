//! Mel-Band RoFormer's frequency bands, as ZFTurbo/Music-Source-Separation-Training
//! `models/bs_roformer/mel_band_roformer.py` builds them: the bins where librosa's Slaney mel
//! filterbank (`librosa.filters.mel(sr, n_fft, n_mels=num_bands)`) is positive, with the first
//! bin of the first band and the last bin of the last band forced in. Bands overlap, so the masks
//! estimated for a bin are averaged over the bands that hold it. The rest of the model is the
//! shared RoFormer (`roformer.rs`).

use anyhow::{Result, ensure};
use tch::{Device, Kind, Tensor};

/// Which STFT bins each mel band holds: `[bands][bins]`.
pub(super) fn slaney_band_masks(sample_rate: f64, n_fft: i64, num_bands: usize) -> Vec<Vec<bool>> {
    let bins = (n_fft / 2 + 1) as usize;
    // np.fft.rfftfreq(n_fft, d=1/sr)
    let bin_spacing = 1.0 / (n_fft as f64 * (1.0 / sample_rate));
    let fft_freqs: Vec<f64> = (0..bins).map(|i| i as f64 * bin_spacing).collect();
    // mel_frequencies(num_bands + 2, fmin=0, fmax=sr/2): np.linspace over Slaney mels
    let (min_mel, max_mel) = (hz_to_mel(0.0), hz_to_mel(sample_rate / 2.0));
    let points = num_bands + 2;
    let step = (max_mel - min_mel) / (points - 1) as f64;
    let mel_freqs: Vec<f64> = (0..points)
        .map(|i| {
            if i == points - 1 {
                max_mel
            } else {
                i as f64 * step + min_mel
            }
        })
        .map(mel_to_hz)
        .collect();
    let mut masks: Vec<Vec<bool>> = (0..num_bands)
        .map(|band| {
            let (below, above) = (
                mel_freqs[band + 1] - mel_freqs[band],
                mel_freqs[band + 2] - mel_freqs[band + 1],
            );
            let slaney_norm = 2.0 / (mel_freqs[band + 2] - mel_freqs[band]);
            fft_freqs
                .iter()
                .map(|&freq| {
                    let rising = -(mel_freqs[band] - freq) / below;
                    let falling = (mel_freqs[band + 2] - freq) / above;
                    // librosa stores the triangle in float32, then scales it by the norm.
                    let triangle = rising.min(falling).max(0.0) as f32;
                    ((triangle as f64 * slaney_norm) as f32) > 0.0
                })
                .collect()
        })
        .collect();
    if let Some(first) = masks.first_mut() {
        first[0] = true;
    }
    if let Some(last) = masks.last_mut() {
        last[bins - 1] = true;
    }
    masks
}

const SLANEY_HZ_PER_MEL: f64 = 200.0 / 3.0;
const SLANEY_LOG_START_HZ: f64 = 1000.0;

fn slaney_log_step() -> f64 {
    6.4f64.ln() / 27.0
}

fn hz_to_mel(hz: f64) -> f64 {
    let log_start_mel = SLANEY_LOG_START_HZ / SLANEY_HZ_PER_MEL;
    if hz >= SLANEY_LOG_START_HZ {
        log_start_mel + (hz / SLANEY_LOG_START_HZ).ln() / slaney_log_step()
    } else {
        hz / SLANEY_HZ_PER_MEL
    }
}

fn mel_to_hz(mel: f64) -> f64 {
    let log_start_mel = SLANEY_LOG_START_HZ / SLANEY_HZ_PER_MEL;
    if mel >= log_start_mel {
        SLANEY_LOG_START_HZ * (slaney_log_step() * (mel - log_start_mel)).exp()
    } else {
        SLANEY_HZ_PER_MEL * mel
    }
}

/// The bins of every band in order, over the channel-interleaved frequency axis
/// (`(bin, channel)` → `bin × channels + channel`).
pub(super) struct MelBands {
    /// `[Σ band bins × channels]`, int64.
    freq_indices: Tensor,
    /// How many bands hold each entry of the interleaved axis: `[bins × channels, 1, 1]`.
    bands_per_freq: Tensor,
    /// Features per band: bins × channels × 2 (real, imaginary).
    pub widths: Vec<i64>,
}

impl MelBands {
    pub(super) fn new(
        sample_rate: i64,
        n_fft: i64,
        num_bands: i64,
        channels: i64,
        device: Device,
    ) -> Result<Self> {
        ensure!(
            num_bands > 1,
            "`model.num_bands` is {num_bands}: a Mel-Band RoFormer needs at least two bands"
        );
        let masks = slaney_band_masks(sample_rate as f64, n_fft, num_bands as usize);
        let bins = n_fft / 2 + 1;
        let mut counts = vec![0f32; bins as usize];
        let mut freq_indices = Vec::new();
        let mut widths = Vec::new();
        for mask in &masks {
            let held: Vec<i64> = (0..bins).filter(|&bin| mask[bin as usize]).collect();
            for &bin in &held {
                counts[bin as usize] += 1.0;
                freq_indices.extend((0..channels).map(|channel| bin * channels + channel));
            }
            widths.push(held.len() as i64 * channels * 2);
        }
        if let Some(bin) = counts.iter().position(|&count| count == 0.0) {
            anyhow::bail!(
                "{num_bands} mel bands at {sample_rate} Hz with n_fft {n_fft} leave STFT bin {bin} in no band"
            );
        }
        let bands_per_freq: Vec<f32> = counts
            .iter()
            .flat_map(|&count| (0..channels).map(move |_| count))
            .collect();
        Ok(Self {
            freq_indices: Tensor::from_slice(&freq_indices).to_device(device),
            bands_per_freq: Tensor::from_slice(&bands_per_freq)
                .view([-1, 1, 1])
                .to_device(device),
            widths,
        })
    }

    /// `[batch, bins × channels, frames, 2]` → the bands' bins `[batch, Σ, frames, 2]`.
    pub(super) fn select(&self, spectrum: &Tensor) -> Tensor {
        spectrum.index_select(1, &self.freq_indices)
    }

    /// Band masks `[batch, stems, Σ, frames, 2]` → one mask per bin
    /// `[batch, stems, bins × channels, frames, 2]`, averaged over the bands that hold the bin.
    pub(super) fn merge(&self, masks: &Tensor) -> Tensor {
        let size = masks.size();
        let index = self
            .freq_indices
            .view([1, 1, -1, 1, 1])
            .expand(size.as_slice(), false);
        let summed_shape = [
            size[0],
            size[1],
            self.bands_per_freq.size()[0],
            size[3],
            size[4],
        ];
        let summed = Tensor::zeros(summed_shape, (Kind::Float, masks.device()))
            .scatter_add(2, &index, masks);
        summed / self.bands_per_freq.clamp_min(1e-8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `librosa.filters.mel(sr=44100, n_fft=2048, n_mels=60) > 0` (librosa 0.11), first and
    /// last bins forced: bins per band, and each band's first bin.
    const COUNTS_44K_2048_60: [usize; 60] = [
        7, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 9, 9, 9, 10, 10, 11, 13, 13, 13, 15,
        16, 17, 19, 20, 20, 22, 24, 26, 28, 29, 31, 33, 36, 39, 41, 44, 47, 50, 54, 57, 61, 66, 71,
        76, 80, 86, 93, 99, 105, 113, 122, 130,
    ];
    const FIRST_44K_2048_60: [usize; 60] = [
        0, 4, 7, 10, 13, 16, 19, 22, 25, 28, 31, 34, 37, 40, 43, 46, 49, 53, 56, 60, 65, 69, 74,
        79, 84, 90, 97, 103, 110, 118, 126, 135, 145, 155, 165, 177, 189, 203, 217, 232, 248, 265,
        284, 304, 325, 348, 372, 398, 426, 455, 487, 521, 558, 597, 638, 683, 731, 782, 836, 895,
    ];

    #[test]
    fn mel_bands_match_librosa_slaney_filterbank() {
        let masks = slaney_band_masks(44100.0, 2048, 60);
        let counts: Vec<usize> = masks
            .iter()
            .map(|m| m.iter().filter(|&&held| held).count())
            .collect();
        let firsts: Vec<usize> = masks
            .iter()
            .map(|m| m.iter().position(|&held| held).unwrap())
            .collect();
        assert_eq!(counts, COUNTS_44K_2048_60);
        assert_eq!(firsts, FIRST_44K_2048_60);
        assert_eq!(counts.iter().sum::<usize>(), 1979);
        let last_band = masks.last().unwrap();
        assert_eq!(last_band.iter().rposition(|&held| held), Some(1024));
    }

    #[test]
    fn small_filterbank_matches_librosa() {
        // librosa.filters.mel(sr=48000, n_fft=1024, n_mels=40): bins of the first and last bands.
        let masks = slaney_band_masks(48000.0, 1024, 40);
        let held = |band: &Vec<bool>| {
            band.iter()
                .enumerate()
                .filter(|(_, h)| **h)
                .map(|(i, _)| i)
                .collect::<Vec<_>>()
        };
        assert_eq!(held(&masks[0]), [0, 1, 2, 3, 4]);
        assert_eq!(held(&masks[39]).first(), Some(&417));
        assert_eq!(held(&masks[39]).len(), 96);
    }

    #[test]
    fn overlapping_masks_are_averaged_and_channels_interleaved() {
        let bands = MelBands::new(44100, 2048, 60, 2, Device::Cpu).unwrap();
        assert_eq!(bands.widths.len(), 60);
        assert_eq!(bands.widths[0], 7 * 2 * 2);
        // Bin 4 (the first of band 1) is also in band 0: stereo indices 8 and 9 appear twice.
        let indices = Vec::<i64>::try_from(&bands.freq_indices).unwrap();
        assert_eq!(&indices[..4], &[0, 1, 2, 3]);
        assert_eq!(indices.iter().filter(|&&i| i == 9).count(), 2);
        let masks = Tensor::ones([1, 1, indices.len() as i64, 1, 2], tch::kind::FLOAT_CPU);
        let merged = bands.merge(&masks);
        assert_eq!(merged.size(), [1, 1, 1025 * 2, 1, 2]);
        assert!((merged - 1.0).abs().max().double_value(&[]) < 1e-6);
    }
}
