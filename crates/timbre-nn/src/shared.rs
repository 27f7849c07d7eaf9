//! A model held by several users at once (the process's model cache, the jobs, a live stream),
//! one of them running it at a time.

use std::sync::{Arc, Mutex, MutexGuard};

/// A handle to a model behind a mutex; clones share the same model.
pub struct Shared<T>(Arc<Mutex<T>>);

impl<T> Shared<T> {
    /// Wraps `model` in its first handle.
    pub fn new(model: T) -> Shared<T> {
        Shared(Arc::new(Mutex::new(model)))
    }

    /// The model, for one run; a user that panicked while holding it does not poison it for
    /// the others (models keep no state between runs).
    pub fn lock(&self) -> MutexGuard<'_, T> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How many handles to the model exist, this one included.
    pub fn holders(&self) -> usize {
        Arc::strong_count(&self.0)
    }
}

impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        Shared(self.0.clone())
    }
}

/// Two handles to the same model (not to equal ones).
impl<T> PartialEq for Shared<T> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}
