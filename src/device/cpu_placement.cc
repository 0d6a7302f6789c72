#include "device/cpu_placement.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <vector>

#include "core/config.h"

namespace ordo::device {
namespace {

// Read once, by the first thread that asks (the one starting the first
// runtime, before anything is pinned): pinned threads, and the workers they
// start, which inherit their affinity, must not shrink the set. Never
// destroyed: a worker still starting when the process exits reads it.
const std::vector<int>& allowed_cpus() {
  static const std::vector<int>& cpus = *new std::vector<int>([] {
    std::vector<int> ids;
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return ids;
    for (int id = 0; id < CPU_SETSIZE; ++id) {
      if (CPU_ISSET(id, &allowed)) ids.push_back(id);
    }
    return ids;
  }());
  return cpus;
}

// The CPU id the calling thread was pinned to alone, or -1.
thread_local int pinned_alone_to = -1;

std::atomic<bool> g_drivers_hand_off_gil{false};
// Unset until the first runtime decides.
std::atomic<int> g_binds{-1};

}  // namespace

bool binds_cpus(std::optional<bool> setting, bool drivers_hand_off_gil, int local_devices) {
  return setting.value_or(!drivers_hand_off_gil || local_devices <= 1);
}

void set_drivers_hand_off_gil(bool hand_off) { g_drivers_hand_off_gil.store(hand_off, std::memory_order_relaxed); }

void decide_cpu_binding(int local_devices) {
  g_binds.store(binds_cpus(config().cpu_bind, g_drivers_hand_off_gil.load(std::memory_order_relaxed), local_devices),
                std::memory_order_relaxed);
}

bool cpu_binding_enabled() {
  const int binds = g_binds.load(std::memory_order_relaxed);
  return binds < 0 ? config().cpu_bind.value_or(true) : binds == 1;
}

int usable_cpu_count() { return static_cast<int>(allowed_cpus().size()); }

int worker_cpu(int host_ordinal) { return host_ordinal; }

// With two CPUs per device, the driver traces the next step on its own CPU
// while the worker runs this one. Otherwise it shares its worker's CPU: a
// thread that submits a graph and then waits for it hands the CPU straight
// to its worker and back, where a wake-up on another CPU costs an
// inter-processor interrupt (15-20 us in a virtual machine), and the peers'
// devices keep the other CPUs.
int driver_cpu(int host_ordinal, int num_devices, int cpus) {
  return 2 * num_devices <= cpus ? num_devices + host_ordinal : worker_cpu(host_ordinal);
}

int current_cpu() {
  const std::vector<int>& cpus = allowed_cpus();
  const auto it = std::find(cpus.begin(), cpus.end(), sched_getcpu());
  return it == cpus.end() ? -1 : static_cast<int>(it - cpus.begin());
}

void pin_current_thread(int cpu) { pin_current_thread(std::vector<int>{cpu}); }

void pin_current_thread(const std::vector<int>& indices) {
  const std::vector<int>& cpus = allowed_cpus();
  if (!cpu_binding_enabled() || cpus.size() <= 1 || indices.empty()) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int index : indices) CPU_SET(cpus[static_cast<size_t>(index) % cpus.size()], &set);
  if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0) return;
  pinned_alone_to = CPU_COUNT(&set) == 1 ? cpus[static_cast<size_t>(indices[0]) % cpus.size()] : -1;
}

bool takes_turns_with(int cpu) {
  const std::vector<int>& cpus = allowed_cpus();
  if (cpu < 0 || cpus.empty()) return false;
  return cpus.size() == 1 || pinned_alone_to == cpus[static_cast<size_t>(cpu) % cpus.size()];
}

}  // namespace ordo::device
