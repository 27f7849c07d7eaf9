//! The spectrograms RVC trains with: rvc_next 0.2.16 `engine/train/mel.py` (RVC's
//! `mel_processing.py`): `spectrogram_torch` (the posterior encoder's input), `spec_to_mel_torch`
//! and `mel_spectrogram_torch` (the mel L1 loss), `center=False` after reflect padding.

use tch::{Device, Kind, Tensor};

use crate::rmvpe::{MelScale, mel_filterbank};

/// Added under the square root of the power, as the reference does, so silence has a gradient.
const POWER_FLOOR: f64 = 2e-7;
/// Mel magnitudes are clamped here before the log.
const MEL_CLAMP: f64 = 2e-6;

/// The `data` section of an RVC training config that the spectrograms use.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpectrogramConfig {
    /// Rate in Hz of the training audio, which the mel filterbank is built for.
    pub sampling_rate: u32,
    /// `filter_length`.
    pub n_fft: i64,
    /// STFT hop in samples: one spectrogram frame per hop.
    pub hop_length: i64,
    /// Length in samples of the periodic Hann window (RVC: `n_fft`).
    pub win_length: i64,
    /// Number of mel bands of the mel spectrogram the L1 loss compares.
    pub n_mel_channels: i64,
    /// Lowest frequency of the mel filterbank in Hz (RVC 0).
    pub mel_fmin: f64,
    /// `None`: half the sampling rate.
    pub mel_fmax: Option<f64>,
}

/// Computes both spectrograms on one device, keeping the window and the mel basis.
pub struct Spectrograms {
    config: SpectrogramConfig,
    window: Tensor,
    mel_basis: Tensor,
}

impl Spectrograms {
    /// The Hann window and the Slaney mel basis of `config`, built on `device`.
    pub fn new(config: SpectrogramConfig, device: Device) -> Self {
        let fmax = config
            .mel_fmax
            .unwrap_or(f64::from(config.sampling_rate) / 2.0);
        let basis = mel_filterbank(
            config.sampling_rate,
            config.n_fft,
            config.n_mel_channels,
            config.mel_fmin,
            fmax,
            MelScale::Slaney,
        );
        Self {
            config,
            window: Tensor::hann_window_periodic(config.win_length, true, (Kind::Float, device)),
            mel_basis: Tensor::from_slice(&basis)
                .view([config.n_mel_channels, config.n_fft / 2 + 1])
                .to_device(device),
        }
    }

    /// The `data` settings it computes with.
    pub fn config(&self) -> &SpectrogramConfig {
        &self.config
    }

    /// `spectrogram_torch`: audio `[batch, samples]` → magnitudes `[batch, n_fft / 2 + 1,
    /// frames]`, one frame per `hop_length` samples.
    pub fn linear(&self, audio: &Tensor) -> Tensor {
        // Always float32: the reference computes it so, and the log mel of float16
        // magnitudes would lose the quiet bins.
        tch::autocast(false, || {
            let c = &self.config;
            let pad = (c.n_fft - c.hop_length) / 2;
            let padded = audio
                .to_kind(Kind::Float)
                .unsqueeze(1)
                .reflection_pad1d([pad, pad])
                .squeeze_dim(1);
            let spectrum = padded.stft(
                c.n_fft,
                c.hop_length,
                c.win_length,
                Some(&self.window),
                false,
                true,
                true,
                false,
            );
            (spectrum.real().square() + spectrum.imag().square() + POWER_FLOOR).sqrt()
        })
    }

    /// `spec_to_mel_torch`: magnitudes → log mel `[batch, n_mel_channels, frames]`.
    pub fn mel_of_linear(&self, linear: &Tensor) -> Tensor {
        tch::autocast(false, || {
            self.mel_basis
                .matmul(&linear.to_kind(Kind::Float))
                .clamp_min(MEL_CLAMP)
                .log()
        })
    }

    /// `mel_spectrogram_torch`: audio `[batch, samples]` → log mel.
    pub fn mel(&self, audio: &Tensor) -> Tensor {
        self.mel_of_linear(&self.linear(audio))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::load_state_dict;
    use crate::train::parity_tests::reference;
    use timbre_test_support::reference_python;

    fn config_40k() -> SpectrogramConfig {
        SpectrogramConfig {
            sampling_rate: 40000,
            n_fft: 2048,
            hop_length: 400,
            win_length: 2048,
            n_mel_channels: 125,
            mel_fmin: 0.0,
            mel_fmax: None,
        }
    }

    #[test]
    fn frames_are_one_per_hop() {
        let spectrograms = Spectrograms::new(config_40k(), Device::Cpu);
        let audio = Tensor::zeros([2, 400 * 30], (Kind::Float, Device::Cpu));
        assert_eq!(spectrograms.linear(&audio).size(), [2, 1025, 30]);
        assert_eq!(spectrograms.mel(&audio).size(), [2, 125, 30]);
    }

    /// rvc_next's `spectrogram_torch` and `mel_spectrogram_torch` on the same noise, for the
    /// 40k config and for a 32k-like one whose fmax is set.
    #[test]
    fn spectrograms_match_the_reference() {
        let python = reference_python();
        let dir = tempfile::tempdir().unwrap();
        reference(&python, "spectrograms", dir.path());
        let expected = load_state_dict(&dir.path().join("spectrograms.pt")).unwrap();
        let get = |name: &str| expected.get(name).unwrap();
        let audio = get("audio");
        let configs = [
            ("40k", config_40k()),
            (
                "32k",
                SpectrogramConfig {
                    sampling_rate: 32000,
                    n_fft: 1024,
                    hop_length: 320,
                    win_length: 1024,
                    n_mel_channels: 80,
                    mel_fmin: 0.0,
                    mel_fmax: Some(8000.0),
                },
            ),
        ];
        for (name, config) in configs {
            let spectrograms = Spectrograms::new(config, Device::Cpu);
            let linear = spectrograms.linear(&audio);
            let mel = spectrograms.mel(&audio);
            for (what, ours, theirs) in [
                ("linear", &linear, get(&format!("{name}.linear"))),
                ("mel", &mel, get(&format!("{name}.mel"))),
            ] {
                assert_eq!(ours.size(), theirs.size(), "{name} {what}");
                let error = (ours - &theirs).abs().max().double_value(&[]);
                let scale = theirs.abs().max().double_value(&[]);
                assert!(
                    error <= 1e-5 * scale.max(1.0),
                    "{name} {what}: max abs error {error:.2e} (scale {scale:.2e})"
                );
            }
        }
    }
}
