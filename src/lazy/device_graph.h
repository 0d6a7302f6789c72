// The pending graph of one device: the live tensors whose values are still IR.
//
// Locking: mu guards live_tensors, prune_at, schedule, the IR state of every
// TensorImpl of this device and the walk scratch of its nodes. Take at most
// one device's mu at a time; never wait for a worker while holding it.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "lazy/tensor_impl.h"
#include "ordo/runtime.h"

namespace ordo::lazy {

struct DeviceGraph {
  std::mutex mu;
  // Tensors that have been pending; dead and materialized entries are pruned
  // when the list doubles and at every graph cut.
  std::vector<std::weak_ptr<TensorImpl>> live_tensors;
  size_t prune_at = 1024;
  ScheduleOptions schedule;

  // Adds a tensor that just became pending (mu held).
  void register_pending(const std::shared_ptr<TensorImpl>& tensor);
  // The live pending tensors, in registration order (mu held).
  std::vector<std::shared_ptr<TensorImpl>> pending_tensors();
};

}  // namespace ordo::lazy
