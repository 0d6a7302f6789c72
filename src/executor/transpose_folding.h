// Transposes as matmul flags, a compiler pass. The BLAS reads an operand
// transposed at no cost (kernels/matmul.h), so a float matmul reads its
// operands through views: a permute that swaps only the last two dims
// (x.T, x.transpose(-1, -2)) flips the operand, a reshape to the same shape
// (the autograd rules leave them) keeps it, so a chain of them folds into
// one flag: x.T.T is x. And the transpose of a product is the product of
// the transposes swapped, (a b)^T = b^T a^T: a transposing permute of a
// float matmul's result that nothing else reads (through same-shape
// reshapes) runs as that matmul with its operands swapped and flipped,
// instead of a product and a strided copy. The autograd rule of x @ w.T
// makes both: the gradient of w is (x^T g)^T, and of x, g @ w.T.T.
//
// A view runs only if something other than such a matmul, or another view
// that does not run, reads it (another op, a root); its matmuls still read
// through it.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "ir/post_order.h"

namespace ordo::executor {

struct FoldedTransposes {
  // A matmul step whose operands are not the node's own: a matmul reading
  // through views, or a transposing permute run as the swapped product.
  struct Matmul {
    int32_t node;                             // post-order position of the step's node
    std::array<bool, 2> transposed;           // per operand
    std::array<ir::NodeOutput, 2> operands;   // what the step reads
  };
  std::vector<Matmul> matmuls;  // by node, increasing

  // The matmul step at post-order position node, or null if that node runs as it is.
  const Matmul* find(int32_t node) const;
};

// Finds the matmuls to fold and removes the nodes that no longer run from order.
FoldedTransposes fold_transposes(const ir::PostOrder& graph, std::vector<int32_t>& order);

}  // namespace ordo::executor
