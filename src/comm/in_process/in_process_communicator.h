// The in-process backend: devices are threads of this process sharing
// memory, so the whole protocol runs in memory: collectives in the
// groups' channels (protocol/local_groups.h), the exchange in meetings of
// payload copies (protocol/local_exchange.h), device news in the
// device status every waiter reads (comm/device_status.h). It owns the
// three and tells them of news.
//
//   InProcessCommunicator comm(2);
//   comm.run(call);  // on each device's worker, with that device's call
//
// Locking: none of its own. The groups' locks come before the status's; the exchange has a lock of its own (local_exchange.h),
// never held with a group's.
#pragma once

#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/device_status.h"
#include "comm/protocol/local_exchange.h"
#include "comm/protocol/local_groups.h"

namespace ordo::comm {

class InProcessCommunicator : public Communicator {
 public:
  explicit InProcessCommunicator(int world_size);

  int world_size() const override { return world_size_; }
  void run(const CollectiveCall& call) override { groups_.run(call); }
  void abandon(ir::OpKind op, const ir::CollectiveAttrs& attrs, GlobalOrdinal device,
               const std::string& reason) override {
    groups_.abandon(op, attrs, device, reason);
  }
  void mark_device_failed(GlobalOrdinal device, const std::string& reason) override;
  uint64_t absence_epoch(GlobalOrdinal device) override { return status_.absence_epoch(device); }
  void mark_device_absent(GlobalOrdinal device, const std::string& reason, uint64_t epoch) override;
  void clear_device_absent(GlobalOrdinal device) override { status_.clear_absent(device); }
  uint64_t interrupt(GlobalOrdinal device, const std::string& reason) override;
  void end_interrupt(GlobalOrdinal device, uint64_t id) override { status_.end_interrupt(device, id); }
  bool out_of_step() override;
  std::optional<std::string> start_afresh(const std::function<void()>& prepare) override;
  std::vector<std::string> exchange(const ExchangeCall& call) override { return exchange_.exchange(call); }

 private:
  const int world_size_;
  DeviceStatus status_;
  LocalGroups groups_;
  LocalExchange exchange_;  // host-side: meets apart from the groups
};

}  // namespace ordo::comm
