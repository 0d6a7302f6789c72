// The vectorized inner loops of the reductions (reduce.cc), compiled per
// CPU level (core/simd.h). Each reduces one chunk of a contiguous row, or
// folds one row into a run of contiguous slots, in an order fixed by the
// length alone:
//
// - a chunk of n >= kLanes elements is dealt round-robin to kLanes lanes
//   (element i to lane i % kLanes, each lane in index order) and the lanes
//   meet in a fixed tree (lane j with lane j + 8, then + 4, + 2, + 1);
//   a shorter chunk folds in index order;
// - a row folded into slots updates slot i with element i, in row order.
//
// Sums only depend on that order: every clone does the same additions
// (no FMA, -ffp-contract=off). The max and min of a chunk are exact
// whatever the order, but for which NaN or which zero they keep: that is
// settled afterwards by first_match (reduce.cc), so that a chunk's
// result is its first NaN, or first zero, exactly as an in-order fold.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <type_traits>

#include "core/arithmetic.h"
#include "core/simd.h"

namespace ordo::kernels {

inline constexpr int kLanes = 16;

template <typename T, typename Combine>
[[gnu::always_inline]] inline T meet_lanes(T (&lanes)[kLanes], Combine combine) {
  for (int width = kLanes / 2; width >= 1; width /= 2) {
    for (int j = 0; j < width; ++j) lanes[j] = combine(lanes[j], lanes[j + width]);
  }
  return lanes[0];
}

// The sum of x[0, n) in Acc (double for floats, uint64_t wrapping for
// integers and bools).
template <typename In, typename Acc>
ORDO_SIMD_CLONES Acc sum_chunk(const In* x, int64_t n) {
  if (n < kLanes) {
    Acc acc = 0;
    for (int64_t i = 0; i < n; ++i) acc += static_cast<Acc>(x[i]);
    return acc;
  }
  Acc lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) lanes[j] += static_cast<Acc>(x[i + j]);
  }
  for (int j = 0; i + j < n; ++j) lanes[j] += static_cast<Acc>(x[i + j]);
  return meet_lanes(lanes, [](Acc a, Acc b) { return a + b; });
}

// One 256-bit register of T (AVX2's width: GCC lowers wider vectors of
// comparisons element by element on that level). The max, min and argmax
// loops keep two of them, so 16 lanes of 4-byte and 8 of 8-byte types.
template <typename T>
using Vec [[gnu::vector_size(32)]] = T;
template <typename T>
inline constexpr int kVecWidth = 32 / sizeof(T);
// The integer lanes beside a Vec<T>: comparison masks, positions.
template <typename T>
using SameWidthInt = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;

template <typename V, typename T>
[[gnu::always_inline]] inline void load(V& v, const T* x) {
  std::memcpy(&v, x, sizeof v);
}

// a beats b: a > b for max (Better = std::greater<>), a < b for min.
template <typename Better, typename T>
[[gnu::always_inline]] inline bool beats(T a, T b) {
  return std::is_same_v<Better, std::greater<>> ? a > b : a < b;
}

// lanes = v where it beats lanes (in place: a Vec is never returned, which
// would change the ABI between the clones).
template <typename Better, typename V>
[[gnu::always_inline]] inline void keep_better(V& lanes, const V& v) {
  if constexpr (std::is_same_v<Better, std::greater<>>) {
    lanes = v > lanes ? v : lanes;
  } else {
    lanes = v < lanes ? v : lanes;
  }
}

// The max or min of x[0, n), n >= 1, NaN if an element is NaN; of equal
// values (+0 and -0, or NaNs) any one.
template <typename Better, typename T>
ORDO_SIMD_CLONES T extreme_chunk(const T* x, int64_t n) {
  constexpr int kWidth = kVecWidth<T>;
  const Extreme<Better> extreme;
  int64_t i = 0;
  T acc = x[0];
  if constexpr (!std::is_same_v<T, bool>) {
    if (n >= 2 * kWidth) {
      Vec<T> lanes[2];
      Vec<SameWidthInt<T>> nan[2] = {};
      for (int k = 0; k < 2; ++k) load(lanes[k], x + k * kWidth);
      for (i = 2 * kWidth; i + 2 * kWidth <= n; i += 2 * kWidth) {
        for (int k = 0; k < 2; ++k) {
          Vec<T> v;
          load(v, x + i + k * kWidth);
          keep_better<Better>(lanes[k], v);
          if constexpr (std::is_floating_point_v<T>) nan[k] |= v != v;
        }
      }
      for (int k = 0; k < 2; ++k) {
        if constexpr (std::is_floating_point_v<T>) nan[k] |= lanes[k] != lanes[k];
        for (int j = 0; j < kWidth; ++j) {
          acc = extreme(acc, lanes[k][j]);
          if (nan[k][j]) return std::numeric_limits<T>::quiet_NaN();
        }
      }
    }
  }
  for (; i < n; ++i) acc = extreme(acc, x[i]);
  return acc;
}

template <typename T, typename Match>
[[gnu::always_inline]] inline int64_t first_index(const T* x, int64_t n, Match match) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    bool any = false;
    for (int j = 0; j < kLanes; ++j) any |= match(x[i + j]);
    if (any) break;
  }
  for (; i < n; ++i) {
    if (match(x[i])) return i;
  }
  return n;
}

// The index of the first element of x[0, n) that is `value` (equal to it,
// or NaN if it is NaN); n if none.
template <typename T>
ORDO_SIMD_CLONES int64_t first_match(const T* x, int64_t n, T value) {
  if (is_nan(value)) return first_index(x, n, [](T v) { return v != v; });
  return first_index(x, n, [value](T v) { return v == value; });
}

// The position in x[0, n), 1 <= n < 2^31, of the first maximum, or of the
// first NaN if there is one (numpy's argmax).
template <typename T>
ORDO_SIMD_CLONES int64_t argmax_chunk(const T* x, int64_t n) {
  constexpr int kWidth = kVecWidth<T>;
  int64_t best = 0;
  int64_t i = 1;
  if constexpr (!std::is_same_v<T, bool>) {
    if (n >= 2 * kWidth) {
      using Position = SameWidthInt<T>;
      Vec<T> lanes[2];
      Vec<Position> step_of[2] = {};  // the step at which a lane took its value
      Vec<Position> nan = {};
      for (int k = 0; k < 2; ++k) load(lanes[k], x + k * kWidth);
      Position step = 1;
      for (i = 2 * kWidth; i + 2 * kWidth <= n; i += 2 * kWidth, ++step) {
        for (int k = 0; k < 2; ++k) {
          Vec<T> v;
          load(v, x + i + k * kWidth);
          const auto take = v > lanes[k];  // strictly: a lane keeps its first maximum
          lanes[k] = take ? v : lanes[k];
          step_of[k] = take ? Vec<Position>{} + step : step_of[k];
          if constexpr (std::is_floating_point_v<T>) nan |= v != v;
        }
      }
      if constexpr (std::is_floating_point_v<T>) {
        for (int k = 0; k < 2; ++k) nan |= lanes[k] != lanes[k];
        for (int j = 0; j < kWidth; ++j) {
          if (nan[j]) return first_match(x, n, std::numeric_limits<T>::quiet_NaN());
        }
      }
      // The lanes' maxima meet: the greatest, of equal ones the first.
      T value = lanes[0][0];
      for (int k = 0; k < 2; ++k) {
        for (int j = 0; j < kWidth; ++j) {
          const int64_t position = static_cast<int64_t>(step_of[k][j]) * 2 * kWidth + k * kWidth + j;
          if (lanes[k][j] > value || (lanes[k][j] == value && position < best)) {
            value = lanes[k][j];
            best = position;
          }
        }
      }
    }
  }
  for (; i < n; ++i) {
    if (!is_nan(x[best]) && (is_nan(x[i]) || x[i] > x[best])) best = i;
  }
  return best;
}

// slots[i] += x[i]: one row of a reduction over outer axes.
template <typename In, typename Acc>
ORDO_SIMD_CLONES void add_to_slots(Acc* __restrict slots, const In* __restrict x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) slots[i] += static_cast<Acc>(x[i]);
}

// slots[i] = Extreme<Better>(slots[i], x[i]), spelt with bitwise operators
// so that it vectorizes.
template <typename Better, typename T>
ORDO_SIMD_CLONES void extreme_into_slots(T* __restrict slots, const T* __restrict x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const T a = slots[i], b = x[i];
    const bool b_wins = beats<Better>(b, a) | ((b != b) & (a == a));
    slots[i] = b_wins ? b : a;
  }
}

}  // namespace ordo::kernels
