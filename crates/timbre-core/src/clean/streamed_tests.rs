use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;
use tch::Tensor;
use timbre_audio::SampleFormat;
use timbre_audio::signal::backing_track;
use timbre_nn::checkpoint::{Value, write_torch_file};
use timbre_nn::separation::{Config, Roformer, RoformerKind};
use timbre_test_support::max_abs_difference;

use super::*;
use crate::clean::IsolateHandler;
use crate::db::jobs::JobState;
use crate::db::takes;
use crate::db::takes::Origin;
use crate::jobs::{JobHandler, JobKind, JobSystem};
use crate::model_cache::{ModelCache, Shared};
use crate::output_format::OutputFormat;
use timbre_audio::{AudioBuffer, DecodeOptions};
use timbre_nn::separation::Separator;

/// 2048-sample chunks, normalised: small enough for debug builds, and the statistics pass runs.
const TINY: &str = "
audio: {chunk_size: 2048, n_fft: 256, hop_length: 64, num_channels: 2, sample_rate: 44100}
model:
  dim: 8
  depth: 1
  stereo: true
  num_stems: 1
  time_transformer_depth: 1
  freq_transformer_depth: 1
  dim_head: 4
  heads: 2
  stft_n_fft: 256
  stft_hop_length: 64
  stft_win_length: 256
  freqs_per_bands: !!python/tuple [32, 32, 32, 33]
training: {instruments: [vocals, other], target_instrument: vocals}
inference: {batch_size: 2, num_overlap: 4, normalize: true}
";

/// A library whose models folder holds the random-weight model `tiny`.
fn setup() -> (tempfile::TempDir, Arc<JobSystem>, SeparationModel) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let library = Arc::new(Library::open(&data).unwrap());
    let folder = data.join("models/separation");
    std::fs::create_dir_all(&folder).unwrap();
    let config = folder.join("tiny.yaml");
    std::fs::write(&config, TINY).unwrap();
    let parsed = Config::from_yaml(TINY).unwrap();
    let (_, weights) = Roformer::random(RoformerKind::BsRoformer, &parsed.model).unwrap();
    let mut names: Vec<&str> = weights.names().collect();
    names.sort_unstable();
    let entries = names
        .iter()
        .map(|n| {
            (
                Value::Str(n.to_string()),
                Value::Tensor(weights.get(n).unwrap()),
            )
        })
        .collect();
    let checkpoint = folder.join("tiny.ckpt");
    write_torch_file(&checkpoint, &Value::ordered_dict(entries)).unwrap();
    let handlers: Vec<Arc<dyn JobHandler>> =
        vec![Arc::new(IsolateHandler::new(Default::default()))];
    let system = JobSystem::new(library, handlers).unwrap();
    let model = SeparationModel {
        name: "tiny".into(),
        checkpoint,
        config,
        stems: vec!["vocals".into()],
        task: Some(timbre_nn::separation::VoiceTask::Vocals),
    };
    (dir, system, model)
}

fn write_mix(dir: &Path, seconds: f64) -> PathBuf {
    let path = dir.join("mix.wav");
    let mix = backing_track(44100, seconds);
    timbre_audio::write_wav(&path, &mix, SampleFormat::Float32).unwrap();
    path
}

fn decode(path: &Path) -> AudioBuffer {
    timbre_audio::decode_file(path, &DecodeOptions::default()).unwrap()
}

fn as_tensor(audio: &AudioBuffer) -> Tensor {
    let channels = audio.channels.len() as i64;
    Tensor::from_slice(&audio.channels.concat()).view([channels, audio.frames() as i64])
}

fn max_difference(a: &Tensor, b: &Tensor) -> f64 {
    (a - b).abs().max().double_value(&[])
}

/// Nothing in the store's `tmp/`, nor anywhere else in the data folder, is a leftover result.
fn assert_no_scratch_files(dir: &Path) {
    assert_eq!(
        std::fs::read_dir(dir.join("data/store/tmp"))
            .unwrap()
            .count(),
        0
    );
    for entry in std::fs::read_dir(dir.join("data")).unwrap().flatten() {
        assert!(!entry.file_name().to_string_lossy().starts_with(".isolate"));
    }
}

/// `separate_file` of `frames` (all when None) of `path` from `start`, decoded `block_frames` at a
/// time, into files of `format`; the separator too, for the whole-track comparison.
fn separate(
    system: &JobSystem,
    model: &SeparationModel,
    path: &Path,
    (start, frames): (u64, Option<u64>),
    block_frames: usize,
    format: OutputFormat,
) -> (SeparatedFiles, Shared<Separator>) {
    let info = timbre_audio::probe_file(path).unwrap();
    let models = ModelCache::default();
    let separators = Separators::new(&models, tch::Device::Cpu);
    let report = |_: f64, _: String| Ok(());
    let mut bridge = ProgressBridge::new(&report);
    let loaded = separators.loaded(model, &mut bridge, "mix").unwrap();
    let span = Span {
        path,
        info: &info,
        decode: DecodeOptions::default(),
        start,
        frames,
        block_frames,
    };
    let scratch = crate::derived::scratch_dir(system.library());
    let files = {
        let separator = loaded.lock();
        separate_file(&separator, &span, &scratch, format, &mut bridge, "mix").unwrap()
    };
    (files, loaded)
}

#[test]
fn blocks_and_a_span_of_a_file_separate_as_that_audio_whole() {
    let (dir, system, model) = setup();
    let path = write_mix(dir.path(), 2.0);
    let mix = decode(&path);
    let (files, separator) = separate(
        &system,
        &model,
        &path,
        (5000, Some(60_000)),
        7000,
        OutputFormat::WavFloat,
    );
    let excerpt = as_tensor(&mix).narrow(1, 5000, 60_000);
    let whole = separator.lock().vocals(&excerpt, |_, _| true).unwrap();
    let vocals = as_tensor(&decode(&files.vocals));
    let instrumental = as_tensor(&decode(&files.instrumental));
    assert_eq!(vocals.size(), [2, 60_000]);
    // The statistics are summed in double block by block, the whole in float at once.
    assert!(max_difference(&vocals, &whole) < 1e-4);
    assert!(max_difference(&(&vocals + &instrumental), &excerpt) < 1e-6);
    assert!(!files.silent);
    drop(files);
    assert_no_scratch_files(dir.path());
}

/// FLAC stems stream too, at 24 bits: the float WAV's samples to 24-bit precision.
#[test]
fn stems_stream_as_24_bit_flac() {
    let (dir, system, model) = setup();
    let path = write_mix(dir.path(), 1.0);
    let separated = |format| separate(&system, &model, &path, (0, None), 7000, format).0;
    let (float, flac) = (
        separated(OutputFormat::WavFloat),
        separated(OutputFormat::Flac),
    );
    assert!(flac.vocals.extension().is_some_and(|e| e == "flac"));
    assert_eq!(
        timbre_audio::probe_file(&flac.vocals).unwrap().codec,
        "flac"
    );
    for (flac, float) in [
        (&flac.vocals, &float.vocals),
        (&flac.instrumental, &float.instrumental),
    ] {
        let (flac, float) = (as_tensor(&decode(flac)), as_tensor(&decode(float)));
        assert_eq!(flac.size(), float.size());
        // Within two steps of 24 bits (16 bits would be off by up to 128 of them); integer
        // samples clip at full scale, where the float stems may go past it.
        let float = float.clamp(-1.0, 1.0);
        assert!(max_difference(&flac, &float) < 2.0 / f64::from(1 << 23));
    }
}

/// An 8 kHz mono file streams through the resampler: the same as resampling it whole first.
#[test]
fn a_file_at_another_rate_is_resampled_as_it_streams() {
    let (dir, system, model) = setup();
    let path = dir.path().join("phone.wav");
    let low = timbre_audio::resample(&backing_track(44100, 1.5).to_mono(), 8000).unwrap();
    timbre_audio::write_wav(&path, &low, SampleFormat::Float32).unwrap();
    let (files, separator) = separate(
        &system,
        &model,
        &path,
        (0, None),
        1500,
        OutputFormat::WavFloat,
    );
    let whole_mix = as_tensor(&timbre_audio::resample(&decode(&path), 44100).unwrap());
    let whole = separator.lock().vocals(&whole_mix, |_, _| true).unwrap();
    let vocals = decode(&files.vocals);
    assert_eq!(vocals.sample_rate, 44100);
    let vocals = as_tensor(&vocals);
    assert_eq!(vocals.size(), [1, whole_mix.size()[1]]);
    assert!(max_difference(&vocals, &whole) < 1e-4);
    let instrumental = as_tensor(&decode(&files.instrumental));
    assert!(max_difference(&(&vocals + &instrumental), &whole_mix) < 1e-5);
}

#[test]
fn an_isolation_by_a_model_is_streamed_into_two_takes_and_a_sample_too() {
    let (dir, system, _) = setup();
    let path = write_mix(dir.path(), 1.5);
    let original = std::fs::read(&path).unwrap();
    let params = json!({ "input": { "file": path }, "method": { "model": "tiny" } });
    let job = system.submit(JobKind::Isolate, params).unwrap();
    let job = system.run_job(job.id).unwrap();
    assert_eq!(job.state, JobState::Succeeded, "{:?}", job.error);
    let result = job.result.unwrap();
    let library = system.library();
    let take = |i: usize| {
        let id = result["takes"][i]["take"]["id"].as_i64().unwrap();
        takes::require(&library.conn(), id).unwrap()
    };
    let (vocals, instrumental) = (take(0), take(1));
    assert_eq!(vocals.name, "mix (vocals)");
    assert_eq!(
        (vocals.frames, vocals.channels, vocals.format.as_str()),
        (66150, 2, "wav")
    );
    let described = decode(&library.take_path(&vocals));
    let expected = crate::take_files::describe(
        &described,
        &vocals.sha256,
        "wav",
        vocals.name.clone(),
        None,
        Origin::Imported,
        None,
    );
    // The database keeps the waveform in steps of 1/255.
    assert!(max_abs_difference(&vocals.waveform, &expected.waveform) <= 0.5 / 255.0 + 1e-6);
    assert_eq!(vocals.waveform.len(), expected.waveform.len());
    assert_eq!(vocals.peak_dbfs, expected.peak_dbfs);
    let sum = as_tensor(&described) + as_tensor(&decode(&library.take_path(&instrumental)));
    assert!(max_difference(&sum, &as_tensor(&decode(&path))) < 1e-6);
    assert_eq!(
        std::fs::read(&path).unwrap(),
        original,
        "the input is untouched"
    );

    let sample = json!({ "input": { "take": result["source_take_id"] },
        "method": { "model": "tiny" }, "preview_secs": 0.5, "format": "wav16" });
    let job = system.submit(JobKind::Isolate, sample).unwrap();
    let result = system.run_job(job.id).unwrap().result.unwrap();
    assert_eq!(result["takes"][0]["take"]["frames"], 22050);
    assert_eq!(
        result["takes"][0]["take"]["name"],
        "mix (vocals, 0.5 s sample)"
    );
    assert_no_scratch_files(dir.path());
}

#[test]
fn a_cancelled_or_failed_streamed_isolation_leaves_nothing() {
    let (dir, system, _) = setup();
    let path = write_mix(dir.path(), 10.0);
    let params = json!({ "input": { "file": path }, "method": { "model": "tiny" } });
    let job = system.submit(JobKind::Isolate, params).unwrap();
    let job = crate::clean::tests::run_cancelled_once_started(&system, job.id);
    assert_eq!(job.state, JobState::Cancelled);

    // The header promises 2 s; the data stops after one.
    let cut = dir.path().join("cut.wav");
    let bytes = timbre_audio::encode_wav(&backing_track(44100, 2.0), SampleFormat::Int16).unwrap();
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let params = json!({ "input": { "file": cut }, "method": { "model": "tiny" } });
    let job = system.submit(JobKind::Isolate, params).unwrap();
    let job = system.run_job(job.id).unwrap();
    assert_eq!(job.state, JobState::Failed);
    let error = job.error.unwrap();
    assert!(
        error.contains("cut.wav") && error.contains("cut short"),
        "{error}"
    );

    assert!(
        takes::list(&system.library().conn(), None)
            .unwrap()
            .is_empty()
    );
    assert_eq!(crate::clean::tests::stored_objects(dir.path()), 0);
    assert_no_scratch_files(dir.path());
}
