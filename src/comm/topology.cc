#include "comm/topology.h"

#include <algorithm>

#include "ordo/error.h"

namespace ordo::comm {

Topology Topology::single_process(int devices) { return Topology(devices, 0, {0}); }

Topology::Topology(int devices_per_process, int process, std::vector<int> host_of_process)
    : devices_per_process_(devices_per_process), process_(process), host_of_process_(std::move(host_of_process)) {
  const int processes = static_cast<int>(host_of_process_.size());
  ORDO_ARG_CHECK(devices_per_process >= 1, "topology: a process needs at least one device, got ",
                 devices_per_process);
  ORDO_ARG_CHECK(processes >= 1 && process >= 0 && process < processes, "topology: process ", process,
                 " is not one of the ", processes, " processes");
  ORDO_ARG_CHECK(static_cast<int64_t>(processes) * devices_per_process <= (int64_t{1} << 30),
                 "topology: ", processes, " processes x ", devices_per_process, " devices is too large a world");
  for (int p = 0; p < processes; ++p) {
    const int h = host_of_process_[static_cast<size_t>(p)];
    ORDO_ARG_CHECK(h >= 0 && h <= host_count_, "topology: process ", p, " is on host ", h,
                   "; hosts are numbered in order of first appearance (next would be ", host_count_, ")");
    host_count_ = std::max(host_count_, h + 1);
    for (int index = 0; index < devices_per_process; ++index) {
      places_.push_back({GlobalOrdinal(p * devices_per_process + index), p, LocalDevice(index), h});
    }
  }
}

std::optional<LocalDevice> Topology::local_device(GlobalOrdinal ordinal) const {
  const int index = ordinal.value() - process_ * devices_per_process_;
  if (index < 0 || index >= devices_per_process_) return std::nullopt;
  return LocalDevice(index);
}

int Topology::host_ordinal(GlobalOrdinal ordinal) const {
  const DevicePlace& device = place(ordinal);
  int earlier_processes = 0;  // of the same host
  for (int p = 0; p < device.process; ++p) earlier_processes += host_of_process_[static_cast<size_t>(p)] == device.host;
  return earlier_processes * devices_per_process_ + device.local.index();
}

int Topology::host_devices() const {
  return static_cast<int>(std::count(host_of_process_.begin(), host_of_process_.end(), host())) *
         devices_per_process_;
}

std::string Topology::describe() const {
  if (process_count() == 1) return str_cat(world_size(), " devices in one process");
  return str_cat(world_size(), " devices: ", process_count(), " processes x ", devices_per_process_,
                 " devices on ", host_count_, host_count_ == 1 ? " host" : " hosts");
}

}  // namespace ordo::comm
