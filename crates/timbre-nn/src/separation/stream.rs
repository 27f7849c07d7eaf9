//! Separation of a mix that arrives block by block: `Separator::stream`. The channel handling
//! and the optional normalisation of `Separator::demix` around one `Demixer` per pass.

use anyhow::{Result, bail, ensure};
use tch::{Device, Kind, Tensor};

use super::Separator;
use super::demix::Demixer;

/// How the mix's channels go through the model.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Channels {
    AsTheyAre,
    /// A mono mix through a stereo model, as two equal channels; the stems are their mean.
    Doubled,
    /// Each channel of the mix through a mono model.
    OneByOne,
}

/// The estimate of some samples, with the mix they came from.
pub struct Separated {
    /// `[stems, channels, n]`
    pub stems: Tensor,
    /// `[channels, n]`, float32, as given.
    pub mix: Tensor,
}

/// A separation in progress (see `Separator::stream`).
pub struct SeparationStream<'a> {
    separator: &'a Separator,
    channels: Channels,
    demixers: Vec<Demixer>,
    done: Vec<usize>,
    scale: Option<(f64, f64)>,
    /// The mix whose estimate has not been returned yet.
    pending: Tensor,
}

/// The mean and deviation of a mix's mono downmix, gathered block by block, for
/// `inference.normalize` over a mix that is never whole in memory.
#[derive(Debug, Clone, Copy, Default)]
pub struct MixStats {
    count: f64,
    sum: f64,
    sum_squares: f64,
}

impl MixStats {
    /// Adds a block `[channels, samples]`.
    pub fn add(&mut self, block: &Tensor) {
        let mono = block.to_kind(Kind::Double).mean_dim(0, false, Kind::Double);
        self.count += mono.size()[0] as f64;
        self.sum += mono.sum(Kind::Double).double_value(&[]);
        self.sum_squares += mono.square().sum(Kind::Double).double_value(&[]);
    }

    /// `(mean, std)` (population deviation, as torch's `std(unbiased=False)`), or None for a
    /// silent or empty mix.
    pub fn scale(&self) -> Option<(f64, f64)> {
        if self.count == 0.0 {
            return None;
        }
        let mean = self.sum / self.count;
        let std = (self.sum_squares / self.count - mean * mean)
            .max(0.0)
            .sqrt();
        (std > 0.0).then_some((mean, std))
    }
}

impl Separator {
    /// Whether the config asks for the mix to be normalised (`inference.normalize`), which
    /// needs its statistics (`MixStats`, `normalization`) before separating.
    pub fn normalizes(&self) -> bool {
        self.config.normalize()
    }

    /// The `(mean, std)` to normalise a whole `mix` `[channels, samples]` with, if the config
    /// asks for it and the mix is not silent.
    pub fn normalization(&self, mix: &Tensor) -> Option<(f64, f64)> {
        if !self.normalizes() {
            return None;
        }
        let mono = mix.to_kind(Kind::Float).mean_dim(0, false, Kind::Float);
        let (mean, std) = (
            mono.mean(Kind::Float).double_value(&[]),
            mono.std(false).double_value(&[]),
        );
        (std > 0.0).then_some((mean, std))
    }

    /// Starts separating a mix of `channels` channels at `sample_rate()`, given block by block
    /// to `push`. `expected_length` (samples) only sizes progress; `scale` comes from
    /// `normalization` or `MixStats` when `normalizes()`.
    pub fn stream(
        &self,
        channels: i64,
        expected_length: Option<i64>,
        scale: Option<(f64, f64)>,
    ) -> Result<SeparationStream<'_>> {
        let model_channels = self.model.audio_channels();
        let (mode, passes, width) = if channels == model_channels {
            (Channels::AsTheyAre, 1, channels)
        } else if channels == 1 {
            (Channels::Doubled, 1, model_channels)
        } else if model_channels == 1 {
            (Channels::OneByOne, channels, 1)
        } else {
            bail!(
                "the model separates {model_channels}-channel audio; a {channels}-channel mix cannot go through it"
            );
        };
        let demixers = (0..passes)
            .map(|_| Demixer::new(self.config.demix_options(), width, expected_length))
            .collect::<Result<Vec<_>>>()?;
        Ok(SeparationStream {
            separator: self,
            channels: mode,
            done: vec![0; demixers.len()],
            demixers,
            scale,
            pending: Tensor::zeros([channels, 0], (Kind::Float, Device::Cpu)),
        })
    }
}

impl SeparationStream<'_> {
    /// Takes the next `[channels, samples]` of the mix; returns what became final, if any.
    /// `progress(done_chunks, total_chunks)`: returning false cancels with an error.
    pub fn push(
        &mut self,
        block: &Tensor,
        progress: impl FnMut(usize, usize) -> bool,
    ) -> Result<Option<Separated>> {
        let block = block.to_device(Device::Cpu).to_kind(Kind::Float);
        ensure!(
            block.dim() == 2 && block.size()[0] == self.pending.size()[0],
            "the mix must be [{}, samples], got {:?}",
            self.pending.size()[0],
            block.size()
        );
        self.pending = Tensor::cat(&[&self.pending, &block], 1);
        let input = match self.scale {
            Some((mean, std)) => (&block - mean) / std,
            None => block,
        };
        self.run(Some(&input), progress)
    }

    /// Ends the mix and returns the rest of the estimate.
    pub fn finish(
        &mut self,
        progress: impl FnMut(usize, usize) -> bool,
    ) -> Result<Option<Separated>> {
        self.run(None, progress)
    }

    /// Pushes `input` (None: finishes) through every pass and joins what they return.
    fn run(
        &mut self,
        input: Option<&Tensor>,
        mut progress: impl FnMut(usize, usize) -> bool,
    ) -> Result<Option<Separated>> {
        let model = self.separator.model();
        let mut separate = |batch: &Tensor| model.forward(batch);
        let passes = self.demixers.len();
        let mut outputs = Vec::with_capacity(passes);
        for (pass, demixer) in self.demixers.iter_mut().enumerate() {
            let before: usize = self.done[..pass].iter().sum::<usize>()
                + self.done[pass + 1..].iter().sum::<usize>();
            let done = &mut self.done[pass];
            let mut report = |d: usize, total: usize| {
                *done = d;
                progress(before + d, total * passes)
            };
            let out = match input {
                Some(input) => {
                    let input = match self.channels {
                        Channels::AsTheyAre => input.shallow_clone(),
                        Channels::Doubled => input.expand([demixer.channels(), -1], false),
                        Channels::OneByOne => input.narrow(0, pass as i64, 1),
                    };
                    demixer.push(&input, &mut separate, &mut report)?
                }
                None => demixer.finish(&mut separate, &mut report)?,
            };
            outputs.push(out);
        }
        let Some(first) = &outputs[0] else {
            return Ok(None);
        };
        let stems = match self.channels {
            Channels::AsTheyAre => first.shallow_clone(),
            Channels::Doubled => first.mean_dim(1, true, Kind::Float),
            Channels::OneByOne => Tensor::cat(&outputs.iter().flatten().collect::<Vec<_>>(), 1),
        };
        let stems = match self.scale {
            Some((mean, std)) => stems * std + mean,
            None => stems,
        };
        let n = stems.size()[2];
        let mix = self.pending.narrow(1, 0, n);
        let left = self.pending.size()[1] - n;
        self.pending = self.pending.narrow(1, n, left);
        Ok(Some(Separated { stems, mix }))
    }
}

#[cfg(test)]
#[path = "stream_tests.rs"]
pub(crate) mod tests;
