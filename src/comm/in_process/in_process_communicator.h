// The in-process backend: devices are threads of this process sharing
// memory. Participants meet at a rendezvous, check that they brought the
// same op, then each does its share of the data movement (no thread per op,
// no copy beyond what the op needs), and wait until every share is done so
// that no input is freed while a peer still reads it.
#pragma once

#include <map>
#include <vector>

#include "comm/communicator.h"
#include "comm/in_process/rendezvous.h"

namespace ordo::comm {

class InProcessCommunicator : public Communicator {
 public:
  explicit InProcessCommunicator(int world_size);

  int world_size() const override { return world_size_; }
  void run(const CollectiveCall& call) override;
  void abandon(ir::OpKind op, const ir::CollectiveAttrs& attrs, int device,
               const std::string& reason) override;
  void mark_device_failed(int device, const std::string& reason) override;

 private:
  struct Seat {
    std::shared_ptr<Rendezvous> rendezvous;
    size_t rank;
  };
  // Joins the next collective of device's group. Only device's worker calls
  // this, so its sequence counters need no lock.
  Seat take_seat(const ir::CollectiveAttrs& attrs, int device);

  const int world_size_;
  RendezvousTable table_;
  // Per device: the next sequence number of each group it belongs to.
  std::vector<std::map<std::vector<int>, int64_t>> next_sequence_;
};

}  // namespace ordo::comm
