// Matmul: a [..., m, k] times b [..., k, n] into [..., m, n] (a 1-D operand
// as numpy.matmul takes it), the batch dims
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

// numpy.matmul: a 1-D left operand is a row [1, k], a 1-D right operand a
// column [k, 1]. The output's memory is that of [batch..., m, n] either way.
Shape as_matrix(const Shape& shape, bool left) {
  if (shape.size() >= 2) return shape;
  return left ? Shape{1, shape[0]} : Shape{shape[0], 1};
}

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
  const Shape a_shape = as_matrix(a.shape, true);
  const Shape b_shape = as_matrix(b.shape, false);
  const int64_t m = a_shape[a_shape.size() - 2];
  const int64_t k = a_shape.back();
  const int64_t n = b_shape.back();
  const auto squeezed = static_cast<int64_t>(a.shape.size() < 2) + static_cast<int64_t>(b.shape.size() < 2);
  const Shape batch(c.shape.begin(), c.shape.end() - (2 - squeezed));
  // Array 0 is c, 1 is a, 2 is b; one walk step is one matrix product.
  const StridedWalk<3> walk{
      batch,
      {matrix_strides(contiguous_strides(batch), m * n),
       matrix_strides(broadcast_strides(batch_dims(a_shape), batch), m * k),
       matrix_strides(broadcast_strides(batch_dims(b_shape), batch), k * n)}};
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
