// Matmul: a [..., m, k] times b [..., k, n] into [..., m, n] (a 1-D operand
// as numpy.matmul takes it), the batch dims
// (all but the last two) broadcast numpy-style. float32 and float64 go
// through the BLAS (kernels/blas.h) in shape-fixed blocks (kernels/matmul.h),
// except the float32 products with a small operand that ordo's own tiles
// run faster (kernels/tile_gemm.h); the integer types through ordo's own loop.
#include "kernels/matmul.h"

#include <algorithm>
#include <functional>
#include <type_traits>

#include "device/free_cores.h"
#include "kernels/blas.h"
#include "kernels/kernels_internal.h"
#include "kernels/tile_gemm.h"

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

// c = a * b for one dense m x k and k x n pair of integer matrices. The
// i-p-j order makes the inner loop stream a row of b into a row of c, both
// contiguous, so it vectorizes.
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

// The batch dims of c (c's dims before its matrix; a 1-D operand's matrix
// dim is not in c) and the walk over c, a and b one matrix per step.
StridedWalk<3> batch_walk(const Shape& a, const Shape& b, const Shape& c, int64_t a_matrix, int64_t b_matrix,
                          int64_t c_matrix) {
  const auto squeezed = static_cast<int64_t>(a.size() < 2) + static_cast<int64_t>(b.size() < 2);
  const Shape batch(c.begin(), c.end() - (2 - squeezed));
  return {batch,
          {matrix_strides(contiguous_strides(batch), c_matrix),
           matrix_strides(broadcast_strides(batch_dims(as_matrix(a, true)), batch), a_matrix),
           matrix_strides(broadcast_strides(batch_dims(as_matrix(b, false)), batch), b_matrix)}};
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The blocking (see BlockedProduct). A block does at least this many flops
// (about 30 us of one core's gemm), so that handing it to another core pays;
// a 64 x 64 x 64 product (0.5 MFLOP) is one block.
constexpr int64_t kMinBlockFlops = int64_t{1} << 22;
// A panel's gemm packs all of b again, a cost that falls as panels grow:
// measured at 1024^2 f32 on one thread (OpenBLAS 0.3.21, the 2-core EPYC),
// one gemm 33.2 ms, 4 panels of 256 rows 33.5-33.9, 8 of 128 35.3-35.6, 16
// of 64 38.3-38.5 (the 15% that once put ordo at 0.85x numpy). So panels
// of 256 rows; a gemm of fewer than 1024 rows gets 4 panels of at least
// 128 (256^2: 2 panels, 3% over one gemm), so that a medium product still
// splits across two cores.
constexpr int64_t kPanelRows = 256;
constexpr int64_t kMinPanelRows = 128;
constexpr int64_t kSplitPanels = 4;
constexpr int64_t kPanelRowMultiple = 16;  // whole register tiles of the gemm kernels
constexpr int64_t kMaxPanelRows = int64_t{1} << 24;  // within the BLAS's int

}  // namespace

bool matmul_reads_transposed(DType dtype) { return dtype == DType::kFloat32 || dtype == DType::kFloat64; }

template <typename T>
BlockedProduct<T>::BlockedProduct(const MatmulShapes& shapes, const T* a, const T* b, T* c)
    : a_(a), b_(b), c_(c), transpose_a_(shapes.transpose_a), transpose_b_(shapes.transpose_b) {
  // The stored matrices: a is [m, k] or, transposed, [k, m]; b [k, n] or [n, k].
  const Shape a_matrix = as_matrix(shapes.a, true), b_matrix = as_matrix(shapes.b, false);
  const int64_t a_rows = a_matrix[a_matrix.size() - 2], b_rows = b_matrix[b_matrix.size() - 2];
  lda_ = a_matrix.back();
  ldb_ = b_matrix.back();
  const int64_t m = transpose_a_ ? lda_ : a_rows;
  k_ = transpose_a_ ? a_rows : lda_;
  n_ = transpose_b_ ? b_rows : ldb_;
  batch_ = batch_walk(shapes.a, shapes.b, shapes.c, m * k_, k_ * n_, m * n_);
  int64_t gemms = shape_numel(batch_.shape);
  // b shared by every matrix of a dense, untransposed a: one gemm over all
  // of a's rows ([B, m, k] @ [k, n] is a (B * m) x k product), not B small ones.
  const bool one_gemm = !transpose_a_ && shape_numel(batch_dims(b_matrix)) == 1 &&
                        shape_numel(batch_dims(a_matrix)) == gemms;
  m_ = one_gemm ? m * gemms : m;
  if (one_gemm) {
    batch_ = {};
    gemms = 1;
  }
  if (m_ == 0 || n_ == 0 || gemms == 0) return;  // nothing to write
  const int64_t row_flops = 2 * n_ * std::max<int64_t>(k_, 1);
  int64_t rows = std::max(ceil_div(kMinBlockFlops, row_flops),
                          std::clamp(ceil_div(m_, kSplitPanels), kMinPanelRows, kPanelRows));
  rows = std::min(ceil_div(rows, kPanelRowMultiple) * kPanelRowMultiple, kMaxPanelRows);
  panel_rows_ = std::min(rows, m_);
  panels_ = ceil_div(m_, panel_rows_);
  units_ = gemms * panels_;
  const int64_t unit_flops = panel_rows_ * row_flops;
  units_per_block_ = unit_flops >= kMinBlockFlops ? 1 : ceil_div(kMinBlockFlops, unit_flops);
  num_blocks_ = ceil_div(units_, units_per_block_);
}

template <typename T>
void BlockedProduct<T>::run_block(int64_t block) const {
  const int64_t end = std::min(units_, (block + 1) * units_per_block_);
  for (int64_t unit = block * units_per_block_; unit < end; ++unit) run_unit(unit);
}

// One panel of rows of one gemm's C.
template <typename T>
void BlockedProduct<T>::run_unit(int64_t unit) const {
  int64_t gemm = unit / panels_;
  const int64_t first_row = (unit % panels_) * panel_rows_;
  const int64_t rows = std::min(panel_rows_, m_ - first_row);
  int64_t offset[3] = {0, 0, 0};  // c, a, b
  for (size_t d = batch_.shape.size(); d-- > 0;) {
    const int64_t index = gemm % batch_.shape[d];
    gemm /= batch_.shape[d];
    for (size_t array = 0; array < 3; ++array) offset[array] += index * batch_.strides[array][d];
  }
  T* c = c_ + offset[0] + first_row * n_;
  if (k_ == 0) {  // an empty sum
    std::fill_n(c, rows * n_, T{0});
    return;
  }
  // Row i of op(a) is stored row i, or stored column i when transposed.
  const T* a = a_ + offset[1] + (transpose_a_ ? first_row : first_row * lda_);
  const blas::Operand<T> a_operand{a, lda_, transpose_a_}, b_operand{b_ + offset[2], ldb_, transpose_b_};
  if constexpr (std::is_same_v<T, float>) {
    const tile_gemm::ProductShape shape{rows, n_, k_, transpose_a_, transpose_b_};
    if (tile_gemm::takes(shape)) {
      tile_gemm::gemm(shape, a_operand, b_operand, c, n_);
      return;
    }
  }
  blas::gemm(rows, n_, k_, a_operand, b_operand, c, n_);
}

template class BlockedProduct<float>;
template class BlockedProduct<double>;

template <>
void run<ir::OpKind::kMatmul>(const KernelArgs& args) {
  const device::Buffer& a = *args.inputs[0];
  const device::Buffer& b = *args.inputs[1];
  const device::Buffer& c = make_output(args);
  const auto [transpose_a, transpose_b] = ir::decode<ir::OpKind::kMatmul>(args.attrs);
  visit_dtype(NumericTypes{}, c.dtype, [&]<typename T>(TypeTag<T>) {
    if constexpr (std::is_floating_point_v<T>) {
      const BlockedProduct<T> product({a.shape, b.shape, c.shape, transpose_a, transpose_b}, a.data<T>(),
                                      b.data<T>(), c.mutable_data<T>());
      if (product.num_blocks() == 1) {
        product.run_block(0);
      } else if (product.num_blocks() > 1) {
        device::run_blocks(product.num_blocks(), [&](int64_t block) { product.run_block(block); });
      }
    } else {
      ORDO_CHECK(!transpose_a && !transpose_b, ": the integer matmul got a transposed operand");
      const Shape a_matrix = as_matrix(a.shape, true);
      const int64_t m = a_matrix[a_matrix.size() - 2], k = a_matrix.back();
      const int64_t n = as_matrix(b.shape, false).back();
      for_each_row(batch_walk(a.shape, b.shape, c.shape, m * k, k * n, m * n),
                   [&](const auto& offset, int64_t count, const auto& stride) {
                     for (int64_t i = 0; i < count; ++i) {
                       multiply_matrices(a.data<T>() + offset[1] + i * stride[1],
                                         b.data<T>() + offset[2] + i * stride[2],
                                         c.mutable_data<T>() + offset[0] + i * stride[0], m, k, n);
                     }
                   });
    }
  });
}

}  // namespace ordo::kernels
