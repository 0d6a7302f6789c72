#include "kernels/blas.h"

#include <cblas.h>

#include <limits>

#include "ordo/error.h"

namespace ordo::kernels::blas {
namespace {

// Once per process, before the first product (a thread-safe static):
// OpenBLAS reads its thread count at each call, so from here on every call
// runs on its caller. The count is process-wide: numpy in the same process
// shares Debian's libopenblas.so.0 (its libblas.so.3 is a wrapper of it)
// and runs single-threaded from then on too.
void run_on_calling_thread() {
  static const bool single_threaded = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)single_threaded;
}

blasint blas_int(int64_t value, const char* what) {
  if (value > std::numeric_limits<blasint>::max()) {
    throw_error<ExecutionError>("matmul: ", what, " ", value, " exceeds the BLAS's limit of ",
                                std::numeric_limits<blasint>::max());
  }
  return static_cast<blasint>(value);
}

CBLAS_TRANSPOSE transpose_flag(bool transposed) { return transposed ? CblasTrans : CblasNoTrans; }

struct Dims {
  blasint m, n, k, lda, ldb, ldc;
};

template <typename T>
Dims checked_dims(int64_t m, int64_t n, int64_t k, const Operand<T>& a, const Operand<T>& b, int64_t ldc) {
  run_on_calling_thread();
  return {blas_int(m, "a dimension"), blas_int(n, "a dimension"), blas_int(k, "a dimension"),
          blas_int(a.leading_dim, "a row length"), blas_int(b.leading_dim, "a row length"),
          blas_int(ldc, "a row length")};
}

}  // namespace

void gemm(int64_t m, int64_t n, int64_t k, Operand<float> a, Operand<float> b, float* c, int64_t ldc) {
  const Dims d = checked_dims(m, n, k, a, b, ldc);
  cblas_sgemm(CblasRowMajor, transpose_flag(a.transposed), transpose_flag(b.transposed), d.m, d.n, d.k, 1.0f,
              a.data, d.lda, b.data, d.ldb, 0.0f, c, d.ldc);
}

void gemm(int64_t m, int64_t n, int64_t k, Operand<double> a, Operand<double> b, double* c, int64_t ldc) {
  const Dims d = checked_dims(m, n, k, a, b, ldc);
  cblas_dgemm(CblasRowMajor, transpose_flag(a.transposed), transpose_flag(b.transposed), d.m, d.n, d.k, 1.0,
              a.data, d.lda, b.data, d.ldb, 0.0, c, d.ldc);
}

}  // namespace ordo::kernels::blas
