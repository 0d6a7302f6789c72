// Row functions: the loops of the elementwise ops, one per op and dtype,
// behind one signature, so that an op's kernel and a fused group of ops
// (kernels/fused.h) run the same code.
#pragma once

#include <cstdint>
#include <type_traits>

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

// A large elementwise op (or fused group) runs on the free cores
// (device/free_cores.h) in blocks of about kRowBlockElements elements: a
// few rows, or part of one long row. The blocks depend only on the shape,
// and every element's result only on its operands, so the output has the
// same bits whatever the number of threads. An op of one block runs on the
// calling thread directly.
inline constexpr int64_t kRowBlockElements = int64_t{1} << 16;

struct RowBlock {
  int64_t first_row, rows;        // rows [first_row, first_row + rows)
  int64_t first_column, columns;  // of each, columns [first_column, first_column + columns)
};

// The blocks of `rows` rows of `length` elements each.
class RowBlocks {
 public:
  RowBlocks(int64_t rows, int64_t length);
  int64_t count() const { return count_; }
  RowBlock operator[](int64_t block) const;

 private:
  int64_t rows_, length_;
  int64_t rows_per_block_;    // when a row is shorter than a block
  int64_t blocks_per_row_;    // when it is not
  int64_t count_;
};

// Runs body(const RowBlock&) for every block of rows x length.
void run_row_blocks(int64_t rows, int64_t length, void (*body)(void* context, const RowBlock& block),
                    void* context);

template <typename Body>
void run_row_blocks(int64_t rows, int64_t length, Body&& body) {
  run_row_blocks(
      rows, length,
      [](void* context, const RowBlock& block) { (*static_cast<std::remove_reference_t<Body>*>(context))(block); },
      const_cast<void*>(static_cast<const void*>(&body)));
}

}  // namespace ordo::kernels
