//! RMVPE pitch estimation as RVC-Project/Retrieval-based-Voice-Conversion-WebUI
//! `infer/lib/rmvpe.py` does it: log-mel of 16 kHz audio, the `E2E` network's salience over
//! 20-cent pitch bins per 10 ms frame, and `decode` / `to_local_average_cents` to Hz.

mod gru;
mod mel;
mod model;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};
use tch::{Device, Kind, Tensor};

pub use mel::{MelConfig, MelScale, MelSpectrogram, mel_filterbank};
pub use model::{Config, E2E};

use crate::checkpoint;
use crate::weights::Weights;

/// The pitch of bin 0 in cents above 10 Hz; bins are 20 cents apart.
const CENTS_OF_FIRST_BIN: f64 = 1_997.379_408_437_619;
const CENTS_PER_BIN: f64 = 20.0;
/// Bins on either side of the peak that the local average takes in.
const LOCAL_AVERAGE_RADIUS: i64 = 4;
/// Upstream's default voicing threshold on the peak salience.
pub const DEFAULT_THRESHOLD: f32 = 0.03;
/// Output frames per network pass for long inputs (~164 s), bounding memory; shorter inputs
/// go through in one pass, exactly as upstream.
const DEFAULT_SEGMENT_FRAMES: i64 = 16_384;
/// Frames of context a segment takes beyond the convolutions' reach, for the BiGRU's memory.
const GRU_CONTEXT_FRAMES: i64 = 256;

/// A loaded RMVPE model with its mel front end.
pub struct Rmvpe {
    mel: MelSpectrogram,
    network: E2E,
    device: Device,
    segment_frames: i64,
    source: PathBuf,
}

impl Rmvpe {
    /// Loads an `rmvpe.pt` (the `E2E` state dict, bare or under `model` / `state_dict`) with
    /// its weights on `device` in float32.
    pub fn load(path: &Path, device: Device) -> Result<Self> {
        Self::load_as(path, device, Kind::Float)
    }

    /// [`Rmvpe::load`] with the weights in `kind` (half precision on CUDA); the mel front end
    /// stays in float32.
    pub fn load_as(path: &Path, device: Device, kind: Kind) -> Result<Self> {
        let root = checkpoint::read_torch_file(path)
            .with_context(|| format!("loading the RMVPE model {}", path.display()))?;
        let state = ["model", "state_dict"]
            .iter()
            .filter_map(|key| root.get(key))
            .find(|v| v.as_dict().is_some())
            .unwrap_or(&root);
        let weights = checkpoint::weights_from_dict(state, path)?;
        Self::from_weights(weights.to(device, kind), device)
    }

    /// Builds the model from an `E2E` state dict already on `device`.
    pub fn from_weights(weights: Weights, device: Device) -> Result<Self> {
        let config = Config::infer(&weights)?;
        let mel_config = MelConfig {
            n_mels: config.n_mels,
            ..MelConfig::default()
        };
        let network = E2E::load(&weights, config)?;
        Ok(Self {
            mel: MelSpectrogram::new(mel_config, device),
            network,
            device,
            segment_frames: DEFAULT_SEGMENT_FRAMES,
            source: weights.source().to_path_buf(),
        })
    }

    /// Where the weights are: inputs are best put there.
    pub fn device(&self) -> Device {
        self.device
    }

    /// The network's architecture, as read off the weights.
    pub fn config(&self) -> &Config {
        self.network.config()
    }

    /// The mel front end's parameters: RMVPE's defaults with the network's `n_mels`.
    pub fn mel_config(&self) -> &MelConfig {
        self.mel.config()
    }

    /// Sets how many frames of output one network pass gives at most (rounded up to the
    /// network's frame multiple). Longer inputs go in such segments, each run with enough
    /// context on either side for the results to match one pass; the default (~164 s) keeps
    /// the real model's memory near 2 GB.
    pub fn set_segment_frames(&mut self, frames: i64) {
        self.segment_frames = round_up(frames.max(1), self.config().frame_multiple());
    }

    /// Log-mel `[1, n_mels, samples / 160 + 1]` (float32) of mono 16 kHz audio (`[samples]` or
    /// `[1, samples]`), on the audio's device.
    pub fn mel(&self, audio_16k: &Tensor) -> Result<Tensor> {
        let audio = match audio_16k.size()[..] {
            [_] => audio_16k.shallow_clone(),
            [1, samples] => audio_16k.reshape([samples]),
            ref shape => {
                bail!("RMVPE takes mono audio as [samples] or [1, samples], not {shape:?}")
            }
        };
        ensure!(
            audio.is_floating_point(),
            "RMVPE takes floating-point audio, not {:?}",
            audio.kind()
        );
        Ok(tch::no_grad(|| self.mel.forward(&audio)))
    }

    /// The network's salience `[frames, n_class]` (float32) for a log-mel `[1, n_mels, frames]`
    /// (or `[n_mels, frames]`).
    pub fn salience(&self, mel: &Tensor) -> Result<Tensor> {
        let n_mels = self.config().n_mels;
        let mel = match mel.size()[..] {
            [1, m, _] | [m, _] if m == n_mels => mel.reshape([1, n_mels, -1]),
            ref shape => bail!(
                "{}: expects a log-mel of [1, {n_mels}, frames], not {shape:?}",
                self.source.display()
            ),
        };
        let frames = mel.size()[2];
        let multiple = self.config().frame_multiple();
        let padded_frames = round_up(frames.max(1), multiple);
        let context = round_up(
            self.config().receptive_radius() + GRU_CONTEXT_FRAMES,
            multiple,
        );
        let salience = tch::no_grad(|| {
            let mel = mel
                .to_device(self.device)
                .constant_pad_nd([0, padded_frames - frames]);
            let parts: Vec<Tensor> = segments(padded_frames, self.segment_frames, context)
                .into_iter()
                .map(|s| {
                    let out =
                        self.network
                            .forward(&mel.narrow(2, s.run_start, s.run_end - s.run_start));
                    out.narrow(1, s.keep_start - s.run_start, s.keep_end - s.keep_start)
                })
                .collect();
            Tensor::cat(&parts, 1)
                .narrow(1, 0, frames)
                .squeeze_dim(0)
                .to_kind(Kind::Float)
        });
        Ok(salience)
    }

    /// Pitch in Hz per 10 ms frame (0 where unvoiced), `samples / 160 + 1` frames, float32 on
    /// the model's device.
    pub fn f0(&self, audio_16k: &Tensor, threshold: f32) -> Result<Tensor> {
        let mel = self.mel(&audio_16k.to_device(self.device))?;
        Ok(decode(&self.salience(&mel)?, threshold))
    }
}

/// The smallest multiple of `multiple` that is at least `frames` (both positive).
fn round_up(frames: i64, multiple: i64) -> i64 {
    (frames + multiple - 1) / multiple * multiple
}

/// One network pass of a segmented run: frames `run_start..run_end` go in, the output for
/// `keep_start..keep_end` is kept.
#[derive(Debug, PartialEq)]
struct Segment {
    run_start: i64,
    run_end: i64,
    keep_start: i64,
    keep_end: i64,
}

/// Cuts `total` frames into kept stretches of `length`, each run with `context` frames more on
/// either side where there are any; one pass when everything fits in `length` plus the
/// context on both sides.
fn segments(total: i64, length: i64, context: i64) -> Vec<Segment> {
    if total <= length + 2 * context {
        return vec![Segment {
            run_start: 0,
            run_end: total,
            keep_start: 0,
            keep_end: total,
        }];
    }
    (0..total)
        .step_by(length as usize)
        .map(|start| {
            let end = (start + length).min(total);
            Segment {
                run_start: (start - context).max(0),
                run_end: (end + context).min(total),
                keep_start: start,
                keep_end: end,
            }
        })
        .collect()
}

/// Salience `[frames, n_class]` → Hz `[frames]` (float32): the salience-weighted mean pitch of
/// the bins within 4 of the peak, 0 where the peak salience is at most `threshold`.
pub fn decode(salience: &Tensor, threshold: f32) -> Tensor {
    let salience = salience.to_kind(Kind::Double);
    let device = salience.device();
    let classes = salience.size()[1];
    let bins = Tensor::arange(classes, (Kind::Int64, device)).unsqueeze(0);
    let cents = bins.to_kind(Kind::Double) * CENTS_PER_BIN + CENTS_OF_FIRST_BIN;
    let (peak, peak_bin) = salience.max_dim(1, true);
    let near_peak = (&bins - &peak_bin).abs().le(LOCAL_AVERAGE_RADIUS);
    let weights = salience.where_self(&near_peak, &salience.zeros_like());
    let weight_sum = weights.sum_dim_intlist(1, false, Kind::Double);
    let mean_cents = (&weights * cents).sum_dim_intlist(1, false, Kind::Double) / &weight_sum;
    let voiced = peak
        .squeeze_dim(1)
        .gt(f64::from(threshold))
        .logical_and(&weight_sum.gt(0.0));
    let hz = (mean_cents / 1200.0).exp2() * 10.0;
    hz.where_self(&voiced, &hz.zeros_like())
        .to_kind(Kind::Float)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hz_of_cents(cents: f64) -> f64 {
        10.0 * 2f64.powf(cents / 1200.0)
    }

    #[test]
    fn decodes_hand_made_salience() {
        let mut rows = vec![vec![0.0f32; 360]; 4];
        // A lone peak: exactly its bin's pitch.
        rows[0][100] = 0.9;
        // A symmetric neighbour pair pulls nothing; a lopsided one pulls towards itself.
        rows[1][200] = 0.8;
        rows[1][199] = 0.4;
        rows[1][201] = 0.4;
        rows[2][50] = 0.6;
        rows[2][51] = 0.2;
        // Bins further than 4 from the peak are left out.
        rows[2][56] = 0.5;
        // At the threshold: unvoiced.
        rows[3][10] = 0.03;
        let flat: Vec<f32> = rows.concat();
        let salience = Tensor::from_slice(&flat).view([4, 360]);
        let f0 = Vec::<f32>::try_from(decode(&salience, 0.03)).unwrap();
        let bin_cents = |b: f64| CENTS_OF_FIRST_BIN + 20.0 * b;
        let expected = [
            hz_of_cents(bin_cents(100.0)),
            hz_of_cents(bin_cents(200.0)),
            hz_of_cents((0.6 * bin_cents(50.0) + 0.2 * bin_cents(51.0)) / 0.8),
            0.0,
        ];
        for (got, want) in f0.iter().zip(expected) {
            assert!(
                (f64::from(*got) - want).abs() < 1e-3 * want.max(1.0),
                "{got} vs {want}"
            );
        }
    }

    #[test]
    fn decodes_peaks_at_the_edges_of_the_range() {
        let mut flat = vec![0.0f32; 2 * 360];
        flat[0] = 0.5;
        flat[1] = 0.5;
        flat[360 + 359] = 0.7;
        let f0 =
            Vec::<f32>::try_from(decode(&Tensor::from_slice(&flat).view([2, 360]), 0.03)).unwrap();
        assert!((f64::from(f0[0]) - hz_of_cents(CENTS_OF_FIRST_BIN + 10.0)).abs() < 1e-3);
        assert!((f64::from(f0[1]) - hz_of_cents(CENTS_OF_FIRST_BIN + 20.0 * 359.0)).abs() < 1e-2);
    }

    #[test]
    fn segmented_passes_match_one_pass() {
        tch::manual_seed(0);
        let zeros = super::model::tests::synthetic(1, 1, 2, 1, 2, 16);
        let random: std::collections::HashMap<String, Tensor> = zeros
            .names()
            .map(|name| {
                let t = zeros.get(name).unwrap();
                // The GRU at torch's initial scale (1 / sqrt(hidden)), whose memory fades.
                let scale = if name.contains("gru") {
                    1.0 / 16.0
                } else {
                    0.2
                };
                let t = if name.ends_with("running_var") {
                    t
                } else {
                    t.randn_like() * scale
                };
                (name.to_string(), t)
            })
            .collect();
        let mut model =
            Rmvpe::from_weights(Weights::new(random, "random.pt"), Device::Cpu).unwrap();
        let mel = Tensor::randn([1, 16, 700], (Kind::Float, Device::Cpu));
        let one_pass = model.salience(&mel).unwrap();
        // 704 padded frames, cut every 96 with 288 frames of context (30 reach the
        // convolutions, 256 for the GRU).
        model.set_segment_frames(96);
        let segmented = model.salience(&mel).unwrap();
        assert_eq!(segmented.size(), [700, 360]);
        assert!(
            one_pass.std(true).double_value(&[]) > 0.01,
            "the salience should vary for the comparison to mean anything"
        );
        let difference = (segmented - one_pass).abs().max().double_value(&[]);
        assert!(
            difference < 1e-5,
            "segmented passes differ from one pass by {difference}"
        );
    }

    #[test]
    fn short_inputs_run_in_one_pass() {
        assert_eq!(
            segments(416, 256, 128),
            [Segment {
                run_start: 0,
                run_end: 416,
                keep_start: 0,
                keep_end: 416
            }]
        );
    }

    #[test]
    fn long_inputs_are_cut_with_context_and_kept_without_gaps() {
        let plan = segments(1024, 256, 64);
        assert_eq!(plan.len(), 4);
        assert_eq!(
            plan[0],
            Segment {
                run_start: 0,
                run_end: 320,
                keep_start: 0,
                keep_end: 256
            }
        );
        assert_eq!(
            plan[1],
            Segment {
                run_start: 192,
                run_end: 576,
                keep_start: 256,
                keep_end: 512
            }
        );
        assert_eq!(
            plan[3],
            Segment {
                run_start: 704,
                run_end: 1024,
                keep_start: 768,
                keep_end: 1024
            }
        );
        let tail = segments(1056, 256, 64);
        assert_eq!(
            tail.last(),
            Some(&Segment {
                run_start: 960,
                run_end: 1056,
                keep_start: 1024,
                keep_end: 1056
            })
        );
    }
}
