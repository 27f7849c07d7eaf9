//! fairseq HuBERT checkpoints (facebookresearch/fairseq `fairseq/models/hubert/hubert.py`,
//! `fairseq/models/wav2vec/wav2vec2.py`): settings from `cfg.model` or `args`, tensors renamed
//! to transformers' names so one set of layers loads both.

use std::path::Path;

use anyhow::{Result, bail};

use super::Parts;
use super::config::{HubertConfig, StatedConfig, config_field};
use crate::checkpoint::{Value, weights_from_dict};
use crate::weights::Weights;

/// What a fairseq checkpoint read from `source` holds; names what the file is when it is another
/// kind of model.
pub(super) fn fairseq_parts(checkpoint: &Value, source: &Path) -> Result<Parts> {
    let shown = source.display();
    let Some(model) = checkpoint.get("model") else {
        if checkpoint.get("weight").is_some() && checkpoint.get("config").is_some() {
            bail!("{shown}: this is an RVC voice model, not a HuBERT/ContentVec feature extractor");
        }
        let names = checkpoint
            .as_dict()
            .unwrap_or_default()
            .iter()
            .filter_map(|(k, _)| k.as_str());
        if names.clone().any(|name| name.starts_with("unet.encoder.")) {
            bail!(
                "{shown}: this is an RMVPE pitch model, not a HuBERT/ContentVec feature extractor"
            );
        }
        if checkpoint
            .get("feature_extractor.conv_layers.0.conv.weight")
            .is_some()
        {
            bail!(
                "{shown}: a transformers HuBERT state dict: load the folder with its config.json instead"
            );
        }
        bail!(
            "{shown}: not a HuBERT/ContentVec feature extractor: expected a fairseq checkpoint (a dict with `model` and `cfg` or `args`) or a transformers folder"
        );
    };
    let weights = rename_fairseq(&weights_from_dict(model, source)?);
    let present = |v: &&Value| !matches!(v, Value::None);
    let model_cfg = checkpoint
        .get("cfg")
        .and_then(|cfg| config_field(cfg, "model"))
        .filter(present);
    let stated = match model_cfg.or_else(|| checkpoint.get("args").filter(present)) {
        Some(settings) => StatedConfig::from_fairseq(settings, source)?,
        None => StatedConfig {
            config: HubertConfig::default(),
            stated: Default::default(),
        },
    };
    let config = stated.settle(&weights, source)?;
    let task_normalize = checkpoint
        .get("cfg")
        .and_then(|cfg| config_field(cfg, "task"))
        .and_then(|t| config_field(t, "normalize"));
    let normalize = task_normalize.or_else(|| {
        checkpoint
            .get("args")
            .and_then(|a| config_field(a, "normalize"))
    });
    Ok(Parts {
        config,
        normalize_input: normalize.and_then(Value::as_i64).unwrap_or(0) != 0,
        weights,
    })
}

/// fairseq's tensors under transformers' names (pretraining-only tensors such as `mask_emb`
/// and `label_embs_concat` are left out).
fn rename_fairseq(weights: &Weights) -> Weights {
    let tensors = weights
        .names()
        .filter_map(|name| Some((transformers_name(name)?, weights.get_opt(name)?)))
        .collect();
    Weights::new(tensors, weights.source())
}

fn transformers_name(fairseq: &str) -> Option<String> {
    if let Some(rest) = fairseq.strip_prefix("feature_extractor.conv_layers.") {
        // Each block is Sequential(conv, dropout, norm, GELU); a layer norm sits inside
        // Sequential(TransposeLast, LayerNorm, TransposeLast).
        let (index, rest) = rest.split_once('.')?;
        let (module, param) = rest.rsplit_once('.')?;
        let module = match module {
            "0" => "conv",
            "2" | "2.1" => "layer_norm",
            _ => return None,
        };
        return Some(format!(
            "feature_extractor.conv_layers.{index}.{module}.{param}"
        ));
    }
    if let Some(rest) = fairseq.strip_prefix("encoder.layers.") {
        let (index, rest) = rest.split_once('.')?;
        let (module, param) = rest.rsplit_once('.')?;
        let module = match module {
            "self_attn.q_proj" => "attention.q_proj",
            "self_attn.k_proj" => "attention.k_proj",
            "self_attn.v_proj" => "attention.v_proj",
            "self_attn.out_proj" => "attention.out_proj",
            "self_attn_layer_norm" => "layer_norm",
            "fc1" => "feed_forward.intermediate_dense",
            "fc2" => "feed_forward.output_dense",
            "final_layer_norm" => "final_layer_norm",
            _ => return None,
        };
        return Some(format!("encoder.layers.{index}.{module}.{param}"));
    }
    let renames = [
        ("layer_norm.", "feature_projection.layer_norm."),
        ("post_extract_proj.", "feature_projection.projection."),
        ("encoder.pos_conv.0.", "encoder.pos_conv_embed.conv."),
        ("encoder.layer_norm.", "encoder.layer_norm."),
        ("final_proj.", "final_proj."),
    ];
    renames.iter().find_map(|(from, to)| {
        fairseq
            .strip_prefix(from)
            .map(|param| format!("{to}{param}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_fairseq_names_of_both_extractor_modes() {
        let cases = [
            (
                "feature_extractor.conv_layers.0.2.bias",
                Some("feature_extractor.conv_layers.0.layer_norm.bias"),
            ),
            (
                "feature_extractor.conv_layers.4.2.1.weight",
                Some("feature_extractor.conv_layers.4.layer_norm.weight"),
            ),
            (
                "feature_extractor.conv_layers.4.0.bias",
                Some("feature_extractor.conv_layers.4.conv.bias"),
            ),
            (
                "encoder.layers.11.self_attn.out_proj.weight",
                Some("encoder.layers.11.attention.out_proj.weight"),
            ),
            (
                "encoder.pos_conv.0.weight_g",
                Some("encoder.pos_conv_embed.conv.weight_g"),
            ),
            ("mask_emb", None),
            ("label_embs_concat", None),
        ];
        for (fairseq, expected) in cases {
            assert_eq!(transformers_name(fairseq).as_deref(), expected, "{fairseq}");
        }
    }
}
