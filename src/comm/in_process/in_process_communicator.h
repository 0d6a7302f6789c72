// The in-process backend: devices are threads of this process sharing
// memory, so the whole protocol runs in memory (protocol/local_protocol.h):
// collectives in the groups' channels, the exchange by notes from inbox to
// inbox, device news in the device status every waiter reads.
//
//   InProcessCommunicator comm(2);
//   comm.run(call);  // on each device's worker, with that device's call
//
// Locking: LocalProtocol's.
#pragma once

#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/protocol/local_protocol.h"

namespace ordo::comm {

class InProcessCommunicator : public Communicator {
 public:
  explicit InProcessCommunicator(int world_size) : world_size_(world_size), local_(Topology::single_process(world_size)) {}

  int world_size() const override { return world_size_; }
  void run(const CollectiveCall& call) override { local_.groups().run(call); }
  void abandon(ir::OpKind op, const ir::CollectiveAttrs& attrs, GlobalOrdinal device,
               const std::string& reason) override {
    local_.groups().abandon(op, attrs, device, reason);
  }
  uint64_t tell(const DeviceEvent& event) override { return local_.tell(event); }
  uint64_t absence_epoch(GlobalOrdinal device) override { return local_.status().absence_epoch(device); }
  bool out_of_step() override;
  std::optional<std::string> start_afresh(const std::function<void()>& prepare) override;
  std::vector<std::string> exchange(const ExchangeCall& call) override { return local_.exchange().exchange(call); }

 private:
  const int world_size_;
  LocalProtocol local_;
};

}  // namespace ordo::comm
