//! The STFT pair the separators wrap themselves in: `torch.stft`/`torch.istft` with a window of
//! `win_length` (periodic Hann for the RoFormers and MDX23C; SCNet passes none, which torch takes
//! as ones), centred frames (reflect padding), one-sided, complex.

use anyhow::{Context, Result};
use tch::{Kind, Tensor};

pub(super) struct Stft {
    pub n_fft: i64,
    pub hop_length: i64,
    pub win_length: i64,
    pub normalized: bool,
    pub window: Window,
}

/// The analysis and synthesis window, `win_length` long (torch centres a shorter one in `n_fft`).
#[derive(Clone, Copy)]
pub(super) enum Window {
    /// `torch.hann_window(win_length)`, periodic.
    Hann,
    /// No window passed: torch's default of ones.
    Rectangular,
}

impl Stft {
    pub(super) fn bins(&self) -> i64 {
        self.n_fft / 2 + 1
    }

    fn window(&self, signal: &Tensor) -> Tensor {
        let options = (Kind::Float, signal.device());
        match self.window {
            Window::Hann => Tensor::hann_window_periodic(self.win_length, true, options),
            Window::Rectangular => Tensor::ones([self.win_length], options),
        }
    }

    /// `[n, samples]` (float) → complex `[n, bins, frames]`.
    pub(super) fn forward(&self, signal: &Tensor) -> Result<Tensor> {
        // torch.stft(center=True) reflect-pads here and then frames without centring; tch's
        // `stft_center` would pass `align_to_window`, which libtorch refuses with centring.
        let half = self.n_fft / 2;
        signal
            .f_reflection_pad1d([half, half])
            .and_then(|padded| {
                padded.f_stft(
                    self.n_fft,
                    self.hop_length,
                    self.win_length,
                    Some(self.window(signal)),
                    self.normalized,
                    true,
                    true,
                    false,
                )
            })
            .context("STFT of the input")
    }

    /// Complex `[n, bins, frames]` → `[n, samples]`: `length` samples, or `hop × (frames − 1)`.
    pub(super) fn inverse(&self, spectrum: &Tensor, length: Option<i64>) -> Result<Tensor> {
        spectrum
            .f_istft(
                self.n_fft,
                self.hop_length,
                self.win_length,
                Some(self.window(spectrum)),
                true,
                self.normalized,
                true,
                length,
                false,
            )
            .context("inverse STFT of the masked spectrum")
    }
}
