//! Putting a verified tar.gz package in place of the install folder: unpacked into a hidden
//! sibling (same file system, so the renames below cannot turn into copies), checked to be a
//! tar.gz package of the app, then two renames: the current folder to `<folder>.old`, the new one
//! to the folder's name. The running program keeps its open files through the rename and the
//! next start is the new version; a failure of the second rename moves the old folder back, so
//! the folder is always one version whole. The user's library lives elsewhere and is not seen.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::install::FORM_MARKER;

/// Unpacks `tarball` beside `root` and swaps it in; where the previous version went.
pub(super) fn unpack_and_swap(tarball: &Path, root: &Path, version: &str) -> Result<PathBuf> {
    let (parent, name) = match (root.parent(), root.file_name()) {
        (Some(parent), Some(name)) => (parent, name.to_string_lossy()),
        _ => {
            return Err(crate::error::invalid_input(format!(
                "{} cannot be replaced: it has no parent folder",
                root.display()
            )));
        }
    };
    let staging = parent.join(format!(".{name}.update-{version}"));
    remove_dir_if_there(&staging)?;
    let unpacked = unpack(tarball, &staging).and_then(|()| package_root(&staging, tarball));
    let new_root = match unpacked {
        Ok(new_root) => new_root,
        Err(err) => {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(err);
        }
    };
    let old = parent.join(format!("{name}.old"));
    let swapped = remove_dir_if_there(&old).and_then(|()| swap(root, &new_root, &old));
    let _ = std::fs::remove_dir_all(&staging);
    swapped.map(|()| old)
}

fn unpack(tarball: &Path, into: &Path) -> Result<()> {
    std::fs::create_dir_all(into).with_context(|| format!("creating {}", into.display()))?;
    let file =
        std::fs::File::open(tarball).with_context(|| format!("opening {}", tarball.display()))?;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    archive.set_preserve_permissions(true);
    // `unpack` refuses members that would land outside `into` (`..`, absolute paths, links).
    archive.unpack(into).map_err(|e| {
        crate::error::invalid_input(format!(
            "the package {} could not be unpacked (not a tar.gz, or damaged): {e}",
            tarball.display()
        ))
    })
}

/// The unpacked app's folder: the archive's one top folder (`timbre-studio-0.2.0-x86_64-linux/`,
/// as scripts/package.sh makes it), or the archive itself; it must say it is the tar.gz form.
fn package_root(staging: &Path, tarball: &Path) -> Result<PathBuf> {
    let entries: Vec<PathBuf> = std::fs::read_dir(staging)
        .with_context(|| format!("reading {}", staging.display()))?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<std::io::Result<_>>()
        .with_context(|| format!("reading {}", staging.display()))?;
    let root = match entries.as_slice() {
        [only] if only.is_dir() && !staging.join(FORM_MARKER).exists() => only.clone(),
        _ => staging.to_path_buf(),
    };
    let marker = std::fs::read_to_string(root.join(FORM_MARKER)).unwrap_or_default();
    if marker.trim() != "tar.gz" {
        return Err(crate::error::invalid_input(format!(
            "the package {} is not the app's tar.gz package: it has no {FORM_MARKER} saying \
             tar.gz",
            tarball.display()
        )));
    }
    Ok(root)
}

fn swap(root: &Path, new_root: &Path, old: &Path) -> Result<()> {
    std::fs::rename(root, old).with_context(|| {
        format!(
            "moving the current install {} aside to {}",
            root.display(),
            old.display()
        )
    })?;
    if let Err(err) = std::fs::rename(new_root, root) {
        let restored = std::fs::rename(old, root);
        return Err(err).with_context(|| {
            format!(
                "moving the new version into {} (the previous one {})",
                root.display(),
                if restored.is_ok() {
                    "is back in place".to_string()
                } else {
                    format!("stays at {}", old.display())
                }
            )
        });
    }
    Ok(())
}

fn remove_dir_if_there(dir: &Path) -> Result<()> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("removing {}", dir.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tar.gz of `files` (path, contents) below `top`.
    fn tarball(dir: &Path, top: &str, files: &[(&str, &str)]) -> PathBuf {
        let path = dir.join("p.tar.gz");
        let gz = flate2::write::GzEncoder::new(
            std::fs::File::create(&path).unwrap(),
            flate2::Compression::fast(),
        );
        let mut builder = tar::Builder::new(gz);
        for (name, text) in files {
            let mut header = tar::Header::new_gnu();
            header.set_size(text.len() as u64);
            header.set_mode(0o755);
            header.set_cksum();
            builder
                .append_data(&mut header, format!("{top}{name}"), text.as_bytes())
                .unwrap();
        }
        builder.into_inner().unwrap().finish().unwrap();
        path
    }

    #[test]
    fn the_new_folder_takes_the_old_ones_place_and_the_old_is_kept_aside() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("timbre-studio");
        std::fs::create_dir_all(root.join("bin")).unwrap();
        std::fs::write(root.join("bin/timbre"), "old").unwrap();
        let package = tarball(
            dir.path(),
            "timbre-studio-9.0.0-x86_64-linux/",
            &[("bin/timbre", "new"), (FORM_MARKER, "tar.gz\n")],
        );
        let old = unpack_and_swap(&package, &root, "9.0.0").unwrap();
        assert_eq!(old, dir.path().join("timbre-studio.old"));
        assert_eq!(
            std::fs::read_to_string(root.join("bin/timbre")).unwrap(),
            "new"
        );
        assert_eq!(
            std::fs::read_to_string(old.join("bin/timbre")).unwrap(),
            "old"
        );
        assert!(!dir.path().join(".timbre-studio.update-9.0.0").exists());
    }

    #[test]
    fn an_archive_that_is_not_the_apps_package_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("app");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("keep"), "x").unwrap();
        let package = tarball(dir.path(), "", &[("bin/timbre", "new")]);
        let err = unpack_and_swap(&package, &root, "9.0.0").unwrap_err();
        assert!(
            err.to_string().contains("is not the app's tar.gz package"),
            "{err}"
        );
        std::fs::write(&package, "not gzip").unwrap();
        let err = unpack_and_swap(&package, &root, "9.0.0").unwrap_err();
        assert!(err.to_string().contains("could not be unpacked"), "{err}");
        assert!(root.join("keep").is_file());
        assert!(!dir.path().join("app.old").exists());
        assert!(!dir.path().join(".app.update-9.0.0").exists());
    }
}
