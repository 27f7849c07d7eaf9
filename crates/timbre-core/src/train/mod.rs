//! Training data: a prepared dataset read as RVC's data code reads its experiment folder
//! (`data`, `sampler`), and the threads that load its batches ahead of the trainer
//! (`producer`).

pub mod data;
pub mod producer;
pub mod sampler;

#[cfg(test)]
mod parity_tests;
#[cfg(test)]
mod tests;
