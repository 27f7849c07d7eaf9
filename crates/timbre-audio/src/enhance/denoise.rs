//! RNNoise (through nnnoiseless, which embeds its weights): 48 kHz mono, 480-sample frames, in
//! the range of 16-bit integers. Each channel goes up to 48 kHz, through the network and back in
//! blocks, and is written back in place, so a long file needs no converted copy of itself.

use nnnoiseless::DenoiseState;

use super::{ProcessError, Progress};
use crate::resample::StreamResampler;

const RNNOISE_RATE: u32 = 48_000;
const I16_SCALE: f32 = 32_768.0;
/// Input frames per block: bounds the memory the 48 kHz stage needs.
const BLOCK_FRAMES: usize = 1 << 16;

/// Energy before and after, for the report.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Energies {
    pub before: f64,
    pub after: f64,
}

/// Denoises `samples` (at `rate`) in place. `strength` in 0..=1 blends the denoised signal with
/// the original (1: fully denoised).
pub(super) fn denoise_channel(
    samples: &mut [f32],
    rate: u32,
    strength: f32,
    progress: &mut Progress<'_>,
) -> Result<Energies, ProcessError> {
    let mut up = StreamResampler::new(rate, RNNOISE_RATE)?;
    let mut down = StreamResampler::new(RNNOISE_RATE, rate)?;
    let mut network = Rnnoise::aligned();
    let (mut at_48k, mut denoised_48k, mut back) = (Vec::new(), Vec::new(), Vec::new());
    let mut writer = Writer {
        written: 0,
        strength: strength.clamp(0.0, 1.0),
        energies: Energies::default(),
    };
    let total = samples.len();
    for start in (0..total).step_by(BLOCK_FRAMES) {
        let end = (start + BLOCK_FRAMES).min(total);
        up.push(&samples[start..end], &mut at_48k)?;
        network.push(&at_48k, &mut denoised_48k);
        down.push(&denoised_48k, &mut back)?;
        at_48k.clear();
        denoised_48k.clear();
        writer.write(samples, &back);
        debug_assert!(
            writer.written <= end,
            "the chain is causal once its delays are dropped"
        );
        back.clear();
        if !progress(end as f64 / total as f64) {
            return Err(ProcessError::Cancelled);
        }
    }
    up.finish(&mut at_48k)?;
    network.push(&at_48k, &mut denoised_48k);
    network.finish(&mut denoised_48k);
    down.push(&denoised_48k, &mut back)?;
    down.finish(&mut back)?;
    writer.write(samples, &back);
    Ok(writer.energies)
}

struct Writer {
    written: usize,
    strength: f32,
    energies: Energies,
}

impl Writer {
    /// Overwrites the next samples with `denoised`, blended with what they held.
    fn write(&mut self, samples: &mut [f32], denoised: &[f32]) {
        let end = (self.written + denoised.len()).min(samples.len());
        for (sample, &clean) in samples[self.written..end].iter_mut().zip(denoised) {
            let mixed = self.strength * clean + (1.0 - self.strength) * *sample;
            self.energies.before += f64::from(*sample).powi(2);
            self.energies.after += f64::from(mixed).powi(2);
            *sample = mixed;
        }
        self.written = end;
    }
}

/// The network over a stream of 48 kHz samples in -1..1, collecting whole frames.
pub struct Rnnoise {
    state: Box<DenoiseState<'static>>,
    frame: Vec<f32>,
    output: Vec<f32>,
    delay_left: usize,
    consumed: usize,
    produced: usize,
}

impl Rnnoise {
    /// Drops the network's one-frame delay, so output sample `n` is the denoised input sample
    /// `n` (the output trails the input by up to two frames).
    fn aligned() -> Self {
        Rnnoise {
            delay_left: DenoiseState::FRAME_SIZE,
            ..Rnnoise::delayed()
        }
    }

    /// Keeps the network's one-frame delay ([`Rnnoise::FRAME`] samples), so whole frames in give as
    /// many samples out at once: what a live stream needs.
    pub fn delayed() -> Self {
        Rnnoise {
            state: DenoiseState::new(),
            frame: Vec::with_capacity(DenoiseState::FRAME_SIZE),
            output: vec![0.0; DenoiseState::FRAME_SIZE],
            delay_left: 0,
            consumed: 0,
            produced: 0,
        }
    }

    /// Samples per frame, and the delay of [`Rnnoise::delayed`].
    pub const FRAME: usize = DenoiseState::FRAME_SIZE;
    /// Sample rate the network runs at, in Hz (48 kHz); input must already be at this rate.
    pub const RATE: u32 = RNNOISE_RATE;

    /// Denoises mono samples in [-1, 1], appending the output of each frame completed to `out`.
    pub fn push(&mut self, input: &[f32], out: &mut Vec<f32>) {
        self.consumed += input.len();
        for &sample in input {
            self.frame.push(sample * I16_SCALE);
            if self.frame.len() == DenoiseState::FRAME_SIZE {
                self.run_frame(out);
            }
        }
    }

    /// Pushes silence until every input sample has come out.
    fn finish(&mut self, out: &mut Vec<f32>) {
        while self.produced < self.consumed {
            self.frame.resize(DenoiseState::FRAME_SIZE, 0.0);
            self.run_frame(out);
        }
        let excess = self.produced - self.consumed;
        out.truncate(out.len() - excess.min(out.len()));
        self.produced = self.consumed;
    }

    fn run_frame(&mut self, out: &mut Vec<f32>) {
        self.state.process_frame(&mut self.output, &self.frame);
        self.frame.clear();
        let skip = self.delay_left.min(self.output.len());
        self.delay_left -= skip;
        out.extend(self.output[skip..].iter().map(|x| x / I16_SCALE));
        self.produced += self.output.len() - skip;
    }
}
