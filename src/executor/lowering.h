// The first steps of a graph cut: the nodes that compute the roots in
// post-order, the parameters (DeviceData leaves) in that order, and the graph
// hash that keys the compile cache.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ir/node.h"

namespace ordo::executor {

struct NodeOutput {
  int32_t node;  // position in LoweredGraph::nodes
  uint32_t index;
};

struct LoweredGraph {
  std::vector<const ir::Node*> nodes;  // post-order: operands before users
  std::vector<int32_t> parameters;     // positions of the DeviceData leaves
  std::vector<NodeOutput> roots;       // one per requested value, in order
  // Structure (every node's hash, which operand positions it reads) plus
  // parameter order: equal hashes mean one plan fits both graphs.
  uint64_t hash = 0;

  int32_t position(const ir::Node* node) const { return node->walk_index; }
};

// Walks the graph below roots. Uses the nodes' walk scratch: the caller holds
// the graph mutex of their device for as long as it uses the result.
LoweredGraph lower(std::span<const ir::Value> roots);
// The same into graph, reusing its memory.
void lower(std::span<const ir::Value> roots, LoweredGraph& graph);

// One line per node: "%3 = mul(%1, %2) : float32[2, 2]", then the roots.
std::string dump(const LoweredGraph& graph);

}  // namespace ordo::executor
