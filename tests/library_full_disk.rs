//! A library on a disk that fills up, for real: a 20 MiB tmpfs mounted as the data dir in an
//! unprivileged user namespace (`unshare -rm`, as `train_full_disk.rs` does). An import larger
//! than the disk ends with a message naming the full disk (not a hang); then the library can
//! still be listed, its jobs too, and deleting takes frees space; on a disk with no byte left
//! at all the library still opens. A result copied into a folder on a full disk leaves no
//! partial file there, and stays in the library.

use std::process::Command;
use timbre_integration_tests::{Sandbox, timbre_bin, write_sine_wav};

const FILES: usize = 150;

/// Runs inside the namespace, arguments: the timbre binary, the data dir, the folder for what
/// it reports, the folder of the files to import. `<name>.out`, `.err` and `.rc` hold each
/// command's stdout, stderr and exit status; `free_*` the disk's free bytes.
const SCRIPT: &str = r#"
set -u
bin=$1 data=$2 out=$3 inputs=$4
mkdir -p "$data"
mount -t tmpfs -o size=20m tmpfs "$data" || exit 1
run() {
    name=$1
    shift
    timeout 120 "$bin" --data-dir "$data" "$@" > "$out/$name.out" 2> "$out/$name.err"
    echo $? > "$out/$name.rc"
}
free() { df -B1 --output=avail "$data" | tail -n 1 | tr -d ' ' > "$out/free_$1"; }
run import import "$inputs"/*.wav
run list --json library list
run jobs --json jobs list
free before_rm
run rm library rm 1 2 3 4 5
free after_rm
dd if=/dev/zero of="$data/filler" bs=64k 2> /dev/null
free filled
run list_filled --json library list
"#;

fn assert_namespaces() {
    let namespaces = Command::new("unshare").args(["-rm", "true"]).output();
    assert!(
        namespaces.as_ref().is_ok_and(|out| out.status.success()),
        "this test needs unprivileged user namespaces (`unshare -rm true` failed: {namespaces:?}) \
         to mount a small tmpfs as a full disk"
    );
}

#[test]
fn a_full_disk_ends_the_import_clearly_and_the_library_stays_usable() {
    assert_namespaces();
    let sb = Sandbox::new();
    let inputs = sb.path("inputs");
    std::fs::create_dir(&inputs).unwrap();
    for i in 0..FILES {
        // 6 s of 16-bit mono at 16 kHz: 192 kB, so 150 files need half again the disk.
        write_sine_wav(
            &inputs.join(format!("clip{i:03}.wav")),
            6.0,
            100.0 + i as f32,
        );
    }
    let reports = sb.path("reports");
    std::fs::create_dir(&reports).unwrap();
    let ran = Command::new("unshare")
        .args(["-rm", "sh", "-c", SCRIPT, "sh"])
        .arg(timbre_bin())
        .arg(sb.data_dir())
        .arg(&reports)
        .arg(&inputs)
        .output()
        .unwrap();
    assert!(ran.status.success(), "the namespace script failed: {ran:?}");
    let read = |name: &str| std::fs::read_to_string(reports.join(name)).unwrap();
    let rc = |name: &str| read(&format!("{name}.rc")).trim().parse::<i32>().unwrap();
    let free = |name: &str| read(&format!("free_{name}")).trim().parse::<u64>().unwrap();

    let import_err = read("import.err");
    assert_ne!(rc("import"), 124, "the import hung: {import_err}");
    assert_ne!(rc("import"), 0, "the import cannot fit: {import_err}");
    let full = format!("the disk holding {} is full", sb.data_dir().display());
    assert!(import_err.contains(&full), "{import_err}");

    assert_eq!(rc("list"), 0, "{}", read("list.err"));
    let takes: serde_json::Value = serde_json::from_str(&read("list.out")).unwrap();
    let imported = takes.as_array().unwrap().len();
    assert!(imported > 5 && imported < FILES, "{imported} takes");
    assert_eq!(rc("jobs"), 0, "{}", read("jobs.err"));
    let jobs: serde_json::Value = serde_json::from_str(&read("jobs.out")).unwrap();
    assert_eq!(jobs[0]["kind"], "import", "{jobs}");

    assert_eq!(rc("rm"), 0, "{}", read("rm.err"));
    assert!(
        free("after_rm") > free("before_rm") + 5 * 150_000,
        "deleting 5 takes freed {} -> {} bytes",
        free("before_rm"),
        free("after_rm")
    );

    assert_eq!(free("filled"), 0, "the filler fills the disk");
    let err = read("list_filled.err");
    assert_eq!(rc("list_filled"), 0, "{err}");
    let takes: serde_json::Value = serde_json::from_str(&read("list_filled.out")).unwrap();
    assert_eq!(takes.as_array().unwrap().len(), imported - 5);
}

/// Arguments: the timbre binary, the data dir, the output folder (a 1 MiB tmpfs), the input, the
/// folder for what it reports.
const COPY_SCRIPT: &str = r#"
set -u
bin=$1 data=$2 out=$3 input=$4 reports=$5
mkdir -p "$out"
mount -t tmpfs -o size=1m tmpfs "$out" || exit 1
timeout 120 "$bin" --data-dir "$data" --json enhance --preset natural "$input" --out "$out" \
    > "$reports/enhance.out" 2> "$reports/enhance.err"
echo $? > "$reports/enhance.rc"
ls -A "$out" > "$reports/left"
"#;

#[test]
fn a_copy_into_a_full_folder_leaves_no_partial_file_and_the_result_is_kept() {
    assert_namespaces();
    let sb = Sandbox::new();
    // 30 s at 16 kHz: the enhanced take in 32-bit float is 1.9 MB, more than the folder holds
    // (the natural preset keeps the length).
    let input = sb.path("speech.wav");
    write_sine_wav(&input, 30.0, 220.0);
    let (out, reports) = (sb.path("out"), sb.path("reports"));
    std::fs::create_dir(&reports).unwrap();
    let ran = Command::new("unshare")
        .args(["-rm", "sh", "-c", COPY_SCRIPT, "sh"])
        .arg(timbre_bin())
        .arg(sb.data_dir())
        .arg(&out)
        .arg(&input)
        .arg(&reports)
        .output()
        .unwrap();
    assert!(ran.status.success(), "the namespace script failed: {ran:?}");
    let read = |name: &str| std::fs::read_to_string(reports.join(name)).unwrap();
    // With --json the job's outcome, its error too, is printed on stdout.
    let err = read("enhance.out") + &read("enhance.err");
    assert_eq!(read("enhance.rc").trim(), "1", "{err}");
    let target = out.join("speech (enhanced).wav");
    assert!(err.contains(&target.display().to_string()), "{err}");
    assert_eq!(read("left"), "", "nothing left in the folder: {err}");

    let listed = sb.json(&["library", "list"]);
    let names: Vec<_> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|take| take["name"].as_str().unwrap().to_string())
        .collect();
    assert!(
        names.contains(&"speech (enhanced)".to_string()),
        "the result stays in the library: {names:?}"
    );
}
