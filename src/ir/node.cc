#include "ir/node.h"

#include <bit>
#include <utility>

#include "device/device_data.h"

namespace ordo::ir {
namespace {

uint64_t hash_type(uint64_t h, const ValueType& type) {
  h = hash_mix(h, type.is_token ? 0xA11CEull : static_cast<uint64_t>(type.dtype));
  h = hash_mix(h, type.shape.size());
  for (int64_t d : type.shape) h = hash_mix(h, static_cast<uint64_t>(d));
  return h;
}

uint64_t hash_node(OpKind op, const ValueList& operands, const ValueTypes& outputs,
                   const Attrs& attrs, const SourceLocation* location) {
  uint64_t h = hash_mix(0x6F72646Full, static_cast<uint64_t>(op));
  for (const Value& v : operands) h = hash_mix(hash_mix(h, v.node->hash()), v.index);
  for (const ValueType& t : outputs) h = hash_type(h, t);
  h = hash_mix(h, attrs.ints.size());
  for (int64_t i : attrs.ints) h = hash_mix(h, static_cast<uint64_t>(i));
  for (double r : attrs.reals) h = hash_mix(h, std::bit_cast<uint64_t>(r));
  if (location != nullptr) h = hash_mix(h, location->hash);
  return hash_mix(h, attrs.flag);
}

// Destroying a long chain of nodes recursively would overflow the stack, so
// the outermost destructor of a thread keeps a list of operands that die
// with it and destroys them in a loop; nested destructors add to it. Only
// a pointer is thread_local: nodes may die while the thread's thread_local
// objects are being destroyed (at exit, with the runtime).
thread_local std::vector<NodePtr>* t_dying_operands = nullptr;

}  // namespace

std::string ValueType::to_string() const {
  if (is_token) return "token";
  return std::string(dtype_name(dtype)) + shape_to_string(shape);
}

const ValueType& Value::type() const { return node->output(index); }

Node::Node(OpKind op, ValueList operands, ValueTypes outputs, Attrs attrs, std::shared_ptr<device::DeviceData> data,
           const SourceLocation* location)
    : op_(op),
      operands_(std::move(operands)),
      outputs_(std::move(outputs)),
      attrs_(std::move(attrs)),
      data_(std::move(data)),
      location_(location),
      hash_(hash_node(op_, operands_, outputs_, attrs_, location_)) {}

Node::~Node() {
  if (t_dying_operands != nullptr) {
    for (Value& v : operands_) {
      if (v.node.use_count() == 1) t_dying_operands->push_back(std::move(v.node));
    }
    return;
  }
  std::vector<NodePtr> dying;
  t_dying_operands = &dying;
  for (Value& v : operands_) {
    if (v.node.use_count() == 1) dying.push_back(std::move(v.node));
  }
  while (!dying.empty()) {
    NodePtr last = std::move(dying.back());
    dying.pop_back();
    last.reset();
  }
  t_dying_operands = nullptr;
}

NodePtr make_node(OpKind op, ValueList operands, ValueTypes outputs, Attrs attrs, const SourceLocation* location) {
  return std::allocate_shared<const Node>(SmallBlockAllocator<Node>{}, op, std::move(operands),
                                          std::move(outputs), std::move(attrs), nullptr, location);
}

NodePtr make_data_leaf(std::shared_ptr<device::DeviceData> data) {
  ValueType type{data->dtype(), data->shape(), false};
  return std::allocate_shared<const Node>(SmallBlockAllocator<Node>{}, OpKind::kDeviceData, ValueList{},
                                          ValueTypes{std::move(type)}, Attrs{}, std::move(data));
}

}  // namespace ordo::ir
