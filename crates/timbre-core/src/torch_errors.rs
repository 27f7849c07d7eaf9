//! libtorch's failures as typed errors. tch reports libtorch's errors as
//! `TchError::Torch(message)`: returned by its `f_` calls, or as the panic of its infallible
//! ones. Those whose message is libtorch's own out-of-memory report (`timbre_nn::torch_errors`
//! tells them) become [`ErrorKind::OutOfMemory`](crate::ErrorKind), which the job system
//! retries with a smaller batch; nothing else is ever taken for one, whatever its text (a file
//! may be named "out of memory.wav").

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::Arc;

use anyhow::{Result, anyhow};
use serde_json::Value;
use tch::TchError;

use crate::db::jobs::Lane;
use crate::jobs::{JobContext, JobHandler, JobKind, Needs};
use crate::settings::Settings;
use timbre_nn::torch_errors::{
    first_line, is_out_of_memory, reports_out_of_memory, torch_panic_message,
};
use timbre_nn::train::trainer::PeerFailure;

/// `err` typed as out of memory when a libtorch error in its chain reports one (its message
/// keeps the contexts around it), or another rank's did; any other error as it is.
pub fn typed(err: anyhow::Error) -> anyhow::Error {
    // Another rank of a data-parallel training ran out of memory in this step: this one retries
    // with the smaller batch too.
    if err
        .downcast_ref::<PeerFailure>()
        .is_some_and(|failure| failure.out_of_memory)
    {
        return crate::error::out_of_memory(format!("{err:#}"));
    }
    let torch_position = err.chain().position(is_out_of_memory);
    let Some(position) = torch_position else {
        return err;
    };
    let parts: Vec<String> = err
        .chain()
        .take(position + 1)
        .map(|cause| match cause.downcast_ref::<TchError>() {
            Some(TchError::Torch(message)) => first_line(message).to_string(),
            _ => cause.to_string(),
        })
        .collect();
    crate::error::out_of_memory(parts.join(": "))
}

/// The error a panic inside a tch call stands for: libtorch's message, typed as out of memory
/// when it reports one; `None` when the panic did not come from libtorch.
pub fn from_panic(panic: &(dyn Any + Send)) -> Option<anyhow::Error> {
    let message = torch_panic_message(panic)?;
    Some(if reports_out_of_memory(&message) {
        crate::error::out_of_memory(message)
    } else {
        anyhow!("{message}")
    })
}

/// A job kind whose libtorch out-of-memory failures, returned or panicked, reach the job system
/// typed (see [`typed`]); every other outcome passes through as the kind gave it, panics
/// included.
pub(crate) struct TypedTorchErrors(pub(crate) Arc<dyn JobHandler>);

impl JobHandler for TypedTorchErrors {
    fn needs(&self) -> Needs {
        self.0.needs()
    }

    fn kind(&self) -> JobKind {
        self.0.kind()
    }

    fn lane(&self) -> Lane {
        self.0.lane()
    }

    fn resumable(&self) -> bool {
        self.0.resumable()
    }

    fn runs_on_extraction_device(&self) -> bool {
        self.0.runs_on_extraction_device()
    }

    fn extraction_device_apart(&self, settings: &Settings) -> bool {
        self.0.extraction_device_apart(settings)
    }

    fn run(&self, ctx: &JobContext) -> Result<Value> {
        match catch_unwind(AssertUnwindSafe(|| self.0.run(ctx))) {
            Ok(outcome) => outcome.map_err(typed),
            Err(panic) => match from_panic(&*panic) {
                Some(error) if crate::error::kind_of(&error) == crate::ErrorKind::OutOfMemory => {
                    Err(error)
                }
                _ => resume_unwind(panic),
            },
        }
    }

    fn free_caches(&self) {
        self.0.free_caches();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;
    use crate::error::kind_of;

    /// More bytes than a 64-bit process can address: refused whatever the overcommit policy.
    const UNALLOCATABLE: [i64; 1] = [1 << 50];

    /// A real libtorch failure: an allocation beyond any machine's memory, on the CPU.
    fn allocation_failure() -> TchError {
        tch::Tensor::f_empty(UNALLOCATABLE, (tch::Kind::Float, tch::Device::Cpu))
            .expect_err("2^50 floats cannot be allocated")
    }

    #[test]
    fn libtorchs_allocation_failure_is_typed_out_of_memory_with_its_context() {
        let err = anyhow::Error::new(allocation_failure()).context("rendering take.wav");
        let typed = typed(err);
        assert_eq!(kind_of(&typed), ErrorKind::OutOfMemory);
        let message = format!("{typed:#}");
        assert!(
            message.starts_with("rendering take.wav: ")
                && message.contains("DefaultCPUAllocator")
                && !message.contains('\n'),
            "{message}"
        );
        assert_eq!(
            crate::jobs::classify(&typed),
            crate::jobs::Failure::OutOfMemory
        );
    }

    #[test]
    fn another_ranks_out_of_memory_is_typed_so_every_rank_halves_its_batch() {
        let peer = |out_of_memory| {
            anyhow::Error::new(PeerFailure {
                rank: 1,
                out_of_memory,
            })
            .context("the training step failed")
        };
        let typed_peer = typed(peer(true));
        assert_eq!(kind_of(&typed_peer), ErrorKind::OutOfMemory);
        assert_eq!(
            format!("{typed_peer:#}"),
            "the training step failed: rank 1 ran out of memory in this step"
        );
        assert_eq!(kind_of(&typed(peer(false))), ErrorKind::Internal);
    }

    #[test]
    fn text_that_only_mentions_memory_is_not_typed() {
        let named = crate::error::invalid_input("/home/ada/CUDA out of memory.wav: not audio");
        assert_eq!(kind_of(&typed(named)), ErrorKind::InvalidInput);
        let other =
            anyhow::Error::new(TchError::Shape("CUDA out of memory.wav".into())).context("reading");
        assert_eq!(kind_of(&typed(other)), ErrorKind::Internal);
        let payload: Box<dyn Any + Send> =
            Box::new("/tmp/CUDA out of memory.wav: a panic of our own".to_string());
        assert!(from_panic(&*payload).is_none());
    }

    #[test]
    fn a_panic_of_a_tch_call_gives_libtorchs_first_line() {
        let panic = catch_unwind(|| {
            tch::Tensor::empty(UNALLOCATABLE, (tch::Kind::Float, tch::Device::Cpu))
        })
        .expect_err("the allocation panics");
        let err = from_panic(&*panic).expect("a libtorch panic");
        assert_eq!(kind_of(&err), ErrorKind::OutOfMemory);
        let message = err.to_string();
        assert!(message.contains("DefaultCPUAllocator"), "{message}");
        assert!(
            !message.contains("\\n") && !message.contains("Torch(\""),
            "{message}"
        );
        let shape = catch_unwind(|| {
            tch::Tensor::zeros([2, 3], (tch::Kind::Float, tch::Device::Cpu)).matmul(
                &tch::Tensor::zeros([2, 3], (tch::Kind::Float, tch::Device::Cpu)),
            )
        })
        .expect_err("mismatched shapes panic");
        let err = from_panic(&*shape).expect("a libtorch panic");
        assert_eq!(kind_of(&err), ErrorKind::Internal);
    }
}
