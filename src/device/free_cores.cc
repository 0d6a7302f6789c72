#include "device/free_cores.h"

#include <atomic>

#include "device/cpu_placement.h"

namespace ordo::device {
namespace {

std::atomic<int> host_devices_{1};

}  // namespace

void set_host_devices(int host_devices) { host_devices_.store(host_devices, std::memory_order_relaxed); }

int free_core_threads() {
  const int spare = usable_cpu_count() - host_devices_.load(std::memory_order_relaxed);
  return spare > 0 ? spare : 0;
}

// Serial for now: the pool of free-core threads is still to come (issue 14).
void run_blocks(int64_t num_blocks, void (*body)(void* context, int64_t block), void* context) {
  for (int64_t block = 0; block < num_blocks; ++block) body(context, block);
}

}  // namespace ordo::device
