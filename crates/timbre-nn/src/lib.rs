//! Neural models for Timbre Studio on libtorch (tch): our own checkpoint readers, the HuBERT /
//! ContentVec feature extractor, the RMVPE pitch model, RVC synthesizers, the faiss index, the
//! conversion pipeline and the RoFormer separators. No Tauri, no database: `timbre-core` drives
//! these from its jobs.

pub mod blend;
pub mod checkpoint;
pub mod crepe;
pub mod device;
pub mod export;
pub mod fcpe;
pub mod graphed;
pub mod hubert;
pub mod index;
pub mod layers;
pub mod model_info;
pub mod pesto;
pub mod pipeline;
pub mod rmvpe;
pub mod separation;
mod shared;
pub mod speaker_encoder;
pub mod stream;
pub mod swift_f0;
pub mod synthesizer;
pub mod torch_errors;
pub mod train;
pub mod voice;
pub mod weights;

pub use shared::Shared;
/// Named ranges and traces of torch's profiler, for the benchmarks' breakdowns.
pub use timbre_torch_ext::profile;
