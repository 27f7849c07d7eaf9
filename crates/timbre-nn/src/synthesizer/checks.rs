//! The checks a voice model passes before it enters the library: the network is built from the
//! file on the CPU (every tensor the config implies present, with its shape), every layer that
//! has a bias in RVC has one here, and no weight is NaN or infinite. A model that passes them
//! converts; one that fails is named with the tensor at fault.

use std::path::Path;

use anyhow::{Result, bail};
use tch::Device;

use super::{ModelInfo, Synthesizer, Vocoder, check_supported, model_weights};
use crate::checkpoint;
use crate::weights::{WEIGHT_NORM_NAMES, Weights};

/// The layers of RVC's synthesizers built without a bias: the two embeddings and the
/// generator's last convolution (`bias=False` in `models.py` and in Applio's HiFi-GAN).
const LAYERS_WITHOUT_BIAS: [&str; 3] = ["emb_g", "enc_p.emb_pitch", "dec.conv_post"];

/// Whether RefineGAN builds `layer` without a bias: its source's merge (`Linear(bias=False)`)
/// and its AdaIN scales (`upsample_conv_blocks.i.blocks.j.0` and `.2`, a bare weight each).
fn refinegan_layer_without_bias(layer: &str) -> bool {
    let parts: Vec<&str> = layer.split('.').collect();
    layer == "dec.m_source.merge.0"
        || matches!(
            parts.as_slice(),
            ["dec", "upsample_conv_blocks", _, "blocks", _, "0" | "2"]
        )
}

/// Reads and fully checks an RVC inference `.pth`, as import does; the description on success.
pub fn check_model(path: &Path) -> Result<ModelInfo> {
    let root = checkpoint::read_torch_file(path)?;
    let weights = model_weights(&root, path)?;
    check_supported(&root, &weights)?;
    check_finite(&weights)?;
    check_biases(&weights, Vocoder::of_weights(&weights)?)?;
    Ok(Synthesizer::from_checkpoint(&root, path, Device::Cpu)?.info)
}

/// Refuses NaN and infinite weights, which convert to silence or noise without any error.
fn check_finite(weights: &Weights) -> Result<()> {
    let mut names: Vec<&str> = weights.names().collect();
    names.sort_unstable();
    let mut broken = Vec::new();
    for name in names {
        let tensor = weights.get(name)?;
        if tensor.is_floating_point() && !bool::try_from(tensor.isfinite().all())? {
            broken.push(name);
        }
    }
    match broken.as_slice() {
        [] => Ok(()),
        [first, others @ ..] => bail!(
            "{}: tensor `{first}`{} holds NaN or infinite weights: the model is broken (its training diverged?) and would convert to silence or noise",
            weights.source().display(),
            match others.len() {
                0 => String::new(),
                n => format!(" (and {n} more)"),
            }
        ),
    }
}

/// The loaders take a missing bias as a layer without one; in RVC only `LAYERS_WITHOUT_BIAS`
/// have none (and RefineGAN's own), so any other layer's missing bias is a damaged file.
fn check_biases(weights: &Weights, vocoder: Vocoder) -> Result<()> {
    let weight_suffixes =
        std::iter::once("weight").chain(WEIGHT_NORM_NAMES.iter().map(|(_, v)| *v));
    let mut layers: Vec<&str> = weights
        .names()
        .filter_map(|name| {
            weight_suffixes
                .clone()
                .find_map(|suffix| name.strip_suffix(suffix)?.strip_suffix('.'))
        })
        .filter(|layer| !LAYERS_WITHOUT_BIAS.contains(layer))
        .filter(|layer| vocoder != Vocoder::RefineGan || !refinegan_layer_without_bias(layer))
        .collect();
    layers.sort_unstable();
    match layers
        .iter()
        .find(|layer| !weights.contains(&format!("{layer}.bias")))
    {
        Some(layer) => bail!(
            "{}: tensor `{layer}.bias` is missing: not a complete RVC voice model",
            weights.source().display()
        ),
        None => Ok(()),
    }
}
