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
use zip::read::ZipFile;
use zip::result::ZipError;

use super::Value;
use super::convert::to_value;
use super::graph::{Graph, StorageRef};
use super::pickle::unpickle;

type Archive = ZipArchive<BufReader<File>>;

/// The most a `data.pkl` may inflate to. Real ones hold only the object tree (RVC and RoFormer
/// models: tens of KB; fairseq HuBERT with its configs: a few hundred KB).
const MAX_PICKLE_BYTES: u64 = 64 << 20;

/// `torch.save` stores its entries uncompressed, and float weights deflate by a few percent at
/// most, so storages that add up to many times the archive's size can only come from a zip
/// bomb. The floor leaves room for tiny archives of legitimately compressible tensors.
const MAX_STORAGE_INFLATION: u64 = 16;
const STORAGE_FLOOR_BYTES: u64 = 64 << 20;

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

    let pickle = read_pickle(&mut archive, &pickle_name, file_len)?;
    let unpickled =
        unpickle(&pickle).with_context(|| format!("{pickle_name} is not a readable pickle"))?;
    check_storage_total(&unpickled.graph, file_len)?;

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
    let bytes = read_entry(archive, &name, needed, file_len)?;
    Tensor::f_from_data_size(&bytes, &[storage.numel], storage.kind)
        .with_context(|| format!("storage {name} ({:?})", storage.kind))
}

/// The pickle, read through a limit so that a bomb stops at `MAX_PICKLE_BYTES`.
fn read_pickle(archive: &mut Archive, name: &str, file_len: u64) -> Result<Vec<u8>> {
    let entry = open_entry(archive, name)?;
    let capacity = entry.size().min(file_len).min(MAX_PICKLE_BYTES) as usize;
    let mut bytes = Vec::with_capacity(capacity);
    entry
        .take(MAX_PICKLE_BYTES + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("{name} is unreadable"))?;
    if bytes.len() as u64 > MAX_PICKLE_BYTES {
        bail!(
            "{name} inflates past {} MB: not a model (a zip bomb?)",
            MAX_PICKLE_BYTES >> 20
        );
    }
    Ok(bytes)
}

/// Refuses storages whose declared sizes add up past what the archive can hold (see
/// `MAX_STORAGE_INFLATION`) before any is inflated; each is then read up to its declared size.
fn check_storage_total(graph: &Graph, file_len: u64) -> Result<()> {
    let mut sizes: HashMap<(&str, Kind), u64> = HashMap::new();
    for (_, storage) in graph.storages() {
        // A negative count is refused with its own message when the storage is loaded.
        let bytes = u64::try_from(storage.numel)
            .unwrap_or(0)
            .saturating_mul(storage.kind.elt_size_in_bytes() as u64);
        let size = sizes
            .entry((storage.key.as_str(), storage.kind))
            .or_default();
        *size = (*size).max(bytes);
    }
    let total = sizes.values().fold(0u64, |sum, &b| sum.saturating_add(b));
    let limit = file_len
        .saturating_mul(MAX_STORAGE_INFLATION)
        .max(STORAGE_FLOOR_BYTES);
    if total > limit {
        bail!(
            "its tensors would inflate to {} MB, more than {MAX_STORAGE_INFLATION} times the {} MB archive: not a model (a zip bomb?)",
            total >> 20,
            file_len >> 20
        );
    }
    Ok(())
}

fn open_entry<'a>(archive: &'a mut Archive, name: &str) -> Result<ZipFile<'a, BufReader<File>>> {
    match archive.by_name(name) {
        Ok(entry) => Ok(entry),
        Err(ZipError::FileNotFound) => bail!("{name} is missing from the archive"),
        Err(e) => bail!("{name} is unreadable ({e})"),
    }
}

/// Exactly `needed` bytes of entry `name` (an error when it holds fewer). Allocation follows
/// the data actually read, never a size field alone.
fn read_entry(archive: &mut Archive, name: &str, needed: usize, file_len: u64) -> Result<Vec<u8>> {
    let entry = open_entry(archive, name)?;
    let limit = needed as u64;
    let capacity = entry.size().min(limit).min(file_len) as usize;
    let mut bytes = Vec::with_capacity(capacity);
    entry
        .take(limit)
        .read_to_end(&mut bytes)
        .with_context(|| format!("{name} is unreadable"))?;
    if bytes.len() < needed {
        bail!(
            "storage {name} holds {} bytes, its tensors need {needed}",
            bytes.len()
        );
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use zip::CompressionMethod;
    use zip::write::{SimpleFileOptions, ZipWriter};

    use super::super::read_torch_file;

    /// An entry's name and what writes its bytes.
    type Entry<'a> = (&'a str, &'a dyn Fn(&mut dyn Write));

    /// A zip archive at `dir/voice.pth` of `entries`, deflated.
    fn deflated_archive(dir: &std::path::Path, entries: &[Entry]) -> std::path::PathBuf {
        let path = dir.join("voice.pth");
        let mut zip = ZipWriter::new(std::fs::File::create(&path).unwrap());
        let options = SimpleFileOptions::default().compression_method(CompressionMethod::Deflated);
        for (name, write) in entries {
            zip.start_file(*name, options).unwrap();
            write(&mut zip);
        }
        zip.finish().unwrap();
        path
    }

    #[test]
    fn a_pickle_that_inflates_past_the_limit_is_refused_before_it_is_held() {
        let dir = tempfile::tempdir().unwrap();
        let zeros = |out: &mut dyn Write| {
            let megabyte = vec![0u8; 1 << 20];
            for _ in 0..65 {
                out.write_all(&megabyte).unwrap();
            }
        };
        let path = deflated_archive(dir.path(), &[("archive/data.pkl", &zeros)]);
        assert!(std::fs::metadata(&path).unwrap().len() < 1 << 20);
        let message = format!("{:#}", read_torch_file(&path).unwrap_err());
        assert!(
            message.contains(
                "voice.pth: archive/data.pkl inflates past 64 MB: not a model (a zip bomb?)"
            ),
            "{message}"
        );
    }

    #[test]
    fn storages_declared_far_beyond_the_archive_are_refused_before_inflating() {
        let dir = tempfile::tempdir().unwrap();
        // One float tensor of 20 M elements (80 MB) in a storage the archive cannot hold.
        let numel = 20_000_000u32;
        let pickle = |out: &mut dyn Write| {
            let mut p = b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n(".to_vec();
            p.extend(b"(X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpuJ");
            p.extend(numel.to_le_bytes());
            p.extend(b"tQK\x00J");
            p.extend(numel.to_le_bytes());
            p.extend(b"\x85K\x01\x85\x89}tR.");
            out.write_all(&p).unwrap();
        };
        let zeros = |out: &mut dyn Write| out.write_all(&[0u8; 4096]).unwrap();
        let path = deflated_archive(
            dir.path(),
            &[("archive/data.pkl", &pickle), ("archive/data/0", &zeros)],
        );
        let message = format!("{:#}", read_torch_file(&path).unwrap_err());
        assert!(
            message.contains("voice.pth: its tensors would inflate to 76 MB")
                && message.contains("(a zip bomb?)"),
            "{message}"
        );
    }
}
