//! faiss's binary format for an IVF-Flat index, as `faiss.write_index` writes it
//! (facebookresearch/faiss: `faiss/impl/index_write.cpp`, `faiss/impl/index_read.cpp`):
//!
//! ```text
//! "IwFl"  header(d, ntotal)  nlist:u64  nprobe:u64
//!   "IxF2" header(d, nlist)  centroids: count:u64 (= nlist·d) f32…     coarse quantizer
//!   direct map: type:u8  array: count:u64 i64…  [hashtable: count:u64 (i64,i64)…]
//!   "ilar" nlist:u64 code_size:u64 ("full" sizes: count:u64 u64… | "sprs" pairs (list, size))
//!          then for each non-empty list: size·code_size bytes of codes, size i64 ids
//! header(d, n) = d:i32 ntotal:i64 dummy:i64 dummy:i64 is_trained:u8 metric:i32
//! ```
//!
//! All little-endian; a Flat code is the vector's `d` f32 values.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;

use anyhow::{Context, Result, bail, ensure};

use super::{InvertedList, IvfFlatIndex};

const IVF_FLAT: [u8; 4] = *b"IwFl";
const FLAT_L2: [u8; 4] = *b"IxF2";
const FLAT_INNER_PRODUCT: [u8; 4] = *b"IxFI";
const ARRAY_LISTS: [u8; 4] = *b"ilar";
const FULL_SIZES: [u8; 4] = *b"full";
const SPARSE_SIZES: [u8; 4] = *b"sprs";
/// faiss writes two placeholder fields with this value in every index header.
const HEADER_DUMMY: i64 = 1 << 20;
const METRIC_INNER_PRODUCT: i32 = 0;
const METRIC_L2: i32 = 1;
const DIRECT_MAP_HASHTABLE: u8 = 2;

impl IvfFlatIndex {
    /// Reads a faiss IVF-Flat index (`IVF{n},Flat`, as RVC's training writes it).
    pub fn read(path: &Path) -> Result<Self> {
        let file = File::open(path)
            .with_context(|| format!("{}: cannot open the index", path.display()))?;
        let length = file
            .metadata()
            .with_context(|| format!("{}: cannot stat the index", path.display()))?
            .len();
        let mut reader = IndexReader {
            inner: BufReader::new(file),
            remaining: length,
        };
        let code = reader.bytes::<4>("the index type").with_context(|| {
            format!(
                "{} is not a faiss index: it holds only {length} bytes",
                path.display()
            )
        })?;
        if !is_fourcc(code) {
            bail!(
                "{} is not a faiss index: it starts with {}{}",
                path.display(),
                printable(&code),
                file_kind(code)
            );
        }
        let mut index = read_ivf_flat(&mut reader, code)
            .with_context(|| format!("{}: not a readable faiss IVF-Flat index", path.display()))?;
        index.source = Some(path.to_path_buf());
        Ok(index)
    }

    /// Writes the index in faiss's format (readable by `faiss.read_index` and RVC) through a
    /// temporary file renamed over `path`, so a reader never sees half an index. An index read
    /// from a file is written back byte for byte, except that a direct map (which RVC never
    /// makes) is not kept: faiss rebuilds one on `make_direct_map()`.
    pub fn write(&self, path: &Path) -> Result<()> {
        let name = path
            .file_name()
            .with_context(|| format!("{}: not a file path", path.display()))?;
        let temporary = path.with_file_name(format!(
            ".{}.{}.partial",
            name.to_string_lossy(),
            std::process::id()
        ));
        let written = File::create(&temporary)
            .map_err(anyhow::Error::from)
            .and_then(|file| {
                let mut writer = BufWriter::new(file);
                write_ivf_flat(self, &mut writer)?;
                writer
                    .into_inner()
                    .map_err(|e| e.into_error())?
                    .sync_all()?;
                Ok(())
            })
            .and_then(|()| Ok(std::fs::rename(&temporary, path)?));
        if written.is_err() {
            let _ = std::fs::remove_file(&temporary);
        }
        written.with_context(|| format!("{}: cannot write the index", path.display()))
    }
}

/// What faiss's fourccs name, for messages about files we do not read.
fn describe_fourcc(code: [u8; 4]) -> String {
    let known = match &code {
        b"IvFl" => {
            " (an IVF-Flat index from a faiss older than 1.5: load and save it with a current faiss)"
        }
        b"IwFd" => " (IVF-Flat with deduplication)",
        b"IwPQ" | b"IwQR" | b"IwPf" => " (IVF-PQ)",
        b"IwSq" | b"IwSQ" => " (IVF with scalar quantizer)",
        b"IxF2" | b"IxFI" | b"IxFl" => " (a flat index without inverted lists)",
        b"IxMp" | b"IxM2" => " (an ID-map wrapper)",
        b"IxPT" => " (an index behind a PCA or other transform)",
        b"IHNf" | b"IHNp" | b"IHNs" => " (HNSW)",
        _ => "",
    };
    format!("{}{known}", printable(&code))
}

/// faiss names every index and list type with four ASCII letters or digits (`IwFl`, `ilar`…).
fn is_fourcc(code: [u8; 4]) -> bool {
    code.iter().all(u8::is_ascii_alphanumeric)
}

/// Bytes as text when they are printable ASCII, else as hex.
fn printable(bytes: &[u8]) -> String {
    if bytes.iter().all(|b| b.is_ascii_graphic() || *b == b' ') {
        format!("`{}`", String::from_utf8_lossy(bytes))
    } else {
        let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
        format!("the bytes {}", hex.join(" "))
    }
}

/// What a file that is not an index is, when its first bytes tell.
fn file_kind(code: [u8; 4]) -> &'static str {
    match &code {
        b"PK\x03\x04" => " (a zip archive: a .pth voice model rather than its .index?)",
        [0x80, 2..=5, ..] => " (a Python pickle)",
        b"RIFF" | b"fLaC" | b"OggS" | [b'I', b'D', b'3', _] => " (an audio file)",
        _ => "",
    }
}

struct IndexReader<R> {
    inner: R,
    remaining: u64,
}

impl<R: Read> IndexReader<R> {
    /// Fails before allocating when the file is too short for what its fields announce.
    fn reserve(&mut self, count: u64, item_size: u64, what: &str) -> Result<usize> {
        let bytes = count.checked_mul(item_size);
        match bytes {
            Some(bytes) if bytes <= self.remaining => {
                self.remaining -= bytes;
                usize::try_from(count).context("too large for this machine")
            }
            _ => bail!(
                "truncated: {what} announces {count} items of {item_size} bytes, the file has {} bytes left",
                self.remaining
            ),
        }
    }

    fn bytes<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        self.reserve(1, N as u64, what)?;
        let mut buffer = [0u8; N];
        self.inner
            .read_exact(&mut buffer)
            .with_context(|| format!("reading {what}"))?;
        Ok(buffer)
    }

    fn u8(&mut self, what: &str) -> Result<u8> {
        Ok(self.bytes::<1>(what)?[0])
    }

    fn i32(&mut self, what: &str) -> Result<i32> {
        Ok(i32::from_le_bytes(self.bytes(what)?))
    }

    fn i64(&mut self, what: &str) -> Result<i64> {
        Ok(i64::from_le_bytes(self.bytes(what)?))
    }

    fn u64(&mut self, what: &str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.bytes(what)?))
    }

    /// `count` fixed-size little-endian items, read through a small buffer.
    fn array<T, const N: usize>(
        &mut self,
        count: u64,
        decode: fn([u8; N]) -> T,
        what: &str,
    ) -> Result<Vec<T>> {
        let count = self.reserve(count, N as u64, what)?;
        let mut items = Vec::with_capacity(count);
        let mut buffer = vec![0u8; N * 8192];
        while items.len() < count {
            let take = (count - items.len()).min(8192);
            let chunk = &mut buffer[..take * N];
            self.inner
                .read_exact(chunk)
                .with_context(|| format!("reading {what}"))?;
            items.extend(chunk.chunks_exact(N).map(|item| {
                let mut bytes = [0u8; N];
                bytes.copy_from_slice(item);
                decode(bytes)
            }));
        }
        Ok(items)
    }

    /// A faiss `std::vector` as written by WRITEVECTOR: its length, then its items.
    fn vector<T, const N: usize>(
        &mut self,
        decode: fn([u8; N]) -> T,
        what: &str,
    ) -> Result<Vec<T>> {
        let count = self.u64(what)?;
        self.array(count, decode, what)
    }

    fn skip(&mut self, count: u64, item_size: u64, what: &str) -> Result<()> {
        self.reserve(count, item_size, what)?;
        let bytes = count * item_size;
        let skipped = std::io::copy(&mut (&mut self.inner).take(bytes), &mut std::io::sink())?;
        ensure!(skipped == bytes, "truncated inside {what}");
        Ok(())
    }
}

/// The fields of faiss's `Index` header.
struct Header {
    dim: usize,
    count: u64,
}

fn read_header<R: Read>(reader: &mut IndexReader<R>, owner: &str) -> Result<Header> {
    let dim = reader.i32(&format!("the {owner}'s dimension"))?;
    let count = reader.i64(&format!("the {owner}'s vector count"))?;
    reader.i64("a header placeholder")?;
    reader.i64("a header placeholder")?;
    let trained = reader.u8(&format!("the {owner}'s is_trained flag"))?;
    let metric = reader.i32(&format!("the {owner}'s metric"))?;
    ensure!(dim > 0, "the {owner} has dimension {dim}");
    ensure!(count >= 0, "the {owner} holds {count} vectors");
    ensure!(
        trained == 1,
        "the {owner} is not trained (is_trained = {trained}): train it before saving it"
    );
    match metric {
        METRIC_L2 => {}
        METRIC_INNER_PRODUCT => bail!(
            "the {owner} ranks by inner product; only squared-L2 indexes are supported (RVC's retrieval weights its neighbours by distance)"
        ),
        other => bail!("the {owner} uses faiss metric {other}; only squared L2 (1) is supported"),
    }
    Ok(Header {
        dim: dim as usize,
        count: count as u64,
    })
}

/// The index after its type `code`, which the caller has read.
fn read_ivf_flat<R: Read>(reader: &mut IndexReader<R>, code: [u8; 4]) -> Result<IvfFlatIndex> {
    ensure!(
        code == IVF_FLAT,
        "the file holds a faiss index of type {}, not IVF-Flat (`IwFl`)",
        describe_fourcc(code)
    );
    let header = read_header(reader, "index")?;
    let dim = header.dim;
    let nlist = reader.u64("the number of inverted lists")?;
    let nprobe = reader.u64("nprobe")?;
    ensure!(nlist > 0, "the index has no inverted lists");

    let quantizer_code = reader.bytes::<4>("the coarse quantizer's type")?;
    match quantizer_code {
        FLAT_L2 => {}
        FLAT_INNER_PRODUCT => bail!(
            "the coarse quantizer ranks by inner product (`IxFI`); only squared-L2 quantizers (`IxF2`) are supported"
        ),
        other => bail!(
            "the coarse quantizer is of type {}; only a flat L2 quantizer (`IxF2`) is supported",
            describe_fourcc(other)
        ),
    }
    let quantizer = read_header(reader, "coarse quantizer")?;
    ensure!(
        quantizer.dim == dim,
        "the coarse quantizer has dimension {} but the index {dim}",
        quantizer.dim
    );
    ensure!(
        quantizer.count == nlist,
        "the coarse quantizer holds {} centroids for {nlist} inverted lists",
        quantizer.count
    );
    let centroid_values = reader.u64("the centroid count")?;
    ensure!(
        Some(centroid_values) == nlist.checked_mul(dim as u64),
        "the coarse quantizer stores {centroid_values} values for {nlist} centroids of dimension {dim}"
    );
    let centroids = reader.array(centroid_values, f32::from_le_bytes, "the centroids")?;

    let map_type = reader.u8("the direct map type")?;
    let map_entries = reader.u64("the direct map size")?;
    reader.skip(map_entries, 8, "the direct map")?;
    if map_type == DIRECT_MAP_HASHTABLE {
        let pairs = reader.u64("the direct map hashtable size")?;
        reader.skip(pairs, 16, "the direct map hashtable")?;
    }

    let lists_code = reader.bytes::<4>("the inverted lists type")?;
    match &lists_code {
        code if *code == ARRAY_LISTS => {}
        b"ilod" => bail!(
            "the inverted lists are on disk (`ilod`) in a separate file; merge them into the index with faiss first"
        ),
        b"il00" => bail!("the index was saved without its inverted lists (`il00`)"),
        _ => bail!(
            "inverted lists of type {} are not supported; only in-memory lists (`ilar`) are",
            describe_fourcc(lists_code)
        ),
    }
    let lists_nlist = reader.u64("the inverted lists' count")?;
    ensure!(
        lists_nlist == nlist,
        "the inverted lists number {lists_nlist} but the index has {nlist}"
    );
    let code_size = reader.u64("the code size")?;
    ensure!(
        code_size == 4 * dim as u64,
        "codes are {code_size} bytes, but Flat codes of dimension {dim} take {}",
        4 * dim
    );
    // Bounded by the file's length: the quantizer stored nlist·d values.
    let nlist = nlist as usize;
    let sizes = read_list_sizes(reader, nlist)?;

    let stored = sizes
        .iter()
        .try_fold(0u64, |sum, &size| sum.checked_add(size))
        .context("the list sizes add up past 2^64")?;
    ensure!(
        stored == header.count,
        "the header counts {} vectors but the inverted lists hold {stored}",
        header.count
    );
    // One check for the whole payload before any list is allocated.
    let payload = stored
        .checked_mul(code_size + 8)
        .context("list sizes overflow")?;
    ensure!(
        payload <= reader.remaining,
        "truncated: the lists need {payload} bytes, the file has {} left",
        reader.remaining
    );
    let mut lists = Vec::with_capacity(nlist);
    for (number, &size) in sizes.iter().enumerate() {
        let vectors = reader.array(
            size.checked_mul(dim as u64)
                .with_context(|| format!("list {number} of {size} vectors overflows"))?,
            f32::from_le_bytes,
            &format!("list {number}'s vectors"),
        )?;
        let ids = reader.array(size, i64::from_le_bytes, &format!("list {number}'s ids"))?;
        lists.push(InvertedList { ids, vectors });
    }
    IvfFlatIndex::from_parts(
        dim,
        usize::try_from(nprobe).unwrap_or(usize::MAX),
        centroids,
        lists,
    )
}

fn read_list_sizes<R: Read>(reader: &mut IndexReader<R>, nlist: usize) -> Result<Vec<u64>> {
    let layout = reader.bytes::<4>("the list size layout")?;
    let entries = reader.vector(u64::from_le_bytes, "the list sizes")?;
    match layout {
        FULL_SIZES => {
            ensure!(
                entries.len() == nlist,
                "{} list sizes for {nlist} lists",
                entries.len()
            );
            Ok(entries)
        }
        SPARSE_SIZES => {
            ensure!(
                entries.len().is_multiple_of(2),
                "the sparse list sizes have an odd length {}",
                entries.len()
            );
            let mut sizes = vec![0; nlist];
            for pair in entries.chunks_exact(2) {
                let list = usize::try_from(pair[0]).ok().filter(|&list| list < nlist);
                let list = list.with_context(|| {
                    format!("a sparse list size names list {} of {nlist}", pair[0])
                })?;
                sizes[list] = pair[1];
            }
            Ok(sizes)
        }
        other => bail!("unknown list size layout {}", describe_fourcc(other)),
    }
}

fn write_header(out: &mut impl Write, dim: usize, count: usize) -> std::io::Result<()> {
    out.write_all(&(dim as i32).to_le_bytes())?;
    out.write_all(&(count as i64).to_le_bytes())?;
    out.write_all(&HEADER_DUMMY.to_le_bytes())?;
    out.write_all(&HEADER_DUMMY.to_le_bytes())?;
    out.write_all(&[1])?;
    out.write_all(&METRIC_L2.to_le_bytes())
}

fn write_u64s(out: &mut impl Write, values: impl IntoIterator<Item = u64>) -> std::io::Result<()> {
    values
        .into_iter()
        .try_for_each(|value| out.write_all(&value.to_le_bytes()))
}

fn write_f32s(out: &mut impl Write, values: &[f32]) -> std::io::Result<()> {
    values
        .iter()
        .try_for_each(|value| out.write_all(&value.to_le_bytes()))
}

fn write_ivf_flat(index: &IvfFlatIndex, out: &mut impl Write) -> std::io::Result<()> {
    let dim = index.dim();
    let nlist = index.nlist();
    out.write_all(&IVF_FLAT)?;
    write_header(out, dim, index.len())?;
    write_u64s(out, [nlist as u64, index.nprobe() as u64])?;

    out.write_all(&FLAT_L2)?;
    write_header(out, dim, nlist)?;
    write_u64s(out, [index.centroids.len() as u64])?;
    write_f32s(out, &index.centroids)?;

    // An empty direct map: type NoMap, no entries.
    out.write_all(&[0])?;
    write_u64s(out, [0])?;

    out.write_all(&ARRAY_LISTS)?;
    write_u64s(out, [nlist as u64, 4 * dim as u64])?;
    let sizes = index.lists.iter().map(|list| list.ids.len() as u64);
    // faiss's own choice between the two layouts, so that our files match its byte for byte.
    let non_empty = index
        .lists
        .iter()
        .filter(|list| !list.ids.is_empty())
        .count();
    if non_empty > nlist / 2 {
        out.write_all(&FULL_SIZES)?;
        write_u64s(out, [nlist as u64])?;
        write_u64s(out, sizes)?;
    } else {
        out.write_all(&SPARSE_SIZES)?;
        write_u64s(out, [2 * non_empty as u64])?;
        let pairs = sizes
            .enumerate()
            .filter(|&(_, size)| size > 0)
            .flat_map(|(list, size)| [list as u64, size]);
        write_u64s(out, pairs)?;
    }
    for list in index.lists.iter().filter(|list| !list.ids.is_empty()) {
        write_f32s(out, &list.vectors)?;
        list.ids
            .iter()
            .try_for_each(|id| out.write_all(&id.to_le_bytes()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small index by hand: 3 lists in dimension 2, one list left empty.
    fn small_index() -> IvfFlatIndex {
        let centroids = vec![0.0, 0.0, 10.0, 10.0, -10.0, 5.0];
        let lists = vec![
            InvertedList {
                ids: vec![0, 2],
                vectors: vec![0.5, 0.0, -0.5, 1.0],
            },
            InvertedList {
                ids: vec![1],
                vectors: vec![9.0, 11.0],
            },
            InvertedList {
                ids: vec![],
                vectors: vec![],
            },
        ];
        IvfFlatIndex::from_parts(2, 1, centroids, lists).expect("a consistent index")
    }

    fn written(index: &IvfFlatIndex) -> (tempfile::TempDir, std::path::PathBuf, Vec<u8>) {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let path = dir.path().join("small.index");
        index.write(&path).expect("written");
        let bytes = std::fs::read(&path).expect("read back");
        (dir, path, bytes)
    }

    #[test]
    fn writes_what_faiss_writes_and_reads_it_back() {
        let index = small_index();
        let (dir, path, bytes) = written(&index);
        assert_eq!(&bytes[..4], b"IwFl");
        // d, ntotal, two placeholders, is_trained, metric L2, nlist, nprobe, then the quantizer.
        assert_eq!(i32::from_le_bytes(bytes[4..8].try_into().unwrap()), 2);
        assert_eq!(i64::from_le_bytes(bytes[8..16].try_into().unwrap()), 3);
        assert_eq!(
            i64::from_le_bytes(bytes[16..24].try_into().unwrap()),
            1 << 20
        );
        assert_eq!(&bytes[32..37], &[1, 1, 0, 0, 0]);
        assert_eq!(u64::from_le_bytes(bytes[37..45].try_into().unwrap()), 3);
        assert_eq!(&bytes[53..57], b"IxF2");
        assert!(
            bytes.windows(4).any(|w| w == b"full"),
            "2 of 3 lists are filled: the full layout"
        );
        let back = IvfFlatIndex::read(&path).expect("read");
        assert_eq!(back.dim(), 2);
        assert_eq!(back.len(), 3);
        assert_eq!(back.nlist(), 3);
        assert_eq!(back.reconstruct(2).unwrap(), [-0.5, 1.0]);
        let again = dir.path().join("again.index");
        back.write(&again).unwrap();
        assert_eq!(std::fs::read(&again).unwrap(), bytes);
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            2,
            "no temporary file is left behind"
        );
    }

    #[test]
    fn mostly_empty_lists_use_the_sparse_layout() {
        let centroids = vec![0.0, 1.0, 2.0, 3.0];
        let lists = vec![
            InvertedList {
                ids: vec![],
                vectors: vec![],
            },
            InvertedList {
                ids: vec![],
                vectors: vec![],
            },
            InvertedList {
                ids: vec![0],
                vectors: vec![2.5],
            },
            InvertedList {
                ids: vec![],
                vectors: vec![],
            },
        ];
        let index = IvfFlatIndex::from_parts(1, 1, centroids, lists).unwrap();
        let (_dir, path, bytes) = written(&index);
        let at = bytes
            .windows(4)
            .position(|w| w == b"sprs")
            .expect("the sparse layout");
        let pairs: Vec<u64> = bytes[at + 4..at + 28]
            .chunks(8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
            .collect();
        assert_eq!(pairs, [2, 2, 1]);
        let back = IvfFlatIndex::read(&path).unwrap();
        assert_eq!(back.reconstruct(0).unwrap(), [2.5]);
    }

    #[test]
    fn refuses_truncated_files_naming_the_file() {
        let (dir, _path, bytes) = written(&small_index());
        for cut in [3, 20, 60, bytes.len() - 9, bytes.len() - 1] {
            let path = dir.path().join("cut.index");
            std::fs::write(&path, &bytes[..cut]).unwrap();
            let error = format!(
                "{:#}",
                IvfFlatIndex::read(&path)
                    .err()
                    .expect("a truncated file fails")
            );
            assert!(error.contains("cut.index"), "{error}");
            assert!(error.contains("truncated"), "cut at {cut}: {error}");
        }
    }

    #[test]
    fn a_file_that_is_no_index_is_named_with_its_first_bytes_printable() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("random.index");
        std::fs::write(&path, [0x9f, 0x00, 0xff, 0x1b, 0x42, 0x42, 0x42, 0x42]).unwrap();
        let error = format!("{:#}", IvfFlatIndex::read(&path).err().unwrap());
        assert!(
            error.ends_with(
                "random.index is not a faiss index: it starts with the bytes 9f 00 ff 1b"
            ),
            "{error}"
        );
        std::fs::write(&path, b"PK\x03\x04 and the rest of a model").unwrap();
        let error = format!("{:#}", IvfFlatIndex::read(&path).err().unwrap());
        assert!(
            error.contains("random.index is not a faiss index: it starts with the bytes 50 4b 03 04 (a zip archive"),
            "{error}"
        );
    }

    #[test]
    fn list_sizes_that_wrap_around_to_the_header_count_are_an_error() {
        let (dir, _path, mut bytes) = written(&small_index());
        let at = bytes.windows(4).position(|w| w == b"full").unwrap() + 12;
        // u64::MAX + 4 + 0 wraps to the header's count of 3.
        bytes[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        bytes[at + 8..at + 16].copy_from_slice(&4u64.to_le_bytes());
        let path = dir.path().join("wrapped.index");
        std::fs::write(&path, &bytes).unwrap();
        let error = format!("{:#}", IvfFlatIndex::read(&path).err().unwrap());
        assert!(error.contains("list sizes add up past 2^64"), "{error}");
    }

    #[test]
    fn refuses_other_index_types_and_lists_by_name() {
        let (dir, _path, bytes) = written(&small_index());
        let path = dir.path().join("other.index");
        let mut pq = bytes.clone();
        pq[..4].copy_from_slice(b"IwPQ");
        std::fs::write(&path, &pq).unwrap();
        let error = format!("{:#}", IvfFlatIndex::read(&path).err().unwrap());
        assert!(
            error.contains("IwPQ") && error.contains("IVF-PQ"),
            "{error}"
        );

        let mut on_disk = bytes.clone();
        let at = on_disk.windows(4).position(|w| w == b"ilar").unwrap();
        on_disk[at..at + 4].copy_from_slice(b"ilod");
        std::fs::write(&path, &on_disk).unwrap();
        let error = format!("{:#}", IvfFlatIndex::read(&path).err().unwrap());
        assert!(
            error.contains("ilod") && error.contains("on disk"),
            "{error}"
        );

        let mut inner_product = bytes;
        inner_product[33..37].copy_from_slice(&0i32.to_le_bytes());
        std::fs::write(&path, &inner_product).unwrap();
        let error = format!("{:#}", IvfFlatIndex::read(&path).err().unwrap());
        assert!(error.contains("inner product"), "{error}");
    }

    #[test]
    fn refuses_inconsistent_dimensions() {
        let (dir, _path, mut bytes) = written(&small_index());
        let quantizer_dim = 57;
        bytes[quantizer_dim..quantizer_dim + 4].copy_from_slice(&3i32.to_le_bytes());
        let path = dir.path().join("bad.index");
        std::fs::write(&path, &bytes).unwrap();
        let error = format!("{:#}", IvfFlatIndex::read(&path).err().unwrap());
        assert!(error.contains("dimension 3 but the index 2"), "{error}");
    }

    #[test]
    fn refuses_sizes_larger_than_the_file_before_allocating() {
        let (dir, _path, mut bytes) = written(&small_index());
        let huge = 1u64 << 40;
        bytes[8..16].copy_from_slice(&(huge + 1).to_le_bytes());
        let sizes = bytes.windows(4).position(|w| w == b"full").unwrap() + 4 + 8;
        bytes[sizes..sizes + 8].copy_from_slice(&huge.to_le_bytes());
        let path = dir.path().join("huge.index");
        std::fs::write(&path, &bytes).unwrap();
        let error = format!("{:#}", IvfFlatIndex::read(&path).err().unwrap());
        assert!(error.contains("truncated: the lists need"), "{error}");
    }
}
