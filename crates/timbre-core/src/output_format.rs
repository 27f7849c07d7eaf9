//! The formats jobs write their audio in.

use serde::{Deserialize, Serialize};
use timbre_audio::SampleFormat;
use timbre_audio::export::Codec;

/// The file format (and encoding) a job writes its audio in; 16-bit WAV by default.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum OutputFormat {
    /// 16-bit WAV, as the reference writes.
    #[default]
    Wav16,
    /// 24-bit integer WAV.
    Wav24,
    /// 32-bit float WAV.
    WavFloat,
    /// 16-bit FLAC.
    Flac,
    /// 192 kbit/s.
    Mp3,
    /// Ogg Vorbis, quality 6.
    Vorbis,
    /// Ogg Opus, 128 kbit/s at 48 kHz.
    Opus,
}

/// The names the CLI takes, as it lists them.
const NAMES: &str = "wav16, wav24, wav-float, flac, mp3, vorbis or opus";

impl OutputFormat {
    /// The file extension, without the dot: `wav`, `flac`, `mp3`, `ogg` or `opus`.
    pub fn extension(self) -> &'static str {
        self.codec().extension()
    }

    /// The WAV sample format, or None for the others.
    pub fn wav_sample_format(self) -> Option<SampleFormat> {
        match self {
            OutputFormat::Wav16 => Some(SampleFormat::Int16),
            OutputFormat::Wav24 => Some(SampleFormat::Int24),
            OutputFormat::WavFloat => Some(SampleFormat::Float32),
            _ => None,
        }
    }

    /// The encoder, with its settings, that writes the format.
    pub fn codec(self) -> Codec {
        match (self.wav_sample_format(), self) {
            (Some(sample_format), _) => Codec::Wav(sample_format),
            (None, OutputFormat::Mp3) => Codec::Mp3,
            (None, OutputFormat::Vorbis) => Codec::Vorbis,
            (None, OutputFormat::Opus) => Codec::Opus,
            (None, _) => Codec::Flac,
        }
    }

    /// The format a file with this extension (lower case) is written in: `.wav` is 16-bit.
    pub fn for_extension(ext: &str) -> Option<Self> {
        match ext {
            "wav" => Some(OutputFormat::Wav16),
            "flac" => Some(OutputFormat::Flac),
            "mp3" => Some(OutputFormat::Mp3),
            "ogg" => Some(OutputFormat::Vorbis),
            "opus" => Some(OutputFormat::Opus),
            _ => None,
        }
    }

    /// Whether the codec is lossless: true for WAV and FLAC, false for MP3, Vorbis and Opus.
    pub fn is_lossless(self) -> bool {
        !matches!(
            self,
            OutputFormat::Mp3 | OutputFormat::Vorbis | OutputFormat::Opus
        )
    }
}

/// The names the CLI takes: `wav16`, `wav24`, `wav-float` (or `wav_float`), `flac`, `mp3`,
/// `vorbis` (or `ogg`) and `opus`.
impl std::str::FromStr for OutputFormat {
    type Err = anyhow::Error;

    fn from_str(name: &str) -> anyhow::Result<Self> {
        let name_used = if name == "ogg" { "vorbis" } else { name };
        serde_json::from_value(serde_json::Value::String(name_used.replace('-', "_"))).map_err(
            |_| crate::error::invalid_input(format!("unknown output format {name:?}: use {NAMES}")),
        )
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
        assert_eq!("ogg".parse::<OutputFormat>().unwrap(), OutputFormat::Vorbis);
        assert_eq!("opus".parse::<OutputFormat>().unwrap(), OutputFormat::Opus);
        assert_eq!(OutputFormat::Flac.wav_sample_format(), None);
        assert_eq!(OutputFormat::Vorbis.extension(), "ogg");
        assert_eq!(OutputFormat::Mp3.codec(), Codec::Mp3);
        assert!(!OutputFormat::Opus.is_lossless() && OutputFormat::Flac.is_lossless());
        assert_eq!(
            OutputFormat::for_extension("ogg"),
            Some(OutputFormat::Vorbis)
        );
        assert_eq!(
            OutputFormat::for_extension("wav"),
            Some(OutputFormat::Wav16)
        );
        assert_eq!(OutputFormat::for_extension("aac"), None);
        let err = "aac".parse::<OutputFormat>().unwrap_err().to_string();
        assert_eq!(
            err,
            "unknown output format \"aac\": use wav16, wav24, wav-float, flac, mp3, vorbis or opus"
        );
    }
}
