//! Pitch for live conversion, as rvc-next 0.2.16 `engine/stream/engine.py` (`_get_f0`, `_pm`,
//! `_f0_post`, and the cache roll in `_infer`; RVC `infer/lib/rtrvc.py`): the tracker runs on
//! the tail of the 16 kHz buffer (no high-pass, unlike offline), unvoiced frames are filled by
//! interpolation, the pitch is transposed and made coarse in float32, and the frames roll into
//! a 1024-frame cache from which the synthesizer reads.

use anyhow::{Result, bail};
use tch::{Kind, Tensor};

use super::engine::StreamModels;
use super::params::{PITCH_CACHE, Unvoiced};
use crate::Shared;
use crate::graphed::GraphedStage;
use crate::pipeline::pitch::fill_unvoiced;
use crate::pipeline::{F0Method, PitchTracker};
use crate::rmvpe::Rmvpe;
use crate::voice::VoiceParams;

const RMVPE_THRESHOLD: f32 = 0.03;
/// The realtime pm's floor and ceiling (Hz).
const PM_FLOOR: f32 = 65.0;
const PM_CEILING: f32 = 1100.0;
const F0_MIN: f64 = 50.0;
const F0_MAX: f64 = 1100.0;

/// Samples of the 16 kHz tail the tracker sees for a block of `block_16k` samples: the block
/// and 50 ms more, rounded up for RMVPE to its 32-frame multiple less one hop.
pub fn tracker_samples(method: F0Method, block_16k: usize) -> usize {
    let samples = block_16k + 800;
    match method {
        F0Method::Rmvpe => 5120 * ((samples - 1) / 5120 + 1) - 160,
        _ => samples,
    }
}

/// Hz per 10 ms frame for `tail` (`tail.len() / 160 + 1` frames), 0 = unvoiced, by `method`
/// with the stream's models; RMVPE through `rmvpe_graph` (a CUDA graph on a GPU).
pub fn track(
    models: &StreamModels,
    method: F0Method,
    tail: &[f32],
    rmvpe_graph: &mut GraphedStage<Shared<Rmvpe>>,
) -> Result<Vec<f32>> {
    match method {
        F0Method::Rmvpe => {
            let Some(handle) = &models.rmvpe else {
                bail!("the rmvpe pitch method needs rmvpe.pt, which is not loaded")
            };
            let model = handle.lock();
            let audio = Tensor::from_slice(tail).to_device(model.device());
            let f0 = rmvpe_graph.run(handle.clone(), &audio, |audio| {
                model.f0(audio, RMVPE_THRESHOLD)
            })?;
            Ok(Vec::<f32>::try_from(
                f0.to_kind(Kind::Float).to_device(tch::Device::Cpu),
            )?)
        }
        F0Method::Fcpe => match &models.fcpe {
            Some(model) => PitchTracker::Fcpe(&model.lock()).track(tail),
            None => bail!("the fcpe pitch method needs fcpe.pt, which is not loaded"),
        },
        F0Method::SwiftF0 => match &models.swift_f0 {
            Some(model) => PitchTracker::SwiftF0(&model.lock()).track(tail),
            None => {
                bail!("the swiftf0 pitch method needs swift-f0's model.onnx, which is not loaded")
            }
        },
        F0Method::Pesto => match &models.pesto {
            Some(model) => PitchTracker::Pesto(&model.lock()).track(tail),
            None => bail!(
                "the pesto pitch method needs pesto-pitch's mir-1k_g7.ckpt, which is not loaded"
            ),
        },
        F0Method::Pm => Ok(realtime_pm(tail)),
        F0Method::Yin => PitchTracker::Yin.track(tail),
        // Refused by `StreamParams::check`.
        F0Method::Crepe | F0Method::CrepeTiny => bail!("{} does not run live", method.name()),
    }
}

/// The realtime pm: Praat's autocorrelation pitch over the tail padded for a 65 Hz floor,
/// its frames cut (or zero-padded) to the tail's frame count (not the offline grid placement).
fn realtime_pm(tail: &[f32]) -> Vec<f32> {
    let frames = tail.len() / 160 + 1;
    let left = (1.5 / f64::from(PM_FLOOR) * 16_000.0).ceil() as usize;
    let mut padded = vec![0.0f32; left];
    padded.extend_from_slice(tail);
    padded.resize(padded.len() + left + 1, 0.0);
    let mut f0 = timbre_audio::pitch::pm::praat_contour(&padded, PM_FLOOR, PM_CEILING);
    f0.resize(frames, 0.0);
    f0
}

/// The tracked pitch of one block, ready for the cache.
pub struct BlockPitch {
    pub coarse: Vec<i64>,
    pub hz: Vec<f32>,
    pub voiced: Vec<bool>,
}

/// Fills (unless `unvoiced` is `Zero`), moves as the voice says (the offline conversion's
/// arithmetic: `VoiceParams::synthesis_pitch`) and makes coarse, as `_get_f0`/`_f0_post`.
pub fn prepare(mut f0: Vec<f32>, voice: &VoiceParams, unvoiced: Unvoiced) -> BlockPitch {
    let voiced: Vec<bool> = f0.iter().map(|&f| f != 0.0).collect();
    if unvoiced != Unvoiced::Zero {
        fill_unvoiced(&mut f0);
    }
    let hz = voice.synthesis_pitch(&f0);
    BlockPitch {
        coarse: coarse_f32(&hz),
        hz,
        voiced,
    }
}

/// `_f0_post`'s coarse pitch, in float32 tensor arithmetic as the reference computes it.
fn coarse_f32(hz: &[f32]) -> Vec<i64> {
    let mel_of = |f: f64| 1127.0 * (1.0 + f / 700.0).ln();
    let (mel_min, mel_max) = (mel_of(F0_MIN), mel_of(F0_MAX));
    let f0 = Tensor::from_slice(hz);
    let mel = ((f0 / 700.0) + 1.0).log() * 1127.0;
    let scaled = (&mel - mel_min) * 254.0 / (mel_max - mel_min) + 1.0;
    let mel = scaled.where_self(&mel.gt(0.0), &mel);
    let mel = mel.clamp(1.0, 255.0).round();
    Vec::<i64>::try_from(mel.to_kind(Kind::Int64)).expect("int64 classes")
}

/// The last [`PITCH_CACHE`] frames of pitch; each block shifts it and writes its frames.
pub struct PitchCache {
    pub coarse: Vec<i64>,
    pub hz: Vec<f32>,
    pub voiced: Vec<bool>,
}

impl PitchCache {
    pub fn new() -> PitchCache {
        PitchCache {
            coarse: vec![0; PITCH_CACHE],
            hz: vec![0.0; PITCH_CACHE],
            voiced: vec![false; PITCH_CACHE],
        }
    }

    /// Rolls by `shift` frames and writes the tracker's frames but its first three and its last
    /// at the end: `cache[4 − n..] = pitch[3..n − 1]` for `n` tracked frames.
    pub fn push(&mut self, shift: usize, pitch: &BlockPitch) {
        fn roll<T: Copy>(cache: &mut [T], shift: usize, new: &[T]) {
            cache.copy_within(shift.min(cache.len()).., 0);
            let n = new.len();
            let start = cache.len() + 4 - n;
            cache[start..].copy_from_slice(&new[3..n - 1]);
        }
        roll(&mut self.coarse, shift, &pitch.coarse);
        roll(&mut self.hz, shift, &pitch.hz);
        roll(&mut self.voiced, shift, &pitch.voiced);
    }

    /// Rolls by `shift` frames of silence (unvoiced, 0 Hz): a block the voice skipped.
    pub fn push_silence(&mut self, shift: usize) {
        fn roll<T: Copy>(cache: &mut [T], shift: usize, silence: T) {
            let shift = shift.min(cache.len());
            cache.copy_within(shift.., 0);
            let len = cache.len();
            cache[len - shift..].fill(silence);
        }
        // 0 Hz's coarse class: `_f0_post` clamps it to 1.
        roll(&mut self.coarse, shift, 1);
        roll(&mut self.hz, shift, 0.0);
        roll(&mut self.voiced, shift, false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_takes_frames_3_to_the_second_last_at_its_end() {
        let mut cache = PitchCache::new();
        let pitch = prepare(
            vec![100.0, 110.0, 0.0, 130.0, 140.0, 150.0, 160.0],
            &VoiceParams::default(),
            Unvoiced::Original,
        );
        cache.push(2, &pitch);
        assert_eq!(&cache.hz[PITCH_CACHE - 3..], &[130.0, 140.0, 150.0]);
        assert_eq!(pitch.hz[2], 120.0);
        assert!(!pitch.voiced[2]);
    }

    #[test]
    fn a_skipped_block_rolls_silence_in() {
        let mut cache = PitchCache::new();
        let pitch = prepare(vec![100.0; 10], &VoiceParams::default(), Unvoiced::Original);
        cache.push(6, &pitch);
        cache.push_silence(2);
        let end = PITCH_CACHE;
        assert_eq!(&cache.hz[end - 8..end - 2], &[100.0; 6]);
        assert_eq!(&cache.hz[end - 2..], &[0.0, 0.0]);
        assert_eq!(&cache.coarse[end - 2..], &coarse_f32(&[0.0, 0.0])[..]);
        assert!(!cache.voiced[end - 1] && cache.voiced[end - 3]);
    }

    #[test]
    fn coarse_pitch_matches_the_offline_rule() {
        let hz = [0.0, 50.0, 220.0, 1100.0, 5000.0];
        assert_eq!(coarse_f32(&hz), crate::pipeline::pitch::coarse(&hz));
    }

    #[test]
    fn rmvpe_sees_a_whole_number_of_its_frames() {
        assert_eq!(tracker_samples(F0Method::Rmvpe, 4000), 5120 - 160);
        assert_eq!(tracker_samples(F0Method::Pm, 4000), 4800);
    }
}
