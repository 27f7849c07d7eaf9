//! The streaming engine: one block in, one block out, no I/O. rvc-next 0.2.16
//! `engine/stream/engine.py` (`StreamEngine._build`, `_process`; from RVC `realtime_gui.py`
//! `start_vc`/`audio_callback`): the rolling device-rate and 16 kHz buffers of context +
//! crossfade + SOLA search + block, the RMS gate, the sinc resample to 16 kHz of the new samples
//! only, the conversion (`infer`), the resample to the device rate, the RMS mix and the SOLA
//! crossfade. Input denoise runs on the gated block before it joins the buffers, output denoise
//! on the crossfaded block (see `denoise`). Hot parameters apply from the next block; block,
//! crossfade and context changes rebuild the buffers (about one block of silence) and keep the
//! models.

use anyhow::{Result, ensure};

use super::denoise::LiveDenoiser;
use super::infer::{self, BlockGraphs};
use super::loudness;
use super::params::{GATE_OFF_DB, Layout, StreamParams};
use super::pitch::PitchCache;
use super::sinc_resample::SincResampler;
use super::sola::Sola;
use crate::Shared;
use crate::device::Precision;
use crate::fcpe::Fcpe;
use crate::hubert::Hubert;
use crate::index::IvfFlatIndex;
use crate::pesto::Pesto;
use crate::rmvpe::Rmvpe;
use crate::swift_f0::SwiftF0;
use crate::synthesizer::{Noise, Synthesizer};
use timbre_audio::enhance::SpeechDetector;

/// The models a stream uses, shared with the process's model cache so that switching voices is
/// a cache hit and a conversion job can run the same HuBERT between two blocks.
#[derive(Clone)]
pub struct StreamModels {
    /// The content encoder run over each block's 16 kHz context.
    pub hubert: Shared<Hubert>,
    /// The voice's synthesizer.
    pub voice: Shared<Synthesizer>,
    /// The voice's feature index, or None to convert without retrieval.
    pub index: Option<Shared<IvfFlatIndex>>,
    /// The RMVPE pitch model; None when not loaded (the rmvpe method is then refused).
    pub rmvpe: Option<Shared<Rmvpe>>,
    /// The FCPE pitch model; None when not loaded (the fcpe method is then refused).
    pub fcpe: Option<Shared<Fcpe>>,
    /// The SwiftF0 pitch model; None when not loaded (the swiftf0 method is then refused).
    pub swift_f0: Option<Shared<SwiftF0>>,
    /// The PESTO pitch model; None when not loaded (the pesto method is then refused).
    pub pesto: Option<Shared<Pesto>>,
}

/// The live converter: takes one block of mono device-rate input, returns one converted block.
pub struct StreamEngine {
    models: StreamModels,
    /// The process's default for the voice's device (float16 autocast on CUDA, as the
    /// reference's live engine runs half there), as conversions use.
    precision: Precision,
    params: StreamParams,
    sample_rate: u32,
    layout: Layout,
    /// Skip the voice and return the (gated) input.
    pub passthrough: bool,
    /// Blocks converted so far: each block's noise is drawn from the seed plus this count.
    blocks: u64,
    input_wav: Vec<f32>,
    input_wav_16k: Vec<f32>,
    gate_history: Vec<f32>,
    sola: Sola,
    pitch_cache: PitchCache,
    to_16k: SincResampler,
    from_model: SincResampler,
    /// Present while their parameter is on; a fresh one starts from silence.
    input_denoiser: Option<LiveDenoiser>,
    output_denoiser: Option<LiveDenoiser>,
    graphs: BlockGraphs,
    /// Present while `speech_gate` is on: a fresh one starts with no speech heard.
    speech: Option<SpeechGate>,
    /// Blocks the speech gate kept from the voice.
    skipped: u64,
}

/// How long the voice keeps converting after the detector last heard speech: word ends and
/// short pauses are not cut.
const SPEECH_HANGOVER_MS: f64 = 300.0;
/// The WebRTC detector's mode: 2 of 0–3, its "aggressive" one.
const SPEECH_AGGRESSIVENESS: u8 = 2;
/// A block quieter than this (RMS, dBFS) holds no speech, whatever the detector says: it takes
/// a room's hiss for speech now and then, and one such frame in a block would let it through.
const SPEECH_FLOOR_DB: f32 = -50.0;

/// The detector over each block's new 16 kHz audio, with its hangover.
struct SpeechGate {
    detector: SpeechDetector,
    verdicts: Vec<bool>,
    /// Milliseconds of hangover left since the detector last heard speech.
    hangover_ms: f64,
}

impl SpeechGate {
    fn new() -> SpeechGate {
        SpeechGate {
            detector: SpeechDetector::new(SPEECH_AGGRESSIVENESS, 1.0),
            verdicts: Vec::new(),
            hangover_ms: 0.0,
        }
    }

    /// Whether the block whose new 16 kHz samples are `audio_16k` goes to the voice.
    fn speech(&mut self, audio_16k: &[f32]) -> bool {
        self.verdicts.clear();
        self.detector.push(audio_16k, &mut self.verdicts);
        let block_ms = audio_16k.len() as f64 / 16.0;
        let mean_square =
            audio_16k.iter().map(|x| x * x).sum::<f32>() / audio_16k.len().max(1) as f32;
        let loud = 10.0 * mean_square.max(f32::MIN_POSITIVE).log10() >= SPEECH_FLOOR_DB;
        if loud && self.verdicts.contains(&true) {
            self.hangover_ms = SPEECH_HANGOVER_MS;
            return true;
        }
        let speaking = self.hangover_ms > 0.0;
        self.hangover_ms -= block_ms;
        speaking
    }
}

/// Moves `buffer` `shift` samples toward its start (the oldest drop out).
fn roll(buffer: &mut [f32], shift: usize) {
    let shift = shift.min(buffer.len());
    buffer.copy_within(shift.., 0);
}

impl StreamEngine {
    /// An engine for mono audio at `sample_rate` (the device's).
    pub fn new(models: StreamModels, params: StreamParams, sample_rate: u32) -> Result<Self> {
        let layout = Layout::new(&params, sample_rate)?;
        let (model_rate, device) = {
            let voice = models.voice.lock();
            (voice.info().sample_rate, voice.device())
        };
        let precision = Precision::default_for(device)?;
        // A precision the device cannot run is refused here, not at the first block.
        precision.autocast(|| Ok(()))?;
        let from_model = SincResampler::new(model_rate, sample_rate, tch::Device::Cpu);
        let mut engine = StreamEngine {
            precision,
            params,
            sample_rate,
            layout,
            passthrough: false,
            blocks: 0,
            input_wav: Vec::new(),
            input_wav_16k: Vec::new(),
            gate_history: Vec::new(),
            sola: Sola::new(0, 0),
            pitch_cache: PitchCache::new(),
            to_16k: SincResampler::new(sample_rate, 16_000, tch::Device::Cpu),
            from_model,
            input_denoiser: None,
            output_denoiser: None,
            graphs: BlockGraphs::default(),
            speech: None,
            skipped: 0,
            models,
        };
        engine.build();
        Ok(engine)
    }

    /// Samples per block at the device rate.
    pub fn block_size(&self) -> usize {
        self.layout.block
    }

    /// The buffer sizes the current parameters give at the device rate.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The parameters in effect.
    pub fn params(&self) -> &StreamParams {
        &self.params
    }

    /// The device rate in Hz that blocks come in and go out at.
    pub fn sample_rate(&self) -> u32 {
        self.sample_rate
    }

    /// The SOLA alignment of the last block, in samples.
    pub fn last_offset(&self) -> usize {
        self.sola.last_offset
    }

    fn build(&mut self) {
        let l = &self.layout;
        self.input_wav = vec![0.0; l.total];
        self.input_wav_16k = vec![0.0; l.total_16k()];
        self.gate_history = vec![0.0; 4 * l.zc];
        self.sola = Sola::new(l.sola_buffer, l.sola_search);
        self.pitch_cache = PitchCache::new();
        self.input_denoiser = None;
        self.output_denoiser = None;
        self.speech = None;
    }

    /// Blocks the speech gate has kept from the voice since the engine was made.
    pub fn skipped_blocks(&self) -> u64 {
        self.skipped
    }

    /// New parameters: hot ones apply from the next block; block, crossfade or context
    /// changes rebuffer. Refused (and nothing changed) when they cannot run.
    pub fn set_params(&mut self, params: StreamParams) -> Result<()> {
        let layout = Layout::new(&params, self.sample_rate)?;
        let rebuffer = !self.params.same_buffers(&params);
        self.params = params;
        if rebuffer {
            self.layout = layout;
            self.build();
        }
        Ok(())
    }

    /// Other models from the next block (another voice, index or pitch model); the buffers
    /// stay, so the stream carries on.
    pub fn set_models(&mut self, models: StreamModels) {
        let rate = models.voice.lock().info().sample_rate;
        if rate != self.models.voice.lock().info().sample_rate {
            self.from_model = SincResampler::new(rate, self.sample_rate, tch::Device::Cpu);
        }
        self.models = models;
    }

    /// Whether blocks on a CUDA device replay CUDA graphs (on unless turned off; the benchmark
    /// turns them off to compare).
    pub fn set_cuda_graphs(&mut self, on: bool) {
        self.graphs.set_enabled(on);
    }

    /// The block's CUDA graphs, to ask whether the last block replayed them.
    pub fn cuda_graphs(&self) -> &BlockGraphs {
        &self.graphs
    }

    /// Converts one block of silence and forgets it, so that a stream's first block does not
    /// pay for the first run's set-up: oneDNN's kernels on the CPU, the capture of the block's
    /// graphs on CUDA. Afterwards the engine streams as a fresh one would.
    pub fn warm_up(&mut self) -> Result<()> {
        let silence = vec![0.0; self.layout.block];
        // The voice runs on the silence: neither passthrough nor the speech gate skips it.
        let passthrough = std::mem::replace(&mut self.passthrough, false);
        let speech_gate = std::mem::replace(&mut self.params.speech_gate, false);
        let converted = self.process(&silence);
        self.passthrough = passthrough;
        self.params.speech_gate = speech_gate;
        self.blocks = 0;
        self.build();
        converted.map(drop)
    }

    /// Clears every buffer, as after a device change.
    pub fn reset(&mut self) {
        self.build();
    }

    /// Converts one block (mono, at the device rate) into one block. A block of another
    /// length is cut to its last `block_size` samples or led by zeros, as the reference does.
    pub fn process(&mut self, block: &[f32]) -> Result<Vec<f32>> {
        let l = self.layout;
        let zc = l.zc;
        let mut fixed = vec![0.0f32; l.block];
        let take = block.len().min(l.block);
        fixed[l.block - take..].copy_from_slice(&block[block.len() - take..]);
        let gated = if self.params.threshold_db > GATE_OFF_DB {
            loudness::gate(&fixed, &mut self.gate_history, zc, self.params.threshold_db)
        } else {
            fixed
        };
        let rate = self.sample_rate;
        let indata = match denoiser(&mut self.input_denoiser, self.params.input_denoise, rate) {
            Some(denoiser) => denoiser.process(&gated),
            None => gated,
        };
        let n = indata.len();
        roll(&mut self.input_wav, l.block);
        let total = self.input_wav.len();
        self.input_wav[total - n..].copy_from_slice(&indata);
        roll(&mut self.input_wav_16k, l.block_16k);
        let resampled = self
            .to_16k
            .apply_slice(&self.input_wav[total - n - 2 * zc..]);
        let written = 160 * (n / zc + 1);
        ensure!(
            resampled.len() == written + 160,
            "resampled {} samples where {} were expected",
            resampled.len(),
            written + 160
        );
        let total_16k = self.input_wav_16k.len();
        self.input_wav_16k[total_16k - written..].copy_from_slice(&resampled[160..]);
        let speech = if self.params.speech_gate {
            let gate = self.speech.get_or_insert_with(SpeechGate::new);
            gate.speech(&resampled[160..])
        } else {
            self.speech = None;
            true
        };

        let mut output = if self.passthrough {
            self.input_wav[l.extra..].to_vec()
        } else if !speech {
            self.blocks += 1;
            self.skipped += 1;
            self.pitch_cache.push_silence(l.block_16k / 160);
            vec![0.0; l.block + l.sola_buffer + l.sola_search]
        } else {
            let noise = match self.params.voice.seed {
                Some(seed) => Noise::Seeded(seed.wrapping_add(self.blocks)),
                None => Noise::None,
            };
            self.blocks += 1;
            let converted = self.precision.autocast(|| {
                infer::convert(
                    &self.models,
                    &self.params,
                    &l,
                    &self.input_wav_16k,
                    &mut self.pitch_cache,
                    &mut self.graphs,
                    noise,
                )
            })?;
            let mut output = self.from_model.apply_slice(&converted);
            if self.params.voice.rms_mix_rate < 1.0 {
                loudness::rms_mix(
                    &self.input_wav[l.extra..],
                    &mut output,
                    zc,
                    self.params.voice.rms_mix_rate,
                );
            }
            output
        };
        output.truncate(l.block + l.sola_buffer + l.sola_search);
        let block = self.sola.apply(&output, l.block);
        let output_denoise = self.params.output_denoise && !self.passthrough;
        Ok(
            match denoiser(&mut self.output_denoiser, output_denoise, rate) {
                Some(denoiser) => denoiser.process(&block),
                None => block,
            },
        )
    }
}

/// The denoiser when `on` (made on first use), dropped when off.
fn denoiser(slot: &mut Option<LiveDenoiser>, on: bool, rate: u32) -> Option<&mut LiveDenoiser> {
    if !on {
        *slot = None;
        return None;
    }
    Some(slot.get_or_insert_with(|| LiveDenoiser::new(rate)))
}
