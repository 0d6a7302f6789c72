// The state behind a Tensor handle.
//
// dtype, shape and device never change. The value does: it is either pending
// IR (value points at a non-leaf node) or device data (data set; value, when
// set, is the DeviceData leaf that stands for data in graphs, kept so that one
// tensor used twice in a graph is one parameter).
//
// Locking: value and data are guarded by the graph mutex of the tensor's
// device (lazy::DeviceGraph::mu); the list links by the PendingList's mutex.
#pragma once

#include <atomic>
#include <memory>

#include "core/device_numbers.h"
#include "core/metrics.h"
#include "device/device_data.h"
#include "ir/node.h"
#include "lazy/autograd_state.h"

namespace ordo::lazy {

class PendingList;

class TensorImpl : public std::enable_shared_from_this<TensorImpl> {
 public:
  TensorImpl(DType dtype, Shape shape, LocalDevice device, uint64_t generation)
      : dtype(dtype), shape(std::move(shape)), device(device), generation(generation) {
    metrics::add(metrics::Counter::kCreateTensor, device.index());
  }
  ~TensorImpl();
  TensorImpl(const TensorImpl&) = delete;
  TensorImpl& operator=(const TensorImpl&) = delete;

  const DType dtype;
  const Shape shape;
  const LocalDevice device;
  const uint64_t generation;  // of the runtime that made it

  ir::Value value;
  std::shared_ptr<device::DeviceData> data;
  // How often assign() rebound this tensor: a gradient rule that would read
  // an input rebound since its op was recorded refuses to.
  uint64_t version = 0;
  // Null unless the tensor requires a gradient (lazy/autograd_state.h).
  std::unique_ptr<AutogradState> autograd;

  bool requires_grad() const { return autograd && autograd->requires_grad; }

  bool is_pending() const { return value.node && value.node->op() != ir::OpKind::kDeviceData; }

 private:
  friend class PendingList;
  std::atomic<PendingList*> list_{nullptr};  // the list this tensor is linked in
  TensorImpl* prev_ = nullptr;
  TensorImpl* next_ = nullptr;
};

}  // namespace ordo::lazy
