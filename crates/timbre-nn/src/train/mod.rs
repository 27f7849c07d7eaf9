//! Training RVC models: what rvc_next 0.2.16's `engine/train` uses besides the generator (which
//! is `crate::synthesizer`'s): the discriminator, the losses, the spectrograms, the optimizer and its schedule,
//! and the training checkpoints `G_<step>.pth` / `D_<step>.pth`.

pub mod batch;
pub mod checkpoint;
mod checkpoint_pairs;
pub mod config;
mod data_parallel;
pub mod discriminator;
pub mod losses;
pub mod optimizer;
pub mod scaler;
pub mod spectrogram;
pub mod trainer;

#[cfg(test)]
mod discriminator_tests;
#[cfg(test)]
mod parity_tests;
