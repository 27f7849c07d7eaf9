//! `timbre models import` from the places voices are shared: a community zip, the folder of an
//! RVC install, and a Hugging Face `blob` link served by a local server (through the proxy
//! setting, so the link's host is the hub's own).

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;
use timbre_integration_tests::Sandbox;
use timbre_integration_tests::asset_server::{AssetServer, Fault};
use timbre_integration_tests::assets::sha256_hex;
use timbre_test_support::rvc_parity_fixtures;
use zip::write::{SimpleFileOptions, ZipWriter};

const V1: &str = "synth_v1_f0_40k/model.pth";
const V2: &str = "synth_v2_f0_40k/model.pth";
const V1_INDEX: &str = "index_v1/added_IVF51_Flat_nprobe_1_tiny_v1.index";
const V2_INDEX: &str = "index_v2/added_IVF38_Flat_nprobe_1_tiny_v2.index";
/// A checkpoint that is no voice, standing in for the pretrained G/D of an install.
const NOT_A_VOICE: &str = "rmvpe_tiny/rmvpe.pt";

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(rvc_parity_fixtures().join(name)).unwrap()
}

fn write_zip(path: &Path, entries: &[(&str, Vec<u8>)]) {
    let mut zip = ZipWriter::new(std::fs::File::create(path).unwrap());
    for (name, bytes) in entries {
        zip.start_file(*name, SimpleFileOptions::default()).unwrap();
        zip.write_all(bytes).unwrap();
    }
    zip.finish().unwrap();
}

fn write_tree(root: &Path, files: &[(&str, Vec<u8>)]) {
    for (name, bytes) in files {
        let path = root.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
}

fn import(sb: &Sandbox, source: &str, extra: &[&str]) -> std::process::Output {
    sb.cpu_command()
        .args([&["--json", "models", "import", source], extra].concat())
        .output()
        .expect("running timbre")
}

fn imported(out: &std::process::Output) -> Vec<Value> {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the imported models as JSON")
}

/// (name, version, index sha256) of each model.
fn summary(models: &[Value]) -> Vec<(String, String, Option<String>)> {
    models
        .iter()
        .map(|m| {
            (
                m["name"].as_str().unwrap().to_string(),
                m["version"].as_str().unwrap().to_string(),
                m["index_sha256"].as_str().map(String::from),
            )
        })
        .collect()
}

#[test]
fn a_community_zip_imports_each_voice_with_its_index() {
    let sb = Sandbox::new();
    let (v1_index, v2_index) = (fixture(V1_INDEX), fixture(V2_INDEX));
    let zip = sb.path("Alto and Bass.zip");
    write_zip(
        &zip,
        &[
            ("Alto and Bass/Alto/alto.pth", fixture(V1)),
            (
                "Alto and Bass/Alto/added_IVF51_Flat_nprobe_1_alto_v1.index",
                v1_index.clone(),
            ),
            ("Alto and Bass/Bass/bass.pth", fixture(V2)),
            (
                "Alto and Bass/Bass/added_IVF38_Flat_nprobe_1_bass_v2.index",
                v2_index.clone(),
            ),
            ("Alto and Bass/credits.txt", b"made with RVC".to_vec()),
        ],
    );
    let models = imported(&import(&sb, zip.to_str().unwrap(), &[]));
    assert_eq!(
        summary(&models),
        [
            ("alto".into(), "v1".into(), Some(sha256_hex(&v1_index))),
            ("bass".into(), "v2".into(), Some(sha256_hex(&v2_index))),
        ]
    );
    assert_eq!(sb.json(&["models", "list"]).as_array().unwrap().len(), 2);
}

#[test]
fn an_rvc_install_folder_imports_its_weights_with_the_indexes_of_their_logs() {
    let sb = Sandbox::new();
    let (v1_index, v2_index) = (fixture(V1_INDEX), fixture(V2_INDEX));
    let install = sb.path("Retrieval-based-Voice-Conversion-WebUI");
    write_tree(
        &install,
        &[
            ("assets/weights/alice.pth", fixture(V2)),
            ("assets/weights/bob.pth", fixture(V1)),
            ("assets/pretrained_v2/f0G40k.pth", fixture(NOT_A_VOICE)),
            (
                "logs/alice/added_IVF38_Flat_nprobe_1_alice_v2.index",
                v2_index.clone(),
            ),
            (
                "logs/bob/added_IVF51_Flat_nprobe_1_bob_v1.index",
                v1_index.clone(),
            ),
            ("logs/bob/config.json", b"{}".to_vec()),
        ],
    );
    let out = import(&sb, install.to_str().unwrap(), &[]);
    assert_eq!(
        summary(&imported(&out)),
        [
            ("alice".into(), "v2".into(), Some(sha256_hex(&v2_index))),
            ("bob".into(), "v1".into(), Some(sha256_hex(&v1_index))),
        ]
    );
    // Without --json the skipped pretrained file is noted on stderr.
    let out = sb
        .cpu_command()
        .args(["models", "import", install.to_str().unwrap()])
        .output()
        .unwrap();
    let notes = String::from_utf8_lossy(&out.stderr);
    assert!(
        notes.contains("skipped   ") && notes.contains("f0G40k.pth: not an RVC voice model"),
        "{notes}"
    );
}

#[test]
fn ambiguous_indexes_are_named_and_the_choice_is_taken() {
    let sb = Sandbox::new();
    let index = fixture(V2_INDEX);
    let zip = sb.path("two-indexes.zip");
    write_zip(
        &zip,
        &[
            ("voice.pth", fixture(V2)),
            ("old/added_a.index", index.clone()),
            ("new/added_b.index", index.clone()),
        ],
    );
    let out = import(&sb, zip.to_str().unwrap(), &[]);
    assert!(!out.status.success());
    let error: Value = serde_json::from_slice(&out.stderr).expect("the error as JSON");
    assert_eq!(error["kind"], "invalid_input");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("2 indexes fit the voice voice.pth: old/added_a.index (768-d), new/added_b.index (768-d)"), "{message}");
    let models = imported(&import(
        &sb,
        zip.to_str().unwrap(),
        &["--use-index", "new/added_b.index"],
    ));
    assert_eq!(
        models[0]["index_sha256"].as_str(),
        Some(sha256_hex(&index).as_str())
    );
}

#[test]
fn a_hugging_face_blob_link_is_downloaded_from_its_resolve_url_and_imported() {
    let sb = Sandbox::new();
    let server = AssetServer::start();
    let zip = sb.path("served.zip");
    write_zip(
        &zip,
        &[
            ("singer/singer.pth", fixture(V2)),
            (
                "singer/added_IVF38_Flat_nprobe_1_singer_v2.index",
                fixture(V2_INDEX),
            ),
        ],
    );
    let bytes = std::fs::read(&zip).unwrap();
    // A dropped connection half-way is resumed.
    server.serve(
        "/someone/voices/resolve/main/singer.zip",
        &bytes,
        Fault::Drop {
            at: bytes.len() / 2,
            times: 1,
        },
    );
    let link = "http://huggingface.co/someone/voices/blob/main/singer.zip";
    let out = sb
        .cpu_command()
        .env("TIMBRE_DOWNLOAD_ENDPOINT", "http://huggingface.co")
        .env("HTTPS_PROXY", server.url())
        .env_remove("HTTP_PROXY")
        .env_remove("ALL_PROXY")
        .args(["--json", "models", "import", link])
        .output()
        .unwrap();
    let models = imported(&out);
    assert_eq!(summary(&models)[0].0, "singer");
    assert!(models[0]["index_sha256"].is_string());
    assert_eq!(
        models[0]["metadata"]["source_path"],
        "http://huggingface.co/someone/voices/resolve/main/singer.zip:singer/singer.pth"
    );
    let seen = server.seen();
    assert!(seen.iter().all(|s| !s.path.contains("/blob/")), "{seen:?}");
    assert!(
        seen.iter()
            .any(|s| s.range_start == Some((bytes.len() / 2) as u64)),
        "not resumed: {seen:?}"
    );
    let tmp: Vec<PathBuf> = std::fs::read_dir(sb.data_dir().join("store/tmp"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(tmp.is_empty(), "left in tmp: {tmp:?}");

    // A link that is not served names the link and the answer.
    server.serve("/gone.zip", b"", Fault::NotFound);
    let out = sb
        .cpu_command()
        .env("TIMBRE_DOWNLOAD_ENDPOINT", server.url())
        .args(["models", "import", &format!("{}/gone.zip", server.url())])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("gone.zip: HTTP 404"),
        "{err}"
    );
}
