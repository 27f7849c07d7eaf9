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


#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

typedef at::Tensor *tensor;

#include "shim_error.h"

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

}
