//! Model info editing: the edited `.pth` keeps its weights and structure and the reference
//! (`reference.py`, rvc-next's loaders) reads the new name, author, description and info.

use std::path::Path;
use std::process::Command;

use timbre_nn::model_info::{InfoEdits, write_edited};
use timbre_test_support::{reference_python, rvc_parity_fixtures};

#[test]
fn edited_info_is_what_the_reference_reads_and_the_weights_stay() {
    let original = rvc_parity_fixtures().join("synth_v2_f0_40k/model.pth");
    let dir = tempfile::tempdir().unwrap();
    let edited = dir.path().join("edited.pth");
    let edits = InfoEdits {
        model_name: Some("Ada".into()),
        author: Some("Timbre tests".into()),
        description: Some("A tiny fixture voice, renamed.".into()),
        info: Some("300epoch".into()),
    };
    write_edited(&original, &edits, &edited).unwrap();
    let out = Command::new(reference_python())
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/model_info/reference.py"))
        .arg(&original)
        .arg(&edited)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the reference failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    println!("{read}");
    assert_eq!(read["model_name"], "Ada");
    assert_eq!(read["author"], "Timbre tests");
    assert_eq!(read["description"], "A tiny fixture voice, renamed.");
    assert_eq!(read["info"], "300epoch");
    assert_eq!(read["max_abs"], 0.0);
    for (key, same) in read["same"].as_object().unwrap() {
        assert_eq!(*same, true, "{key} changed");
    }
    // Only what is given changes: a second edit of the author keeps the name.
    let again = dir.path().join("again.pth");
    let author_only = InfoEdits {
        author: Some("Someone else".into()),
        ..InfoEdits::default()
    };
    write_edited(&edited, &author_only, &again).unwrap();
    let info = timbre_nn::synthesizer::check_model(&again)
        .unwrap()
        .metadata;
    assert_eq!(info.model_name.as_deref(), Some("Ada"));
    assert_eq!(info.author.as_deref(), Some("Someone else"));
    let err = write_edited(&dir.path().join("missing.pth"), &author_only, &again).unwrap_err();
    assert!(format!("{err:#}").contains("missing.pth"), "{err:#}");
}
