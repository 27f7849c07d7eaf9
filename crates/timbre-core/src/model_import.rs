//! Bringing voice models into the library: an RVC `.pth` (checked by building it on the CPU:
//! every tensor present with its shape, every weight finite) and its optional `.index` (checked
//! against the model's feature size), both copied into the store.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde_json::json;
use timbre_nn::hubert::{Embedder, FeatureWidths};
use timbre_nn::index::IvfFlatIndex;
use timbre_nn::synthesizer::{ModelInfo, check_model, read_model_info};

use crate::db::models::{self, INDEX_EXT, Model, NewModel, WEIGHTS_EXT};
use crate::error::{KindedError, kind_of};
use crate::library::Library;
use crate::store::ObjectKey;

/// Imports `weights` (and `index`) as a model named `name` (default: the model's own name, else
/// the file's stem). The same weights imported again return the existing model, renamed when
/// `name` is given, with the index set when one is given.
pub fn import_model(
    library: &Library,
    weights: &Path,
    index: Option<&Path>,
    name: Option<&str>,
    voice_id: Option<i64>,
) -> Result<Model> {
    ModelFile::check(weights, index)?.import(library, name, voice_id)
}

/// A `.pth` (and its `.index`) that passed import's checks, not yet in the library.
pub struct ModelFile {
    weights: PathBuf,
    index: Option<PathBuf>,
    info: ModelInfo,
}

impl ModelFile {
    /// Reads and checks the model (see [`check_model`]) and that the index fits it; stores
    /// nothing.
    pub fn check(weights: &Path, index: Option<&Path>) -> Result<ModelFile> {
        let info =
            check_model(weights).map_err(|e| crate::error::invalid_input(format!("{e:#}")))?;
        if let Some(index) = index {
            let dim = IvfFlatIndex::read(index)
                .map_err(|e| crate::error::invalid_input(format!("{e:#}")))?
                .dim();
            check_index_fits(index, dim as i64, weights, &info)?;
        }
        Ok(ModelFile {
            weights: weights.to_path_buf(),
            index: index.map(Path::to_path_buf),
            info,
        })
    }

    fn file_name(&self) -> String {
        self.weights
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned()
    }

    /// The name the model is imported under when none is chosen (unless the library holds the
    /// same weights already, under their name).
    pub fn default_name(&self) -> String {
        display_name(&self.file_name(), &self.info)
    }

    /// Copies the model into the store and the library, as [`import_model`] does.
    pub fn import(
        &self,
        library: &Library,
        name: Option<&str>,
        voice_id: Option<i64>,
    ) -> Result<Model> {
        store_checked(
            library,
            &CheckedModel {
                weights: &self.weights,
                info: &self.info,
                source: &self.weights.display().to_string(),
                file_name: &self.file_name(),
                index: self.index.as_deref(),
            },
            name,
            voice_id,
        )
    }
}

/// A voice model that passed [`check_model`], with the index checked to fit it; `source` is
/// how the user knows the weights (their path, or an entry of an archive), `file_name` the name
/// of that file (the model's name when the file holds none).
pub struct CheckedModel<'a> {
    /// The `.pth` to store (it may be a temporary file extracted from an archive).
    pub weights: &'a Path,
    /// What [`check_model`] read from the weights.
    pub info: &'a ModelInfo,
    /// How the user knows the weights: their path, or `<archive>:<entry>`.
    pub source: &'a str,
    /// The weights file's own name; the model's name when the file holds none.
    pub file_name: &'a str,
    /// The index to store with the model, checked to fit it; None for none.
    pub index: Option<&'a Path>,
}

/// Copies a checked model (and its index) into the store and the library, as [`import_model`]
/// does after its checks.
pub fn store_checked(
    library: &Library,
    model: &CheckedModel,
    name: Option<&str>,
    voice_id: Option<i64>,
) -> Result<Model> {
    let info = model.info;
    let stored_weights = library.store().ingest_file(model.weights, WEIGHTS_EXT)?;
    let stored_index = model
        .index
        .map(|i| library.store().ingest_file(i, INDEX_EXT))
        .transpose()?;
    let index_sha = stored_index.as_ref().map(|s| s.sha256.as_str());
    let chosen_name = name.map(str::trim).filter(|n| !n.is_empty());
    let name = chosen_name
        .map(str::to_string)
        .unwrap_or_else(|| display_name(model.file_name, info));
    library.edit(|conn| {
        if let Some(mut existing) = models::find_by_weights(conn, &stored_weights.sha256)? {
            if let Some(sha) = index_sha {
                existing = models::set_index(conn, existing.id, Some(sha))?;
            }
            if let Some(chosen) = chosen_name
                && chosen != existing.name
            {
                existing = models::rename(conn, existing.id, chosen)?;
            }
            return Ok(existing);
        }
        let id = models::insert(
            conn,
            &NewModel {
                voice_id,
                name: name.clone(),
                kind: "rvc".into(),
                weights_sha256: stored_weights.sha256.clone(),
                index_sha256: index_sha.map(String::from),
                version: Some(info.version.clone()),
                sample_rate: Some(info.sample_rate),
                f0: Some(info.f0),
                metadata: metadata(model.source, info)?,
            },
        )?;
        models::require(conn, id)
    })
}

/// Attaches (or replaces) the index of a model already in the library.
pub fn attach_index(library: &Library, model_id: i64, index: &Path) -> Result<Model> {
    let model = models::require(&library.conn(), model_id)?;
    let weights = library
        .store()
        .object_path(&model.weights_sha256, WEIGHTS_EXT);
    let info = read_model_info(&weights)
        .map_err(|e| name_stored_files(e, &[(&weights, describe_model(&model))]))?;
    let dim = IvfFlatIndex::read(index)
        .map_err(|e| crate::error::invalid_input(format!("{e:#}")))?
        .dim();
    check_index_fits(index, dim as i64, Path::new(&describe_model(&model)), &info)?;
    let stored = library.store().ingest_file(index, INDEX_EXT)?;
    let attached = library.edit(|conn| models::set_index(conn, model_id, Some(&stored.sha256)))?;
    if let Some(previous) = model
        .index_sha256
        .filter(|previous| *previous != stored.sha256)
    {
        library.release_objects(&[ObjectKey::new(previous, INDEX_EXT)])?;
    }
    Ok(attached)
}

/// Remembers `folder` as the content-feature extractor of a voice trained on a `custom`
/// embedder: a transformers HuBERT folder whose features have the width the voice takes.
pub fn choose_custom_embedder(library: &Library, model_id: i64, folder: &Path) -> Result<Model> {
    let model = models::require(&library.conn(), model_id)?;
    let embedder = crate::models_folder::embedder_of(&model.metadata)?;
    if embedder != Embedder::Custom {
        return Err(crate::error::invalid_input(format!(
            "{} plays with the {embedder} embedder's features; a folder is chosen only for voices \
             trained on a custom one",
            model.name
        )));
    }
    let folder = std::path::absolute(folder)?;
    crate::models_folder::check_embedder_folder(&folder)?;
    let weights = library
        .store()
        .object_path(&model.weights_sha256, WEIGHTS_EXT);
    let info = read_model_info(&weights)
        .map_err(|e| name_stored_files(e, &[(&weights, describe_model(&model))]))?;
    let widths = FeatureWidths::of_file(&folder)
        .map_err(|e| crate::error::invalid_input(format!("{e:#}")))?;
    let gives = widths.of_version(info.feature_version()?);
    if gives != Some(info.feature_dim) {
        return Err(crate::error::invalid_input(format!(
            "{}: gives {} content features; {} takes {}-d ones",
            folder.display(),
            gives.map_or("no final_proj (v1)".to_string(), |d| format!("{d}-d")),
            model.name,
            info.feature_dim
        )));
    }
    let mut metadata = model.metadata.clone();
    metadata["custom_embedder"] = folder.display().to_string().into();
    library.edit(|conn| models::set_metadata(conn, model_id, &metadata))
}

/// A v1 model (256-d features) needs a v1 index and a v2 model (768-d) a v2 one.
pub fn check_index_fits(
    index: &Path,
    index_dim: i64,
    model: &Path,
    info: &ModelInfo,
) -> Result<()> {
    if index_dim == info.feature_dim {
        return Ok(());
    }
    let version_of = |dim: i64| match dim {
        256 => "v1",
        768 => "v2",
        _ => "an unknown version",
    };
    Err(crate::error::invalid_input(format!(
        "{}: this index holds {index_dim}-d features ({}) but {} is a {} model with {}-d \
         features: use the index that was trained with this model",
        index.display(),
        version_of(index_dim),
        model.display(),
        info.version,
        info.feature_dim
    )))
}

/// How messages name a library model: by its name and the file it was imported from, never by
/// its store object.
pub fn describe_model(model: &Model) -> String {
    match model.metadata["source_path"].as_str() {
        Some(source) => format!("model \"{}\" (imported from {source})", model.name),
        None => format!("model \"{}\"", model.name),
    }
}

/// A new library model named `name`: the blend of the library models `model_ids` by `weights`
/// (see `timbre_nn::blend`; the weights need not add up to 1). Models that cannot blend are
/// refused naming the difference; the blend's `info` names its parents.
pub fn blend(library: &Library, model_ids: &[i64], weights: &[f64], name: &str) -> Result<Model> {
    let invalid = crate::error::invalid_input;
    if model_ids.len() != weights.len() {
        return Err(invalid(format!(
            "{} models and {} weights: give one weight per model",
            model_ids.len(),
            weights.len()
        )));
    }
    if name.trim().is_empty() {
        return Err(invalid("the blend needs a name".into()));
    }
    timbre_nn::blend::check_weights(weights).map_err(|e| invalid(format!("{e:#}")))?;
    let parents = model_ids
        .iter()
        .map(|&id| models::require(&library.conn(), id))
        .collect::<Result<Vec<_>>>()?;
    let stored: Vec<_> = parents
        .iter()
        .map(|m| library.store().object_path(&m.weights_sha256, WEIGHTS_EXT))
        .collect();
    let info = format!(
        "blend of {}",
        parents
            .iter()
            .zip(weights)
            .map(|(m, w)| format!("{} ({w})", m.name))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let tmp_dir = library.data_dir().join("store").join("tmp");
    std::fs::create_dir_all(&tmp_dir)?;
    let file = tempfile::Builder::new()
        .suffix(".pth")
        .tempfile_in(&tmp_dir)?;
    let inputs: Vec<(&Path, f64)> = stored
        .iter()
        .map(PathBuf::as_path)
        .zip(weights.iter().copied())
        .collect();
    timbre_nn::blend::blend_models(&inputs, &info, file.path()).map_err(|e| {
        let named: Vec<(&Path, String)> = stored
            .iter()
            .zip(&parents)
            .map(|(path, m)| (path.as_path(), describe_model(m)))
            .collect();
        let e = name_stored_files(e, &named);
        match kind_of(&e) {
            crate::error::ErrorKind::Internal => invalid(format!("{e:#}")),
            _ => e,
        }
    })?;
    let checked = check_model(file.path()).map_err(|e| invalid(format!("{e:#}")))?;
    store_checked(
        library,
        &CheckedModel {
            weights: file.path(),
            info: &checked,
            source: &info,
            file_name: &format!("{name}.pth"),
            index: None,
        },
        Some(name),
        None,
    )
}

/// Writes the library model `model_id`'s `.pth` to `out` with its descriptive entries edited
/// (see `timbre_nn::model_info`).
pub fn export_with_info(
    library: &Library,
    model_id: i64,
    edits: &timbre_nn::model_info::InfoEdits,
    out: &Path,
) -> Result<Model> {
    let model = models::require(&library.conn(), model_id)?;
    let stored = library
        .store()
        .object_path(&model.weights_sha256, WEIGHTS_EXT);
    timbre_nn::model_info::write_edited(&stored, edits, out)
        .map_err(|e| name_stored_files(e, &[(&stored, describe_model(&model))]))?;
    Ok(model)
}

/// `error` with each stored file's path replaced by what it is to the user (see
/// [`describe_model`]), keeping the error's kind.
pub fn name_stored_files(error: anyhow::Error, stored: &[(&Path, String)]) -> anyhow::Error {
    let original = format!("{error:#}");
    let mut message = original.clone();
    for (path, shown_as) in stored {
        message = message.replace(&path.display().to_string(), shown_as);
    }
    if message == original {
        return error;
    }
    KindedError {
        kind: kind_of(&error),
        message,
    }
    .into()
}

fn display_name(file_name: &str, info: &ModelInfo) -> String {
    info.metadata
        .model_name
        .clone()
        .filter(|n| !n.trim().is_empty())
        .unwrap_or_else(|| {
            Path::new(file_name)
                .file_stem()
                .map_or_else(|| "model".into(), |s| composed(&s.to_string_lossy()))
        })
}

/// `name` in Unicode's composed form (NFC), as typed: macOS writes file names decomposed (NFD),
/// into its zips too, and a voice named so ("Йога" as `И` + U+0306, Hangul as its jamo) would
/// look the same but answer to no name typed.
pub(crate) fn composed(name: &str) -> String {
    icu_normalizer::ComposingNormalizerBorrowed::new_nfc()
        .normalize(name)
        .into_owned()
}

fn metadata(source: &str, info: &ModelInfo) -> Result<serde_json::Value> {
    let embedder = info.embedder()?;
    Ok(json!({
        "source_path": source,
        "feature_dim": info.feature_dim,
        "speakers": info.speakers,
        "hop": info.hop,
        "vocoder": info.vocoder,
        "energy": info.energy,
        "embedder": embedder.name(),
        "embedder_files": crate::models_folder::embedder_files(embedder),
        "file": info.metadata,
    }))
}
