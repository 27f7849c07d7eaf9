//! A fake ALSA capture device for machines without a sound card (tests, demos): its default
//! capture device plays back a raw file.

use std::path::Path;

use crate::buffer::AudioBuffer;
use crate::error::AudioError;
use crate::resample::resample;

/// The format cpal opens the fake device with, so audio in it passes through unconverted.
const FAKE_RATE: u32 = 48000;
const FAKE_CHANNELS: u16 = 2;

/// An ALSA configuration (for `~/.asoundrc`) whose default capture device plays back
/// `raw_path`: interleaved little-endian `f32` samples at `rate` Hz with `channels` channels,
/// delivered as fast as they are read. For tests and demos on machines without a sound card.
///
/// Use 48000 Hz stereo (or [`fake_alsa_device`], which writes the file that way): that is the
/// format cpal opens this device with, and only then does audio pass through unconverted. Any
/// other format is converted by the `plug` layer, and alsa-lib's file plugin then drops frames
/// at every buffer wrap.
pub fn fake_alsa_config(raw_path: &Path, rate: u32, channels: u16) -> String {
    let path = raw_path
        .display()
        .to_string()
        .replace('\\', "\\\\")
        .replace('"', "\\\"");
    format!(
        r#"pcm.!default {{
    type plug
    slave {{
        pcm "timbre_fake_capture"
        format FLOAT_LE
        rate {rate}
        channels {channels}
    }}
}}
pcm.timbre_fake_capture {{
    type file
    slave.pcm "null"
    file "/dev/null"
    infile "{path}"
    format "raw"
}}
"#
    )
}

/// Writes `audio` to `raw_path` as the fake device's source (48 kHz stereo `f32`; mono or
/// multichannel audio is mixed down and duplicated) and returns the [`fake_alsa_config`] that
/// plays it back.
pub fn fake_alsa_device(raw_path: &Path, audio: &AudioBuffer) -> Result<String, AudioError> {
    let mut audio = resample(audio, FAKE_RATE)?;
    if audio.channels.len() != usize::from(FAKE_CHANNELS) {
        let mono = audio.to_mono().channels.remove(0);
        audio = AudioBuffer::new(FAKE_RATE, vec![mono.clone(), mono]);
    }
    let bytes: Vec<u8> = audio
        .interleaved()
        .into_iter()
        .flat_map(f32::to_le_bytes)
        .collect();
    std::fs::write(raw_path, bytes)
        .map_err(|e| AudioError::io(Some(raw_path), "could not write the file", &e))?;
    Ok(fake_alsa_config(raw_path, FAKE_RATE, FAKE_CHANNELS))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fake_config_names_the_file_and_format() {
        let cfg = fake_alsa_config(Path::new("/tmp/a \"b\".raw"), 16000, 1);
        assert!(cfg.contains("pcm.!default"));
        assert!(cfg.contains(r#"infile "/tmp/a \"b\".raw""#));
        assert!(cfg.contains("rate 16000"));
        assert!(cfg.contains("channels 1"));
        assert!(cfg.contains("format FLOAT_LE"));
    }

    #[test]
    fn fake_device_source_is_48k_stereo_f32() {
        let dir = tempfile::tempdir().unwrap();
        let raw = dir.path().join("mic.raw");
        let mono = AudioBuffer::new(16000, vec![vec![0.25; 1600]]);
        let cfg = fake_alsa_device(&raw, &mono).unwrap();
        assert!(cfg.contains("rate 48000") && cfg.contains("channels 2"));
        let bytes = std::fs::read(&raw).unwrap();
        assert_eq!(bytes.len(), 4800 * 2 * 4);
        let mid = f32::from_le_bytes(bytes[4800 * 4..4800 * 4 + 4].try_into().unwrap());
        assert!((mid - 0.25).abs() < 1e-3, "{mid}");
    }
}
