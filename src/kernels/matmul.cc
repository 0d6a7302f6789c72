// Matmul: a [..., m, k] times b [..., k, n] into [..., m, n], the batch dims
// (all but the last two) broadcast numpy-style.
#include <algorithm>
#include <functional>

#include "kernels/kernels_internal.h"
#include "kernels/strided_walk.h"

namespace ordo::kernels {
namespace {

template <typename T>
T multiply_add(T acc, T a, T b) {
  return wrapping(acc, wrapping(a, b, std::multiplies<>{}), std::plus<>{});
}

// c_row += a * b_row. The rows never overlap (c is a fresh buffer); saying
// so with __restrict lets the compiler vectorize without a runtime check.
// The fixed-width blocks are for -O2 builds: GCC 12 there vectorizes
// fixed-length loops but not loops of unknown length (3x faster there).
template <typename T>
void add_scaled_row(T* __restrict c_row, const T* __restrict b_row, T a, int64_t n) {
  constexpr int64_t kBlock = 8;
  int64_t j = 0;
  for (; j + kBlock <= n; j += kBlock) {
    for (int64_t u = 0; u < kBlock; ++u) c_row[j + u] = multiply_add(c_row[j + u], a, b_row[j + u]);
  }
  for (; j < n; ++j) c_row[j] = multiply_add(c_row[j], a, b_row[j]);
}

// c = a * b for one dense m x k and k x n pair. The i-p-j order makes the
// inner loop stream a row of b into a row of c, both contiguous, so it
// vectorizes; each c[i][j] still sums over p in increasing order, so results
// are deterministic. float32 accumulates in float: speed over the last bit.
template <typename T>
void multiply_matrices(const T* a, const T* b, T* c, int64_t m, int64_t k, int64_t n) {
  for (int64_t i = 0; i < m; ++i) {
    T* c_row = c + i * n;
    std::fill_n(c_row, n, T{0});
    for (int64_t p = 0; p < k; ++p) add_scaled_row(c_row, b + p * n, a[i * k + p], n);
  }
}

Shape batch_dims(const Shape& shape) { return Shape(shape.begin(), shape.end() - 2); }

// Batch strides counted in elements: one batch step skips a whole matrix.
Strides matrix_strides(Strides batch_strides, int64_t matrix_size) {
  for (int64_t& stride : batch_strides) stride *= matrix_size;
  return batch_strides;
}

}  // namespace

template <>
void run<ir::OpKind::kMatmul>(const KernelArgs& args) {
  const device::Buffer& a = *args.inputs[0];
  const device::Buffer& b = *args.inputs[1];
  const device::Buffer& c = make_output(args);
  const size_t rank = c.shape.size();
  const int64_t m = c.shape[rank - 2];
  const int64_t n = c.shape[rank - 1];
  const int64_t k = a.shape.back();
  const Shape batch = batch_dims(c.shape);
  // Array 0 is c, 1 is a, 2 is b; one walk step is one matrix product.
  const StridedWalk<3> walk{
      batch,
      {matrix_strides(contiguous_strides(batch), m * n),
       matrix_strides(broadcast_strides(batch_dims(a.shape), batch), m * k),
       matrix_strides(broadcast_strides(batch_dims(b.shape), batch), k * n)}};
  visit_dtype(NumericTypes{}, c.dtype, [&]<typename T>(TypeTag<T>) {
    for_each_row(walk, [&](const auto& offset, int64_t count, const auto& stride) {
      for (int64_t i = 0; i < count; ++i) {
        multiply_matrices(a.data<T>() + offset[1] + i * stride[1],
                          b.data<T>() + offset[2] + i * stride[2],
                          c.mutable_data<T>() + offset[0] + i * stride[0], m, k, n);
      }
    });
  });
}

}  // namespace ordo::kernels
