//! The pretrained generator and discriminator a training starts from: RVC's base models
//! (`f0G40k.pth` / `f0D40k.pth`, `G40k.pth` / `D40k.pth` without pitch), found in the models
//! folder as RVC lays them out (`pretrained/` for v1, `pretrained_v2/` for v2), or files given.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Where a training's starting weights come from.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum Pretrained {
    /// RVC's base models for the version, rate and pitch, when the models folder has them;
    /// else from scratch.
    #[default]
    Auto,
    /// From scratch (random weights).
    None,
    /// These two checkpoints, which must exist.
    Files {
        /// The generator (`G`) checkpoint.
        generator: PathBuf,
        /// The discriminator (`D`) checkpoint.
        discriminator: PathBuf,
    },
}

/// The files a training loads, and for `Auto` the ones it looked for and did not find.
#[derive(Debug, Default, PartialEq)]
pub struct PretrainedFiles {
    /// The generator to start from; None to start it from random weights.
    pub generator: Option<PathBuf>,
    /// The discriminator to start from; None to start it from random weights.
    pub discriminator: Option<PathBuf>,
    /// The base models `Auto` looked for and did not find; empty otherwise.
    pub missing: Vec<PathBuf>,
}

/// RVC's file names: `f0G40k.pth` for the generator of a 40 kHz model with pitch, `D32k.pth`
/// for the discriminator of a 32 kHz one without.
pub fn rvc_name(network: char, sample_rate: u32, f0: bool) -> String {
    let pitch = if f0 { "f0" } else { "" };
    format!("{pitch}{network}{}k.pth", sample_rate / 1000)
}

/// RVC's folder of base models for `version`.
pub fn rvc_folder(models_dir: &Path, version: &str) -> PathBuf {
    match version {
        "v1" => models_dir.join("pretrained"),
        _ => models_dir.join("pretrained_v2"),
    }
}

impl Pretrained {
    /// The files to load for a `version` model at `sample_rate`, with pitch or not. Given
    /// files must exist.
    pub fn resolve(
        &self,
        models_dir: &Path,
        version: &str,
        sample_rate: u32,
        f0: bool,
    ) -> anyhow::Result<PretrainedFiles> {
        match self {
            Pretrained::None => Ok(PretrainedFiles::default()),
            Pretrained::Files {
                generator,
                discriminator,
            } => {
                for file in [generator, discriminator] {
                    if !file.is_file() {
                        return Err(crate::error::not_found(format!(
                            "{}: no such pretrained file",
                            file.display()
                        )));
                    }
                }
                Ok(PretrainedFiles {
                    generator: Some(generator.clone()),
                    discriminator: Some(discriminator.clone()),
                    missing: Vec::new(),
                })
            }
            Pretrained::Auto => {
                let folder = rvc_folder(models_dir, version);
                let mut files = PretrainedFiles::default();
                for network in ['G', 'D'] {
                    let path = folder.join(rvc_name(network, sample_rate, f0));
                    let found = path.is_file().then(|| path.clone());
                    if found.is_none() {
                        files.missing.push(path);
                    }
                    match network {
                        'G' => files.generator = found,
                        _ => files.discriminator = found,
                    }
                }
                Ok(files)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_folders_are_rvcs() {
        assert_eq!(rvc_name('G', 40_000, true), "f0G40k.pth");
        assert_eq!(rvc_name('D', 32_000, false), "D32k.pth");
        let models = Path::new("/m");
        assert_eq!(rvc_folder(models, "v1"), Path::new("/m/pretrained"));
        assert_eq!(rvc_folder(models, "v2"), Path::new("/m/pretrained_v2"));
    }

    #[test]
    fn auto_finds_what_the_models_folder_has_and_says_what_it_lacks() {
        let dir = tempfile::tempdir().unwrap();
        let v2 = dir.path().join("pretrained_v2");
        std::fs::create_dir_all(&v2).unwrap();
        std::fs::write(v2.join("f0G48k.pth"), "g").unwrap();
        std::fs::write(v2.join("f0D48k.pth"), "d").unwrap();
        std::fs::write(v2.join("G40k.pth"), "g").unwrap();

        let both = Pretrained::Auto
            .resolve(dir.path(), "v2", 48_000, true)
            .unwrap();
        assert_eq!(both.generator, Some(v2.join("f0G48k.pth")));
        assert_eq!(both.discriminator, Some(v2.join("f0D48k.pth")));
        assert!(both.missing.is_empty());

        let half = Pretrained::Auto
            .resolve(dir.path(), "v2", 40_000, false)
            .unwrap();
        assert_eq!(half.generator, Some(v2.join("G40k.pth")));
        assert_eq!(half.missing, [v2.join("D40k.pth")]);

        let v1 = Pretrained::Auto
            .resolve(dir.path(), "v1", 48_000, true)
            .unwrap();
        assert_eq!((v1.generator, v1.discriminator), (None, None));
        assert_eq!(v1.missing.len(), 2);
        assert_eq!(
            Pretrained::None
                .resolve(dir.path(), "v2", 48_000, true)
                .unwrap(),
            PretrainedFiles::default()
        );
    }

    #[test]
    fn given_files_must_exist_and_serialise_as_the_ui_sends_them() {
        let dir = tempfile::tempdir().unwrap();
        let generator = dir.path().join("G.pth");
        std::fs::write(&generator, "g").unwrap();
        let files = Pretrained::Files {
            generator: generator.clone(),
            discriminator: dir.path().join("D.pth"),
        };
        let err = files.resolve(dir.path(), "v2", 40_000, true).unwrap_err();
        assert!(
            err.to_string().contains("D.pth: no such pretrained file"),
            "{err}"
        );
        let json = serde_json::to_value(&files).unwrap();
        assert_eq!(json["files"]["generator"], generator.display().to_string());
        assert_eq!(serde_json::to_value(Pretrained::Auto).unwrap(), "auto");
    }
}
