//! The update check: the project's signed feed (`update_feed_url`; `update_check` is the off
//! switch) tells which release is newest, what is new in it and where its packages are. The
//! manifest (`feed`) counts only once its detached Ed25519 signature (`signature`, against the
//! key compiled in from `key`) matches its exact bytes, so a mirror, a proxy or a hijacked
//! server can at worst withhold an update, never offer one. Installing (`install`) is for the
//! neutral tar.gz form alone and only when asked: `timbre update install`, or the app's button.
//! A .deb is the package manager's to update, a checkout git's. The app installs through an
//! `update_install` job (`job`), the CLI in the foreground; both through `install_release`.

mod feed;
mod install;
mod job;
mod key;
mod remote;
mod signature;
mod swap;

use anyhow::Result;
use serde::Serialize;

use crate::settings::Settings;

pub use feed::{Package, PackageForm, Release, SCHEMA};
pub use install::{
    FORM_MARKER, INSTALL_ROOT_ENV, InstallForm, Installed, install_release, install_root,
    installed_form, refusal,
};
pub use job::{UpdateInstallHandler, UpdateRequest, start_install};
pub use signature::KEY_ENV;

/// Replaces the `update_feed_url` setting (the tests, which must not ask the project's feed).
pub const FEED_ENV: &str = "TIMBRE_UPDATE_FEED";

/// The version of this build, which releases are compared against.
pub const CURRENT_VERSION: &str = env!("CARGO_PKG_VERSION");

/// What the feed offers against this build.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
pub struct UpdateCheck {
    /// This build's version.
    pub current: String,
    /// The feed's newest release, newer or not; None when it lists none.
    pub latest: Option<Release>,
    /// Whether `latest` is newer than this build.
    pub newer: bool,
    /// The feed checked.
    pub feed_url: String,
    /// How this copy was installed, which says how to update it.
    pub installed_as: InstallForm,
    /// Whether the app can install `latest` itself: newer, a tar.gz install, and a tar.gz
    /// package for this CPU in the release.
    pub can_install: bool,
    /// How to update when the app cannot do it itself (a .deb, a checkout); None otherwise.
    pub how_to_update: Option<String>,
}

/// Fetches and verifies the feed the settings name and compares its newest release with this
/// build. Refused when `update_check` is off: turning it off means no request is made at all.
pub fn check(settings: &Settings) -> Result<UpdateCheck> {
    if !settings.update_check {
        return Err(crate::error::invalid_input(
            "update checks are off in Settings (update_check): turn them on to check",
        ));
    }
    let feed_url = feed_url(settings);
    let feed_url = feed_url.as_str();
    if feed_url.is_empty() {
        return Err(crate::error::invalid_input(
            "no update feed is set in Settings (update_feed_url)",
        ));
    }
    let key = signature::verifying_key()?;
    let policy = remote::policy(settings, feed_url);
    let (manifest, signature_file) = remote::fetch_feed(settings, feed_url, &policy)?;
    signature::verify(feed_url, &manifest, &signature_file, &key)?;
    let latest = feed::newest(feed::parse(feed_url, &manifest)?);
    let installed_as = installed_form(&install_root()?)?;
    Ok(compare(feed_url, latest, installed_as))
}

/// The feed asked: `TIMBRE_UPDATE_FEED` when set, else the `update_feed_url` setting.
pub(crate) fn feed_url(settings: &Settings) -> String {
    std::env::var(FEED_ENV)
        .ok()
        .filter(|url| !url.trim().is_empty())
        .unwrap_or_else(|| settings.update_feed_url.clone())
        .trim()
        .to_owned()
}

/// Where downloaded packages wait until they are installed: the library's cache.
pub fn downloads_dir(library: &crate::library::Library) -> std::path::PathBuf {
    library.data_dir().join("cache").join("updates")
}

fn compare(feed_url: &str, latest: Option<Release>, installed_as: InstallForm) -> UpdateCheck {
    let current = semver::Version::parse(CURRENT_VERSION).expect("the crate version is semver");
    let newer = latest.as_ref().is_some_and(|r| r.semver() > current);
    let can_install = newer
        && installed_as == InstallForm::TarGz
        && latest
            .as_ref()
            .and_then(|r| r.package(PackageForm::TarGz, std::env::consts::ARCH))
            .is_some();
    UpdateCheck {
        current: CURRENT_VERSION.to_string(),
        latest,
        newer,
        feed_url: feed_url.to_string(),
        installed_as,
        can_install,
        how_to_update: refusal(installed_as).filter(|_| newer).map(str::to_string),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;
    use ed25519_dalek::{Signer, SigningKey};

    fn release(version: &str, forms: &[PackageForm]) -> Release {
        Release {
            version: version.into(),
            date: "2026-12-01".into(),
            notes: "notes".into(),
            packages: forms
                .iter()
                .map(|&form| Package {
                    form,
                    arch: std::env::consts::ARCH.into(),
                    url: "https://t/p".into(),
                    size_bytes: 1,
                    sha256: "a".repeat(64),
                })
                .collect(),
        }
    }

    #[test]
    fn versions_compare_as_semver_against_this_build() {
        let current = semver::Version::parse(CURRENT_VERSION).unwrap();
        let next = format!("{}.{}.{}", current.major, current.minor, current.patch + 1);
        let check = compare("f", Some(release(&next, &[])), InstallForm::Source);
        assert!(check.newer);
        assert_eq!(check.current, CURRENT_VERSION);
        assert_eq!(
            check.how_to_update.as_deref(),
            Some("built from source: update with git pull")
        );
        assert!(!check.can_install);
        assert!(
            !compare(
                "f",
                Some(release(CURRENT_VERSION, &[])),
                InstallForm::Source
            )
            .newer
        );
        let pre = format!("{CURRENT_VERSION}-rc.1");
        assert!(!compare("f", Some(release(&pre, &[])), InstallForm::Source).newer);
        let none = compare("f", None, InstallForm::TarGz);
        assert!(!none.newer && !none.can_install && none.how_to_update.is_none());
    }

    #[test]
    fn only_a_tar_gz_install_with_a_tar_gz_package_can_install_itself() {
        let forms = [PackageForm::Deb, PackageForm::TarGz];
        let tar = compare("f", Some(release("999.0.0", &forms)), InstallForm::TarGz);
        assert!(tar.can_install && tar.how_to_update.is_none());
        let deb_only = release("999.0.0", &[PackageForm::Deb]);
        assert!(!compare("f", Some(deb_only), InstallForm::TarGz).can_install);
        let deb = compare("f", Some(release("999.0.0", &forms)), InstallForm::Deb);
        assert!(!deb.can_install);
        assert!(deb.how_to_update.unwrap().contains("package manager (apt)"));
    }

    #[test]
    fn a_manifest_verifies_with_its_signers_key_and_no_other() {
        let signer = SigningKey::from_bytes(&[7; 32]);
        let manifest = br#"{"schema": 1, "releases": []}"#;
        let sig = base64::engine::general_purpose::STANDARD
            .encode(signer.sign(manifest).to_bytes())
            + "\n";
        let key = signer.verifying_key();
        assert!(signature::verify("f", manifest, sig.as_bytes(), &key).is_ok());
        let altered = br#"{"schema": 1, "releases": [] }"#;
        assert!(signature::verify("f", altered, sig.as_bytes(), &key).is_err());
        let other = SigningKey::from_bytes(&[8; 32]).verifying_key();
        assert!(signature::verify("f", manifest, sig.as_bytes(), &other).is_err());
    }

    #[test]
    fn no_request_is_made_when_checks_are_off() {
        let settings = Settings {
            update_check: false,
            // Nothing listens there: a request would fail otherwise.
            update_feed_url: "http://127.0.0.1:9/none.json".into(),
            ..Settings::default()
        };
        let err = check(&settings).unwrap_err().to_string();
        assert!(
            err.starts_with("update checks are off in Settings"),
            "{err}"
        );
    }
}
