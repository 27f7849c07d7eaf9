// torch.distributed's c10d behind a C ABI (src/distributed.rs wraps it): the TCPStore
// rendezvous `init_process_group("env://")` makes, ProcessGroupGloo (libtorch_cpu exports it;
// its header needs Gloo's, vendored in third_party/gloo), and the collectives data-parallel
// training uses. ProcessGroupNCCL lives in libtorch_cuda, so its constructor is in the CUDA
// half (cuda_nccl.cpp); both come back here as a c10d::Backend.

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <chrono>
#include <sstream>
#include <thread>

#include "shim_error.h"

typedef at::Tensor *tensor;

using milliseconds = std::chrono::milliseconds;
using store_ptr = c10::intrusive_ptr<c10d::Store>;
using backend_ptr = c10::intrusive_ptr<c10d::Backend>;

static std::string joined_key(int rank) { return "timbre/joined/" + std::to_string(rank); }

// Every rank announces itself and waits for the others, so a rank that never comes is named
// (TCPStore's own wait for its workers only counts connections).
static void wait_for_ranks(c10d::Store &store, int rank, int world, milliseconds timeout) {
  store.set(joined_key(rank), std::vector<uint8_t>{1});
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<std::string> keys;
  for (int r = 0; r < world; r++) keys.push_back(joined_key(r));
  while (!store.check(keys)) {
    if (std::chrono::steady_clock::now() >= deadline) {
      std::ostringstream missing;
      int count = 0;
      for (int r = 0; r < world; r++) {
        if (!store.check({joined_key(r)})) missing << (count++ ? ", " : "") << r;
      }
      std::ostringstream message;
      message << (count == 1 ? "rank " : "ranks ") << missing.str() << " of " << world
              << " did not join within " << timeout.count() / 1000.0 << " s";
      throw std::runtime_error(message.str());
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
}

extern "C" {

// The rendezvous at host:port: rank 0 serves it unless `is_server` is 0 for every rank (an
// agent such as torchrun's serves it), the others connect. Returns once all `world` ranks have
// joined, or fails naming the ones that did not.
char *timbre_ext_store_new(const char *host, int port, int rank, int world, int64_t timeout_ms,
                           int is_server, void **out) {
  GUARDED({
    c10d::TCPStoreOptions options;
    options.port = static_cast<uint16_t>(port);
    options.isServer = is_server != 0;
    options.numWorkers = world;
    options.waitWorkers = false;
    options.timeout = milliseconds(timeout_ms);
    auto store = c10::make_intrusive<c10d::TCPStore>(host, options);
    wait_for_ranks(*store, rank, world, milliseconds(timeout_ms));
    *out = new store_ptr(store);
  })
}

void timbre_ext_store_free(void *store) { delete static_cast<store_ptr *>(store); }

// A Gloo group over the store. Its device binds `interface` when given (GLOO_SOCKET_IFNAME's
// role), else the loopback for a rendezvous on this machine, else the address this machine's
// hostname resolves to, as torch's default.
char *timbre_ext_gloo_new(void *store, int rank, int world, int64_t timeout_ms,
                          const char *interface, int loopback, void **out) {
  GUARDED({
    auto options = c10d::ProcessGroupGloo::Options::create(milliseconds(timeout_ms));
    if (interface != nullptr) {
      options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(interface));
    } else if (loopback != 0) {
      options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    } else {
      options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    }
    auto prefixed =
        c10::make_intrusive<c10d::PrefixStore>("gloo", *static_cast<store_ptr *>(store));
    backend_ptr group = c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, rank, world, options);
    *out = new backend_ptr(group);
  })
}

void timbre_ext_group_free(void *group) { delete static_cast<backend_ptr *>(group); }

// In place on every rank: the sum (op 0) or the maximum (op 1) of `t` over the group.
char *timbre_ext_group_allreduce(void *group, tensor t, int op, int64_t timeout_ms) {
  GUARDED({
    std::vector<at::Tensor> list{*t};
    c10d::AllreduceOptions options;
    options.reduceOp = op == 1 ? c10d::ReduceOp::MAX : c10d::ReduceOp::SUM;
    options.timeout = milliseconds(timeout_ms);
    (*static_cast<backend_ptr *>(group))->allreduce(list, options)->wait(milliseconds(timeout_ms));
  })
}

// In place on every rank: `root`'s `t`.
char *timbre_ext_group_broadcast(void *group, tensor t, int root, int64_t timeout_ms) {
  GUARDED({
    std::vector<at::Tensor> list{*t};
    c10d::BroadcastOptions options;
    options.rootRank = root;
    options.timeout = milliseconds(timeout_ms);
    (*static_cast<backend_ptr *>(group))->broadcast(list, options)->wait(milliseconds(timeout_ms));
  })
}

}  // extern "C"
