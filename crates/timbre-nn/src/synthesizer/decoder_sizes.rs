//! The decoder's part of the effective config: what each vocoder's weights say about the sizes
//! the `config` list states, and which of them must agree.

use anyhow::{Result, bail};

use super::config::SynthesizerConfig;
use super::generator::Layout;
use super::refinegan;
use super::shapes::{layer_count, weight_shape};
use super::vocoder::Vocoder;
use crate::weights::Weights;

/// Replaces the decoder sizes of `config` the weights of `vocoder` determine (noting where the
/// file stated others in `mismatches`) and checks those only the config knows.
pub(super) fn read(
    config: &mut SynthesizerConfig,
    w: &Weights,
    vocoder: Vocoder,
    mismatches: &mut Vec<String>,
) -> Result<()> {
    let layout = Layout::of(vocoder);
    // RefineGAN's latent joins the pitch path at half the initial channels.
    let initial_channels = match layout {
        Some(_) => weight_shape(w, "dec.conv_pre", 3)?[0],
        None => 2 * weight_shape(w, "dec.mel_conv", 3)?[0],
    };
    take(
        mismatches,
        "upsample_initial_channel",
        &mut config.upsample_initial_channel,
        initial_channels,
    );
    match layout {
        Some(layout) => hifigan(config, w, layout, mismatches),
        None => refinegan(config, w, mismatches),
    }
}

fn take(mismatches: &mut Vec<String>, name: &str, field: &mut i64, from_weights: i64) {
    if *field != from_weights {
        mismatches.push(format!("{name}: config {}, weights {from_weights}", *field));
        *field = from_weights;
    }
}

fn take_list<T: PartialEq + std::fmt::Debug>(
    mismatches: &mut Vec<String>,
    name: &str,
    field: &mut T,
    from_weights: T,
) {
    if *field != from_weights {
        mismatches.push(format!(
            "{name}: config {field:?}, weights {from_weights:?}"
        ));
        *field = from_weights;
    }
}

fn hifigan(
    config: &mut SynthesizerConfig,
    w: &Weights,
    layout: Layout,
    mismatches: &mut Vec<String>,
) -> Result<()> {
    let source = w.source().display();
    let ups = layout.stages(w)?;
    if ups == 0 || ups != config.upsample_rates.len() {
        bail!(
            "{source}: {} upsampling rates in the config for {ups} upsampling layers in the weights",
            config.upsample_rates.len()
        );
    }
    let up_kernels = (0..ups)
        .map(|i| Ok(weight_shape(w, &layout.upsample(i), 3)?[2]))
        .collect::<Result<Vec<_>>>()?;
    if config
        .upsample_rates
        .iter()
        .zip(&up_kernels)
        .any(|(&rate, &kernel)| rate <= 0 || rate > kernel)
    {
        bail!(
            "{source}: upsampling rates {:?} must be positive and no longer than the kernels {up_kernels:?}",
            config.upsample_rates
        );
    }
    take_list(
        mismatches,
        "upsample_kernel_sizes",
        &mut config.upsample_kernel_sizes,
        up_kernels,
    );

    let per_stage = layout.blocks_per_stage(w, ups)?;
    let kind = layout.resblock_kind(w);
    if config.resblock != kind {
        mismatches.push(format!(
            "resblock: config {:?}, weights {kind:?}",
            config.resblock
        ));
        config.resblock = kind.to_string();
    }
    let first_conv = |j: usize| {
        let block = layout.block(0, j, per_stage);
        if kind == "1" {
            layout.pair(&block, 0).0
        } else {
            format!("{block}.convs.0")
        }
    };
    let block_kernels = (0..per_stage)
        .map(|j| Ok(weight_shape(w, &first_conv(j), 3)?[2]))
        .collect::<Result<Vec<_>>>()?;
    take_list(
        mismatches,
        "resblock_kernel_sizes",
        &mut config.resblock_kernel_sizes,
        block_kernels,
    );
    let steps = layout.steps(w, &layout.block(0, 0, per_stage), kind)?;
    let dilations_fit = config.resblock_dilation_sizes.len() == per_stage
        && config
            .resblock_dilation_sizes
            .iter()
            .all(|d| d.len() == steps && d.iter().all(|&d| d > 0));
    if !dilations_fit {
        bail!(
            "{source}: resblock_dilation_sizes {:?} do not fit {per_stage} residual blocks per stage of {steps} convolutions",
            config.resblock_dilation_sizes
        );
    }
    Ok(())
}

/// RefineGAN takes from the config only the upsampling rates (its stages' factors, reversed for
/// the pitch path's); its channels come from the weights and its residual blocks' dilations are
/// fixed in Applio's code.
fn refinegan(
    config: &mut SynthesizerConfig,
    w: &Weights,
    mismatches: &mut Vec<String>,
) -> Result<()> {
    let source = w.source().display();
    let stages = layer_count(w, "dec.upsample_conv_blocks")?;
    let downsamples = layer_count(w, "dec.downsample_blocks")?;
    if stages == 0 || stages != downsamples || stages != config.upsample_rates.len() {
        bail!(
            "{source}: {} upsampling rates in the config for RefineGAN's {stages} upsampling and {downsamples} downsampling blocks",
            config.upsample_rates.len()
        );
    }
    if config.upsample_rates.iter().any(|&rate| rate <= 0) {
        bail!(
            "{source}: upsampling rates {:?} must be positive",
            config.upsample_rates
        );
    }
    let blocks = "dec.upsample_conv_blocks.0.blocks";
    let kernels = (0..layer_count(w, blocks)?)
        .map(|j| Ok(weight_shape(w, &format!("{blocks}.{j}.1.convs1.0"), 3)?[2]))
        .collect::<Result<Vec<_>>>()?;
    let dilations = vec![refinegan::DILATIONS.to_vec(); kernels.len()];
    take_list(
        mismatches,
        "resblock_kernel_sizes",
        &mut config.resblock_kernel_sizes,
        kernels,
    );
    take_list(
        mismatches,
        "resblock_dilation_sizes",
        &mut config.resblock_dilation_sizes,
        dilations,
    );
    Ok(())
}
