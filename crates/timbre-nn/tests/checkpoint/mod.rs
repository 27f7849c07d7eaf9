//! The torch checkpoint readers: exact contents of the small files that
//! `tests/data/make_checkpoint_fixtures.py` writes (zip and legacy formats, pickle protocols 2
//! and 4), variants of them re-zipped here (deflated, renamed folder, big-endian, a missing
//! storage), every checkpoint of the fixture sets (`RVC_PARITY_DIR`, `SEPARATION_PARITY_DIR`),
//! and fuzzing (`fuzz.rs`): mutated files must give a value or an error naming the file, never
//! a panic.

mod fixtures;
mod fuzz;

use std::fs;
use std::io::{Cursor, Read, Write};
use std::path::{Path, PathBuf};

use tch::{Kind, Tensor};
use timbre_nn::checkpoint::{Value, load_state_dict, read_torch_file};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipArchive, ZipWriter};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn entry<'a>(value: &'a Value, key: &str) -> &'a Value {
    value
        .get(key)
        .unwrap_or_else(|| panic!("no `{key}` in {value:?}"))
}

fn tensor<'a>(value: &'a Value, key: &str) -> &'a Tensor {
    entry(value, key)
        .as_tensor()
        .unwrap_or_else(|| panic!("`{key}` is not a tensor"))
}

fn values_f64(t: &Tensor) -> Vec<f64> {
    Vec::<f64>::try_from(t.to_kind(Kind::Double).flatten(0, -1)).expect("tensor to Vec")
}

fn values_i64(t: &Tensor) -> Vec<i64> {
    Vec::<i64>::try_from(t.to_kind(Kind::Int64).flatten(0, -1)).expect("tensor to Vec")
}

/// The object `make_checkpoint_fixtures.py` saves as `mixed()`.
fn check_mixed(root: &Value) {
    let arange = tensor(root, "arange");
    assert_eq!((arange.kind(), arange.size()), (Kind::Float, vec![3, 4]));
    assert_eq!(
        values_f64(arange),
        (0..12).map(f64::from).collect::<Vec<_>>()
    );

    let transposed = tensor(root, "transposed");
    assert_eq!(
        (transposed.size(), transposed.stride()),
        (vec![4, 3], vec![1, 4])
    );
    assert_eq!(
        values_f64(transposed),
        [0., 4., 8., 1., 5., 9., 2., 6., 10., 3., 7., 11.]
    );
    assert_eq!(
        transposed.data_ptr(),
        arange.data_ptr(),
        "a view shares its storage"
    );

    let corner = tensor(root, "corner");
    assert_eq!((corner.size(), corner.stride()), (vec![2, 2], vec![4, 1]));
    assert_eq!(values_f64(corner), [6., 7., 10., 11.]);
    assert_eq!(
        corner.data_ptr() as usize,
        arange.data_ptr() as usize + 6 * 4
    );

    let floats: [(&str, Kind, &[f64]); 4] = [
        ("half", Kind::Half, &[0.5, -2.0, 65504.0]),
        ("bfloat16", Kind::BFloat16, &[1.5, -3.0]),
        ("double", Kind::Double, &[1.0 / 3.0]),
        ("param", Kind::Float, &[1.0, 1.0]),
    ];
    for (key, kind, expected) in floats {
        assert_eq!((key, tensor(root, key).kind()), (key, kind));
        assert_eq!(values_f64(tensor(root, key)), expected, "{key}");
    }
    let ints: [(&str, Kind, &[i64]); 6] = [
        ("long", Kind::Int64, &[-(1 << 40), 7]),
        ("int", Kind::Int, &[-5, 6]),
        ("short", Kind::Int16, &[-300]),
        ("char", Kind::Int8, &[-7]),
        ("byte", Kind::Uint8, &[255]),
        ("bool", Kind::Bool, &[1, 0, 1]),
    ];
    for (key, kind, expected) in ints {
        assert_eq!((key, tensor(root, key).kind()), (key, kind));
        assert_eq!(values_i64(tensor(root, key)), expected, "{key}");
    }
    let scalar = tensor(root, "scalar");
    assert_eq!((scalar.size(), values_f64(scalar)), (vec![], vec![2.5]));
    assert_eq!(tensor(root, "empty").size(), [0, 3]);

    let ordered = entry(root, "ordered")
        .as_dict()
        .expect("OrderedDict is a dict");
    let keys: Vec<_> = ordered
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_i64()))
        .collect();
    assert_eq!(keys, [(Some("z"), Some(1)), (Some("a"), Some(2))]);

    let args = entry(root, "args");
    assert!(matches!(args, Value::Object { class, .. } if class == "argparse.Namespace"));
    assert_eq!(entry(args, "layers").as_i64(), Some(12));
    assert_eq!(entry(args, "name").as_str(), Some("tiny"));
    assert_eq!(entry(args, "rate").as_f64(), Some(0.25));
    assert!(matches!(entry(args, "flag"), Value::Bool(true)));

    let nested = entry(root, "nested");
    let list = entry(nested, "list").as_list().expect("list");
    assert_eq!(list.len(), 6);
    assert_eq!(
        (list[0].as_i64(), list[1].as_f64(), list[2].as_str()),
        (Some(1), Some(2.5), Some("text"))
    );
    assert!(matches!(list[3], Value::None) && matches!(list[4], Value::Bool(true)));
    assert!(matches!(&list[5], Value::Bytes(b) if b == b"\x00\xffbytes"));
    let tuple = entry(nested, "tuple");
    assert!(matches!(tuple, Value::Tuple(items) if items.len() == 2));
    let inner = tuple.as_list().expect("tuple")[1]
        .as_list()
        .expect("inner tuple");
    assert_eq!(
        inner.iter().map(Value::as_i64).collect::<Vec<_>>(),
        [Some(2), Some(3)]
    );
    assert_eq!(entry(nested, "big").as_f64(), Some(2f64.powi(70)));
    assert_eq!(entry(nested, "negative").as_i64(), Some(-123456789));
    assert_eq!(
        entry(nested, "set").as_list().map(|s| s[0].as_i64()),
        Some(Some(7))
    );
    assert_eq!(
        entry(nested, "frozenset").as_list().map(|s| s[0].as_i64()),
        Some(Some(8))
    );
    assert_eq!(
        entry(nested, "unicode").as_str(),
        Some("h\u{e9}llo \u{2713}")
    );
}

#[test]
fn zip_checkpoint_reads_exactly() {
    check_mixed(&read_torch_file(&data("mixed.pt")).unwrap());
}

#[test]
fn legacy_checkpoint_reads_exactly() {
    check_mixed(&read_torch_file(&data("mixed_legacy.pt")).unwrap());
}

#[test]
fn protocol_4_checkpoint_reads_exactly() {
    let root = read_torch_file(&data("small_proto4.pt")).unwrap();
    let weight = tensor(&root, "weight_t");
    assert_eq!((weight.size(), weight.stride()), (vec![3, 2], vec![1, 3]));
    assert_eq!(values_f64(weight), [0., 3., 1., 4., 2., 5.]);
    let meta = entry(&root, "meta");
    assert_eq!(
        (entry(meta, "sr").as_str(), entry(meta, "f0").as_i64()),
        (Some("40k"), Some(1))
    );
    assert!(matches!(entry(meta, "bytes"), Value::Bytes(b) if b == &[1, 2]));
}

/// The zip checkpoint `name` re-zipped through `edit`, which may rename, change or drop
/// entries.
fn rezip(
    name: &str,
    method: CompressionMethod,
    edit: impl Fn(&str, Vec<u8>) -> Option<(String, Vec<u8>)>,
) -> Vec<u8> {
    let mut archive = ZipArchive::new(fs::File::open(data(name)).unwrap()).unwrap();
    let mut writer = ZipWriter::new(Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default().compression_method(method);
    for i in 0..archive.len() {
        let mut file = archive.by_index(i).unwrap();
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).unwrap();
        if let Some((name, bytes)) = edit(&file.name().unwrap(), bytes) {
            writer.start_file(name, options).unwrap();
            writer.write_all(&bytes).unwrap();
        }
    }
    writer.finish().unwrap().into_inner()
}

fn rezip_mixed(
    method: CompressionMethod,
    edit: impl Fn(&str, Vec<u8>) -> Option<(String, Vec<u8>)>,
) -> tempfile::NamedTempFile {
    temp_file(&rezip("mixed.pt", method, edit))
}

fn temp_file(bytes: &[u8]) -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(bytes).unwrap();
    file
}

fn error_of(path: &Path) -> String {
    match read_torch_file(path) {
        Ok(value) => panic!("{} read as {value:?}", path.display()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn deflated_entries_and_any_folder_name_read() {
    let file = rezip_mixed(CompressionMethod::Deflated, |name, bytes| {
        let (_, rest) = name.split_once('/')?;
        Some((format!("archive/{rest}"), bytes))
    });
    check_mixed(&read_torch_file(file.path()).unwrap());
}

#[test]
fn damaged_zip_checkpoints_give_errors_naming_file_and_problem() {
    let big = rezip_mixed(CompressionMethod::Stored, |name, bytes| {
        Some((
            name.to_string(),
            if name.ends_with("/byteorder") {
                b"big".to_vec()
            } else {
                bytes
            },
        ))
    });
    let message = error_of(big.path());
    assert!(
        message.contains(&big.path().display().to_string()) && message.contains("big-endian"),
        "{message}"
    );

    let missing = rezip_mixed(CompressionMethod::Stored, |name, bytes| {
        (!name.ends_with("/data/3")).then(|| (name.to_string(), bytes))
    });
    let message = error_of(missing.path());
    assert!(
        message.contains(&missing.path().display().to_string())
            && message.contains("data/3 is missing"),
        "{message}"
    );

    let short = rezip_mixed(CompressionMethod::Stored, |name, bytes| {
        Some((
            name.to_string(),
            if name.ends_with("/data/0") {
                bytes[..8].to_vec()
            } else {
                bytes
            },
        ))
    });
    let message = error_of(short.path());
    assert!(message.contains("data/0 holds 8 bytes"), "{message}");

    let no_pickle = rezip_mixed(CompressionMethod::Stored, |name, bytes| {
        (!name.ends_with("data.pkl")).then(|| (name.to_string(), bytes))
    });
    assert!(error_of(no_pickle.path()).contains("without a data.pkl"));
}

#[test]
fn files_that_are_not_checkpoints_give_errors_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in [
        ("text.pth", &b"hello world"[..]),
        ("empty.pth", b""),
        ("zipish.pth", b"PK\x03\x04junk"),
    ] {
        let path = dir.path().join(name);
        fs::write(&path, bytes).unwrap();
        let message = error_of(&path);
        assert!(
            message.starts_with(&path.display().to_string()),
            "{message}"
        );
    }
    let message = error_of(&dir.path().join("absent.pth"));
    assert!(
        message.contains("absent.pth") && message.contains("cannot be opened"),
        "{message}"
    );
}

#[test]
fn load_state_dict_finds_the_tensors() {
    let weights = load_state_dict(&data("small_proto4.pt")).unwrap();
    assert_eq!(weights.names().collect::<Vec<_>>(), ["weight_t"]);
    let mixed = load_state_dict(&data("mixed_legacy.pt")).unwrap();
    assert_eq!(mixed.len(), 15);
}
