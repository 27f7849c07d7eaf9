//! BS-RoFormer's frequency bands, as ZFTurbo/Music-Source-Separation-Training
//! `models/bs_roformer/bs_roformer.py` (`BSRoformer`) splits them: consecutive, disjoint runs of
//! STFT bins of the sizes `freqs_per_bands` names. The rest of the model is the shared RoFormer
//! (`roformer.rs`).

use anyhow::{Result, ensure};

use super::config::ModelConfig;

/// Upstream `DEFAULT_FREQS_PER_BANDS`: 62 bands over the 1025 bins of a 2048-point STFT.
pub(super) const DEFAULT_FREQS_PER_BANDS: [i64; 62] = [
    2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 4, 4, 4, 4, 4, 4, 4, 4,
    4, 4, 4, 4, 12, 12, 12, 12, 12, 12, 12, 12, 24, 24, 24, 24, 24, 24, 24, 24, 48, 48, 48, 48, 48,
    48, 48, 48, 128, 129,
];

/// Features per band (bins × channels × 2), checked to cover every STFT bin exactly once.
pub(super) fn band_widths(model: &ModelConfig, bins: i64, channels: i64) -> Result<Vec<i64>> {
    let freqs_per_bands = model
        .freqs_per_bands
        .clone()
        .unwrap_or_else(|| DEFAULT_FREQS_PER_BANDS.to_vec());
    ensure!(
        freqs_per_bands.len() > 1,
        "`model.freqs_per_bands` must name at least two bands"
    );
    ensure!(
        freqs_per_bands.iter().all(|&f| f > 0),
        "`model.freqs_per_bands` has a band without bins"
    );
    let total: i64 = freqs_per_bands.iter().sum();
    ensure!(
        total == bins,
        "`model.freqs_per_bands` covers {total} bins, but an STFT of n_fft {} has {bins}",
        model.stft_n_fft
    );
    Ok(freqs_per_bands.iter().map(|f| f * channels * 2).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::separation::config::Config;

    #[test]
    fn default_bands_cover_a_2048_point_stft() {
        let config = Config::from_yaml(
            "audio: {chunk_size: 44100}\nmodel: {dim: 8, depth: 1, stereo: true}\n",
        )
        .unwrap();
        let widths = band_widths(&config.model, 1025, 2).unwrap();
        assert_eq!(widths.len(), 62);
        assert_eq!((widths[0], widths[61]), (8, 516));
        let error = band_widths(&config.model, 513, 2).unwrap_err().to_string();
        assert!(error.contains("1025") && error.contains("513"), "{error}");
    }
}
