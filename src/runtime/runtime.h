// The process-wide runtime: the topology, the communicator it chose, and
// per device of this process (by its index in the process) its Device
// (worker). Started on first use or by ordo::init; the layers above keep
// their per-device state beside it (lazy::GraphTable), and ordo::shutdown
// stops them in order (api/lifecycle.cc).
//
// Locking: starting and stopping are serialized by a lifecycle mutex (a
// leaf but for the runtime's own construction and destruction); stop()
// must not race with other calls into ordo (documented in the public
// header). Everything else reaches a started runtime lock-free.
#pragma once

#include <memory>
#include <functional>
#include <vector>

#include "comm/communicator.h"
#include "comm/factory.h"
#include "comm/topology.h"
#include "core/device_numbers.h"
#include "device/device.h"

namespace ordo::runtime {

class Runtime {
 public:
  // Drives the devices of this process in world (its topology and the
  // communicator that serves it).
  Runtime(comm::World world, uint64_t generation);
  // Runs what every device has queued, then joins the workers (see the .cc).
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  const comm::Topology& topology() const { return topology_; }
  // The devices of this process.
  int num_devices() const { return static_cast<int>(devices_.size()); }
  LocalDevices local_devices() const { return LocalDevices(num_devices()); }
  uint64_t generation() const { return generation_; }
  // A device index from a caller (the public API's ints): the device, or
  // InvalidArgument for an index that is not one of this process's devices.
  LocalDevice checked_device(int index) const;
  device::Device& device(LocalDevice device) { return *devices_[device.slot()]; }
  // The one place a device's two numbers meet (comm/topology.h).
  GlobalOrdinal ordinal_of(LocalDevice device) const { return topology_.global_ordinal(device); }
  comm::Communicator& communicator() { return *communicator_; }
  // Gives the communicator news of device on its worker, after what is
  // queued there (what it queued, it will join). Never throws: out of
  // memory, the news is lost and its peers wait for their timeout, as
  // they would without it.
  void tell_after_queue(LocalDevice device, std::function<void(comm::Communicator&)> news) noexcept;

 private:
  const comm::Topology topology_;
  const uint64_t generation_;
  std::unique_ptr<comm::Communicator> communicator_;  // outlives the devices
  std::vector<std::unique_ptr<device::Device>> devices_;
};

// The running runtime, started from ORDO_NUM_DEVICES if needed.
Runtime& get();
// The devices this process drives by default: ORDO_NUM_DEVICES, 4 when
// unset. Loads the configuration (core/config.h): InvalidArgument for any
// bad ORDO_* variable.
int num_devices_from_env();
// Starts a runtime of num_devices devices unless one runs; one that runs
// with another count is an InvalidArgument (ordo::init's rules). Every
// start loads the configuration first (core/config.h: load_config).
void start(int num_devices);
// Stops the running runtime, if any: runs what its devices queued, joins
// their workers and frees it.
void stop();
bool is_running();
// The calling thread's current device (0 until set); set_thread_device
// takes a device already checked.
LocalDevice thread_device();
void set_thread_device(LocalDevice device);
// A device argument of the public API (an index in this process):
// kCurrentDevice means the calling thread's current device; any other
// that does not exist is an InvalidArgument.
inline constexpr int kCurrentDevice = -1;
LocalDevice resolve_device(int local_device);

// pthread_atfork handlers of the runtime, the buffer pool and the timeouts,
// registered once, when the first runtime starts or earlier by a layer
// above whose own handlers must come after them (see fork.cc).
void register_fork_handlers();
// In a forked child: no runtime runs; the parent's is left alone (its
// threads are not there to be joined). The next use or init() starts a
// fresh one, by default with as many devices as the parent's had.
void forget_runtime_in_forked_child();

}  // namespace ordo::runtime
