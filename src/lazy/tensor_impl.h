// The state behind a Tensor handle.
//
// dtype, shape and device never change. The value does: it is either pending
// IR (value points at a non-leaf node) or device data (data set; value, when
// set, is the DeviceData leaf that stands for data in graphs, kept so that one
// tensor used twice in a graph is one parameter).
//
// Locking: value, data and registered are guarded by the graph mutex of the
// tensor's device (lazy::DeviceGraph::mu).
#pragma once

#include <memory>

#include "device/device_data.h"
#include "ir/node.h"

namespace ordo::lazy {

class TensorImpl {
 public:
  TensorImpl(DType dtype, Shape shape, int device, uint64_t generation)
      : dtype(dtype), shape(std::move(shape)), device(device), generation(generation) {}

  const DType dtype;
  const Shape shape;
  const int device;
  const uint64_t generation;  // of the runtime that made it

  ir::Value value;
  std::shared_ptr<device::DeviceData> data;
  bool registered = false;  // in its device's live-tensor list

  bool is_pending() const { return value.node && value.node->op() != ir::OpKind::kDeviceData; }
};

}  // namespace ordo::lazy
