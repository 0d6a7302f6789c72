// The protocol among one process's own devices, whole: the device status
// every waiter reads (comm/device_status.h), the groups' channels
// (local_groups.h) and the exchange (exchange.h), and how device news
// reaches all three. The in-process backend is this alone; the protocol
// among processes (processes_communicator.h) adds what crosses processes,
// the exchange's post among them.
//
//   LocalProtocol local(Topology::single_process(4));
//   local.groups().run(call);
//   local.tell({DeviceEvent::Kind::kFailed, GlobalOrdinal(3), "its thread died"});
//
// Locking: none of its own. The groups' locks come before the status's;
// the exchange has a lock of its own, never held with a group's.
#pragma once

#include "comm/communicator.h"
#include "comm/device_status.h"
#include "comm/protocol/exchange.h"
#include "comm/protocol/local_groups.h"

namespace ordo::comm {

class LocalProtocol {
 public:
  explicit LocalProtocol(const Topology& topology)
      : groups_(topology.world_size(), status_), exchange_(topology, status_) {}

  DeviceStatus& status() { return status_; }
  LocalGroups& groups() { return groups_; }
  Exchange& exchange() { return exchange_; }

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
  Exchange exchange_;  // host-side: meets apart from the groups
};

}  // namespace ordo::comm
