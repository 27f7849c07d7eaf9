//! Which failures are worth retrying.

use crate::error::{ErrorKind, kind_of};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    Cancelled,
    /// Out of (GPU) memory: free caches, retry with a smaller batch.
    OutOfMemory,
    /// Busy or interrupted I/O, a locked database: retry after a backoff.
    Transient,
    Permanent,
}

pub fn classify(err: &anyhow::Error) -> Failure {
    let text = format!("{err:#}").to_lowercase();
    if text.contains("out of memory") {
        return Failure::OutOfMemory;
    }
    match kind_of(err) {
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
        assert_eq!(
            classify(&anyhow!("CUDA out of memory. Tried to allocate")),
            Failure::OutOfMemory
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
