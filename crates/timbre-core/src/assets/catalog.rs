//! The catalogue of every weight file the app uses (`models/models.json`, shipped inside the
//! binary): where each lands under the models folder, where it is downloaded from, its size and
//! SHA-256, and what needs it.

use std::path::{Component, Path};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::fetch::{Configured, MinThroughput, UrlPolicy};
use crate::settings::Settings;

/// Replaces the shipped catalogue with the file it names.
pub const CATALOG_ENV: &str = "TIMBRE_ASSET_CATALOG";

const SHIPPED: &str = include_str!("../../../../models/models.json");

/// The parsed asset catalogue, its endpoints and download policy as the settings configure them.
#[derive(Debug, Clone, Deserialize)]
pub struct Catalog {
    /// Base URLs tried in order for each relative URL.
    endpoints: Vec<String>,
    /// Every asset the catalogue lists; names are unique and paths stay inside the models folder.
    #[serde(rename = "models")]
    pub assets: Vec<Asset>,
    /// Where the catalogue was read from, for messages.
    #[serde(skip)]
    pub origin: String,
    /// What may be fetched; set by [`Catalog::load`] from the settings.
    #[serde(skip)]
    pub policy: UrlPolicy,
    /// How slow a transfer may get before it counts as stalled; set by [`Catalog::load`] from
    /// the settings.
    #[serde(skip)]
    pub(crate) min_throughput: MinThroughput,
}

/// One weight file in the catalogue: where it lands, where it comes from, and how to verify it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, ts_rs::TS)]
pub struct Asset {
    /// Short unique name used to pick the asset (`hubert`, `rmvpe`, …).
    pub name: String,
    /// What the file does, e.g. `content-features`, `pitch`, `pretrained-generator`, `separation`.
    pub role: String,
    /// Human-readable explanation of the file, shown on the Models page and by `timbre assets`.
    pub description: String,
    /// Where it lands, relative to the models folder.
    pub path: String,
    /// Paths relative to each endpoint, or absolute URLs; primary first, then mirrors.
    pub urls: Vec<String>,
    /// Expected size of the file in bytes; None when unknown.
    pub size_bytes: Option<u64>,
    /// None: unverified at source; the first download's hash is pinned.
    pub sha256: Option<String>,
    /// The features that use it, as free text (`convert`, `dataset (rmvpe f0)`, …).
    pub needed_for: Vec<String>,
    /// Whether conversion needs it, so it is downloaded by `--essentials`; false when absent.
    #[serde(default)]
    pub essential: bool,
}

impl Catalog {
    /// `TIMBRE_ASSET_CATALOG` when set, else the shipped catalogue, with its endpoints as the
    /// settings and `TIMBRE_DOWNLOAD_ENDPOINT` configure them: the endpoint replaces the
    /// catalogue's (the variable over the setting), the mirrors are tried after it.
    pub fn load(settings: &Settings) -> Result<Catalog> {
        Ok(Catalog::read()?.configured(settings))
    }

    /// This catalogue with its endpoints, URL policy and stall limit as the settings and
    /// `TIMBRE_DOWNLOAD_ENDPOINT` configure them (see [`Catalog::load`]).
    pub fn configured(mut self, settings: &Settings) -> Catalog {
        let configured = Configured::of(settings);
        if let Some(endpoint) = &configured.endpoint {
            self.endpoints = vec![endpoint.clone()];
        }
        self.endpoints.extend(configured.mirrors.iter().cloned());
        self.policy = UrlPolicy::from_configured(&configured);
        self.min_throughput = MinThroughput::of(settings);
        self
    }

    /// The catalogue's assets, its endpoints unconfigured: for what is present, not for
    /// downloading.
    pub fn read() -> Result<Catalog> {
        match std::env::var_os(CATALOG_ENV) {
            Some(path) => {
                let path = Path::new(&path);
                let text = std::fs::read_to_string(path).with_context(|| {
                    format!(
                        "reading the asset catalogue {} ({CATALOG_ENV})",
                        path.display()
                    )
                })?;
                Catalog::parse(&text, &path.display().to_string())
            }
            None => Catalog::parse(SHIPPED, "the shipped models/models.json"),
        }
    }

    /// Parses catalogue JSON read from `origin` (named in errors) and checks every entry.
    pub fn parse(text: &str, origin: &str) -> Result<Catalog> {
        let mut catalog: Catalog = serde_json::from_str(text).map_err(|e| {
            crate::error::invalid_input(format!("the asset catalogue {origin} is not valid: {e}"))
        })?;
        catalog.origin = origin.to_string();
        catalog.check()?;
        Ok(catalog)
    }

    fn check(&self) -> Result<()> {
        let invalid = |asset: &Asset, problem: String| {
            crate::error::invalid_input(format!(
                "the asset catalogue {}: asset {:?} {problem}",
                self.origin, asset.name
            ))
        };
        for (i, asset) in self.assets.iter().enumerate() {
            if self.assets[..i].iter().any(|a| a.name == asset.name) {
                return Err(invalid(asset, "is listed twice".into()));
            }
            let path = Path::new(&asset.path);
            if asset.path.is_empty()
                || !path.components().all(|c| matches!(c, Component::Normal(_)))
            {
                return Err(invalid(
                    asset,
                    format!(
                        "has path {:?}, which is not inside the models folder",
                        asset.path
                    ),
                ));
            }
            if asset.urls.is_empty() {
                return Err(invalid(asset, "has no URL".into()));
            }
            if let Some(hash) = &asset.sha256
                && (hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()))
            {
                return Err(invalid(
                    asset,
                    format!("has sha256 {hash:?}, not 64 hex digits"),
                ));
            }
        }
        Ok(())
    }

    /// The asset called `name`, or whose path is `name`.
    pub fn find(&self, name: &str) -> Result<&Asset> {
        self.assets
            .iter()
            .find(|a| a.name == name || a.path == name)
            .ok_or_else(|| {
                crate::error::not_found(format!(
                    "no asset named {name:?} in {}; known: {}",
                    self.origin,
                    self.assets
                        .iter()
                        .map(|a| a.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })
    }

    /// The assets marked essential, in catalogue order.
    pub fn essentials(&self) -> impl Iterator<Item = &Asset> {
        self.assets.iter().filter(|a| a.essential)
    }

    /// Where `asset` is downloaded from, in the order tried: each relative URL at each endpoint,
    /// then absolute ones.
    pub fn sources(&self, asset: &Asset) -> Vec<String> {
        let (absolute, relative): (Vec<&String>, Vec<&String>) =
            asset.urls.iter().partition(|u| u.contains("://"));
        let mut out = Vec::new();
        for endpoint in &self.endpoints {
            for path in &relative {
                out.push(format!(
                    "{}/{}",
                    endpoint.trim_end_matches('/'),
                    path.trim_start_matches('/')
                ));
            }
        }
        out.extend(absolute.into_iter().cloned());
        out.dedup();
        out
    }
}

/// What the models folder holds, for the Models page and `timbre models`.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
pub struct KnownFile {
    /// The asset's catalogue name.
    pub name: String,
    /// What the file does, as the catalogue's `role`.
    pub role: String,
    /// Human-readable explanation of the file.
    pub description: String,
    /// Where it lands, relative to the models folder.
    pub location: String,
    /// Whether the file exists in the models folder (not whether its hash checks out).
    pub present: bool,
    /// The features that use it, as free text.
    pub needed_for: Vec<String>,
}

/// The files the catalogue lists, each marked present or missing in `dir`.
pub fn known_files(dir: &Path) -> Result<Vec<KnownFile>> {
    let catalog = Catalog::read()?;
    Ok(catalog
        .assets
        .into_iter()
        .map(|asset| KnownFile {
            present: dir.join(&asset.path).is_file(),
            name: asset.name,
            role: asset.role,
            description: asset.description,
            location: asset.path,
            needed_for: asset.needed_for,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fetch::ENDPOINT_ENV;

    #[test]
    fn known_files_are_marked_present_or_missing() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("rmvpe.pt"), "x").unwrap();
        std::fs::create_dir(dir.path().join("pretrained_v2")).unwrap();
        std::fs::write(dir.path().join("pretrained_v2/f0G40k.pth"), "x").unwrap();
        let files = known_files(dir.path()).unwrap();
        let present = |location: &str| {
            files
                .iter()
                .find(|f| f.location == location)
                .unwrap()
                .present
        };
        assert!(present("rmvpe.pt"));
        assert!(!present("hubert_base.pt"));
        assert!(present("pretrained_v2/f0G40k.pth"));
        assert!(!present("pretrained/f0G40k.pth"));
    }

    #[test]
    fn the_shipped_catalogue_lists_every_asset_with_its_sources() {
        let catalog = Catalog::parse(SHIPPED, "shipped").unwrap();
        let essentials: Vec<&str> = catalog.essentials().map(|a| a.name.as_str()).collect();
        assert_eq!(essentials, ["hubert", "rmvpe"]);
        let hubert = catalog.find("hubert_base.pt").unwrap();
        assert_eq!(
            hubert.sha256.as_deref(),
            Some("f54b40fd2802423a5643779c4861af1e9ee9c1564dc9d32f54f20b5ffba7db96")
        );
        let generator = catalog.find("pretrained_v2/f0G40k.pth").unwrap();
        assert_eq!(
            generator.sha256.as_deref(),
            Some("3b2c44035e782c4b14ddc0bede9e2f4a724d025cd073f736d4f43708453adfcb")
        );
        for version in ["pretrained", "pretrained_v2"] {
            for rate in ["32k", "40k", "48k"] {
                for file in ["f0G", "f0D", "G", "D"] {
                    catalog
                        .find(&format!("{version}/{file}{rate}.pth"))
                        .unwrap();
                }
            }
        }
        for asset in &catalog.assets {
            assert!(!catalog.sources(asset).is_empty(), "{}", asset.name);
            // Only the separation checkpoints, Applio's embedders and the community bases come
            // without a published hash (pinned at their first download).
            let unpublished = ["separation/", "embedders/", "pretrained_community/"];
            assert!(
                asset.sha256.is_some() || unpublished.iter().any(|p| asset.path.starts_with(p)),
                "{}",
                asset.name
            );
        }
        let rmvpe = catalog.find("rmvpe").unwrap();
        assert_eq!(
            catalog.sources(rmvpe)[..2],
            [
                "https://huggingface.co/lj1995/VoiceConversionWebUI/resolve/main/rmvpe.pt",
                "https://huggingface.co/licyk/rvc-model/resolve/main/rmvpe/rmvpe.pt",
            ]
        );
    }

    #[test]
    fn the_endpoint_setting_replaces_the_catalogues_and_mirrors_come_after() {
        if std::env::var_os(ENDPOINT_ENV).is_some() || std::env::var_os(CATALOG_ENV).is_some() {
            panic!("run this test without {ENDPOINT_ENV} and {CATALOG_ENV}");
        }
        let settings = Settings {
            download_endpoint: "https://hf-mirror.com/".into(),
            download_mirrors: vec!["https://mirror.example/models".into()],
            ..Settings::default()
        };
        let catalog = Catalog::load(&settings).unwrap();
        let sources = catalog.sources(catalog.find("rmvpe").unwrap());
        assert_eq!(
            sources[..3],
            [
                "https://hf-mirror.com/lj1995/VoiceConversionWebUI/resolve/main/rmvpe.pt",
                "https://hf-mirror.com/licyk/rvc-model/resolve/main/rmvpe/rmvpe.pt",
                "https://mirror.example/models/lj1995/VoiceConversionWebUI/resolve/main/rmvpe.pt",
            ]
        );
    }

    #[test]
    fn bad_catalogues_are_refused_naming_the_asset() {
        let entry = |path: &str, sha: &str| {
            format!(
                r#"{{"endpoints": [], "models": [{{"name": "x", "role": "", "description": "",
                "path": "{path}", "urls": ["a"], "size_bytes": 1, "sha256": {sha},
                "needed_for": []}}]}}"#
            )
        };
        let err = Catalog::parse(&entry("../x", "null"), "t").unwrap_err();
        assert!(err.to_string().contains("\"x\""), "{err}");
        let err = Catalog::parse(&entry("x", "\"abc\""), "t").unwrap_err();
        assert!(err.to_string().contains("64 hex"), "{err}");
        assert!(Catalog::parse(&entry("a/x", "null"), "t").is_ok());
    }

    #[test]
    fn only_https_is_fetched_unless_the_endpoint_is_plain_http() {
        let shipped = Catalog::parse(SHIPPED, "shipped").unwrap();
        assert!(shipped.policy.check("https://huggingface.co/x").is_ok());
        assert!(shipped.policy.check("http://example.com/x").is_err());
        let settings = Settings {
            download_mirrors: vec!["http://127.0.0.1:8000/mirror".into()],
            ..Settings::default()
        };
        let mirrored = Catalog::load(&settings).unwrap();
        assert!(mirrored.policy.check("http://127.0.0.1:8000/x").is_ok());
        assert!(mirrored.policy.check("http://127.0.0.1:8001/x").is_err());
    }
}
