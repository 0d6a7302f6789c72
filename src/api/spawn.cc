// ordo::spawn and the binding of driver threads to devices.
#include <exception>
#include <vector>

#include "device/cpu_placement.h"
#include "ordo/runtime.h"
#include "runtime/runtime.h"
#include "api/spawned_devices.h"

namespace ordo {

void bind_thread_to_device(int device) {
  runtime::Runtime& rt = runtime::get();
  const comm::Topology& topology = rt.topology();
  // The host's processes share its CPUs: placed by the device's position
  // among the host's devices.
  const int host_ordinal = topology.host_ordinal(rt.global_ordinal(runtime::resolve_device(device)));
  device::pin_current_thread(
      device::driver_cpu(host_ordinal, topology.host_devices(), device::usable_cpu_count()));
}

void spawn(const std::function<void(int)>& fn, int count) {
  // fn outlives the threads: finish() joins them all. It is given the
  // device's global ordinal (its index in this process plus the ordinals
  // of the processes before).
  const int first_ordinal = get_ordinal(0);
  api::SpawnedDevices devices([&fn, first_ordinal](int index) { fn(first_ordinal + index); },
                              count < 0 ? num_devices() : count);
  const std::vector<api::SpawnedOutcome> outcomes = devices.finish();
  const int first = api::first_failure(outcomes);
  if (first >= 0) std::rethrow_exception(outcomes[first].error);
}

}  // namespace ordo
