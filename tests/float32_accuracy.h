// The accuracy bounds of the float32 vector math functions
// (kernels/vector_math.h) in ulps of the true value, as the README states
// them, and how an error is measured: shared by the test suite
// (tests/vector_math_test.cc, a dense sample and the inputs below) and the
// exhaustive sweep (tools/ulp_sweep.cc, scripts/ulp-sweep.sh, every input).
//
// The reference is glibc's float64 function of the float32 input (sigmoid
// and rsqrt composed in float64): its relative error is below 2^-50, so an
// error measured against it in float32 ulps is off by less than 2^-26 ulp,
// far finer than any bound here. (Whether a result is the correctly
// rounded one is uncertain only where the true value lies within 2^-26 ulp
// of a halfway point; the error figures are not.)
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "ir/ops.h"

namespace ordo::kernels {

inline constexpr ir::OpKind kFloat32MathOps[] = {ir::OpKind::kExp,     ir::OpKind::kLog,  ir::OpKind::kTanh,
                                                 ir::OpKind::kSigmoid, ir::OpKind::kSqrt, ir::OpKind::kRsqrt,
                                                 ir::OpKind::kErf};

constexpr double float32_ulp_bound(ir::OpKind op) {
  switch (op) {
    case ir::OpKind::kSqrt:
      return 0.5;  // correctly rounded
    case ir::OpKind::kExp:
    case ir::OpKind::kLog:
    case ir::OpKind::kTanh:
    case ir::OpKind::kSigmoid:
      return 1;
    case ir::OpKind::kRsqrt:  // a correctly rounded sqrt, then a division
    case ir::OpKind::kErf:
      return 1.5;
    default:
      std::abort();  // not a float32 math op
  }
}

// An error at or above this is near the bound: the sweep counts such
// inputs and lists the largest (tests/vector_math_test.cc keeps those of
// the exhaustive run). None for a correctly rounded function, whose every
// result is checked exactly.
constexpr double near_threshold(double bound) { return bound <= 0.5 ? HUGE_VAL : bound * 0.9; }

inline double float32_reference(ir::OpKind op, float xf) {
  const double x = xf;
  switch (op) {
    case ir::OpKind::kExp:
      return std::exp(x);
    case ir::OpKind::kLog:
      return std::log(x);
    case ir::OpKind::kTanh:
      return std::tanh(x);
    case ir::OpKind::kErf:
      return std::erf(x);
    case ir::OpKind::kSqrt:
      return std::sqrt(x);
    case ir::OpKind::kRsqrt:
      return 1.0 / std::sqrt(x);
    case ir::OpKind::kSigmoid: {
      const double e = std::exp(-std::abs(x));
      return (x > 0 ? 1.0 : e) / (1.0 + e);
    }
    default:
      std::abort();
  }
}

// |got - want| in float32 ulps at want (the spacing of the binade that
// holds the true value; 2^-149 below the normals, 2^104 above the largest
// float). Where want is not finite or is zero, got must be exactly its
// float32 value (any NaN for a NaN): 0 if so, else infinity; so must an
// infinite got.
inline double float32_ulp_error(float got, double want) {
  if (std::isnan(want)) return std::isnan(got) ? 0 : HUGE_VAL;
  const auto exact = [&] {
    return std::bit_cast<uint32_t>(got) == std::bit_cast<uint32_t>(static_cast<float>(want)) ? 0 : HUGE_VAL;
  };
  if (std::isinf(want) || want == 0 || std::isinf(got)) return exact();
  if (std::isnan(got)) return HUGE_VAL;
  int exponent;
  std::frexp(want, &exponent);  // |want| in [2^(exponent-1), 2^exponent)
  exponent = std::clamp(exponent, -125, 128);
  return std::abs(static_cast<double>(got) - want) / std::ldexp(1.0, exponent - 1 - 23);
}

}  // namespace ordo::kernels
