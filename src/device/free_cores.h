// Kernels use the CPUs that no device's worker is pinned to. A large op is
// cut into blocks whose number and bounds depend only on the op's shape,
// never on how many threads there are, and every block writes its own part
// of the output (or its own partial result, combined afterwards in block
// order): so the result is bitwise the same whether the blocks run on one
// thread or on several.
//
//   device::run_blocks(num_blocks, [&](int64_t block) { work on block });
//
// The free cores of a host are its usable CPUs minus its devices (the
// workers are pinned to the first ones: cpu_placement.h); with a device on
// every core there are none and every block runs on the calling thread.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

namespace ordo::device {

// Threads a kernel may use besides its calling worker (0 when every core
// of the host has a device, or binding is off and the host has no spare
// CPU), at most ORDO_KERNEL_THREADS - 1.
int free_core_threads();

// Sets how many devices this host runs (the runtime does, when it starts):
// the free cores are the host's usable CPUs beyond them. Takes the
// configuration's ORDO_KERNEL_THREADS then (core/config.h).
void set_host_devices(int host_devices);

// Marks the calling thread, while it lives, as running a task of the
// device whose worker is pinned to cpu (-1: none). That worker idles
// meanwhile (its task runs here: the worker thread itself, or a thread
// that waits for the device and helps, maybe from a free core), so the
// blocks of that task may run on its CPU as well as on the free cores,
// never on another device's.
class KernelHome {
 public:
  explicit KernelHome(int cpu);
  ~KernelHome();
  KernelHome(const KernelHome&) = delete;
  KernelHome& operator=(const KernelHome&) = delete;

 private:
  const int previous_;
};

// Runs body(context, block) for every block in [0, num_blocks), on the
// calling thread and on free-core threads, in any order and possibly
// concurrently; returns when every block has run. If a block throws, the
// remaining blocks may be skipped and the first exception is rethrown once
// every running block has ended. A call from inside a block, or of one
// block, runs inline. Threads of the pool are pinned to the free CPUs
// (those after the host's devices' workers) unless ORDO_CPU_BIND=none.
void run_blocks(int64_t num_blocks, void (*body)(void* context, int64_t block), void* context);

template <typename Body>
void run_blocks(int64_t num_blocks, Body&& body) {
  run_blocks(
      num_blocks, [](void* context, int64_t block) { (*static_cast<std::remove_reference_t<Body>*>(context))(block); },
      const_cast<void*>(static_cast<const void*>(&body)));
}

}  // namespace ordo::device
