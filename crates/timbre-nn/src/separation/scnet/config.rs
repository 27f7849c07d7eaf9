//! The YAML config of an SCNet separation model, as ZFTurbo/Music-Source-Separation-Training
//! writes it (`configs/config_vocals_scnet.yaml`, `config_musdb18_scnet_large.yaml`, …): field
//! names are the upstream ones, and a key left out takes the default of `SCNet.__init__`. Every
//! `model:` key is read and any other refused by name (an `scnet_tran` one naming that model),
//! and the values are checked against what the network can be built from: the band plan of every
//! SD block (`Band`) is worked out here, where upstream's forward would find a mismatch.

use crate::separation::config::{ensure_positive, model_entries};
use anyhow::{Result, bail, ensure};
use serde::Deserialize;

use crate::separation::config::TrainingConfig;
use crate::separation::mdx23c::Mdx23cInference;

/// An SCNet model's YAML config: its `audio`, `model`, `training` and `inference` sections.
#[derive(Debug, Clone, Deserialize)]
pub struct ScnetConfig {
    /// `audio:`: the chunk length and rate.
    pub audio: ScnetAudio,
    /// `model:`: `SCNet.__init__`'s arguments.
    pub model: ScnetModel,
    /// `training:`: the instrument names that fix the stems and their order.
    #[serde(default)]
    pub training: TrainingConfig,
    /// `inference:`: overlap-add settings, the keys MDX23C's read (upstream defaults if absent).
    #[serde(default)]
    pub inference: Mdx23cInference,
}

/// `audio:` of the config; only the keys separation needs (`num_channels` and `min_mean_abs`
/// serve training; the model's channels are `model.audio_channels`).
#[derive(Debug, Clone, Deserialize)]
pub struct ScnetAudio {
    /// Samples per model call in the overlap-add, unless `inference.chunk_size` is set.
    pub chunk_size: i64,
    /// Rate in Hz the model expects its input at (default 44100).
    #[serde(default = "default_sample_rate")]
    pub sample_rate: i64,
}

/// `model:` of the config (upstream `SCNet`), each key defaulting as `__init__` does.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
#[allow(non_snake_case)]
pub struct ScnetModel {
    /// The sources the network estimates, in output order.
    pub sources: Vec<String>,
    /// Channels of the audio: 2 (stereo) or 1.
    pub audio_channels: i64,
    /// Channels of the spectrum (`2 × audio_channels`) and after each SD block.
    pub dims: Vec<i64>,
    /// FFT size in samples.
    pub nfft: i64,
    /// STFT hop in samples.
    pub hop_size: i64,
    /// STFT window length (torch's default window of ones, centred in `nfft`).
    pub win_size: i64,
    /// Whether the STFT is scaled by `1 / √nfft`.
    pub normalized: bool,
    /// Share of the bins in the low, mid and high band.
    pub band_SR: Vec<f64>,
    /// Down-sampling along frequency of each band.
    pub band_stride: Vec<i64>,
    /// Kernel of each band's down-sampling convolution.
    pub band_kernel: Vec<i64>,
    /// Residual layers of each band's convolution module (upstream takes the absolute value).
    pub conv_depths: Vec<i64>,
    /// How much narrower a convolution module's hidden channels are.
    pub compress: f64,
    /// Kernel of the convolution modules' 1-d convolutions (odd).
    pub conv_kernel: i64,
    /// Dual-path RNN layers (even, each odd one in the Fourier domain of time).
    pub num_dplayer: i64,
    /// How much wider the LSTMs' hidden state is than their input.
    pub expand: i64,
}

impl Default for ScnetModel {
    fn default() -> Self {
        Self::upstream_default()
    }
}

/// The `model:` keys [`ScnetModel`] reads; any other is refused.
pub const MODEL_KEYS: [&str; 15] = [
    "sources",
    "audio_channels",
    "dims",
    "nfft",
    "hop_size",
    "win_size",
    "normalized",
    "band_SR",
    "band_stride",
    "band_kernel",
    "conv_depths",
    "compress",
    "conv_kernel",
    "num_dplayer",
    "expand",
];

fn default_sample_rate() -> i64 {
    44100
}

/// One band of an SD layer at one level: where it lies in the block's input bins, how upstream
/// pads it for its convolution, what that gives, and how the SU layer cuts it back.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Band {
    /// First bin.
    pub start: i64,
    /// Bins.
    pub len: i64,
    /// Zero bins added below and above before the convolution.
    pub pad: [i64; 2],
    /// Bins after the convolution (the band's share of the next level).
    pub out: i64,
    /// Bins the transposed convolution skips before the `len` it keeps.
    pub trim: i64,
}

impl ScnetModel {
    /// `SCNet.__init__`'s defaults.
    pub fn upstream_default() -> Self {
        Self {
            sources: ["drums", "bass", "other", "vocals"]
                .map(String::from)
                .to_vec(),
            audio_channels: 2,
            dims: vec![4, 32, 64, 128],
            nfft: 4096,
            hop_size: 1024,
            win_size: 4096,
            normalized: true,
            band_SR: vec![0.175, 0.392, 0.433],
            band_stride: vec![1, 4, 16],
            band_kernel: vec![3, 4, 16],
            conv_depths: vec![3, 2, 1],
            compress: 4.0,
            conv_kernel: 3,
            num_dplayer: 6,
            expand: 1,
        }
    }

    /// Hidden channels of a convolution module on `channels` (upstream `int(channels / compress)`).
    pub fn hidden(&self, channels: i64) -> i64 {
        (channels as f64 / self.compress) as i64
    }

    /// Bins of the STFT.
    pub fn bins(&self) -> i64 {
        self.nfft / 2 + 1
    }

    /// The three bands of each SD block, from the first (on the STFT's bins) to the deepest.
    pub fn levels(&self) -> Result<Vec<[Band; 3]>> {
        let mut bins = self.bins();
        let mut levels = Vec::new();
        for level in 0..self.dims.len().saturating_sub(1) {
            let bands = self.bands(bins, level)?;
            bins = bands.iter().map(|b| b.out).sum();
            levels.push(bands);
        }
        Ok(levels)
    }

    /// Upstream `SDlayer.forward`'s splits and padding, and `SUlayer.forward`'s trimming, of
    /// `bins` bins.
    fn bands(&self, bins: i64, level: usize) -> Result<[Band; 3]> {
        let (low, mid) = (self.band_SR[0], self.band_SR[1]);
        let first = (bins as f64 * low).ceil() as i64;
        let second = (bins as f64 * (low + mid)).ceil() as i64;
        ensure!(
            0 < first && first < second && second < bins,
            "`model.band_SR` {:?} splits the {bins} bins of SD block {level} at {first} and \
             {second}: every band needs bins",
            self.band_SR
        );
        let edges = [0, first, second, bins];
        let mut bands = [Band {
            start: 0,
            len: 0,
            pad: [0, 0],
            out: 0,
            trim: 0,
        }; 3];
        for (b, band) in bands.iter_mut().enumerate() {
            let (stride, kernel) = (self.band_stride[b], self.band_kernel[b]);
            let len = edges[b + 1] - edges[b];
            let total = if stride == 1 {
                kernel - stride
            } else {
                (stride - len % stride) % stride
            };
            let padded = len + total;
            ensure!(
                padded >= kernel,
                "band {b} of SD block {level} has {len} bins, fewer than its kernel of {kernel} \
                 (`model.band_kernel`) can take"
            );
            let out = (padded - kernel) / stride + 1;
            let up = (out - 1) * stride + kernel;
            ensure!(
                up >= len,
                "band {b} of SD block {level}: {len} bins go down to {out} by stride {stride} \
                 and kernel {kernel}, which the SU layer brings back to only {up}"
            );
            *band = Band {
                start: edges[b],
                len,
                pad: [total / 2, total - total / 2],
                out,
                trim: (len - up).abs() / 2,
            };
        }
        Ok(bands)
    }
}

impl ScnetConfig {
    /// Parses a YAML config and checks it: every `model:` key known, the sizes such that the
    /// network can be built and its bands line up.
    pub fn from_yaml(text: &str) -> Result<Self> {
        check_model_keys(text)?;
        let config: Self = serde_yaml_ng::from_str(text)?;
        config.validate()?;
        Ok(config)
    }

    /// Samples per model call: `inference.chunk_size`, else `audio.chunk_size`.
    pub fn chunk_size(&self) -> i64 {
        self.inference.chunk_size.unwrap_or(self.audio.chunk_size)
    }

    fn validate(&self) -> Result<()> {
        let m = &self.model;
        ensure_positive(&[
            ("audio.chunk_size", self.chunk_size()),
            ("model.audio_channels", m.audio_channels),
            ("model.nfft", m.nfft),
            ("model.hop_size", m.hop_size),
            ("model.win_size", m.win_size),
            ("model.conv_kernel", m.conv_kernel),
            ("model.expand", m.expand),
            ("inference.batch_size", self.inference.batch_size),
            ("inference.num_overlap", self.inference.num_overlap),
        ])?;
        ensure!(!m.sources.is_empty(), "`model.sources` is empty");
        ensure!(
            m.dims.len() >= 2 && m.dims.iter().all(|&d| d > 0),
            "`model.dims` is {:?}: it must be two or more positive channel counts",
            m.dims
        );
        ensure!(
            m.dims[0] == 2 * m.audio_channels,
            "`model.dims` starts at {}, but the spectrum of {} channel(s) has {} (real and \
             imaginary parts)",
            m.dims[0],
            m.audio_channels,
            2 * m.audio_channels
        );
        ensure!(
            m.win_size <= m.nfft,
            "`model.win_size` {} is longer than `model.nfft` {}",
            m.win_size,
            m.nfft
        );
        for (name, len) in [
            ("band_SR", m.band_SR.len()),
            ("band_stride", m.band_stride.len()),
            ("band_kernel", m.band_kernel.len()),
            ("conv_depths", m.conv_depths.len()),
        ] {
            ensure!(
                len == 3,
                "`model.{name}` has {len} entries: SCNet has three bands (low, mid, high)"
            );
        }
        ensure!(
            m.band_stride.iter().chain(&m.band_kernel).all(|&v| v > 0),
            "`model.band_stride` and `model.band_kernel` must be positive"
        );
        ensure!(
            m.conv_kernel % 2 == 1,
            "`model.conv_kernel` is {}: upstream asserts an odd kernel",
            m.conv_kernel
        );
        ensure!(
            m.compress > 0.0 && m.dims[1..].iter().all(|&d| m.hidden(d) > 0),
            "`model.compress` {} leaves no hidden channels of `model.dims` {:?}",
            m.compress,
            m.dims
        );
        ensure!(
            m.num_dplayer >= 0 && m.num_dplayer % 2 == 0,
            "`model.num_dplayer` is {}: it must be even, as the odd layers turn the Fourier \
             domain of time back",
            m.num_dplayer
        );
        m.levels()?;
        ensure!(
            self.chunk_size() >= m.nfft / 2,
            "the chunk of {} samples is shorter than half `model.nfft` {}",
            self.chunk_size(),
            m.nfft
        );
        ensure!(
            self.inference.num_overlap <= self.chunk_size(),
            "`inference.num_overlap` {} is larger than the chunk of {} samples",
            self.inference.num_overlap,
            self.chunk_size()
        );
        Ok(())
    }
}

/// Fails naming the first `model:` key of `text` that [`MODEL_KEYS`] lacks.
fn check_model_keys(text: &str) -> Result<()> {
    for (key, _) in model_entries(text)? {
        let key = key.as_str();
        if key.starts_with("tran_") {
            bail!(
                "`model.{key}` is an option of MSST's scnet_tran (SCNet with transformers in \
                 place of its LSTMs), a model this player does not implement"
            );
        }
        ensure!(
            MODEL_KEYS.contains(&key),
            "`model.{key}` is an option this player's SCNet does not implement"
        );
    }
    Ok(())
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
