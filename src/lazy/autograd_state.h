// What the backward pass needs to know of a tensor, kept beside its value.
//
// A tensor that requires a gradient either is a leaf (made by the user:
// requires_grad set, no record) or was made by an op over such tensors: it
// then points at the op's record (op, attrs, the op's input tensors, its
// outputs' types) and at which output it is. The record holds its inputs,
// never its outputs (no cycle); the gradient rules of src/autograd/ read
// the inputs only. Recorded by lazy::trace while grad mode is on.
//
// Locking: none. A tensor's autograd state is read and written by the
// threads that drive its device, one at a time (as PyTorch's: not meant for
// two threads at once); tensors of other devices are other state.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "ir/node.h"
#include "ordo/tensor.h"

namespace ordo::lazy {

struct GradRecord {
  ir::OpKind op;
  ir::Attrs attrs;
  // The op's data inputs, in operand order, and their versions then (see
  // TensorImpl::version). A backward pass frees them (as PyTorch's
  // retain_graph=False), so that a step's intermediate tensors die with it.
  mutable std::vector<Tensor> inputs;
  mutable std::vector<uint64_t> versions;
  mutable bool freed = false;
  ir::ValueTypes outputs;      // the types of the non-token outputs
  // Increasing in the order ops are recorded: the backward pass runs
  // records in decreasing order, the same on every device of an SPMD
  // program, so their backward collectives meet in the same order.
  uint64_t sequence;
};

struct AutogradState {
  bool requires_grad = false;
  std::shared_ptr<const GradRecord> record;  // null: a leaf
  uint32_t output = 0;                       // which of the record's outputs
  Tensor grad;                               // a leaf's accumulated gradient
};

// Grad mode of the calling thread (on unless a NoGradGuard is alive).
bool grad_mode_enabled();
void set_grad_mode_enabled(bool enabled);

// A new record's sequence number.
uint64_t next_grad_sequence();

}  // namespace ordo::lazy
