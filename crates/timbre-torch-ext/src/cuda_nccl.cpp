// The NCCL group of the CUDA half (src/distributed.rs reaches it through src/cuda.rs):
// ProcessGroupNCCL lives in libtorch_cuda. It comes back as the c10d::Backend that
// distributed.cpp's collectives take. Built only where NCCL's header is found (the PyPI torch's
// nvidia-nccl wheel has it).

#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include "shim_error.h"

extern "C" {

// An NCCL group over the store (a `c10::intrusive_ptr<c10d::Store>*`) on CUDA device `device`;
// `out` gets a `c10::intrusive_ptr<c10d::Backend>*`.
char *timbre_cuda_nccl_new(void *store, int rank, int world, int64_t timeout_ms, int device,
                           void **out) {
  GUARDED({
    auto index = static_cast<c10::DeviceIndex>(device);
    c10::cuda::set_device(index);
    auto options = c10d::ProcessGroupNCCL::Options::create();
    options->timeout = std::chrono::milliseconds(timeout_ms);
    auto prefixed = c10::make_intrusive<c10d::PrefixStore>(
        "nccl", *static_cast<c10::intrusive_ptr<c10d::Store> *>(store));
    c10::intrusive_ptr<c10d::Backend> group =
        c10::make_intrusive<c10d::ProcessGroupNCCL>(prefixed, rank, world, options);
    group->setBoundDeviceId(at::Device(at::kCUDA, index));
    *out = new c10::intrusive_ptr<c10d::Backend>(group);
  })
}
}
