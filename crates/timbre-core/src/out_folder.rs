//! Copies of results in a folder the user chose: `<dir>/<name>.<ext>`, never overwriting (a
//! number is added), written under a temporary name and renamed when complete, so a full disk
//! leaves no partial file, with the user's usual file mode. Conversions and covers are named
//! `<input> (<model>)`, cleaned takes by their take's name; a request with a folder is checked
//! against it before anything is stored or queued, with the very names the copies will take.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// `name` as a file name on any system the file may be copied to: no folder separators, no
/// control characters and none of the characters Windows refuses (`<>:"|?*`).
pub(crate) fn file_stem(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_control() || matches!(c, '/' | '\\' | '<' | '>' | ':' | '"' | '|' | '?' | '*') {
                '_'
            } else {
                c
            }
        })
        .collect()
}

/// The name of `input` converted with `model`: `<input> (<model>)`.
pub(crate) fn conversion_stem(input: &str, model: &str) -> String {
    format!("{} ({})", file_stem(input), file_stem(model))
}

/// The free name `<stem>.<ext>` takes in `dir` now.
fn free_target(dir: &Path, stem: &str, ext: &str) -> Result<PathBuf> {
    (1..)
        .map(|n| {
            if n == 1 {
                dir.join(format!("{stem}.{ext}"))
            } else {
                dir.join(format!("{stem} {n}.{ext}"))
            }
        })
        .find(|p| !p.exists())
        .context("no free output name")
}

fn create_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("{}: cannot create the output folder", dir.display()))
}

/// Refuses an output folder that cannot take `<stem>.<ext>`: one that cannot be created, or
/// where that file cannot be created (not writable, or a name too long for its file system).
/// The folder is created; the file is created and removed again.
pub(crate) fn check(dir: &Path, stem: &str, ext: &str) -> Result<()> {
    create_dir(dir).map_err(|e| crate::error::invalid_input(format!("{e:#}")))?;
    let target = free_target(dir, stem, ext)?;
    let probe = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&target);
    match probe {
        Ok(file) => {
            drop(file);
            std::fs::remove_file(&target)
                .with_context(|| format!("{}: cannot remove the test file", target.display()))
        }
        Err(e) if e.kind() == std::io::ErrorKind::InvalidFilename => {
            Err(crate::error::invalid_input(format!(
                "{}: cannot write the file: its name is too long for the file system \
                 ({} bytes): give the input or the model a shorter name",
                target.display(),
                target.file_name().map_or(0, |name| name.len())
            )))
        }
        Err(e) => Err(crate::error::invalid_input(format!(
            "{}: cannot write the file: {e}",
            target.display()
        ))),
    }
}

/// Copies `object` to the free `<dir>/<stem>.<ext>` and returns that path.
pub(crate) fn copy_into(object: &Path, dir: &Path, stem: &str, ext: &str) -> Result<PathBuf> {
    create_dir(dir)?;
    let target = free_target(dir, stem, ext)?;
    let written = (|| {
        let mut tmp = timbre_audio::export::file_to_be(dir, ".timbre-", "")?;
        std::io::copy(&mut std::fs::File::open(object)?, tmp.as_file_mut())?;
        tmp.as_file().sync_all()?;
        tmp.persist_noclobber(&target).map_err(|e| e.error)
    })();
    written.with_context(|| format!("{}: cannot write", target.display()))?;
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_folder_that_cannot_take_the_copy_is_refused_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("new").join("folder");
        check(&out, &conversion_stem("take", "Ada"), "wav").unwrap();
        assert!(out.is_dir(), "the folder is created");
        assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0, "no file left");

        let long_input = "x".repeat(250);
        let err = check(&out, &conversion_stem(&long_input, "Ada"), "wav").unwrap_err();
        let message = format!("{err:#}");
        let expected = out.join(format!("{long_input} (Ada).wav"));
        assert!(
            message.starts_with(&expected.display().to_string())
                && message.contains("too long for the file system"),
            "{message}"
        );
        assert_eq!(crate::error::kind_of(&err), crate::ErrorKind::InvalidInput);

        let file = dir.path().join("a file");
        std::fs::write(&file, b"").unwrap();
        let err = check(&file, &conversion_stem("take", "Ada"), "wav").unwrap_err();
        assert!(
            format!("{err:#}").contains("a file: cannot create the output folder"),
            "{err:#}"
        );
    }

    #[test]
    fn a_copy_never_overwrites() {
        let dir = tempfile::tempdir().unwrap();
        let object = dir.path().join("object.wav");
        std::fs::write(&object, b"audio").unwrap();
        let out = dir.path().join("out");
        assert_eq!(
            conversion_stem("a: b?\n", "A|da*"),
            "a_ b__ (A_da_)",
            "characters some file systems refuse"
        );
        let stem = conversion_stem("a/b", "Ada");
        let first = copy_into(&object, &out, &stem, "wav").unwrap();
        let second = copy_into(&object, &out, &stem, "wav").unwrap();
        assert_eq!(first, out.join("a_b (Ada).wav"));
        assert_eq!(second, out.join("a_b (Ada) 2.wav"));
        assert_eq!(std::fs::read(&second).unwrap(), b"audio");
        let names: Vec<_> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "no temporary file left: {names:?}");
        let plain = out.join("plain");
        std::fs::write(&plain, b"").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode();
        assert_eq!(mode(&first), mode(&plain), "the mode any new file gets");
    }
}
