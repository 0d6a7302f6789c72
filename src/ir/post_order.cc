#include "ir/post_order.h"

#include <atomic>
#include <sstream>


namespace ordo::ir {
namespace {

std::atomic<uint64_t> g_next_walk_id{1};

struct Frame {
  const Node* node;
  size_t next_operand;
};

// Iterative post-order DFS: graphs can be deep chains. The stack is kept
// between walks so that a steady-state cut allocates nothing.
void visit(const Node* root, uint64_t walk_id, PostOrder& graph) {
  if (root->walk_id == walk_id) return;
  thread_local std::vector<Frame> stack;
  stack.clear();  // of a walk an exception cut short
  stack.push_back({root, 0});
  root->walk_id = walk_id;
  while (!stack.empty()) {
    Frame& top = stack.back();
    const auto& operands = top.node->operands();
    if (top.next_operand < operands.size()) {
      const Node* operand = operands[top.next_operand++].node.get();
      if (operand->walk_id != walk_id) {
        operand->walk_id = walk_id;
        stack.push_back({operand, 0});
      }
      continue;
    }
    const Node* done = top.node;
    stack.pop_back();
    done->walk_index = static_cast<int32_t>(graph.nodes.size());
    graph.nodes.push_back(done);
    if (done->op() == OpKind::kDeviceData) graph.parameters.push_back(done->walk_index);
  }
}

uint64_t graph_hash(const PostOrder& graph) {
  uint64_t h = hash_mix(0x67726170ull, graph.nodes.size());
  for (const Node* node : graph.nodes) {
    h = hash_mix(h, node->hash());
    for (const Value& v : node->operands()) h = hash_mix(h, v.node->walk_index);
  }
  for (const NodeOutput& root : graph.roots) h = hash_mix(hash_mix(h, root.node), root.index);
  return h;
}

}  // namespace

void post_order(std::span<const Value> roots, PostOrder& graph) {
  graph.nodes.clear();
  graph.parameters.clear();
  graph.roots.clear();
  const uint64_t walk_id = g_next_walk_id.fetch_add(1, std::memory_order_relaxed);
  graph.roots.reserve(roots.size());
  for (const Value& root : roots) {
    visit(root.node.get(), walk_id, graph);
    graph.roots.push_back({root.node->walk_index, root.index});
  }
  graph.hash = graph_hash(graph);
}

PostOrder post_order(std::span<const Value> roots) {
  PostOrder graph;
  post_order(roots, graph);
  return graph;
}

std::string dump(const PostOrder& graph) {
  auto ref = [&](const Node* node, uint32_t index) {
    std::string s = "%" + std::to_string(node->walk_index);
    return index == 0 ? s : s + "." + std::to_string(index);
  };
  std::ostringstream out;
  out << "graph " << std::hex << graph.hash << std::dec << " (" << graph.nodes.size()
      << " nodes, " << graph.parameters.size() << " parameters)\n";
  for (const Node* node : graph.nodes) {
    out << "  " << ref(node, 0) << " = " << op_name(node->op()) << "(";
    for (size_t i = 0; i < node->operands().size(); ++i) {
      const Value& v = node->operands()[i];
      out << (i ? ", " : "") << ref(v.node.get(), v.index);
    }
    out << ")";
    const Attrs& attrs = node->attrs();
    if (!attrs.ints.empty()) out << " ints=" << shape_to_string(attrs.ints);
    if (!attrs.reals.empty()) {
      out << " reals=[";
      for (size_t i = 0; i < attrs.reals.size(); ++i) out << (i ? ", " : "") << attrs.reals[i];
      out << "]";
    }
    if (attrs.flag) out << " flag";
    out << " : ";
    const auto& outputs = node->outputs();
    if (outputs.size() != 1) out << "(";
    for (size_t i = 0; i < outputs.size(); ++i) out << (i ? ", " : "") << outputs[i].to_string();
    if (outputs.size() != 1) out << ")";
    if (node->location() != nullptr) out << " at " << node->location()->to_string();
    out << "\n";
  }
  out << "  roots:";
  for (const NodeOutput& root : graph.roots) out << " " << ref(graph.nodes[root.node], root.index);
  out << "\n";
  return out.str();
}

}  // namespace ordo::ir
