//! Training: a prepared dataset read as RVC's data code reads its experiment folder (`data`,
//! `sampler`), the threads that load its batches ahead of the trainer (`producer`), and the
//! `train` job (`job`, `session`) with what it starts from (`request`, `pretrained`,
//! `batch_size`) and makes (`files`, `preview`, `export`), and the checkpoint judge that scores
//! every checkpoint on held-out speech (`judge`); on several devices or machines, rank 0's
//! group and the worker processes it starts (`ranks`), and the further ranks (`worker`).

pub mod batch_size;
pub mod data;
pub mod export;
pub mod files;
pub mod job;
pub mod judge;
pub mod pretrained;
pub mod preview;
pub mod producer;
pub mod ranks;
pub mod request;
pub mod sampler;
pub mod session;
mod step;
pub mod worker;

pub use job::{TrainHandler, TrainResult};
pub use pretrained::Pretrained;
pub use request::{TrainParams, TrainRequest, resume_training, start_training, stop_training};

#[cfg(test)]
mod parity_tests;
#[cfg(test)]
mod tests;
