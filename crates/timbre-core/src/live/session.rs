//! A live stream on the devices: timbre-audio's [`LiveSession`] (devices, rings, the processing
//! thread) running the engine over the models of [`super::load_models`]. Parameter changes,
//! voice switches and passthrough reach the engine through a channel it drains before each
//! block, so they apply from the next block without stopping the stream; the models they need
//! are loaded here first (a cache hit for a voice used before), so a missing file is refused
//! before anything changes. Stopping a recorded stream saves its input and output as two takes,
//! the output linked to the input.

use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, Sender};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use timbre_audio::live::{BlockProcessor, Gains, LiveSession, LiveStats, SessionConfig};
use timbre_nn::stream::{StreamEngine, StreamModels, StreamParams};

use super::LiveVoice;
use crate::db::{derived_takes, takes::Take};
use crate::library::Library;
use crate::model_cache::ModelCache;

/// What a stream starts with; every part but the devices and `record` can change while it runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
pub struct LiveRequest {
    /// The voice to convert to.
    pub voice: LiveVoice,
    /// The engine's parameters; a change applies from the next block.
    pub params: StreamParams,
    /// Play the gated input instead of the voice (the engine's passthrough).
    #[serde(default)]
    pub passthrough: bool,
    /// Device names as `timbre live devices` lists them; none for the system's default.
    #[serde(default)]
    pub input: Option<String>,
    /// Output device name as `timbre live devices` lists it; none for the system's default.
    #[serde(default)]
    pub output: Option<String>,
    /// A second output (headphones while the output goes to a call, say), with its own gain.
    #[serde(default)]
    pub monitor: Option<String>,
    /// Input, output and monitor gains in dB; 0 dB each by default.
    #[serde(default)]
    pub gains: Gains,
    /// Keep the input and the output, saved as takes when the stream stops.
    #[serde(default)]
    pub record: bool,
    /// Play the output into "Timbre Studio voice", a microphone other programs can pick, made
    /// while the stream runs (the output device is then not played).
    #[serde(default)]
    pub virtual_mic: bool,
    /// The stream's latency as measured on these devices before the start (the Live page's
    /// Measure), kept with a recorded session's numbers; None when not measured.
    #[serde(default)]
    pub measured_latency_ms: Option<f64>,
}

/// How a recorded stream ran, kept in the `live` link from its input to its output take.
#[derive(Debug, Clone, PartialEq, Serialize)]
struct SessionNumbers {
    blocks: u32,
    budget_ms: f64,
    mean_block_ms: f64,
    max_block_ms: f64,
    blocks_over_budget: u32,
    input_overflows: u32,
    output_underruns: u32,
    estimated_latency_ms: f64,
    measured_latency_ms: Option<f64>,
}

/// A running stream's numbers, as the Live page and `timbre live run` show them.
#[derive(Debug, Clone, PartialEq, Serialize, ts_rs::TS)]
pub struct LiveStatus {
    /// The device session's numbers: state, rate, devices, levels, block times, overflows and
    /// underruns.
    pub stats: LiveStats,
    /// The voice converting now.
    pub voice: LiveVoice,
    /// The parameters in effect (the latest set).
    pub params: StreamParams,
    /// Whether the gated input plays instead of the voice.
    pub passthrough: bool,
    /// Input to output as the reference estimates it: block + crossfade + 10 ms + the output
    /// prefill + what the devices report.
    pub estimated_latency_ms: f64,
}

/// The takes a recorded stream left.
#[derive(Debug, Clone, PartialEq, Serialize, ts_rs::TS)]
pub struct RecordedSession {
    /// The take of what the input device captured.
    pub input: Take,
    /// The take of the converted output, linked to `input` as derived from it.
    pub output: Take,
}

enum Change {
    Params(StreamParams),
    Models(StreamModels),
    Passthrough(bool),
}

struct EngineProcessor {
    engine: StreamEngine,
    changes: Receiver<Change>,
}

impl BlockProcessor for EngineProcessor {
    fn block_size(&self) -> usize {
        self.engine.block_size()
    }

    fn process(&mut self, input: &[f32]) -> Result<Vec<f32>> {
        while let Ok(change) = self.changes.try_recv() {
            match change {
                Change::Params(params) => self.engine.set_params(params)?,
                Change::Models(models) => self.engine.set_models(models),
                Change::Passthrough(on) => self.engine.passthrough = on,
            }
        }
        self.engine.process(input)
    }
}

/// A stream converting on the devices until [`LiveStream::stop`]; voice, parameters, passthrough
/// and gains change while it runs.
pub struct LiveStream {
    session: LiveSession,
    changes: Sender<Change>,
    library: Arc<Library>,
    cache: Arc<ModelCache>,
    request: LiveRequest,
}

impl LiveStream {
    /// Loads the models, opens the devices and starts converting.
    pub fn start(
        library: Arc<Library>,
        cache: Arc<ModelCache>,
        request: LiveRequest,
    ) -> Result<LiveStream> {
        request.params.check()?;
        let device = super::device(&library)?;
        let models = super::load_models(
            &library,
            &cache,
            request.voice,
            &request.params.voice,
            device,
        )?;
        let (changes, received) = mpsc::channel();
        let params = request.params.clone();
        let passthrough = request.passthrough;
        let config = SessionConfig {
            input: request.input.clone(),
            output: request.output.clone(),
            monitor: request.monitor.clone(),
            gains: request.gains,
            record: request.record,
            virtual_mic: request.virtual_mic,
        };
        let session = LiveSession::start(
            config,
            Box::new(move |rate| {
                let mut engine = StreamEngine::new(models, params, rate)?;
                engine.warm_up()?;
                engine.passthrough = passthrough;
                Ok(Box::new(EngineProcessor {
                    engine,
                    changes: received,
                }))
            }),
        )?;
        Ok(LiveStream {
            session,
            changes,
            library,
            cache,
            request,
        })
    }

    /// The request as it stands, with every change since the start applied.
    pub fn request(&self) -> &LiveRequest {
        &self.request
    }

    fn send(&self, change: Change) -> Result<()> {
        self.changes
            .send(change)
            .ok()
            .context("the live stream has stopped")
    }

    /// New parameters from the next block; a new pitch method's model is loaded first.
    pub fn set_params(&mut self, params: StreamParams) -> Result<()> {
        // The layout checks the parameters, and that they fit the session's rate.
        timbre_nn::stream::Layout::new(&params, self.session.rate())?;
        // Cache hits, but they check the speaker against the voice, and load a new pitch model.
        let models = self.models(self.request.voice, &params)?;
        if params.voice.f0_method != self.request.params.voice.f0_method {
            self.send(Change::Models(models))?;
        }
        self.send(Change::Params(params.clone()))?;
        self.request.params = params;
        Ok(())
    }

    /// Another voice from the next block: a model-cache hit when it was used before.
    pub fn set_voice(&mut self, voice: LiveVoice) -> Result<()> {
        let models = self.models(voice, &self.request.params)?;
        self.send(Change::Models(models))?;
        self.request.voice = voice;
        Ok(())
    }

    /// Turns passthrough on or off from the next block.
    pub fn set_passthrough(&mut self, on: bool) -> Result<()> {
        self.send(Change::Passthrough(on))?;
        self.request.passthrough = on;
        Ok(())
    }

    /// New gains, applied by the device session from its next callback or block, not through the
    /// engine.
    pub fn set_gains(&mut self, gains: Gains) {
        self.session.set_gains(gains);
        self.request.gains = gains;
    }

    fn models(&self, voice: LiveVoice, params: &StreamParams) -> Result<StreamModels> {
        let device = super::device(&self.library)?;
        super::load_models(&self.library, &self.cache, voice, &params.voice, device)
    }

    /// The stream's numbers now, with the latency estimated for the current parameters and devices.
    pub fn status(&self) -> LiveStatus {
        let stats = self.session.stats();
        let params = &self.request.params;
        let passthrough = self.request.passthrough;
        LiveStatus {
            estimated_latency_ms: super::estimated_latency_ms(
                params,
                passthrough,
                stats.sample_rate,
                stats.input_latency_ms.unwrap_or(0.0),
                stats.output_latency_ms.unwrap_or(0.0),
            ),
            stats,
            voice: self.request.voice,
            params: params.clone(),
            passthrough,
        }
    }

    /// Stops the stream; a recorded one's input and output become takes.
    pub fn stop(self) -> Result<Option<RecordedSession>> {
        let last = self.status();
        let recording = self.session.stop()?;
        let Some(recording) = recording else {
            return Ok(None);
        };
        let stamp = crate::db::now()
            .get(..19)
            .unwrap_or_default()
            .replace('T', " ");
        let input = crate::take_files::save_recording(
            &self.library,
            &recording.input,
            Some(&format!("Live input {stamp}")),
            None,
        )
        .context("saving the live session's input")?;
        let output = crate::take_files::save_recording(
            &self.library,
            &recording.output,
            Some(&format!("Live output {stamp}")),
            None,
        )
        .context("saving the live session's output")?;
        let stats = &last.stats;
        let numbers = SessionNumbers {
            blocks: stats.blocks_processed,
            budget_ms: stats.budget_ms,
            mean_block_ms: stats.mean_block_ms,
            max_block_ms: stats.max_block_ms,
            blocks_over_budget: stats.blocks_over_budget,
            input_overflows: stats.input_overflows,
            output_underruns: stats.output_underruns,
            estimated_latency_ms: last.estimated_latency_ms,
            measured_latency_ms: self.request.measured_latency_ms,
        };
        let params = serde_json::json!({
            "model_id": self.request.voice.model_id,
            "params": self.request.params,
            "session": numbers,
        });
        self.library
            .edit(|conn| derived_takes::insert(conn, output.id, input.id, "live", &params, None))?;
        Ok(Some(RecordedSession { input, output }))
    }
}
