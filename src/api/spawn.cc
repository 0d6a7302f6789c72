// ordo::spawn and the binding of driver threads to devices.
#include <exception>
#include <vector>

#include "device/cpu_placement.h"
#include "ordo/runtime.h"
#include "runtime/runtime.h"
#include "api/spawned_devices.h"

namespace ordo {

void bind_thread_to_device(int local_device) {
  runtime::Runtime& rt = runtime::get();
  const comm::Topology& topology = rt.topology();
  // The host's processes share its CPUs: placed by the device's position
  // among the host's devices.
  const int host_ordinal = topology.host_ordinal(rt.ordinal_of(runtime::resolve_device(local_device)));
  device::pin_current_thread(
      device::driver_cpu(host_ordinal, topology.host_devices(), device::usable_cpu_count()));
}

void set_drivers_hand_off_gil(bool hand_off) { device::set_drivers_hand_off_gil(hand_off); }

void spawn(const std::function<void(int)>& fn, int count) {
  // fn and the topology outlive the threads: finish() joins them all. fn
  // is given the device's global ordinal, by the topology as the spawn
  // found it (a copy: another thread may shut the runtime down meanwhile).
  const comm::Topology topology = runtime::get().topology();
  const auto run = [&fn, &topology](int index) { fn(topology.global_ordinal(LocalDevice(index)).value()); };
  api::SpawnedDevices devices(run,
                              count < 0 ? num_devices() : count);
  const std::vector<api::SpawnedOutcome> outcomes = devices.finish();
  const int first = api::first_failure(outcomes);
  if (first >= 0) std::rethrow_exception(outcomes[first].error);
}

}  // namespace ordo
