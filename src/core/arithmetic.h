// The numeric rules that kernels and collectives share: integers wrap like
// numpy (never undefined behaviour), a double goes into an integer type
// saturating at its limits, and max and min propagate NaN. One copy, so
// that an op and a collective of the same reduce type cannot disagree.
//
//   wrapping(a, b, std::plus<>{});               // int32 max + 1 is int32 min
//   saturate<int32_t>(3e9);                       // int32 max
//   Extreme<std::greater<>>{}(1.0, nan);          // nan
//
// Everything here is always inlined, so that a loop compiled for AVX2
// (comm/protocol/data_movement.cc) gets AVX2 code for it.
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>

namespace ordo {

// a op b, but for integers in the unsigned type: overflow wraps around like
// numpy instead of being undefined behaviour.
template <typename T, typename Op>
[[gnu::always_inline]] inline T wrapping(T a, T b, Op op) {
  static_assert(!std::is_same_v<T, bool>, "bool has no arithmetic");
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(op(static_cast<U>(a), static_cast<U>(b)));
  } else {
    return op(a, b);
  }
}

template <typename T>
[[gnu::always_inline]] inline bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::isnan(x);
  } else {
    return false;
  }
}

// v in the integer type To, clamped to To's range where static_cast would
// be undefined behaviour. v must not be NaN (callers decide what NaN is).
template <typename To>
[[gnu::always_inline]] inline To saturate(double v) {
  static_assert(std::is_integral_v<To> && !std::is_same_v<To, bool>);
  // 2^31 or 2^63: a power of two, so exact in double, unlike INT_MAX.
  constexpr double kLimit = -static_cast<double>(std::numeric_limits<To>::min());
  if (v <= -kLimit) return std::numeric_limits<To>::min();
  if (v >= kLimit) return std::numeric_limits<To>::max();
  return static_cast<To>(v);
}

// Which NaN an Extreme returns when both operands are NaN.
enum class NanOfTwo {
  kFirst,   // numpy's maximum and minimum, and the max and min reductions
  kSecond,  // the max and min reduce types of collectives: the later rank's
};

// The one of a and b that Better prefers (std::greater<> for max), keeping
// a on ties; a NaN wins over any number. One branch-free expression, so
// that loops of it vectorize.
template <typename Better, NanOfTwo kNanOfTwo = NanOfTwo::kFirst>
struct Extreme {
  template <typename T>
  [[gnu::always_inline]] T operator()(T a, T b) const {
    // x != x is x's NaN test, in the form that vectorizes best.
    const bool b_wins_as_nan = b != b && (kNanOfTwo == NanOfTwo::kSecond || a == a);
    return Better{}(b, a) || b_wins_as_nan ? b : a;
  }
};

}  // namespace ordo
