//! What a training gives the library: the inference model (at the end, or from any checkpoint
//! kept) and the index of the dataset's features, imported as a voice model of the dataset's
//! voice.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use tch::{Kind, Tensor};
use timbre_nn::index::IvfFlatIndex;
use timbre_nn::train::trainer::{export_checkpoint, generator_checkpoint};

use super::files::TrainingFiles;
use super::request::{plan_of, ready_dataset};
use crate::dataset_layout::Manifest;
use crate::db::models::Model;
use crate::db::trainings::{self, Training};
use crate::library::Library;
use crate::model_import::import_model;

/// The index's k-means seed (any fixed one: the same features give the same index).
const INDEX_SEED: u64 = 1234;

/// Trains RVC's index over every feature row of the dataset in `dataset_dir` and writes it to
/// `path`; returns how many vectors it holds.
pub fn write_index(dataset_dir: &Path, manifest: &Manifest, path: &Path) -> Result<usize> {
    let dim = usize::try_from(manifest.feature_dim).context("a negative feature size")?;
    let mut vectors = Vec::new();
    for piece in &manifest.pieces {
        let file = dataset_dir.join(&piece.features);
        let features = Tensor::read_safetensors(&file)
            .with_context(|| format!("{}: cannot read the features", file.display()))?
            .into_iter()
            .find(|(name, _)| name == "features")
            .map(|(_, t)| t)
            .with_context(|| format!("{}: has no features", file.display()))?;
        let values = Vec::<f32>::try_from(features.to_kind(Kind::Float).reshape([-1]))
            .with_context(|| format!("{}: unreadable features", file.display()))?;
        vectors.extend(values);
    }
    let index = IvfFlatIndex::train_rvc(&vectors, dim, INDEX_SEED)?;
    index.write(path)?;
    Ok(index.len())
}

/// Imports the model at `weights` with the training's index into the library, as a model of
/// the dataset's voice.
pub fn import(
    library: &Library,
    training: &Training,
    voice_id: Option<i64>,
    weights: &Path,
    name: &str,
) -> Result<Model> {
    let index = TrainingFiles::new(library.data_dir(), training.id, &training.name).index();
    import_model(library, weights, Some(&index), Some(name), voice_id)
}

/// Writes the inference model of the checkpoint of `step` (the newest when None) to `out`;
/// returns the checkpoint it came from.
pub fn export_to_file(
    library: &Library,
    training_id: i64,
    step: Option<i64>,
    out: &Path,
) -> Result<PathBuf> {
    let training = trainings::require(&library.conn(), training_id)?;
    let checkpoint = checkpoint_of(library, &training, step)?;
    let plan = plan_of(&training)?;
    export_checkpoint(&plan.config()?, plan.f0, &checkpoint, out, &training.name)?;
    Ok(checkpoint)
}

/// The checkpoint of `step` (the newest when None) as a model in the library, with the
/// dataset's index (trained now when the training has not made it yet). The model file stays in
/// the training's `exports/`.
pub fn export_to_library(library: &Library, training_id: i64, step: Option<i64>) -> Result<Model> {
    let training = trainings::require(&library.conn(), training_id)?;
    let files = TrainingFiles::new(library.data_dir(), training.id, &training.name);
    let dataset_id = training.dataset_id.ok_or_else(|| {
        crate::error::invalid_input(format!(
            "training {training_id}: its dataset was deleted, so there is no index to go with \
             the model; export it to a file instead"
        ))
    })?;
    let (dataset, manifest) = ready_dataset(library, dataset_id)?;
    if !files.index().is_file() {
        let dataset_dir = crate::dataset_layout::folder(library, dataset.id);
        write_index(&dataset_dir, &manifest, &files.index())?;
    }
    let checkpoint = checkpoint_of(library, &training, step)?;
    let checkpoint_name = checkpoint
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let out = files.export(&checkpoint_name);
    std::fs::create_dir_all(out.parent().unwrap_or(files.root()))
        .with_context(|| format!("{}: cannot write", out.display()))?;
    let plan = plan_of(&training)?;
    let step = checkpoint_name.trim_start_matches("G_");
    let name = format!("{} (step {step})", training.name);
    export_checkpoint(&plan.config()?, plan.f0, &checkpoint, &out, &name)?;
    import(library, &training, dataset.voice_id, &out, &name)
}

fn checkpoint_of(library: &Library, training: &Training, step: Option<i64>) -> Result<PathBuf> {
    let files = TrainingFiles::new(library.data_dir(), training.id, &training.name);
    generator_checkpoint(&files.checkpoints(), step)
        .map_err(|e| crate::error::not_found(format!("training {}: {e:#}", training.id)))
}
