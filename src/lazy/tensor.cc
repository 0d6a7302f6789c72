// The Tensor handle's own methods: metadata and rebinding (reading a value
// waits for the executor: api/tensor_values.cc).
#include "lazy/autograd_state.h"
#include "lazy/graph_table.h"
#include "lazy/trace.h"

namespace ordo {
namespace {

const lazy::TensorImpl& checked(const std::shared_ptr<lazy::TensorImpl>& impl) {
  ORDO_ARG_CHECK(impl != nullptr, "the tensor is undefined (default-constructed)");
  return *impl;
}

}  // namespace

Tensor::Tensor(std::shared_ptr<lazy::TensorImpl> impl) : impl_(std::move(impl)) {}

DType Tensor::dtype() const { return checked(impl_).dtype; }
const Shape& Tensor::shape() const { return checked(impl_).shape; }
int Tensor::device() const { return checked(impl_).device.index(); }

bool Tensor::is_pending() const {
  const Tensor* self = this;
  const LocalDevice device = lazy::common_device("is_pending", {&self, 1});
  std::lock_guard<std::mutex> lock(lazy::graphs().graph(device).mu);
  return impl_->is_pending();
}

void Tensor::assign(const Tensor& other) {
  const Tensor* both[] = {this, &other};
  const LocalDevice device = lazy::common_device("assign", both);
  ORDO_DTYPE_CHECK(dtype() == other.dtype(), "assign: cannot rebind a ", dtype_name(dtype()),
                   " tensor to a ", dtype_name(other.dtype()), " value");
  ORDO_ARG_CHECK(shape() == other.shape(), "assign: cannot rebind a tensor of shape ",
                 shape_to_string(shape()), " to a value of shape ", shape_to_string(other.shape()));
  lazy::DeviceGraph& graph = lazy::graphs().graph(device);
  std::lock_guard<std::mutex> lock(graph.mu);
  if (impl_ == other.impl_) return;
  rebind_history(graph, other);
  impl_->value = other.impl_->value;
  impl_->data = other.impl_->data;
  ++impl_->version;
  if (impl_->is_pending()) graph.register_pending(*impl_);
}

// While gradients are recorded the handle takes other's history; else a
// tensor that required a gradient stays a leaf that does (a parameter
// updated under a NoGradGuard). An in-place op (all_reduce_inplace) rebinds
// its input to its own output: that output's record then keeps the input's
// old value and history as a tensor of its own. Graph mutex held.
void Tensor::rebind_history(lazy::DeviceGraph& graph, const Tensor& other) {
  const lazy::AutogradState* from = other.impl_->autograd.get();
  if (lazy::grad_mode_enabled() && from && from->record) {
    ORDO_ARG_CHECK(!impl_->requires_grad() || impl_->autograd->record, "assign: a leaf tensor that requires a gradient "
                   "cannot be rebound to a value with gradient history (rebind it under a NoGradGuard, as an "
                   "optimizer's step does)");
    const lazy::GradRecord& record = *from->record;
    Tensor old;  // made once, however often the record names this tensor
    for (size_t i = 0; i < record.inputs.size(); ++i) {
      if (record.inputs[i].impl_ != impl_) continue;
      if (!old.defined()) {
        old = lazy::alias_locked(*impl_, graph);
        old.impl_->autograd = std::move(impl_->autograd);
      }
      record.inputs[i] = old;
    }
    auto state = std::make_unique<lazy::AutogradState>();
    state->requires_grad = from->requires_grad;
    state->record = from->record;
    state->output = from->output;
    impl_->autograd = std::move(state);
  } else if (impl_->autograd) {
    impl_->autograd->record.reset();
    impl_->autograd->output = 0;
  }
}

Tensor Tensor::detach() const {
  const Tensor* self = this;
  lazy::DeviceGraph& graph = lazy::graphs().graph(lazy::common_device("detach", {&self, 1}));
  std::lock_guard<std::mutex> lock(graph.mu);
  return lazy::alias_locked(*impl_, graph);
}

}  // namespace ordo
