// bfloat16 and float16 to and from float32, bitwise as torch 1.13 on CPU:
// round to nearest even, overflow to inf; a NaN becomes a quiet NaN
// (bfloat16: 0xffff, what torch's vector loops give for every NaN;
// float16: 0x7e00 with the NaN's sign). Widening is exact (float16's
// signaling NaNs come back quiet, as in torch). Every other dtype converts
// through float32, as torch's do.
//
//   uint16_t b = float_to_bfloat16(1.0f / 3);   // 0x3eab
//   float f = bfloat16_to_float(b);             // 0.333984375
//   narrow_rows(DType::kBFloat16, out, in, n);  // n floats, the best loop the CPU has
//
// The scalar forms are the reference; the rows pick their loop once per
// CPU (F16C's conversions for float16 where the CPU has them, fixed up to
// torch's NaNs) and give the same bits.
#pragma once

#include <bit>
#include <cstdint>

#include "ordo/dtype.h"

namespace ordo {

[[gnu::always_inline]] inline float bfloat16_to_float(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

[[gnu::always_inline]] inline uint16_t float_to_bfloat16(float x) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  // Adding 0x7fff plus the kept part's lowest bit rounds to nearest even;
  // a carry into the exponent is the next binade, or inf past the largest.
  const auto rounded = static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  return (u & 0x7fffffffu) > 0x7f800000u ? uint16_t{0xffff} : rounded;
}

[[gnu::always_inline]] inline float float16_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  uint32_t magnitude;
  if (exponent == 0x1f) {
    // inf, or a NaN made quiet (the payload kept).
    magnitude = 0x7f800000u | (mantissa << 13) | (mantissa != 0 ? 0x00400000u : 0u);
  } else if (exponent == 0) {
    // Subnormal (or zero): mantissa * 2^-24, exact in float.
    magnitude = std::bit_cast<uint32_t>(static_cast<float>(mantissa) * 0x1p-24f);
  } else {
    magnitude = ((exponent + 112u) << 23) | (mantissa << 13);
  }
  return std::bit_cast<float>(sign | magnitude);
}

[[gnu::always_inline]] inline uint16_t float_to_float16(float x) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  const auto sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00u;   // NaN
  if (a >= 0x47800000u) return sign | 0x7c00u;  // 2^16 and above (inf too)
  if (a >= 0x38800000u) {
    // Normal in float16: rebias the exponent (127 -> 15) and round the 13
    // bits dropped to nearest even; a carry may make it inf (65520 and up).
    const uint32_t rounded = a - (112u << 23) + 0xfffu + ((a >> 13) & 1u);
    return static_cast<uint16_t>(sign | (rounded >> 13));
  }
  // Below 2^-14: a multiple of 2^-24 (float16's smallest subnormal). Adding
  // 0.5, whose ulp is 2^-24, rounds to it to nearest even in hardware.
  const float shifted = std::bit_cast<float>(a) + 0.5f;
  return static_cast<uint16_t>(sign | (std::bit_cast<uint32_t>(shifted) - 0x3f000000u));
}

[[gnu::always_inline]] inline float half_to_float(BFloat16 x) { return bfloat16_to_float(x.bits); }
[[gnu::always_inline]] inline float half_to_float(Float16 x) { return float16_to_float(x.bits); }

template <typename Half>
[[gnu::always_inline]] inline Half float_to_half(float x) {
  if constexpr (std::is_same_v<Half, BFloat16>) {
    return BFloat16{float_to_bfloat16(x)};
  } else {
    return Float16{float_to_float16(x)};
  }
}

template <typename T>
inline constexpr bool kIsHalfFloat = std::is_same_v<T, BFloat16> || std::is_same_v<T, Float16>;

// n elements of a 16-bit float dtype (bfloat16 or float16) to float32 and
// back. dst and src do not overlap.
void widen_rows(DType half, float* dst, const void* src, int64_t n);
void narrow_rows(DType half, void* dst, const float* src, int64_t n);

}  // namespace ordo
