//! The content store's reference counting as a property: any sequence of imports, conversions,
//! model imports, index attachments, deletions, backups, restores and collections leaves no row
//! naming a missing file, and after a collection no file that nothing names (a kept backup
//! naming a file keeps it in the trash, from where a restore brings it back).

use std::collections::HashSet;
use std::fs;
use std::path::Path;

use proptest::prelude::*;

use crate::Library;
use crate::db::{backups, conversions, models, objects, takes};
use crate::library::DATABASE;
use crate::store::ObjectKey;

/// Contents drawn from a small pool, so the same bytes keep turning up as takes, conversions,
/// weights and indexes.
const CONTENTS: usize = 4;

#[derive(Debug, Clone)]
enum Step {
    ImportTake(usize),
    Convert {
        content: usize,
        model: usize,
    },
    ImportModel {
        weights: usize,
        index: Option<usize>,
    },
    AttachIndex {
        model: usize,
        index: usize,
    },
    DeleteTake(usize),
    DeleteConversion(usize),
    DeleteModel(usize),
    Backup,
    Restore(usize),
    CollectGarbage,
}

fn step() -> impl Strategy<Value = Step> {
    let content = 0..CONTENTS;
    prop_oneof![
        content.clone().prop_map(Step::ImportTake),
        (content.clone(), 0..4usize).prop_map(|(content, model)| Step::Convert { content, model }),
        (content.clone(), proptest::option::of(content.clone()))
            .prop_map(|(weights, index)| Step::ImportModel { weights, index }),
        (0..4usize, content).prop_map(|(model, index)| Step::AttachIndex { model, index }),
        (0..4usize).prop_map(Step::DeleteTake),
        (0..4usize).prop_map(Step::DeleteConversion),
        (0..4usize).prop_map(Step::DeleteModel),
        Just(Step::Backup),
        (0..3usize).prop_map(Step::Restore),
        Just(Step::CollectGarbage),
    ]
}

fn bytes(content: usize) -> Vec<u8> {
    format!("content {content}").into_bytes()
}

/// The `n`th row (in id order, wrapping) of a table, if it has any.
fn nth_id(library: &Library, table: &str, n: usize) -> Option<i64> {
    let conn = library.conn();
    let mut statement = conn
        .prepare(&format!("SELECT id FROM {table} ORDER BY id"))
        .unwrap();
    let ids: Vec<i64> = statement
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    (!ids.is_empty()).then(|| ids[n % ids.len()])
}

fn apply(library: Library, dir: &Path, step: &Step, models_made: &mut usize) -> Library {
    match *step {
        Step::ImportTake(content) => {
            let stored = library
                .store()
                .ingest_bytes(&bytes(content), "wav")
                .unwrap();
            let conn = library.conn();
            if takes::find_by_sha(&conn, &stored.sha256).unwrap().is_none() {
                takes::insert(&conn, &takes::sample(&stored.sha256)).unwrap();
            }
        }
        Step::Convert { content, model } => {
            if let Some(model_id) = nth_id(&library, "models", model) {
                let stored = library
                    .store()
                    .ingest_bytes(&bytes(content), "wav")
                    .unwrap();
                let row = conversions::sample(&stored.sha256, model_id);
                conversions::insert(&library.conn(), &row).unwrap();
            }
        }
        Step::ImportModel { weights, index } => {
            let weights = library
                .store()
                .ingest_bytes(&bytes(weights), models::WEIGHTS_EXT)
                .unwrap();
            let index = index.map(|i| {
                library
                    .store()
                    .ingest_bytes(&bytes(i), models::INDEX_EXT)
                    .unwrap()
            });
            let conn = library.conn();
            let known = conn
                .query_row(
                    "SELECT 1 FROM models WHERE weights_sha256 = ?1",
                    [&weights.sha256],
                    |_| Ok(()),
                )
                .is_ok();
            if !known {
                *models_made += 1;
                let mut row = models::sample(&weights.sha256);
                row.name = format!("model {models_made}");
                row.index_sha256 = index.as_ref().map(|i| i.sha256.clone());
                models::insert(&conn, &row).unwrap();
            }
        }
        Step::AttachIndex { model, index } => {
            if let Some(id) = nth_id(&library, "models", model) {
                let stored = library
                    .store()
                    .ingest_bytes(&bytes(index), models::INDEX_EXT)
                    .unwrap();
                let previous = models::require(&library.conn(), id).unwrap().index_sha256;
                models::set_index(&library.conn(), id, Some(&stored.sha256)).unwrap();
                if let Some(previous) = previous {
                    library
                        .release_objects(&[ObjectKey::new(previous, models::INDEX_EXT)])
                        .unwrap();
                }
            }
        }
        Step::DeleteTake(n) => {
            if let Some(id) = nth_id(&library, "takes", n) {
                library.delete_take(id).unwrap();
            }
        }
        Step::DeleteConversion(n) => {
            if let Some(id) = nth_id(&library, "conversions", n) {
                library.delete_conversion(id).unwrap();
            }
        }
        Step::DeleteModel(n) => {
            if let Some(id) = nth_id(&library, "models", n) {
                library.delete_model(id).unwrap();
            }
        }
        Step::Backup => {
            backups::make(&library.conn(), &dir.join(DATABASE), Some("test")).unwrap();
        }
        Step::Restore(n) => {
            let kept = backups::list(&dir.join(DATABASE)).unwrap();
            if !kept.is_empty() {
                let name = kept[n % kept.len()].name.clone();
                drop(library);
                Library::restore_backup(dir, &name).unwrap();
                return Library::open(dir).unwrap();
            }
        }
        Step::CollectGarbage => {
            let report = library.collect_garbage(true).unwrap();
            assert!(report.missing.is_empty(), "{report:?}");
            let named = objects::named(&library.conn()).unwrap();
            let in_place = files_in(&dir.join("store/objects"));
            assert_eq!(
                in_place, named,
                "after a collection: what the library names, no more"
            );
            let users = backups_named(dir);
            for key in files_in(&dir.join("store/trash")) {
                assert!(
                    users.contains(&key),
                    "{key:?} stays in the trash with no backup naming it"
                );
            }
        }
    }
    library
}

/// The objects under `dir` (a shard tree or the flat trash), by file name.
fn files_in(dir: &Path) -> HashSet<ObjectKey> {
    let mut keys = HashSet::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let (stem, ext) = (path.file_stem().unwrap(), path.extension().unwrap());
                keys.insert(ObjectKey::new(
                    stem.to_string_lossy(),
                    ext.to_string_lossy(),
                ));
            }
        }
    }
    keys
}

/// What the kept backups and set-aside databases name.
fn backups_named(dir: &Path) -> HashSet<ObjectKey> {
    let mut named = HashSet::new();
    let aside = format!("{DATABASE}.damaged-");
    let mut paths: Vec<_> = backups::list(&dir.join(DATABASE))
        .unwrap()
        .into_iter()
        .map(|b| b.path)
        .collect();
    for entry in fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(&aside) && !name.ends_with("-wal") && !name.ends_with("-shm") {
            paths.push(entry.path());
        }
    }
    for path in paths {
        let conn = rusqlite::Connection::open(&path).unwrap();
        named.extend(objects::named(&conn).unwrap());
    }
    named
}

fn assert_nothing_named_is_missing(library: &Library, after: &Step) {
    for key in objects::named(&library.conn()).unwrap() {
        let path = library.store().object_path(&key.sha256, &key.ext);
        assert!(
            path.exists(),
            "after {after:?}: the library names {key:?}, which is gone"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn no_row_ever_names_a_missing_file_and_a_collection_leaves_no_unnamed_one(
        steps in proptest::collection::vec(step(), 1..30)
    ) {
        let dir = tempfile::tempdir().unwrap();
        let mut library = Library::open(dir.path()).unwrap();
        let mut models_made = 0;
        for step in &steps {
            library = apply(library, dir.path(), step, &mut models_made);
            assert_nothing_named_is_missing(&library, step);
        }
        apply(library, dir.path(), &Step::CollectGarbage, &mut models_made);
    }
}

#[test]
fn deleting_a_take_keeps_a_conversion_with_the_same_audio() {
    // Issue 34's first loss: a conversion's output imported again as a take, then the take
    // deleted.
    let dir = tempfile::tempdir().unwrap();
    let library = Library::open(dir.path()).unwrap();
    let output = library.store().ingest_bytes(b"converted", "wav").unwrap();
    let weights = crate::store::sha256_hex(b"weights");
    let model = models::insert(&library.conn(), &models::sample(&weights)).unwrap();
    conversions::insert(&library.conn(), &conversions::sample(&output.sha256, model)).unwrap();
    let take = takes::insert(&library.conn(), &takes::sample(&output.sha256)).unwrap();
    let path = output.path.clone();
    drop(output);
    library.delete_take(take).unwrap();
    assert!(path.exists(), "the conversion's audio went with the take");
}

#[test]
fn deleting_a_model_keeps_an_index_another_model_uses() {
    // Issue 34's second loss: one index attached to two models, the first one deleted.
    let dir = tempfile::tempdir().unwrap();
    let library = Library::open(dir.path()).unwrap();
    let index = library
        .store()
        .ingest_bytes(b"index", models::INDEX_EXT)
        .unwrap();
    let mut first = models::sample(&crate::store::sha256_hex(b"weights a"));
    first.index_sha256 = Some(index.sha256.clone());
    let a = models::insert(&library.conn(), &first).unwrap();
    let mut second = models::sample(&crate::store::sha256_hex(b"weights b"));
    second.name = "B".into();
    let b = models::insert(&library.conn(), &second).unwrap();
    models::set_index(&library.conn(), b, Some(&index.sha256)).unwrap();
    let path = index.path.clone();
    drop(index);
    library.delete_model(a).unwrap();
    assert!(path.exists(), "B's index went with A");
    library.delete_model(b).unwrap();
    assert!(!path.exists(), "the last model's deletion frees it");
}
