//! FFT plans and rubato's FFT resampler, instantiated here and handed out as trait objects.
//! rustfft's planners are generic over the sample type, so every crate that planned an FFT
//! compiled all of rustfft's SIMD algorithms again, for each type it used: about half of
//! timbre-audio's machine code, once for its library and once for its tests. Here they are
//! compiled once, optimised (`[profile.dev.package.timbre-fft]` in the workspace's
//! Cargo.toml); callers reach them through `dyn` plans, which instantiate nothing.

#![forbid(unsafe_code)]

use std::sync::Arc;

pub use realfft::num_complex;
pub use realfft::{ComplexToReal, RealToComplex};
pub use rubato;

/// A real FFT of one length, forward and inverse (sharing their complex FFT).
pub struct RealFft<T> {
    /// Real input of `len` samples to `len / 2 + 1` complex bins (unnormalised).
    pub forward: Arc<dyn RealToComplex<T>>,
    /// `len / 2 + 1` complex bins back to `len` real samples (unnormalised: scaled by `len`).
    pub inverse: Arc<dyn ComplexToReal<T>>,
}

/// A real FFT of `len` points in double precision.
pub fn real_fft_f64(len: usize) -> RealFft<f64> {
    let mut planner = realfft::RealFftPlanner::<f64>::new();
    RealFft {
        forward: planner.plan_fft_forward(len),
        inverse: planner.plan_fft_inverse(len),
    }
}

/// A real FFT of `len` points in single precision.
pub fn real_fft_f32(len: usize) -> RealFft<f32> {
    let mut planner = realfft::RealFftPlanner::<f32>::new();
    RealFft {
        forward: planner.plan_fft_forward(len),
        inverse: planner.plan_fft_inverse(len),
    }
}

/// rubato's synchronous FFT resampler (`rubato::Fft::new`) on single-precision samples.
pub fn fft_resampler(
    input_rate: usize,
    output_rate: usize,
    chunk_frames: usize,
    channels: usize,
    fixed: rubato::FixedSync,
) -> Result<rubato::Fft<f32>, rubato::ResamplerConstructionError> {
    rubato::Fft::<f32>::new(input_rate, output_rate, chunk_frames, channels, fixed)
}
