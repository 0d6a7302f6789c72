// The communication interface: what a collective kernel calls. Every backend
// (in-process threads now; MPI later) implements it and passes the same
// conformance tests; the in-process backend is the reference.
#pragma once

#include <span>
#include <string>

#include "device/buffer.h"
#include "ir/collective_attrs.h"
#include "ir/ops.h"

namespace ordo::comm {

// One participant's part in a collective.
struct CollectiveCall {
  ir::OpKind op;
  const ir::CollectiveAttrs& attrs;
  int device;                                       // global ordinal
  std::span<const device::Buffer* const> inputs;    // the data inputs (no token)
  std::span<const device::Buffer* const> outputs;   // allocated; the collective writes them
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int world_size() const = 0;
  // Meets the peers of call's group and runs the op. Throws
  // CollectiveMismatchError, CollectiveTimeoutError or CollectiveError.
  virtual void run(const CollectiveCall& call) = 0;
  // device will not run this collective (its graph failed before it): its
  // peers fail with reason instead of waiting.
  virtual void abandon(ir::OpKind op, const ir::CollectiveAttrs& attrs, int device,
                       const std::string& reason) = 0;
  // device is gone: every collective waiting for it, now or later, fails.
  virtual void mark_device_failed(int device, const std::string& reason) = 0;
  // device is driven by nobody for now: as mark_device_failed, until
  // clear_device_absent(device). The mark counts only if no clear came
  // since absence_epoch(device) gave epoch.
  virtual uint64_t absence_epoch(int device) = 0;
  virtual void mark_device_absent(int device, const std::string& reason, uint64_t epoch) = 0;
  virtual void clear_device_absent(int device) = 0;
  // Interrupts device's waits: every collective of device that waits, now
  // or later, for its peers or for its slot fails with reason, on device
  // and on the peers of that collective, until end_interrupt(device, id)
  // with the id this returned.
  virtual uint64_t interrupt(int device, const std::string& reason) = 0;
  virtual void end_interrupt(int device, uint64_t id) = 0;
};

// For messages: "all_reduce(sum, scale 0.5, groups [[0, 1], [2, 3]]) of
// float32[4]", a group "[0, 1]", groups "[[0, 1], [2, 3]]".
std::string describe(const CollectiveCall& call);
std::string describe_group(const std::vector<int>& group);
std::string describe_groups(const ReplicaGroups& groups);

}  // namespace ordo::comm
