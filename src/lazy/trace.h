// Recording ops: what every op builder calls once it has checked its
// arguments and worked out the output type. Nothing runs here.
#pragma once

#include <initializer_list>
#include <memory>
#include <span>
#include <vector>

#include "device/device_data.h"
#include "ir/node.h"
#include "lazy/tensor_impl.h"
#include "ordo/tensor.h"

namespace ordo::lazy {

// The IR value standing for a tensor in a new node: its pending value, or a
// DeviceData leaf of its data made once and kept (graph mutex held).
ir::Value value_of(TensorImpl& tensor);

// Checks that every input is defined, of the running runtime and on one
// device; returns that device. `what` names the op in errors.
LocalDevice common_device(std::string_view what, std::span<const Tensor* const> inputs);

// The tensors an op returns. From the small-block allocator: most ops return one,
// at the rate of ops.
using Tensors = std::vector<Tensor, SmallBlockAllocator<Tensor>>;

// Records op over the inputs and returns one tensor per non-token output.
// Inputs must have passed common_device. Every output shape passes
// checked_shape_size (named by the op) before anything is recorded, so no
// builder can make a shape whose counts overflow. With chain_token the node also
// takes the device's cc token (a fresh leaf if the slot is empty) as its last
// operand, and its token output becomes the slot's new token, all under one
// hold of the graph mutex.
Tensors trace(ir::OpKind op, std::span<const Tensor* const> inputs, ir::ValueTypes outputs,
              ir::Attrs attrs = {}, bool chain_token = false);

// The single-output form most builders use.
Tensor trace1(ir::OpKind op, std::initializer_list<const Tensor*> inputs, ir::ValueType output,
              ir::Attrs attrs = {});

// Records an op without inputs (full, arange) on device (already resolved);
// its shape is checked like trace's.
Tensor trace_leaf(ir::OpKind op, LocalDevice device, ir::ValueType output, ir::Attrs attrs);

class DeviceGraph;

// A second tensor holding from's value (pending or data), without its
// gradient history; graph is from's device's, its mutex held.
Tensor alias_locked(const TensorImpl& from, DeviceGraph& graph);

// A tensor holding existing device data.
Tensor tensor_from_data(std::shared_ptr<device::DeviceData> data, LocalDevice device);

}  // namespace ordo::lazy
