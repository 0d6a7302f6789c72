// The protocol among processes: the Communicator of one process of a job
// whose devices live in several processes, over a transport
// (transport.h: MPI under mpirun, mpi/; in-memory queues run by a seeded
// schedule in tests, simulated/). The process drives its own devices
// (threads); every other device of the world belongs to another process.
//
// - A group whose members are all in this process meets in memory
//   (local_groups.h, as in the in-process backend).
// - A group that spans processes: this process's members meet locally
//   (local_meeting.h), and once all have come one of them, the leader (a
//   fixed member, a different one in neighbouring processes), runs the
//   collective with the other processes for all of them
//   (cross_collective.h), moving bytes point to point and computing with
//   the protocol's data movement and reduction in the group's rank order
//   (data_movement.h, comm/reduction.h), so that a result is bitwise the
//   same whatever the layout of processes and devices.
// - The exchange (rendezvous) is the in-process backend's (exchange.h),
//   its notes to other processes' devices posted over the transport
//   (exchange_mail.h).
// - News of devices (failed, absent, present again) and of processes
//   that die or finish come from the transport.
//
//   std::unique_ptr<Communicator> comm = make_mpi_communicator(world);  // mpi/mpi_transport.h
//
// Each device's progress (progress.h) is recorded at every collective,
// with the local groups' records, so that a leader waiting for another
// process can ask what the missing devices do (progress_board.h).
//
// Locking: routes_[i] is used only by whoever runs local device i's tasks
// (as in-process). meetings_mu_ guards meetings_ (a meeting, once made,
// lives as long as the communicator), and is never held while waiting.
// Order: a meeting's lock, then the exchange's post's, then the
// exchange's, then the transport's, a leaf; DeviceStatus is a leaf too (LocalProtocol's, which the cross
// groups and exchange read).
#pragma once

#include <map>
#include <memory>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "comm/communicator.h"
#include "comm/device_status.h"
#include "comm/protocol/cross_collective.h"
#include "comm/protocol/exchange_mail.h"
#include "comm/protocol/local_meeting.h"
#include "comm/protocol/local_protocol.h"
#include "comm/protocol/progress_board.h"
#include "comm/protocol/transport.h"

namespace ordo::comm {

class ProcessesCommunicator : public Communicator {
 public:
  explicit ProcessesCommunicator(std::unique_ptr<Transport> transport);
  ~ProcessesCommunicator() override;

  int world_size() const override { return world_.topology().world_size(); }
  void run(const CollectiveCall& call) override;
  void abandon(ir::OpKind op, const ir::CollectiveAttrs& attrs, GlobalOrdinal device,
               const std::string& reason) override;
  uint64_t tell(const DeviceEvent& event) override;
  uint64_t absence_epoch(GlobalOrdinal device) override { return local_.status().absence_epoch(device); }
  std::vector<std::string> exchange(const ExchangeCall& call) override;
  bool out_of_step() override { return why_out_of_step().has_value(); }
  std::optional<std::string> start_afresh(const std::function<void()>& prepare) override;

 private:
  // A cross-process group's meeting and its leader's state.
  struct CrossGroup {
    CrossGroup(GroupPlan plan, const Peers& peers) : meeting(std::move(plan)), leader(peers, meeting) {}
    LocalMeeting meeting;
    CrossCollective leader;
  };
  // How a device reaches its group in one partition: in-process, or the
  // group's meeting.
  struct Route {
    CrossGroup* group = nullptr;  // null: every member is local
    size_t index = 0;             // the device's position among the local members
    const Partition* partition = nullptr;
  };
  struct alignas(64) DeviceRoutes {
    std::optional<Route> world;
    std::vector<std::pair<ReplicaGroups, Route>> partitions;
  };

  Route& route_for(const ir::CollectiveAttrs& attrs, GlobalOrdinal device);
  // A local member of a cross group starts its next collective there:
  // its number in the group, and in its program (recorded: progress.h).
  struct Start {
    int64_t sequence;
    int64_t number;
  };
  Start start(const Route& route, ir::OpKind op, GlobalOrdinal device);
  Route open_route(const ReplicaGroups& groups, GlobalOrdinal device);
  // News from another process, or of one that ended.
  void hear(GlobalOrdinal device, const std::string& reason, Gone how);
  // A collective or exchange with other processes failed: the transport
  // hears of it (the MPI one keeps it for this process's exit), then it is raised.
  [[noreturn]] void give_up(const device::Failure& failure);
  // What earlier failures left (out_of_step), if anything.
  std::optional<std::string> why_out_of_step();

  // Outlives meetings_, whose inboxes read it.
  const std::unique_ptr<Transport> transport_;
  const Processes& world_;
  // Each on cache lines of its own: the progress records, the status
  // and the board's mutex were once on shared lines, which cost a 2 x 2
  // job's 1 KiB all_reduce 9% (BENCHMARKS.md, #38).
  alignas(64) LocalProtocol local_;  // groups and exchanges within this process, the device status
  alignas(64) ProgressBoard board_;
  Peers peers_;
  ExchangeMail mail_;  // the exchange's post to other processes
  // The first collective or exchange with other processes that failed.
  std::mutex gave_up_mu_;
  std::optional<std::string> gave_up_on_;  // guarded by gave_up_mu_
  std::mutex meetings_mu_;
  std::map<std::vector<int>, std::unique_ptr<CrossGroup>> meetings_;
  std::vector<DeviceRoutes> routes_;  // by local device index
  const std::string place_;           // " on process 0 (host vm, pid 42)": this one
  // Answers other processes' questions (progress_board.h), and keeps the
  // transport moving (Transport::upkeep), every few milliseconds, even
  // while every device of this process computes.
  std::mutex stopping_mu_;
  std::condition_variable stopping_cv_;
  bool stopping_ = false;  // guarded by stopping_mu_
  std::thread answering_;
};

}  // namespace ordo::comm
