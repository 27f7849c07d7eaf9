//! The content encoders a voice may have been trained on: RVC's contentvec (`hubert_base.pt`)
//! and those IAHispano/Applio trains on beside it (`rvc/lib/utils.py` `load_embedding`, every one
//! a transformers `HubertModel` with a `final_proj`). A voice's `embedder_model` entry names it;
//! the features it is converted with must be that encoder's.

use std::fmt;

use super::FeatureVersion;

/// The encoder a voice's content features come from; serde and the UI spell it as Applio's
/// `embedder_model` entry ([`Embedder::name`]).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize, ts_rs::TS,
)]
#[serde(rename_all = "kebab-case")]
pub enum Embedder {
    /// RVC's HuBERT base / ContentVec, the features of every RVC voice.
    #[default]
    Contentvec,
    /// Applio's `spin`.
    Spin,
    /// Applio's `spin-v2`.
    SpinV2,
    /// TencentGameMate's chinese-hubert-base, as Applio ships it.
    ChineseHubertBase,
    /// rinna's japanese-hubert-base, as Applio ships it.
    JapaneseHubertBase,
    /// team-lucid's korean hubert-base, as Applio ships it.
    KoreanHubertBase,
    /// A transformers HuBERT-family folder the Applio user picked, which the voice does not
    /// name: the library remembers the one chosen for the voice.
    Custom,
}

/// A voice's `embedder_model` entry that names no embedder this player knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownEmbedder(pub String);

impl std::fmt::Display for UnknownEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the voice's embedder {} is not one this player knows",
            self.0
        )
    }
}

impl std::error::Error for UnknownEmbedder {}

impl Embedder {
    /// Every embedder Applio names and ships, in its order (not `custom`).
    pub const ALL: [Embedder; 6] = [
        Self::Contentvec,
        Self::Spin,
        Self::SpinV2,
        Self::ChineseHubertBase,
        Self::JapaneseHubertBase,
        Self::KoreanHubertBase,
    ];

    /// Applio's name for it: the `embedder_model` entry it writes.
    pub fn name(self) -> &'static str {
        match self {
            Self::Contentvec => "contentvec",
            Self::Spin => "spin",
            Self::SpinV2 => "spin-v2",
            Self::ChineseHubertBase => "chinese-hubert-base",
            Self::JapaneseHubertBase => "japanese-hubert-base",
            Self::KoreanHubertBase => "korean-hubert-base",
            Self::Custom => "custom",
        }
    }

    /// Applio's folder for it under `rvc/models/embedders/` (and its download's under
    /// `Resources/embedders/`), which the models folder mirrors.
    pub fn folder(self) -> &'static str {
        match self {
            Self::Contentvec => "contentvec",
            Self::Spin => "spin",
            Self::SpinV2 => "spin-v2",
            Self::ChineseHubertBase => "chinese_hubert_base",
            Self::JapaneseHubertBase => "japanese_hubert_base",
            Self::KoreanHubertBase => "korean_hubert_base",
            Self::Custom => "embedders_custom",
        }
    }

    /// The embedder a voice's `embedder_model` entry names (none: contentvec, as for every RVC
    /// voice; `hubert_base` is RVC's name for contentvec); Err with the entry when it names one
    /// this player does not know (a fork's).
    pub fn of_entry(entry: Option<&str>) -> Result<Self, UnknownEmbedder> {
        let Some(entry) = entry.map(str::trim) else {
            return Ok(Self::Contentvec);
        };
        if entry.eq_ignore_ascii_case("hubert_base") {
            return Ok(Self::Contentvec);
        }
        if entry.eq_ignore_ascii_case("custom") {
            return Ok(Self::Custom);
        }
        Self::ALL
            .into_iter()
            .find(|e| {
                e.name().eq_ignore_ascii_case(entry) || e.folder().eq_ignore_ascii_case(entry)
            })
            .ok_or_else(|| UnknownEmbedder(entry.to_string()))
    }

    /// The features a voice of this embedder whose `emb_phone` takes `feature_dim` wide ones
    /// was trained on. v1 voices of contentvec come from RVC (layer 9); those of the others only
    /// from Applio, whose v1 projects the last layer.
    pub fn feature_version(self, feature_dim: i64) -> FeatureVersion {
        match (FeatureVersion::of_voice(feature_dim), self) {
            (FeatureVersion::V1, Self::Contentvec) => FeatureVersion::V1,
            (FeatureVersion::V1, _) => FeatureVersion::V1LastLayer,
            (version, _) => version,
        }
    }
}

impl fmt::Display for Embedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_name_embedders_and_unknown_ones_are_returned() {
        assert_eq!(Embedder::of_entry(None), Ok(Embedder::Contentvec));
        assert_eq!(
            Embedder::of_entry(Some("hubert_base")),
            Ok(Embedder::Contentvec)
        );
        assert_eq!(
            Embedder::of_entry(Some("ContentVec")),
            Ok(Embedder::Contentvec)
        );
        assert_eq!(Embedder::of_entry(Some("spin-v2")), Ok(Embedder::SpinV2));
        assert_eq!(
            Embedder::of_entry(Some("japanese_hubert_base")),
            Ok(Embedder::JapaneseHubertBase)
        );
        assert_eq!(Embedder::of_entry(Some("custom")), Ok(Embedder::Custom));
        assert_eq!(
            Embedder::of_entry(Some("whisper")),
            Err(UnknownEmbedder("whisper".to_string()))
        );
    }

    #[test]
    fn only_contentvec_v1_voices_take_layer_9() {
        assert_eq!(
            Embedder::Contentvec.feature_version(256),
            FeatureVersion::V1
        );
        assert_eq!(
            Embedder::Spin.feature_version(256),
            FeatureVersion::V1LastLayer
        );
        assert_eq!(Embedder::Spin.feature_version(768), FeatureVersion::V2);
    }
}
