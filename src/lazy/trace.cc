#include "lazy/trace.h"

#include <algorithm>
#include <atomic>
#include <optional>

#include "ir/op_attrs.h"
#include "lazy/graph_table.h"

namespace ordo::lazy {
namespace {

// Tensors are made and dropped at the rate of ops, like the IR: their blocks
// come from the same per-thread cache.
std::shared_ptr<TensorImpl> make_tensor_impl(DType dtype, const Shape& shape, LocalDevice device,
                                             uint64_t generation) {
  return std::allocate_shared<TensorImpl>(SmallBlockAllocator<TensorImpl>{}, dtype, shape, device, generation);
}

void check_output(ir::OpKind op, const ir::ValueType& type) {
  if (!type.is_token) checked_shape_size(ir::op_name(op), type.shape, type.dtype);
}

thread_local bool t_grad_mode = true;
std::atomic<uint64_t> g_grad_sequence{0};

// Whether the op's outputs get a gradient: grad mode is on, an input needs
// one, and an output can carry one (comparisons, argmax and integer casts
// cannot: the gradient stops there, as in PyTorch).
bool records_gradient(std::span<const Tensor* const> inputs, const ir::ValueTypes& outputs) {
  if (!t_grad_mode) return false;
  const bool input_needs = std::any_of(inputs.begin(), inputs.end(),
                                       [](const Tensor* input) { return input->impl()->requires_grad(); });
  return input_needs && std::any_of(outputs.begin(), outputs.end(), [](const ir::ValueType& type) {
           return !type.is_token && is_floating(type.dtype);
         });
}

void record_gradient(ir::OpKind op, const ir::Attrs& attrs, std::span<const Tensor* const> inputs,
                     Tensors& results) {
  auto record = std::make_shared<GradRecord>();
  record->op = op;
  record->attrs = attrs;
  for (const Tensor* input : inputs) {
    record->inputs.push_back(*input);
    record->versions.push_back(input->impl()->version);
  }
  for (const Tensor& result : results) record->outputs.push_back({result.dtype(), result.shape()});
  record->sequence = next_grad_sequence();
  for (uint32_t i = 0; i < results.size(); ++i) {
    auto state = std::make_unique<AutogradState>();
    state->requires_grad = is_floating(results[i].dtype());
    state->record = record;
    state->output = i;
    results[i].impl()->autograd = std::move(state);
  }
}

// Ops that compute on their elements: their 16-bit float operands and
// results are float32 inside (trace_in_float32). Cast converts itself, and
// the other movement ops and collectives take the bits as they are
// (collectives sum in float32 themselves: comm/reduction.h).
bool computes_in_float32(ir::OpKind op) {
  switch (ir::op_group(op)) {
    case ir::OpGroup::kUnary:
      return op != ir::OpKind::kCast;
    case ir::OpGroup::kBinary:
    case ir::OpGroup::kTernary:
    case ir::OpGroup::kReduce:
    case ir::OpGroup::kLinalg:
    case ir::OpGroup::kRandom:
    case ir::OpGroup::kNn:
      return true;
    case ir::OpGroup::kMovement:
      return op == ir::OpKind::kScatterAdd || op == ir::OpKind::kOneHot;
    case ir::OpGroup::kLeaf:
    case ir::OpGroup::kCollective:
      return false;
  }
  return false;
}

bool has_half_float(std::span<const Tensor* const> inputs, const ir::ValueTypes& outputs) {
  return std::any_of(inputs.begin(), inputs.end(), [](const Tensor* in) { return is_half_float(in->dtype()); }) ||
         std::any_of(outputs.begin(), outputs.end(),
                     [](const ir::ValueType& type) { return !type.is_token && is_half_float(type.dtype); });
}

// The casts that trace_in_float32 makes are marked (float32_compute): a
// widening one of a rounding one reads the rounding's float32 operand instead
// (when the rounded value is still pending), so a chain of ops on 16-bit
// floats is rounded once, where its value leaves the chain. Casts the user
// asks for are not marked and always round.
bool is_rounding_of_float32(const ir::Value& value) {
  const ir::Node& node = *value.node;
  return node.op() == ir::OpKind::kCast && ir::attrs_of<ir::CastAttrs>(node).float32_compute &&
         node.operands()[0].type().dtype == DType::kFloat32;
}

ir::Attrs float32_cast_attrs() { return ir::encode<ir::OpKind::kCast>({.float32_compute = true}); }

Tensor widen_to_float32(const Tensor& x) {
  if (!is_half_float(x.dtype())) return x;
  return trace1(ir::OpKind::kCast, {&x}, {DType::kFloat32, x.shape()}, float32_cast_attrs());
}

// op over 16-bit floats, computed in float32: operands widened, results
// rounded back to their dtype (bitwise as torch's conversions).
Tensors trace_in_float32(ir::OpKind op, std::span<const Tensor* const> inputs, ir::ValueTypes outputs,
                         ir::Attrs attrs, bool chain_token) {
  Tensors widened;
  widened.reserve(inputs.size());
  for (const Tensor* input : inputs) widened.push_back(widen_to_float32(*input));
  std::vector<const Tensor*> operands;
  for (const Tensor& input : widened) operands.push_back(&input);
  std::vector<DType> rounded_to;
  for (ir::ValueType& type : outputs) {
    if (type.is_token) continue;
    rounded_to.push_back(type.dtype);
    if (is_half_float(type.dtype)) type.dtype = DType::kFloat32;
  }
  Tensors results = trace(op, operands, std::move(outputs), std::move(attrs), chain_token);
  for (size_t i = 0; i < results.size(); ++i) {
    if (!is_half_float(rounded_to[i])) continue;
    results[i] = trace1(ir::OpKind::kCast, {&results[i]}, {rounded_to[i], results[i].shape()}, float32_cast_attrs());
  }
  return results;
}

}  // namespace

bool grad_mode_enabled() { return t_grad_mode; }
void set_grad_mode_enabled(bool enabled) { t_grad_mode = enabled; }
uint64_t next_grad_sequence() { return g_grad_sequence.fetch_add(1, std::memory_order_relaxed); }

ir::Value value_of(TensorImpl& tensor) {
  if (!tensor.value.node) tensor.value = {ir::make_data_leaf(tensor.data), 0};
  return tensor.value;
}

LocalDevice common_device(std::string_view what, std::span<const Tensor* const> inputs) {
  const uint64_t generation = graphs().generation();
  std::optional<LocalDevice> device;
  for (const Tensor* input : inputs) {
    ORDO_ARG_CHECK(input->defined(), what, ": an input tensor is undefined");
    const TensorImpl& impl = *input->impl();
    ORDO_ARG_CHECK(impl.generation == generation, what,
                   ": an input tensor belongs to a runtime that was shut down",
                   " (or to the parent's, in a forked process)");
    ORDO_ARG_CHECK(!device || impl.device == *device, what, ": inputs are on devices ", *device,
                   " and ", impl.device, "; every input must be on one device");
    device = impl.device;
  }
  ORDO_ARG_CHECK(device.has_value(), what, ": no tensors given");
  return *device;
}

Tensors trace(ir::OpKind op, std::span<const Tensor* const> inputs, ir::ValueTypes outputs,
              ir::Attrs attrs, bool chain_token) {
  if (computes_in_float32(op) && has_half_float(inputs, outputs)) {
    return trace_in_float32(op, inputs, std::move(outputs), std::move(attrs), chain_token);
  }
  for (const ir::ValueType& type : outputs) check_output(op, type);
  const bool with_gradient = records_gradient(inputs, outputs);
  std::optional<ir::Attrs> recorded_attrs;
  if (with_gradient) recorded_attrs = attrs;
  const LocalDevice device = inputs.front()->impl()->device;
  // Before the graph mutex: finding a Python caller's line runs Python.
  const SourceLocation* where = user_location();
  GraphTable& table = graphs();
  DeviceGraph& graph = table.graph(device);
  ir::ValueList operands;
  operands.reserve(inputs.size() + 1);
  Tensors results;
  results.reserve(outputs.size());
  std::lock_guard<std::mutex> lock(graph.mu);
  for (const Tensor* input : inputs) {
    TensorImpl& impl = *input->impl();
    // A dropped value is refused here, where the caller can see why, rather
    // than failing the whole graph that would use it.
    if (impl.data && impl.data->is_dropped()) impl.data->wait();
    operands.push_back(value_of(impl));
  }
  if (op == ir::OpKind::kCast && ir::decode<ir::OpKind::kCast>(attrs).float32_compute &&
      !inputs.front()->impl()->data && is_rounding_of_float32(operands.front())) {
    // Widening a pending value that a float32 chain rounded: the result is
    // the float32 it rounded (no node), with this cast's gradient record.
    auto impl = make_tensor_impl(DType::kFloat32, outputs.front().shape, device, table.generation());
    impl->value = operands.front().node->operands()[0];
    graph.register_pending(*impl);
    results.emplace_back(std::move(impl));
    if (with_gradient) record_gradient(op, *recorded_attrs, inputs, results);
    return results;
  }
  if (chain_token) {
    if (!graph.cc_token.node) {
      graph.cc_token = {ir::make_node(ir::OpKind::kCcToken, {}, {ir::ValueType::token()}, {}, where), 0};
    }
    operands.push_back(graph.cc_token);
  }
  ir::NodePtr node = ir::make_node(op, std::move(operands), std::move(outputs), std::move(attrs), where);
  const size_t count = node->outputs().size();
  for (uint32_t i = 0; i < count; ++i) {
    // The last output takes this function's reference over: reference
    // counts are atomic, and this is one change fewer per op.
    ir::Value value{i + 1 < count ? node : std::move(node), i};
    const ir::ValueType& type = value.type();
    if (type.is_token) {
      if (chain_token) graph.cc_token = std::move(value);
      continue;
    }
    auto impl = make_tensor_impl(type.dtype, type.shape, device, table.generation());
    impl->value = std::move(value);
    graph.register_pending(*impl);
    results.emplace_back(std::move(impl));
  }
  if (with_gradient) record_gradient(op, *recorded_attrs, inputs, results);
  return results;
}

Tensor trace1(ir::OpKind op, std::initializer_list<const Tensor*> inputs, ir::ValueType output,
              ir::Attrs attrs) {
  ir::ValueTypes outputs;
  outputs.push_back(std::move(output));
  std::span<const Tensor* const> span(inputs.begin(), inputs.size());
  return std::move(trace(op, span, std::move(outputs), std::move(attrs)).front());
}

Tensor trace_leaf(ir::OpKind op, LocalDevice device, ir::ValueType output, ir::Attrs attrs) {
  check_output(op, output);
  GraphTable& table = graphs();
  DeviceGraph& graph = table.graph(device);
  auto impl = make_tensor_impl(output.dtype, output.shape, device, table.generation());
  ir::NodePtr node = ir::make_node(op, {}, {std::move(output)}, std::move(attrs), user_location());
  std::lock_guard<std::mutex> lock(graph.mu);
  impl->value = {std::move(node), 0};
  graph.register_pending(*impl);
  return Tensor(std::move(impl));
}

Tensor alias_locked(const TensorImpl& from, DeviceGraph& graph) {
  auto impl = make_tensor_impl(from.dtype, from.shape, from.device, from.generation);
  impl->value = from.value;
  impl->data = from.data;
  if (impl->is_pending()) graph.register_pending(*impl);
  return Tensor(std::move(impl));
}

Tensor tensor_from_data(std::shared_ptr<device::DeviceData> data, LocalDevice device) {
  auto impl = make_tensor_impl(data->dtype(), data->shape(), device, graphs().generation());
  impl->data = std::move(data);
  return Tensor(std::move(impl));
}

}  // namespace ordo::lazy
