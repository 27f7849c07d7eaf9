//! Audio decode, encode, resample, record and analysis helpers for Timbre Studio.
//!
//! Everything works on [`AudioBuffer`], planar `f32` samples in `[-1, 1]`.

pub mod analysis;
pub mod buffer;
pub mod dataset;
pub mod decode;
pub mod effects;
pub mod encode;
pub mod enhance;
pub mod error;
pub mod export;
pub mod fidelity;
pub mod filter;
pub mod isolate;
pub mod live;
pub mod memory;
pub mod pitch;
pub mod quality;
pub mod record;
pub mod resample;
pub mod signal;
#[cfg(test)]
mod test_util;

pub use buffer::AudioBuffer;
pub use decode::{
    AudioInfo, BlockReader, DecodeOptions, decode_bytes, decode_file, open_audio_file, open_blocks,
    probe_file,
};
pub use encode::{
    FlacStreamWriter, SampleFormat, WavStreamWriter, encode_wav, write_flac, write_wav,
};
pub use error::{AudioError, AudioErrorKind};
pub use resample::resample;
