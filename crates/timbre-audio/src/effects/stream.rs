//! The chain as a stream: each effect becomes a stage holding the state it carries from one
//! block to the next, indexed by absolute sample position so the output does not depend on how
//! the input is split.

use super::{Effect, EffectChain, biquad, db_to_gain, dynamics, modulation, reverb};
use crate::enhance::TruePeakLimiter;
use crate::enhance::filters::HighPassStream;

/// An [`EffectChain`] running over a stream of blocks, from [`EffectChain::stream`]. It holds a
/// bounded number of frames whatever the length of the stream.
pub struct EffectStream {
    channels: usize,
    stages: Vec<Stage>,
}

impl EffectStream {
    pub(super) fn new(chain: &EffectChain, sample_rate: u32, channels: usize) -> Self {
        let stages = chain
            .effects
            .iter()
            .map(|effect| Stage::new(effect, sample_rate, channels))
            .collect();
        EffectStream { channels, stages }
    }

    /// Takes the next block (one `Vec` per channel, all the same length; processed in place where
    /// an effect can) and gives the output frames now complete. The output lags the input (by the high-pass, de-esser, chorus and
    /// limiter lookaheads) and [`EffectStream::finish`] gives the rest: output frame `k` is
    /// input frame `k` processed.
    ///
    /// # Panics
    /// If the block does not have one `Vec` per channel of the stream.
    pub fn push(&mut self, block: Vec<Vec<f32>>) -> Vec<Vec<f32>> {
        assert_eq!(block.len(), self.channels, "one Vec per channel");
        debug_assert!(block.windows(2).all(|w| w[0].len() == w[1].len()));
        self.stages
            .iter_mut()
            .fold(block, |block, stage| stage.push(block))
    }

    /// The frames still held back, so that the whole output has as many frames as the input
    /// (tails past the end are cut).
    pub fn finish(self) -> Vec<Vec<f32>> {
        let channels = self.channels;
        self.stages
            .into_iter()
            .fold(vec![Vec::new(); channels], |tail, mut stage| {
                let mut out = stage.push(tail);
                for (channel, rest) in out.iter_mut().zip(stage.finish(channels)) {
                    channel.extend(rest);
                }
                out
            })
    }

    /// Samples (over all channels) the stream's buffers have room for.
    #[cfg(test)]
    pub(super) fn held_samples(&self) -> usize {
        self.stages.iter().map(Stage::held_samples).sum()
    }
}

/// One effect with its running state.
enum Stage {
    Gain(f32),
    HighPass(Vec<HighPassStream>),
    Biquad(biquad::Filter),
    Compressor(dynamics::CompressorStage),
    DeEsser(dynamics::DeEsserStage),
    Delay(modulation::DelayStage),
    Chorus(modulation::ChorusStage),
    Reverb(reverb::ReverbStage),
    Limiter(TruePeakLimiter),
}

impl Stage {
    /// Expects a checked effect, its frequencies below the Nyquist frequency of `rate`.
    fn new(effect: &Effect, rate: u32, channels: usize) -> Self {
        let hz = f64::from(rate);
        match *effect {
            Effect::Gain(p) => Stage::Gain(db_to_gain(p.db) as f32),
            Effect::HighPass(p) => Stage::HighPass(
                (0..channels)
                    .map(|_| HighPassStream::new(rate, p.cutoff_hz).expect("cutoff checked"))
                    .collect(),
            ),
            Effect::LowPass(p) => Stage::Biquad(biquad::Filter::new(
                biquad::Coefficients::low_pass(p.cutoff_hz, p.q, hz),
                channels,
            )),
            Effect::PeakingEq(p) => Stage::Biquad(biquad::Filter::new(
                biquad::Coefficients::peaking(p.frequency_hz, p.gain_db, p.q, hz),
                channels,
            )),
            Effect::Compressor(p) => Stage::Compressor(dynamics::CompressorStage::new(&p, rate)),
            Effect::DeEsser(p) => Stage::DeEsser(dynamics::DeEsserStage::new(&p, rate, channels)),
            Effect::Delay(p) => Stage::Delay(modulation::DelayStage::new(&p, rate, channels)),
            Effect::Chorus(p) => Stage::Chorus(modulation::ChorusStage::new(&p, rate, channels)),
            Effect::Reverb(p) => Stage::Reverb(reverb::ReverbStage::new(&p, rate, channels)),
            Effect::Limiter(p) => {
                Stage::Limiter(TruePeakLimiter::new(rate, channels, p.ceiling_db))
            }
        }
    }

    fn push(&mut self, mut block: Vec<Vec<f32>>) -> Vec<Vec<f32>> {
        match self {
            Stage::Gain(gain) => block.iter_mut().flatten().for_each(|x| *x *= *gain),
            Stage::HighPass(filters) => {
                return filters
                    .iter_mut()
                    .zip(&block)
                    .map(|(filter, channel)| {
                        let mut out = Vec::with_capacity(channel.len());
                        filter.push(channel, &mut out);
                        out
                    })
                    .collect();
            }
            Stage::Biquad(filter) => filter.process(&mut block),
            Stage::Compressor(compressor) => compressor.process(&mut block),
            Stage::DeEsser(de_esser) => return de_esser.push(&block),
            Stage::Delay(delay) => delay.process(&mut block),
            Stage::Chorus(chorus) => return chorus.push(&block),
            Stage::Reverb(reverb) => reverb.process(&mut block),
            Stage::Limiter(limiter) => return limiter.push(&block),
        }
        block
    }

    /// The frames still held back.
    fn finish(self, channels: usize) -> Vec<Vec<f32>> {
        match self {
            Stage::HighPass(filters) => filters
                .into_iter()
                .map(|filter| {
                    let mut out = Vec::new();
                    filter.finish(&mut out);
                    out
                })
                .collect(),
            Stage::DeEsser(de_esser) => de_esser.finish(),
            Stage::Chorus(chorus) => chorus.finish(),
            Stage::Limiter(limiter) => limiter.finish().0,
            Stage::Gain(_)
            | Stage::Biquad(_)
            | Stage::Compressor(_)
            | Stage::Delay(_)
            | Stage::Reverb(_) => vec![Vec::new(); channels],
        }
    }

    /// Samples its buffers have room for; the limiter's (enhancement's own) are not counted.
    #[cfg(test)]
    fn held_samples(&self) -> usize {
        match self {
            Stage::HighPass(filters) => filters.iter().map(HighPassStream::held_samples).sum(),
            Stage::DeEsser(de_esser) => de_esser.held_samples(),
            Stage::Delay(delay) => delay.held_samples(),
            Stage::Chorus(chorus) => chorus.held_samples(),
            Stage::Reverb(reverb) => reverb.held_samples(),
            Stage::Gain(_) | Stage::Biquad(_) | Stage::Compressor(_) | Stage::Limiter(_) => 0,
        }
    }
}
