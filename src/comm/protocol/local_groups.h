// The collectives of replica groups whose members are all devices of this
// process (threads sharing memory): the whole of the in-process backend,
// and the groups of an MPI process that span no other process. The members
// of a group meet in the group's channel (channel.h), check that they
// brought the same op, then each does its share of the data movement (no
// thread per op, no copy beyond what the op needs) and waits until every
// share is done, so that no input is freed while a peer still reads it. A
// small all_reduce copies its inputs into the channel instead and needs no
// second wait (data_movement.h).
//
//   DeviceStatus status;
//   LocalGroups groups(2, status);
//   groups.run(call);  // on each device's worker, with that device's call
//   status.mark_gone(1, Gone::kFailed, "its thread died"); groups.wake();  // waiters look again
//
// Locking: channels_mu_ guards channels_ and partitions_ (a channel or a
// partition, once made, lives as long as this; a partition never
// changes). routes_[d] is used only by whoever runs device d's tasks, the
// only caller of run and abandon for d: its worker thread or a thread
// waiting for d, one at a time, ordered by the worker's mutex (worker.h).
// It alone writes progress_[d], which waiters read (progress.h), here and
// in the protocol among processes.
// start_afresh replaces all of these while nobody uses them. Order:
// channels_mu_ before Channel::mu (channel.h), before DeviceStatus
// (comm/device_status.h).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/device_status.h"
#include "comm/protocol/channel.h"
#include "comm/protocol/progress.h"

namespace ordo::comm {

class LocalGroups {
 public:
  // world_size: global ordinals run 0 .. world_size - 1; status outlives
  // this and is marked by its owner, which then calls wake().
  LocalGroups(int world_size, const DeviceStatus& status);

  // As Communicator::run and abandon, for a group of local devices only.
  void run(const CollectiveCall& call);
  void abandon(ir::OpKind op, const ir::CollectiveAttrs& attrs, GlobalOrdinal device, const std::string& reason);
  // After a device was declared gone, absent or interrupted: sleepers
  // check under their channel's mutex.
  void wake();
  // Whether a collective failed or was abandoned since the start (or the
  // last start_afresh): the members of its group may then be at different
  // numbers, which only start_afresh brings level again.
  bool had_failures() const { return had_failures_.load(std::memory_order_acquire); }
  // Every group starts again at collective #0 with no device's history:
  // what failures left (members at different numbers, failed slots, joins
  // of abandoned collectives still pending) is forgotten. Only while no
  // device runs or waits in a collective (every queue ran).
  void start_afresh();

  // The one Partition of canonical groups (ir::canonical_partition; the
  // world as one group of every device), for collectives recorded by
  // whoever runs groups that span processes.
  const Partition* partition(const ReplicaGroups& canonical);
  // Device's progress record: written by whoever runs its tasks, read by
  // its peers' waiters (progress.h).
  DeviceProgress& progress(GlobalOrdinal device) { return progress_[device.slot()]; }
  const DeviceProgress& progress(GlobalOrdinal device) const { return progress_[device.slot()]; }
  std::span<const DeviceProgress> progress_records() const { return progress_; }  // by global ordinal

 private:
  // A device's way into the channel of its group in one partition.
  struct Route {
    Channel* channel = nullptr;
    size_t rank = 0;  // the device's position in the group
    const Partition* partition = nullptr;
  };
  // The routes one device has used, found without a lock or an allocation.
  struct alignas(64) DeviceRoutes {
    Route world;  // no replica groups: every device
    // By the replica groups as the attributes give them.
    std::vector<std::pair<ReplicaGroups, Route>> partitions;
  };

  void run_in_channel(const CollectiveCall& call);
  Route route_for(const ir::CollectiveAttrs& attrs, GlobalOrdinal device);
  // The channel of device's group in groups (a partition; empty: the
  // world), made on first use, and device's rank in it.
  Route open_route(const ReplicaGroups& groups, GlobalOrdinal device);
  // The one Partition of groups (channels_mu_ held).
  const Partition* partition_locked(const ReplicaGroups& groups);

  const int world_size_;
  const DeviceStatus& status_;
  std::mutex channels_mu_;
  std::map<std::vector<int>, std::unique_ptr<Channel>> channels_;
  std::map<ReplicaGroups, std::unique_ptr<Partition>> partitions_;  // by canonical groups
  std::vector<DeviceRoutes> routes_;      // by device
  std::vector<DeviceProgress> progress_;  // by device
  std::atomic<bool> had_failures_{false};
};

}  // namespace ordo::comm
