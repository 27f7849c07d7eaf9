//! A run's checkpoints folder: `G_<step>.pth` / `D_<step>.pth` pairs. Each file is written to
//! a temporary name and renamed into place once whole, so a pair of names is a complete
//! checkpoint; a lone `G_` or `D_` (a save cut off between the two) or a temporary file is what a
//! kill left, never resumed from.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// The path of the generator checkpoint of `step` in `dir`, or of the newest pair's.
pub fn generator_checkpoint(dir: &Path, step: Option<i64>) -> Result<PathBuf> {
    let steps = checkpoint_steps(dir)?;
    let chosen = match step {
        Some(step) => steps.iter().copied().find(|&s| s == step),
        None => steps.last().copied(),
    };
    chosen
        .map(|step| dir.join(format!("G_{step}.pth")))
        .with_context(|| match step {
            Some(step) => format!(
                "{}: no checkpoint of step {step} (there are: {steps:?})",
                dir.display()
            ),
            None => format!("{}: no checkpoint saved yet", dir.display()),
        })
}

/// Steps `n` for which `dir` holds both `G_<n>.pth` and `D_<n>.pth`, ascending.
pub fn checkpoint_steps(dir: &Path) -> Result<Vec<i64>> {
    let mut steps: Vec<i64> = file_names(dir)?
        .iter()
        .filter_map(|name| checkpoint_step(name, "G"))
        .filter(|step| dir.join(format!("D_{step}.pth")).is_file())
        .collect();
    steps.sort_unstable();
    Ok(steps)
}

/// The names of the files in `dir`; none when it does not exist.
fn file_names(dir: &Path) -> Result<Vec<String>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("{}: cannot list", dir.display())),
    };
    Ok(entries
        .flatten()
        .filter_map(|entry| entry.file_name().into_string().ok())
        .collect())
}

/// The step of `name` when it is a `<prefix>_<step>.pth` checkpoint.
fn checkpoint_step(name: &str, prefix: &str) -> Option<i64> {
    name.strip_prefix(prefix)?
        .strip_prefix('_')?
        .strip_suffix(".pth")?
        .parse()
        .ok()
}

/// Removes what a save cut off by a kill or a crash leaves in `dir`: a `G_<n>.pth` without its
/// `D_<n>.pth` or the reverse, and the temporary files of unfinished checkpoint writes
/// (`.G_<n>.pth.<pid>.<k>.tmp`, see `write_torch_file`). Only for the run that owns `dir`, before
/// it saves: none of its own writes is under way. A file that cannot be removed is still never
/// resumed from, only pairs are.
pub(super) fn remove_unfinished_saves(dir: &Path) -> Result<()> {
    let names = file_names(dir)?;
    let partner = |name: &str| match (checkpoint_step(name, "G"), checkpoint_step(name, "D")) {
        (Some(step), _) => Some(format!("D_{step}.pth")),
        (_, Some(step)) => Some(format!("G_{step}.pth")),
        _ => None,
    };
    for name in &names {
        let unpaired = partner(name).is_some_and(|other| !names.contains(&other));
        let unfinished =
            (name.starts_with(".G_") || name.starts_with(".D_")) && name.ends_with(".tmp");
        if unpaired || unfinished {
            let _ = std::fs::remove_file(dir.join(name));
        }
    }
    Ok(())
}

pub(super) fn latest_checkpoint_pair(dir: &Path) -> Result<Option<(PathBuf, PathBuf)>> {
    Ok(checkpoint_steps(dir)?.last().map(|step| {
        (
            dir.join(format!("G_{step}.pth")),
            dir.join(format!("D_{step}.pth")),
        )
    }))
}
