#include "core/half_float.h"

#include "core/check.h"
#include "core/simd.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define ORDO_HALF_F16C 1
#else
#define ORDO_HALF_F16C 0
#endif

namespace ordo {
namespace {

// bfloat16 is the top half of a float: these loops are integer shifts and
// adds, which GCC vectorizes in every clone (AVX2: 8 floats a step;
// AVX-512: 16).
ORDO_SIMD_CLONES void widen_bfloat16(float* __restrict dst, const uint16_t* __restrict src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = bfloat16_to_float(src[i]);
}

ORDO_SIMD_CLONES void narrow_bfloat16(uint16_t* __restrict dst, const float* __restrict src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = float_to_bfloat16(src[i]);
}

void widen_float16_scalar(float* __restrict dst, const uint16_t* __restrict src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = float16_to_float(src[i]);
}

void narrow_float16_scalar(uint16_t* __restrict dst, const float* __restrict src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = float_to_float16(src[i]);
}

#if ORDO_HALF_F16C
// F16C converts 8 a step. Its widening is ours bit for bit (a NaN is made
// quiet, its payload kept); its narrowing rounds to nearest even as ours
// but keeps a NaN's payload, which torch drops: such lanes become 0x7e00
// with their sign.
__attribute__((target("avx2,f16c"))) void widen_float16_f16c(float* __restrict dst, const uint16_t* __restrict src,
                                                             int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
  widen_float16_scalar(dst + i, src + i, n - i);
}

__attribute__((target("avx2,f16c"))) void narrow_float16_f16c(uint16_t* __restrict dst, const float* __restrict src,
                                                              int64_t n) {
  const __m128i magnitude = _mm_set1_epi16(0x7fff);
  const __m128i inf = _mm_set1_epi16(0x7c00);
  const __m128i quiet_nan = _mm_set1_epi16(0x7e00);
  const __m128i sign = _mm_set1_epi16(static_cast<int16_t>(0x8000));
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m128i is_nan = _mm_cmpgt_epi16(_mm_and_si128(h, magnitude), inf);
    const __m128i canonical = _mm_or_si128(_mm_and_si128(h, sign), quiet_nan);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm_blendv_epi8(h, canonical, is_nan));
  }
  narrow_float16_scalar(dst + i, src + i, n - i);
}

bool cpu_has_f16c() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
  }();
  return has;
}
#endif

}  // namespace

void widen_rows(DType half, float* dst, const void* src, int64_t n) {
  const auto* bits = static_cast<const uint16_t*>(src);
  if (half == DType::kBFloat16) return widen_bfloat16(dst, bits, n);
  ORDO_CHECK(half == DType::kFloat16, ": widen_rows of ", dtype_name(half));
#if ORDO_HALF_F16C
  if (cpu_has_f16c()) return widen_float16_f16c(dst, bits, n);
#endif
  widen_float16_scalar(dst, bits, n);
}

void narrow_rows(DType half, void* dst, const float* src, int64_t n) {
  auto* bits = static_cast<uint16_t*>(dst);
  if (half == DType::kBFloat16) return narrow_bfloat16(bits, src, n);
  ORDO_CHECK(half == DType::kFloat16, ": narrow_rows of ", dtype_name(half));
#if ORDO_HALF_F16C
  if (cpu_has_f16c()) return narrow_float16_f16c(bits, src, n);
#endif
  narrow_float16_scalar(bits, src, n);
}

}  // namespace ordo
