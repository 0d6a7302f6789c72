// Row functions: the loops of the elementwise ops, one per op and dtype,
// behind one signature, so that an op's kernel and a fused group of ops
// (kernels/fused.h) run the same code.
#pragma once

#include <cstdint>

#include "ir/ops.h"
#include "ordo/dtype.h"

namespace ordo::kernels {

// One operand of a row: element i is data[i * stride] (stride 0 repeats a
// single element, stride 1 is dense).
struct RowOperand {
  const void* data;
  int64_t stride;
};

// dst[i] = op(operands[0][i], ...) for i < n; dst is dense and aliases no
// operand.
using RowFn = void (*)(void* dst, int64_t n, const RowOperand* operands);

// The row function of an elementwise op whose first operand has dtype
// `operand` and whose result has dtype `result`; null for an op that is
// not elementwise. Throws InternalError for dtypes the op's builder would
// have refused.
RowFn row_fn(ir::OpKind op, DType operand, DType result);

}  // namespace ordo::kernels
