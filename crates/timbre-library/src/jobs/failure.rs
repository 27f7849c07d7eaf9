//! Which failures are worth retrying.

use crate::error::{ErrorKind, kind_of};

/// How a failed job attempt is handled, from its error's kind ([`classify`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The user cancelled it: the job ends cancelled, not retried.
    Cancelled,
    /// Out of (GPU) memory: free caches, retry with a smaller batch.
    OutOfMemory,
    /// Busy or interrupted I/O, a locked database: retry after a backoff.
    Transient,
    /// Anything else: the job fails without a retry.
    Permanent,
}

/// By the error's kind, never by its text: a file named "out of memory.wav" that fails to
/// decode is a permanent failure.
pub fn classify(err: &anyhow::Error) -> Failure {
    match kind_of(err) {
        ErrorKind::OutOfMemory => Failure::OutOfMemory,
        ErrorKind::Cancelled => Failure::Cancelled,
        ErrorKind::Busy => Failure::Transient,
        _ if err.chain().any(is_transient_io) => Failure::Transient,
        _ => Failure::Permanent,
    }
}

fn is_transient_io(cause: &(dyn std::error::Error + 'static)) -> bool {
    use std::io::ErrorKind::*;
    cause
        .downcast_ref::<std::io::Error>()
        .is_some_and(|e| matches!(e.kind(), Interrupted | TimedOut | WouldBlock | ResourceBusy))
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::anyhow;

    #[test]
    fn classification() {
        let oom = crate::error::out_of_memory("CUDA out of memory. Tried to allocate 2.00 GiB")
            .context("rendering take.wav");
        assert_eq!(classify(&oom), Failure::OutOfMemory);
        let named_like_it = crate::error::invalid_input(
            "/home/ada/out of memory.wav: not an audio file (no format recognised)",
        );
        assert_eq!(classify(&named_like_it), Failure::Permanent);
        assert_eq!(
            classify(&anyhow!("CUDA out of memory, says an untyped message")),
            Failure::Permanent
        );
        assert_eq!(
            classify(&anyhow::Error::new(crate::jobs::Cancelled)),
            Failure::Cancelled
        );
        let busy = anyhow::Error::new(std::io::Error::from(std::io::ErrorKind::TimedOut))
            .context("reading");
        assert_eq!(classify(&busy), Failure::Transient);
        assert_eq!(
            classify(&crate::error::invalid_input("bad file")),
            Failure::Permanent
        );
    }
}
