//! The zip format `torch.save` writes since torch 1.6 (pytorch/pytorch `torch/serialization.py`
//! `_save` / `_load`): `<name>/data.pkl` holds the pickle, `<name>/data/<key>` the raw bytes of
//! each storage, `<name>/byteorder` their byte order. The folder name varies with the file name
//! the checkpoint was saved as.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};
use tch::{Kind, Tensor};
use zip::ZipArchive;
use zip::result::ZipError;

use super::Value;
use super::convert::to_value;
use super::graph::StorageRef;
use super::pickle::unpickle;

type Archive = ZipArchive<BufReader<File>>;

pub(super) fn read(path: &Path) -> Result<Value> {
    let file = File::open(path).context("cannot be opened")?;
    let file_len = file.metadata().context("cannot be read")?.len();
    let mut archive = ZipArchive::new(BufReader::new(file))
        .map_err(|e| anyhow!("not a readable zip archive ({e})"))?;
    let pickle_name = archive
        .file_names()
        .filter_map(|name| name.ok().map(|n| n.into_owned()))
        .filter(|name| name == "data.pkl" || name.ends_with("/data.pkl"))
        .min_by_key(|name| name.matches('/').count())
        .ok_or_else(|| anyhow!("a zip archive without a data.pkl: not a torch.save checkpoint"))?;
    let prefix = pickle_name.trim_end_matches("data.pkl").to_string();
    check_byte_order(&mut archive, &prefix)?;

    let pickle = read_entry(&mut archive, &pickle_name, None, file_len)?;
    let unpickled =
        unpickle(&pickle).with_context(|| format!("{pickle_name} is not a readable pickle"))?;

    let mut loaded: HashMap<(&str, Kind), Tensor> = HashMap::new();
    let mut storages = HashMap::new();
    for (id, storage) in unpickled.graph.storages() {
        if storage.view.is_some() {
            bail!(
                "storage {} has legacy view metadata, which zip checkpoints never write",
                storage.key
            );
        }
        let tensor = match loaded.entry((storage.key.as_str(), storage.kind)) {
            Entry::Occupied(entry) => entry.get().shallow_clone(),
            Entry::Vacant(entry) => entry
                .insert(load_storage(&mut archive, &prefix, storage, file_len)?)
                .shallow_clone(),
        };
        storages.insert(id, tensor);
    }
    to_value(&unpickled.graph, unpickled.root, &storages)
}

/// Refuses big-endian data; files from before torch 1.10 have no `byteorder` and are little.
fn check_byte_order(archive: &mut Archive, prefix: &str) -> Result<()> {
    let name = format!("{prefix}byteorder");
    let order = match archive.by_name(&name) {
        Ok(entry) => {
            let mut order = String::new();
            entry
                .take(16)
                .read_to_string(&mut order)
                .with_context(|| format!("{name} is unreadable"))?;
            order
        }
        Err(ZipError::FileNotFound) => return Ok(()),
        Err(e) => bail!("{name} is unreadable ({e})"),
    };
    match order.trim() {
        "little" => Ok(()),
        "big" => bail!(
            "saved on a big-endian machine ({name} says `big`): only little-endian checkpoints are supported"
        ),
        other => bail!("{name} names an unknown byte order `{other}`"),
    }
}

fn load_storage(
    archive: &mut Archive,
    prefix: &str,
    storage: &StorageRef,
    file_len: u64,
) -> Result<Tensor> {
    let name = format!("{prefix}data/{}", storage.key);
    let needed = usize::try_from(storage.numel)
        .ok()
        .and_then(|n| n.checked_mul(storage.kind.elt_size_in_bytes()))
        .ok_or_else(|| anyhow!("storage {name} claims {} elements", storage.numel))?;
    let bytes = read_entry(archive, &name, Some(needed), file_len)?;
    Tensor::f_from_data_size(&bytes, &[storage.numel], storage.kind)
        .with_context(|| format!("storage {name} ({:?})", storage.kind))
}

/// The bytes of entry `name`: all of them, or exactly `needed` (an error when it holds fewer).
/// Allocation follows the data actually read, never a size field alone.
fn read_entry(
    archive: &mut Archive,
    name: &str,
    needed: Option<usize>,
    file_len: u64,
) -> Result<Vec<u8>> {
    let entry = match archive.by_name(name) {
        Ok(entry) => entry,
        Err(ZipError::FileNotFound) => bail!("{name} is missing from the archive"),
        Err(e) => bail!("{name} is unreadable ({e})"),
    };
    let declared = entry.size();
    let limit = needed.map_or(u64::MAX, |n| n as u64);
    let capacity = declared.min(limit).min(file_len) as usize;
    let mut bytes = Vec::with_capacity(capacity);
    entry
        .take(limit)
        .read_to_end(&mut bytes)
        .with_context(|| format!("{name} is unreadable"))?;
    if let Some(needed) = needed
        && bytes.len() < needed
    {
        bail!(
            "storage {name} holds {} bytes, its tensors need {needed}",
            bytes.len()
        );
    }
    Ok(bytes)
}
