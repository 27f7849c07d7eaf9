//! The model-dependent half of a conversion: per segment, index retrieval, ×2 upsampling,
//! protect and synthesis; the pieces go to a scratch file, and `output` finishes them (RMS mix,
//! resample, peak-safe scaling) into a sink, so memory holds one segment, not the whole output.
//! An energy-conditioned voice takes each segment's frames of the energy curve as it takes the
//! pitch's (Vietnamese-RVC `pipeline.py`: `energy[:, start:end]`, then `energy[:p_len]`).

use anyhow::{Result, ensure};
use tch::{Kind, Tensor};

use super::analysis::Analysis;
use super::output::{self, Scratch};
use super::{ConvertOptions, IndexSearch, formant, pitch, segments};
use crate::index::{IvfFlatIndex, SearchMode};
use crate::synthesizer::{Noise, Synthesizer};

/// Neighbours RVC blends per frame.
const INDEX_NEIGHBOURS: usize = 8;

/// Converted audio, mono, in [-1, 1).
pub struct Converted {
    /// The samples, mono, in [-1, 1).
    pub samples: Vec<f32>,
    /// Their rate in Hz: the requested resample rate (when 16 kHz or more), else the model's.
    pub sample_rate: u32,
}

/// Where [`render_to`] puts the output.
pub trait OutputSink {
    /// Called once, before any samples.
    fn begin(&mut self, sample_rate: u32) -> Result<()>;
    /// The next samples, mono, in [-1, 1).
    fn write(&mut self, samples: &[f32]) -> Result<()>;
    /// Where the render keeps its scratch files: the system's temporary folder when `None`.
    fn scratch_dir(&self) -> Option<&std::path::Path> {
        None
    }
}

impl OutputSink for Converted {
    fn begin(&mut self, sample_rate: u32) -> Result<()> {
        self.sample_rate = sample_rate;
        Ok(())
    }

    fn write(&mut self, samples: &[f32]) -> Result<()> {
        self.samples.extend_from_slice(samples);
        Ok(())
    }
}

/// What [`render_to`] handed its sink.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rendered {
    /// The rate the sink was begun with, in Hz.
    pub sample_rate: u32,
    /// Samples written to the sink.
    pub samples: usize,
    /// The largest magnitude handed over.
    pub peak: f32,
}

/// [`render_to`] into memory, for short inputs and tests.
pub fn render(
    analysis: &Analysis,
    model: &Synthesizer,
    index: Option<&IvfFlatIndex>,
    options: &ConvertOptions,
    progress: &mut dyn FnMut(f64) -> Result<()>,
) -> Result<Converted> {
    let mut converted = Converted {
        samples: Vec::new(),
        sample_rate: 0,
    };
    render_to(analysis, model, index, options, &mut converted, progress)?;
    Ok(converted)
}

/// Synthesizes the analysed input with `model`, handing the finished output to `sink` in order,
/// piece by piece. `progress` is told the share done after each segment and may stop the work
/// by returning an error.
pub fn render_to(
    analysis: &Analysis,
    model: &Synthesizer,
    index: Option<&IvfFlatIndex>,
    options: &ConvertOptions,
    sink: &mut dyn OutputSink,
    progress: &mut dyn FnMut(f64) -> Result<()>,
) -> Result<Rendered> {
    let info = model.info();
    ensure!(
        analysis.feature_dim() == info.feature_dim,
        "the input was analysed with {}-d features but this model needs {}-d ones",
        analysis.feature_dim(),
        info.feature_dim
    );
    let pitch = match (info.f0, &analysis.f0) {
        (false, _) => None,
        (true, Some(f0)) => {
            let shifted = options.voice.synthesis_pitch(f0);
            Some((pitch::coarse(&shifted), shifted))
        }
        (true, None) => {
            anyhow::bail!("this model needs pitch but the input was analysed without it")
        }
    };
    let energy = match (info.energy, &analysis.energy) {
        (false, _) => None,
        (true, Some(energy)) => Some(energy.as_slice()),
        (true, None) => anyhow::bail!(
            "this voice is conditioned on energy (Vietnamese-RVC) but the input's analysis was \
             saved without it: analyse the input again"
        ),
    };
    let rate = info.sample_rate;
    let pad_tgt = options.chunking.pad_samples_at(rate);
    let mut scratch = Scratch::new(sink.scratch_dir())?;
    let total = analysis.segments.len();
    timbre_audio::memory::release_free_memory();
    let synthesis_range = crate::profile::range("synthesizer");
    for (i, segment) in analysis.segments.iter().enumerate() {
        let frame_start = segment.start / segments::WINDOW;
        let frame_end = segment.end / segments::WINDOW;
        let frames = |len: usize| {
            let end = frame_end.min(len);
            frame_start.min(end)..end
        };
        let segment_pitch = pitch.as_ref().map(|(coarse, hz)| {
            let span = frames(coarse.len());
            (&coarse[span.clone()], &hz[span])
        });
        let segment_energy = energy.map(|energy| &energy[frames(energy.len())]);
        let audio = synthesize_segment(
            &analysis.features(i)?,
            segment.end - segment.start,
            segment_pitch,
            segment_energy,
            model,
            index,
            options,
        )?;
        let keep_end = audio.len().saturating_sub(pad_tgt);
        scratch.append(&audio[pad_tgt.min(keep_end)..keep_end])?;
        drop(audio);
        timbre_audio::memory::release_free_memory();
        progress((i + 1) as f64 / total as f64)?;
    }
    drop(synthesis_range);
    let _range = crate::profile::range("output");
    output::finish(scratch, &analysis.input_rms, rate, options, sink)
}

pub(super) fn synthesize_segment(
    features: &Tensor,
    segment_samples: usize,
    pitch: Option<(&[i64], &[f32])>,
    energy: Option<&[f32]>,
    model: &Synthesizer,
    index: Option<&IvfFlatIndex>,
    options: &ConvertOptions,
) -> Result<Vec<f32>> {
    let _guard = tch::no_grad_guard();
    let device = model.device();
    let original = features.to_device(device).to_kind(Kind::Float);
    let retrieved = match index {
        Some(index) if options.voice.index_rate != 0.0 => {
            let frames = original.squeeze_dim(0);
            let dim = frames.size()[1] as usize;
            let flat = Vec::<f32>::try_from(frames.to_device(tch::Device::Cpu).flatten(0, -1))?;
            let mode = match options.index_search {
                IndexSearch::Faiss => SearchMode::Probe {
                    nprobe: index.nprobe(),
                },
                IndexSearch::Exact => SearchMode::Exact,
            };
            let blended =
                index.blend(&flat, dim, options.voice.index_rate, INDEX_NEIGHBOURS, mode)?;
            Tensor::from_slice(&blended)
                .view([1, -1, dim as i64])
                .to_device(device)
        }
        _ => original.shallow_clone(),
    };
    let upsample = |t: &Tensor| t.repeat_interleave_self_int(2, Some(1), None);
    let mut phone = upsample(&retrieved);
    let frames = (phone.size()[1] as usize).min(segment_samples / segments::WINDOW);
    let frames = pitch.map_or(frames, |(coarse, _)| frames.min(coarse.len()));
    let frames = energy.map_or(frames, |energy| frames.min(energy.len()));
    phone = phone.narrow(1, 0, frames as i64);
    let energy = energy.map(|energy| {
        Tensor::from_slice(&energy[..frames])
            .view([1, -1])
            .to_device(device)
    });
    let pitch_tensors = pitch.map(|(coarse, hz)| {
        let coarse = Tensor::from_slice(&coarse[..frames])
            .view([1, -1])
            .to_device(device);
        let hz = Tensor::from_slice(&hz[..frames])
            .view([1, -1])
            .to_device(device);
        (coarse, hz)
    });
    if let Some((_, hz)) = &pitch_tensors
        && options.voice.protect < 0.5
    {
        let unprotected = upsample(&original).narrow(1, 0, frames as i64);
        let keep = hz.ge(1.0).to_kind(Kind::Float);
        let unvoiced = keep.ones_like() - &keep;
        let weight = (keep + unvoiced * options.voice.protect as f64).unsqueeze(-1);
        let unprotected_weight = weight.ones_like() - &weight;
        phone = &phone * &weight + unprotected * unprotected_weight;
    }
    let lengths = Tensor::from_slice(&[frames as i64]).to_device(device);
    let shift = formant::Shift::new(
        options.voice.formant_shift,
        frames,
        model.info().sample_rate,
    );
    let pitch_tensors = pitch_tensors.map(|(coarse, hz)| (coarse, shift.scale_pitch(&hz)));
    let audio = model.infer_stretched(
        &phone,
        &lengths,
        pitch_tensors.as_ref().map(|(c, _)| c),
        pitch_tensors.as_ref().map(|(_, h)| h),
        energy.as_ref(),
        options.voice.speaker_id,
        options.voice.seed.map_or(Noise::None, Noise::Seeded),
        None,
        shift.decoder_frames(),
    )?;
    shift.restore(&crate::synthesizer::samples(&audio)?)
}
