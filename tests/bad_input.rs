//! Every kind of bad input the import path can meet: a clear error naming the file and why,
//! nothing stored, and the library still works afterwards.

use std::io::Write;
use timbre_integration_tests::{Sandbox, write_sine_wav};

fn wav_header(sample_rate: u32, channels: u16, bits: u16, data_bytes: u32) -> Vec<u8> {
    let block = channels * bits / 8;
    let mut h = Vec::new();
    h.extend_from_slice(b"RIFF");
    h.extend_from_slice(&(36 + data_bytes).to_le_bytes());
    h.extend_from_slice(b"WAVEfmt ");
    h.extend_from_slice(&16u32.to_le_bytes());
    h.extend_from_slice(&1u16.to_le_bytes());
    h.extend_from_slice(&channels.to_le_bytes());
    h.extend_from_slice(&sample_rate.to_le_bytes());
    h.extend_from_slice(&(sample_rate * u32::from(block)).to_le_bytes());
    h.extend_from_slice(&block.to_le_bytes());
    h.extend_from_slice(&bits.to_le_bytes());
    h.extend_from_slice(b"data");
    h.extend_from_slice(&data_bytes.to_le_bytes());
    h
}

#[test]
fn each_bad_file_gets_its_own_clear_error_and_nothing_is_stored() {
    let sb = Sandbox::new();
    let good = sb.path("good.wav");
    write_sine_wav(&good, 1.0, 440.0);

    let empty = sb.path("empty.wav");
    std::fs::write(&empty, b"").unwrap();

    let truncated = sb.path("truncated.wav");
    let bytes = std::fs::read(&good).unwrap();
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();

    let corrupt = sb.path("corrupt.flac");
    std::fs::write(
        &corrupt,
        (0..4096u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 24) as u8)
            .collect::<Vec<_>>(),
    )
    .unwrap();

    let unsupported = sb.path("notes.txt");
    std::fs::write(&unsupported, "Timbre Studio imports audio, not text.\n").unwrap();

    let directory = sb.path("a folder.wav");
    std::fs::create_dir(&directory).unwrap();

    let no_samples = sb.path("zero.wav");
    std::fs::write(&no_samples, wav_header(16000, 1, 16, 0)).unwrap();

    // Ten hours of 8 kHz 16-bit mono, valid but sparse: costs no disk and must be refused
    // from its header without being read.
    let ten_hours = sb.path("ten hours.wav");
    let data_bytes = 10 * 3600 * 8000 * 2;
    let mut file = std::fs::File::create(&ten_hours).unwrap();
    file.write_all(&wav_header(8000, 1, 16, data_bytes))
        .unwrap();
    file.set_len(44 + u64::from(data_bytes)).unwrap();

    let bad = [
        &empty,
        &truncated,
        &corrupt,
        &unsupported,
        &directory,
        &no_samples,
        &ten_hours,
    ];
    let mut args = vec![
        "--json".to_string(),
        "import".into(),
        good.display().to_string(),
    ];
    args.extend(bad.iter().map(|p| p.display().to_string()));
    let started = std::time::Instant::now();
    let out = sb.command().args(&args).output().unwrap();
    assert!(started.elapsed().as_secs() < 20, "bad files must fail fast");
    assert!(!out.status.success(), "failed files make the command fail");
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["job"]["result"]["imported"], 1);
    assert_eq!(result["job"]["result"]["failed"], bad.len());

    let files = result["files"].as_array().unwrap();
    let expect = [
        (&empty, "empty"),
        (&truncated, "truncated"),
        (&corrupt, ""),
        (&unsupported, ""),
        (&directory, "folder"),
        (&no_samples, "no audio"),
        (&ten_hours, "long"),
    ];
    for (path, words) in expect {
        let file = files
            .iter()
            .find(|f| f["path"] == path.display().to_string())
            .expect("one result per file");
        assert_eq!(file["ok"], false);
        let error = file["error"].as_str().unwrap();
        assert!(
            error.contains(&path.display().to_string()),
            "error must name the file: {error}"
        );
        assert!(
            error.to_lowercase().contains(words),
            "{path:?}: {error:?} should say {words:?}"
        );
    }

    let takes = sb.json(&["library", "list"]);
    assert_eq!(
        takes.as_array().unwrap().len(),
        1,
        "only the good file is in the library"
    );
    let rows: i64 = sb
        .db()
        .unwrap()
        .query_row("SELECT COUNT(*) FROM takes", [], |r| r.get(0))
        .unwrap();
    assert_eq!(rows, 1);
    let objects = std::fs::read_dir(sb.data_dir().join("store/objects"))
        .unwrap()
        .count();
    assert_eq!(objects, 1, "nothing stored for the bad files");
}
