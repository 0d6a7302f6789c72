// The pieces of the matmul kernel that the compiler and the tests see.
//
// A matmul node has no attrs; a plan's matmul step may have ints
// {transpose_a, transpose_b}: 1 where the compiler passes the input of a
// permute that swapped the operand's last two dims instead of the permute's
// result (executor/transpose_folding.h), so the kernel reads that operand
// transposed, as the BLAS can at no cost.
//
// A float product runs through the BLAS (kernels/blas.h) in blocks fixed by
// the shapes alone: row panels of C, several small products per block, or
// one block for a small product. Blocks run in any order on any threads and
// give bitwise the same C.
//
//   BlockedProduct<float> product({a.shape, b.shape, c.shape, false, true}, a_data, b_data, c_data);
//   device::run_blocks(product.num_blocks(), [&](int64_t block) { product.run_block(block); });
#pragma once

#include <cstdint>

#include "kernels/strided_walk.h"
#include "ordo/dtype.h"

namespace ordo::kernels {

// Whether a matmul of this dtype takes transposed operands (the BLAS
// dtypes; the integer loop reads its operands as they are).
bool matmul_reads_transposed(DType dtype);

// One matmul's buffers' shapes as numpy.matmul takes them (1-D operands
// included), and which operand buffers hold their operand transposed.
struct MatmulShapes {
  Shape a, b, c;
  bool transpose_a = false;
  bool transpose_b = false;
};

template <typename T>
class BlockedProduct {
 public:
  BlockedProduct(const MatmulShapes& shapes, const T* a, const T* b, T* c);

  int64_t num_blocks() const { return num_blocks_; }
  // Writes block's part of C; the blocks together write all of it.
  void run_block(int64_t block) const;

 private:
  void run_unit(int64_t unit) const;

  const T* a_;
  const T* b_;
  T* c_;
  int64_t m_ = 0, k_ = 0, n_ = 0;  // of one gemm: m_ counts every folded batch's rows
  bool transpose_a_, transpose_b_;
  int64_t lda_ = 0, ldb_ = 0;
  StridedWalk<3> batch_;  // one step per gemm; arrays c, a, b; strides in elements
  int64_t panel_rows_ = 0, panels_ = 0;  // C's rows per panel of one gemm, panels per gemm
  int64_t units_ = 0;                    // gemms * panels
  int64_t units_per_block_ = 1, num_blocks_ = 0;
};

}  // namespace ordo::kernels
