//! A damaged library is refused, naming the file and the way back; a backup restores it, and
//! the damaged file is kept aside.

use std::time::{Duration, SystemTime};
use timbre_integration_tests::{Sandbox, write_sine_wav};

const FILES: usize = 20;

/// A library of `FILES` takes with a daily backup made after the import.
fn backed_up_library() -> Sandbox {
    let sb = Sandbox::new();
    let paths: Vec<String> = (0..FILES)
        .map(|i| {
            let path = sb.path(&format!("clip{i:02}.wav"));
            write_sine_wav(&path, 0.5, 200.0 + i as f32);
            path.display().to_string()
        })
        .collect();
    sb.json(
        &[
            &["import"],
            &paths.iter().map(String::as_str).collect::<Vec<_>>()[..],
        ]
        .concat(),
    );
    // The first open made a backup of the empty library; age it so the next open makes another.
    let backups = sb.json(&["library", "backups"]);
    assert_eq!(backups.as_array().unwrap().len(), 1, "{backups}");
    let two_days_ago = SystemTime::now() - Duration::from_secs(2 * 24 * 3600);
    let first = backups[0]["path"].as_str().unwrap();
    let file = std::fs::File::options().write(true).open(first).unwrap();
    file.set_modified(two_days_ago).unwrap();
    assert_eq!(
        sb.json(&["library", "list"]).as_array().unwrap().len(),
        FILES
    );
    assert_eq!(
        sb.json(&["library", "backups"]).as_array().unwrap().len(),
        2
    );
    sb
}

fn refused(sb: &Sandbox, what: &str) {
    let out = sb.run(&["library", "list"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "a damaged library was used: {stderr}"
    );
    let database = sb.data_dir().join("library.sqlite3");
    assert!(
        stderr.contains(&format!("{} {what}", database.display())),
        "{stderr}"
    );
    assert!(stderr.contains("timbre library restore BACKUP"), "{stderr}");
}

fn restore_newest(sb: &Sandbox) {
    let backups = sb.json(&["library", "backups"]);
    let newest = backups[0]["name"].as_str().unwrap();
    let restored = sb.json(&["library", "restore", newest]);
    let kept = restored["kept_aside"].as_str().unwrap();
    assert!(
        kept.contains("library.sqlite3.damaged-") && std::path::Path::new(kept).exists(),
        "{restored}"
    );
    let takes = sb.json(&["library", "list"]);
    assert_eq!(takes.as_array().unwrap().len(), FILES);
    for take in takes.as_array().unwrap() {
        let sha = take["sha256"].as_str().unwrap();
        let object = sb
            .data_dir()
            .join("store/objects")
            .join(&sha[..2])
            .join(format!("{sha}.wav"));
        assert!(object.exists(), "{} is gone", object.display());
    }
}

#[test]
fn garbage_in_the_middle_is_refused_and_a_backup_restores_it() {
    let sb = backed_up_library();
    let database = sb.data_dir().join("library.sqlite3");
    let mut bytes = std::fs::read(&database).unwrap();
    assert!(bytes.len() > 32 * 1024, "{} bytes", bytes.len());
    let middle = bytes.len() / 2;
    bytes[middle..middle + 8192].fill(0xA5);
    std::fs::write(&database, bytes).unwrap();
    refused(&sb, "is damaged");
    restore_newest(&sb);
}

#[test]
fn an_empty_file_is_refused_not_replaced_by_an_empty_library() {
    let sb = backed_up_library();
    let database = sb.data_dir().join("library.sqlite3");
    std::fs::write(&database, b"").unwrap();
    refused(&sb, "is empty (0 bytes)");
    assert_eq!(
        std::fs::metadata(&database).unwrap().len(),
        0,
        "left as it was"
    );
    restore_newest(&sb);
}

/// `library restore` of a file that is no backup of ours (empty, or another program's SQLite
/// database) is refused naming the file and the problem, and the library still opens as it was.
#[test]
fn a_file_that_is_not_a_library_backup_is_not_restored() {
    let sb = Sandbox::new();
    let clip = sb.path("clip.wav");
    write_sine_wav(&clip, 0.5, 220.0);
    sb.json(&["import", clip.to_str().unwrap()]);
    let empty = sb.path("empty.sqlite3");
    std::fs::write(&empty, b"").unwrap();
    let foreign = sb.path("foreign.sqlite3");
    rusqlite::Connection::open(&foreign)
        .unwrap()
        .execute_batch("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('hello')")
        .unwrap();
    for (file, words) in [
        (&empty, "it is empty (0 bytes)"),
        (
            &foreign,
            "it is an SQLite database without a Timbre Studio library's schema",
        ),
    ] {
        let out = sb.run(&["library", "restore", file.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{stderr}");
        assert!(
            stderr.contains(&format!("{} cannot be restored: {words}", file.display())),
            "{stderr}"
        );
        assert!(
            stderr.contains("the library was left as it was"),
            "{stderr}"
        );
        assert_eq!(sb.json(&["library", "list"]).as_array().unwrap().len(), 1);
    }
}
