//! Writing `torch.save` files: the records torch 2.11 writes, in its order (`data.pkl`,
//! `.format_version`, `.storage_alignment`, `byteorder`, `data/<key>`…, `version`,
//! `.data/serialization_id`), written to a temporary file beside the target, synced, then
//! renamed over it, so a failure or a kill mid-write leaves any previous file whole.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, Result, anyhow};
use tch::Tensor;

use super::Value;
use super::pickle_writer::{ORDERED_DICT, pickle};
use super::zip_writer::{ALIGNMENT, CrcSink, RecordWriter};

/// Storage bytes are copied out of libtorch this many at a time, so a big tensor (or one on a
/// GPU) never needs a second full copy in memory.
const CHUNK_BYTES: usize = 8 << 20;

impl Value {
    /// A `collections.OrderedDict` for `write_torch_file`; readers see it as a Dict.
    pub fn ordered_dict(entries: Vec<(Value, Value)>) -> Value {
        Value::Object {
            class: ORDERED_DICT.to_string(),
            args: Vec::new(),
            state: Some(Box::new(Value::Dict(entries))),
        }
    }
}

/// Writes `value` as `torch.save` (torch 2.x zip format, pickle protocol 2) would, replacing
/// `path` atomically. Dicts, `Value::ordered_dict`s, lists, tuples, strings, bytes, numbers,
/// bools, None and tensors of the usual dtypes are written; tensors each get a storage of their
/// own, contiguous, located on the CPU. Errors name the file, and say so when the disk is full.
pub fn write_torch_file(path: &Path, value: &Value) -> Result<()> {
    write_atomically(path, value).map_err(|e| match disk_full(&e) {
        // An OS error still, so that the app reports it as one (and never retries it).
        Some(full) => anyhow::Error::new(io::Error::new(
            full.kind(),
            format!("{}: cannot write: the disk is full: {full}", path.display()),
        )),
        None => anyhow!("{}: {e:#}", path.display()),
    })
}

/// The OS error in `error`'s chain that says the disk (or the user's quota of it) is full.
fn disk_full(error: &anyhow::Error) -> Option<&io::Error> {
    error
        .chain()
        .filter_map(|cause| cause.downcast_ref::<io::Error>())
        .find(|e| {
            matches!(
                e.kind(),
                io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded
            )
        })
}

fn write_atomically(path: &Path, value: &Value) -> Result<()> {
    let pickled = pickle(value).context("cannot be written")?;
    let folder = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let file_name = path
        .file_name()
        .ok_or_else(|| anyhow!("is not a file path"))?;
    let (temp_path, file) = create_temp(&folder, &file_name.to_string_lossy())
        .with_context(|| format!("cannot create a file in {}", folder.display()))?;
    let archive_name = path
        .file_stem()
        .and_then(|stem| stem.to_str())
        .filter(|stem| !stem.is_empty())
        .unwrap_or("archive");
    let written = write_archive(file, archive_name, &pickled.bytes, &pickled.storages)
        .context("cannot be written")
        .and_then(|()| {
            fs::rename(&temp_path, path).context("cannot be replaced")?;
            // The rename itself is durable only once the folder is synced.
            File::open(&folder)
                .and_then(|dir| dir.sync_all())
                .context("folder cannot be synced")
        });
    if written.is_err() {
        let _ = fs::remove_file(&temp_path);
    }
    written
}

fn create_temp(folder: &Path, file_name: &str) -> io::Result<(PathBuf, File)> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let temp = folder.join(format!(".{file_name}.{}.{n}.tmp", std::process::id()));
        match OpenOptions::new().write(true).create_new(true).open(&temp) {
            Ok(file) => return Ok((temp, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

fn write_archive(file: File, archive_name: &str, pickle: &[u8], storages: &[Tensor]) -> Result<()> {
    let mut zip = RecordWriter::new(BufWriter::with_capacity(1 << 20, file), archive_name);
    let mut ids = SerializationId::default();
    ids.add("data.pkl", zip.record("data.pkl", pickle)?);
    let alignment = ALIGNMENT.to_string();
    let byte_order = if cfg!(target_endian = "little") {
        "little"
    } else {
        "big"
    };
    for (name, data) in [
        (".format_version", "1"),
        (".storage_alignment", alignment.as_str()),
        ("byteorder", byte_order),
    ] {
        ids.add(name, zip.record(name, data.as_bytes())?);
    }
    for (key, tensor) in storages.iter().enumerate() {
        let name = format!("data/{key}");
        let crc = write_storage(&mut zip, &name, tensor)
            .with_context(|| format!("storage {name} ({:?})", tensor.kind()))?;
        ids.add(&name, crc);
    }
    ids.add("version", zip.record("version", b"3\n")?);
    zip.record(".data/serialization_id", ids.text().as_bytes())?;
    let file = zip.finish()?.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()?;
    Ok(())
}

fn write_storage<W: Write>(zip: &mut RecordWriter<W>, name: &str, tensor: &Tensor) -> Result<u32> {
    let element = tensor.f_kind()?.elt_size_in_bytes();
    let numel = tensor.numel();
    let flat = tensor.f_reshape([-1])?;
    let per_chunk = (CHUNK_BYTES / element).max(1);
    let mut buffer = vec![0u8; per_chunk.min(numel) * element];
    let mut failure = None;
    zip.streamed_record(
        name,
        (numel * element) as u64,
        |sink: &mut CrcSink<'_, W>| {
            let mut start = 0;
            while start < numel {
                let count = per_chunk.min(numel - start);
                let bytes = &mut buffer[..count * element];
                let copied = flat
                    .f_narrow(0, start as i64, count as i64)
                    .and_then(|chunk| chunk.f_copy_data_u8(bytes, count));
                if let Err(e) = copied {
                    failure = Some(e);
                    return Err(io::Error::other("tensor data cannot be read"));
                }
                sink.write_all(bytes)?;
                start += count;
            }
            Ok(())
        },
    )
    .map_err(|e| match failure.take() {
        Some(torch) => anyhow!("{e}: {torch}"),
        None => e.into(),
    })
}

/// torch's `.data/serialization_id`: 20 digits combining the record names, 20 combining their
/// CRCs, so identical content gives an identical file.
#[derive(Default)]
struct SerializationId {
    names: u64,
    crcs: u64,
}

impl SerializationId {
    fn add(&mut self, name: &str, crc: u32) {
        let name_hash = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        self.names = hash_combine(self.names, name_hash);
        self.crcs = hash_combine(self.crcs, u64::from(crc));
    }

    fn text(&self) -> String {
        format!("{:020}{:020}", self.names, self.crcs)
    }
}

/// c10's (boost's) `hash_combine`.
fn hash_combine(seed: u64, value: u64) -> u64 {
    seed ^ value
        .wrapping_add(0x9e37_79b9)
        .wrapping_add(seed << 6)
        .wrapping_add(seed >> 2)
}
