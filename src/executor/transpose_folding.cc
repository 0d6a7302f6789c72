#include "executor/transpose_folding.h"

#include <algorithm>

#include "kernels/matmul.h"

namespace ordo::executor {
namespace {

// A permutation that keeps every dim but swaps the last two.
bool swaps_last_two_dims(const ir::AttrInts& permutation) {
  const auto rank = static_cast<int64_t>(permutation.size());
  if (rank < 2) return false;
  for (int64_t d = 0; d < rank - 2; ++d) {
    if (permutation[d] != d) return false;
  }
  return permutation[rank - 2] == rank - 1 && permutation[rank - 1] == rank - 2;
}

// The permute whose result is operand v, if it is a last-two-dims swap.
const ir::Node* transposing_permute(const ir::Value& v) {
  const ir::Node* producer = v.node.get();
  if (producer->op() != ir::OpKind::kPermute || !swaps_last_two_dims(producer->attrs().ints)) return nullptr;
  return producer;
}

bool may_fold(const ir::Node& node) {
  return node.op() == ir::OpKind::kMatmul && kernels::matmul_reads_transposed(node.output(0).dtype);
}

}  // namespace

const FoldedTransposes::Matmul* FoldedTransposes::find(int32_t node) const {
  auto it = std::lower_bound(matmuls.begin(), matmuls.end(), node,
                             [](const Matmul& m, int32_t position) { return m.node < position; });
  return it != matmuls.end() && it->node == node ? &*it : nullptr;
}

FoldedTransposes fold_transposes(const ir::PostOrder& graph, std::vector<int32_t>& order) {
  FoldedTransposes folded;
  const auto has_candidate = [&](const ir::Node* node) {
    return may_fold(*node) && std::any_of(node->operands().begin(), node->operands().end(),
                                          [](const ir::Value& v) { return transposing_permute(v) != nullptr; });
  };
  // Most graphs have none: they pay one scan.
  if (std::none_of(graph.nodes.begin(), graph.nodes.end(), has_candidate)) return folded;
  // Readers of each node's value, and how many of them are foldable matmul operands.
  const size_t n = graph.nodes.size();
  std::vector<int32_t> readers(n, 0), folding_readers(n, 0);
  for (const ir::Node* node : graph.nodes) {
    const bool folds = may_fold(*node);
    for (const ir::Value& v : node->operands()) {
      const int32_t producer = graph.position(v.node.get());
      ++readers[producer];
      if (folds && transposing_permute(v) != nullptr) ++folding_readers[producer];
    }
  }
  for (const ir::NodeOutput& root : graph.roots) ++readers[root.node];
  std::vector<bool> skipped(n, false);
  for (size_t p = 0; p < n; ++p) skipped[p] = readers[p] > 0 && readers[p] == folding_readers[p];
  for (size_t p = 0; p < n; ++p) {
    const ir::Node& node = *graph.nodes[p];
    if (!may_fold(node)) continue;
    FoldedTransposes::Matmul matmul{static_cast<int32_t>(p), {false, false}, {}};
    for (size_t i = 0; i < 2; ++i) {
      const ir::Value& v = node.operands()[i];
      const int32_t producer = graph.position(v.node.get());
      matmul.operands[i] = {producer, v.index};
      if (!skipped[producer]) continue;
      const ir::Value& source = graph.nodes[producer]->operands()[0];
      matmul.operands[i] = {graph.position(source.node.get()), source.index};
      matmul.transposed[i] = true;
    }
    if (matmul.transposed[0] || matmul.transposed[1]) folded.matmuls.push_back(matmul);
  }
  std::erase_if(order, [&](int32_t position) { return skipped[position]; });
  return folded;
}

}  // namespace ordo::executor
