#include "executor/transpose_folding.h"

#include <algorithm>

#include "ir/op_attrs.h"
#include "kernels/matmul.h"

namespace ordo::executor {
namespace {

// A permutation that keeps every dim but swaps the last two.
bool swaps_last_two_dims(std::span<const int64_t> permutation) {
  const auto rank = static_cast<int64_t>(permutation.size());
  if (rank < 2) return false;
  for (int64_t d = 0; d < rank - 2; ++d) {
    if (permutation[d] != d) return false;
  }
  return permutation[rank - 2] == rank - 1 && permutation[rank - 1] == rank - 2;
}

bool is_transpose(const ir::Node& node) {
  return node.op() == ir::OpKind::kPermute &&
         swaps_last_two_dims(ir::attrs_of<ir::PermuteAttrs>(node).permutation);
}

bool is_same_shape_reshape(const ir::Node& node) {
  return node.op() == ir::OpKind::kReshape && node.output(0).shape == node.operands()[0].type().shape;
}

// What a matmul reads through: its operand flipped, or as it is.
bool is_view(const ir::Node& node) { return is_transpose(node) || is_same_shape_reshape(node); }

bool may_fold(const ir::Node& node) {
  return node.op() == ir::OpKind::kMatmul && kernels::matmul_reads_transposed(node.output(0).dtype);
}

struct Operand {
  ir::NodeOutput source;
  bool transposed;
};

bool operands_are_matrices(const ir::Node& matmul) {
  return std::all_of(matmul.operands().begin(), matmul.operands().end(),
                     [](const ir::Value& v) { return v.type().shape.size() >= 2; });
}

class Folder {
 public:
  explicit Folder(const ir::PostOrder& graph)
      : graph_(graph),
        readers_(graph.nodes.size(), 0),
        skipped_(graph.nodes.size(), false),
        runs_as_product_(graph.nodes.size(), false) {
    for (const ir::Node* node : graph.nodes) {
      for (const ir::Value& v : node->operands()) ++readers_[position(v)];
    }
    // A root is a reader that needs the value itself.
    for (const ir::NodeOutput& root : graph.roots) ++readers_[root.node];
  }

  FoldedTransposes fold() {
    for (size_t p = 0; p < graph_.nodes.size(); ++p) {
      const ir::Node& node = *graph_.nodes[p];
      if (is_transpose(node)) fold_transposed_product(static_cast<int32_t>(p));
    }
    skip_views_read_through();
    for (size_t p = 0; p < graph_.nodes.size(); ++p) {
      const ir::Node& node = *graph_.nodes[p];
      if (may_fold(node) && !skipped_[p]) fold_operands(static_cast<int32_t>(p));
    }
    std::sort(folded_.matmuls.begin(), folded_.matmuls.end(),
              [](const FoldedTransposes::Matmul& a, const FoldedTransposes::Matmul& b) { return a.node < b.node; });
    return std::move(folded_);
  }

  bool skipped(int32_t position) const { return skipped_[position]; }

 private:
  int32_t position(const ir::Value& v) const { return graph_.position(v.node.get()); }

  // A permute run as a product is a value of its own, not a view.
  bool reads_through(const ir::Value& v) const { return is_view(*v.node) && !runs_as_product_[position(v)]; }

  // The value below v's chain of views, and whether they flip it.
  Operand through_views(const ir::Value& v) const {
    const ir::Value* value = &v;
    bool transposed = false;
    while (reads_through(*value)) {
      transposed ^= is_transpose(*value->node);
      value = &value->node->operands()[0];
    }
    return {{position(*value), value->index}, transposed};
  }

  // permute(matmul(a, b)) = matmul(b^T, a^T), when the permute (through
  // same-shape reshapes) is all that reads the product.
  void fold_transposed_product(int32_t permute) {
    std::vector<int32_t> chain;
    const ir::Value* value = &graph_.nodes[permute]->operands()[0];
    while (is_same_shape_reshape(*value->node) && readers_[position(*value)] == 1) {
      chain.push_back(position(*value));
      value = &value->node->operands()[0];
    }
    const int32_t product = position(*value);
    const ir::Node& matmul = *graph_.nodes[product];
    if (!may_fold(matmul) || readers_[product] != 1 || !operands_are_matrices(matmul)) return;
    const Operand a = through_views(matmul.operands()[0]);
    const Operand b = through_views(matmul.operands()[1]);
    folded_.matmuls.push_back({permute, {!b.transposed, !a.transposed}, {b.source, a.source}});
    runs_as_product_[permute] = true;
    skipped_[product] = true;
    for (int32_t reshape : chain) skipped_[reshape] = true;
  }

  // A view is skipped when every reader reads through it: a float matmul,
  // or a node that does not run (a skipped view, a product folded into a
  // permute). Readers come after a node in post-order, so one pass from the
  // end sees every reader of a node before the node.
  void skip_views_read_through() {
    std::vector<int32_t> through(graph_.nodes.size(), 0);
    for (size_t p = graph_.nodes.size(); p-- > 0;) {
      const ir::Node& node = *graph_.nodes[p];
      if (is_view(node) && !runs_as_product_[p] && readers_[p] > 0 && through[p] == readers_[p]) skipped_[p] = true;
      if (!skipped_[p] && !may_fold(node)) continue;
      for (const ir::Value& v : node.operands()) ++through[position(v)];
    }
  }

  void fold_operands(int32_t position) {
    const ir::Node& node = *graph_.nodes[position];
    FoldedTransposes::Matmul matmul{position, {false, false}, {}};
    bool changed = false;
    for (size_t i = 0; i < 2; ++i) {
      const ir::Value& v = node.operands()[i];
      const Operand operand = through_views(v);
      matmul.operands[i] = operand.source;
      matmul.transposed[i] = operand.transposed;
      changed = changed || operand.transposed || operand.source.node != this->position(v);
    }
    if (changed) folded_.matmuls.push_back(matmul);
  }

  const ir::PostOrder& graph_;
  std::vector<int32_t> readers_;  // operand uses and roots
  std::vector<bool> skipped_;
  std::vector<bool> runs_as_product_;  // transposing permutes run as a swapped matmul
  FoldedTransposes folded_;
};

}  // namespace

const FoldedTransposes::Matmul* FoldedTransposes::find(int32_t node) const {
  auto it = std::lower_bound(matmuls.begin(), matmuls.end(), node,
                             [](const Matmul& m, int32_t position) { return m.node < position; });
  return it != matmuls.end() && it->node == node ? &*it : nullptr;
}

FoldedTransposes fold_transposes(const ir::PostOrder& graph, std::vector<int32_t>& order) {
  // Most graphs have no transpose: they pay one scan.
  if (std::none_of(graph.nodes.begin(), graph.nodes.end(), [](const ir::Node* node) { return is_transpose(*node); })) {
    return {};
  }
  Folder folder(graph);
  FoldedTransposes folded = folder.fold();
  std::erase_if(order, [&](int32_t position) { return folder.skipped(position); });
  return folded;
}

}  // namespace ordo::executor
