//! The formats jobs write their audio in.

use serde::{Deserialize, Serialize};
use timbre_audio::SampleFormat;

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum OutputFormat {
    /// 16-bit WAV, as the reference writes.
    #[default]
    Wav16,
    Wav24,
    /// 32-bit float WAV.
    WavFloat,
    Flac,
}

impl OutputFormat {
    pub fn extension(self) -> &'static str {
        if self == OutputFormat::Flac {
            "flac"
        } else {
            "wav"
        }
    }

    /// The WAV sample format, or None for FLAC.
    pub fn wav_sample_format(self) -> Option<SampleFormat> {
        match self {
            OutputFormat::Wav16 => Some(SampleFormat::Int16),
            OutputFormat::Wav24 => Some(SampleFormat::Int24),
            OutputFormat::WavFloat => Some(SampleFormat::Float32),
            OutputFormat::Flac => None,
        }
    }
}

/// The names the CLI takes: `wav16`, `wav24`, `wav-float` (or `wav_float`) and `flac`.
impl std::str::FromStr for OutputFormat {
    type Err = anyhow::Error;

    fn from_str(name: &str) -> anyhow::Result<Self> {
        serde_json::from_value(serde_json::Value::String(name.replace('-', "_"))).map_err(|_| {
            crate::error::invalid_input(format!(
                "unknown output format {name:?}: use wav16, wav24, wav-float or flac"
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_parse_by_their_cli_names() {
        assert_eq!(
            "wav-float".parse::<OutputFormat>().unwrap(),
            OutputFormat::WavFloat
        );
        assert_eq!("flac".parse::<OutputFormat>().unwrap(), OutputFormat::Flac);
        assert_eq!(OutputFormat::Flac.wav_sample_format(), None);
        let err = "mp3".parse::<OutputFormat>().unwrap_err().to_string();
        assert!(err.contains("unknown output format \"mp3\""), "{err}");
    }
}
