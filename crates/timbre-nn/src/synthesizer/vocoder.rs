//! Which decoder a voice's audio comes from: RVC's HiFi-GAN (NSF), or one of the two IAHispano/
//! Applio trains beside it (`rvc/lib/algorithm/synthesizers.py` chooses by the `vocoder` entry).
//! The weights decide, since only they say what can run; the entry must name one of these.

use std::fmt;

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

use crate::weights::Weights;

/// A voice's decoder.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Vocoder {
    /// RVC's `GeneratorNSF` / `Generator` (Applio's `HiFiGANNSFGenerator` / `HiFiGANGenerator`).
    #[default]
    #[serde(rename = "HiFi-GAN")]
    HifiGan,
    /// Applio's `HiFiGANMRFGenerator`: the same stages under other names, nine harmonics.
    #[serde(rename = "MRF HiFi-GAN")]
    MrfHifiGan,
    /// Applio's `RefineGANGenerator`: pitch downsampled beside the latent, linear upsampling.
    #[serde(rename = "RefineGAN")]
    RefineGan,
}

impl Vocoder {
    /// Every vocoder, in Applio's order.
    pub const ALL: [Vocoder; 3] = [Self::HifiGan, Self::MrfHifiGan, Self::RefineGan];

    /// Applio's name for it, as its `vocoder` entry and its Train page write it.
    pub fn name(self) -> &'static str {
        match self {
            Self::HifiGan => "HiFi-GAN",
            Self::MrfHifiGan => "MRF HiFi-GAN",
            Self::RefineGan => "RefineGAN",
        }
    }

    /// The vocoder an entry names, spelled as Applio writes it or loosely ("mrf-hifigan"), or
    /// Vietnamese-RVC's `Default`, its HiFi-GAN (NSF with pitch, plain without).
    pub fn from_entry(entry: &str) -> Option<Self> {
        let letters = |text: &str| -> String {
            text.chars()
                .filter(char::is_ascii_alphanumeric)
                .map(|c| c.to_ascii_lowercase())
                .collect()
        };
        if letters(entry) == "default" {
            return Some(Self::HifiGan);
        }
        Self::ALL
            .into_iter()
            .find(|vocoder| letters(vocoder.name()) == letters(entry))
    }

    /// The decoder `w`'s `dec.*` tensors are the weights of.
    pub fn of_weights(w: &Weights) -> Result<Self> {
        let has = |prefix: &str| w.names().any(|n| n.starts_with(prefix));
        Ok(if has("dec.upsample_conv_blocks.") {
            Self::RefineGan
        } else if has("dec.mrfs.") {
            Self::MrfHifiGan
        } else if has("dec.resblocks.") {
            Self::HifiGan
        } else {
            bail!(
                "{}: the decoder's weights (dec.*) are none of HiFi-GAN's, MRF HiFi-GAN's or RefineGAN's",
                w.source().display()
            )
        })
    }
}

impl fmt::Display for Vocoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_name_vocoders_however_they_are_spelled() {
        assert_eq!(Vocoder::from_entry("HiFi-GAN"), Some(Vocoder::HifiGan));
        assert_eq!(Vocoder::from_entry("hifigan"), Some(Vocoder::HifiGan));
        assert_eq!(
            Vocoder::from_entry("MRF HiFi-GAN"),
            Some(Vocoder::MrfHifiGan)
        );
        assert_eq!(
            Vocoder::from_entry("mrf-hifigan"),
            Some(Vocoder::MrfHifiGan)
        );
        assert_eq!(Vocoder::from_entry("RefineGAN"), Some(Vocoder::RefineGan));
        assert_eq!(Vocoder::from_entry("Default"), Some(Vocoder::HifiGan));
        assert_eq!(Vocoder::from_entry("BigVGAN"), None);
        for vocoder in Vocoder::ALL {
            let json = serde_json::to_string(&vocoder).unwrap();
            assert_eq!(json, format!("\"{}\"", vocoder.name()));
        }
    }
}
