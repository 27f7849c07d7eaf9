//! The libtorch ops tch 0.24 does not bind, reached through a small C++ shim (src/shim.cpp,
//! compiled by build.rs against the same libtorch's headers, with torch-sys's flags):
//! torch's fused AdamW kernel, the multi-tensor (`_foreach_*`) ops a loss scaler needs, CUDA
//! graphs (`at::cuda::CUDAGraph`), torch's profiler ([`profile`]) and torch.distributed's process
//! groups ([`distributed`]).
//!
//! CUDA graphs live in a library of their own (src/cuda_graph.cpp), built only where CUDA's
//! runtime headers and libtorch_cuda are there at build time (the PyPI torch brings both: the
//! headers in its nvidia-* wheels) and loaded at start after libtorch_cuda ([`cuda`], which
//! loads libtorch's CUDA backend itself); without them [`CudaGraph::capture`] returns an error
//! that says so, as it does on a machine without a CUDA device. Everything else runs on any
//! device libtorch supports, the CPU included.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};

use anyhow::{Result, bail, ensure};
use tch::{Device, Tensor};
use torch_sys::C_tensor;

type RawTensor = *const C_tensor;

unsafe extern "C" {
    fn timbre_ext_free_error(error: *mut c_char);
    fn timbre_ext_fused_adamw(
        params: *const RawTensor,
        grads: *const RawTensor,
        exp_avgs: *const RawTensor,
        exp_avg_sqs: *const RawTensor,
        state_steps: *const RawTensor,
        n: i64,
        lr: f64,
        beta1: f64,
        beta2: f64,
        weight_decay: f64,
        eps: f64,
        maximize: c_int,
        grad_scale: RawTensor,
        found_inf: RawTensor,
    ) -> *mut c_char;
    fn timbre_ext_amp_unscale(
        grads: *const RawTensor,
        n: i64,
        found_inf: RawTensor,
        inv_scale: RawTensor,
    ) -> *mut c_char;
    fn timbre_ext_foreach_norm(
        list: *const RawTensor,
        n: i64,
        out: *mut *mut C_tensor,
    ) -> *mut c_char;
    fn timbre_ext_set_cuda_autocast(enabled: c_int) -> c_int;
    fn timbre_ext_cuda_autocast() -> c_int;
}

pub mod cuda;
pub mod distributed;
pub mod profile;

/// Turns the shim's error string (NULL on success) into a `Result`, freeing it.
fn checked(error: *mut c_char, what: &str) -> Result<()> {
    if error.is_null() {
        return Ok(());
    }
    // SAFETY: the shim returns a NUL-terminated string from malloc, freed once here.
    let message = unsafe { CStr::from_ptr(error) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: `error` came from the shim and is freed once, after its text was copied.
    unsafe { timbre_ext_free_error(error) };
    bail!("{what}: {message}")
}

fn raw(list: &[&Tensor]) -> Vec<RawTensor> {
    list.iter().map(|t| t.as_ptr()).collect()
}

fn raw_optional(tensor: Option<&Tensor>) -> RawTensor {
    tensor.map_or(std::ptr::null(), Tensor::as_ptr)
}

/// AdamW's hyperparameters as the fused kernel takes them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdamWStep {
    /// Learning rate.
    pub lr: f64,
    /// Decay rate of the first-moment (mean) estimate, e.g. 0.9.
    pub beta1: f64,
    /// Decay rate of the second-moment (uncentred variance) estimate, e.g. 0.999.
    pub beta2: f64,
    /// Decoupled weight decay: each step scales the parameters by `1 - lr · weight_decay`.
    pub weight_decay: f64,
    /// Added to the square root of the second moment before dividing, for numerical stability.
    pub eps: f64,
    /// Ascend the objective instead of descending it.
    pub maximize: bool,
}

/// One step of `torch.optim.AdamW(fused=True)` (amsgrad off) in place, over tensors of one
/// device and dtype: each `state_steps[i]` (a float32 scalar on that device) counted up, the
/// fused kernel, and the count taken back where `found_inf` (a float32 scalar, GradScaler's) is
/// nonzero, in which case nothing else changes. `grad_scale`, when given, is the loss scale the
/// gradients still carry (the kernel divides by it).
// The arguments of torch's own `_fused_adamw_`, in its order.
#[expect(clippy::too_many_arguments)]
pub fn fused_adamw_(
    params: &[&Tensor],
    grads: &[&Tensor],
    exp_avgs: &[&Tensor],
    exp_avg_sqs: &[&Tensor],
    state_steps: &[&Tensor],
    hyper: AdamWStep,
    grad_scale: Option<&Tensor>,
    found_inf: Option<&Tensor>,
) -> Result<()> {
    let n = params.len();
    ensure!(
        [
            grads.len(),
            exp_avgs.len(),
            exp_avg_sqs.len(),
            state_steps.len()
        ] == [n; 4],
        "fused AdamW: lists of different lengths"
    );
    if n == 0 {
        return Ok(());
    }
    let lists = [params, grads, exp_avgs, exp_avg_sqs, state_steps].map(raw);
    // SAFETY: every pointer is a live tch tensor borrowed for the call; the shim copies them.
    let error = unsafe {
        timbre_ext_fused_adamw(
            lists[0].as_ptr(),
            lists[1].as_ptr(),
            lists[2].as_ptr(),
            lists[3].as_ptr(),
            lists[4].as_ptr(),
            n as i64,
            hyper.lr,
            hyper.beta1,
            hyper.beta2,
            hyper.weight_decay,
            hyper.eps,
            c_int::from(hyper.maximize),
            raw_optional(grad_scale),
            raw_optional(found_inf),
        )
    };
    checked(error, "fused AdamW")
}

/// `torch._amp_foreach_non_finite_check_and_unscale_`: every gradient multiplied by
/// `inv_scale` in place, `found_inf` set to 1.0 if any holds an inf or a NaN (both float32
/// scalars on the gradients' device).
pub fn amp_unscale_(grads: &[&Tensor], found_inf: &Tensor, inv_scale: &Tensor) -> Result<()> {
    if grads.is_empty() {
        return Ok(());
    }
    let list = raw(grads);
    // SAFETY: live tch tensors borrowed for the call.
    let error = unsafe {
        timbre_ext_amp_unscale(
            list.as_ptr(),
            list.len() as i64,
            found_inf.as_ptr(),
            inv_scale.as_ptr(),
        )
    };
    checked(error, "gradient unscale")
}

/// `torch._foreach_norm(list, 2)`: each tensor's L2 norm, from one multi-tensor kernel.
pub fn foreach_norm(list: &[&Tensor]) -> Result<Vec<Tensor>> {
    if list.is_empty() {
        return Ok(Vec::new());
    }
    let input = raw(list);
    let mut out: Vec<*mut C_tensor> = vec![std::ptr::null_mut(); list.len()];
    // SAFETY: `out` has room for one handle per input; the shim fills each with a new tensor.
    let error =
        unsafe { timbre_ext_foreach_norm(input.as_ptr(), input.len() as i64, out.as_mut_ptr()) };
    checked(error, "multi-tensor norm")?;
    // SAFETY: each handle is a fresh `at::Tensor` that tch now owns and frees.
    Ok(out
        .into_iter()
        .map(|t| unsafe { Tensor::from_ptr(t) })
        .collect())
}

/// Whether CUDA autocast (`tch::autocast`) is on in this thread.
pub fn cuda_autocast() -> bool {
    // SAFETY: reads a thread-local flag.
    unsafe { timbre_ext_cuda_autocast() != 0 }
}

/// Runs `f` with CUDA autocast off in this thread, for work that is already in the precision it
/// wants (a model cast whole to float16, which autocast would cast back and forth), and puts
/// the switch back as it was.
pub fn without_cuda_autocast<T>(f: impl FnOnce() -> T) -> T {
    struct Restore(c_int);
    impl Drop for Restore {
        fn drop(&mut self) {
            // SAFETY: sets a thread-local flag back.
            unsafe { timbre_ext_set_cuda_autocast(self.0) };
        }
    }
    // SAFETY: sets a thread-local flag.
    let _restore = Restore(unsafe { timbre_ext_set_cuda_autocast(0) });
    f()
}

/// Whether the CUDA-graph half of the shim is loaded (it still needs a CUDA device to use them).
pub fn has_cuda_graphs() -> bool {
    cuda::backend().has_graphs()
}

/// A captured CUDA graph (`at::cuda::CUDAGraph`) over its own private memory pool. Replaying
/// it reruns the captured kernels on the same memory: the caller writes new inputs into the
/// tensors the capture read (`copy_`) and reads the outputs from the tensors it returned.
/// Dropping it frees the graph and its pool (`reset`).
pub struct CudaGraph {
    raw: *mut c_void,
    fns: cuda::GraphFns,
}

// SAFETY: a CUDAGraph is not tied to the thread that captured it; replays are serialised by
// `&mut self`.
unsafe impl Send for CudaGraph {}

struct Capture<'a, T> {
    body: &'a mut dyn FnMut() -> Result<T>,
    output: Option<Result<T>>,
}

thread_local! {
    static CAPTURING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether this thread is inside [`CudaGraph::capture`]'s body (its warm-up runs or the capture
/// itself), where work that would capture or replay a graph of its own must run eagerly.
pub fn is_capturing() -> bool {
    CAPTURING.with(std::cell::Cell::get)
}

extern "C" fn run_body<T>(context: *mut c_void) -> c_int {
    // SAFETY: `context` is the `Capture` that `CudaGraph::capture` passes for this call.
    let capture = unsafe { &mut *(context as *mut Capture<'_, T>) };
    let was_capturing = CAPTURING.with(|c| c.replace(true));
    let result = catch_unwind(AssertUnwindSafe(|| (capture.body)()));
    CAPTURING.with(|c| c.set(was_capturing));
    let result = result.unwrap_or_else(|_| Err(anyhow::anyhow!("the captured code panicked")));
    let failed = result.is_err();
    capture.output = Some(result);
    c_int::from(failed)
}

impl CudaGraph {
    /// Runs `body` `warmup` times and then once under capture, as `torch.cuda.graph` does (on a
    /// side stream, after the device is idle; warm-up runs let cuDNN and cuBLAS pick and
    /// allocate before the capture; autocast's cast cache off throughout). The capture is
    /// thread-local: other threads may use the device meanwhile. Returns the graph and what the
    /// captured run returned.
    /// `body` must do the same work on the same tensors every time and never wait for the
    /// device (no reads of values to the host).
    pub fn capture<T>(
        device: Device,
        warmup: usize,
        mut body: impl FnMut() -> Result<T>,
    ) -> Result<(Self, T)> {
        let Device::Cuda(index) = device else {
            bail!("CUDA graphs need a CUDA device; asked for {device:?}");
        };
        let Some(fns) = cuda::graph_fns() else {
            bail!(
                "CUDA graphs are not loaded: {}",
                cuda::backend()
                    .problem
                    .as_deref()
                    .unwrap_or("libtorch_cuda or CUDA's headers were missing when this was built")
            );
        };
        ensure!(
            tch::Cuda::is_available() && (index as i64) < tch::Cuda::device_count(),
            "CUDA graphs need a CUDA device; this machine has no CUDA device {index}"
        );
        // SAFETY: a fresh graph, owned by the returned value.
        let raw = unsafe { (fns.new)() };
        let graph = Self { raw, fns };
        let mut capture = Capture {
            body: &mut body,
            output: None,
        };
        // SAFETY: `capture` outlives the call, and `run_body::<T>` reads it as `Capture<T>`.
        let error = unsafe {
            (fns.capture)(
                graph.raw,
                index as c_int,
                warmup as c_int,
                run_body::<T>,
                &mut capture as *mut Capture<'_, T> as *mut c_void,
            )
        };
        let output = capture.output.take();
        if let Some(Err(e)) = output {
            return Err(e.context("CUDA graph capture"));
        }
        checked(error, "CUDA graph capture")?;
        let output = output.expect("the capture ran the body");
        Ok((graph, output?))
    }

    /// Reruns the captured work on the current stream.
    pub fn replay(&mut self) -> Result<()> {
        // SAFETY: `raw` is a captured graph owned by self.
        checked(unsafe { (self.fns.replay)(self.raw) }, "CUDA graph replay")
    }
}

impl Drop for CudaGraph {
    fn drop(&mut self) {
        // SAFETY: `raw` came from this library's graph_new and is freed once.
        unsafe { (self.fns.free)(self.raw) }
    }
}

#[cfg(test)]
mod tests;
