//! Speaker-encoder parity with the reference (`reference.py`: resemblyzer 0.1.4 itself,
//! `VoiceEncoder(device="cpu")` on its bundled `pretrained.pt`) on espeak-ng speech: the mel
//! frames, the utterance embedding and the preprocessing (volume and VAD trimming). Then the
//! embeddings of espeak-ng voices, each saying two texts, rank every voice's other text above
//! every other voice. Prints what it measured.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use tch::{Device, Tensor};
use timbre_audio::{AudioBuffer, SampleFormat};
use timbre_nn::speaker_encoder::{
    self, AUDIO_NORM_TARGET_DBFS, SAMPLING_RATE, SpeakerEncoder, VolumeChange,
};
use timbre_test_support::{crepe_weights, reference_python, resemblyzer_weights};

/// Smallest cosine between our embedding and resemblyzer's allowed (measured: 1 − 1e-13).
const EMBED_MIN_COSINE: f64 = 0.999;
/// Largest difference of an embedding value allowed (measured: 1.3e-7).
const EMBED_MAX_ABS: f32 = 1e-5;
/// Largest difference of a mel value allowed, relative to the utterance's largest mel value
/// (measured: 1.6e-7).
const MEL_MAX_RELATIVE: f64 = 1e-6;
/// Largest difference of a preprocessed sample allowed (float32 gain rounding).
const SAMPLE_MAX_ABS: f32 = 1e-5;
/// Smallest cosine between the embeddings of our preprocessing and the reference's at 22.05 kHz,
/// where the resamplers differ (rubato's FFT resampler, soxr).
const RESAMPLED_MIN_COSINE: f64 = 0.999;

/// espeak-ng voices (variant and pitch, `-p`) that GE2E tells apart. `en-us+m3` and `en-gb+f4`
/// at the default pitch (50) are too close (cross-speaker 0.887 against 0.890 for m3's own
/// texts), so f4 speaks higher.
const VOICES: [(&str, u32); 6] = [
    ("en-us+m3", 50),
    ("en-us+f2", 50),
    ("en+m7", 50),
    ("en-gb+f4", 80),
    ("en-029+f3", 60),
    ("en-us+klatt", 50),
];

const TEXTS: [&str; 2] = [
    "The quick brown fox jumps over the lazy dog near the river bank. It was a sunny morning.",
    "Please call Stella and ask her to bring these things with her from the store on Monday.",
];

/// espeak-ng's `voice` at `pitch` saying `text`, at its own rate (22,050 Hz).
fn espeak(dir: &Path, voice: &str, pitch: u32, text: &str) -> AudioBuffer {
    let folder = dir.join("espeak");
    std::fs::create_dir_all(&folder).unwrap();
    let wav = folder.join("speech.wav");
    let status = Command::new("espeak-ng")
        .args(["-v", voice, "-p", &pitch.to_string(), "-s", "150", "-w"])
        .arg(&wav)
        .arg(text)
        .status()
        .expect("espeak-ng runs (scripts/setup.sh --test installs it)");
    assert!(status.success(), "espeak-ng failed");
    timbre_audio::decode_file(&wav, &Default::default())
        .unwrap()
        .to_mono()
}

fn at_16k(buffer: &AudioBuffer) -> Vec<f32> {
    let resampled = timbre_audio::resample(buffer, SAMPLING_RATE).unwrap();
    resampled.channels.into_iter().next().unwrap()
}

fn load() -> SpeakerEncoder {
    SpeakerEncoder::load(&resemblyzer_weights(), Device::Cpu).unwrap()
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot = |x: &[f32], y: &[f32]| -> f64 {
        x.iter()
            .zip(y)
            .map(|(p, q)| f64::from(*p) * f64::from(*q))
            .sum()
    };
    dot(a, b) / (dot(a, a) * dot(b, b)).sqrt()
}

fn max_abs(a: &[f32], b: &[f32]) -> f32 {
    timbre_test_support::max_abs_difference(a, b)
}

#[test]
fn speaker_encoder_parity_with_resemblyzer_on_speech() {
    let dir = tempfile::tempdir().unwrap();
    let speech = |voice: usize, text: usize| {
        let (name, pitch) = VOICES[voice];
        espeak(dir.path(), name, pitch, TEXTS[text])
    };
    let m3_fox = speech(0, 0);
    let f4_fox = at_16k(&speech(3, 0));
    let f4_stella = at_16k(&speech(3, 1));
    // Two sentences 2 s apart: trim_long_silences cuts the pause.
    let mut pause = f4_fox.clone();
    pause.extend(vec![0.0; 2 * SAMPLING_RATE as usize]);
    pause.extend(&f4_stella);
    let inputs: Vec<(&str, AudioBuffer)> = vec![
        (
            "m3_fox",
            AudioBuffer::new(SAMPLING_RATE, vec![at_16k(&m3_fox)]),
        ),
        (
            "f2_stella",
            AudioBuffer::new(SAMPLING_RATE, vec![at_16k(&speech(1, 1))]),
        ),
        ("f4_pause", AudioBuffer::new(SAMPLING_RATE, vec![pause])),
        // Quiet: preprocessing raises it to -30 dBFS.
        (
            "m7_quiet",
            AudioBuffer::new(
                SAMPLING_RATE,
                vec![at_16k(&speech(2, 1)).iter().map(|x| x * 0.02).collect()],
            ),
        ),
        // Shorter than one partial: one slice, zero-padded.
        (
            "f3_short",
            AudioBuffer::new(
                SAMPLING_RATE,
                vec![at_16k(&speech(4, 0))[..SAMPLING_RATE as usize * 3 / 4].to_vec()],
            ),
        ),
        // espeak-ng's own rate: both sides resample, each with its own resampler.
        ("m3_fox_22k", m3_fox.clone()),
    ];
    for (name, buffer) in &inputs {
        let wav = dir.path().join(format!("{name}.wav"));
        timbre_audio::write_wav(&wav, buffer, SampleFormat::Float32).unwrap();
    }
    let output = Command::new(reference_python())
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/speaker_encoder/reference.py"))
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "the reference failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        Path::new(printed["weights"].as_str().unwrap())
            .canonicalize()
            .unwrap(),
        resemblyzer_weights().canonicalize().unwrap(),
        "the reference and this test read the same weights"
    );
    let reference: Vec<(String, Tensor)> =
        Tensor::read_safetensors(dir.path().join("reference.safetensors")).unwrap();
    let get = |key: String| {
        reference
            .iter()
            .find(|(n, _)| *n == key)
            .map(|(_, t)| t.shallow_clone())
            .unwrap_or_else(|| panic!("{key} missing from the reference"))
    };
    let vec = |t: Tensor| Vec::<f32>::try_from(t.flatten(0, -1)).unwrap();
    let model = load();
    for (name, buffer) in &inputs {
        let wav = &buffer.channels[0];
        let mut measured = serde_json::json!({ "input": name, "rate": buffer.sample_rate,
            "samples": wav.len() });
        if buffer.sample_rate == SAMPLING_RATE {
            let mel = speaker_encoder::mel_frames(wav);
            let expected = get(format!("{name}.mel"));
            assert_eq!(mel.size(), expected.size(), "{name}: mel shape");
            let peak = expected.abs().max().double_value(&[]);
            let mel_error = (&mel - &expected).abs().max().double_value(&[]) / peak;
            // Where the reference's energy is above a millionth of its peak: the relative error
            // of each value.
            let loud = expected.gt(peak * 1e-6);
            let relative = ((&mel - &expected).abs() / expected.abs().clamp_min(1e-30))
                .masked_select(&loud)
                .max()
                .double_value(&[]);
            let started = Instant::now();
            let embed = model.embed_utterance(wav).unwrap();
            let secs = started.elapsed().as_secs_f64();
            let expected_embed = vec(get(format!("{name}.embed")));
            let similarity = cosine(&embed, &expected_embed);
            let embed_max_abs = max_abs(&embed, &expected_embed);
            measured["mel_frames"] = mel.size()[0].into();
            measured["mel_max_abs_over_peak"] = mel_error.into();
            measured["mel_max_relative_above_1e-6_peak"] = relative.into();
            measured["embed_cosine"] = similarity.into();
            measured["embed_one_minus_cosine"] = (1.0 - similarity).into();
            measured["embed_max_abs"] = f64::from(embed_max_abs).into();
            measured["embed_secs"] = secs.into();
            assert!(
                mel_error <= MEL_MAX_RELATIVE,
                "{name}: mel differs by {mel_error} of its peak"
            );
            assert!(
                similarity >= EMBED_MIN_COSINE,
                "{name}: embedding cosine {similarity}"
            );
            assert!(
                embed_max_abs <= EMBED_MAX_ABS,
                "{name}: embeddings differ by {embed_max_abs}"
            );
        }
        // The volume: the reference's normalize_volume on its 16 kHz audio, ours on ours (the
        // same samples at 16 kHz; resampled by each side's resampler at 22.05 kHz).
        let resampled = if buffer.sample_rate == SAMPLING_RATE {
            wav.clone()
        } else {
            at_16k(buffer)
        };
        let normalized = speaker_encoder::normalize_volume(
            &resampled,
            AUDIO_NORM_TARGET_DBFS,
            VolumeChange::IncreaseOnly,
        );
        let expected_normalized = vec(get(format!("{name}.normalized")));
        if buffer.sample_rate == SAMPLING_RATE {
            assert_eq!(normalized.len(), expected_normalized.len(), "{name}");
            let error = max_abs(&normalized, &expected_normalized);
            measured["normalized_max_abs"] = f64::from(error).into();
            assert!(error <= SAMPLE_MAX_ABS, "{name}: volume differs by {error}");
        } else {
            measured["normalized_samples"] =
                serde_json::json!([normalized.len(), expected_normalized.len()]);
        }
        let preprocessed = speaker_encoder::preprocess(wav, buffer.sample_rate).unwrap();
        let expected = vec(get(format!("{name}.preprocessed")));
        measured["preprocessed_samples"] = serde_json::json!([preprocessed.len(), expected.len()]);
        if buffer.sample_rate == SAMPLING_RATE {
            assert_eq!(
                preprocessed.len(),
                expected.len(),
                "{name}: the VAD trims differently"
            );
            let error = max_abs(&preprocessed, &expected);
            measured["preprocessed_max_abs"] = f64::from(error).into();
            assert!(
                error <= SAMPLE_MAX_ABS,
                "{name}: preprocessing differs by {error}"
            );
        } else {
            let embed = model.embed_utterance(&preprocessed).unwrap();
            let similarity = cosine(&embed, &vec(get(format!("{name}.preprocessed_embed"))));
            measured["preprocessed_embed_cosine"] = similarity.into();
            assert!(
                similarity >= RESAMPLED_MIN_COSINE,
                "{name}: embeddings of the two preprocessings differ: cosine {similarity}"
            );
        }
        println!("{measured}");
    }
    // The pause was cut: the VAD keeps at most the smoothing and dilation's reach of it.
    let pause = &inputs[2].1.channels[0];
    let trimmed = speaker_encoder::preprocess(pause, SAMPLING_RATE).unwrap();
    assert!(
        trimmed.len() + 3 * SAMPLING_RATE as usize / 2 < pause.len(),
        "the 2 s pause was not cut: {} of {} samples kept",
        trimmed.len(),
        pause.len()
    );
}

#[test]
fn speaker_encoder_ranks_espeak_voices_apart() {
    let dir = tempfile::tempdir().unwrap();
    let model = load();
    let mut embeddings = Vec::new();
    let (mut secs, mut audio_secs) = (0.0, 0.0);
    for (voice, pitch) in VOICES {
        let mut texts = Vec::new();
        for text in TEXTS {
            let wav = speaker_encoder::preprocess(
                &at_16k(&espeak(dir.path(), voice, pitch, text)),
                SAMPLING_RATE,
            )
            .unwrap();
            let started = Instant::now();
            texts.push(model.embed_utterance(&wav).unwrap());
            secs += started.elapsed().as_secs_f64();
            audio_secs += wav.len() as f64 / f64::from(SAMPLING_RATE);
        }
        embeddings.push(texts);
    }
    let count = (VOICES.len() * TEXTS.len()) as f64;
    println!(
        "speaker encoder on the CPU: {:.1} ms per utterance ({:.1} s of audio each), {:.1} ms per \
         second of audio",
        1e3 * secs / count,
        audio_secs / count,
        1e3 * secs / audio_secs
    );
    let label = |v: usize, t: usize| format!("{}-p{}/{t}", VOICES[v].0, VOICES[v].1);
    let all: Vec<(usize, usize)> = (0..VOICES.len())
        .flat_map(|v| (0..TEXTS.len()).map(move |t| (v, t)))
        .collect();
    println!("similarity (voice-pitch/text):");
    for &(v, t) in &all {
        let row: Vec<String> = all
            .iter()
            .map(|&(w, u)| {
                format!(
                    "{:.3}",
                    speaker_encoder::cosine(&embeddings[v][t], &embeddings[w][u])
                )
            })
            .collect();
        println!("  {:<18} {}", label(v, t), row.join(" "));
    }
    let mut lowest_same = f32::INFINITY;
    let mut highest_cross = f32::NEG_INFINITY;
    for v in 0..VOICES.len() {
        let same = speaker_encoder::cosine(&embeddings[v][0], &embeddings[v][1]);
        let (mut cross, mut nearest) = (f32::NEG_INFINITY, String::new());
        for &(w, u) in all.iter().filter(|(w, _)| *w != v) {
            for t in 0..TEXTS.len() {
                let similarity = speaker_encoder::cosine(&embeddings[v][t], &embeddings[w][u]);
                if similarity > cross {
                    (cross, nearest) = (similarity, label(w, u));
                }
            }
        }
        println!(
            "{}-p{}: same voice {same:.3}, nearest other voice {cross:.3} ({nearest})",
            VOICES[v].0, VOICES[v].1
        );
        assert!(
            same > cross,
            "{}: its two texts are {same:.3} alike, but {nearest} is {cross:.3} like it",
            VOICES[v].0
        );
        lowest_same = lowest_same.min(same);
        highest_cross = highest_cross.max(cross);
    }
    println!("lowest same-voice {lowest_same:.3}, highest cross-voice {highest_cross:.3}");
    assert!(lowest_same > highest_cross);
    // Unit length, as resemblyzer's.
    let norm: f32 = embeddings[0][0].iter().map(|x| x * x).sum::<f32>().sqrt();
    assert!((norm - 1.0).abs() < 1e-5, "{norm}");
}

#[test]
fn speaker_encoder_load_names_the_file_and_the_problem() {
    let message = |path: &Path| {
        format!(
            "{:#}",
            SpeakerEncoder::load(path, Device::Cpu).err().unwrap()
        )
    };
    // A torch file of another model: a plain state dict, no `model_state`.
    let crepe = crepe_weights("tiny");
    let text = message(&crepe);
    assert!(
        text.contains(&crepe.display().to_string()) && text.contains("no `model_state`"),
        "{text}"
    );
    // Not a torch file at all.
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("pretrained.pt");
    std::fs::write(&junk, b"not a checkpoint").unwrap();
    let text = message(&junk);
    assert!(text.contains(&junk.display().to_string()), "{text}");
    let missing = dir.path().join("missing.pt");
    let text = message(&missing);
    assert!(text.contains(&missing.display().to_string()), "{text}");
    println!("wrong files: {text}");
}
