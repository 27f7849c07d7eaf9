//! SwiftF0 pitch estimation as the `swift-f0` 0.3.0 package runs its bundled `model.onnx`
//! (`SwiftF0().detect(x, 16000)`, swift_f0/core.py): three log-frequency spectrograms of 16 kHz
//! audio (windows of 512, 1024 and 2048 samples, hop 256, each through the graph's sparse
//! filterbank to 128 bands), a residual CNN over them, 95 pitch classes decoded by a local
//! softmax around the best one in the allowed range, and a confidence from the class map's peaks.
//! The weights, filterbanks, windows and pitch classes are read from the ONNX file itself
//! (`checkpoint::onnx`); the layer settings (kernels, pads, dilations) from its Conv nodes.
//!
//! The graph computes its spectra by a factored DFT in matrix products; ours takes torch's FFT,
//! which agrees to float rounding. Long inputs run in windows of 1875 frames with 11 frames of
//! context before and 10 after, as `detect` does.

use std::path::Path;

use anyhow::{Context, Result, bail, ensure};
use tch::{Device, Kind, Tensor};

use crate::checkpoint::onnx::{Node, OnnxGraph};

/// Samples per frame at 16 kHz: one pitch per 16 ms.
pub const HOP: usize = 256;
/// The lowest pitch the model knows, Hz.
pub const FMIN: f64 = 46.875;
/// The highest pitch the model knows, Hz.
pub const FMAX: f64 = 2093.75;
/// A frame is voiced at this confidence or above (the package's calibration).
pub const VOICED_CONFIDENCE: f32 = 0.5;
/// Frames whose audio peaks below this get confidence 0 (the package's silence gate).
const SILENCE_PEAK: f32 = 1e-3;
const WINDOW_FRAMES: usize = 1875;
const LEFT_FRAMES: usize = 11;
const LOOKAHEAD_FRAMES: usize = 10;
/// The spectrograms' window lengths, in the order the graph stacks them as channels.
const FFT_SIZES: [i64; 3] = [1024, 2048, 512];
const BANDS: i64 = 128;
const LOG_FLOOR: f64 = 1e-8;
/// The lowest bands the class head looks at.
const HEAD_BANDS: i64 = 96;
const CLASSES: i64 = 95;
/// Residual pairs of convolutions after the first one.
const RESIDUAL_PAIRS: usize = 6;

/// A convolution as an ONNX Conv node sets it (pads as begin…, end…).
struct GraphConv {
    weight: Tensor,
    bias: Tensor,
    /// `constant_pad_nd`'s order: last dimension first, begin then end.
    pad: Vec<i64>,
    dilation: Vec<i64>,
}

impl GraphConv {
    fn load(graph: &OnnxGraph, node: &Node, device: Device) -> Result<Self> {
        ensure!(
            node.inputs.len() == 3,
            "{}: a Conv node without a bias",
            graph.source().display()
        );
        let weight = graph.initializer(&node.inputs[1])?.to_device(device);
        let dims = weight.dim() - 2;
        let pads = node.ints("pads", &vec![0; 2 * dims])?;
        let dilation = node.ints("dilations", &vec![1; dims])?;
        ensure!(
            pads.len() == 2 * dims
                && dilation.len() == dims
                && node.ints("strides", &vec![1; dims])? == vec![1; dims]
                && node.int("group", 1)? == 1,
            "{}: a Conv node with settings SwiftF0's do not have",
            graph.source().display()
        );
        let pad = (0..dims)
            .rev()
            .flat_map(|d| [pads[d], pads[d + dims]])
            .collect();
        Ok(Self {
            weight,
            bias: graph.initializer(&node.inputs[2])?.to_device(device),
            pad,
            dilation,
        })
    }

    fn forward(&self, x: &Tensor) -> Tensor {
        let x = x.constant_pad_nd(self.pad.as_slice());
        let zeros = vec![0; self.dilation.len()];
        let ones = vec![1; self.dilation.len()];
        x.convolution(
            &self.weight,
            Some(&self.bias),
            ones.as_slice(),
            zeros.as_slice(),
            self.dilation.as_slice(),
            false,
            zeros.as_slice(),
            1,
        )
    }
}

/// One spectrogram: window, FFT magnitude, filterbank to [`BANDS`], log.
struct Spectrogram {
    n_fft: i64,
    window: Tensor,
    /// `[n_fft / 2 + 1, BANDS]`.
    filterbank: Tensor,
}

impl Spectrogram {
    fn load(graph: &OnnxGraph, n_fft: i64, device: Device) -> Result<Self> {
        let file = graph.source().display();
        let windows = graph.initializers_shaped(&[n_fft], Kind::Float);
        let [(_, window)] = windows.as_slice() else {
            bail!("{file}: no single window of {n_fft} samples");
        };
        let bins = n_fft / 2 + 1;
        let mut filterbank = None;
        for scatter in graph.nodes_of("ScatterElements") {
            let reshape = graph
                .consumers(&scatter.outputs[0])
                .find(|n| n.op_type == "Reshape")
                .with_context(|| format!("{file}: a filterbank that is not reshaped"))?;
            let shape = Vec::<i64>::try_from(graph.initializer(&reshape.inputs[1])?)?;
            if shape != [bins, BANDS] {
                continue;
            }
            let indices = graph.initializer(&scatter.inputs[1])?.to_kind(Kind::Int64);
            let values = graph.initializer(&scatter.inputs[2])?;
            let dense = Tensor::zeros([bins * BANDS], (Kind::Float, Device::Cpu))
                .scatter(0, &indices, &values);
            filterbank = Some(dense.view([bins, BANDS]));
        }
        let filterbank =
            filterbank.with_context(|| format!("{file}: no filterbank for {bins} bins"))?;
        Ok(Self {
            n_fft,
            window: window.to_device(device),
            filterbank: filterbank.to_device(device),
        })
    }

    /// `[1, 1, BANDS, frames]` for `audio` already padded to whole hops, frame `f` centred on
    /// sample `f · HOP`.
    fn forward(&self, audio: &Tensor, frames: i64) -> Tensor {
        let half = self.n_fft / 2;
        let padded = audio.constant_pad_nd([half, half]);
        let windows = padded
            .unfold(0, self.n_fft, HOP as i64)
            .narrow(0, 0, frames)
            * &self.window;
        let magnitude = windows.fft_rfft(None::<i64>, -1, "backward").abs();
        (magnitude.matmul(&self.filterbank) + LOG_FLOOR)
            .log()
            .transpose(0, 1)
            .view([1, 1, BANDS, frames])
    }
}

/// Per 16 ms frame: the pitch in Hz and the confidence (0 where the frame is silent or its best
/// class lies outside the allowed range).
#[derive(Debug, Clone, PartialEq)]
pub struct Frames {
    /// Hz, whatever the confidence.
    pub pitch: Vec<f64>,
    /// 0..1; voiced at [`VOICED_CONFIDENCE`] or above.
    pub confidence: Vec<f32>,
}

/// The loaded model.
pub struct SwiftF0 {
    spectrograms: Vec<Spectrogram>,
    stem: GraphConv,
    residual: Vec<(GraphConv, GraphConv)>,
    class_conv: GraphConv,
    peak_conv: GraphConv,
    class_out: GraphConv,
    confidence_hidden: GraphConv,
    confidence_out: GraphConv,
    /// The classes' pitch in Hz (float32, for the range mask) and its log (float64, decoding).
    class_hz: Tensor,
    class_log_hz: Tensor,
    device: Device,
}

impl SwiftF0 {
    /// Reads swift-f0's `model.onnx`.
    pub fn load(path: &Path, device: Device) -> Result<Self> {
        let graph = OnnxGraph::read(path)?;
        let file = path.display();
        let convs: Vec<&Node> = graph.nodes_of("Conv").collect();
        let expected = 1 + 2 * RESIDUAL_PAIRS + 5;
        ensure!(
            convs.len() == expected,
            "{file}: {} convolutions where SwiftF0 has {expected}: not swift-f0 0.3.0's model",
            convs.len()
        );
        let conv = |i: usize| GraphConv::load(&graph, convs[i], device);
        let spectrograms = FFT_SIZES
            .iter()
            .map(|&n| Spectrogram::load(&graph, n, device))
            .collect::<Result<_>>()?;
        let residual = (0..RESIDUAL_PAIRS)
            .map(|p| Ok((conv(1 + 2 * p)?, conv(2 + 2 * p)?)))
            .collect::<Result<_>>()?;
        let head = 1 + 2 * RESIDUAL_PAIRS;
        let class_hz = graph.initializers_shaped(&[CLASSES], Kind::Float);
        let class_log_hz = graph.initializers_shaped(&[CLASSES], Kind::Double);
        let ([(_, class_hz)], [(_, class_log_hz)]) = (class_hz.as_slice(), class_log_hz.as_slice())
        else {
            bail!("{file}: no single table of the {CLASSES} pitch classes");
        };
        let model = Self {
            spectrograms,
            stem: conv(0)?,
            residual,
            class_conv: conv(head)?,
            peak_conv: conv(head + 1)?,
            class_out: conv(head + 2)?,
            confidence_hidden: conv(head + 3)?,
            confidence_out: conv(head + 4)?,
            class_hz: class_hz.to_device(device),
            class_log_hz: class_log_hz.to_device(device),
            device,
        };
        model
            .check_shapes()
            .with_context(|| format!("{file}: not swift-f0 0.3.0's model"))?;
        Ok(model)
    }

    fn check_shapes(&self) -> Result<()> {
        let shapes = [
            (&self.stem, vec![12, 3, 3, 3]),
            (&self.class_conv, vec![4, 12, 3, 3]),
            (&self.peak_conv, vec![4, 4, 5, 1]),
            (&self.class_out, vec![1, 4, 1, 1]),
            (&self.confidence_hidden, vec![16, 5, 3]),
            (&self.confidence_out, vec![1, 16, 1]),
        ];
        for (conv, shape) in shapes {
            ensure!(
                conv.weight.size() == shape,
                "a convolution of shape {:?} where {shape:?} belongs",
                conv.weight.size()
            );
        }
        Ok(())
    }

    /// Where the model runs.
    pub fn device(&self) -> Device {
        self.device
    }

    /// One run of the graph: `audio` (16 kHz) to the logits of its frames `[frames, CLASSES]`
    /// and their confidence logits `[frames]`; `max(len / HOP, 1)` frames.
    fn forward(&self, audio: &[f32]) -> (Tensor, Tensor) {
        let frames = (audio.len() / HOP).max(1) as i64;
        let whole = (audio.len().max(HOP)).div_ceil(HOP) * HOP;
        let audio = Tensor::from_slice(audio)
            .to_device(self.device)
            .constant_pad_nd([0, (whole - audio.len()) as i64]);
        let features = Tensor::cat(
            &self
                .spectrograms
                .iter()
                .map(|s| s.forward(&audio, frames))
                .collect::<Vec<_>>(),
            1,
        );
        let mut x = self.stem.forward(&features).relu();
        for (first, second) in &self.residual {
            x = (second.forward(&first.forward(&x).relu()) + x).relu();
        }
        let hidden = self.class_conv.forward(&x.narrow(2, 0, HEAD_BANDS)).relu();
        let peaks = self.peak_conv.forward(&hidden).amax([2].as_slice(), false);
        let level = features
            .mean_dim([1, 2].as_slice(), false, Kind::Float)
            .unsqueeze(1);
        let confidence = self
            .confidence_out
            .forward(
                &self
                    .confidence_hidden
                    .forward(&Tensor::cat(&[peaks, level], 1))
                    .relu(),
            )
            .view([frames]);
        let logits = self
            .class_out
            .forward(&hidden)
            .view([CLASSES, frames])
            .transpose(0, 1);
        (logits, confidence)
    }

    /// The graph's decoding: within `[fmin, fmax]`, the best class and its neighbours weighted
    /// by a softmax (float64) over their logits, in log Hz; confidence the sigmoid of its logit
    /// where the best class overall lies in the range, else 0.
    fn decode(
        &self,
        logits: &Tensor,
        confidence: &Tensor,
        fmin: f64,
        fmax: f64,
    ) -> (Tensor, Tensor) {
        let in_range = self.class_hz.ge(fmin).logical_and(&self.class_hz.le(fmax));
        let masked = logits.masked_fill(&in_range.logical_not(), f64::NEG_INFINITY);
        let best = masked.argmax(-1, true);
        let neighbours = &best + Tensor::from_slice(&[-1i64, 0, 1]).to_device(self.device);
        let chosen = masked
            .pad([1, 1], "constant", f64::NEG_INFINITY)
            .gather(-1, &(&neighbours + 1), false)
            .to_kind(Kind::Double)
            .softmax(-1, Kind::Double);
        let log_hz = self
            .class_log_hz
            .index_select(0, &neighbours.clamp(0, CLASSES - 1).flatten(0, -1))
            .view(neighbours.size().as_slice());
        let pitch = (chosen * log_hz)
            .sum_dim_intlist(-1, false, Kind::Double)
            .exp();
        let gate = in_range.index_select(0, &logits.argmax(-1, false));
        let confidence = confidence
            .sigmoid()
            .where_self(&gate, &Tensor::zeros([1], (Kind::Float, self.device)));
        (pitch, confidence)
    }

    /// Pitch and confidence per 16 ms frame of 16 kHz `audio` over `[fmin, fmax]` (within
    /// [`FMIN`]–[`FMAX`]), `max(len / HOP, 1)` frames, as the package's `detect`.
    pub fn detect(&self, audio: &[f32], fmin: f64, fmax: f64) -> Result<Frames> {
        ensure!(!audio.is_empty(), "the input has no samples");
        ensure!(
            FMIN <= fmin && fmin < fmax && fmax <= FMAX,
            "a pitch range of {fmin}–{fmax} Hz; SwiftF0 takes {FMIN}–{FMAX}"
        );
        let total = (audio.len() / HOP).max(1);
        let mut out = Frames {
            pitch: Vec::with_capacity(total),
            confidence: Vec::with_capacity(total),
        };
        let _guard = tch::no_grad_guard();
        for start in (0..total).step_by(WINDOW_FRAMES) {
            let end = (start + WINDOW_FRAMES).min(total);
            let left = start.saturating_sub(LEFT_FRAMES);
            let samples = if end < total {
                &audio[left * HOP..((end + LOOKAHEAD_FRAMES) * HOP).min(audio.len())]
            } else {
                &audio[left * HOP..]
            };
            let (logits, confidence) = self.forward(samples);
            let (pitch, confidence) = self.decode(&logits, &confidence, fmin, fmax);
            let keep = |t: Tensor| t.narrow(0, (start - left) as i64, (end - start) as i64);
            out.pitch
                .extend(Vec::<f64>::try_from(keep(pitch).to_device(Device::Cpu))?);
            out.confidence.extend(Vec::<f32>::try_from(
                keep(confidence).to_device(Device::Cpu),
            )?);
        }
        for (frame, confidence) in out.confidence.iter_mut().enumerate() {
            let hop = &audio[(frame * HOP).min(audio.len())..((frame + 1) * HOP).min(audio.len())];
            if hop.iter().fold(0.0f32, |m, s| m.max(s.abs())) < SILENCE_PEAK {
                *confidence = 0.0;
            }
        }
        Ok(out)
    }

    /// Hz per 10 ms frame of 16 kHz audio (`len / 160 + 1` values, 0 = unvoiced) over RVC's
    /// range `[fmin, fmax]`, from [`SwiftF0::detect`]'s 16 ms frames ([`to_10ms_grid`]).
    pub fn f0(&self, audio_16k: &[f32], fmin: f64, fmax: f64) -> Result<Vec<f32>> {
        let frames = self.detect(audio_16k, fmin, fmax)?;
        Ok(to_10ms_grid(&frames, audio_16k.len() / 160 + 1))
    }
}

/// SwiftF0's frames (centred every 16 ms) on the 10 ms grid of the other trackers: a grid frame
/// is voiced when the SwiftF0 frame nearest it is; its pitch is interpolated in log frequency
/// between the two frames around it when both are voiced, else the nearest one's.
pub fn to_10ms_grid(frames: &Frames, count: usize) -> Vec<f32> {
    let voiced = |f: usize| frames.confidence[f] >= VOICED_CONFIDENCE;
    let last = frames.pitch.len() - 1;
    (0..count)
        .map(|i| {
            let position = i as f64 * 160.0 / HOP as f64;
            let below = (position.floor() as usize).min(last);
            let above = (below + 1).min(last);
            let nearest = (position.round() as usize).min(last);
            if !voiced(nearest) {
                return 0.0;
            }
            if voiced(below) && voiced(above) && below != above {
                let t = position - below as f64;
                let (a, b) = (frames.pitch[below].ln(), frames.pitch[above].ln());
                return (a + (b - a) * t).exp() as f32;
            }
            frames.pitch[nearest] as f32
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grid_interpolates_between_voiced_frames_and_keeps_unvoiced_ones() {
        let frames = Frames {
            pitch: vec![100.0, 200.0, 400.0, 300.0, 250.0],
            confidence: vec![0.9, 0.9, 0.9, 0.1, 0.9],
        };
        let grid = to_10ms_grid(&frames, 9);
        let near = |got: f32, want: f64| (got as f64 - want).abs() < 1e-3;
        assert_eq!(grid[0], 100.0);
        // 10 ms is 0.625 of the way from frame 0 to frame 1, 30 ms 0.875 from frame 1 to 2.
        assert!(near(grid[1], 100.0 * 2f64.powf(0.625)), "{grid:?}");
        assert!(near(grid[3], 200.0 * 2f64.powf(0.875)), "{grid:?}");
        // 40 and 50 ms lie nearest frame 3, which is unvoiced.
        assert_eq!(grid[4..6], [0.0, 0.0], "{grid:?}");
        // 60 ms lies nearest frame 4, whose neighbour below is unvoiced: its own pitch.
        assert_eq!(grid[6], 250.0, "{grid:?}");
        // Past the last frame, the last frame holds.
        assert_eq!(grid[7..], [250.0, 250.0], "{grid:?}");
    }
}
