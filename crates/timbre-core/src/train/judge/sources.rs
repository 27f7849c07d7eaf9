//! The takes of another speaker a training names (`TrainRequest::judge_sources`), made ready to
//! convert as a user converts: HuBERT features and the pitch by the dataset's method, the pitch
//! moved by the ratio of the dataset's median f0 to the take's (what a user sets as the key for
//! a voice of the other sex), cut into pieces of at most [`PIECE_SECS`], [`MOST_SECS`] in all.

use std::path::PathBuf;

use anyhow::{Context, Result};
use tch::Tensor;
use timbre_audio::DecodeOptions;
use timbre_nn::hubert::{FeatureVersion, Hubert};
use timbre_nn::pipeline::PitchTracker;
use timbre_nn::pipeline::pitch::coarse;

use super::material::Piece;

/// The longest piece converted at once, in seconds.
const PIECE_SECS: usize = 8;
/// Source audio used in all, at most, in seconds.
const MOST_SECS: usize = 30;

/// The source files as pieces to convert; `tracker` and `median_hz` (the dataset's) for a model
/// with pitch.
pub fn read(
    paths: &[PathBuf],
    hubert: &Hubert,
    version: FeatureVersion,
    pitch: Option<(&PitchTracker, f32)>,
) -> Result<Vec<Piece>> {
    let mut audio = Vec::new();
    for path in paths {
        let decoded = timbre_audio::decode_file(path, &DecodeOptions::default())
            .with_context(|| format!("judge source {}", path.display()))?
            .to_mono();
        let at_16k = timbre_audio::resample(&decoded, 16_000)?;
        audio.extend(at_16k.channels.into_iter().next().unwrap_or_default());
        if audio.len() >= MOST_SECS * 16_000 {
            break;
        }
    }
    audio.truncate(MOST_SECS * 16_000);
    let mut chunks = Vec::new();
    for chunk in audio.chunks(PIECE_SECS * 16_000) {
        // Under a second is too little to embed.
        if chunk.len() >= 16_000 {
            chunks.push(chunk);
        }
    }
    let f0s = match pitch {
        Some((tracker, _)) => chunks
            .iter()
            .map(|c| tracker.track(c))
            .collect::<Result<Vec<_>>>()?,
        None => Vec::new(),
    };
    let shift = pitch.and_then(|(_, median)| {
        let own = median_voiced(f0s.iter().flatten().copied())?;
        Some(median / own)
    });
    let mut pieces = Vec::with_capacity(chunks.len());
    for (i, chunk) in chunks.iter().enumerate() {
        let features = hubert.features_of(chunk, version)?;
        let phone = features.repeat_interleave_self_int(2, 0, None::<i64>);
        let pitch = f0s.get(i).map(|f0| {
            let moved: Vec<f32> = f0.iter().map(|&f| f * shift.unwrap_or(1.0)).collect();
            (
                Tensor::from_slice(&coarse(&moved)),
                Tensor::from_slice(&moved),
            )
        });
        let frames = pitch
            .as_ref()
            .map_or(phone.size()[0], |(p, _)| p.size()[0].min(phone.size()[0]));
        pieces.push(Piece {
            phone: phone.narrow(0, 0, frames),
            pitch: pitch.map(|(p, f)| (p.narrow(0, 0, frames), f.narrow(0, 0, frames))),
            audio: Vec::new(),
            f0: None,
            inharmonic_db: None,
        });
    }
    Ok(pieces)
}

/// The median of the voiced (non-zero) values; None when there are none.
pub fn median_voiced(values: impl Iterator<Item = f32>) -> Option<f32> {
    let mut voiced: Vec<f32> = values.filter(|&f| f > 0.0).collect();
    if voiced.is_empty() {
        return None;
    }
    voiced.sort_by(f32::total_cmp);
    Some(voiced[voiced.len() / 2])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_skips_unvoiced_frames() {
        let f0 = [0.0, 100.0, 0.0, 300.0, 200.0, 0.0];
        assert_eq!(median_voiced(f0.into_iter()), Some(200.0));
        assert_eq!(median_voiced([0.0f32; 4].into_iter()), None);
    }
}
