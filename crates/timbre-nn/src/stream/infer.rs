//! One block's conversion of the 16 kHz context, as rvc-next 0.2.16 `engine/stream/engine.py`
//! `_infer` (RVC `infer/lib/rtrvc.py` `RVC.infer`): HuBERT over the whole context with its last
//! frame repeated, index retrieval on the new frames only (skipped for the block when any
//! neighbour is missing), pitch on the tail into the cache, ×2 nearest upsampling, protect when
//! `unvoiced` asks for it, and `skip_head`/`return_length` synthesis (with no random draws
//! unless the parameters carry a seed), stretched to `return_length2` frames and resampled back
//! for a formant shift. An energy-conditioned voice also takes the RMS of the context's first
//! `p_len` frames, as PhamHuynhAnh16/Vietnamese-RVC's realtime `Pipeline.execute` gives it
//! (395f6a7 `main/inference/realtime/pipeline.py`: `rms(audio)[:audio_feats_len]`, the frames
//! the features take).

use anyhow::Result;
use tch::{Kind, Tensor};

use super::engine::StreamModels;
use super::params::{Layout, StreamParams, Unvoiced};
use super::pitch::{self, PitchCache};
use crate::Shared;
use crate::graphed::GraphedStage;
use crate::hubert::{FeatureVersion, Hubert};
use crate::index::IvfFlatIndex;
use crate::pipeline::{energy, formant};
use crate::rmvpe::Rmvpe;
use crate::synthesizer::{Noise, Window};

const INDEX_NEIGHBOURS: usize = 8;

/// The block's fixed-shape passes, HuBERT's over the context and RMVPE's over the tail, as
/// CUDA graphs on a GPU (see `graphed`), kept by the engine from block to block.
pub struct BlockGraphs {
    hubert: GraphedStage<(Shared<Hubert>, FeatureVersion)>,
    rmvpe: GraphedStage<Shared<Rmvpe>>,
}

impl Default for BlockGraphs {
    fn default() -> BlockGraphs {
        BlockGraphs {
            hubert: GraphedStage::new("live HuBERT"),
            rmvpe: GraphedStage::new("live RMVPE"),
        }
    }
}

impl BlockGraphs {
    /// With `false`, both stages run eagerly and their graphs are dropped.
    pub fn set_enabled(&mut self, enabled: bool) {
        self.hubert.set_enabled(enabled);
        self.rmvpe.set_enabled(enabled);
    }

    /// Whether both HuBERT's and RMVPE's graphs are captured (an engine tracking pitch with
    /// another method never captures RMVPE's).
    pub fn captured(&self) -> bool {
        self.hubert.is_captured() && self.rmvpe.is_captured()
    }
}

/// The converted audio of the block, crossfade and search, at the model's rate.
pub fn convert(
    models: &StreamModels,
    params: &StreamParams,
    layout: &Layout,
    audio_16k: &[f32],
    cache: &mut PitchCache,
    graphs: &mut BlockGraphs,
    noise: Noise,
) -> Result<Vec<f32>> {
    let _guard = tch::no_grad_guard();
    let voice = models.voice.lock();
    let hubert = models.hubert.lock();
    let index = models.index.as_ref().map(Shared::lock);
    let info = voice.info();
    let version = info.feature_version()?;
    let audio = Tensor::from_slice(audio_16k)
        .view([1, -1])
        .to_device(hubert.device());
    let features = graphs
        .hubert
        .run((models.hubert.clone(), version), &audio, |audio| {
            Ok(hubert.features(audio, version)?.to_kind(Kind::Float))
        })?;
    let frames = features.size()[1];
    let mut features = Tensor::cat(&[&features, &features.narrow(1, frames - 1, 1)], 1);
    let protect = info.f0 && params.unvoiced != Unvoiced::Original && params.voice.protect < 0.5;
    let unretrieved = protect.then(|| features.copy());
    let new_from = (layout.skip_head / 2) as i64;
    if let Some(index) = &index
        && params.voice.index_rate != 0.0
    {
        let fresh = features.narrow(1, new_from, frames + 1 - new_from);
        if let Some(blended) = retrieve(index, &fresh, params.voice.index_rate)? {
            features = Tensor::cat(&[&features.narrow(1, 0, new_from), &blended], 1);
        }
    }
    let p_len = audio_16k.len() / 160;
    let pitch = if info.f0 {
        let tail = pitch::tracker_samples(params.voice.f0_method, layout.block_16k);
        let f0 = pitch::track(
            models,
            params.voice.f0_method,
            &audio_16k[audio_16k.len() - tail..],
            &mut graphs.rmvpe,
        )?;
        let block_pitch = pitch::prepare(f0, &params.voice, params.unvoiced);
        cache.push(layout.block_16k / 160, &block_pitch);
        let from = cache.hz.len() - p_len;
        let device = voice.device();
        Some((
            Tensor::from_slice(&cache.coarse[from..])
                .view([1, -1])
                .to_device(device),
            Tensor::from_slice(&cache.hz[from..])
                .view([1, -1])
                .to_device(device),
        ))
    } else {
        None
    };
    let upsample = |t: &Tensor| {
        t.repeat_interleave_self_int(2, Some(1), None)
            .narrow(1, 0, p_len as i64)
    };
    let mut phone = upsample(&features);
    if let Some(unretrieved) = unretrieved {
        let voiced: Vec<f32> = cache.voiced[cache.voiced.len() - p_len..]
            .iter()
            .map(|&v| if v { 1.0 } else { params.voice.protect })
            .collect();
        let mask = Tensor::from_slice(&voiced)
            .view([1, -1, 1])
            .to_device(phone.device());
        phone = &phone * &mask + upsample(&unretrieved) * (mask.ones_like() - &mask);
    }
    let energy = info.energy.then(|| {
        Tensor::from_slice(&energy::frames(audio_16k, p_len))
            .view([1, -1])
            .to_device(voice.device())
    });
    let speaker = params.voice.speaker_id.clamp(0, (info.speakers - 1).max(0));
    let lengths = Tensor::from_slice(&[p_len as i64]);
    let shift = formant::Shift::new(
        params.voice.formant_shift,
        layout.return_length,
        info.sample_rate,
    );
    let audio = voice.infer_stretched(
        &phone.to_device(voice.device()),
        &lengths,
        pitch.as_ref().map(|(coarse, _)| coarse),
        pitch.as_ref().map(|(_, hz)| shift.scale_pitch(hz)).as_ref(),
        energy.as_ref(),
        speaker,
        noise,
        Some(Window {
            skip_head: layout.skip_head as i64,
            return_length: layout.return_length as i64,
        }),
        shift.decoder_frames(),
    )?;
    shift.restore(&crate::synthesizer::samples(&audio)?)
}

/// The reference's retrieval of `[1, frames, dim]` features: each frame becomes
/// `rate · Σ wᵢ·vᵢ + (1 − rate) · frame` over its 8 nearest stored vectors with wᵢ ∝ (1/dᵢ)²;
/// `None` (no change) when any frame has fewer than 8 neighbours in its probed list.
fn retrieve(index: &IvfFlatIndex, features: &Tensor, rate: f32) -> Result<Option<Tensor>> {
    let (device, dim) = (features.device(), features.size()[2] as usize);
    let rows = Vec::<f32>::try_from(features.to_device(tch::Device::Cpu).flatten(0, -1))?;
    let (distances, ids) = index.search(&rows, dim, INDEX_NEIGHBOURS, index.nprobe())?;
    if ids.iter().any(|&id| id < 0) {
        return Ok(None);
    }
    let mut blended = Vec::with_capacity(rows.len());
    let mut mix = vec![0f32; dim];
    for ((row, distances), ids) in rows
        .chunks_exact(dim)
        .zip(distances.chunks_exact(INDEX_NEIGHBOURS))
        .zip(ids.chunks_exact(INDEX_NEIGHBOURS))
    {
        let weights: Vec<f32> = distances.iter().map(|&d| (1.0 / d) * (1.0 / d)).collect();
        let total: f32 = weights.iter().sum();
        mix.fill(0.0);
        for (&id, weight) in ids.iter().zip(&weights) {
            for (sum, value) in mix.iter_mut().zip(index.reconstruct(id)?) {
                *sum += weight / total * value;
            }
        }
        blended.extend(
            mix.iter()
                .zip(row)
                .map(|(m, f)| m * rate + (1.0 - rate) * f),
        );
    }
    Ok(Some(
        Tensor::from_slice(&blended)
            .view([1, -1, dim as i64])
            .to_device(device),
    ))
}
