//! A training step as the `train` job's sessions and the data-parallel workers take it.

use std::panic::{AssertUnwindSafe, catch_unwind};

use anyhow::{Result, anyhow};
use timbre_nn::train::batch::Batch;
use timbre_nn::train::trainer::{StepLosses, Trainer};

/// A training step; libtorch's failures (out of memory among them) come as panics from tch's
/// infallible calls and become errors here, without libtorch's stack trace.
pub(super) fn guarded_step(trainer: &mut Trainer, batch: &Batch) -> Result<StepLosses> {
    match catch_unwind(AssertUnwindSafe(|| trainer.step(batch))) {
        Ok(losses) => losses.map_err(crate::torch_errors::typed),
        Err(panic) => {
            let error = crate::torch_errors::from_panic(&*panic).unwrap_or_else(|| {
                let text = panic
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| panic.downcast_ref::<&str>().copied())
                    .unwrap_or("a panic");
                anyhow!("{text}")
            });
            Err(error.context("the training step failed"))
        }
    }
}
