//! The update feed's manifest: every release the project offers, newest or not, each with its
//! notes and its packages (form, architecture, URL, size, SHA-256). The manifest is signed as a
//! whole, so a package's hash in it is as trustworthy as the signature: the download is checked
//! against that hash alone.
//!
//! ```json
//! { "schema": 1,
//!   "releases": [ { "version": "0.2.0", "date": "2026-12-01", "notes": "…",
//!     "packages": [ { "form": "tar.gz", "arch": "x86_64", "url": "https://…",
//!                     "size_bytes": 123, "sha256": "…" } ] } ] }
//! ```

use anyhow::Result;
use serde::{Deserialize, Serialize};

/// The manifest schema this build reads; a feed of another schema is refused rather than
/// half-understood.
pub const SCHEMA: u32 = 1;

#[derive(Deserialize)]
struct Manifest {
    schema: u32,
    releases: Vec<RawRelease>,
}

/// A release as written, its packages' forms still text: a form this build does not know (a
/// later feed's `rpm`) is left out rather than refusing the feed, so that older versions still
/// hear of newer releases.
#[derive(Deserialize)]
struct RawRelease {
    version: String,
    #[serde(default)]
    date: String,
    #[serde(default)]
    notes: String,
    packages: Vec<RawPackage>,
}

#[derive(Deserialize)]
struct RawPackage {
    form: String,
    arch: String,
    url: String,
    size_bytes: u64,
    sha256: String,
}

/// One release the feed offers.
#[derive(Debug, Clone, Serialize, PartialEq, ts_rs::TS)]
pub struct Release {
    /// Its version, semver (`0.2.0`).
    pub version: String,
    /// When it was released, as the feed writes it (`2026-12-01`).
    pub date: String,
    /// What is new, as text for people.
    pub notes: String,
    /// Where to get it, one entry per package form and architecture.
    pub packages: Vec<Package>,
}

/// One downloadable package of a release.
#[derive(Debug, Clone, Serialize, PartialEq, ts_rs::TS)]
pub struct Package {
    /// How it installs.
    pub form: PackageForm,
    /// The CPU it is built for, as Rust names it (`x86_64`, `aarch64`).
    pub arch: String,
    /// Where it is downloaded from (HTTPS).
    pub url: String,
    /// Its size in bytes.
    #[ts(type = "number")]
    pub size_bytes: u64,
    /// Its SHA-256, 64 hex digits.
    pub sha256: String,
}

/// The forms a release is packaged in.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq, ts_rs::TS)]
pub enum PackageForm {
    /// A Debian package: the package manager installs and updates it.
    #[serde(rename = "deb")]
    Deb,
    /// The neutral form: one folder that runs from wherever it is unpacked, which the app can
    /// replace by itself.
    #[serde(rename = "tar.gz")]
    TarGz,
}

impl PackageForm {
    /// The form a feed or a package's marker file names: `deb` or `tar.gz`.
    pub fn from_name(name: &str) -> Option<PackageForm> {
        match name {
            "deb" => Some(PackageForm::Deb),
            "tar.gz" => Some(PackageForm::TarGz),
            _ => None,
        }
    }
}

impl Release {
    /// Its version parsed (checked when the manifest was read).
    pub fn semver(&self) -> semver::Version {
        semver::Version::parse(&self.version).unwrap_or(semver::Version::new(0, 0, 0))
    }

    /// The package of `form` built for `arch`, if the release has one.
    pub fn package(&self, form: PackageForm, arch: &str) -> Option<&Package> {
        self.packages
            .iter()
            .find(|p| p.form == form && p.arch == arch)
    }
}

/// The releases of a verified manifest, each checked: a version that is semver, packages with
/// a URL, a size and a hash. Errors name the feed and the release.
pub fn parse(feed_url: &str, manifest: &[u8]) -> Result<Vec<Release>> {
    let invalid =
        |problem: String| crate::error::invalid_input(format!("update feed {feed_url}: {problem}"));
    let manifest: Manifest = serde_json::from_slice(manifest)
        .map_err(|e| invalid(format!("the manifest is not a valid update feed: {e}")))?;
    if manifest.schema != SCHEMA {
        return Err(invalid(format!(
            "the manifest has schema {}; this version reads schema {SCHEMA}: update by hand",
            manifest.schema
        )));
    }
    let mut releases = Vec::new();
    for raw in manifest.releases {
        let version = raw.version;
        if semver::Version::parse(&version).is_err() {
            return Err(invalid(format!(
                "release {version:?} is not a semver version (such as 0.2.0)"
            )));
        }
        let mut packages = Vec::new();
        for package in raw.packages {
            let (hash, url) = (&package.sha256, &package.url);
            if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(invalid(format!(
                    "release {version}: the package {url} has sha256 {hash:?}, not 64 hex digits"
                )));
            }
            if !url.contains("://") {
                return Err(invalid(format!(
                    "release {version}: the package URL {url:?} is not absolute"
                )));
            }
            if let Some(form) = PackageForm::from_name(&package.form) {
                packages.push(Package {
                    form,
                    arch: package.arch,
                    url: package.url,
                    size_bytes: package.size_bytes,
                    sha256: package.sha256.to_ascii_lowercase(),
                });
            }
        }
        releases.push(Release {
            version,
            date: raw.date,
            notes: raw.notes,
            packages,
        });
    }
    Ok(releases)
}

/// The release with the highest version, wherever it stands in the feed.
pub fn newest(releases: Vec<Release>) -> Option<Release> {
    releases.into_iter().max_by_key(Release::semver)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FEED: &str = r#"{"schema": 1, "releases": [
        {"version": "0.2.0", "date": "2026-12-01", "notes": "New things", "packages": [
            {"form": "deb", "arch": "x86_64", "url": "https://t/a.deb", "size_bytes": 5,
             "sha256": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"},
            {"form": "tar.gz", "arch": "x86_64", "url": "https://t/a.tar.gz", "size_bytes": 7,
             "sha256": "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"}]},
        {"version": "0.10.0-rc.1", "date": "2027-01-01", "notes": "", "packages": []},
        {"version": "0.9.3", "date": "2026-11-01", "notes": "", "packages": []}]}"#;

    #[test]
    fn a_feed_parses_and_its_newest_release_is_by_semver_not_by_place_or_text() {
        let releases = parse("f", FEED.as_bytes()).unwrap();
        assert_eq!(releases.len(), 3);
        let tar = releases[0].package(PackageForm::TarGz, "x86_64").unwrap();
        assert_eq!(tar.url, "https://t/a.tar.gz");
        assert_eq!(tar.size_bytes, 7);
        assert!(releases[0].package(PackageForm::TarGz, "aarch64").is_none());
        // 0.10.0-rc.1 > 0.9.3 > 0.2.0 as semver, though "0.9.3" > "0.10.0" as text.
        assert_eq!(newest(releases).unwrap().version, "0.10.0-rc.1");
        assert_eq!(newest(Vec::new()), None);
    }

    #[test]
    fn bad_feeds_are_refused_naming_the_feed_and_the_problem() {
        let err = |text: &str| {
            parse("https://f/s.json", text.as_bytes())
                .unwrap_err()
                .to_string()
        };
        assert!(err("nope").starts_with("update feed https://f/s.json: the manifest is not"));
        assert!(err(r#"{"schema": 2, "releases": []}"#).contains("schema 2"));
        let release = |version: &str, sha: &str, url: &str| {
            format!(
                r#"{{"schema": 1, "releases": [{{"version": "{version}", "date": "", "notes": "",
                "packages": [{{"form": "tar.gz", "arch": "x86_64", "url": "{url}",
                "size_bytes": 1, "sha256": "{sha}"}}]}}]}}"#
            )
        };
        let good = "c".repeat(64);
        assert!(err(&release("1.2", &good, "https://x")).contains("not a semver version"));
        assert!(err(&release("1.2.0", "abc", "https://x")).contains("not 64 hex digits"));
        assert!(err(&release("1.2.0", &good, "x.tar.gz")).contains("not absolute"));
        assert!(parse("f", release("1.2.0", &good, "https://x").as_bytes()).is_ok());
        assert!(err(r#"{"schema": 1}"#).contains("missing field `releases`"));
    }

    #[test]
    fn a_package_form_this_version_does_not_know_is_left_out() {
        let later = FEED.replace("\"deb\"", "\"rpm\"");
        let releases = parse("f", later.as_bytes()).unwrap();
        assert_eq!(releases[0].packages.len(), 1);
        assert_eq!(releases[0].packages[0].form, PackageForm::TarGz);
    }
}
