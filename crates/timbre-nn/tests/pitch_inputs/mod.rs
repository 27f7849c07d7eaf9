//! The inputs the pitch parity tests (crepe, fcpe) share, at 16 kHz: generated tones of known
//! pitch, and espeak-ng's speech.

use std::path::Path;

pub const RATE: u32 = 16_000;

pub fn tone(secs: f64, f0: impl Fn(f64) -> f64, noise_snr_db: Option<f64>) -> Vec<f32> {
    timbre_test_support::tone(RATE, secs, f0, noise_snr_db)
}

/// espeak-ng's voice saying `text`, resampled to 16 kHz.
pub fn speech(dir: &Path, text: &str) -> Vec<f32> {
    // Beside, not among, the inputs the reference reads.
    let folder = dir.join("espeak");
    std::fs::create_dir_all(&folder).unwrap();
    let wav = folder.join("speech.wav");
    timbre_test_support::espeak(&wav, text);
    let decoded = timbre_audio::decode_file(&wav, &Default::default()).unwrap();
    let resampled = timbre_audio::resample(&decoded.to_mono(), RATE).unwrap();
    resampled.channels.into_iter().next().unwrap()
}
