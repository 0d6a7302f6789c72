// The protocol among one process's own devices, whole: the device status
// every waiter reads (comm/device_status.h), the groups' channels
// (local_groups.h) and the exchange's meetings (local_exchange.h), and
// how device news reaches all three. The in-process backend is this
// alone; the protocol among processes (processes_communicator.h) adds
// what crosses processes.
//
//   LocalProtocol local(world_size);
//   local.groups().run(call);
//   local.tell({DeviceEvent::Kind::kFailed, GlobalOrdinal(3), "its thread died"});
//
// Locking: none of its own. The groups' locks come before the status's;
// the exchange has a lock of its own, never held with a group's.
#pragma once

#include "comm/communicator.h"
#include "comm/device_status.h"
#include "comm/protocol/local_exchange.h"
#include "comm/protocol/local_groups.h"

namespace ordo::comm {

class LocalProtocol {
 public:
  explicit LocalProtocol(int world_size) : groups_(world_size, status_), exchange_(world_size, status_) {}

  DeviceStatus& status() { return status_; }
  LocalGroups& groups() { return groups_; }
  LocalExchange& exchange() { return exchange_; }

  // The news, as every waiter of this process sees it (Communicator::tell).
  uint64_t tell(const DeviceEvent& event);
  // A collective among these devices failed or was abandoned, or an
  // exchange round is still held.
  bool had_failures() { return groups_.had_failures() || exchange_.unsettled(); }
  // Forgets every status, failure and number (Communicator::start_afresh).
  void start_afresh(int world_size);

 private:
  DeviceStatus status_;
  LocalGroups groups_;
  LocalExchange exchange_;  // host-side: meets apart from the groups
};

}  // namespace ordo::comm
