//! HuBERT's layers as one value, so a model can hold them twice: in its own kind and, on CUDA,
//! cast whole to float16 for conversions under fp16 autocast. The reference (RVC) runs HuBERT
//! as a whole-model `.half()`; run under autocast instead, every layer norm and attention
//! softmax casts its input to float32 and back, which made HuBERT the one stage slower than the
//! reference on a GPU (docs/PERFORMANCE.md). In float16 with autocast off there are no casts
//! past the input's.

use anyhow::Result;
use tch::{Kind, Tensor};

use super::HubertConfig;
use super::encoder::{Encoder, FeatureEncoder, FeatureProjection, linear};
use crate::layers::Linear;
use crate::weights::Weights;

pub(super) struct Network {
    feature_encoder: FeatureEncoder,
    feature_projection: FeatureProjection,
    encoder: Encoder,
    pub(super) final_proj: Option<Linear>,
}

impl Network {
    pub(super) fn build(weights: &Weights, config: &HubertConfig) -> Result<Self> {
        let final_proj = match weights.contains("final_proj.weight") {
            true => Some(linear(
                weights,
                "final_proj",
                config.hidden_size,
                config.classifier_proj_size,
            )?),
            false => None,
        };
        Ok(Self {
            feature_encoder: FeatureEncoder::load(weights, config)?,
            feature_projection: FeatureProjection::load(weights, config)?,
            encoder: Encoder::load(weights, config)?,
            final_proj,
        })
    }

    /// The same layers in `kind`, from the tensors `weights` shares with them.
    pub(super) fn cast(weights: &Weights, config: &HubertConfig, kind: Kind) -> Result<Self> {
        let tensors = weights
            .names()
            .map(|name| {
                let tensor = weights.get_opt(name).expect("a listed name");
                let tensor = match tensor.is_floating_point() {
                    true => tensor.to_kind(kind),
                    false => tensor,
                };
                (name.to_string(), tensor)
            })
            .collect();
        Self::build(&Weights::new(tensors, weights.source()), config)
    }

    /// The output of encoder layer `layer` for audio `[batch, samples]` in the layers' kind.
    pub(super) fn hidden_states_at(&self, audio: &Tensor, normalize: bool, layer: usize) -> Tensor {
        let samples = audio.size()[1];
        let audio = match normalize {
            true => audio.layer_norm([samples], None::<Tensor>, None::<Tensor>, 1e-5, true),
            false => audio.shallow_clone(),
        };
        let features = self.feature_encoder.forward(&audio).transpose(1, 2);
        let hidden = self.feature_projection.forward(&features);
        self.encoder.forward_to(&hidden, layer)
    }
}
