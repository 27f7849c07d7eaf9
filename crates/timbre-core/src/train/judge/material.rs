//! What every checkpoint is judged on, read once per training: the held-out pieces (their
//! features and pitch as the model takes them, their audio, the measures of the real voice),
//! as much training audio for the generalisation gap, and the dataset's speaker embedding.

use std::path::Path;

use anyhow::Result;
use tch::Tensor;
use timbre_audio::fidelity;
use timbre_nn::speaker_encoder::{self, SpeakerEncoder};

use crate::dataset_layout::{Manifest, ManifestPiece};
use crate::train::data;

/// Training pieces the dataset's embedding is the mean of, at most (evenly spread).
const EMBEDDED_PIECES: usize = 40;
/// Pitch frames per second: the dataset's pitch and the phone features are at 100 a second.
pub const FRAME_SECS: f64 = 0.01;

/// One piece as the judge uses it.
pub struct Piece {
    /// `[frames, dim]` phone features at 100 frames a second.
    pub phone: Tensor,
    /// `[frames]` coarse and fine pitch, for a model with pitch.
    pub pitch: Option<(Tensor, Tensor)>,
    /// The piece at the model rate (empty for a source take, which has no target audio).
    pub audio: Vec<f32>,
    /// Its f0 in Hz per 10 ms frame (0 unvoiced), for a dataset with pitch.
    pub f0: Option<Vec<f32>>,
    /// Its own inharmonic energy in dB, which the conversion's is compared with.
    pub inharmonic_db: Option<f64>,
}

/// The held-out pieces, a sample of the training ones, and the embeddings.
pub struct Material {
    /// The held-out pieces, in the manifest's order.
    pub held_out: Vec<Piece>,
    /// Training pieces of about the held-out set's length, evenly spread.
    pub trained: Vec<Piece>,
    /// The model rate, in Hz.
    pub sample_rate: u32,
    /// The dataset's mean speaker embedding and the held-out speech's own similarity to it.
    pub speaker: Option<Speaker>,
    /// The takes of another speaker to convert (`sources`), when the training names some.
    pub sources: Vec<Piece>,
}

/// The speaker side of the judge: the encoder and what it found of the real voice.
pub struct Speaker {
    /// GE2E, loaded from the `speaker-encoder` asset.
    pub encoder: SpeakerEncoder,
    /// The mean embedding of the training pieces, unit length.
    pub dataset: Vec<f32>,
    /// The cosine of the held-out pieces' mean embedding with `dataset`: the ceiling.
    pub ceiling: f64,
}

impl Material {
    /// Reads the held-out and sampled pieces of the dataset in `root`; no speaker side yet
    /// ([`Speaker::read`]).
    pub fn read(root: &Path, manifest: &Manifest) -> Result<Self> {
        let held_out = manifest
            .held_out
            .iter()
            .map(|p| read_piece(root, manifest, p))
            .collect::<Result<Vec<_>>>()?;
        let seconds: f64 = manifest.held_out.iter().map(|p| p.seconds).sum();
        let trained = spread(&manifest.pieces, |picked| {
            picked.iter().map(|p| p.seconds).sum::<f64>() >= seconds
        })
        .into_iter()
        .map(|p| read_piece(root, manifest, p))
        .collect::<Result<Vec<_>>>()?;
        Ok(Material {
            held_out,
            trained,
            sample_rate: manifest.sample_rate,
            speaker: None,
            sources: Vec::new(),
        })
    }
}

impl Speaker {
    /// The dataset's embedding (of up to [`EMBEDDED_PIECES`] training pieces of the dataset in
    /// `root`) and the ceiling (the `held_out` pieces' own similarity to it); None when the
    /// encoder finds no speech in either.
    pub fn read(
        encoder: SpeakerEncoder,
        root: &Path,
        manifest: &Manifest,
        held_out: &[Piece],
    ) -> Result<Option<Self>> {
        let rate = manifest.sample_rate;
        let sample = spread(&manifest.pieces, |picked| picked.len() >= EMBEDDED_PIECES);
        let mut training_audio = Vec::with_capacity(sample.len());
        for piece in sample {
            training_audio.push(data::piece_audio(root, manifest, piece)?);
        }
        let Some(dataset) = speaker_embedding(&encoder, training_audio.iter(), rate)? else {
            return Ok(None);
        };
        let Some(real) = speaker_embedding(&encoder, held_out.iter().map(|p| &p.audio), rate)?
        else {
            return Ok(None);
        };
        let ceiling = f64::from(speaker_encoder::cosine(&real, &dataset));
        Ok(Some(Speaker {
            encoder,
            dataset,
            ceiling,
        }))
    }
}

/// Pieces picked evenly through `pieces` (every n-th, n doubling down from the whole list)
/// until `enough` says so, or all of them.
fn spread<'a>(
    pieces: &'a [ManifestPiece],
    enough: impl Fn(&[&'a ManifestPiece]) -> bool,
) -> Vec<&'a ManifestPiece> {
    let mut stride = pieces.len().max(1);
    loop {
        let picked: Vec<&ManifestPiece> = pieces.iter().step_by(stride).collect();
        if stride == 1 || enough(&picked) {
            return picked;
        }
        stride = stride.div_ceil(2);
    }
}

fn read_piece(root: &Path, manifest: &Manifest, piece: &ManifestPiece) -> Result<Piece> {
    let (phone, pitch, pitchf) = data::labels(root, manifest, piece)?;
    let audio = data::piece_audio(root, manifest, piece)?;
    let f0 = pitchf.as_ref().map(Vec::<f32>::try_from).transpose()?;
    let inharmonic_db = f0.as_ref().and_then(|f0| {
        fidelity::inharmonic_energy_db(&audio, manifest.sample_rate, f0, FRAME_SECS)
    });
    Ok(Piece {
        phone,
        pitch: pitch.zip(pitchf),
        audio,
        f0,
        inharmonic_db,
    })
}

/// The speaker embedding of `utterances` at `rate`: each preprocessed as Resemblyzer does
/// (those left empty, all silence, skipped), then `embed_speaker`; None when none has speech.
pub fn speaker_embedding<'a>(
    encoder: &SpeakerEncoder,
    utterances: impl Iterator<Item = &'a Vec<f32>>,
    rate: u32,
) -> Result<Option<Vec<f32>>> {
    let mut wavs = Vec::new();
    for audio in utterances {
        let wav = speaker_encoder::preprocess(audio, rate)?;
        if !wav.is_empty() {
            wavs.push(wav);
        }
    }
    if wavs.is_empty() {
        return Ok(None);
    }
    let wavs: Vec<&[f32]> = wavs.iter().map(Vec::as_slice).collect();
    encoder.embed_speaker(&wavs).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(n: usize) -> Vec<ManifestPiece> {
        (0..n)
            .map(|index| ManifestPiece {
                gt_wav: String::new(),
                wav_16k: String::new(),
                features: String::new(),
                source: "a.wav".into(),
                index,
                seconds: 3.0,
                feature_frames: 0,
                f0_frames: None,
            })
            .collect()
    }

    #[test]
    fn spread_picks_evenly_until_enough() {
        let all = pieces(40);
        let indices = |picked: Vec<&ManifestPiece>| -> Vec<usize> {
            picked.iter().map(|p| p.index).collect()
        };
        // 10 s of 3 s pieces: four, every 10th.
        let seconds = |p: &[&ManifestPiece]| p.iter().map(|p| p.seconds).sum::<f64>() >= 10.0;
        assert_eq!(indices(spread(&all, seconds)), [0, 10, 20, 30]);
        assert_eq!(indices(spread(&all, |p| p.len() >= 100)).len(), 40);
        assert!(spread(&[], |_| false).is_empty());
    }
}
