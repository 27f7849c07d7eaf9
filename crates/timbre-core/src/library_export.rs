//! A take (an import, a recording, a cleaned stem, a cover's result) or a conversion saved as a
//! file the user picked, under a name people read: the stored file copied when the chosen
//! extension is its format, else decoded and encoded block by block into the format that
//! extension names. Either way it is written under a hidden temporary name beside the target
//! and renamed when complete, so a full disk leaves no partial file. Several items go into a
//! folder under their default names ([`export_into`]), and a drag out of the app's window offers
//! named copies made for it ([`drag_copies`]). The app's Export… and `timbre library export` both
//! come here.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use timbre_audio::DecodeOptions;
use timbre_audio::export::{EncodedWriter, file_to_be};

use crate::db::{conversions, takes};
use crate::library::Library;
use crate::out_folder;
use crate::output_format::OutputFormat;

/// Frames per block while encoding: about a second.
const BLOCK_FRAMES: usize = 48_000;

/// What is exported: a take or a conversion, by id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
#[serde(tag = "kind", content = "id", rename_all = "snake_case")]
pub enum LibraryItem {
    /// A row of `takes`.
    Take(i64),
    /// A row of `conversions`.
    Conversion(i64),
}

/// An item's stored file, its format (the store's extension) and the stem of its default name.
struct Stored {
    object: PathBuf,
    format: String,
    stem: String,
}

fn stored(library: &Library, item: LibraryItem) -> Result<Stored> {
    let conn = library.conn();
    match item {
        LibraryItem::Take(id) => {
            let take = takes::require(&conn, id)?;
            Ok(Stored {
                object: library.take_path(&take),
                stem: out_folder::file_stem(&take.name),
                format: take.format,
            })
        }
        LibraryItem::Conversion(id) => {
            let conversion = conversions::require(&conn, id)?;
            let take_name = match conversion.input_take_id {
                Some(take_id) => takes::get(&conn, take_id)?.map(|take| take.name),
                None => None,
            };
            // A take's conversion names the take's stored file: not a name once it is deleted.
            let input = take_name
                .or_else(|| {
                    let path = Path::new(conversion.input_path.as_deref()?);
                    if path.starts_with(library.data_dir()) {
                        return None;
                    }
                    Some(path.file_stem()?.to_string_lossy().into_owned())
                })
                .unwrap_or_else(|| format!("conversion {id}"));
            Ok(Stored {
                object: library.conversion_path(&conversion),
                stem: conversion_stem(&input, &conversion),
                format: conversion.format,
            })
        }
    }
}

/// `<input> (<voice>, +3 st)`; a conversion without a transpose is `<input> (<voice>)`.
fn conversion_stem(input: &str, conversion: &conversions::Conversion) -> String {
    let transpose = conversion.params["transpose"].as_f64().unwrap_or(0.0);
    // Stored as an f32: 0.1 comes back as 0.10000000149.
    let transpose = (transpose * 100.0).round() / 100.0;
    let voice = if transpose == 0.0 {
        conversion.model_name.clone()
    } else {
        format!("{}, {transpose:+} st", conversion.model_name)
    };
    out_folder::conversion_stem(input, &voice)
}

/// The name an export of `item` is offered under: its stem and its stored format's extension.
pub fn default_file_name(library: &Library, item: LibraryItem) -> Result<String> {
    let stored = stored(library, item)?;
    Ok(format!("{}.{}", stored.stem, stored.format))
}

/// Writes `item` to `target` (replacing a file there: the user chose it); a target without an
/// extension gets the stored format's. Returns the path written.
pub fn export(library: &Library, item: LibraryItem, target: &Path) -> Result<PathBuf> {
    let stored = stored(library, item)?;
    let target = match target.extension() {
        Some(_) => target.to_path_buf(),
        None => target.with_extension(&stored.format),
    };
    let ext = target
        .extension()
        .map(|ext| ext.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let encode_as = if ext == stored.format {
        None
    } else {
        Some(OutputFormat::for_extension(&ext).ok_or_else(|| {
            crate::error::invalid_input(format!(
                "{}: cannot export as .{ext}: use .wav, .flac, .mp3, .ogg or .opus",
                target.display()
            ))
        })?)
    };
    let dir = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    write_into_place(&stored.object, &target, dir, encode_as)
        .map_err(|err| crate::error::explain_disk_full(err, dir))
        .with_context(|| format!("{}: cannot write", target.display()))?;
    Ok(target)
}

/// Copies each item into `dir` under its default name, in its stored format, never overwriting
/// (a number is added). Returns the paths written, in the order of `items`.
pub fn export_into(library: &Library, items: &[LibraryItem], dir: &Path) -> Result<Vec<PathBuf>> {
    items
        .iter()
        .map(|&item| {
            let stored = stored(library, item)?;
            out_folder::copy_into(&stored.object, dir, &stored.stem, &stored.format)
                .map_err(|err| crate::error::explain_disk_full(err, dir))
        })
        .collect()
}

/// The data dir's folder of the copies drags out of the window offer, one folder per drag.
const DRAG_DIR: &str = "drag-out";

/// How long a drag's copies are kept: the program they were dropped on may still be reading them.
const DRAG_COPIES_KEPT: Duration = Duration::from_secs(60 * 60);

/// Copies of `items` under their default names for a drag out of the window, in a folder of
/// their own under the data dir's `drag-out` (a drop needs files with the names people read,
/// not the store's hashes). The copies of drags over an hour old are removed first.
pub fn drag_copies(library: &Library, items: &[LibraryItem]) -> Result<Vec<PathBuf>> {
    let drags = library.data_dir().join(DRAG_DIR);
    remove_old_drags(&drags)?;
    std::fs::create_dir_all(&drags)
        .with_context(|| format!("{}: cannot create the folder", drags.display()))?;
    let dir = tempfile::Builder::new()
        .prefix("drag-")
        .tempdir_in(&drags)
        .map_err(|err| crate::error::explain_disk_full(err.into(), &drags))
        .with_context(|| format!("{}: cannot create a folder in it", drags.display()))?
        .keep();
    export_into(library, items, &dir)
}

/// Removes the folders in `drags` last written over [`DRAG_COPIES_KEPT`] ago.
fn remove_old_drags(drags: &Path) -> Result<()> {
    let entries = match std::fs::read_dir(drags) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(err) => return Err(err).with_context(|| format!("{}: cannot list", drags.display())),
    };
    let now = SystemTime::now();
    for entry in entries {
        let path = entry?.path();
        let modified = std::fs::metadata(&path).and_then(|meta| meta.modified())?;
        if now.duration_since(modified).unwrap_or_default() > DRAG_COPIES_KEPT {
            std::fs::remove_dir_all(&path).with_context(|| {
                format!("{}: cannot remove an old drag's copies", path.display())
            })?;
        }
    }
    Ok(())
}

/// `object` copied (or encoded as `encode_as`) to a temporary file in `dir`, renamed to `target`.
fn write_into_place(
    object: &Path,
    target: &Path,
    dir: &Path,
    encode_as: Option<OutputFormat>,
) -> Result<()> {
    let mut tmp = file_to_be(dir, ".timbre-export-", "")?;
    match encode_as {
        None => {
            let mut source = std::fs::File::open(object)
                .with_context(|| format!("{}: cannot read the stored file", object.display()))?;
            std::io::copy(&mut source, tmp.as_file_mut())?;
            tmp.as_file().sync_all()?;
        }
        Some(format) => {
            let mut reader = timbre_audio::open_blocks(object, &DecodeOptions::default())?;
            let (rate, channels) = (reader.sample_rate(), reader.info().channels);
            let mut writer = EncodedWriter::create(tmp.path(), format.codec(), rate, channels)?;
            while let Some(block) = reader.next_block(BLOCK_FRAMES)? {
                writer.write(&block.channels)?;
            }
            writer.finish()?;
        }
    }
    tmp.persist(target).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests;
