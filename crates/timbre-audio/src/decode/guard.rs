//! Calls into symphonia, which panics on some damaged files (unchecked arithmetic on header
//! fields): a panic inside a guarded call becomes an error naming the file, and prints nothing.
//! The default panic hook would print the panic's message (and a backtrace) to stderr before
//! our error; a process-wide hook, installed once, stays quiet for panics inside a guarded call
//! on the panicking thread and hands every other panic to the hook it replaced.

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::path::Path;
use std::sync::Once;

use crate::error::{AudioError, AudioErrorKind};

thread_local! {
    /// Whether this thread is inside a guarded call.
    static GUARDED: Cell<bool> = const { Cell::new(false) };
}

/// Runs `call`, turning a panic into an error naming the file.
pub(super) fn guard<T>(path: Option<&Path>, call: impl FnOnce() -> T) -> Result<T, AudioError> {
    install_quiet_hook();
    let outer = GUARDED.replace(true);
    let outcome = panic::catch_unwind(AssertUnwindSafe(call));
    GUARDED.set(outer);
    outcome.map_err(|_| {
        AudioError::new(
            AudioErrorKind::Corrupt,
            path,
            "the file is damaged (its decoder failed on it)",
        )
    })
}

fn install_quiet_hook() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            // A thread being torn down has no thread-locals left: not inside a guarded call.
            if !GUARDED.try_with(Cell::get).unwrap_or(false) {
                previous(info);
            }
        }));
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_an_error_naming_the_file_and_the_guard_is_left_after_it() {
        let err = guard(Some(Path::new("take.wav")), || -> u8 {
            panic!("attempt to shift left with overflow")
        })
        .unwrap_err();
        assert_eq!(err.kind, AudioErrorKind::Corrupt);
        assert!(err.to_string().starts_with("take.wav: "), "{err}");
        assert!(!GUARDED.get(), "left on the way out");
        let nested = guard(None, || {
            let inner = guard(None, || panic!("inner"));
            (inner.is_err(), GUARDED.get())
        });
        assert_eq!(
            nested.unwrap(),
            (true, true),
            "the outer call is still guarded"
        );
        assert_eq!(guard(None, || 7).unwrap(), 7);
    }
}
