//! A conversion killed mid-way leaves nothing in the system's temporary folder: its temporary
//! files live in the library's `store/tmp/`, which the next start empties.

use std::time::{Duration, Instant};
use timbre_integration_tests::{Sandbox, write_sine_wav};

fn entries(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_killed_conversion_leaves_no_temporary_file_behind() {
    let sb = Sandbox::with_extractors(true);
    sb.import_fixture_voice("synth_v1_f0_40k/model.pth", "pitched");
    let input = sb.path("long.wav");
    write_sine_wav(&input, 120.0, 220.0);
    let system_tmp = sb.path("system-tmp");
    std::fs::create_dir(&system_tmp).unwrap();
    let library_tmp = sb.data_dir().join("store/tmp");

    let mut child = sb
        .cpu_command()
        .env("TMPDIR", &system_tmp)
        .args(["convert", "--model", "pitched"])
        .arg(&input)
        .spawn()
        .unwrap();
    let started = Instant::now();
    while entries(&library_tmp).is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the conversion never wrote its output"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "the conversion ended before it could be killed"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert_eq!(entries(&system_tmp), Vec::<String>::new());
    assert!(!entries(&library_tmp).is_empty(), "killed mid-way");

    let listed = sb
        .command()
        .env("TMPDIR", &system_tmp)
        .args(["library", "list"])
        .output()
        .unwrap();
    assert!(listed.status.success(), "{listed:?}");
    assert_eq!(
        entries(&library_tmp),
        Vec::<String>::new(),
        "the start cleaned it"
    );
    assert_eq!(entries(&system_tmp), Vec::<String>::new());
}
