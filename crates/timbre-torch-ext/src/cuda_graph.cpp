// The CUDA half of the shim (src/lib.rs's `cuda` module loads it): at::cuda::CUDAGraph behind a
// C ABI. Built by build.rs as a shared library of its own, linked against libtorch_cuda, and
// embedded in the Rust library: the binaries link only libtorch's CPU libraries, so a package
// without the CUDA runtime starts, and this library is loaded after libtorch_cuda, when a CUDA
// runtime is found at start.

#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>

#include "shim_error.h"

extern "C" {

struct timbre_graph {
  at::cuda::CUDAGraph graph;
};

void *timbre_cuda_graph_new() { return new timbre_graph(); }

void timbre_cuda_graph_free(void *graph) { delete static_cast<timbre_graph *>(graph); }

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
char *timbre_cuda_graph_capture(void *graph, int device, int warmup, int (*body)(void *),
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

char *timbre_cuda_graph_replay(void *graph) {
  GUARDED(static_cast<timbre_graph *>(graph)->graph.replay())
}
}
