// A graph walked from its roots: the nodes that compute them in post-order,
// the parameters (DeviceData leaves) in that order, and the graph's
// structural hash. A cut compiles it (the hash keys the compile cache);
// dropping a graph walks it for its collectives in chain order.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ir/node.h"

namespace ordo::ir {

struct NodeOutput {
  int32_t node;  // position in PostOrder::nodes
  uint32_t index;
};

struct PostOrder {
  std::vector<const Node*> nodes;   // post-order: operands before users
  std::vector<int32_t> parameters;  // positions of the DeviceData leaves
  std::vector<NodeOutput> roots;    // one per requested value, in order
  // Structure (every node's hash, which operand positions it reads) plus
  // parameter order: equal hashes mean one plan fits both graphs.
  uint64_t hash = 0;

  int32_t position(const Node* node) const { return node->walk_index; }
};

// Walks the graph below roots. Uses the nodes' walk scratch: the caller holds
// the graph mutex of their device for as long as it uses the result.
PostOrder post_order(std::span<const Value> roots);
// The same into graph, reusing its memory.
void post_order(std::span<const Value> roots, PostOrder& graph);

// One line per node: "%3 = mul(%1, %2) : float32[2, 2]" (and " at train.py:42"
// when IR debug recorded where), then the roots.
std::string dump(const PostOrder& graph);

}  // namespace ordo::ir
