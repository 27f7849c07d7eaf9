//! The `torch.save` writer: what it writes reads back exactly (`round_trip`), real torch loads
//! it (`torch_check.rs`, when the `.venv` has torch), a failed write leaves the previous file
//! whole, and the RVC export gives the model it was given (`export.rs`).

mod export;
mod torch_check;

use std::fs;
use std::path::Path;

use tch::{Kind, Tensor};
use timbre_nn::checkpoint::{Value, read_torch_file, write_torch_file};

pub fn text(s: &str) -> Value {
    Value::Str(s.to_string())
}

/// The raw bytes of a tensor, in row-major order.
pub fn tensor_bytes(t: &Tensor) -> Vec<u8> {
    let mut bytes = vec![0u8; t.numel() * t.kind().elt_size_in_bytes()];
    t.copy_data_u8(&mut bytes, t.numel());
    bytes
}

/// `a` and `b` hold the same tree: same keys in the same order, same scalars (floats by their
/// bits), tensors of the same dtype, shape and bytes. An `ordered_dict` equals the Dict read back.
pub fn assert_same(a: &Value, b: &Value, at: &str) {
    match (a, b) {
        (Value::Object { class, state, .. }, other) if class == "collections.OrderedDict" => {
            assert_same(state.as_deref().expect("entries"), other, at)
        }
        (Value::None, Value::None) => {}
        (Value::Bool(x), Value::Bool(y)) => assert_eq!(x, y, "{at}"),
        (Value::Int(x), Value::Int(y)) => assert_eq!(x, y, "{at}"),
        (Value::Float(x), Value::Float(y)) => assert_eq!(x.to_bits(), y.to_bits(), "{at}"),
        (Value::Str(x), Value::Str(y)) => assert_eq!(x, y, "{at}"),
        (Value::Bytes(x), Value::Bytes(y)) => assert_eq!(x, y, "{at}"),
        (Value::List(x), Value::List(y)) | (Value::Tuple(x), Value::Tuple(y)) => {
            assert_eq!(x.len(), y.len(), "{at}: lengths");
            for (i, (x, y)) in x.iter().zip(y).enumerate() {
                assert_same(x, y, &format!("{at}[{i}]"));
            }
        }
        (Value::Dict(x), Value::Dict(y)) => {
            assert_eq!(x.len(), y.len(), "{at}: entries");
            for ((kx, vx), (ky, vy)) in x.iter().zip(y) {
                assert_same(kx, ky, &format!("{at} key"));
                assert_same(vx, vy, &format!("{at}.{}", kx.as_str().unwrap_or("?")));
            }
        }
        (Value::Tensor(x), Value::Tensor(y)) => {
            assert_eq!((x.kind(), x.size()), (y.kind(), y.size()), "{at}");
            assert_eq!(tensor_bytes(x), tensor_bytes(y), "{at}: data");
        }
        _ => panic!("{at}: {a:?} vs {b:?}"),
    }
}

/// A checkpoint with every kind of value the writer takes.
pub fn sample() -> Value {
    let arange = Tensor::arange(12, (Kind::Float, tch::Device::Cpu)).reshape([3, 4]);
    let noise = Tensor::randn([5, 7], (Kind::Float, tch::Device::Cpu));
    let mut tensors = vec![
        ("f32", noise.shallow_clone()),
        ("f16", noise.to_kind(Kind::Half)),
        ("bf16", noise.to_kind(Kind::BFloat16)),
        ("f64", noise.to_kind(Kind::Double)),
        (
            "i64",
            Tensor::from_slice(&[-(1i64 << 40), 7, i64::MAX, i64::MIN]),
        ),
        ("i32", Tensor::from_slice(&[-5i32, 6])),
        ("u8", Tensor::from_slice(&[0u8, 255])),
        ("bool", Tensor::from_slice(&[true, false, true])),
        ("scalar", Tensor::from(2.5f32).reshape([] as [i64; 0])),
        (
            "empty",
            Tensor::zeros([0, 3], (Kind::Float, tch::Device::Cpu)),
        ),
        ("transposed", arange.tr()),
        (
            "big",
            Tensor::randn([3_000_000], (Kind::Float, tch::Device::Cpu)),
        ),
    ];
    for i in 0..12 {
        tensors.push((
            "many",
            Tensor::full([2], i, (Kind::Int64, tch::Device::Cpu)),
        ));
    }
    let weights = tensors
        .into_iter()
        .enumerate()
        .map(|(i, (name, t))| (text(&format!("{name}.{i}")), Value::Tensor(t)))
        .collect();
    let wide = (0..1500)
        .map(|i| (text(&format!("k{i}")), Value::Int(i * 1000)))
        .collect();
    let ints = [
        0,
        1,
        255,
        256,
        65535,
        65536,
        -1,
        -129,
        1 << 31,
        -(1 << 31) - 1,
    ]
    .into_iter()
    .chain([i64::MAX, i64::MIN, 1 << 40, -(1 << 40)])
    .map(Value::Int)
    .collect();
    Value::ordered_dict(vec![
        (text("weight"), Value::Dict(weights)),
        (text("ints"), Value::List(ints)),
        (
            text("floats"),
            Value::Tuple(vec![
                Value::Float(0.1),
                Value::Float(-0.0),
                Value::Float(f64::INFINITY),
                Value::Float(1e-310),
            ]),
        ),
        (
            text("misc"),
            Value::List(vec![
                Value::None,
                Value::Bool(true),
                Value::Bool(false),
                text(""),
                text("1"),
                text("h\u{e9}llo \u{2713}"),
                Value::Bytes(vec![0, 0xff, b'b']),
                Value::Tuple(vec![]),
                Value::Tuple(vec![Value::Int(1)]),
                Value::List(vec![]),
                Value::Dict(vec![]),
                Value::ordered_dict(vec![(text("z"), Value::Int(1)), (text("a"), Value::Int(2))]),
            ]),
        ),
        (text("wide"), Value::Dict(wide)),
        (text("info"), text("7epoch")),
    ])
}

#[test]
fn round_trip_keeps_every_key_and_bit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sample.pth");
    let value = sample();
    write_torch_file(&path, &value).unwrap();
    let read = read_torch_file(&path).unwrap();
    assert_same(&value, &read, "root");
    let empty_bytes = dir.path().join("empty.pth");
    write_torch_file(&empty_bytes, &Value::Bytes(Vec::new())).unwrap();
    assert_same(
        &Value::Bytes(Vec::new()),
        &read_torch_file(&empty_bytes).unwrap(),
        "b''",
    );
    fs::remove_file(&empty_bytes).unwrap();
    let names: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["sample.pth"], "no temporary file is left behind");

    // Writing again replaces the file; the same content gives the same bytes.
    let first = fs::read(&path).unwrap();
    write_torch_file(&path, &value).unwrap();
    assert_eq!(fs::read(&path).unwrap(), first);
}

#[test]
fn zip_layout_is_torchs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("G_2333.pth");
    write_torch_file(&path, &sample()).unwrap();
    let mut archive = zip::ZipArchive::new(fs::File::open(&path).unwrap()).unwrap();
    let names: Vec<String> = archive
        .file_names()
        .map(|n| n.unwrap().into_owned())
        .collect();
    let mut expected: Vec<String> = [
        "data.pkl",
        ".format_version",
        ".storage_alignment",
        "byteorder",
    ]
    .into_iter()
    .map(String::from)
    .chain((0..24).map(|k| format!("data/{k}")))
    .chain(["version".into(), ".data/serialization_id".into()])
    .map(|n| format!("G_2333/{n}"))
    .collect();
    expected.sort();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(sorted, expected);
    assert_eq!(names[0], "G_2333/data.pkl");
    for i in 0..archive.len() {
        let entry = archive.by_index(i).unwrap();
        assert_eq!(entry.compression(), zip::CompressionMethod::Stored);
        if entry.size() > 0 {
            assert_eq!(entry.data_start().unwrap() % 64, 0, "{:?}", entry.name());
        }
    }
    let mut read = |name: &str| {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut archive.by_name(name).unwrap(), &mut text).unwrap();
        text
    };
    assert_eq!(read("G_2333/version"), "3\n");
    assert_eq!(read("G_2333/byteorder"), "little");
    assert_eq!(read("G_2333/.storage_alignment"), "64");
    let id = read("G_2333/.data/serialization_id");
    assert!(
        id.len() == 40 && id.bytes().all(|b| b.is_ascii_digit()),
        "{id}"
    );
}

#[test]
fn unwritable_values_are_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.pth");
    let object = Value::Object {
        class: "argparse.Namespace".into(),
        args: vec![],
        state: None,
    };
    let message = write_torch_file(&path, &Value::List(vec![object]))
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("bad.pth") && message.contains("argparse.Namespace"),
        "{message}"
    );
    assert!(!path.exists());
}

fn assert_failed_write_keeps(path: &Path, folder_shown: &Path) {
    let message = format!("{:#}", write_torch_file(path, &sample()).unwrap_err());
    let cannot_create = format!("cannot create a file in {}", folder_shown.display());
    assert!(
        message.contains(&path.display().to_string()) && message.contains(&cannot_create),
        "{message}"
    );
}

#[test]
fn a_missing_folder_gives_an_error_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no/such/folder");
    assert_failed_write_keeps(&missing.join("model.pth"), &missing);
    assert!(!missing.exists());
}

#[test]
fn a_failed_write_leaves_the_previous_file_intact() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("models");
    fs::create_dir(&folder).unwrap();
    let path = folder.join("model.pth");
    let previous = Value::Dict(vec![(text("info"), text("previous"))]);
    write_torch_file(&path, &previous).unwrap();
    let before = fs::read(&path).unwrap();

    // Nothing can be created under a regular file, not even by root (which CI runs as, and
    // which ignores a read-only folder).
    assert_failed_write_keeps(&path.join("model.pth"), &path);

    // A value refused while pickling leaves the file as it was too.
    let failing = Value::Dict(vec![(text("q"), Value::Global("os.system".into()))]);
    let message = write_torch_file(&path, &failing).unwrap_err().to_string();
    assert!(message.contains("model.pth"), "{message}");

    assert_eq!(fs::read(&path).unwrap(), before);
    assert_same(&previous, &read_torch_file(&path).unwrap(), "root");
    let names: Vec<_> = fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["model.pth"], "no temporary file is left behind");
}

#[test]
fn a_write_failing_after_the_data_removes_its_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let occupied = dir.path().join("taken.pth");
    fs::create_dir(&occupied).unwrap();
    fs::write(occupied.join("inside"), b"kept").unwrap();
    let message = format!("{:#}", write_torch_file(&occupied, &sample()).unwrap_err());
    assert!(
        message.contains("taken.pth") && message.contains("cannot be replaced"),
        "{message}"
    );
    assert_eq!(fs::read(occupied.join("inside")).unwrap(), b"kept");
    let names: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["taken.pth"], "no temporary file is left behind");
}
