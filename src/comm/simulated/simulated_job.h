// A whole simulated job in this process: one protocol communicator
// (protocol/processes_communicator.h) per simulated process, over a
// SimNetwork (sim_network.h), behind one Communicator that sends each call
// to the process that drives its device, as each process of an MPI job
// calls its own. Tests drive it as they drive the in-process backend (the
// conformance suites), or fault by fault (the schedule sweep).
//
//   SimulatedJob job(/*processes=*/3, /*devices_per_process=*/2, Schedule::from_seed(7, 3, Faults::kAll));
//   job.run(call_of_device_4);        // process 2's communicator runs it
//   job.network().dead(1);            // did process 1 die (the schedule's)?
//
// Like the MPI backend it cannot start afresh: the processes share the
// collectives' numbering.
//
// Locking: none of its own; each process's communicator and the network
// have theirs.
#pragma once

#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "comm/simulated/sim_network.h"

namespace ordo::comm {

class SimulatedJob final : public Communicator {
 public:
  SimulatedJob(int processes, int devices_per_process, Schedule schedule);
  ~SimulatedJob() override;

  SimNetwork& network() { return network_; }
  int process_of(GlobalOrdinal device) const { return device.value() / devices_per_process_; }

  int world_size() const override { return static_cast<int>(processes_.size()) * devices_per_process_; }
  void run(const CollectiveCall& call) override { owner(call.device).run(call); }
  void abandon(ir::OpKind op, const ir::CollectiveAttrs& attrs, GlobalOrdinal device,
               const std::string& reason) override {
    owner(device).abandon(op, attrs, device, reason);
  }
  uint64_t tell(const DeviceEvent& event) override { return owner(event.device).tell(event); }
  uint64_t absence_epoch(GlobalOrdinal device) override { return owner(device).absence_epoch(device); }
  bool out_of_step() override;
  std::optional<std::string> start_afresh(const std::function<void()>& prepare) override;
  std::vector<std::string> exchange(const ExchangeCall& call) override { return owner(call.device).exchange(call); }

 private:
  Communicator& owner(GlobalOrdinal device);

  const int devices_per_process_;
  SimNetwork network_;  // outlives the communicators
  std::vector<std::unique_ptr<Communicator>> processes_;
};

}  // namespace ordo::comm
