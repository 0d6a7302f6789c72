// IR nodes. A node is immutable once built: op, operands as (node, output
// index), attributes, output types, and a structural hash computed here from
// all of those (operands by their hashes), so equal subgraphs hash equal.
//
// Every node belongs to one device's graph (lazy/device_graph.h), which
// says which device; the node itself does not. Its walk_* fields are
// scratch for graph walks. Locking: they are guarded by the owning device's graph mutex, which
// every walk holds.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/source_location.h"
#include "ir/ops.h"
#include "ordo/dtype.h"

namespace ordo::device {
class DeviceData;
}

namespace ordo::ir {

// The type of one node output: a dense tensor, or an ordering token (which
// carries no data; it exists so that ops can be chained by a real edge).
struct ValueType {
  DType dtype = DType::kFloat32;
  Shape shape;
  bool is_token = false;

  static ValueType token() { return {DType::kBool, {}, true}; }
  bool operator==(const ValueType&) const = default;
  std::string to_string() const;
};

class Node;
using NodePtr = std::shared_ptr<const Node>;

struct Value {
  NodePtr node;
  uint32_t index = 0;

  const ValueType& type() const;
};

// A node's operands and output types, in memory from the small-block allocator.
using ValueList = std::vector<Value, SmallBlockAllocator<Value>>;
using ValueTypes = std::vector<ValueType, SmallBlockAllocator<ValueType>>;

// Op attributes as the node hashes them. Each op reads its own as the
// struct op_list.def names for it (ir/op_attrs.h, where the layout is
// written). Like the node's other lists they live and die with it, so they
// come from the small-block allocator too.
using AttrInts = std::vector<int64_t, SmallBlockAllocator<int64_t>>;
using AttrReals = std::vector<double, SmallBlockAllocator<double>>;
struct Attrs {
  AttrInts ints;
  AttrReals reals;
  bool flag = false;

  bool operator==(const Attrs&) const = default;
};

class Node {
 public:
  Node(OpKind op, ValueList operands, ValueTypes outputs, Attrs attrs, std::shared_ptr<device::DeviceData> data,
       const SourceLocation* location = nullptr);
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  OpKind op() const { return op_; }
  const ValueList& operands() const { return operands_; }
  const ValueTypes& outputs() const { return outputs_; }
  const ValueType& output(uint32_t i) const { return outputs_[i]; }
  const Attrs& attrs() const { return attrs_; }
  uint64_t hash() const { return hash_; }
  // The data of a DeviceData leaf (null for every other op). Leaves hash by
  // type only, so the same step over new data reuses its compiled plan.
  const std::shared_ptr<device::DeviceData>& data() const { return data_; }
  // Where the user's code made it (IR debug only, else null). Part of the
  // hash: a plan compiled for one line must not run for another, or its
  // collectives would carry the first line.
  const SourceLocation* location() const { return location_; }

  mutable uint64_t walk_id = 0;
  mutable int32_t walk_index = -1;

 private:
  OpKind op_;
  ValueList operands_;
  ValueTypes outputs_;
  Attrs attrs_;
  std::shared_ptr<device::DeviceData> data_;
  const SourceLocation* location_;
  uint64_t hash_;
};

// location: where the user's code made it (IR debug), or null.
NodePtr make_node(OpKind op, ValueList operands, ValueTypes outputs, Attrs attrs,
                  const SourceLocation* location = nullptr);
NodePtr make_data_leaf(std::shared_ptr<device::DeviceData> data);

// Hash mixing shared by nodes and graphs.
inline uint64_t hash_mix(uint64_t seed, uint64_t value) {
  value *= 0x9E3779B97F4A7C15ull;
  value ^= value >> 32;
  return (seed ^ value) * 0xBF58476D1CE4E5B9ull + 0x94D049BB133111EBull;
}

}  // namespace ordo::ir
