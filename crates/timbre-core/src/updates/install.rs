//! Installing a release in the neutral tar.gz form: the package of this CPU downloaded through
//! the asset downloader (resumable, checked against the signed manifest's SHA-256), unpacked
//! beside the install folder and swapped in (`swap`). How this copy was installed decides
//! whether the app may do it at all: a .deb belongs to the package manager, whose database would
//! no longer match the files, and a source checkout to git.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::feed::{PackageForm, Release};
use crate::assets::catalog::Catalog;
use crate::assets::download::{Progress, download};
use crate::fetch::MinThroughput;
use crate::settings::Settings;

/// Replaces the install folder found from the executable (tests; a copy run from elsewhere).
pub const INSTALL_ROOT_ENV: &str = "TIMBRE_INSTALL_ROOT";

/// Where a package says how it was installed, below the install folder. Written by
/// scripts/package.sh: `deb` or `tar.gz`.
pub const FORM_MARKER: &str = "share/timbre-studio/package-form";

/// How this copy of the app was installed.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq, ts_rs::TS)]
pub enum InstallForm {
    /// From the .deb: the package manager updates it.
    #[serde(rename = "deb")]
    Deb,
    /// From the neutral tar.gz: the app can replace its folder.
    #[serde(rename = "tar.gz")]
    TarGz,
    /// Built from a checkout (no marker): git updates it.
    #[serde(rename = "source")]
    Source,
}

/// What an install did.
#[derive(Debug, Clone, Serialize, Deserialize, ts_rs::TS)]
pub struct Installed {
    /// The version now in the install folder.
    pub version: String,
    /// The install folder, now holding it.
    pub install_root: String,
    /// Where the previous version was moved (`<install folder>.old`), until the next update.
    pub previous: String,
    /// The package installed.
    pub url: String,
    /// Its SHA-256, as the signed manifest gives it and the download matched.
    pub sha256: String,
}

/// The install folder: `TIMBRE_INSTALL_ROOT`, else the parent of the executable's folder
/// (`<root>/bin/timbre`).
pub fn install_root() -> Result<PathBuf> {
    if let Some(root) = std::env::var_os(INSTALL_ROOT_ENV).filter(|r| !r.is_empty()) {
        return Ok(PathBuf::from(root));
    }
    let exe = std::env::current_exe().context("finding this program's file")?;
    exe.parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .with_context(|| format!("{} has no install folder above it", exe.display()))
}

/// How the copy at `root` was installed, from its marker file.
pub fn installed_form(root: &Path) -> Result<InstallForm> {
    let marker = root.join(FORM_MARKER);
    let text = match std::fs::read_to_string(&marker) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(InstallForm::Source),
        Err(e) => return Err(e).with_context(|| format!("reading {}", marker.display())),
    };
    match PackageForm::from_name(text.trim()) {
        Some(PackageForm::Deb) => Ok(InstallForm::Deb),
        Some(PackageForm::TarGz) => Ok(InstallForm::TarGz),
        None => Err(crate::error::invalid_input(format!(
            "{} holds {:?}, not deb or tar.gz",
            marker.display(),
            text.trim()
        ))),
    }
}

/// Why the app cannot install an update itself into a copy installed as `form`; None for the
/// tar.gz form, which it can.
pub fn refusal(form: InstallForm) -> Option<&'static str> {
    match form {
        InstallForm::Deb => {
            Some("installed from a .deb: update it with your package manager (apt)")
        }
        InstallForm::Source => Some("built from source: update with git pull"),
        InstallForm::TarGz => None,
    }
}

/// Downloads `release`'s tar.gz package for this CPU into `downloads_dir` and puts it in place
/// of the copy at `install_root`. `release` must come from [`super::check`]: the signed
/// manifest's hash is all that vouches for the download. Nothing is asked: calling this is the
/// user's yes. `progress` sees the download and may stop it (the partial file stays, resumed
/// next time). Nothing of the install changes unless the package is verified and unpacked.
pub fn install_release(
    settings: &Settings,
    release: &Release,
    install_root: &Path,
    downloads_dir: &Path,
    progress: &mut dyn FnMut(&Progress) -> Result<()>,
) -> Result<Installed> {
    if let Some(refused) = refusal(installed_form(install_root)?) {
        return Err(crate::error::invalid_input(refused));
    }
    if downloads_dir.starts_with(install_root) {
        return Err(crate::error::invalid_input(format!(
            "the library ({}) is inside the install folder {}: move it out first, as an update \
             replaces the whole folder",
            downloads_dir.display(),
            install_root.display()
        )));
    }
    let arch = std::env::consts::ARCH;
    let package = release.package(PackageForm::TarGz, arch).ok_or_else(|| {
        crate::error::not_found(format!(
            "release {} has no tar.gz package for {arch}",
            release.version
        ))
    })?;
    let name = format!("timbre-studio {}", release.version);
    let file = format!("timbre-studio-{}-{arch}.tar.gz", release.version);
    let entry = serde_json::json!({
        "endpoints": [],
        "models": [{
            "name": name, "role": "update", "description": "", "path": file,
            "urls": [package.url], "size_bytes": package.size_bytes,
            "sha256": package.sha256, "needed_for": [],
        }],
    });
    let mut catalog = Catalog::parse(&entry.to_string(), "the update feed")?;
    catalog.policy = super::remote::policy(settings, &super::feed_url(settings));
    catalog.min_throughput = MinThroughput::of(settings);
    let got = download(downloads_dir, &catalog, &catalog.assets[0], progress)?;
    let previous = super::swap::unpack_and_swap(&got.path, install_root, &release.version)?;
    // Installed: the package has done its work (an interrupted install keeps it for the next).
    let _ = std::fs::remove_file(&got.path);
    Ok(Installed {
        version: release.version.clone(),
        install_root: install_root.display().to_string(),
        previous: previous.display().to_string(),
        url: package.url.clone(),
        sha256: package.sha256.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_comes_from_the_marker_and_no_marker_is_a_checkout() {
        let root = tempfile::tempdir().unwrap();
        assert_eq!(installed_form(root.path()).unwrap(), InstallForm::Source);
        let marker = root.path().join(FORM_MARKER);
        std::fs::create_dir_all(marker.parent().unwrap()).unwrap();
        std::fs::write(&marker, "deb\n").unwrap();
        assert_eq!(installed_form(root.path()).unwrap(), InstallForm::Deb);
        std::fs::write(&marker, "tar.gz\n").unwrap();
        assert_eq!(installed_form(root.path()).unwrap(), InstallForm::TarGz);
        std::fs::write(&marker, "snap").unwrap();
        let err = installed_form(root.path()).unwrap_err().to_string();
        assert!(err.ends_with("holds \"snap\", not deb or tar.gz"), "{err}");
    }

    #[test]
    fn a_deb_or_a_checkout_is_never_replaced() {
        let root = tempfile::tempdir().unwrap();
        let release = Release {
            version: "99.0.0".into(),
            date: String::new(),
            notes: String::new(),
            packages: Vec::new(),
        };
        let downloads = tempfile::tempdir().unwrap();
        let install = || {
            install_release(
                &Settings::default(),
                &release,
                root.path(),
                downloads.path(),
                &mut |_| Ok(()),
            )
            .unwrap_err()
            .to_string()
        };
        assert_eq!(install(), "built from source: update with git pull");
        let marker = root.path().join(FORM_MARKER);
        std::fs::create_dir_all(marker.parent().unwrap()).unwrap();
        std::fs::write(&marker, "deb").unwrap();
        assert_eq!(
            install(),
            "installed from a .deb: update it with your package manager (apt)"
        );
        std::fs::write(&marker, "tar.gz").unwrap();
        assert!(install().contains("has no tar.gz package for"));
        assert!(root.path().join(FORM_MARKER).is_file());
    }
}
