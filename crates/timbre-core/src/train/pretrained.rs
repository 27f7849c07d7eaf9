//! The pretrained generator and discriminator a training starts from: RVC's base models
//! (`f0G40k.pth` / `f0D40k.pth`, `G40k.pth` / `D40k.pth` without pitch), found in the models
//! folder as RVC lays them out (`pretrained/` for v1, `pretrained_v2/` for v2), a community base
//! of the catalogue (TITAN, Ov2 Super, KLM, … as Applio's download page offers them:
//! `base-<name>-<rate>k-g` / `-d`, under `pretrained_community/`), or files given.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::assets::catalog::{Asset, Catalog};

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
    /// A community base of the catalogue by its name (`titan`), downloaded for the rate.
    Community {
        /// The base's name in the catalogue's `base-<name>-<rate>k-g` entries.
        name: String,
    },
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
            Pretrained::Community { name } => community_files(
                &Catalog::read()?,
                models_dir,
                name,
                (version, sample_rate, f0),
            ),
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

/// The community bases of `catalog`: each name with the rates it comes at, in catalogue order.
pub fn community_bases(catalog: &Catalog) -> Vec<(String, Vec<u32>)> {
    let mut bases: Vec<(String, Vec<u32>)> = Vec::new();
    for (name, rate) in catalog.assets.iter().filter_map(community_generator) {
        match bases.iter_mut().find(|(known, _)| *known == name) {
            Some((_, rates)) => rates.push(rate),
            None => bases.push((name, vec![rate])),
        }
    }
    bases
}

/// The base name and rate of a community generator entry (`base-titan-40k-g`).
fn community_generator(asset: &Asset) -> Option<(String, u32)> {
    let (name, rate) = asset
        .name
        .strip_prefix("base-")?
        .strip_suffix("k-g")?
        .rsplit_once('-')?;
    Some((name.to_string(), rate.parse::<u32>().ok()? * 1000))
}

fn community_files(
    catalog: &Catalog,
    models_dir: &Path,
    name: &str,
    (version, sample_rate, f0): (&str, u32, bool),
) -> anyhow::Result<PretrainedFiles> {
    if version != "v2" || !f0 {
        return Err(crate::error::invalid_input(format!(
            "the community bases are v2 models with pitch; this dataset makes a {version} model{}",
            if f0 { "" } else { " without pitch" }
        )));
    }
    let bases = community_bases(catalog);
    let Some((_, rates)) = bases.iter().find(|(known, _)| known == name) else {
        let names: Vec<&str> = bases.iter().map(|(known, _)| known.as_str()).collect();
        return Err(crate::error::invalid_input(format!(
            "no community base is named {name:?}: there are {}",
            names.join(", ")
        )));
    };
    let khz = sample_rate / 1000;
    if !rates.contains(&sample_rate) {
        let offered: Vec<String> = rates.iter().map(|r| format!("{} kHz", r / 1000)).collect();
        return Err(crate::error::invalid_input(format!(
            "the {name} base has no {khz} kHz version (it comes at {}): prepare the dataset at one of those rates",
            offered.join(", ")
        )));
    }
    let assets: Vec<&Asset> = ['g', 'd']
        .iter()
        .map(|network| catalog.find(&format!("base-{name}-{khz}k-{network}")))
        .collect::<anyhow::Result<_>>()?;
    let [generator, discriminator] = [0, 1].map(|i| models_dir.join(&assets[i].path));
    if !generator.is_file() || !discriminator.is_file() {
        let names: Vec<&str> = assets.iter().map(|a| a.name.as_str()).collect();
        return Err(crate::error::not_found(format!(
            "the {name} base's {khz} kHz files are not in {}: download them (`timbre assets \
             download {}`, or on the Train page)",
            models_dir.display(),
            names.join(" ")
        )));
    }
    Ok(PretrainedFiles {
        generator: Some(generator),
        discriminator: Some(discriminator),
        missing: Vec::new(),
    })
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

    #[test]
    fn a_community_base_resolves_to_its_downloads_for_the_rate_or_says_what_is_wrong() {
        let catalog = Catalog::read().unwrap();
        let bases = community_bases(&catalog);
        assert!(
            bases.contains(&("titan".to_string(), vec![32_000, 40_000, 48_000])),
            "{bases:?}"
        );
        assert!(
            bases.contains(&("rin-e3".to_string(), vec![40_000])),
            "{bases:?}"
        );
        let dir = tempfile::tempdir().unwrap();
        let resolve = |name: &str, version, rate, f0| {
            community_files(&catalog, dir.path(), name, (version, rate, f0))
                .map_err(|e| e.to_string())
        };
        let missing = resolve("titan", "v2", 40_000, true).unwrap_err();
        assert!(
            missing.contains("timbre assets download base-titan-40k-g base-titan-40k-d"),
            "{missing}"
        );
        assert!(
            resolve("rin-e3", "v2", 48_000, true)
                .unwrap_err()
                .contains("it comes at 40 kHz")
        );
        assert!(
            resolve("titan", "v1", 40_000, true)
                .unwrap_err()
                .contains("v2 models with pitch")
        );
        assert!(
            resolve("nope", "v2", 40_000, true)
                .unwrap_err()
                .contains("there are titan, ")
        );

        for network in ['g', 'd'] {
            let asset = catalog.find(&format!("base-titan-40k-{network}")).unwrap();
            let path = dir.path().join(&asset.path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x").unwrap();
        }
        let files = resolve("titan", "v2", 40_000, true).unwrap();
        let generator = files.generator.unwrap();
        assert!(
            generator.ends_with("G-f040k-TITAN-Medium.pth"),
            "{}",
            generator.display()
        );
        assert!(files.missing.is_empty());
    }
}
