//! The SOLA crossfade between blocks, as rvc-next 0.2.16 `engine/audio/sola.py` (`Sola`,
//! `fade_windows`; from DDSP-SVC via RVC's realtime GUI): the new block's start is aligned to
//! the previous tail by normalised cross-correlation over a 10 ms search, then crossfaded with
//! sin² windows. The same libtorch operations as the reference, so ties resolve alike.

use tch::{Kind, Tensor};

pub struct Sola {
    buffer_frame: usize,
    search_frame: usize,
    /// The previous block's tail, faded out under the next block's head.
    buffer: Vec<f32>,
    fade_in: Tensor,
    fade_out: Tensor,
    /// The alignment chosen for the last block, in samples.
    pub last_offset: usize,
}

/// `sin(π/2 · linspace(0, 1, n))²` and one minus it.
fn fade_windows(frames: usize) -> (Tensor, Tensor) {
    let ramp = Tensor::linspace(0.0, 1.0, frames as i64, (Kind::Float, tch::Device::Cpu));
    let fade_in = (ramp * (0.5 * std::f64::consts::PI)).sin().square();
    let fade_out = fade_in.ones_like() - &fade_in;
    (fade_in, fade_out)
}

impl Sola {
    pub fn new(buffer_frame: usize, search_frame: usize) -> Sola {
        let (fade_in, fade_out) = fade_windows(buffer_frame);
        Sola {
            buffer_frame,
            search_frame,
            buffer: vec![0.0; buffer_frame],
            fade_in,
            fade_out,
            last_offset: 0,
        }
    }

    /// Where in `audio` the stored tail continues best (0..=search).
    fn offset(&self, audio: &Tensor) -> usize {
        let window = audio
            .narrow(0, 0, (self.buffer_frame + self.search_frame) as i64)
            .view([1, 1, -1]);
        let tail = Tensor::from_slice(&self.buffer).view([1, 1, -1]);
        let ones = Tensor::ones(
            [1, 1, self.buffer_frame as i64],
            (Kind::Float, tch::Device::Cpu),
        );
        let nominator = window.conv1d(&tail, None::<Tensor>, [1], [0], [1], 1);
        let denominator = (window
            .square()
            .conv1d(&ones, None::<Tensor>, [1], [0], [1], 1)
            + 1e-8)
            .sqrt();
        (nominator / denominator)
            .view([-1])
            .argmax(0, false)
            .int64_value(&[]) as usize
    }

    /// Aligns and crossfades `audio` (at least block + buffer + search samples) and returns
    /// its `block` samples; keeps the next tail.
    pub fn apply(&mut self, audio: &[f32], block: usize) -> Vec<f32> {
        let audio = Tensor::from_slice(audio);
        let offset = self.offset(&audio);
        self.last_offset = offset;
        let head = audio.narrow(0, offset as i64, self.buffer_frame as i64) * &self.fade_in
            + Tensor::from_slice(&self.buffer) * &self.fade_out;
        let aligned = audio.narrow(0, offset as i64, (block + self.buffer_frame) as i64);
        let mut out = Vec::<f32>::try_from(aligned).expect("float32 samples");
        let faded = Vec::<f32>::try_from(head).expect("float32 samples");
        out[..self.buffer_frame].copy_from_slice(&faded);
        self.buffer
            .copy_from_slice(&out[block..block + self.buffer_frame]);
        out.truncate(block);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_steady_tone_streams_through_without_a_seam() {
        let (buffer, search, block) = (40, 10, 100);
        let mut sola = Sola::new(buffer, search);
        let tone = |start: usize, n: usize| -> Vec<f32> {
            (start..start + n).map(|i| (i as f32 * 0.2).sin()).collect()
        };
        // Each rendering starts where the previous block ended, with the crossfade and search.
        let first = sola.apply(&tone(0, block + buffer + search), block);
        assert_eq!(first.len(), block);
        let second = sola.apply(&tone(block, block + buffer + search), block);
        assert_eq!(sola.last_offset, 0);
        for (i, v) in second.iter().enumerate() {
            assert!((v - (((block + i) as f32) * 0.2).sin()).abs() < 1e-5, "{i}");
        }
    }
}
