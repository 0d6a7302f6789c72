// A device of this process: its two numbers (core/device_numbers.h) and a
// worker that runs its graphs in order, pinned by the device's position among its host's
// devices (the host's processes share its CPUs).
//
// Locking: error_mu guards failed_graph_, which the worker sets when a
// graph fails and the next mark_step of the device takes (and clears).
#pragma once

#include <mutex>
#include <optional>

#include "core/device_numbers.h"
#include "device/cpu_placement.h"
#include "device/device_data.h"
#include "device/worker.h"

namespace ordo::comm {
class Communicator;
}

namespace ordo::device {

// Cache-line aligned, like DeviceGraph: devices are driven by different
// threads, and a neighbour's writes must not evict this one's worker queue.
class alignas(64) Device {
 public:
  // communicator outlives the device.
  Device(LocalDevice local, GlobalOrdinal ordinal, int host_ordinal, comm::Communicator& communicator)
      : local_(local), ordinal_(ordinal), communicator_(communicator), worker_(worker_cpu(host_ordinal)) {}

  LocalDevice local() const { return local_; }
  GlobalOrdinal ordinal() const { return ordinal_; }
  Worker& worker() { return worker_; }
  comm::Communicator& communicator() { return communicator_; }

  // Keeps the first failure until it is taken.
  void record_failure(const Failure& failure);
  // The recorded failure, cleared.
  std::optional<Failure> take_failure();

 private:
  const LocalDevice local_;
  const GlobalOrdinal ordinal_;
  comm::Communicator& communicator_;
  std::mutex error_mu_;
  std::optional<Failure> failed_graph_;
  Worker worker_;
};

}  // namespace ordo::device
