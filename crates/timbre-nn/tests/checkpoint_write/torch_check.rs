//! Real torch (the workspace's `.venv`) loads what we write with `weights_only=True`, also
//! memory-mapped and onto the meta device (which computes storage offsets from the zip layout,
//! checked against the real ones by `TORCH_SERIALIZATION_DEBUG`); saving what it loaded gives
//! the same records at the same offsets, and what it saved reads back to our value.

use std::process::Command;

use serde_json::Value as Json;
use timbre_nn::checkpoint::{Value, read_torch_file, write_torch_file};
use timbre_test_support::reference_python;

use super::{assert_same, sample, text};

const SCRIPT: &str = r#"
import difflib, io, json, pickletools, sys, zipfile, torch
ours, theirs, empty_bytes = sys.argv[1:4]
assert torch.load(empty_bytes, weights_only=True) == {"empty": b"", "some": b"\x00\xff"}
loaded = torch.load(ours, weights_only=True)
torch.load(ours, weights_only=True, mmap=True)
meta = torch.load(ours, weights_only=True, map_location="meta")
torch.save(loaded, theirs)
zo, zt = zipfile.ZipFile(ours), zipfile.ZipFile(theirs)
def layout(z):
    return [[i.filename.split("/", 1)[1], i.header_offset, i.file_size, i.compress_type, i.flag_bits, len(i.extra)]
            for i in z.infolist()]
differing = [n for n in zo.namelist()
             if not n.endswith("/.data/serialization_id") and zo.read(n) != zt.read(n)]
def opcodes(z):
    pkl = next(n for n in z.namelist() if n.endswith("/data.pkl"))
    out = io.StringIO()
    pickletools.dis(z.read(pkl), out)
    return [line.split(":", 1)[1] for line in out.getvalue().splitlines() if ":" in line]
pickle_diff = [l for l in difflib.unified_diff(opcodes(zo), opcodes(zt), lineterm="", n=2)][:40]
print(json.dumps({
    "pickle_diff": pickle_diff,
    "bad_crc": zo.testzip(),
    "root": type(loaded).__name__,
    "weight": type(loaded["weight"]).__name__,
    "dtypes": {k: str(v.dtype) for k, v in loaded["weight"].items()},
    "meta_devices": sorted({str(v.device) for v in meta["weight"].values()}),
    "ours": layout(zo),
    "theirs": layout(zt),
    "differing_records": differing,
}))
"#;

#[test]
fn torch_loads_our_files_and_writes_the_same() {
    let python = reference_python();
    let dir = tempfile::tempdir().unwrap();
    let (ours, theirs) = (dir.path().join("ours"), dir.path().join("theirs"));
    std::fs::create_dir_all(&ours).unwrap();
    std::fs::create_dir_all(&theirs).unwrap();
    let (ours, theirs) = (ours.join("G_23.pth"), theirs.join("G_23.pth"));
    let value = sample();
    write_torch_file(&ours, &value).unwrap();
    let empty_bytes = dir.path().join("bytes.pth");
    let bytes = Value::Dict(vec![
        (text("empty"), Value::Bytes(vec![])),
        (text("some"), Value::Bytes(vec![0, 0xff])),
    ]);
    write_torch_file(&empty_bytes, &bytes).unwrap();

    let output = Command::new(&python)
        .args(["-c", SCRIPT])
        .arg(&ours)
        .arg(&theirs)
        .arg(&empty_bytes)
        .env("TORCH_SERIALIZATION_DEBUG", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "torch failed:\n{stderr}");
    let report: Json = serde_json::from_slice(&output.stdout).unwrap();
    assert!(report["bad_crc"].is_null(), "{report}");
    assert_eq!(report["root"], "OrderedDict");
    assert_eq!(report["weight"], "dict");
    let dtypes = &report["dtypes"];
    for (prefix, dtype) in [
        ("f32.", "torch.float32"),
        ("f16.", "torch.float16"),
        ("bf16.", "torch.bfloat16"),
        ("i64.", "torch.int64"),
        ("bool.", "torch.bool"),
    ] {
        let found = dtypes
            .as_object()
            .unwrap()
            .iter()
            .find(|(k, _)| k.starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix} in {dtypes}"));
        assert_eq!(found.1, dtype, "{prefix}");
    }
    assert_eq!(report["meta_devices"], serde_json::json!(["meta"]));
    assert_eq!(
        report["ours"], report["theirs"],
        "zip layout differs from torch's"
    );
    assert_eq!(report["differing_records"], serde_json::json!([]));

    assert_same(&value, &read_torch_file(&theirs).unwrap(), "torch's save");
}
