// Where every device of the job is. The world is every device of every
// process; a process drives its own devices (threads), and processes sit
// on hosts. A device is named two ways:
//   - its global ordinal (GlobalOrdinal), 0 .. world_size-1, by process
//     then index: what collectives, replica groups, fingerprints and
//     messages speak;
//   - its index in its process (LocalDevice), 0 .. local devices-1: what
//     this process's per-device state (workers, graphs, Python's `ordo:N`)
//     is indexed by.
// Two types (core/device_numbers.h), and the topology is where one becomes
// the other.
// torch_xla's "local ordinal" counts the devices of a host instead: the
// process's rank among the host's processes times the devices a process
// has, plus the index (host_ordinal).
//
//   Topology t = Topology::single_process(4);      // the embedded default
//   Topology m(2, /*process=*/1, {0, 0, 1, 1});     // 4 processes on 2 hosts
//   m.world_size();                                 // 8
//   m.global_ordinal(LocalDevice(1));               // 3: process 1's device 1
//   m.host_ordinal(GlobalOrdinal(5));               // 1: host 1's second device
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/device_numbers.h"

namespace ordo::comm {

struct DevicePlace {
  GlobalOrdinal ordinal;
  int process;
  LocalDevice local;  // its index in its process
  int host;
};

class Topology {
 public:
  // One process on one host with `devices` devices.
  static Topology single_process(int devices);
  // Every process has devices_per_process devices; process p runs on host
  // host_of_process[p] (host numbers are 0 .. hosts-1, in order of first
  // appearance); this process is `process`. Throws InvalidArgument for a
  // layout that is not one.
  Topology(int devices_per_process, int process, std::vector<int> host_of_process);

  int world_size() const { return static_cast<int>(places_.size()); }
  int process() const { return process_; }
  int process_count() const { return static_cast<int>(host_of_process_.size()); }
  int host() const { return host_of_process_[static_cast<size_t>(process_)]; }
  int host_count() const { return host_count_; }
  // The devices of this process (every process has as many).
  int local_devices() const { return devices_per_process_; }

  // A device of this process, as a global ordinal.
  GlobalOrdinal global_ordinal(LocalDevice device) const {
    return GlobalOrdinal(process_ * devices_per_process_ + device.index());
  }
  // The device of this process with a global ordinal; nothing if another
  // process drives it.
  std::optional<LocalDevice> local_device(GlobalOrdinal ordinal) const;
  bool is_local(GlobalOrdinal ordinal) const { return local_device(ordinal).has_value(); }
  // Where a device is; ordinal must be in the world.
  const DevicePlace& place(GlobalOrdinal ordinal) const { return places_[ordinal.slot()]; }
  // The device's position among the devices of its host (torch_xla's
  // local ordinal): CPUs are shared by a host's processes.
  int host_ordinal(GlobalOrdinal ordinal) const;
  // The devices of this process's host.
  int host_devices() const;

  // "8 devices: 4 processes x 2 devices on 2 hosts", for messages.
  std::string describe() const;

 private:
  int devices_per_process_;
  int process_;
  std::vector<int> host_of_process_;
  int host_count_ = 0;
  std::vector<DevicePlace> places_;  // by global ordinal
};

}  // namespace ordo::comm
