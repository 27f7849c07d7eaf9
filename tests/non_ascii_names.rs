//! Chinese, Cyrillic and emoji names through the real binary: audio files imported into a
//! library (and a library and models folder so named), a voice model imported and exported with
//! its descriptive entries edited, conversions and a cover written under the names of their
//! inputs and voices (and tagged with them), takes and conversions exported by name, and voice
//! zips as archivers write them (UTF-8 flagged; macOS's unflagged, decomposed UTF-8; Info-ZIP's
//! Unicode Path field; a Windows code page with no word of its encoding). A name that is not
//! UTF-8 at all is refused naming it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use timbre_audio::signal::{backing_track, speech_like};
use timbre_audio::{AudioBuffer, SampleFormat};
use timbre_integration_tests::assets::sha256_hex;
use timbre_integration_tests::{Sandbox, rvc_parity_fixtures, timbre_bin, write_sine_wav};
use timbre_test_support::reference_python;

const CHINESE: &str = "我的声音";
const CYRILLIC: &str = "Голос";
const EMOJI: &str = "🎤 voice";
/// The voice the takes are imported under and the model's name in its exported file.
const VOICE: &str = "Голос 🎤";

const V1: &str = "synth_v1_f0_40k/model.pth";
const V2: &str = "synth_v2_f0_40k/model.pth";
const V1_INDEX: &str = "index_v1/added_IVF51_Flat_nprobe_1_tiny_v1.index";
const V2_INDEX: &str = "index_v2/added_IVF38_Flat_nprobe_1_tiny_v2.index";

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(rvc_parity_fixtures().join(name)).unwrap()
}

/// A sandbox whose models folder (the fixture HuBERT in it) is named in three scripts.
fn studio() -> (Sandbox, PathBuf) {
    let sb = Sandbox::new();
    let models = sb.path("模型 Модели 🎛");
    std::fs::create_dir_all(&models).unwrap();
    std::fs::copy(
        rvc_parity_fixtures().join("hubert_tiny/hubert_fairseq.pt"),
        models.join("hubert_base.pt"),
    )
    .unwrap();
    (sb, models)
}

/// `timbre --data-dir LIBRARY ARGS…` on the CPU with `models` as the models folder.
fn timbre(library: &Path, models: &Path, args: &[&str]) -> Output {
    Command::new(timbre_bin())
        .arg("--data-dir")
        .arg(library)
        .env("TIMBRE_MODELS_DIR", models)
        .env("TIMBRE_DEVICE", "cpu")
        .args(args)
        .output()
        .expect("running timbre")
}

fn succeeded(args: &[&str], out: Output) -> Output {
    assert!(
        out.status.success(),
        "timbre {args:?} failed: {}{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    out
}

/// [`timbre`] with `--json`, expected to succeed: its parsed stdout.
fn json(library: &Path, models: &Path, args: &[&str]) -> Value {
    let out = succeeded(args, timbre(library, models, &[&["--json"], args].concat()));
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

/// [`timbre`] without `--json`, expected to succeed: its stdout.
fn text(library: &Path, models: &Path, args: &[&str]) -> String {
    String::from_utf8(succeeded(args, timbre(library, models, args)).stdout).expect("UTF-8 text")
}

fn utf8(path: &Path) -> &str {
    path.to_str().unwrap()
}

fn file_name(path: &str) -> String {
    Path::new(path)
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string()
}

fn names(values: &Value, key: &str) -> Vec<String> {
    let mut names: Vec<String> = values
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v[key].as_str().unwrap().to_string())
        .collect();
    names.sort();
    names
}

/// The speech-like voice in the centre of the backing track, 44.1 kHz stereo.
fn song(path: &Path, seconds: f64) {
    let voice = speech_like(44_100, seconds, 9).audio.channels.remove(0);
    let channels = backing_track(44_100, seconds)
        .channels
        .iter()
        .map(|side| {
            side.iter()
                .zip(&voice)
                .map(|(b, v)| 0.5 * (b + v))
                .collect()
        })
        .collect();
    let mix = AudioBuffer::new(44_100, channels);
    timbre_audio::write_wav(path, &mix, SampleFormat::Int16).unwrap();
}

#[test]
fn non_ascii_names_go_through_import_convert_cover_and_export() {
    let (sb, models) = studio();
    let library = sb.path("库 Библиотека 📚");
    let json = |args: &[&str]| json(&library, &models, args);
    let text = |args: &[&str]| text(&library, &models, args);

    // Import: each take is named by its file, under a voice named in two scripts.
    let inputs: Vec<PathBuf> = [CHINESE, CYRILLIC, EMOJI]
        .iter()
        .zip([220.0, 275.0, 330.0])
        .map(|(name, freq)| {
            let path = sb.path(&format!("{name}.wav"));
            write_sine_wav(&path, 1.0, freq);
            path
        })
        .collect();
    let paths: Vec<&str> = inputs.iter().map(|p| utf8(p)).collect();
    let imported = json(&[&["import", "--voice", VOICE][..], &paths].concat());
    assert_eq!(imported["job"]["state"], "succeeded", "{imported}");
    let takes = json(&["library", "list", "--voice", VOICE]);
    assert_eq!(names(&takes, "name"), [CYRILLIC, CHINESE, EMOJI]);
    assert_eq!(names(&takes, "source_path"), {
        let mut sources: Vec<String> = paths.iter().map(|p| p.to_string()).collect();
        sources.sort();
        sources
    });
    let voices = json(&["library", "voices"]);
    assert_eq!(
        (voices[0]["name"].as_str(), voices[0]["take_count"].as_i64()),
        (Some(VOICE), Some(3))
    );
    let listed = text(&["library", "list"]);
    for name in [CHINESE, CYRILLIC, EMOJI] {
        assert!(listed.contains(name), "{listed}");
    }
    assert!(text(&["library", "voices"]).contains(VOICE));
    let take_id = |name: &str| -> String {
        let takes = json(&["library", "list"]);
        let take = takes.as_array().unwrap().iter().find(|t| t["name"] == name);
        take.unwrap_or_else(|| panic!("no take {name}: {takes}"))["id"].to_string()
    };

    // A voice model named by its file; exported with its entries edited in three scripts, and
    // the export (read by torch as RVC reads it) imported under the name written into it.
    let pth = sb.path(&format!("{CHINESE}.pth"));
    std::fs::write(&pth, fixture(V1)).unwrap();
    let model = json(&["models", "import", utf8(&pth)]);
    assert_eq!(model[0]["name"], CHINESE, "{model}");
    let exported_model = sb.path(&format!("{CYRILLIC} 模型 🎤.pth"));
    let author = "作者 Автор 👩‍🎤";
    let written = json(&[
        "models",
        "export",
        CHINESE,
        utf8(&exported_model),
        "--model-name",
        VOICE,
        "--author",
        author,
        "--description",
        "描述 Описание ✨",
    ]);
    assert_eq!(written["out"], utf8(&exported_model));
    let read = Command::new(reference_python())
        .arg("-c")
        .arg(
            "import sys, torch\n\
             c = torch.load(sys.argv[1], weights_only=True)\n\
             sys.stdout.buffer.write('|'.join(c[k] for k in \
             ('model_name', 'author', 'description')).encode())",
        )
        .arg(&exported_model)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&read.stdout),
        format!("{VOICE}|{author}|描述 Описание ✨"),
        "{}",
        String::from_utf8_lossy(&read.stderr)
    );
    let renamed = json(&["models", "import", utf8(&exported_model)]);
    assert_eq!(renamed[0]["name"], VOICE);
    assert_eq!(renamed[0]["metadata"]["file"]["author"], author);
    assert_eq!(renamed[0]["metadata"]["source_path"], utf8(&exported_model));
    let models_listed = text(&["models", "list"]);
    assert!(
        models_listed.contains(CHINESE) && models_listed.contains(VOICE),
        "{models_listed}"
    );

    // Convert: `<input> (<voice>)` in a folder named in three scripts, tagged with both.
    let converted_dir = sb.path("输出 Выход 🎧");
    let converted = json(&[
        "convert",
        "--model",
        VOICE,
        "--f0-method",
        "pm",
        "-t",
        "2",
        "--out",
        utf8(&converted_dir),
        paths[0],
        paths[2],
    ]);
    let outputs: Vec<&str> = converted
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            assert_eq!(c["ok"], true, "{c}");
            c["result"]["output_path"].as_str().unwrap()
        })
        .collect();
    for (output, input) in outputs.iter().zip([CHINESE, EMOJI]) {
        assert_eq!(
            Path::new(output),
            converted_dir.join(format!("{input} ({VOICE}).wav"))
        );
        let tags = timbre_audio::export::read_tags(Path::new(output)).unwrap();
        assert_eq!(
            (tags.title.as_str(), tags.artist.as_str()),
            (format!("{input} ({VOICE})").as_str(), VOICE)
        );
    }
    let conversion = converted[1]["result"]["conversion"]["id"].to_string();

    // Cover: the song's take, its stems and the cover are named after the song and the voice.
    let song_path = sb.path("Песня 歌曲 🎶.wav");
    song(&song_path, 2.0);
    let covers = sb.path("翻唱 Каверы 🎶");
    let covered = json(&[
        "cover",
        utf8(&song_path),
        "--model",
        CHINESE,
        "--f0-method",
        "pm",
        "--separation",
        "rough",
        "--out",
        utf8(&covers),
    ]);
    let cover = &covered[0]["result"];
    let cover_path = cover["output_path"].as_str().unwrap();
    assert_eq!(
        Path::new(cover_path),
        covers.join(format!("Песня 歌曲 🎶 (cover, {CHINESE}).wav")),
        "{covered}"
    );
    assert_eq!(
        timbre_audio::export::read_tags(Path::new(cover_path))
            .unwrap()
            .title,
        format!("Песня 歌曲 🎶 (cover, {CHINESE})")
    );
    let stems: Vec<&str> = cover["stems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["take"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        stems,
        [
            "Песня 歌曲 🎶 (vocals, rough preview)".to_string(),
            "Песня 歌曲 🎶 (instrumental, rough preview)".into(),
            format!("Песня 歌曲 🎶 (vocals, {CHINESE})"),
            format!("Песня 歌曲 🎶 (cover, {CHINESE})"),
        ]
    );
    // A take covered again by id (its name, not a file's, names the result): from the cache.
    let again = json(&[
        "cover",
        "--take",
        &take_id("Песня 歌曲 🎶"),
        "--model",
        CHINESE,
        "--f0-method",
        "pm",
        "--separation",
        "rough",
        "--out",
        utf8(&covers),
    ]);
    assert_eq!(
        file_name(again[0]["result"]["output_path"].as_str().unwrap()),
        format!("Песня 歌曲 🎶 (cover, {CHINESE}) 2.wav")
    );

    // Export: takes and a conversion into a folder under their names, a second time numbered;
    // one to a file named in three scripts, encoded by its extension.
    let out = sb.path("导出 Экспорт 📤");
    std::fs::create_dir(&out).unwrap();
    let cyrillic = take_id(CYRILLIC);
    let emoji = take_id(EMOJI);
    let cover_take = take_id(&format!("Песня 歌曲 🎶 (cover, {CHINESE})"));
    let args = [
        "library",
        "export",
        "--take",
        &cyrillic,
        "--take",
        &emoji,
        "--take",
        &cover_take,
        "--conversion",
        &conversion,
        utf8(&out),
    ];
    let first = json(&args);
    let second = json(&args);
    let exported = |written: &Value| -> Vec<String> {
        let written = written.as_array().unwrap();
        written
            .iter()
            .map(|p| file_name(p.as_str().unwrap()))
            .collect()
    };
    assert_eq!(
        exported(&first),
        [
            format!("{CYRILLIC}.wav"),
            format!("{EMOJI}.wav"),
            format!("Песня 歌曲 🎶 (cover, {CHINESE}).wav"),
            format!("{EMOJI} ({VOICE}, +2 st).wav"),
        ]
    );
    assert_eq!(
        exported(&second),
        [
            format!("{CYRILLIC} 2.wav"),
            format!("{EMOJI} 2.wav"),
            format!("Песня 歌曲 🎶 (cover, {CHINESE}) 2.wav"),
            format!("{EMOJI} ({VOICE}, +2 st) 2.wav"),
        ]
    );
    for written in first.as_array().unwrap() {
        let path = Path::new(written.as_str().unwrap());
        timbre_audio::decode_file(path, &Default::default())
            .unwrap_or_else(|e| panic!("decoding {}: {e}", path.display()));
    }
    let mp3 = out.join("🎤 экспорт 导出.mp3");
    let written = json(&["library", "export", "--conversion", &conversion, utf8(&mp3)]);
    assert_eq!(written, serde_json::json!([utf8(&mp3)]));
    let audio = timbre_audio::decode_file(&mp3, &Default::default()).unwrap();
    assert!(
        (audio.duration_secs() - 1.0).abs() < 0.1,
        "{}",
        audio.duration_secs()
    );
    let said = text(&["library", "export", "--take", &cyrillic, utf8(&out)]);
    assert_eq!(
        said.trim(),
        format!(
            "exported {}",
            out.join(format!("{CYRILLIC} 3.wav")).display()
        )
    );
}

/// CRC-32 (IEEE), as zip headers carry it.
fn crc32(bytes: &[u8]) -> u32 {
    let table: Vec<u32> = (0..256u32)
        .map(|n| {
            (0..8).fold(n, |c, _| match c & 1 {
                1 => 0xEDB8_8320 ^ (c >> 1),
                _ => c >> 1,
            })
        })
        .collect();
    !bytes.iter().fold(!0u32, |c, &b| {
        table[((c ^ u32::from(b)) & 0xFF) as usize] ^ (c >> 8)
    })
}

/// An entry of a hand-written zip: its name's bytes as stored, whether the UTF-8 flag (bit 11)
/// is set, an Info-ZIP Unicode Path field (0x7075) with this name if any, and its content.
struct Entry<'a> {
    raw_name: Vec<u8>,
    utf8_flag: bool,
    unicode_path: Option<&'a str>,
    data: Vec<u8>,
}

/// A zip of stored (uncompressed) entries, made on "MS-DOS" as Windows' archivers say, with the
/// names exactly as given: what `zip::ZipWriter` will not write.
fn write_raw_zip(path: &Path, entries: &[Entry]) {
    let (mut out, mut central) = (Vec::new(), Vec::new());
    let u16le = |v: usize| u16::try_from(v).unwrap().to_le_bytes();
    let u32le = |v: usize| u32::try_from(v).unwrap().to_le_bytes();
    for entry in entries {
        let extra = match entry.unicode_path {
            Some(name) => {
                let mut data = vec![1u8];
                data.extend(crc32(&entry.raw_name).to_le_bytes());
                data.extend(name.as_bytes());
                [&0x7075u16.to_le_bytes()[..], &u16le(data.len()), &data].concat()
            }
            None => Vec::new(),
        };
        let flags: u16 = if entry.utf8_flag { 1 << 11 } else { 0 };
        // Version needed, flags, method (stored), time, date (1980-01-01), CRC, sizes, lengths.
        let fields = [
            &20u16.to_le_bytes()[..],
            &flags.to_le_bytes(),
            &0u16.to_le_bytes(),
            &0u16.to_le_bytes(),
            &0x21u16.to_le_bytes(),
            &crc32(&entry.data).to_le_bytes(),
            &u32le(entry.data.len()),
            &u32le(entry.data.len()),
            &u16le(entry.raw_name.len()),
            &u16le(extra.len()),
        ]
        .concat();
        let offset = out.len();
        out.extend(0x0403_4b50u32.to_le_bytes());
        out.extend(&fields);
        out.extend(&entry.raw_name);
        out.extend(&extra);
        out.extend(&entry.data);
        central.extend(0x0201_4b50u32.to_le_bytes());
        central.extend(20u16.to_le_bytes()); // made by: MS-DOS, 2.0
        central.extend(&fields);
        central.extend([0u8; 10]); // comment length, disk, internal and external attributes
        central.extend(u32le(offset));
        central.extend(&entry.raw_name);
        central.extend(&extra);
    }
    let central_offset = out.len();
    out.extend(&central);
    out.extend(0x0605_4b50u32.to_le_bytes());
    out.extend([0u8; 4]);
    out.extend(u16le(entries.len()));
    out.extend(u16le(entries.len()));
    out.extend(u32le(central.len()));
    out.extend(u32le(central_offset));
    out.extend([0u8; 2]);
    std::fs::write(path, out).unwrap();
}

/// `(name, index sha256)` of each imported model.
fn imported(models: &Value) -> Vec<(String, Option<String>)> {
    models
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["name"].as_str().unwrap().to_string(),
                m["index_sha256"].as_str().map(String::from),
            )
        })
        .collect()
}

#[test]
fn voice_zips_with_non_ascii_entry_names_import_under_those_names() {
    let (sb, models) = studio();
    let (v1_index, v2_index) = (fixture(V1_INDEX), fixture(V2_INDEX));
    let (v1_sha, v2_sha) = (Some(sha256_hex(&v1_index)), Some(sha256_hex(&v2_index)));
    // Each zip into a library of its own: the same weights again would be the same model.
    let import = |zip: &Path, library: &str, extra: &[&str]| {
        let args = [&["models", "import", utf8(zip)][..], extra].concat();
        json(&sb.path(library), &models, &args)
    };

    // UTF-8 names with the flag set (Python, Java, 7-Zip, zip-rs): two voices, each paired with
    // the index in its folder, a readme beside them.
    let flagged = sb.path("Голоса 声音 🎤.zip");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&flagged).unwrap());
    for (name, bytes) in [
        (format!("{VOICE}/{VOICE}.pth"), fixture(V1)),
        (
            format!("{VOICE}/added_IVF51_Flat_nprobe_1_голос 🎤_v1.index"),
            v1_index.clone(),
        ),
        (format!("{CHINESE}/{CHINESE}.pth"), fixture(V2)),
        (
            format!("{CHINESE}/added_IVF38_Flat_nprobe_1_{CHINESE}_v2.index"),
            v2_index.clone(),
        ),
        ("说明 Читай меня 📄.txt".into(), b"made with RVC".to_vec()),
    ] {
        zip.start_file(name, zip::write::SimpleFileOptions::default())
            .unwrap();
        std::io::Write::write_all(&mut zip, &bytes).unwrap();
    }
    zip.finish().unwrap();
    let models_in = import(&flagged, "flagged", &[]);
    assert_eq!(
        imported(&models_in),
        [
            (VOICE.to_string(), v1_sha.clone()),
            (CHINESE.to_string(), v2_sha.clone())
        ]
    );
    assert_eq!(
        models_in[0]["metadata"]["source_path"],
        format!("{}:{VOICE}/{VOICE}.pth", utf8(&flagged))
    );

    // Two indexes that fit, told apart by a non-ASCII path the user names.
    let two = sb.path("два индекса.zip");
    write_raw_zip(
        &two,
        &[
            ("🎤.pth", fixture(V1)),
            ("旧 старый/added_a.index", v1_index.clone()),
            ("新 новый/added_b.index", v1_index.clone()),
        ]
        .map(|(name, data)| Entry {
            raw_name: name.as_bytes().to_vec(),
            utf8_flag: true,
            unicode_path: None,
            data,
        }),
    );
    let out = timbre(
        &sb.path("two"),
        &models,
        &["--json", "models", "import", utf8(&two)],
    );
    let error: Value = serde_json::from_slice(&out.stderr).expect("the error as JSON");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains(
            "2 indexes fit the voice 🎤.pth: 旧 старый/added_a.index (256-d), \
             新 новый/added_b.index (256-d)"
        ),
        "{message}"
    );
    let chosen = import(&two, "two", &["--use-index", "新 новый/added_b.index"]);
    assert_eq!(imported(&chosen), [("🎤".to_string(), v1_sha.clone())]);

    // macOS's Archive Utility: UTF-8 without the flag, decomposed (NFD: Й as И + U+0306,
    // Hangul as its jamo). The voice is named composed, as the name is typed, and converts.
    let decomposed = "И\u{306}ога \u{1112}\u{1161}\u{11ab}\u{1100}\u{116e}\u{11a8}\u{110b}\u{1165}";
    let composed = "Йога 한국어";
    assert_ne!(decomposed, composed);
    let mac = sb.path("Йога (Mac).zip");
    write_raw_zip(
        &mac,
        &[
            (format!("{decomposed}/{decomposed}.pth"), fixture(V1)),
            (
                format!("{decomposed}/added_IVF51_Flat_nprobe_1_{decomposed}_v1.index"),
                v1_index.clone(),
            ),
            (
                format!("__MACOSX/{decomposed}/._{decomposed}.pth"),
                b"AppleDouble".to_vec(),
            ),
        ]
        .map(|(name, data)| Entry {
            raw_name: name.into_bytes(),
            utf8_flag: false,
            unicode_path: None,
            data,
        }),
    );
    let models_in = import(&mac, "mac", &[]);
    assert_eq!(
        imported(&models_in),
        [(composed.to_string(), v1_sha.clone())]
    );
    let tone = sb.path(&format!("{CYRILLIC}.wav"));
    write_sine_wav(&tone, 1.0, 220.0);
    let converted = json(
        &sb.path("mac"),
        &models,
        &[
            "convert",
            "--model",
            composed,
            "--f0-method",
            "pm",
            utf8(&tone),
        ],
    );
    assert_eq!(converted[0]["ok"], true, "{converted}");

    // Info-ZIP's zip: the name in the local code page (GBK here), the UTF-8 one in a Unicode
    // Path field, which wins.
    let gbk_name = [
        &[0xCE, 0xD2, 0xB5, 0xC4, 0xC9, 0xF9, 0xD2, 0xF4][..],
        b".pth",
    ]
    .concat();
    let info_zip = sb.path("info-zip.zip");
    let unicode_name = format!("{CHINESE}.pth");
    write_raw_zip(
        &info_zip,
        &[Entry {
            raw_name: gbk_name,
            utf8_flag: false,
            unicode_path: Some(&unicode_name),
            data: fixture(V2),
        }],
    );
    assert_eq!(
        imported(&import(&info_zip, "info-zip", &[])),
        [(CHINESE.to_string(), None)]
    );

    // Windows' own zip on a Russian system: CP866 bytes and nothing to say so. Read as CP437,
    // as the zip format says, the voice is imported garbled, and a warning names the entry.
    let windows = sb.path("windows.zip");
    write_raw_zip(
        &windows,
        &[Entry {
            raw_name: [&[0x83, 0xAE, 0xAB, 0xAE, 0xE1][..], b".pth"].concat(),
            utf8_flag: false,
            unicode_path: None,
            data: fixture(V2),
        }],
    );
    assert_eq!(
        imported(&import(&windows, "windows", &[])),
        [("â«½«ß".to_string(), None)]
    );
    let out = timbre(
        &sb.path("windows"),
        &models,
        &["models", "import", utf8(&windows)],
    );
    let notes = String::from_utf8_lossy(&out.stderr);
    assert!(
        notes.contains(&format!(
            "warning   {}:â«½«ß.pth: the archive does not say how its file names are encoded \
             and they are not UTF-8",
            utf8(&windows)
        )) && notes.contains("the voice is named \"â«½«ß\"; rename it if that is garbled"),
        "{notes}"
    );
}

#[test]
fn a_name_that_is_not_utf8_is_refused_naming_it() {
    use std::os::unix::ffi::OsStrExt;
    let (sb, models) = studio();
    let library = sb.path("library");
    // "café.wav" in Latin-1.
    let latin1 = sb
        .dir
        .path()
        .join(std::ffi::OsStr::from_bytes(b"caf\xe9.wav"));
    write_sine_wav(&latin1, 0.5, 440.0);
    let named = format!("{}: not a UTF-8 name", latin1.display());
    let out = Command::new(timbre_bin())
        .arg("--data-dir")
        .arg(&library)
        .env("TIMBRE_MODELS_DIR", &models)
        .args(["--json", "import"])
        .arg(&latin1)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let error: Value = serde_json::from_slice(&out.stderr).expect("the error as JSON");
    assert_eq!(error["kind"], "invalid_input");
    assert!(
        error["message"].as_str().unwrap().starts_with(&named),
        "{error}"
    );

    // An export to such a name is refused before anything is written.
    let take = sb.path("take.wav");
    write_sine_wav(&take, 0.5, 220.0);
    json(&library, &models, &["import", utf8(&take)]);
    let target = sb
        .dir
        .path()
        .join(std::ffi::OsStr::from_bytes(b"caf\xe9 2.wav"));
    let out = Command::new(timbre_bin())
        .arg("--data-dir")
        .arg(&library)
        .args(["library", "export", "--take", "1"])
        .arg(&target)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.starts_with(&format!("timbre: {}: not a UTF-8 name", target.display())),
        "{said}"
    );
    assert!(!target.exists());
}
