//! Analyses on disk as safetensors files, written tensor by tensor while the analysis runs and
//! read back one tensor at a time, so neither side holds every feature at once.
//!
//! The header's size is reserved up front and its JSON padded with spaces (which the format
//! allows), so tensors can be appended as they are computed; the file is written under a
//! temporary name of its own (processes converting the same input at once each write theirs)
//! and renamed into place when complete; the same analysis renamed twice is still that analysis.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, Result, bail, ensure};
use serde_json::{Map, Value, json};
use tch::{Kind, Tensor};

/// Header bytes reserved per tensor (an entry takes about 90).
const HEADER_PER_TENSOR: u64 = 160;

pub(super) struct Writer {
    file: BufWriter<File>,
    tmp: PathBuf,
    path: PathBuf,
    header: Map<String, Value>,
    reserved: u64,
    offset: u64,
}

impl Writer {
    /// Starts `path` for at most `tensors` tensors.
    pub fn create(path: &Path, tensors: usize) -> Result<Writer> {
        let tmp = unique_tmp_path(path);
        let file = File::create(&tmp).with_context(|| format!("writing {}", tmp.display()))?;
        let reserved = 256 + HEADER_PER_TENSOR * tensors as u64;
        let mut file = BufWriter::new(file);
        file.write_all(&vec![b' '; 8 + reserved as usize])?;
        Ok(Writer {
            file,
            tmp,
            path: path.to_path_buf(),
            header: Map::new(),
            reserved,
            offset: 0,
        })
    }

    /// Appends a float, double or long CPU tensor.
    pub fn add(&mut self, name: &str, tensor: &Tensor) -> Result<()> {
        let (dtype, kind) = match tensor.kind() {
            Kind::Double => ("F64", Kind::Double),
            Kind::Int64 => ("I64", Kind::Int64),
            _ => ("F32", Kind::Float),
        };
        let tensor = tensor
            .to_device(tch::Device::Cpu)
            .to_kind(kind)
            .contiguous();
        let bytes = tensor.numel() * kind.elt_size_in_bytes();
        let mut data = vec![0u8; bytes];
        tensor.f_copy_data_u8(&mut data, tensor.numel())?;
        self.file
            .write_all(&data)
            .with_context(|| format!("writing {}", self.tmp.display()))?;
        let end = self.offset + bytes as u64;
        self.header.insert(
            name.to_string(),
            json!({"dtype": dtype, "shape": tensor.size(), "data_offsets": [self.offset, end]}),
        );
        self.offset = end;
        Ok(())
    }

    /// Removes the unfinished file (the analysis failed or was cancelled).
    pub fn abandon(self) {
        drop(self.file);
        let _ = std::fs::remove_file(&self.tmp);
    }

    /// Writes the header and renames the file into place.
    pub fn finish(self) -> Result<()> {
        let mut header = serde_json::to_vec(&Value::Object(self.header))?;
        ensure!(
            header.len() as u64 <= self.reserved,
            "the analysis header outgrew its reserved space"
        );
        header.resize(self.reserved as usize, b' ');
        let mut file = self
            .file
            .into_inner()
            .map_err(|e| e.into_error())
            .with_context(|| format!("writing {}", self.tmp.display()))?;
        file.seek(SeekFrom::Start(0))?;
        file.write_all(&self.reserved.to_le_bytes())?;
        file.write_all(&header)?;
        file.sync_data()
            .with_context(|| format!("writing {}", self.tmp.display()))?;
        if let Err(err) = std::fs::rename(&self.tmp, &self.path) {
            // Another process finished the same analysis first: theirs serves.
            let _ = std::fs::remove_file(&self.tmp);
            if !self.path.is_file() {
                return Err(err).with_context(|| format!("writing {}", self.path.display()));
            }
        }
        Ok(())
    }
}

/// `<path without extension>.<process>-<n>.tmp`: never another writer's, in this process or
/// another.
fn unique_tmp_path(path: &Path) -> PathBuf {
    static WRITERS: AtomicU64 = AtomicU64::new(0);
    let n = WRITERS.fetch_add(1, Ordering::Relaxed);
    path.with_extension(format!("{}-{n}.tmp", std::process::id()))
}

struct Entry {
    kind: Kind,
    shape: Vec<i64>,
    start: u64,
    end: u64,
}

/// A saved analysis whose tensors are read on demand.
pub(super) struct Reader {
    path: PathBuf,
    data_start: u64,
    entries: HashMap<String, Entry>,
}

impl Reader {
    pub fn open(path: &Path) -> Result<Reader> {
        let mut file = File::open(path).with_context(|| format!("reading {}", path.display()))?;
        let size = file.metadata()?.len();
        let mut len = [0u8; 8];
        file.read_exact(&mut len)
            .with_context(|| format!("{}: not a saved analysis", path.display()))?;
        let len = u64::from_le_bytes(len);
        ensure!(
            len <= size.saturating_sub(8) && len < 1 << 30,
            "{}: not a saved analysis",
            path.display()
        );
        let mut header = vec![0u8; len as usize];
        file.read_exact(&mut header)?;
        let header: Map<String, Value> = serde_json::from_slice(&header)
            .with_context(|| format!("{}: not a saved analysis", path.display()))?;
        let data_start = 8 + len;
        let mut entries = HashMap::new();
        for (name, value) in header {
            if name == "__metadata__" {
                continue;
            }
            let kind = match value["dtype"].as_str() {
                Some("F32") => Kind::Float,
                Some("F64") => Kind::Double,
                Some("I64") => Kind::Int64,
                other => bail!("{}: `{name}` has dtype {other:?}", path.display()),
            };
            let shape: Vec<i64> = serde_json::from_value(value["shape"].clone())?;
            let [start, end]: [u64; 2] = serde_json::from_value(value["data_offsets"].clone())?;
            let numel: i64 = shape.iter().product();
            ensure!(
                start <= end
                    && data_start + end <= size
                    && (end - start) as usize == numel as usize * kind.elt_size_in_bytes(),
                "{}: `{name}` is truncated",
                path.display()
            );
            entries.insert(
                name,
                Entry {
                    kind,
                    shape,
                    start,
                    end,
                },
            );
        }
        Ok(Reader {
            path: path.to_path_buf(),
            data_start,
            entries,
        })
    }

    pub fn has(&self, name: &str) -> bool {
        self.entries.contains_key(name)
    }

    pub fn shape(&self, name: &str) -> Option<&[i64]> {
        self.entries.get(name).map(|e| e.shape.as_slice())
    }

    pub fn read(&self, name: &str) -> Result<Tensor> {
        let entry = self
            .entries
            .get(name)
            .with_context(|| format!("{}: `{name}` is missing", self.path.display()))?;
        let mut file =
            File::open(&self.path).with_context(|| format!("reading {}", self.path.display()))?;
        file.seek(SeekFrom::Start(self.data_start + entry.start))?;
        let mut data = vec![0u8; (entry.end - entry.start) as usize];
        file.read_exact(&mut data)
            .with_context(|| format!("reading {}", self.path.display()))?;
        Ok(Tensor::f_from_data_size(&data, &entry.shape, entry.kind)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writers_of_the_same_analysis_at_once_all_finish_and_leave_one_file() {
        // Three processes converting the same input at once write the same analysis.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key.safetensors");
        let features = Tensor::from_slice(&[1f32, -2.0, 3.5]);
        let mut writers: Vec<Writer> = (0..3).map(|_| Writer::create(&path, 1).unwrap()).collect();
        for writer in &mut writers {
            writer.add("features.0", &features).unwrap();
        }
        for writer in writers {
            writer.finish().unwrap();
        }
        let read = Reader::open(&path).unwrap().read("features.0").unwrap();
        assert!(read.equal(&features));
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert_eq!(left.len(), 1, "{left:?}");
    }
}
