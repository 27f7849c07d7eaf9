use std::path::PathBuf;
use std::sync::Arc;

use timbre_test_support::rvc_parity_fixtures;

use super::archive::tests::{Item, zip_of};
use super::*;
use crate::jobs::JobSystem;
use crate::store::sha256_hex;

const V1: &str = "synth_v1_f0_40k/model.pth";
const V2: &str = "synth_v2_f0_40k/model.pth";
const V1_INDEX: &str = "index_v1/added_IVF51_Flat_nprobe_1_tiny_v1.index";
const V2_INDEX: &str = "index_v2/added_IVF38_Flat_nprobe_1_tiny_v2.index";
/// A torch checkpoint that is no voice (a state dict), as pretrained G/D and hubert are.
const NOT_A_VOICE: &str = "rmvpe_tiny/rmvpe.pt";

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(rvc_parity_fixtures().join(name)).unwrap()
}

struct Setup {
    dir: tempfile::TempDir,
    library: Library,
}

impl Setup {
    fn new() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let library = Library::open(&dir.path().join("data")).unwrap();
        Setup { dir, library }
    }

    fn file(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, bytes).unwrap();
        path
    }

    fn import(&self, source: &Path, use_index: Option<&str>) -> Result<VoiceImportReport> {
        let request = VoiceImportRequest {
            source: source.display().to_string(),
            use_index: use_index.map(String::from),
            ..Default::default()
        };
        import(&self.library, &request, &mut |_, _| Ok(()))
    }

    fn tmp_is_empty(&self) -> bool {
        std::fs::read_dir(self.library.store().tmp_dir())
            .unwrap()
            .next()
            .is_none()
    }
}

fn index_of(report: &VoiceImportReport, version: &str) -> Option<String> {
    let model = report
        .models
        .iter()
        .find(|m| m.version.as_deref() == Some(version))
        .unwrap();
    model.index_sha256.clone()
}

#[test]
fn a_zip_with_two_voices_among_junk_imports_both_with_their_indexes() {
    let s = Setup::new();
    let (v1, v2, v1_index, v2_index, other) = (
        fixture(V1),
        fixture(V2),
        fixture(V1_INDEX),
        fixture(V2_INDEX),
        fixture(NOT_A_VOICE),
    );
    let zip = s.file(
        "two voices.zip",
        &zip_of(&[
            Item::File("Pack/readme.txt", b"two voices"),
            Item::File("Pack/Alto/alto.pth", &v1),
            Item::File(
                "Pack/Alto/added_IVF51_Flat_nprobe_1_alto_v1.index",
                &v1_index,
            ),
            Item::File("Pack/Bass/weights/bass.pth", &v2),
            Item::File(
                "Pack/Bass/added_IVF38_Flat_nprobe_1_bass_v2.index",
                &v2_index,
            ),
            Item::File("Pack/pretrained/f0G40k.pth", &other),
            Item::File("Pack/Bass/sample.wav", b"RIFF"),
        ]),
    );
    let report = s.import(&zip, None).unwrap();
    let names: Vec<&str> = report.models.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["alto", "bass"]);
    assert_eq!(index_of(&report, "v1"), Some(sha256_hex(&v1_index)));
    assert_eq!(index_of(&report, "v2"), Some(sha256_hex(&v2_index)));
    assert_eq!(report.skipped.len(), 1, "{:?}", report.skipped);
    assert!(
        report.skipped[0]
            .file
            .ends_with("two voices.zip:Pack/pretrained/f0G40k.pth")
    );
    assert!(
        report.skipped[0]
            .reason
            .starts_with("not an RVC voice model")
    );
    assert_eq!(
        report.models[1].metadata["source_path"],
        format!("{}:Pack/Bass/weights/bass.pth", zip.display())
    );
    assert!(s.tmp_is_empty(), "extracted entries are deleted");
}

#[test]
fn an_index_that_fits_no_voice_is_left_out_with_a_note() {
    let s = Setup::new();
    let zip = s.file(
        "v2.zip",
        &zip_of(&[
            Item::File("v2/voice.pth", &fixture(V2)),
            Item::File("v2/added_x_v1.index", &fixture(V1_INDEX)),
        ]),
    );
    let report = s.import(&zip, None).unwrap();
    assert_eq!(report.models.len(), 1);
    assert_eq!(report.models[0].index_sha256, None);
    assert_eq!(
        report.skipped[0].reason,
        "its 256-d features fit none of the voices"
    );
}

#[test]
fn several_fitting_indexes_stop_the_import_until_one_is_chosen() {
    let s = Setup::new();
    let index = fixture(V2_INDEX);
    let zip = s.file(
        "choose.zip",
        &zip_of(&[
            Item::File("voice/voice.pth", &fixture(V2)),
            Item::File("first/added_a.index", &index),
            Item::File("second/added_b.index", &index),
        ]),
    );
    let err = s.import(&zip, None).unwrap_err();
    assert_eq!(crate::error::kind_of(&err), crate::ErrorKind::InvalidInput);
    let message = err.to_string();
    assert!(
        message.contains("choose.zip: 2 indexes fit the voice voice/voice.pth: first/added_a.index (768-d), second/added_b.index (768-d)"),
        "{message}"
    );
    assert!(
        crate::db::models::list(&s.library.conn())
            .unwrap()
            .is_empty(),
        "nothing stored"
    );
    let report = s.import(&zip, Some("second/added_b.index")).unwrap();
    assert_eq!(report.models[0].index_sha256, Some(sha256_hex(&index)));
    assert_eq!(
        report.skipped[0].file,
        format!("{}:first/added_a.index", zip.display())
    );
}

#[test]
fn a_source_without_a_voice_is_an_error_naming_it_and_what_it_held() {
    let s = Setup::new();
    let zip = s.file(
        "pretrained.zip",
        &zip_of(&[Item::File("G_2333.pth", &fixture(NOT_A_VOICE))]),
    );
    let message = s.import(&zip, None).unwrap_err().to_string();
    assert!(
        message.starts_with(&format!(
            "{}: nothing to import: {}:G_2333.pth: not an RVC voice model",
            zip.display(),
            zip.display()
        )),
        "{message}"
    );
    let empty = s.file("empty.zip", &zip_of(&[Item::File("notes.txt", b"")]));
    let message = s.import(&empty, None).unwrap_err().to_string();
    assert!(
        message.ends_with("empty.zip: nothing to import: no .pth voice model in it"),
        "{message}"
    );
}

#[test]
fn a_broken_voice_among_good_ones_is_skipped_and_alone_is_refused() {
    let s = Setup::new();
    let v2 = fixture(V2);
    let zip = s.file(
        "mixed.zip",
        &zip_of(&[
            Item::File("good.pth", &v2),
            Item::File("truncated.pth", &v2[..v2.len() / 2]),
        ]),
    );
    let report = s.import(&zip, None).unwrap();
    assert_eq!(report.models.len(), 1);
    assert_eq!(
        report.skipped[0].file,
        format!("{}:truncated.pth", zip.display())
    );
    assert!(
        !report.skipped[0].reason.contains("voice-entry-"),
        "temporary names stay hidden: {:?}",
        report.skipped
    );

    let lone = s.file(
        "lone.zip",
        &zip_of(&[Item::File("dir/truncated.pth", &v2[..v2.len() / 2])]),
    );
    let message = s.import(&lone, None).unwrap_err().to_string();
    assert!(
        message.starts_with(&format!("{}:dir/truncated.pth", lone.display())),
        "{message}"
    );
}

#[test]
fn an_rvc_install_folder_imports_its_weights_with_their_logs_indexes() {
    let s = Setup::new();
    let (v1_index, v2_index) = (fixture(V1_INDEX), fixture(V2_INDEX));
    s.file("rvc/assets/weights/alice.pth", &fixture(V2));
    s.file("rvc/assets/weights/bob.pth", &fixture(V1));
    s.file("rvc/assets/pretrained_v2/f0G40k.pth", &fixture(NOT_A_VOICE));
    s.file(
        "rvc/logs/alice/added_IVF38_Flat_nprobe_1_alice_v2.index",
        &v2_index,
    );
    s.file(
        "rvc/logs/bob/added_IVF51_Flat_nprobe_1_bob_v1.index",
        &v1_index,
    );
    s.file("rvc/logs/bob/total_fea.npy", b"features");
    let report = s.import(&s.dir.path().join("rvc"), None).unwrap();
    let names: Vec<&str> = report.models.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["alice", "bob"]);
    assert_eq!(index_of(&report, "v2"), Some(sha256_hex(&v2_index)));
    assert_eq!(index_of(&report, "v1"), Some(sha256_hex(&v1_index)));
    assert!(
        report.skipped[0]
            .file
            .ends_with("rvc/assets/pretrained_v2/f0G40k.pth")
    );
}

#[test]
fn a_name_or_an_index_file_goes_with_one_voice_only() {
    let s = Setup::new();
    let zip = s.file(
        "two.zip",
        &zip_of(&[
            Item::File("a.pth", &fixture(V1)),
            Item::File("b.pth", &fixture(V2)),
        ]),
    );
    let request = VoiceImportRequest {
        source: zip.display().to_string(),
        name: Some("Both".into()),
        ..Default::default()
    };
    let message = import(&s.library, &request, &mut |_, _| Ok(()))
        .unwrap_err()
        .to_string();
    assert!(
        message.ends_with("two.zip: holds 2 voices; a name can only be given to one"),
        "{message}"
    );

    let single = VoiceImportRequest {
        source: rvc_parity_fixtures().join(V2).display().to_string(),
        index: Some(rvc_parity_fixtures().join(V1_INDEX)),
        ..Default::default()
    };
    let message = import(&s.library, &single, &mut |_, _| Ok(()))
        .unwrap_err()
        .to_string();
    assert!(
        message.contains(
            "added_IVF51_Flat_nprobe_1_tiny_v1.index: this index holds 256-d features (v1)"
        ),
        "{message}"
    );
}

#[test]
fn the_job_imports_a_zip_and_reports_it() {
    let s = Setup::new();
    let zip = s.file("job.zip", &zip_of(&[Item::File("voice.pth", &fixture(V2))]));
    let library = Arc::new(Library::open(&s.dir.path().join("data")).unwrap());
    let system = JobSystem::new(library, vec![Arc::new(VoiceImportHandler)]).unwrap();
    let missing = VoiceImportRequest {
        source: s.dir.path().join("missing.zip").display().to_string(),
        ..Default::default()
    };
    let err = submit(&system, missing).unwrap_err();
    assert_eq!(crate::error::kind_of(&err), crate::ErrorKind::NotFound);
    let plain_http = VoiceImportRequest {
        source: "http://example.com/voice.zip".into(),
        ..Default::default()
    };
    let err = submit(&system, plain_http).unwrap_err().to_string();
    assert!(
        err.starts_with("http://example.com/voice.zip is not an HTTPS URL"),
        "{err}"
    );
    let job = submit(
        &system,
        VoiceImportRequest {
            source: zip.display().to_string(),
            ..Default::default()
        },
    )
    .unwrap();
    let done = system.run_job(job.id).unwrap();
    assert_eq!(
        done.state,
        crate::db::jobs::JobState::Succeeded,
        "{:?}",
        done.error
    );
    let report: VoiceImportReport = serde_json::from_value(done.result.unwrap()).unwrap();
    assert_eq!(report.models[0].name, "voice");
}

#[test]
fn a_cancel_while_unpacking_stores_nothing_and_leaves_no_files() {
    let s = Setup::new();
    let zip = s.file(
        "cancel.zip",
        &zip_of(&[
            Item::File("a/a.pth", &fixture(V1)),
            Item::File("b/b.pth", &fixture(V2)),
        ]),
    );
    let request = VoiceImportRequest {
        source: zip.display().to_string(),
        ..Default::default()
    };
    let mut messages = Vec::new();
    let err = import(&s.library, &request, &mut |_, message| {
        let second_entry = message.starts_with("unpacking b/b.pth");
        messages.push(message);
        if second_entry {
            Err(crate::jobs::Cancelled.into())
        } else {
            Ok(())
        }
    })
    .unwrap_err();
    assert_eq!(crate::error::kind_of(&err), crate::ErrorKind::Cancelled);
    assert_eq!(
        messages,
        ["unpacking a/a.pth (1/2)", "unpacking b/b.pth (2/2)"]
    );
    assert!(
        crate::db::models::list(&s.library.conn())
            .unwrap()
            .is_empty()
    );
    assert!(
        s.tmp_is_empty(),
        "the entry unpacked before the cancel is deleted"
    );
}

#[test]
fn a_voice_the_models_folders_hubert_cannot_feed_is_flagged_at_import() {
    let s = Setup::new();
    let voices = s.file(
        "voices.zip",
        &zip_of(&[
            Item::File("wide/wide.pth", &fixture(V2)),
            Item::File("narrow/narrow.pth", &fixture(V1)),
        ]),
    );
    // Without a HuBERT there is nothing to measure against: the first-run check names it.
    assert!(s.import(&voices, None).unwrap().warnings.is_empty());

    // The fixtures' HuBERT: 64 wide, with RVC's 256-wide final_proj.
    let models = s.library.data_dir().join("models");
    std::fs::create_dir_all(&models).unwrap();
    std::fs::write(
        models.join("hubert_base.pt"),
        fixture("hubert_tiny/hubert_fairseq.pt"),
    )
    .unwrap();
    let mut messages = Vec::new();
    let request = VoiceImportRequest {
        source: voices.display().to_string(),
        ..Default::default()
    };
    let report = import(&s.library, &request, &mut |_, message| {
        messages.push(message);
        Ok(())
    })
    .unwrap();
    let hubert = models.join("hubert_base.pt");
    let expected = format!(
        "wide takes 768-d content features but {} gives 64-d ones: get RVC's HuBERT \
         (hubert_base.pt, on the Models page or `timbre assets download hubert`) before \
         converting with it",
        hubert.display()
    );
    assert_eq!(report.warnings, vec![expected.clone()]);
    assert_eq!(
        messages.last().unwrap(),
        &format!(
            "2 voice model(s) imported from {}; {expected}",
            voices.display()
        )
    );

    std::fs::write(&hubert, b"not a checkpoint").unwrap();
    let report = s.import(&voices, None).unwrap();
    assert_eq!(report.warnings.len(), 1);
    assert!(
        report.warnings[0].starts_with(&format!(
            "{}: cannot be read to check the voices' features",
            hubert.display()
        )),
        "{:?}",
        report.warnings
    );
}
