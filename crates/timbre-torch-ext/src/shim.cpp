// The libtorch calls tch does not bind, behind a C ABI (src/lib.rs wraps them). Tensors cross
// as tch's handles (`at::Tensor*`); a returned tensor is a `new at::Tensor` that tch frees.
// Every function catches C++ exceptions and returns their message as a malloc'd string (NULL on
// success) that the caller frees with timbre_ext_free_error.

#include <ATen/autocast_mode.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/_amp_foreach_non_finite_check_and_unscale.h>
#include <ATen/ops/_foreach_add.h>
#include <ATen/ops/_foreach_norm.h>
#include <ATen/ops/_foreach_sub.h>
#include <ATen/ops/_fused_adamw.h>
#include <ATen/record_function.h>
#include <torch/csrc/autograd/profiler_kineto.h>

#ifdef TIMBRE_TORCH_CUDA
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

typedef at::Tensor *tensor;

static char *error_text(const std::string &message) {
  char *text = static_cast<char *>(std::malloc(message.size() + 1));
  if (text != nullptr) std::memcpy(text, message.c_str(), message.size() + 1);
  return text;
}

#define GUARDED(body)                                      \
  try {                                                    \
    body;                                                  \
    return nullptr;                                        \
  } catch (const std::exception &e) {                      \
    return error_text(e.what());                           \
  } catch (...) {                                          \
    return error_text("unknown C++ exception in libtorch"); \
  }

static std::vector<at::Tensor> tensors(const tensor *list, int64_t n) {
  std::vector<at::Tensor> out;
  out.reserve(n);
  for (int64_t i = 0; i < n; i++) out.push_back(*list[i]);
  return out;
}

static std::optional<at::Tensor> optional_tensor(tensor t) {
  if (t == nullptr) return std::nullopt;
  return *t;
}

extern "C" {

void timbre_ext_free_error(char *error) { std::free(error); }

// torch.optim.AdamW(fused=True)'s step over one device's and dtype's tensors
// (torch/optim/adam.py `_fused_adam`): the steps counted up, the fused kernel, and the steps
// counted back where `found_inf` is set (the kernel then leaves everything else as it was).
char *timbre_ext_fused_adamw(const tensor *params, const tensor *grads, const tensor *exp_avgs,
                             const tensor *exp_avg_sqs, const tensor *state_steps, int64_t n,
                             double lr, double beta1, double beta2, double weight_decay,
                             double eps, int maximize, tensor grad_scale, tensor found_inf) {
  GUARDED({
    auto steps = tensors(state_steps, n);
    at::_foreach_add_(steps, 1);
    at::_fused_adamw_(tensors(params, n), tensors(grads, n), tensors(exp_avgs, n),
                      tensors(exp_avg_sqs, n), {}, steps, lr, beta1, beta2, weight_decay, eps,
                      /*amsgrad=*/false, maximize != 0, optional_tensor(grad_scale),
                      optional_tensor(found_inf));
    if (found_inf != nullptr) {
      std::vector<at::Tensor> found(n, *found_inf);
      at::_foreach_sub_(steps, found);
    }
  })
}

// GradScaler.unscale_'s kernel: every gradient times `inv_scale`, `found_inf` set to 1 where
// one holds an inf or a NaN.
char *timbre_ext_amp_unscale(const tensor *grads, int64_t n, tensor found_inf,
                             tensor inv_scale) {
  GUARDED({
    auto list = tensors(grads, n);
    at::_amp_foreach_non_finite_check_and_unscale_(list, *found_inf, *inv_scale);
  })
}

// Each tensor's L2 norm, in one multi-tensor kernel; `out` gets n new tensors.
char *timbre_ext_foreach_norm(const tensor *list, int64_t n, tensor *out) {
  GUARDED({
    auto norms = at::_foreach_norm(tensors(list, n), 2);
    for (int64_t i = 0; i < n; i++) out[i] = new at::Tensor(norms[i]);
  })
}

// CUDA autocast's switch for this thread (tch sets it but does not read it); returns the
// previous state.
int timbre_ext_set_cuda_autocast(int enabled) {
  bool previous = at::autocast::is_autocast_enabled(at::kCUDA);
  at::autocast::set_autocast_enabled(at::kCUDA, enabled != 0);
  return previous ? 1 : 0;
}

int timbre_ext_cuda_autocast() { return at::autocast::is_autocast_enabled(at::kCUDA) ? 1 : 0; }

int timbre_ext_has_cuda_graphs() {
#ifdef TIMBRE_TORCH_CUDA
  return 1;
#else
  return 0;
#endif
}

// torch.profiler.profile's start, on this process: CPU ops and, with `cuda`, the device's
// kernels, copies and runtime calls (through CUPTI), as kineto records them.
char *timbre_ext_profiler_start(int cuda) {
  GUARDED({
    using torch::profiler::impl::ActivityType;
    torch::profiler::impl::ProfilerConfig config(torch::profiler::impl::ProfilerState::KINETO);
    std::set<ActivityType> activities{ActivityType::CPU};
    if (cuda != 0) activities.insert(ActivityType::CUDA);
    torch::autograd::profiler::prepareProfiler(config, activities);
    torch::autograd::profiler::enableProfiler(config, activities);
  })
}

// Stops the profiler and writes what it recorded as a Chrome trace (JSON) to `path` (NULL:
// discards it).
char *timbre_ext_profiler_stop(const char *path) {
  GUARDED({
    auto result = torch::autograd::profiler::disableProfiler();
    if (!result) return error_text("the profiler was not running");
    if (path != nullptr) result->save(path);
  })
}

// A named range in the profile (torch.profiler.record_function): begun here, ended by
// timbre_ext_range_end on the same thread. Costs one allocation when no profiler runs.
void *timbre_ext_range_begin(const char *name) {
  auto *range = new at::RecordFunction(at::RecordScope::USER_SCOPE);
  if (range->isActive()) range->before(std::string(name));
  return range;
}

void timbre_ext_range_end(void *range) {
  auto *record = static_cast<at::RecordFunction *>(range);
  record->end();
  delete record;
}

#ifdef TIMBRE_TORCH_CUDA
struct timbre_graph {
  at::cuda::CUDAGraph graph;
};

void *timbre_ext_graph_new() { return new timbre_graph(); }

void timbre_ext_graph_free(void *graph) { delete static_cast<timbre_graph *>(graph); }

// Puts the stream that was current back when the capture ends, however it ends. (Not
// c10::cuda::CUDAStreamGuard: its inline code calls the CUDA runtime directly, which would make
// this library need libcudart, which only libtorch_cuda's own run path finds.)
struct restore_stream {
  c10::cuda::CUDAStream previous;
  ~restore_stream() { c10::cuda::setCurrentCUDAStream(previous); }
};

// Autocast's cache of cast weights off for the capture, and back as it was after (torch's rule
// for graphs: `autocast(cache_enabled=False)`). A cast cached in a warm-up run lives outside the
// graph's pool, and the cache frees it when the autocast region ends, under the graph's feet.
struct without_autocast_cache {
  bool previous = at::autocast::is_autocast_cache_enabled();
  without_autocast_cache() { at::autocast::set_autocast_cache_enabled(false); }
  ~without_autocast_cache() { at::autocast::set_autocast_cache_enabled(previous); }
};

// As torch.cuda.graph does: wait for the device, run `body` `warmup` times and then once under
// capture, all on a side stream from the pool, the capture into the graph's private memory
// pool. `body` returns nonzero on failure; the capture is then ended and dropped.
char *timbre_ext_graph_capture(void *graph, int device, int warmup, int (*body)(void *),
                               void *context) {
  GUARDED({
    auto &g = static_cast<timbre_graph *>(graph)->graph;
    auto index = static_cast<c10::DeviceIndex>(device);
    c10::cuda::set_device(index);
    c10::cuda::device_synchronize();
    restore_stream restore{c10::cuda::getCurrentCUDAStream(index)};
    without_autocast_cache no_cache;
    c10::cuda::setCurrentCUDAStream(c10::cuda::getStreamFromPool(false, index));
    for (int i = 0; i < warmup; i++) {
      if (body(context) != 0) return error_text("the warm-up run before the capture failed");
    }
    c10::cuda::device_synchronize();
    // Thread-local, not torch's default global mode: a conversion job on another thread may
    // use the device while a live stream captures, and global mode would fail its calls.
    g.capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
    int failed = body(context);
    try {
      g.capture_end();
    } catch (...) {
      if (failed == 0) throw;
    }
    if (failed != 0) {
      g.reset();
      return error_text("the captured run failed");
    }
  })
}

char *timbre_ext_graph_replay(void *graph) {
  GUARDED(static_cast<timbre_graph *>(graph)->graph.replay())
}
#else
void *timbre_ext_graph_new() { return nullptr; }
void timbre_ext_graph_free(void *) {}
char *timbre_ext_graph_capture(void *, int, int, int (*)(void *), void *) {
  return error_text("this build has no CUDA graphs: no CUDA headers or libtorch_cuda");
}
char *timbre_ext_graph_replay(void *) {
  return error_text("this build has no CUDA graphs: no CUDA headers or libtorch_cuda");
}
#endif
}
