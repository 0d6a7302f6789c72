// The BLAS behind float matmul: Debian's OpenBLAS through its C interface,
// used only here and in matmul.cc (like ggml's BLAS backend, it takes the
// one op it does best). Every call runs on the calling thread: OpenBLAS's
// own threads are switched off before the first call, since ordo splits a
// large product itself, in shape-fixed blocks on its free cores
// (device/free_cores.h), and OpenBLAS's threads would take cores that
// devices' workers are pinned to.
//
//   blas::gemm(m, n, k, {a, k, false}, {b, n, false}, c, n);  // c = a * b
#pragma once

#include <cstdint>

namespace ordo::kernels::blas {

// A row-major operand of a product: op(x) is x, or x transposed, read
// through leading_dim elements from one stored row to the next.
template <typename T>
struct Operand {
  const T* data;
  int64_t leading_dim;
  bool transposed;
};

// c = op(a) * op(b) for an m x k op(a) and a k x n op(b), into rows of
// ldc elements of c. m, n and k are at least 1; each dim and leading dim
// must fit the BLAS's 32-bit int (else ExecutionError).
void gemm(int64_t m, int64_t n, int64_t k, Operand<float> a, Operand<float> b, float* c, int64_t ldc);
void gemm(int64_t m, int64_t n, int64_t k, Operand<double> a, Operand<double> b, double* c, int64_t ldc);

}  // namespace ordo::kernels::blas
