//! Previews: the same piece of the dataset resynthesised from its own features and pitch by
//! the model as it stands, after the epochs the request asks for, so that the app can play
//! epochs side by side. The noise is seeded, so two previews differ only by the weights.

use std::path::Path;

use anyhow::{Context, Result};
use tch::{Device, Kind, Tensor};
use timbre_nn::synthesizer::Noise;
use timbre_nn::train::trainer::Trainer;

use super::data::TrainingData;
use super::files::TrainingFiles;

const PREVIEW_SEED: u64 = 1234;

/// The piece every preview renders: the longest, the first of them on a tie.
pub fn fixed_piece(data: &TrainingData) -> usize {
    let pieces = &data.manifest().pieces;
    (0..pieces.len())
        .rev()
        .max_by(|&a, &b| pieces[a].seconds.total_cmp(&pieces[b].seconds))
        .unwrap_or(0)
}

/// Renders `piece` through the trainer's current weights into a WAV at `path`.
pub fn render(trainer: &Trainer, data: &TrainingData, piece: usize, path: &Path) -> Result<()> {
    let item = data.loader().item(piece)?;
    let model = trainer.preview_model()?;
    let device = model.device();
    let on_device = |t: &Tensor| t.unsqueeze(0).to_device(device);
    let frames = item.phone.size()[0];
    let audio = model
        .infer(
            &on_device(&item.phone),
            &Tensor::from_slice(&[frames]).to_device(device),
            item.pitch.as_ref().map(on_device).as_ref(),
            item.pitchf.as_ref().map(on_device).as_ref(),
            data.speaker_id(),
            Noise::Seeded(PREVIEW_SEED),
        )
        .with_context(|| format!("rendering the preview {}", path.display()))?;
    let samples = Vec::<f32>::try_from(
        audio
            .reshape([-1])
            .to_device(Device::Cpu)
            .to_kind(Kind::Float),
    )?;
    TrainingFiles::write_wav(path, samples, data.manifest().sample_rate)
}
