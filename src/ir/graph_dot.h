// A graph as Graphviz's DOT, for ORDO_SAVE_GRAPHS_FMT=dot:
//
//   std::string dot = ir::dump_dot(ir::post_order(roots));  // dot -Tsvg
//
// One node per IR node, labelled with its line of ir::dump (op, operands,
// attributes, type); edges go from operand to user. Collectives are filled
// boxes, token edges dashed, roots drawn with a double border.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ir/post_order.h"

namespace ordo::ir {

std::string dump_dot(const PostOrder& graph);

// The lines of ir::dump(graph) that describe its nodes, in post-order
// ("%3 = mul(%1, %2) : float32[2, 2]", without the indent).
std::vector<std::string> node_lines(const PostOrder& graph);

}  // namespace ordo::ir
