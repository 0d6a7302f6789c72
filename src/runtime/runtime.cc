#include "runtime/runtime.h"

#include <atomic>
#include <mutex>
#include <new>

#include "comm/factory.h"
#include "core/config.h"
#include "device/cpu_placement.h"
#include "device/free_cores.h"
#include "ordo/error.h"
#include "runtime/trace_file.h"

namespace ordo::runtime {
namespace {

std::mutex g_lifecycle_mu;
std::unique_ptr<Runtime> g_runtime;           // guarded by g_lifecycle_mu
std::atomic<Runtime*> g_current{nullptr};     // what get() returns
uint64_t g_generation = 0;                    // guarded by g_lifecycle_mu
int g_forked_num_devices = 0;                 // in a forked child: the parent's count; guarded by g_lifecycle_mu
thread_local int t_current_device = 0;

void check_num_devices(int n, const char* source) {
  ORDO_ARG_CHECK(n >= 1 && n <= kMaxDevices, source, ": the number of devices must be in [1, ",
                 kMaxDevices, "], got ", n);
}

// Caller holds g_lifecycle_mu. num_devices 0: the configuration's
// ORDO_NUM_DEVICES, or in a forked child the parent's count.
void start_locked(int num_devices) {
  // Every ORDO_* variable is checked here, before anything starts: a bad
  // one read late would fail one device hundreds of steps in.
  const Config& config = load_config();
  const int n = num_devices > 0 ? num_devices : g_forked_num_devices > 0 ? g_forked_num_devices : config.num_devices;
  register_fork_handlers();
  // The backend is chosen anew at every start; MPI's world, once joined,
  // stays the process's job (comm/factory.h).
  g_runtime = std::make_unique<Runtime>(comm::open_world(comm::backend_from_env(), n), ++g_generation);
  g_current.store(g_runtime.get(), std::memory_order_release);
  start_env_trace();
}

}  // namespace

int num_devices_from_env() { return load_config().num_devices; }

Runtime::Runtime(comm::World world, uint64_t generation)
    : topology_(std::move(world.topology)), generation_(generation), communicator_(std::move(world.communicator)) {
  // Before any worker starts: the CPUs are read from this thread, not from
  // a pinned one.
  device::decide_cpu_binding(topology_.local_devices());
  if (device::cpu_binding_enabled()) device::usable_cpu_count();
  device::set_host_devices(topology_.host_devices());
  for (const LocalDevice local : LocalDevices(topology_.local_devices())) {
    const GlobalOrdinal ordinal = topology_.global_ordinal(local);
    const int host_ordinal = topology_.host_ordinal(ordinal);
    devices_.push_back(std::make_unique<device::Device>(local, ordinal, host_ordinal, *communicator_));
  }
}

Runtime::~Runtime() {
  // A device runs nothing after what it has queued now. A collective queued
  // on one device whose peers never queued it would otherwise keep shutdown
  // waiting for its timeout (minutes by default): each device is declared
  // gone once its worker has run its queue, and a peer still waiting for it
  // fails at once, naming it.
  for (const LocalDevice local : local_devices()) {
    tell_after_queue(local, [ordinal = ordinal_of(local)](comm::Communicator& communicator) {
      communicator.tell(
          {comm::DeviceEvent::Kind::kShutDown, ordinal, "the runtime shut down before it ran this collective"});
    });
  }
}

void Runtime::tell_after_queue(LocalDevice device, std::function<void(comm::Communicator&)> news) noexcept {
  try {
    devices_[device.slot()]->worker().submit([&communicator = *communicator_, news = std::move(news)]() noexcept {
      try {
        news(communicator);
      } catch (...) {
      }
    });
  } catch (...) {
  }
}

LocalDevice Runtime::checked_device(int index) const {
  ORDO_ARG_CHECK(index >= 0 && index < num_devices(), "device ", index, " does not exist: this ",
                 topology_.process_count() == 1 ? "runtime" : "process", " has ", num_devices(), " devices, 0 to ",
                 num_devices() - 1);
  return LocalDevice(index);
}

Runtime& get() {
  Runtime* current = g_current.load(std::memory_order_acquire);
  if (current != nullptr) return *current;
  std::lock_guard<std::mutex> lock(g_lifecycle_mu);
  if (!g_runtime) start_locked(0);
  return *g_runtime;
}

void forget_runtime_in_forked_child() {
  // Only this thread exists now; the lock may have been held by another.
  new (&g_lifecycle_mu) std::mutex();
  if (Runtime* parents = g_current.load(std::memory_order_relaxed)) g_forked_num_devices = parents->num_devices();
  g_current.store(nullptr, std::memory_order_release);
  // Leaked on purpose: destroying it would join worker threads that exist
  // only in the parent, and free what the parent's tensors still point at.
  (void)g_runtime.release();
}

void start(int num_devices) {
  check_num_devices(num_devices, "init");
  std::lock_guard<std::mutex> lock(g_lifecycle_mu);
  if (g_runtime) {
    ORDO_ARG_CHECK(g_runtime->num_devices() == num_devices, "init: the runtime already runs with ",
                   g_runtime->num_devices(), " devices; call shutdown() before init(", num_devices, ")");
    return;
  }
  start_locked(num_devices);
}

void stop() {
  std::lock_guard<std::mutex> lock(g_lifecycle_mu);
  if (!g_runtime) return;
  finish_env_trace(*g_runtime);
  g_current.store(nullptr, std::memory_order_release);
  // Destroying the devices runs what is queued and joins the workers.
  g_runtime.reset();
}

bool is_running() { return g_current.load(std::memory_order_acquire) != nullptr; }

LocalDevice thread_device() { return LocalDevice(t_current_device); }

void set_thread_device(LocalDevice device) { t_current_device = device.index(); }

LocalDevice resolve_device(int local_device) {
  Runtime& rt = get();
  ORDO_ARG_CHECK(local_device >= kCurrentDevice, "device ", local_device, " does not exist: this runtime has ",
                 rt.num_devices(), " devices, 0 to ", rt.num_devices() - 1, " (", kCurrentDevice,
                 " is the calling thread's device)");
  return rt.checked_device(local_device == kCurrentDevice ? t_current_device : local_device);
}

}  // namespace ordo::runtime
