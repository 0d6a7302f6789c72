#include "kernels/tile_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <memory>

namespace ordo::kernels::tile_gemm {
namespace {

// A tile of c: kTileRows rows of the large operand (each element broadcast)
// times kTileCols columns of the small one (two 16-float vectors): 20
// accumulators and two vectors, within AVX-512's 32 registers. Ten rows,
// not the twelve or fourteen that also fit: a layer's weight rows lie 4 KiB
// apart when k is 1024, and more than ten such rows at once evict each other
// from the L1 (on a Zen 4 core, 128x1024x1024: 106 GFLOP/s at ten rows, 96
// at twelve, 80 at fourteen).
constexpr int64_t kTileRows = 10;
constexpr int64_t kTileCols = 32;
// Below this depth a tile's setup and stores outweigh its multiply-adds.
constexpr int64_t kMinDepth = 16;
// The small operand is swept once per kTileRows rows of the large one, so it
// must stay in the L2: 512 KiB, half of a Zen 4 core's (a [128, 1024] batch).
constexpr int64_t kMaxSmallFloats = int64_t{128} << 10;

bool has_avx512() {
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
}

// tile[r][j] = sum over p < depth, in order, of rows[r][p] *
// panel[p * kTileCols + j], for r < kTileRows and j < kTileCols: `panel` is
// a packed panel of the small operand (depth-major, padded with zeros).
__attribute__((target("avx512f"))) void multiply_tile(const float* const* rows, const float* panel, int64_t depth,
                                                      float* tile) {
  __m512 sums[kTileRows][2];
#pragma GCC unroll 10
  for (int64_t r = 0; r < kTileRows; ++r) sums[r][0] = sums[r][1] = _mm512_setzero_ps();
  for (int64_t p = 0; p < depth; ++p) {
    const float* column = panel + p * kTileCols;
    const __m512 low = _mm512_loadu_ps(column);
    const __m512 high = _mm512_loadu_ps(column + 16);
#pragma GCC unroll 10
    for (int64_t r = 0; r < kTileRows; ++r) {
      const __m512 scalar = _mm512_set1_ps(rows[r][p]);
      sums[r][0] = _mm512_fmadd_ps(scalar, low, sums[r][0]);
      sums[r][1] = _mm512_fmadd_ps(scalar, high, sums[r][1]);
    }
  }
#pragma GCC unroll 10
  for (int64_t r = 0; r < kTileRows; ++r) {
    _mm512_storeu_ps(tile + r * kTileCols, sums[r][0]);
    _mm512_storeu_ps(tile + r * kTileCols + 16, sums[r][1]);
  }
}

// Pointers to `count` rows from `first`, `stride` apart; a tile's rows past
// the last row repeat it (their sums are not stored).
void tile_rows(const float* first, int64_t stride, int64_t count, const float* (&rows)[kTileRows]) {
  for (int64_t r = 0; r < kTileRows; ++r) rows[r] = first + std::min(r, count - 1) * stride;
}

// A thread's buffer for the packed small operand, 64-byte aligned, kept
// between calls (a worker runs the same products every step).
float* packing_buffer(int64_t floats) {
  struct Buffer {
    std::unique_ptr<float[]> storage;
    int64_t capacity = 0;
  };
  thread_local Buffer buffer;
  constexpr int64_t kAlignFloats = 16;
  if (buffer.capacity < floats) {
    buffer.storage = std::make_unique<float[]>(static_cast<size_t>(floats + kAlignFloats));
    buffer.capacity = floats;
  }
  const auto address = reinterpret_cast<uintptr_t>(buffer.storage.get());
  return buffer.storage.get() + (-address / sizeof(float)) % kAlignFloats;
}

// c = a * b^T: a [m, k] (the small operand) is packed into panels of
// kTileCols rows, each stored depth-major (the panel's kTileCols values of
// one k side by side, rows past m as 0); b's rows are read where they lie,
// kTileRows at a time, and each tile is stored transposed into c.
void multiply_nt(const ProductShape& s, blas::Operand<float> a, blas::Operand<float> b, float* c, int64_t ldc) {
  const int64_t panels = (s.m + kTileCols - 1) / kTileCols, panel_floats = s.k * kTileCols;
  float* packed = packing_buffer(panels * panel_floats);
  for (int64_t panel = 0; panel < panels; ++panel) {
    float* out = packed + panel * panel_floats;
    const int64_t first = panel * kTileCols, cols = std::min(kTileCols, s.m - first);
    for (int64_t p = 0; p < s.k; ++p) {
      for (int64_t j = 0; j < cols; ++j) out[p * kTileCols + j] = a.data[(first + j) * a.leading_dim + p];
      std::fill(out + p * kTileCols + cols, out + (p + 1) * kTileCols, 0.0f);
    }
  }
  alignas(64) float tile[kTileRows * kTileCols];
  const float* rows[kTileRows];
  for (int64_t first_row = 0; first_row < s.n; first_row += kTileRows) {
    const int64_t count = std::min(kTileRows, s.n - first_row);
    tile_rows(b.data + first_row * b.leading_dim, b.leading_dim, count, rows);
    for (int64_t panel = 0; panel < panels; ++panel) {
      multiply_tile(rows, packed + panel * panel_floats, s.k, tile);
      const int64_t first = panel * kTileCols, cols = std::min(kTileCols, s.m - first);
      for (int64_t j = 0; j < cols; ++j) {
        float* out = c + (first + j) * ldc + first_row;
        for (int64_t r = 0; r < count; ++r) out[r] = tile[r * kTileCols + j];
      }
    }
  }
}

// c = a^T * b: a is [k, m] and b [k, n] (the small operand). b is packed
// into panels of kTileCols columns, depth-major (columns past n as 0); a's
// columns are copied kTileRows at a time into a slab, each column's k values
// side by side, which every panel then reads (read in place, a's columns lie
// m apart, and a tile ran at 80-90 GFLOP/s instead of 105).
void multiply_tn(const ProductShape& s, blas::Operand<float> a, blas::Operand<float> b, float* c, int64_t ldc) {
  const int64_t panels = (s.n + kTileCols - 1) / kTileCols, panel_floats = s.k * kTileCols;
  float* packed = packing_buffer(panels * panel_floats + s.k * kTileRows);
  float* slab = packed + panels * panel_floats;
  for (int64_t panel = 0; panel < panels; ++panel) {
    float* out = packed + panel * panel_floats;
    const int64_t first = panel * kTileCols, cols = std::min(kTileCols, s.n - first);
    for (int64_t p = 0; p < s.k; ++p) {
      std::memcpy(out + p * kTileCols, b.data + p * b.leading_dim + first, static_cast<size_t>(cols) * sizeof(float));
      std::fill(out + p * kTileCols + cols, out + (p + 1) * kTileCols, 0.0f);
    }
  }
  alignas(64) float tile[kTileRows * kTileCols];
  const float* rows[kTileRows];
  for (int64_t first_row = 0; first_row < s.m; first_row += kTileRows) {
    const int64_t count = std::min(kTileRows, s.m - first_row);
    for (int64_t p = 0; p < s.k; ++p) {
      for (int64_t r = 0; r < kTileRows; ++r) slab[r * s.k + p] = a.data[p * a.leading_dim + first_row + std::min(r, count - 1)];
    }
    tile_rows(slab, s.k, kTileRows, rows);
    for (int64_t panel = 0; panel < panels; ++panel) {
      const int64_t first = panel * kTileCols, cols = std::min(kTileCols, s.n - first);
      multiply_tile(rows, packed + panel * panel_floats, s.k, tile);
      for (int64_t r = 0; r < count; ++r) {
        std::memcpy(c + (first_row + r) * ldc + first, tile + r * kTileCols, static_cast<size_t>(cols) * sizeof(float));
      }
    }
  }
}

}  // namespace

bool takes(const ProductShape& s) {
  if (s.k < kMinDepth || !has_avx512()) return false;
  if (!s.transpose_a && s.transpose_b) return s.m >= kTileCols / 2 && s.n >= kTileRows && s.m * s.k <= kMaxSmallFloats;
  if (s.transpose_a && !s.transpose_b) return s.n >= kTileCols / 2 && s.m >= kTileRows && s.n * s.k <= kMaxSmallFloats;
  return false;
}

void gemm(const ProductShape& shape, blas::Operand<float> a, blas::Operand<float> b, float* c, int64_t ldc) {
  if (shape.transpose_b) {
    multiply_nt(shape, a, b, c, ldc);
  } else {
    multiply_tn(shape, a, b, c, ldc);
  }
}

}  // namespace ordo::kernels::tile_gemm
