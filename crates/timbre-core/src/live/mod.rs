//! Live conversion: the models a stream runs (from the process's model cache, so that switching
//! voices or pitch methods mid-stream is a cache hit), a file streamed block by block exactly as
//! the devices would stream it (`file`), the device session (`session`), and the smallest block
//! this machine keeps up with (`tune`). The engine itself, blocks in and out with no I/O, is
//! `timbre_nn::stream`.

pub mod file;
mod session;
pub mod tune;

pub use session::{LiveRequest, LiveStatus, LiveStream, RecordedSession};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use tch::Device;
use timbre_nn::stream::{StreamModels, StreamParams};
use timbre_nn::voice::VoiceParams;

use timbre_audio::live;

use crate::db::models;
use crate::library::Library;
use crate::model_cache::{ModelCache, StoredFile};
use crate::models_folder;
use crate::pitch::{self, PitchModel};

/// Test bursts a latency measurement sends, and their peak level (dBFS), as rvc-next's.
const MEASURE_PINGS: usize = 4;
const MEASURE_LEVEL_DB: f64 = -12.0;

/// The voice a stream converts to.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct LiveVoice {
    /// Id of the library model (its `models` row) to convert with.
    pub model_id: i64,
    /// Retrieve from the voice's index when it has one (at the parameters' index rate).
    #[serde(default = "use_index_default")]
    pub use_index: bool,
}

fn use_index_default() -> bool {
    true
}

/// The devices a stream can open.
#[derive(Debug, Clone, PartialEq, Serialize, ts_rs::TS)]
pub struct DeviceList {
    /// Capture devices, the system's default marked.
    pub inputs: Vec<timbre_audio::record::InputDevice>,
    /// Playback devices, the system's default marked.
    pub outputs: Vec<live::OutputDevice>,
}

/// The input and output devices a stream can open, as the audio host lists them now.
pub fn devices() -> Result<DeviceList> {
    Ok(DeviceList {
        inputs: live::list_input_devices()?,
        outputs: live::list_output_devices()?,
    })
}

/// A measured round trip, and the latency a stream with the given crossfade has over it.
#[derive(Debug, Clone, PartialEq, Serialize, ts_rs::TS)]
pub struct LatencyMeasurement {
    /// The loopback run: the round trip found (if any), the devices' reported latencies, overflows
    /// and underruns.
    pub measurement: live::LoopbackRun,
    /// The round trip plus the engine's delay without denoise (crossfade + 10 ms), when a round
    /// trip was found.
    pub stream_latency_ms: Option<f64>,
}

/// Plays test bursts on `output` and finds them in `input` with `block_ms` blocks.
pub fn measure_latency(
    input: Option<String>,
    output: Option<String>,
    block_ms: f64,
    crossfade_ms: f64,
) -> Result<LatencyMeasurement> {
    let config = live::SessionConfig {
        input,
        output,
        ..live::SessionConfig::default()
    };
    let measurement = live::measure(&config, block_ms, MEASURE_PINGS, MEASURE_LEVEL_DB)?;
    let engine_delay = live::latency::engine_delay_ms(crossfade_ms, 0);
    Ok(LatencyMeasurement {
        stream_latency_ms: measurement.result.round_trip_ms.map(|ms| ms + engine_delay),
        measurement,
    })
}

/// Input to output for a stream with `params` at `rate` (rvc-next's estimate): the block in whole
/// frames, the engine's delay (crossfade, 10 ms, each denoise pass; passthrough goes through the
/// crossfade and the input denoise too), the output prefill, and the devices' reports.
pub fn estimated_latency_ms(
    params: &StreamParams,
    passthrough: bool,
    rate: u32,
    input_latency_ms: f64,
    output_latency_ms: f64,
) -> f64 {
    let denoise_passes =
        u32::from(params.input_denoise) + u32::from(params.output_denoise && !passthrough);
    let engine_delay = live::latency::engine_delay_ms(params.crossfade_ms, denoise_passes);
    let block_ms =
        live::latency::block_frames(params.block_ms, rate) as f64 * 1000.0 / f64::from(rate.max(1));
    live::latency::estimate_latency_ms(block_ms, engine_delay, input_latency_ms, output_latency_ms)
}

/// The device live conversion runs on: the library's main device.
pub fn device(library: &Library) -> Result<Device> {
    Ok(crate::devices::Devices::of(&library.settings()?)?.main)
}

/// HuBERT, the voice (and its index), and the pitch network `params.f0_method` needs, through
/// `cache`. A missing HuBERT or pitch model, or a speaker the voice does not have, fails here
/// (with where to put the file), before any audio runs.
pub fn load_models(
    library: &Library,
    cache: &ModelCache,
    voice: LiveVoice,
    params: &VoiceParams,
    device: Device,
) -> Result<StreamModels> {
    let f0_method = params.f0_method;
    let model = models::require(&library.conn(), voice.model_id)?;
    let models_dir = models_folder::of(library)?;
    let hubert_path = models_folder::require_voice_embedder(&models_dir, &model.metadata)
        .with_context(|| model.name.clone())?;
    let weights_path = library
        .store()
        .object_path(&model.weights_sha256, models::WEIGHTS_EXT);
    let hubert = cache.hubert(&hubert_path, device)?.0;
    let synthesizer = cache
        .voice(
            &StoredFile {
                sha256: &model.weights_sha256,
                path: &weights_path,
                name: &model.name,
            },
            device,
        )
        .with_context(|| format!("loading the voice {}", model.name))?
        .0;
    let index = match (&model.index_sha256, voice.use_index) {
        (Some(sha256), true) => {
            let path = library.store().object_path(sha256, models::INDEX_EXT);
            Some(
                cache
                    .index(&StoredFile {
                        sha256,
                        path: &path,
                        name: &model.name,
                    })?
                    .0,
            )
        }
        _ => None,
    };
    let (has_f0, speakers) = {
        let info = synthesizer.lock().info().clone();
        (info.f0, info.speakers)
    };
    params
        .check_speaker(speakers)
        .map_err(|e| crate::error::invalid_input(format!("{}: {e}", model.name)))?;
    let pitch_model = match has_f0 {
        true => match pitch::model_file(&models_dir, f0_method)? {
            Some(file) => PitchModel::load(cache, f0_method, &file, device)?,
            None => None,
        },
        false => None,
    };
    let (mut rmvpe, mut fcpe, mut swift_f0, mut pesto) = (None, None, None, None);
    match pitch_model {
        Some(PitchModel::Rmvpe(model)) => rmvpe = Some(model),
        Some(PitchModel::Fcpe(model)) => fcpe = Some(model),
        Some(PitchModel::SwiftF0(model)) => swift_f0 = Some(model),
        Some(PitchModel::Pesto(model)) => pesto = Some(model),
        // Refused by `StreamParams::check` before any model loads.
        Some(PitchModel::Crepe(_)) | None => {}
    }
    Ok(StreamModels {
        hubert,
        voice: synthesizer,
        index,
        rmvpe,
        fcpe,
        swift_f0,
        pesto,
    })
}
