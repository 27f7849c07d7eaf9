//! timbre-nn's integration tests in one binary: the parity suites against the reference Python,
//! the checkpoint readers and writer, blending and model info. One binary links once, and its
//! test threads run one suite's long test beside another's instead of leaving a core idle at
//! each binary's tail. The trainer's tests (`trainer.rs`) stay apart: they seed libtorch's
//! global generator, which tests running beside them would draw from.

mod blend;
mod checkpoint;
mod checkpoint_write;
mod crepe;
mod embedders;
mod energy_parity;
mod fcpe;
mod formant_parity;
mod live_parity;
mod model_info;
mod parity;
mod pesto;
mod pitch_inputs;
mod speaker_encoder;
mod swift_f0;
