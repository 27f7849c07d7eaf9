//! One checkpoint scored: its generator converts every held-out piece (and the training sample)
//! from the piece's own features and pitch, seeded, and each conversion is measured against the
//! real piece.

use std::path::Path;

use anyhow::Result;
use tch::{Device, Kind, Tensor};
use timbre_audio::{AudioBuffer, fidelity};
use timbre_nn::pipeline::PitchTracker;
use timbre_nn::synthesizer::{Noise, Synthesizer};

use super::material::{self, FRAME_SECS, Material, Piece, Speaker};
use crate::db::checkpoint_scores::CheckpointScore;
use crate::train::files::TrainingFiles;

/// The noise seed of every conversion, so that two checkpoints differ only by their weights.
const JUDGE_SEED: u64 = 4321;

/// Scores `model` (checkpoint `step` of epoch `epoch`) on `material`; `tracker` reads the
/// pitch of the conversions (None for a model without pitch). The first held-out conversion
/// is written to `sample`.
pub fn score(
    model: &Synthesizer,
    material: &Material,
    tracker: Option<&PitchTracker>,
    (epoch, step): (i64, i64),
    sample: &Path,
) -> Result<CheckpointScore> {
    let _no_grad = tch::no_grad_guard();
    let rate = material.sample_rate;
    let mut converted = Vec::with_capacity(material.held_out.len());
    for piece in &material.held_out {
        converted.push(convert(model, piece)?);
    }
    let mel_distance = mean_mel_distance(&material.held_out, &converted, rate);
    let mut trained = Vec::with_capacity(material.trained.len());
    for piece in &material.trained {
        trained.push(convert(model, piece)?);
    }
    let train_mel_distance = mean_mel_distance(&material.trained, &trained, rate);
    let pitch = match tracker {
        Some(tracker) => Some(pitch_scores(tracker, &material.held_out, &converted, rate)?),
        None => None,
    };
    let artefacts_db = artefacts(&material.held_out, &converted, rate);
    let (similarity, similarity_ceiling, source_similarity) = match &material.speaker {
        Some(speaker) => {
            let mut sources = Vec::with_capacity(material.sources.len());
            for piece in &material.sources {
                sources.push(convert(model, piece)?);
            }
            let source_similarity = match sources.is_empty() {
                true => None,
                false => Some(similarity_to(speaker, &sources, rate)?),
            };
            let similarity = similarity_to(speaker, &converted, rate)?;
            (Some(similarity), Some(speaker.ceiling), source_similarity)
        }
        None => (None, None, None),
    };
    if let Some(first) = converted.first() {
        TrainingFiles::write_wav(sample, first.clone(), rate)?;
    }
    Ok(CheckpointScore {
        epoch,
        step,
        similarity,
        similarity_ceiling,
        source_similarity,
        pitch_rmse_cents: pitch.and_then(|(rmse, _)| rmse),
        voicing_agreement: pitch.map(|(_, voicing)| voicing),
        mel_distance,
        train_mel_distance,
        artefacts_db,
        sample: (!converted.is_empty()).then(|| sample.display().to_string()),
        at: crate::db::now(),
    })
}

/// The cosine of the conversions' speaker embedding with the dataset's; a conversion without
/// speech (an untrained network's near silence) is as unlike the voice as can be, 0.
fn similarity_to(speaker: &Speaker, converted: &[Vec<f32>], rate: u32) -> Result<f64> {
    let embedding = material::speaker_embedding(&speaker.encoder, converted.iter(), rate)?;
    Ok(embedding.map_or(0.0, |e| {
        f64::from(timbre_nn::speaker_encoder::cosine(&e, &speaker.dataset))
    }))
}

/// `piece` converted by `model`, at the model rate.
fn convert(model: &Synthesizer, piece: &Piece) -> Result<Vec<f32>> {
    let device = model.device();
    let on_device = |t: &Tensor| t.unsqueeze(0).to_device(device);
    let frames = piece.phone.size()[0];
    let audio = model.infer(
        &on_device(&piece.phone),
        &Tensor::from_slice(&[frames]).to_device(device),
        piece.pitch.as_ref().map(|(p, _)| on_device(p)).as_ref(),
        piece.pitch.as_ref().map(|(_, f)| on_device(f)).as_ref(),
        0,
        Noise::Seeded(JUDGE_SEED),
    )?;
    Ok(Vec::<f32>::try_from(
        audio
            .reshape([-1])
            .to_device(Device::Cpu)
            .to_kind(Kind::Float),
    )?)
}

/// The mean of the pieces' mel distances, weighted by their lengths (0 when none is long enough
/// to measure).
fn mean_mel_distance(pieces: &[Piece], converted: &[Vec<f32>], rate: u32) -> f64 {
    length_weighted(pieces.iter().zip(converted).filter_map(|(piece, audio)| {
        let distance = fidelity::multi_resolution_mel_distance(&piece.audio, audio, rate)?;
        Some((distance, piece.audio.len()))
    }))
    .unwrap_or(0.0)
}

/// The mean of `values`, each weighted by its length in samples; None without any.
fn length_weighted(values: impl Iterator<Item = (f64, usize)>) -> Option<f64> {
    let (mut sum, mut weight) = (0.0, 0.0);
    for (value, length) in values {
        sum += value * length as f64;
        weight += length as f64;
    }
    (weight > 0.0).then(|| sum / weight)
}

/// The RMSE in cents over every voiced frame of the held-out set, and the share of frames whose
/// voicing agrees, from the conversions' pitch read by `tracker` at 16 kHz.
fn pitch_scores(
    tracker: &PitchTracker,
    pieces: &[Piece],
    converted: &[Vec<f32>],
    rate: u32,
) -> Result<(Option<f64>, f64)> {
    let (mut squares, mut voiced, mut agreeing, mut frames) = (0.0, 0, 0.0, 0);
    for (piece, audio) in pieces.iter().zip(converted) {
        let Some(f0) = &piece.f0 else { continue };
        let at_16k = timbre_audio::resample(&AudioBuffer::new(rate, vec![audio.clone()]), 16_000)?;
        let estimate = tracker.track(&at_16k.channels[0])?;
        let agreement = fidelity::pitch_agreement(f0, &estimate);
        if let Some(rmse) = agreement.rmse_cents {
            squares += rmse * rmse * agreement.voiced_frames as f64;
            voiced += agreement.voiced_frames;
        }
        agreeing += agreement.voicing_agreement * agreement.frames as f64;
        frames += agreement.frames;
    }
    let rmse = (voiced > 0).then(|| (squares / voiced as f64).sqrt());
    Ok((
        rmse,
        if frames == 0 {
            0.0
        } else {
            agreeing / frames as f64
        },
    ))
}

/// The conversions' inharmonic energy less the real pieces', weighted by length.
fn artefacts(pieces: &[Piece], converted: &[Vec<f32>], rate: u32) -> Option<f64> {
    length_weighted(pieces.iter().zip(converted).filter_map(|(piece, audio)| {
        let (f0, real) = (piece.f0.as_ref()?, piece.inharmonic_db?);
        let db = fidelity::inharmonic_energy_db(audio, rate, f0, FRAME_SECS)?;
        Some((db - real, audio.len()))
    }))
}
