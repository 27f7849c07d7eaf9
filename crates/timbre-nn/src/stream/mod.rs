//! Live conversion's engine: blocks in, blocks out, no I/O, with the maths of rvc-next
//! 0.2.16's `engine/stream/` (`StreamEngine`, itself RVC's `infer/lib/rtrvc.py` and
//! `realtime_gui.py`). The devices, threads and recording live in the core's session.

mod denoise;
mod engine;
mod infer;
pub mod loudness;
pub mod params;
mod pitch;
pub mod sinc_resample;
mod sola;

pub use engine::{StreamEngine, StreamModels};
pub use infer::BlockGraphs;
pub use params::{Layout, STREAM_RANGES, StreamParams, StreamRanges, Unvoiced};
