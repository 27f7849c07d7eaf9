//! A disk that fills up during a training's checkpoint write, for real: a small tmpfs mounted
//! over the training's checkpoints folder in an unprivileged user namespace (`unshare -rm`).
//! The training fails with a message naming the file and saying the disk is full; the pair
//! saved before is left untouched (and no temporary file or half pair beside it), it exports,
//! and once space is freed the training resumes from it; the library, on another disk, stays
//! intact. The checkpoints are those a stop saves after one step (the periodic ones go through
//! the same save), so the test trains three steps rather than epochs.

use serde_json::Value;
use std::collections::BTreeMap;
use std::process::Command;
use std::time::Instant;
use timbre_integration_tests::{Sandbox, TINY_GENERATOR_40K, timbre_bin};

/// The full disk: a pair (about 630 MiB, nearly all of it the discriminator and its two AdamW
/// moments) fits with room to spare, a second does not (old pairs are pruned only after a new
/// one is whole).
const FULL_DISK_MIB: u64 = 950;
/// The disk once space is freed: room for two pairs.
const FREED_DISK_MIB: u64 = 1600;

/// Runs inside the namespace, arguments: the timbre binary, the data dir, the folder for what
/// it reports, the checkpoints folder, the generator configuration, the disk's size in MiB
/// when full and once freed. Everything touching the
/// tmpfs happens here, as the mount goes with the namespace. Training 1 is started, stopped
/// after a step (a pair is saved), resumed and stopped again (the disk is full), exported, and
/// resumed and stopped once more after the disk grows.
const SCRIPT: &str = r#"
set -u
bin=$1 data=$2 out=$3 checkpoints=$4 config=$5 full=$6 freed=$7
timbre() { "$bin" --data-dir "$data" --json "$@"; }
listing() { find "$checkpoints" -mindepth 1 -printf '%f %s %T@\n' > "$out/$1"; }
# `timbre <args>` in the background into <report>.json and .err, stopped once it runs.
stopped() {
    report=$1
    shift
    timbre "$@" > "$out/$report.json" 2> "$out/$report.err" &
    until timbre train show 1 2> /dev/null | grep -q '"status": "running"'; do
        kill -0 $! 2> /dev/null || break
        sleep 0.1
    done
    timbre train stop 1 > /dev/null 2>&1
    wait $!
}
mkdir -p "$checkpoints"
mount -t tmpfs -o size=${full}m tmpfs "$checkpoints" || exit 1
stopped started train start --dataset "Alto set" --name "Full disk" --epochs 1 \
    --batch-size 1 --pretrained none --model-config "$config"
listing after_stop.txt
stopped failed train resume 1
listing after_failure.txt
timbre train show 1 > "$out/shown.json" 2>&1
timbre export --training 1 --out "$out/exported.pth" > "$out/exported.json" 2>&1
mount -o remount,size=${freed}m "$checkpoints" || exit 1
stopped resumed train resume 1
listing after_resume.txt
"#;

#[test]
fn a_full_disk_during_a_checkpoint_fails_clearly_and_loses_nothing() {
    let started = Instant::now();
    let namespaces = Command::new("unshare").args(["-rm", "true"]).output();
    assert!(
        namespaces.as_ref().is_ok_and(|out| out.status.success()),
        "this test needs unprivileged user namespaces (`unshare -rm true` failed: {namespaces:?}) \
         to mount a small tmpfs as a full disk"
    );
    let sb = Sandbox::with_extractors(false);
    std::fs::write(sb.path("tiny40k.json"), TINY_GENERATOR_40K).unwrap();
    let speech = sb.write_speech("speech.wav", 64.0);
    let timbre = |args: &[&str]| -> Value {
        let out = sb.cpu_command().arg("--json").args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "timbre {args:?} failed: {stderr}");
        serde_json::from_slice(&out.stdout).unwrap()
    };
    sb.prepare_dataset("Alto set", "40k", &speech);
    eprintln!("dataset prepared in {:.1?}", started.elapsed());

    let reports = sb.path("reports");
    std::fs::create_dir_all(&reports).unwrap();
    let checkpoints = sb.data_dir().join("trainings/1/checkpoints");
    let ran = Command::new("unshare")
        .env("TIMBRE_MODELS_DIR", sb.models_dir())
        .env("TIMBRE_DEVICE", "cpu")
        .args(["-rm", "sh", "-c", SCRIPT, "sh"])
        .arg(timbre_bin())
        .arg(sb.data_dir())
        .arg(&reports)
        .arg(&checkpoints)
        .arg(sb.path("tiny40k.json"))
        .args([FULL_DISK_MIB, FREED_DISK_MIB].map(|mib| mib.to_string()))
        .output()
        .unwrap();
    assert!(ran.status.success(), "the namespace script failed: {ran:?}");
    eprintln!(
        "trained, stopped and resumed on a full disk in {:.1?}",
        started.elapsed()
    );
    let report = |name: &str| std::fs::read_to_string(reports.join(name)).unwrap();
    let json = |name: &str| -> Value {
        serde_json::from_str(&report(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    };

    // The first stop saved a pair, which fits with room to spare but not twice over.
    let stopped = &json("started.json")["training"];
    assert_eq!(
        stopped["status"],
        "stopped",
        "{stopped}\n{}",
        report("started.err")
    );
    let saved_files = report("after_stop.txt");
    let files = file_sizes(&saved_files);
    let [saved] = pair_steps(&files)[..] else {
        panic!("the stop saved one pair: {files:?}");
    };
    let pair_bytes: u64 = files.values().sum();
    let disk_bytes = FULL_DISK_MIB << 20;
    assert!(
        files.len() == 2 && pair_bytes < disk_bytes && disk_bytes < 2 * pair_bytes,
        "the tmpfs ({FULL_DISK_MIB} MiB) holds one pair but not two: {files:?}"
    );

    // The second stop's save failed, saying which file and why; the pair before it is as it
    // was, with nothing beside it.
    let failed = &json("failed.json")["training"];
    assert_eq!(
        failed["status"],
        "failed",
        "{failed}\n{}",
        report("failed.err")
    );
    let error = failed["error"].as_str().unwrap();
    eprintln!("step {saved} saved, then: {error}");
    let failed_step = error
        .split_once("/checkpoints/D_")
        .and_then(|(_, rest)| rest.split_once(".pth: cannot write: the disk is full: "))
        .and_then(|(step, _)| step.parse::<i64>().ok());
    assert!(
        failed_step.is_some_and(|step| step > saved) && error.contains("No space left on device"),
        "{error}"
    );
    assert_eq!(
        report("after_failure.txt"),
        saved_files,
        "the pair is untouched, no temporary file or half pair is left"
    );
    let shown = json("shown.json");
    assert_eq!(
        (
            &shown["training"]["status"],
            shown["training"]["error"].as_str()
        ),
        (&failed["status"], Some(error))
    );
    let failed_job = timbre(&["jobs", "show", &failed["job_id"].to_string()]);
    assert_eq!(failed_job["job"]["state"], "failed", "{failed_job}");
    let kinds: Vec<&str> = failed_job["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["kind"].as_str())
        .collect();
    assert!(
        !kinds.contains(&"retry"),
        "a full disk is not retried: {kinds:?}"
    );

    // The pair is whole: it exports, and once the disk has room the training resumes from it.
    let exported = json("exported.json");
    let checkpoint = exported["checkpoint"].as_str().unwrap_or_default();
    assert!(
        checkpoint.ends_with(&format!("checkpoints/G_{saved}.pth")),
        "{exported}"
    );
    assert!(reports.join("exported.pth").is_file());
    let resumed = &json("resumed.json")["training"];
    assert_eq!(
        resumed["status"],
        "stopped",
        "{resumed}\n{}",
        report("resumed.err")
    );
    let events = &timbre(&["jobs", "show", &resumed["job_id"].to_string()])["events"];
    let resumed_at = events
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "resumed")
        .unwrap_or_else(|| panic!("no resumed event: {events}"));
    assert_eq!(
        resumed_at["data"]["step"].as_i64(),
        Some(saved),
        "{resumed_at}"
    );
    let files = file_sizes(&report("after_resume.txt"));
    let newest = resumed["global_step"].as_i64().unwrap();
    assert_eq!(pair_steps(&files), [saved, newest], "{files:?}");
    assert_eq!(files.len(), 4, "{files:?}");

    let db = sb.db().unwrap();
    let integrity: String = db
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
    eprintln!("all done in {:.1?}", started.elapsed());
}

/// `<name> <bytes> <modified>` lines, as the script's `find -printf` writes them: each file's
/// size.
fn file_sizes(listing: &str) -> BTreeMap<String, u64> {
    listing
        .lines()
        .filter_map(|line| {
            let mut fields = line.split(' ');
            let (name, size) = (fields.next()?, fields.next()?);
            Some((name.to_string(), size.parse().ok()?))
        })
        .collect()
}

/// The steps that have both a `G_<step>.pth` and a `D_<step>.pth`, ascending.
fn pair_steps(files: &BTreeMap<String, u64>) -> Vec<i64> {
    let mut steps: Vec<i64> = files
        .keys()
        .filter_map(|name| name.strip_prefix("G_")?.strip_suffix(".pth")?.parse().ok())
        .filter(|step| files.contains_key(&format!("D_{step}.pth")))
        .collect();
    steps.sort_unstable();
    steps
}
