// The vectorized inner loops of the reductions (reduce.cc), compiled per
// CPU level (core/simd.h). Each reduces one chunk of a contiguous row, or
// folds one row into a run of contiguous slots, in an order fixed by the
// length alone, so every clone, thread count and run gives the same bits:
//
// - sum: a chunk of n >= kLanes (32) elements is dealt round-robin to
//   kLanes accumulators (element i to lane i % kLanes, each lane in index
//   order) that meet in a fixed tree (lane j with lane j + 16, then + 8,
//   ..., + 1); a shorter chunk adds in index order. Every clone does the
//   same additions (no FMA: -ffp-contract=off). float32 lanes add in
//   float32 (SumLane), as torch's and numpy's float32 sums do: in double,
//   each float widened first, the sum of 4M floats took 1.5x torch's time.
// - max, min: the value is exact in any order; only which NaN, or which of
//   +0 and -0, depends on it. The chunk's max says whether there is one,
//   and first_match then takes the chunk's first NaN, or first zero, as an
//   in-order fold would.
// - argmax: the first position of the max or of the first NaN, which no
//   order changes (argmax_chunk).
// - a row folded into slots updates slot i with element i, rows in order.
//
// GCC vectorizes the max and min lanes only as vector extensions of one
// AVX2 register (Vec); a `||` in the select, or wider vectors, fall back to
// scalar code element by element.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <type_traits>

#include "core/arithmetic.h"
#include "core/simd.h"

namespace ordo::kernels {

inline constexpr int kLanes = 32;

template <typename T, typename Combine>
[[gnu::always_inline]] inline T meet_lanes(T (&lanes)[kLanes], Combine combine) {
  for (int width = kLanes / 2; width >= 1; width /= 2) {
    for (int j = 0; j < width; ++j) lanes[j] = combine(lanes[j], lanes[j + width]);
  }
  return lanes[0];
}

// One 256-bit register of T (AVX2's width: GCC lowers wider vectors of
// comparisons element by element on that level). The max, min and argmax
// loops keep kVecs of them, so 32 lanes of 4-byte and 16 of 8-byte types;
// the float sums kLanes / kVecWidth.
template <typename T>
using Vec [[gnu::vector_size(32)]] = T;
template <typename T>
inline constexpr int kVecWidth = 32 / sizeof(T);
inline constexpr int kVecs = 4;  // independent accumulators: a compare's latency is hidden
// The integer lanes beside a Vec<T>: comparison masks, positions.
template <typename T>
using SameWidthInt = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;

template <typename V, typename T>
[[gnu::always_inline]] inline void load(V& v, const T* x) {
  std::memcpy(&v, x, sizeof v);
}

// The type a sum's lanes add in: float32 for float32, as torch's and
// numpy's sums do (a lane adds at most 4096 / kLanes = 128 elements of
// reduce.cc's chunk, and the chunks then add in Acc); Acc for the rest.
template <typename In, typename Acc>
using SumLane = std::conditional_t<std::is_same_v<In, float>, float, Acc>;

// sum_chunk's lanes for a float or double input that adds in its own type,
// n >= kLanes: as kLanes / kVecWidth vectors, whose tree's first levels
// add whole vectors (lane j of vector k is lane k * width + j).
template <typename T>
[[gnu::always_inline]] inline T sum_in_vectors(const T* x, int64_t n) {
  constexpr int kWidth = kVecWidth<T>, kCount = kLanes / kWidth;
  Vec<T> v[kCount] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int k = 0; k < kCount; ++k) {
      Vec<T> e;
      load(e, x + i + k * kWidth);
      v[k] += e;
    }
  }
  if (i < n) {  // the last partial round, lane by lane
    T lanes[kLanes];
    std::memcpy(lanes, v, sizeof lanes);
    for (int j = 0; i + j < n; ++j) lanes[j] += x[i + j];
    std::memcpy(v, lanes, sizeof lanes);
  }
  for (int count = kCount / 2; count >= 1; count /= 2) {
    for (int k = 0; k < count; ++k) v[k] += v[k + count];
  }
  T lanes[kWidth];
  std::memcpy(lanes, &v[0], sizeof lanes);
  for (int width = kWidth / 2; width >= 1; width /= 2) {
    for (int j = 0; j < width; ++j) lanes[j] += lanes[j + width];
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
  using Lane = SumLane<In, Acc>;
  if constexpr (std::is_same_v<In, Lane> && std::is_floating_point_v<Lane>) {
    return static_cast<Acc>(sum_in_vectors(x, n));
  } else {
    Lane lanes[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
      for (int j = 0; j < kLanes; ++j) lanes[j] += static_cast<Lane>(x[i + j]);
    }
    for (int j = 0; i + j < n; ++j) lanes[j] += static_cast<Lane>(x[i + j]);
    return static_cast<Acc>(meet_lanes(lanes, [](Lane a, Lane b) { return a + b; }));
  }
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

// Whether a comparison mask has a lane set.
template <typename V>
[[gnu::always_inline]] inline bool any_set(const V& mask) {
  uint64_t words[sizeof(V) / 8];
  std::memcpy(words, &mask, sizeof words);
  uint64_t any = 0;
  for (uint64_t word : words) any |= word;
  return any != 0;
}

// The index of the first element of x[0, n) that is `value` (equal to it,
// or NaN if it is NaN); n if none.
template <typename T>
[[gnu::always_inline]] inline int64_t first_match_of(const T* x, int64_t n, T value) {
  const bool nan = is_nan(value);
  auto matches = [&](T v) { return nan ? v != v : v == value; };
  int64_t i = 0;
  if constexpr (!std::is_same_v<T, bool>) {
    constexpr int kWidth = kVecWidth<T>;
    for (; i + kVecs * kWidth <= n; i += kVecs * kWidth) {
      Vec<SameWidthInt<T>> found = {};
      for (int k = 0; k < kVecs; ++k) {
        Vec<T> v;
        load(v, x + i + k * kWidth);
        found |= nan ? v != v : v == value;
      }
      if (any_set(found)) break;
    }
  }
  for (; i < n; ++i) {
    if (matches(x[i])) return i;
  }
  return n;
}

// The max or min of v's lanes, none of them NaN; of equal values any one.
// Lanes of 4 and 8 bytes meet by halves in registers (a shuffle puts lane
// j + half beside lane j), where folding them one by one went through
// memory at every chunk (a max over rows of 1024 floats: 0.82-0.95x
// torch before, 0.99x after, with the pragmas below). Narrower lanes,
// which have no SameWidthInt for a shuffle's indices, fold in order.
template <typename Better, typename T>
[[gnu::always_inline]] inline T extreme_of_lanes(Vec<T>& v) {
  constexpr int kWidth = kVecWidth<T>;
  if constexpr (sizeof(T) >= 4) {
    for (int half = kWidth / 2; half >= 1; half /= 2) {
      Vec<SameWidthInt<T>> lane_plus_half;
      for (int j = 0; j < kWidth; ++j) lane_plus_half[j] = (j + half) % kWidth;
      keep_better<Better>(v, __builtin_shuffle(v, lane_plus_half));
    }
    return v[0];
  } else {
    T acc = v[0];
    for (int j = 1; j < kWidth; ++j) acc = beats<Better>(v[j], acc) ? v[j] : acc;
    return acc;
  }
}

// The max or min of x[0, n), n >= 1, NaN if an element is NaN; of equal
// values (+0 and -0, or NaNs) any one.
template <typename Better, typename T>
[[gnu::always_inline]] inline T extreme_of(const T* x, int64_t n) {
  constexpr int kWidth = kVecWidth<T>;
  const Extreme<Better> extreme;
  int64_t i = 0;
  T acc = x[0];
  if constexpr (!std::is_same_v<T, bool>) {
    if (n >= kVecs * kWidth) {
      // The loops over the vectors unroll before GCC turns arrays into
      // registers: otherwise every chunk zeroed and copied them on the stack.
      // A NaN fails every comparison, so the lanes drop it; the probes,
      // sums of the same elements, keep it (one addition an element where a
      // test for NaN took two: a fifth of the max's time over rows of 1024
      // floats). A probe is also NaN after +inf and -inf, so a NaN probe
      // sends the chunk to first_match for a NaN it really holds.
      Vec<T> lanes[kVecs];
      Vec<T> probes[kVecs] = {};
#pragma GCC unroll 4
      for (int k = 0; k < kVecs; ++k) load(lanes[k], x + k * kWidth);
      for (i = kVecs * kWidth; i + kVecs * kWidth <= n; i += kVecs * kWidth) {
#pragma GCC unroll 4
        for (int k = 0; k < kVecs; ++k) {
          Vec<T> v;
          load(v, x + i + k * kWidth);
          keep_better<Better>(lanes[k], v);
          if constexpr (std::is_floating_point_v<T>) probes[k] += v;
        }
      }
      if constexpr (std::is_floating_point_v<T>) {
        Vec<SameWidthInt<T>> nan = {};
#pragma GCC unroll 4
        for (int k = 0; k < kVecs; ++k) nan |= (probes[k] != probes[k]) | (lanes[k] != lanes[k]);
        if (any_set(nan) && first_match_of(x, n, std::numeric_limits<T>::quiet_NaN()) < n) {
          return std::numeric_limits<T>::quiet_NaN();
        }
      }
      // The vectors meet in a tree, then the lanes by halves.
#pragma GCC unroll 4
      for (int width = kVecs / 2; width >= 1; width /= 2) {
#pragma GCC unroll 4
        for (int k = 0; k < width; ++k) keep_better<Better>(lanes[k], lanes[k + width]);
      }
      acc = extreme_of_lanes<Better, T>(lanes[0]);
    }
  }
  for (; i < n; ++i) acc = extreme(acc, x[i]);
  return acc;
}

template <typename Better, typename T>
ORDO_SIMD_CLONES T extreme_chunk(const T* x, int64_t n) {
  return extreme_of<Better>(x, n);
}

template <typename T>
ORDO_SIMD_CLONES int64_t first_match(const T* x, int64_t n, T value) {
  return first_match_of(x, n, value);
}

// The position in x[0, n), 1 <= n < 2^31, of the first maximum, or of
// the first NaN if there is one (numpy's argmax). One pass keeps, per
// lane, the max over pieces of kArgmaxPiece elements and the first piece
// that reached it; the first piece holding the overall max is then the
// only one read again, for the first element equal to it.
inline constexpr int64_t kArgmaxPiece = 256;

template <typename T>
ORDO_SIMD_CLONES int64_t argmax_chunk(const T* x, int64_t n) {
  const int64_t pieces = n / kArgmaxPiece;
  int64_t best = 0;
  T best_value = x[0];
  if constexpr (!std::is_same_v<T, bool>) {
    constexpr int kWidth = kVecWidth<T>;
    using Int = SameWidthInt<T>;
    if (pieces > 0) {
      Vec<T> max_so_far = {};
      Vec<Int> piece_of = {};
      Vec<Int> nan = {};
      for (int64_t piece = 0; piece < pieces; ++piece) {
        const T* p = x + piece * kArgmaxPiece;
        Vec<T> lanes[kVecs];
        for (int k = 0; k < kVecs; ++k) {
          load(lanes[k], p + k * kWidth);
          if constexpr (std::is_floating_point_v<T>) nan |= lanes[k] != lanes[k];
        }
        for (int64_t i = kVecs * kWidth; i < kArgmaxPiece; i += kVecs * kWidth) {
          for (int k = 0; k < kVecs; ++k) {
            Vec<T> v;
            load(v, p + i + k * kWidth);
            keep_better<std::greater<>>(lanes[k], v);
            if constexpr (std::is_floating_point_v<T>) nan |= v != v;
          }
        }
        for (int width = kVecs / 2; width >= 1; width /= 2) {
          for (int k = 0; k < width; ++k) keep_better<std::greater<>>(lanes[k], lanes[k + width]);
        }
        if (piece == 0) {
          max_so_far = lanes[0];
        } else {
          const auto take = lanes[0] > max_so_far;  // strictly: a lane keeps its first piece
          max_so_far = take ? lanes[0] : max_so_far;
          piece_of = take ? Vec<Int>{} + static_cast<Int>(piece) : piece_of;
        }
      }
      if (any_set(nan)) return first_match_of(x, n, std::numeric_limits<T>::quiet_NaN());
      best_value = max_so_far[0];
      for (int j = 1; j < kWidth; ++j) best_value = std::max(best_value, max_so_far[j]);
      int64_t first_piece = pieces;
      for (int j = 0; j < kWidth; ++j) {
        if (max_so_far[j] == best_value) first_piece = std::min<int64_t>(first_piece, piece_of[j]);
      }
      best = first_piece * kArgmaxPiece + first_match_of(x + first_piece * kArgmaxPiece, kArgmaxPiece, best_value);
    }
  }
  // The elements after the whole pieces (all of them for bool).
  const int64_t rest = std::is_same_v<T, bool> ? 0 : pieces * kArgmaxPiece;
  if (rest < n) {
    const T rest_max = extreme_of<std::greater<>>(x + rest, n - rest);
    if (rest == 0 || is_nan(rest_max) || rest_max > best_value) {
      best = rest + first_match_of(x + rest, n - rest, rest_max);
    }
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
