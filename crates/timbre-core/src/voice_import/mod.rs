//! Voices from anywhere: a `.pth`, a community `.zip`, the folder of an RVC or Applio install, or
//! a link, imported into the library with the index that fits each voice. See "The path of a
//! download and of a voice import" in docs/ARCHITECTURE.md.
//!
//! `source` turns the source into files on disk (`archive` reads zips safely, `folder` walks a
//! tree, `url` downloads), `classify` tells voices from other checkpoints by content, `pairing`
//! gives each voice its index, and `model_import` stores them. `job` runs it all as the
//! `voice_import` job kind for the app; the CLI calls [`import`] directly.

pub mod archive;
mod classify;
mod fit;
mod folder;
mod job;
mod pairing;
mod source;
mod url;

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::db::models::Model;
use crate::fetch::UrlPolicy;
use crate::library::Library;
use crate::model_import::{self, CheckedModel, name_stored_files};
use archive::MemberKind;
use classify::Weights;
use pairing::Part;
use source::Staged;
use timbre_nn::synthesizer::ModelInfo;

pub use job::{KIND, VoiceImportHandler, submit};
pub use source::VoiceSource;

/// Reports how far an import is (fraction, message); an error from it (cancel) stops it.
pub type Progress<'a> = dyn FnMut(f64, String) -> Result<()> + 'a;

/// A voice import, as the CLI and the app ask for it and as its job runs it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, ts_rs::TS)]
pub struct VoiceImportRequest {
    /// A `.pth`, a `.zip`, a folder, or an http(s) link (Hugging Face `blob` links work).
    pub source: String,
    /// An index file to import with the voice, instead of any in the source (one voice only).
    #[serde(default)]
    pub index: Option<PathBuf>,
    /// When several indexes of the source fit a voice: the one to take, by its path in the
    /// source or its file name.
    #[serde(default)]
    pub use_index: Option<String>,
    /// The name in the library (one voice only; default: the model's own name, else its file's).
    #[serde(default)]
    pub name: Option<String>,
    /// The library voice to put the imported models under; None for none.
    #[serde(default)]
    pub voice_id: Option<i64>,
}

/// What an import did: the models now in the library and the files it left aside.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ts_rs::TS)]
pub struct VoiceImportReport {
    /// The source as messages name it: its absolute path, or the link.
    pub source: String,
    /// The models imported, or already in the library with the same weights; each once.
    pub models: Vec<Model>,
    /// The files of the source left aside, with why.
    pub skipped: Vec<SkippedFile>,
    /// What the imported voices need before they can convert that the models folder lacks (a
    /// HuBERT of the width they take).
    #[serde(default)]
    pub warnings: Vec<String>,
}

/// A file of the source that was not imported, and why (not a voice model, an index that fits
/// no voice, a link inside an archive…).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ts_rs::TS)]
pub struct SkippedFile {
    /// The file as messages name it: its path, or `<archive>:<entry>`.
    pub file: String,
    /// Why it was not imported, in plain words.
    pub reason: String,
}

/// A voice found and checked, with the file it was read from.
struct Voice<'a> {
    file: &'a Staged,
    info: ModelInfo,
}

/// Imports every voice of the request's source with the index that fits it. Nothing is stored
/// unless every voice found can be paired; files that are not voices are skipped with a reason,
/// and a source with no voice at all is an error naming it.
pub fn import(
    library: &Library,
    request: &VoiceImportRequest,
    progress: &mut Progress,
) -> Result<VoiceImportReport> {
    let policy = UrlPolicy::of(&library.settings()?);
    let source = VoiceSource::parse(&request.source, &policy)?;
    let label = source.label();
    let tmp_dir = library.store().tmp_dir();
    let (files, mut skipped) = source::stage(&source, &tmp_dir, &policy, progress)?;
    // A lone model file's own error says more than "nothing to import".
    let single_file = matches!(files.as_slice(), [only] if only.kind == MemberKind::Weights);

    let mut voices = Vec::new();
    let mut indexes: Vec<(&Staged, i64)> = Vec::new();
    for (i, file) in files.iter().enumerate() {
        progress(
            i as f64 / files.len() as f64,
            format!("checking {}", file.relative),
        )?;
        let outcome = match file.kind {
            MemberKind::Weights => classify::weights(&file.path).map(|w| match w {
                Weights::Voice(info) => voices.push(Voice { file, info: *info }),
                Weights::Other(reason) => skipped.push(SkippedFile {
                    file: file.shown.clone(),
                    reason,
                }),
            }),
            MemberKind::Index if request.index.is_some() => Ok(()),
            MemberKind::Index => {
                classify::index_dim(&file.path).map(|dim| indexes.push((file, dim)))
            }
        };
        if let Err(err) = outcome {
            let err = name_stored_files(err, &[(&file.path, file.shown.clone())]);
            if single_file {
                return Err(err);
            }
            skipped.push(SkippedFile {
                file: file.shown.clone(),
                reason: strip_file(&format!("{err:#}"), &file.shown),
            });
        }
    }
    if voices.is_empty() {
        return Err(nothing_to_import(&label, &skipped));
    }
    if voices.len() > 1 && request.name.is_some() {
        return Err(crate::error::invalid_input(format!(
            "{label}: holds {} voices; a name can only be given to one",
            voices.len()
        )));
    }
    let paired = match &request.index {
        Some(index) => vec![Some(explicit_index(&label, index, &voices)?)],
        None => {
            let parts = |dims: Vec<(&str, i64)>| {
                dims.into_iter()
                    .map(|(path, dim)| Part {
                        path: path.into(),
                        dim,
                    })
                    .collect::<Vec<_>>()
            };
            let voice_parts = parts(
                voices
                    .iter()
                    .map(|v| (v.file.relative.as_str(), v.info.feature_dim))
                    .collect(),
            );
            let index_parts = parts(
                indexes
                    .iter()
                    .map(|(f, dim)| (f.relative.as_str(), *dim))
                    .collect(),
            );
            let chosen = pairing::pair(&voice_parts, &index_parts, request.use_index.as_deref())
                .map_err(|e| crate::error::invalid_input(format!("{label}: {e}")))?;
            note_unused_indexes(&indexes, &voices, &chosen, &mut skipped);
            chosen
                .into_iter()
                .map(|i| i.map(|i| indexes[i].0.path.clone()))
                .collect()
        }
    };

    let mut models: Vec<Model> = Vec::new();
    let mut stored: Vec<(String, &ModelInfo)> = Vec::new();
    let mut garbled = Vec::new();
    for (n, (voice, index)) in voices.iter().zip(paired).enumerate() {
        progress(
            n as f64 / voices.len() as f64,
            format!("storing {}", voice.file.relative),
        )?;
        let model = model_import::store_checked(
            library,
            &CheckedModel {
                weights: &voice.file.path,
                info: &voice.info,
                source: &voice.file.shown,
                file_name: voice.file.relative.rsplit('/').next().unwrap_or_default(),
                index: index.as_deref(),
            },
            request.name.as_deref(),
            request.voice_id,
        )?;
        if !models.iter().any(|m| m.id == model.id) {
            let named_by_file = request.name.is_none()
                && voice
                    .info
                    .metadata
                    .model_name
                    .as_deref()
                    .is_none_or(|n| n.trim().is_empty());
            if voice.file.legacy_name && named_by_file {
                garbled.push(format!(
                    "{}: the archive does not say how its file names are encoded and they are not \
                     UTF-8 (a zip made on Windows in another language?): read as CP437, the voice \
                     is named {:?}; rename it if that is garbled",
                    voice.file.shown, model.name
                ));
            }
            stored.push((model.name.clone(), &voice.info));
            models.push(model);
        }
    }
    let mut warnings = fit::embedder_warnings(&crate::models_folder::of(library)?, &stored);
    warnings.extend(garbled);
    let imported = format!("{} voice model(s) imported from {label}", models.len());
    progress(
        1.0,
        [imported]
            .into_iter()
            .chain(warnings.clone())
            .collect::<Vec<_>>()
            .join("; "),
    )?;
    Ok(VoiceImportReport {
        source: label,
        models,
        skipped,
        warnings,
    })
}

/// The index the request names on disk, for a source with exactly one voice.
fn explicit_index(label: &str, index: &Path, voices: &[Voice]) -> Result<PathBuf> {
    let [voice] = voices else {
        return Err(crate::error::invalid_input(format!(
            "{label}: holds {} voices; an index file can only be given with one",
            voices.len()
        )));
    };
    let dim = classify::index_dim(index)?;
    model_import::check_index_fits(index, dim, Path::new(&voice.file.shown), &voice.info)?;
    Ok(index.to_path_buf())
}

fn note_unused_indexes(
    indexes: &[(&Staged, i64)],
    voices: &[Voice],
    chosen: &[Option<usize>],
    skipped: &mut Vec<SkippedFile>,
) {
    for (i, (file, dim)) in indexes.iter().enumerate() {
        if chosen.contains(&Some(i)) {
            continue;
        }
        let reason = if voices.iter().any(|v| v.info.feature_dim == *dim) {
            "another index of the source fits its voice better".to_string()
        } else {
            format!("its {dim}-d features fit none of the voices")
        };
        skipped.push(SkippedFile {
            file: file.shown.clone(),
            reason,
        });
    }
}

fn nothing_to_import(label: &str, skipped: &[SkippedFile]) -> anyhow::Error {
    let found = if skipped.is_empty() {
        "no .pth voice model in it".to_string()
    } else {
        skipped
            .iter()
            .map(|s| format!("{}: {}", s.file, s.reason))
            .collect::<Vec<_>>()
            .join("; ")
    };
    crate::error::invalid_input(format!("{label}: nothing to import: {found}"))
}

/// A reason without the file name its message starts with (the note names the file already).
fn strip_file(message: &str, shown: &str) -> String {
    message
        .strip_prefix(shown)
        .map(|rest| rest.trim_start_matches(':').trim_start())
        .unwrap_or(message)
        .to_string()
}

#[cfg(test)]
mod tests;
