#include "ir/graph_dot.h"

#include <sstream>

namespace ordo::ir {
namespace {

std::string quoted(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::vector<std::string> node_lines(const PostOrder& graph) {
  std::istringstream text(dump(graph));
  std::string line;
  std::getline(text, line);  // "graph <hash> (...)"
  std::vector<std::string> lines;
  lines.reserve(graph.nodes.size());
  while (lines.size() < graph.nodes.size() && std::getline(text, line)) {
    lines.push_back(line.substr(line.find_first_not_of(' ')));
  }
  return lines;
}

std::string dump_dot(const PostOrder& graph) {
  const std::vector<std::string> labels = node_lines(graph);
  std::vector<bool> is_root(graph.nodes.size(), false);
  for (const NodeOutput& root : graph.roots) is_root[root.node] = true;
  std::ostringstream out;
  out << "digraph \"graph " << std::hex << graph.hash << std::dec << "\" {\n  node [shape=box, fontname=monospace];\n";
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    out << "  n" << i << " [label=" << quoted(labels[i]);
    if (op_group(graph.nodes[i]->op()) == OpGroup::kCollective) out << ", style=filled, fillcolor=lightblue";
    if (is_root[i]) out << ", peripheries=2";
    out << "];\n";
  }
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    for (const Value& operand : graph.nodes[i]->operands()) {
      out << "  n" << graph.position(operand.node.get()) << " -> n" << i;
      if (operand.type().is_token) out << " [style=dashed, color=blue, label=token]";
      out << ";\n";
    }
  }
  out << "}\n";
  return out.str();
}

}  // namespace ordo::ir
