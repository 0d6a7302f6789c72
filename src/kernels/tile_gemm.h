// ordo's own float32 product for the two forms a training step repeats,
// where one operand is small (a batch of rows, or two such batches):
//
//   NT  c = a * b^T   a layer's forward, x @ w.T (a: [m, k], b: [n, k])
//   TN  c = a^T * b   a weight's gradient, g.T @ x (a: [k, m], b: [k, n])
//
// A BLAS packs both operands of every call into buffers of their size;
// here the large operand is read where it lies (w's rows) or ten columns
// at a time into a slab that stays in the L1 (g's), and only the small one
// is packed whole. On the wide MLP's products (batch 128 per device) this
// runs at 102-111 GFLOP/s on one Zen 4 core (its peak: 117) where OpenBLAS
// 0.3.21 reaches 85-104 (BENCHMARKS.md, #15).
//
// It needs AVX-512; on other CPUs, and for shapes outside `takes`, matmul
// keeps the BLAS (kernels/blas.h). Each element of c sums its k products in
// order, so a product is bitwise the same whichever thread runs it, though
// not bitwise the BLAS's.
//
//   const tile_gemm::ProductShape shape{m, n, k, false, true};
//   if (tile_gemm::takes(shape)) tile_gemm::gemm(shape, {a, k, false}, {b, k, true}, c, n);
#pragma once

#include <cstdint>

#include "kernels/blas.h"

namespace ordo::kernels::tile_gemm {

// The dims of c = op(a) * op(b) (m x n, depth k) and which operands are
// stored transposed, as blas::gemm takes them.
struct ProductShape {
  int64_t m, n, k;
  bool transpose_a, transpose_b;
};

// Whether gemm below runs this float32 product on this CPU: one of the two
// forms, AVX-512 present, and the small operand within half of a core's L2.
bool takes(const ProductShape& shape);

// c = op(a) * op(b), rows of ldc elements, for a shape `takes` accepted.
void gemm(const ProductShape& shape, blas::Operand<float> a, blas::Operand<float> b, float* c, int64_t ldc);

}  // namespace ordo::kernels::tile_gemm
