//! The 18-item `config` list of an RVC inference `.pth` (the synthesizer's constructor
//! arguments, as RVC-Project/Retrieval-based-Voice-Conversion-WebUI and IAHispano/Applio write
//! it), and the config a model actually uses: sizes the weights determine come from the weights.

use anyhow::{Result, bail};
use serde::{Deserialize, Deserializer, Serialize};

use super::decoder_sizes;
use super::shapes::{layer_count, tensor_shape, weight_shape};
use super::vocoder::Vocoder;
use crate::checkpoint::Value;
use crate::weights::Weights;

/// The constructor arguments of the RVC synthesizers, in the order of the `config` list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SynthesizerConfig {
    /// Linear-spectrogram bins the posterior encoder takes (n_fft / 2 + 1, e.g. 1025).
    pub spec_channels: i64,
    /// Training slice length in feature frames (upstream `segment_size / hop_length`).
    pub segment_size: i64,
    /// Channels of the latent `z` between the encoders, the flow and the decoder.
    pub inter_channels: i64,
    /// Width of the prior (phone) encoder.
    pub hidden_channels: i64,
    /// Hidden width of the prior encoder's feed-forward layers.
    pub filter_channels: i64,
    /// Number of attention heads in the prior encoder.
    pub n_heads: i64,
    /// Number of attention layers in the prior encoder.
    pub n_layers: i64,
    /// Kernel size of the prior encoder's feed-forward convolutions.
    pub kernel_size: i64,
    /// Dropout of the prior encoder in training; unused at inference.
    pub p_dropout: f64,
    /// HiFi-GAN residual block type: "1" (`ResBlock1`) or "2" (`ResBlock2`).
    pub resblock: String,
    /// Kernel sizes of the decoder's parallel residual blocks, one block each per stage.
    pub resblock_kernel_sizes: Vec<i64>,
    /// Dilations of each residual block's convolutions, one list per `resblock_kernel_sizes` entry.
    pub resblock_dilation_sizes: Vec<Vec<i64>>,
    /// Upsampling factor of each decoder stage; their product is the hop in samples.
    pub upsample_rates: Vec<i64>,
    /// Channels after the decoder's first convolution, halved by each upsampling stage.
    pub upsample_initial_channel: i64,
    /// Kernel size of each decoder stage's transposed convolution.
    pub upsample_kernel_sizes: Vec<i64>,
    /// Number of speakers despite the upstream name: the rows of the speaker embedding `emb_g`.
    pub spk_embed_dim: i64,
    /// Width of the speaker embedding that conditions the decoder, flow and posterior encoder.
    pub gin_channels: i64,
    /// Hz; the files write it as 40000 or as "40k".
    #[serde(deserialize_with = "sample_rate_from_json")]
    pub sr: u32,
}

const FIELD_NAMES: [&str; 18] = [
    "spec_channels",
    "segment_size",
    "inter_channels",
    "hidden_channels",
    "filter_channels",
    "n_heads",
    "n_layers",
    "kernel_size",
    "p_dropout",
    "resblock",
    "resblock_kernel_sizes",
    "resblock_dilation_sizes",
    "upsample_rates",
    "upsample_initial_channel",
    "upsample_kernel_sizes",
    "spk_embed_dim",
    "gin_channels",
    "sr",
];

impl SynthesizerConfig {
    /// Parses the `config` list; errors name the item and what it holds.
    pub fn from_list(items: &[Value]) -> Result<Self> {
        if items.len() != FIELD_NAMES.len() {
            bail!("`config` has {} items; an RVC model's has 18", items.len());
        }
        let item = |i: usize| Item {
            value: &items[i],
            name: FIELD_NAMES[i],
            index: i,
        };
        Ok(Self {
            spec_channels: item(0).int()?,
            segment_size: item(1).int()?,
            inter_channels: item(2).int()?,
            hidden_channels: item(3).int()?,
            filter_channels: item(4).int()?,
            n_heads: item(5).int()?,
            n_layers: item(6).int()?,
            kernel_size: item(7).int()?,
            p_dropout: item(8).float()?,
            resblock: item(9).text_or_int()?,
            resblock_kernel_sizes: item(10).ints()?,
            resblock_dilation_sizes: item(11).int_lists()?,
            upsample_rates: item(12).ints()?,
            upsample_initial_channel: item(13).int()?,
            upsample_kernel_sizes: item(14).ints()?,
            spk_embed_dim: item(15).int()?,
            gin_channels: item(16).int()?,
            sr: item(17).sample_rate()?,
        })
    }

    /// Samples per feature frame: the product of the upsampling rates.
    pub fn hop(&self) -> i64 {
        self.upsample_rates.iter().product()
    }
}

struct Item<'a> {
    value: &'a Value,
    name: &'static str,
    index: usize,
}

impl Item<'_> {
    fn wrong(&self, expected: &str) -> anyhow::Error {
        anyhow::anyhow!(
            "`config` item {} ({}) is {:?}, expected {expected}",
            self.index,
            self.name,
            self.value
        )
    }

    fn int(&self) -> Result<i64> {
        self.value.as_i64().ok_or_else(|| self.wrong("an integer"))
    }

    fn float(&self) -> Result<f64> {
        self.value.as_f64().ok_or_else(|| self.wrong("a number"))
    }

    fn text_or_int(&self) -> Result<String> {
        match self.value {
            Value::Str(s) => Ok(s.clone()),
            Value::Int(i) => Ok(i.to_string()),
            _ => Err(self.wrong("\"1\" or \"2\"")),
        }
    }

    fn ints(&self) -> Result<Vec<i64>> {
        int_list(self.value).ok_or_else(|| self.wrong("a list of integers"))
    }

    fn int_lists(&self) -> Result<Vec<Vec<i64>>> {
        let lists = self
            .value
            .as_list()
            .ok_or_else(|| self.wrong("a list of lists of integers"))?;
        lists
            .iter()
            .map(|l| int_list(l).ok_or_else(|| self.wrong("a list of lists of integers")))
            .collect()
    }

    fn sample_rate(&self) -> Result<u32> {
        sample_rate_of(self.value)
            .ok_or_else(|| self.wrong("a sample rate such as 40000 or \"40k\""))
    }
}

fn int_list(value: &Value) -> Option<Vec<i64>> {
    value.as_list()?.iter().map(Value::as_i64).collect()
}

/// 40000, 40000.0, "40000", "40k" or "44.1k" → Hz.
pub fn parse_sample_rate(text: &str) -> Option<u32> {
    let text = text.trim().to_ascii_lowercase();
    let hz = match text.strip_suffix('k') {
        Some(khz) => khz.parse::<f64>().ok()? * 1000.0,
        None => text.parse::<f64>().ok()?,
    };
    let whole = hz.round();
    ((1.0..=1e6).contains(&whole) && (hz - whole).abs() < 1e-6).then_some(whole as u32)
}

fn sample_rate_of(value: &Value) -> Option<u32> {
    match value {
        Value::Str(s) => parse_sample_rate(s),
        other => parse_sample_rate(&other.as_f64()?.to_string()),
    }
}

fn sample_rate_from_json<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u32, D::Error> {
    let value = serde_json::Value::deserialize(deserializer)?;
    let parsed = match &value {
        serde_json::Value::String(s) => parse_sample_rate(s),
        serde_json::Value::Number(n) => {
            n.as_f64().and_then(|hz| parse_sample_rate(&hz.to_string()))
        }
        _ => None,
    };
    parsed.ok_or_else(|| {
        serde::de::Error::custom(format!(
            "sr {value} is not a sample rate such as 40000 or \"40k\""
        ))
    })
}

/// The stated config with every size the weights determine replaced by the weights' own;
/// sizes only the config knows (rates, dilations, sample rate) are checked for consistency.
pub(crate) fn effective_config(
    stated: &SynthesizerConfig,
    w: &Weights,
    vocoder: Vocoder,
    mismatches: &mut Vec<String>,
) -> Result<SynthesizerConfig> {
    let source = w.source().display().to_string();
    let mut config = stated.clone();
    let mut take = |name: &str, field: &mut i64, from_weights: i64| {
        if *field != from_weights {
            mismatches.push(format!("{name}: config {}, weights {from_weights}", *field));
            *field = from_weights;
        }
    };

    let phone = weight_shape(w, "enc_p.emb_phone", 2)?;
    take("hidden_channels", &mut config.hidden_channels, phone[0]);
    take(
        "inter_channels",
        &mut config.inter_channels,
        weight_shape(w, "enc_p.proj", 3)?[0] / 2,
    );
    let ffn = weight_shape(w, "enc_p.encoder.ffn_layers.0.conv_1", 3)?;
    take("filter_channels", &mut config.filter_channels, ffn[0]);
    take("kernel_size", &mut config.kernel_size, ffn[2]);
    take(
        "n_layers",
        &mut config.n_layers,
        layer_count(w, "enc_p.encoder.attn_layers")? as i64,
    );
    let head_channels = tensor_shape(w, "enc_p.encoder.attn_layers.0.emb_rel_k", 3)?[2];
    if head_channels <= 0 || phone[0] % head_channels != 0 {
        bail!(
            "{source}: attention heads of {head_channels} channels do not divide {} hidden channels",
            phone[0]
        );
    }
    take("n_heads", &mut config.n_heads, phone[0] / head_channels);
    let speakers = weight_shape(w, "emb_g", 2)?;
    take("spk_embed_dim", &mut config.spk_embed_dim, speakers[0]);
    take("gin_channels", &mut config.gin_channels, speakers[1]);
    decoder_sizes::read(&mut config, w, vocoder, mismatches)?;
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ints(values: &[i64]) -> Value {
        Value::List(values.iter().map(|&v| Value::Int(v)).collect())
    }

    fn config_list(sr: Value, resblock: Value, p_dropout: Value) -> Vec<Value> {
        vec![
            Value::Int(1025),
            Value::Int(32),
            Value::Int(192),
            Value::Int(192),
            Value::Int(768),
            Value::Int(2),
            Value::Int(6),
            Value::Int(3),
            p_dropout,
            resblock,
            ints(&[3, 7, 11]),
            Value::List(vec![ints(&[1, 3, 5]), ints(&[1, 3, 5]), ints(&[1, 3, 5])]),
            ints(&[10, 10, 2, 2]),
            Value::Int(512),
            ints(&[16, 16, 4, 4]),
            Value::Int(109),
            Value::Int(256),
            sr,
        ]
    }

    #[test]
    fn parses_the_list_with_either_sample_rate_spelling() {
        let numeric = SynthesizerConfig::from_list(&config_list(
            Value::Int(40000),
            Value::Str("1".into()),
            Value::Int(0),
        ))
        .unwrap();
        let spelled = SynthesizerConfig::from_list(&config_list(
            Value::Str("40k".into()),
            Value::Int(1),
            Value::Float(0.0),
        ))
        .unwrap();
        assert_eq!(numeric, spelled);
        assert_eq!(numeric.sr, 40000);
        assert_eq!(numeric.hop(), 400);
        assert_eq!(numeric.resblock_dilation_sizes[2], vec![1, 3, 5]);
    }

    #[test]
    fn sample_rates_in_every_spelling() {
        assert_eq!(parse_sample_rate("32k"), Some(32000));
        assert_eq!(parse_sample_rate("48K"), Some(48000));
        assert_eq!(parse_sample_rate("44.1k"), Some(44100));
        assert_eq!(parse_sample_rate("40000"), Some(40000));
        assert_eq!(parse_sample_rate("fast"), None);
        assert_eq!(parse_sample_rate("0"), None);
    }

    #[test]
    fn serde_reads_sr_as_text_or_number() {
        let config = SynthesizerConfig::from_list(&config_list(
            Value::Int(48000),
            Value::Str("2".into()),
            Value::Int(0),
        ))
        .unwrap();
        let mut json = serde_json::to_value(&config).unwrap();
        json["sr"] = serde_json::json!("32k");
        assert_eq!(
            serde_json::from_value::<SynthesizerConfig>(json.clone())
                .unwrap()
                .sr,
            32000
        );
        json["sr"] = serde_json::json!("loud");
        assert!(serde_json::from_value::<SynthesizerConfig>(json).is_err());
    }

    #[test]
    fn a_bad_item_is_named() {
        let mut list = config_list(Value::Int(40000), Value::Str("1".into()), Value::Int(0));
        list[12] = Value::Str("10,10".into());
        let message = SynthesizerConfig::from_list(&list).unwrap_err().to_string();
        assert!(message.contains("item 12 (upsample_rates)"), "{message}");
        let message = SynthesizerConfig::from_list(&list[..17])
            .unwrap_err()
            .to_string();
        assert!(message.contains("17 items"), "{message}");
    }
}
