// The in-process backend: devices are threads of this process sharing
// memory. The members of a replica group meet in the group's channel
// (channel.h), check that they brought the same op, then each does its
// share of the data movement (no thread per op, no copy beyond what the op
// needs) and waits until every share is done, so that no input is freed
// while a peer still reads it. A small all_reduce copies its inputs into
// the channel instead and needs no second wait (data_movement.h).
//
//   InProcessCommunicator comm(2);
//   comm.run(call);  // on each device's worker, with that device's call
//
// Locking: channels_mu_ guards channels_ and partitions_ (a channel or a
// partition, once made, lives as long as the communicator; a partition
// never changes). routes_[d] is used only by whoever runs device d's
// tasks, the only caller of run and abandon for d: its worker thread or a
// thread waiting for d, one at a time, ordered by the worker's mutex
// (worker.h). It alone writes progress_[d], which waiters read
// (progress.h). Order: channels_mu_ before Channel::mu (channel.h), before
// GoneDevices and InterruptedDevices (comm/gone_devices.h, comm/interrupted_devices.h).
// The exchange has a lock of its own (exchange.h), never held with channels_mu_.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "comm/communicator.h"
#include "comm/gone_devices.h"
#include "comm/in_process/channel.h"
#include "comm/in_process/exchange.h"
#include "comm/in_process/progress.h"
#include "comm/interrupted_devices.h"

namespace ordo::comm {

class InProcessCommunicator : public Communicator {
 public:
  explicit InProcessCommunicator(int world_size);

  int world_size() const override { return world_size_; }
  void run(const CollectiveCall& call) override;
  void abandon(ir::OpKind op, const ir::CollectiveAttrs& attrs, int device,
               const std::string& reason) override;
  void mark_device_failed(int device, const std::string& reason) override;
  uint64_t absence_epoch(int device) override { return gone_.absence_epoch(device); }
  void mark_device_absent(int device, const std::string& reason, uint64_t epoch) override;
  void clear_device_absent(int device) override;
  uint64_t interrupt(int device, const std::string& reason) override;
  void end_interrupt(int device, uint64_t id) override { interrupted_.end(device, id); }
  std::vector<std::string> exchange(const ExchangeCall& call) override { return exchange_.exchange(call); }

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

  Route route_for(const ir::CollectiveAttrs& attrs, int device);
  // After a device was declared gone: sleepers check for gone devices
  // under their channel's mutex.
  void wake_every_channel();
  // The channel of device's group in groups (a partition; empty: the
  // world), made on first use, and device's rank in it.
  Route open_route(const ReplicaGroups& groups, int device);
  // The one Partition of groups (channels_mu_ held).
  const Partition* partition_locked(const ReplicaGroups& groups);

  const int world_size_;
  GoneDevices gone_;
  InterruptedDevices interrupted_;
  InProcessExchange exchange_;  // host-side: meets apart from the channels
  std::mutex channels_mu_;
  std::map<std::vector<int>, std::unique_ptr<Channel>> channels_;
  std::map<ReplicaGroups, std::unique_ptr<Partition>> partitions_;  // by canonical groups
  std::vector<DeviceRoutes> routes_;      // by device
  std::vector<DeviceProgress> progress_;  // by device
};

}  // namespace ordo::comm
