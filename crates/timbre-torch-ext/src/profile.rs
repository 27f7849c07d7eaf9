//! torch's profiler (kineto) on this process, as `torch.profiler.profile` runs it in Python:
//! CPU ops and, on CUDA, every kernel, copy and runtime call with its timing, saved as a Chrome
//! trace; and named ranges (`torch.profiler.record_function`) that mark a job's stages in it.
//! `bench/profile_summary.py` turns such a trace into the per-stage breakdown of
//! docs/PERFORMANCE.md. A range costs one allocation when no profiler runs.

use std::ffi::{CString, c_char, c_int, c_void};
use std::marker::PhantomData;
use std::path::Path;

use anyhow::{Context, Result};

use crate::checked;

unsafe extern "C" {
    fn timbre_ext_profiler_start(cuda: c_int) -> *mut c_char;
    fn timbre_ext_profiler_stop(path: *const c_char) -> *mut c_char;
    fn timbre_ext_range_begin(name: *const c_char) -> *mut c_void;
    fn timbre_ext_range_end(range: *mut c_void);
}

/// A running profiler; [`Profiler::save`] stops it and writes the trace.
pub struct Profiler {
    running: bool,
}

impl Profiler {
    /// Starts recording this process's torch work; with `cuda`, the device's activity too.
    pub fn start(cuda: bool) -> Result<Profiler> {
        // SAFETY: starts kineto; the shim catches libtorch's exceptions.
        let error = unsafe { timbre_ext_profiler_start(c_int::from(cuda)) };
        checked(error, "starting the profiler")?;
        Ok(Profiler { running: true })
    }

    /// Stops recording and writes the Chrome trace (JSON) to `path`.
    pub fn save(mut self, path: &Path) -> Result<()> {
        self.running = false;
        let text = path.to_str().context("the trace's path is not UTF-8")?;
        let c_path = CString::new(text).context("the trace's path holds a NUL byte")?;
        // SAFETY: a NUL-terminated path borrowed for the call.
        checked(
            unsafe { timbre_ext_profiler_stop(c_path.as_ptr()) },
            &format!("writing the profile {}", path.display()),
        )
    }
}

impl Drop for Profiler {
    fn drop(&mut self) {
        if self.running {
            // SAFETY: stops the profiler this value started; the result is discarded.
            let error = unsafe { timbre_ext_profiler_stop(std::ptr::null()) };
            let _ = checked(error, "stopping the profiler");
        }
    }
}

/// A named range in the profile, from [`range`] until dropped, on the thread that made it.
pub struct Range {
    raw: *mut c_void,
    // A RecordFunction ends on the thread it began on.
    _not_send: PhantomData<*mut ()>,
}

/// Marks the work from now until the returned value is dropped as `name` in a running
/// profile.
pub fn range(name: &str) -> Range {
    let name = CString::new(name.replace('\0', " ")).expect("NUL bytes replaced");
    Range {
        // SAFETY: the shim copies the name.
        raw: unsafe { timbre_ext_range_begin(name.as_ptr()) },
        _not_send: PhantomData,
    }
}

impl Drop for Range {
    fn drop(&mut self) {
        // SAFETY: `raw` came from timbre_ext_range_begin on this thread and is ended once.
        unsafe { timbre_ext_range_end(self.raw) }
    }
}

#[cfg(test)]
mod tests {
    use tch::Tensor;

    use super::*;

    #[test]
    fn a_trace_holds_the_named_ranges_and_the_ops_inside_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trace.json");
        let profiler = Profiler::start(false).unwrap();
        {
            let _outer = range("stage one");
            let a = Tensor::ones([64, 64], (tch::Kind::Float, tch::Device::Cpu));
            let _ = a.matmul(&a).sum(tch::Kind::Float);
        }
        profiler.save(&path).unwrap();
        let trace: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let events = trace["traceEvents"].as_array().unwrap();
        let named = |name: &str, cat: &str| {
            events
                .iter()
                .find(|e| e["name"] == name && e["cat"] == cat)
                .cloned()
        };
        let stage = named("stage one", "user_annotation").expect("the range is in the trace");
        let matmul = named("aten::matmul", "cpu_op").expect("the matmul is in the trace");
        let start = |e: &serde_json::Value| e["ts"].as_f64().unwrap();
        let end = |e: &serde_json::Value| start(e) + e["dur"].as_f64().unwrap();
        assert!(start(&stage) <= start(&matmul) && end(&matmul) <= end(&stage));
    }
}
