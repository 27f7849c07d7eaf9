//! Vocal separation with BS-RoFormer, Mel-Band RoFormer, MDX23C and SCNet models in the format of
//! ZFTurbo/Music-Source-Separation-Training: a `.ckpt` state dict plus its YAML config, run over
//! a track by chunked overlap-add, whole or streamed block by block (`utils/model_utils.py`
//! `demix`, and the optional `inference.normalize` of `inference.py`). The architecture comes
//! from the config's keys and the checkpoint's tensor names (`architecture.rs`), which must agree.

mod architecture;
mod bands;
mod bs_roformer;
pub mod config;
pub mod demix;
pub mod mdx23c;
mod mel_band_roformer;
mod params;
pub mod roformer;
pub mod scnet;
mod stft;
mod stream;
mod task;
mod transformer;

use std::path::Path;

use anyhow::{Context, Result, bail, ensure};
use tch::{Device, Kind, Tensor};

pub use architecture::{ModelType, Network, SeparationConfig};
pub use config::Config;
pub use demix::{DemixOptions, Demixer, demix};
pub use mdx23c::{Mdx23c, Mdx23cConfig};
pub use roformer::{Roformer, RoformerKind, load_state_dict, to_model_weights};
pub use scnet::{Scnet, ScnetConfig};
pub use stream::{MixStats, Separated, SeparationStream};
pub use task::VoiceTask;

/// A separation network with its config, ready to separate whole tracks.
pub struct Separator {
    model: Network,
    config: SeparationConfig,
    stems: Vec<String>,
}

impl Separator {
    /// Loads on the CPU in float32. `kind`: the upstream model type, or None to tell it from the
    /// checkpoint; either way the config must be of that architecture.
    pub fn load(checkpoint: &Path, config: &Path, kind: Option<ModelType>) -> Result<Self> {
        Self::load_on(checkpoint, config, kind, Device::Cpu, Kind::Float)
    }

    /// Loads with the weights on `device` in `weight_kind` (the STFTs stay in float32).
    pub fn load_on(
        checkpoint: &Path,
        config_path: &Path,
        kind: Option<ModelType>,
        device: Device,
        weight_kind: Kind,
    ) -> Result<Self> {
        let config = SeparationConfig::from_path(config_path)?;
        let weights = to_model_weights(&load_state_dict(checkpoint)?, device, weight_kind);
        let kind = match kind {
            Some(kind) => kind,
            None => ModelType::detect(&weights)?,
        };
        let model = Network::load(kind, &config, &weights, config_path)?;
        let stems = config
            .stems()
            .with_context(|| config_path.display().to_string())?;
        ensure!(
            stems.len() as i64 == model.num_stems(),
            "{} names {} stem(s) ({}), but {} estimates {}",
            config_path.display(),
            stems.len(),
            stems.join(", "),
            checkpoint.display(),
            model.num_stems()
        );
        Ok(Self {
            model,
            config,
            stems,
        })
    }

    /// The loaded network.
    pub fn model(&self) -> &Network {
        &self.model
    }

    /// The YAML config it was loaded with.
    pub fn config(&self) -> &SeparationConfig {
        &self.config
    }

    /// The stems `demix` returns, in order.
    pub fn stems(&self) -> &[String] {
        &self.stems
    }

    /// The rate the model expects its input at.
    pub fn sample_rate(&self) -> i64 {
        self.config.sample_rate()
    }

    /// Separates `mix` `[channels, samples]` at `sample_rate()` into `[stems, channels, samples]`.
    /// A mono mix goes through a stereo model as two equal channels and comes back as their
    /// mean; the channels of a multichannel mix go through a mono model one by one.
    /// `progress(done_chunks, total_chunks)`: returning false cancels with an error.
    pub fn demix(
        &self,
        mix: &Tensor,
        mut progress: impl FnMut(usize, usize) -> bool,
    ) -> Result<Tensor> {
        let size = mix.size();
        let [channels, length] = size[..] else {
            bail!("the mix must be [channels, samples], got {size:?}")
        };
        let mix = mix.to_device(Device::Cpu).to_kind(Kind::Float);
        let mut stream = self.stream(channels, Some(length), self.normalization(&mix))?;
        let mut parts = Vec::new();
        parts.extend(stream.push(&mix, &mut progress)?);
        parts.extend(stream.finish(&mut progress)?);
        let stems: Vec<Tensor> = parts.into_iter().map(|part| part.stems).collect();
        Ok(Tensor::cat(&stems, 2))
    }

    /// Where the voice is among `stems()`: the vocals, or for a karaoke model the lead vocal,
    /// for a de-reverb model the dry voice ([`VoiceTask`]).
    pub fn vocals_index(&self) -> Result<usize> {
        VoiceTask::of_stems(&self.stems)
            .map(|(_, index)| index)
            .with_context(|| {
                format!(
                    "this model separates {}, and none of them is a voice (vocals, karaoke or \
                     noreverb)",
                    self.stems.join(", ")
                )
            })
    }

    /// The voice of `mix` `[channels, samples]` ([`Separator::vocals_index`]), as
    /// `[channels, samples]`.
    pub fn vocals(
        &self,
        mix: &Tensor,
        progress: impl FnMut(usize, usize) -> bool,
    ) -> Result<Tensor> {
        let index = self.vocals_index()?;
        Ok(self.demix(mix, progress)?.get(index as i64))
    }
}

/// The accompaniment: the mix less the vocals separated from it (same shapes).
pub fn instrumental(mix: &Tensor, vocals: &Tensor) -> Result<Tensor> {
    ensure!(
        mix.size() == vocals.size(),
        "mix {:?} and vocals {:?} differ in shape",
        mix.size(),
        vocals.size()
    );
    Ok(mix.to_kind(Kind::Float) - vocals.to_kind(Kind::Float))
}
