// Transposes as matmul flags, a compiler pass: a matmul operand made by a
// permute that swaps only its last two dims (x.T, x.transpose(-1, -2)) is
// read from the permute's input instead, the matmul step told to read it
// transposed (kernels/matmul.h: the BLAS does at no cost). Only where every
// reader of the permute is such a matmul: the permute then does not run.
// A permute that something else reads (another op, a root) runs as before
// and its matmuls read its result.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "ir/post_order.h"

namespace ordo::executor {

struct FoldedTransposes {
  // A matmul that reads an operand through a skipped permute.
  struct Matmul {
    int32_t node;                             // post-order position
    std::array<bool, 2> transposed;           // per operand
    std::array<ir::NodeOutput, 2> operands;   // what the step reads
  };
  std::vector<Matmul> matmuls;  // by node, increasing

  // The matmul at post-order position node, or null if it reads its operands as they are.
  const Matmul* find(int32_t node) const;
};

// Finds the matmuls to fold and removes their skipped permutes from order.
FoldedTransposes fold_transposes(const ir::PostOrder& graph, std::vector<int32_t>& order);

}  // namespace ordo::executor
