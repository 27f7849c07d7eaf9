//! libtorch's failures as tch reports them: `TchError::Torch(message)` from its `f_` calls, or
//! as the panic of its infallible ones, whose text carries that error's `Debug`. Which of them
//! is libtorch's own out-of-memory report is told here, for the job system (timbre-core types
//! it) and for a data-parallel step (every rank ends it together); nothing else is ever taken for
//! one, whatever its text (a file may be named "out of memory.wav").

use std::any::Any;

use tch::TchError;

/// How libtorch words an allocation it could not make: CUDA's caching allocator, the CUDA
/// runtime, cuBLAS and cuDNN, and the CPU allocator.
const OUT_OF_MEMORY_REPORTS: [&str; 6] = [
    "CUDA out of memory",
    "CUDA error: out of memory",
    "CUBLAS_STATUS_ALLOC_FAILED",
    "CUDNN_STATUS_ALLOC_FAILED",
    "DefaultCPUAllocator: can't allocate memory",
    "DefaultCPUAllocator: not enough memory",
];

/// tch's panics carry the `Debug` of its error: `…: Torch("<message>\n<stack trace>")`.
const TORCH_PANIC: &str = "Torch(\"";

/// Whether a libtorch message is its report of an allocation it could not make.
pub fn reports_out_of_memory(torch_message: &str) -> bool {
    OUT_OF_MEMORY_REPORTS
        .iter()
        .any(|report| torch_message.contains(report))
}

/// Whether `cause` (one link of an error's chain) is libtorch's out-of-memory report.
pub fn is_out_of_memory(cause: &(dyn std::error::Error + 'static)) -> bool {
    matches!(cause.downcast_ref::<TchError>(),
        Some(TchError::Torch(message)) if reports_out_of_memory(message))
}

/// The first line of a libtorch message: what it says, without the C++ stack trace after it.
pub fn first_line(message: &str) -> &str {
    message.lines().next().unwrap_or_default().trim_end()
}

/// libtorch's message (its first line) when `panic` is a tch call's panic.
pub fn torch_panic_message(panic: &(dyn Any + Send)) -> Option<String> {
    let text = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())?;
    let (_, escaped) = text.split_once(TORCH_PANIC)?;
    // The message is escaped as a Rust string literal: its line breaks are `\n`.
    let message = escaped.split("\\n").next().unwrap_or_default();
    Some(first_line(message.trim_end_matches("\")")).to_string())
}
