// The reduce types of collectives and their reduction across ranks, for
// every backend: whoever reduces (one share per rank in process, a receive
// buffer in another backend) combines the ranks in rank order with these,
// so results are bitwise the same whoever computes them.
//
//   // dst = scale * (rank 0 op rank 1 op ...), n elements; source(q) is
//   // rank q's first element.
//   reduce_ranks<float>(dst, ranks, [&](size_t q) { return inputs[q]; }, n, ReduceType::kSum, 0.5);
//
// Everything is always inlined, so that a caller compiled for AVX2 gets
// AVX2 loops, and each reduce type is its own functor, compiled once per
// type into loops that vectorize.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <type_traits>

#include "core/arithmetic.h"
#include "core/half_float.h"
#include "ordo/collective_types.h"

namespace ordo::comm {

// a op b, with a holding the earlier ranks: integers wrap (core/arithmetic.h),
// bool sums and products are or and and, min and max propagate NaN (of two
// NaNs the later rank's, as since the collectives landed).
struct Sum {
  template <typename T>
  [[gnu::always_inline]] T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>) {
      return a || b;
    } else if constexpr (std::is_integral_v<T>) {
      return wrapping(a, b, std::plus<>{});
    } else {
      return a + b;
    }
  }
};
struct Mul {
  template <typename T>
  [[gnu::always_inline]] T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>) {
      return a && b;
    } else if constexpr (std::is_integral_v<T>) {
      return wrapping(a, b, std::multiplies<>{});
    } else {
      return a * b;
    }
  }
};
using Min = Extreme<std::less<>, NanOfTwo::kSecond>;
using Max = Extreme<std::greater<>, NanOfTwo::kSecond>;
// Bitwise ops exist for integers only (checked when traced).
struct And {
  template <typename T>
  [[gnu::always_inline]] T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) return static_cast<T>(a & b);
    return a;
  }
};
struct Or {
  template <typename T>
  [[gnu::always_inline]] T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) return static_cast<T>(a | b);
    return a;
  }
};

// dst = a op b. dst may be a.
template <typename T, typename Op>
[[gnu::always_inline]] inline void fold(T* dst, const T* a, const T* b, int64_t n, Op op) {
  for (int64_t i = 0; i < n; ++i) dst[i] = op(a[i], b[i]);
}

// dst = source(0) op source(1) op ...: the first fold reads two sources in
// one pass instead of copying one first.
template <typename T, typename Source, typename Op>
[[gnu::always_inline]] inline void fold_ranks(T* dst, size_t ranks, const Source& source, int64_t n, Op op) {
  fold(dst, source(0), source(1), n, op);
  for (size_t q = 2; q < ranks; ++q) fold(dst, dst, source(q), n, op);
}

// x * scale in double, back in T. For integers a product outside T's range
// saturates, as a cast from float does (kernels/elementwise.cc: convert).
// A finite scale (checked when traced) of an integer is no NaN.
template <typename T>
[[gnu::always_inline]] inline T scaled_value(T x, double scale) {
  const double v = static_cast<double>(x) * scale;
  if constexpr (std::is_integral_v<T>) {
    return saturate<T>(v);
  } else {
    return static_cast<T>(v);
  }
}

template <typename T>
[[gnu::always_inline]] inline void apply_scale(T* dst, int64_t n, double scale) {
  if constexpr (!std::is_same_v<T, bool>) {
    if (scale == 1.0) return;
    if constexpr (std::is_same_v<T, float>) {
      // A scale that a float holds (0.5, 0.25, 2, ...) multiplies in float,
      // at twice the width and without conversions: the product of two
      // floats is exact in double, so scaled_value rounds it once, to
      // float, as float's own multiplication does. The same bits.
      const auto narrow = static_cast<float>(scale);
      if (static_cast<double>(narrow) == scale) {
        for (int64_t i = 0; i < n; ++i) dst[i] *= narrow;
        return;
      }
    }
    for (int64_t i = 0; i < n; ++i) dst[i] = scaled_value(dst[i], scale);
  }
}

template <typename T>
[[gnu::always_inline]] inline void fold_as(ReduceType reduce, T* dst, const T* a, const T* b, int64_t n) {
  switch (reduce) {
    case ReduceType::kSum: return fold(dst, a, b, n, Sum{});
    case ReduceType::kMul: return fold(dst, a, b, n, Mul{});
    case ReduceType::kMin: return fold(dst, a, b, n, Min{});
    case ReduceType::kMax: return fold(dst, a, b, n, Max{});
    case ReduceType::kAnd: return fold(dst, a, b, n, And{});
    case ReduceType::kOr: return fold(dst, a, b, n, Or{});
  }
}

// The 16-bit floats reduce in float32: each chunk is widened, folded in
// rank order and scaled as float32 is, then rounded once. So a result does
// not depend on how many ranks a process holds or who reduces (each chunk
// of an element's ranks is the same float32 sum).
template <typename T, typename Source>
[[gnu::always_inline]] inline void reduce_half_ranks(T* dst, size_t ranks, const Source& source, int64_t n,
                                                     ReduceType reduce, double scale) {
  constexpr int64_t kChunk = 512;
  float sum[kChunk];
  float next[kChunk];
  constexpr DType kHalf = dtype_of<T>();
  for (int64_t lo = 0; lo < n; lo += kChunk) {
    const int64_t m = std::min(kChunk, n - lo);
    widen_rows(kHalf, sum, source(0) + lo, m);
    for (size_t q = 1; q < ranks; ++q) {
      widen_rows(kHalf, next, source(q) + lo, m);
      fold_as<float>(reduce, sum, sum, next, m);
    }
    apply_scale(sum, m, scale);
    narrow_rows(kHalf, dst + lo, sum, m);
  }
}

// dst = scale * (source(0) op source(1) op ...), n elements, where
// source(q) is rank q's first element (const T*).
template <typename T, typename Source>
[[gnu::always_inline]] inline void reduce_ranks(T* dst, size_t ranks, const Source& source, int64_t n,
                                                ReduceType reduce, double scale) {
  if (n == 0) return;
  if (ranks == 1 && scale == 1.0) {
    std::memcpy(dst, source(0), static_cast<size_t>(n) * sizeof(T));
    return;
  }
  if constexpr (kIsHalfFloat<T>) {
    reduce_half_ranks(dst, ranks, source, n, reduce, scale);
  } else {
    if (ranks == 1) {
      std::memcpy(dst, source(0), static_cast<size_t>(n) * sizeof(T));
    } else {
      switch (reduce) {
        case ReduceType::kSum: fold_ranks(dst, ranks, source, n, Sum{}); break;
        case ReduceType::kMul: fold_ranks(dst, ranks, source, n, Mul{}); break;
        case ReduceType::kMin: fold_ranks(dst, ranks, source, n, Min{}); break;
        case ReduceType::kMax: fold_ranks(dst, ranks, source, n, Max{}); break;
        case ReduceType::kAnd: fold_ranks(dst, ranks, source, n, And{}); break;
        case ReduceType::kOr: fold_ranks(dst, ranks, source, n, Or{}); break;
      }
    }
    apply_scale(dst, n, scale);
  }
}

}  // namespace ordo::comm
