//! The folder a conversion's result is also copied to: `<dir>/<input> (<model>).<ext>`, never
//! overwriting (a number is added). A request is checked against it before anything is stored
//! or queued, with the very names the copies will take.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::output_format::OutputFormat;

/// The free name the copy of `input` converted with `model` takes in `dir` now.
fn free_target(dir: &Path, input: &str, model: &str, format: OutputFormat) -> Result<PathBuf> {
    let clean = |s: &str| {
        s.chars()
            .map(|c| if c == '/' || c == '\\' { '_' } else { c })
            .collect::<String>()
    };
    let stem = format!("{} ({})", clean(input), clean(model));
    let ext = format.extension();
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

/// Refuses an output folder that cannot take the copy of `input` converted with `model`: one
/// that cannot be created, or where that file cannot be created (not writable, or a name too
/// long for its file system). The folder is created; the file is created and removed again.
pub(crate) fn check(dir: &Path, input: &str, model: &str, format: OutputFormat) -> Result<()> {
    create_dir(dir).map_err(|e| crate::error::invalid_input(format!("{e:#}")))?;
    let target = free_target(dir, input, model, format)?;
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
                "{}: cannot write the converted file: its name is too long for the file system \
                 ({} bytes): give the input or the model a shorter name",
                target.display(),
                target.file_name().map_or(0, |name| name.len())
            )))
        }
        Err(e) => Err(crate::error::invalid_input(format!(
            "{}: cannot write the converted file: {e}",
            target.display()
        ))),
    }
}

/// Copies the result to `<dir>/<input> (<model>).<ext>`, never overwriting: a number is added.
/// The copy is written under a temporary name and renamed when complete, so a full disk leaves
/// no partial file.
pub(crate) fn copy_out(
    object: &Path,
    dir: &Path,
    input: &str,
    model: &str,
    format: OutputFormat,
) -> Result<PathBuf> {
    create_dir(dir)?;
    let target = free_target(dir, input, model, format)?;
    let written = (|| {
        let mut tmp = tempfile::Builder::new()
            .prefix(".timbre-")
            .tempfile_in(dir)?;
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

    #[test]
    fn a_folder_that_cannot_take_the_copy_is_refused_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("new").join("folder");
        check(&out, "take", "Ada", OutputFormat::Wav16).unwrap();
        assert!(out.is_dir(), "the folder is created");
        assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0, "no file left");

        let long_input = "x".repeat(250);
        let err = check(&out, &long_input, "Ada", OutputFormat::Wav16).unwrap_err();
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
        let err = check(&file, "take", "Ada", OutputFormat::Wav16).unwrap_err();
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
        let first = copy_out(&object, &out, "a/b", "Ada", OutputFormat::Wav16).unwrap();
        let second = copy_out(&object, &out, "a/b", "Ada", OutputFormat::Wav16).unwrap();
        assert_eq!(first, out.join("a_b (Ada).wav"));
        assert_eq!(second, out.join("a_b (Ada) 2.wav"));
    }
}
