//! Files one row of the library shares with another are never deleted with it (issue 34's two
//! losses, through the real `timbre` binary), and `library gc` squares the store with the rows.

use std::path::PathBuf;

use serde_json::Value;
use timbre_integration_tests::{Sandbox, rvc_parity_fixtures, write_sine_wav};

fn fixture(path: &str) -> String {
    rvc_parity_fixtures().join(path).display().to_string()
}

fn object_path(sb: &Sandbox, sha256: &str, ext: &str) -> PathBuf {
    sb.data_dir()
        .join("store/objects")
        .join(&sha256[..2])
        .join(format!("{sha256}.{ext}"))
}

fn gc(sb: &Sandbox) -> Value {
    sb.json(&["library", "gc"])
}

#[test]
fn deleting_a_take_with_a_conversions_bytes_keeps_the_conversion_audio() {
    let sb = Sandbox::with_extractors(true);
    let input = sb.path("in.wav");
    write_sine_wav(&input, 1.0, 220.0);
    sb.cpu_json(&[
        "models",
        "import",
        &fixture("synth_v1_f0_40k/model.pth"),
        "--name",
        "v1",
    ]);
    let out = sb.path("D");
    let converted = sb.cpu_json(&[
        "convert",
        "-m",
        "v1",
        "--out",
        out.to_str().unwrap(),
        input.to_str().unwrap(),
    ]);
    let conversion = &converted[0]["result"]["conversion"];
    let stored = object_path(
        &sb,
        conversion["sha256"].as_str().unwrap(),
        conversion["format"].as_str().unwrap(),
    );
    let copy = converted[0]["result"]["output_path"]
        .as_str()
        .unwrap()
        .to_string();
    // The copy has the same bytes: importing it makes a take of the conversion's object.
    let imported = sb.json(&["import", &copy]);
    let take_id = imported["files"][0]["take_id"]
        .as_i64()
        .unwrap_or_else(|| panic!("no take in {imported}"));
    sb.json(&["library", "rm", &take_id.to_string()]);
    assert!(stored.exists(), "the conversion's audio went with the take");
    let report = gc(&sb);
    assert_eq!(report["missing"], serde_json::json!([]), "{report}");
    assert!(stored.exists(), "collected while a conversion names it");
}

#[test]
fn deleting_a_model_keeps_the_index_another_model_uses() {
    let sb = Sandbox::with_extractors(true);
    let index = fixture("index_v1/added_IVF51_Flat_nprobe_1_tiny_v1.index");
    let a = sb.cpu_json(&[
        "models",
        "import",
        &fixture("synth_v1_f0_40k/model.pth"),
        "--index",
        &index,
        "--name",
        "A",
    ]);
    sb.cpu_json(&[
        "models",
        "import",
        &fixture("synth_v1_nono_32k/model.pth"),
        "--name",
        "B",
    ]);
    sb.cpu_json(&["models", "index", "B", &index]);
    sb.cpu_json(&["models", "rm", "A"]);
    let index_sha = a[0]["index_sha256"].as_str().unwrap();
    assert!(
        object_path(&sb, index_sha, "index").exists(),
        "B's index went with A"
    );
    let input = sb.path("in.wav");
    write_sine_wav(&input, 1.0, 220.0);
    let converted = sb.cpu_json(&["convert", "-m", "B", input.to_str().unwrap()]);
    assert_eq!(converted[0]["ok"], true, "{}", converted[0]);
    sb.cpu_json(&["models", "rm", "B"]);
    assert!(
        !object_path(&sb, index_sha, "index").exists(),
        "the last model that named the index is gone, and so is the index"
    );
}

#[test]
fn gc_removes_unnamed_files_and_names_lost_ones() {
    let sb = Sandbox::new();
    let input = sb.path("tone.wav");
    write_sine_wav(&input, 0.5, 440.0);
    let imported = sb.json(&["import", input.to_str().unwrap()]);
    let take_id = imported["files"][0]["take_id"].as_i64().unwrap();
    let take = sb.json(&["library", "show", &take_id.to_string()]);
    let stored = object_path(
        &sb,
        take["sha256"].as_str().unwrap(),
        take["format"].as_str().unwrap(),
    );
    // A file nothing names (left by a crash, say) goes; a file a row names and is gone is named.
    let stray = object_path(&sb, &"ab".repeat(32), "wav");
    std::fs::create_dir_all(stray.parent().unwrap()).unwrap();
    std::fs::write(&stray, b"stray").unwrap();
    // (Every start of a process that has the library to itself collects too: this one's.)
    let report = gc(&sb);
    assert_eq!(report["missing"], serde_json::json!([]), "{report}");
    assert!(!stray.exists() && stored.exists());
    std::fs::remove_file(&stored).unwrap();
    let out = sb.run(&["library", "gc"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("missing") && stderr.contains(take["sha256"].as_str().unwrap()),
        "{stderr}"
    );
}
