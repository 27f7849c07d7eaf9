//! RVC's training configurations (`configs/v1|v2/{32k,40k,48k}.json`, as rvc_next 0.2.16
//! `engine/train/hparams.py` holds them): the `train` and `data` sections and the generator's
//! `model` section. v2 has no 40k file; v2 at 40k uses v1's, as RVC does.

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

use super::discriminator::DiscriminatorWidth;
use super::spectrogram::SpectrogramConfig;
use crate::hubert::Embedder;
use crate::synthesizer::SynthesizerConfig;

/// The `train` section.
#[derive(Debug, Clone, PartialEq)]
pub struct TrainSection {
    /// Seed of libtorch's generator at the start of a fresh run (RVC 1234).
    pub seed: i64,
    /// AdamW's initial learning rate (RVC 1e-4).
    pub learning_rate: f64,
    /// AdamW's `(beta1, beta2)` moment decays (RVC (0.8, 0.99)).
    pub betas: (f64, f64),
    /// AdamW's denominator epsilon (RVC 1e-9).
    pub eps: f64,
    /// Items per training batch (RVC 4).
    pub batch_size: usize,
    /// ExponentialLR's gamma: the rate is multiplied by it after each epoch (RVC 0.999875).
    pub lr_decay: f64,
    /// Samples of audio per training slice.
    pub segment_size: i64,
    /// Weight of the mel-spectrogram L1 loss in the generator's loss (RVC 45).
    pub c_mel: f64,
    /// Weight of the KL loss in the generator's loss (RVC 1).
    pub c_kl: f64,
}

/// Everything a training run needs: optimizer, spectrogram, generator and discriminator settings.
#[derive(Debug, Clone, PartialEq)]
pub struct TrainingConfig {
    /// The `train` section: optimizer, schedule, batch and loss weights.
    pub train: TrainSection,
    /// The `data` section: the spectrograms computed from the training audio.
    pub data: SpectrogramConfig,
    /// The generator's `model` section.
    pub model: SynthesizerConfig,
    /// How wide the discriminator is (RVC's own width outside tests).
    pub discriminator_width: DiscriminatorWidth,
    /// "v1" or "v2".
    pub version: String,
    /// The content encoder the dataset's features come from, written into the exported model
    /// when it is not contentvec.
    pub embedder: Embedder,
}

/// Another model than RVC's, as tests train them (`timbre train --model-config`): a generator's
/// configuration, in RVC's names, and beside them `discriminator_divisor`, how many times
/// narrower than RVC's the discriminator is (1 when absent).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelConfig {
    /// The generator's configuration, its keys at the top level beside `discriminator_divisor`.
    #[serde(flatten)]
    pub generator: SynthesizerConfig,
    /// How many times narrower than RVC's the discriminator is: 1, 2, 4, 8 or 16 (1 if absent).
    #[serde(default)]
    pub discriminator_divisor: DiscriminatorWidth,
}

impl TrainingConfig {
    /// The configuration RVC trains a `version` model at `sample_rate` with.
    pub fn rvc(version: &str, sample_rate: u32) -> Result<TrainingConfig> {
        if version != "v1" && version != "v2" {
            bail!("version {version:?}: RVC trains \"v1\" or \"v2\" models");
        }
        // (filter_length, hop, mel channels, segment, upsample rates, upsample kernels)
        let (n_fft, hop, mels, segment, rates, kernels) = match (version, sample_rate) {
            ("v1", 32000) => (
                1024,
                320,
                80,
                12800,
                vec![10, 4, 2, 2, 2],
                vec![16, 16, 4, 4, 4],
            ),
            (_, 40000) => (
                2048,
                400,
                125,
                12800,
                vec![10, 10, 2, 2],
                vec![16, 16, 4, 4],
            ),
            ("v1", 48000) => (
                2048,
                480,
                128,
                11520,
                vec![10, 6, 2, 2, 2],
                vec![16, 16, 4, 4, 4],
            ),
            ("v2", 32000) => (1024, 320, 80, 12800, vec![10, 8, 2, 2], vec![20, 16, 4, 4]),
            ("v2", 48000) => (
                2048,
                480,
                128,
                17280,
                vec![12, 10, 2, 2],
                vec![24, 20, 4, 4],
            ),
            _ => bail!("{sample_rate} Hz: RVC trains at 32000, 40000 or 48000 Hz"),
        };
        Ok(TrainingConfig {
            train: TrainSection {
                seed: 1234,
                learning_rate: 1e-4,
                betas: (0.8, 0.99),
                eps: 1e-9,
                batch_size: 4,
                lr_decay: 0.999875,
                segment_size: segment,
                c_mel: 45.0,
                c_kl: 1.0,
            },
            data: SpectrogramConfig {
                sampling_rate: sample_rate,
                n_fft,
                hop_length: hop,
                win_length: n_fft,
                n_mel_channels: mels,
                mel_fmin: 0.0,
                mel_fmax: None,
            },
            model: SynthesizerConfig {
                spec_channels: n_fft / 2 + 1,
                segment_size: segment / hop,
                inter_channels: 192,
                hidden_channels: 192,
                filter_channels: 768,
                n_heads: 2,
                n_layers: 6,
                kernel_size: 3,
                p_dropout: 0.0,
                resblock: "1".into(),
                resblock_kernel_sizes: vec![3, 7, 11],
                resblock_dilation_sizes: vec![vec![1, 3, 5]; 3],
                upsample_rates: rates,
                upsample_initial_channel: 512,
                upsample_kernel_sizes: kernels,
                spk_embed_dim: 109,
                gin_channels: 256,
                sr: sample_rate,
            },
            discriminator_width: DiscriminatorWidth::RVC,
            version: version.to_string(),
            embedder: Embedder::Contentvec,
        })
    }

    /// This configuration with another model (smaller ones train in tests): its generator must
    /// take this configuration's spectrograms at its rate and upsample one hop per frame; the
    /// training slice becomes its `segment_size` frames.
    pub fn with_model(mut self, model: ModelConfig) -> Result<TrainingConfig> {
        self.discriminator_width = model.discriminator_divisor;
        self.with_generator(model.generator)
    }

    fn with_generator(mut self, model: SynthesizerConfig) -> Result<TrainingConfig> {
        let bins = self.data.n_fft / 2 + 1;
        if model.sr != self.data.sampling_rate || model.spec_channels != bins {
            bail!(
                "the generator's configuration is for {} Hz and {} spectrogram bins; this \
                 training runs at {} Hz with {bins}",
                model.sr,
                model.spec_channels,
                self.data.sampling_rate
            );
        }
        if model.hop() != self.data.hop_length {
            bail!(
                "the generator upsamples {} samples per frame; this training needs {}",
                model.hop(),
                self.data.hop_length
            );
        }
        // The slice's mel spectrogram reflect-pads it by this much on each side.
        let padding = (self.data.n_fft - self.data.hop_length) / 2;
        if model.segment_size * self.data.hop_length <= padding {
            bail!(
                "a slice of {} frames is too short for the {}-point spectrogram: use {} or more",
                model.segment_size,
                self.data.n_fft,
                padding / self.data.hop_length + 1
            );
        }
        self.train.segment_size = model.segment_size * self.data.hop_length;
        self.model = model;
        Ok(self)
    }

    /// Spectrogram frames per training slice.
    pub fn segment_frames(&self) -> i64 {
        self.train.segment_size / self.data.hop_length
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rvc_configuration_upsamples_one_hop_per_frame() {
        for version in ["v1", "v2"] {
            for rate in [32000, 40000, 48000] {
                let config = TrainingConfig::rvc(version, rate).unwrap();
                let upsampling: i64 = config.model.upsample_rates.iter().product();
                assert_eq!(upsampling, config.data.hop_length, "{version} {rate}");
                assert_eq!(config.model.hop(), config.data.hop_length);
                assert_eq!(config.train.segment_size % config.data.hop_length, 0);
            }
        }
        assert!(TrainingConfig::rvc("v3", 40000).is_err());
        assert!(TrainingConfig::rvc("v2", 44100).is_err());
    }

    #[test]
    fn a_model_config_is_a_generator_config_with_an_optional_discriminator_divisor() {
        let config = TrainingConfig::rvc("v1", 40000).unwrap();
        let mut generator = serde_json::to_value(&config.model).unwrap();
        let plain: ModelConfig = serde_json::from_value(generator.clone()).unwrap();
        assert_eq!(plain.discriminator_divisor, DiscriminatorWidth::RVC);
        assert_eq!(plain.generator, config.model);

        generator["discriminator_divisor"] = 16.into();
        let narrow: ModelConfig = serde_json::from_value(generator.clone()).unwrap();
        let narrowed = config.with_model(narrow).unwrap();
        assert_eq!(narrowed.discriminator_width.divisor(), 16);

        generator["discriminator_divisor"] = 3.into();
        let err = serde_json::from_value::<ModelConfig>(generator).unwrap_err();
        assert!(err.to_string().contains("use 1, 2, 4, 8 or 16"), "{err}");
    }

    #[test]
    fn another_generator_must_fit_the_rate_and_sets_the_slice() {
        let config = TrainingConfig::rvc("v1", 40000).unwrap();
        let mut small = config.model.clone();
        small.hidden_channels = 8;
        small.segment_size = 4;
        let smaller = config.clone().with_generator(small.clone()).unwrap();
        assert_eq!(smaller.train.segment_size, 1600);
        assert_eq!(smaller.model.hidden_channels, 8);

        let at_32k = TrainingConfig::rvc("v1", 32000).unwrap().model;
        let err = config.clone().with_generator(at_32k).unwrap_err();
        assert!(err.to_string().contains("32000 Hz"), "{err}");
        small.segment_size = 2;
        let err = config.clone().with_generator(small.clone()).unwrap_err();
        assert!(err.to_string().contains("use 3 or more"), "{err}");
        small.upsample_rates = vec![10, 10, 2];
        let err = config.with_generator(small).unwrap_err();
        assert!(
            err.to_string().contains("upsamples 200 samples per frame"),
            "{err}"
        );
    }
}
