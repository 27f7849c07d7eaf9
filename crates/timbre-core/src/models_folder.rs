//! The models folder (`models/README.md`): the shared weights every job kind looks up there,
//! HuBERT/ContentVec for content features, RMVPE for pitch, the separation models and the
//! pretrained training bases.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::Serialize;

use crate::library::Library;

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
        .find(|d| d.join("config.json").is_file())
}

pub fn find_rmvpe(dir: &Path) -> Option<PathBuf> {
    Some(dir.join("rmvpe.pt")).filter(|p| p.is_file())
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

/// What the models folder holds, for the Models page and `timbre models`.
#[derive(Debug, Clone, Serialize)]
pub struct KnownFile {
    pub name: String,
    pub role: String,
    pub description: String,
    pub location: String,
    pub present: bool,
    pub needed_for: Vec<String>,
}

/// The files `models.json` lists, each marked present or missing in `dir`.
pub fn known_files(dir: &Path) -> Result<Vec<KnownFile>> {
    let listing = dir.join("models.json");
    let text = match std::fs::read_to_string(&listing) {
        Ok(text) => text,
        Err(_) => include_str!("../../../models/models.json").to_string(),
    };
    let json: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| crate::error::invalid_input(format!("{}: {e}", listing.display())))?;
    let files = json["models"].as_array().cloned().unwrap_or_default();
    Ok(files
        .iter()
        .map(|f| {
            let text = |key: &str| f[key].as_str().unwrap_or_default().to_string();
            let location = text("location");
            KnownFile {
                present: location_present(dir, &location),
                name: text("name"),
                role: text("role"),
                description: text("description"),
                needed_for: f["needed_for"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|v| v.as_str().map(String::from))
                            .collect()
                    })
                    .unwrap_or_default(),
                location,
            }
        })
        .collect())
}

/// A location is a path, or a pattern like `separation/<name>.ckpt + separation/<name>.yaml`
/// that any file of that folder with that extension satisfies.
fn location_present(dir: &Path, location: &str) -> bool {
    let first = location.split(" + ").next().unwrap_or_default();
    match first.split_once("<name>") {
        None => dir.join(first).exists(),
        Some((folder, ext)) => std::fs::read_dir(dir.join(folder)).is_ok_and(|entries| {
            entries
                .flatten()
                .any(|e| e.file_name().to_string_lossy().ends_with(ext))
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hubert_is_found_as_a_fairseq_file_or_a_transformers_folder() {
        let dir = tempfile::tempdir().unwrap();
        assert!(find_hubert(dir.path()).is_none());
        let err = require_hubert(dir.path()).unwrap_err().to_string();
        assert!(err.contains("hubert_base.pt"), "{err}");
        std::fs::create_dir(dir.path().join("contentvec")).unwrap();
        std::fs::write(dir.path().join("contentvec/config.json"), "{}").unwrap();
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
    fn known_files_are_marked_present_or_missing() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("rmvpe.pt"), "x").unwrap();
        std::fs::create_dir(dir.path().join("separation")).unwrap();
        std::fs::write(dir.path().join("separation/vocals.ckpt"), "x").unwrap();
        let files = known_files(dir.path()).unwrap();
        let present = |name: &str| files.iter().find(|f| f.name == name).unwrap().present;
        assert!(present("rmvpe.pt"));
        assert!(!present("hubert_base.pt"));
        assert!(present("BS-RoFormer vocals"));
    }
}
