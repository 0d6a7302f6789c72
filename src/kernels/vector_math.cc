#include "kernels/vector_math.h"

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <utility>

#include <sleef.h>

// sleef.h declares its 256- and 512-bit functions only when the whole file
// is compiled for AVX / AVX-512 (in C++, `#pragma GCC target` does not
// define __AVX__ for the preprocessor), so those used here are declared as
// libsleef exports them; only the regions below that target them call them.
#define ORDO_DECLARE_SLEEF(VecType, shape, isa)                  \
  extern "C" {                                                  \
  VecType Sleef_exp##shape##_u10##isa(VecType);                 \
  VecType Sleef_log##shape##_u10##isa(VecType);                 \
  VecType Sleef_tanh##shape##_u10##isa(VecType);                \
  VecType Sleef_erf##shape##_u10##isa(VecType);                 \
  VecType Sleef_pow##shape##_u10##isa(VecType, VecType);        \
  }
#pragma GCC push_options
#pragma GCC target("arch=x86-64-v3")
ORDO_DECLARE_SLEEF(__m256, f8, avx2)
ORDO_DECLARE_SLEEF(__m256d, d4, avx2)
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("arch=x86-64-v4")
ORDO_DECLARE_SLEEF(__m512, f16, avx512f)
ORDO_DECLARE_SLEEF(__m512d, d8, avx512f)
#pragma GCC pop_options
#undef ORDO_DECLARE_SLEEF

namespace ordo::kernels {
namespace {

// Vector lanes of one dtype in one instruction set: SLEEF's functions of
// that width and set (isa empty: SLEEF's own dispatcher of that width)
// as exp_of_x, log_of_x, tanh_of_x and pow_of_xy say, expressions of x and
// y that may name SLEEF's functions exp and pow; sqrt_of_x the instruction,
// which is correctly rounded (SLEEF's sqrt u05 adds a Newton step the
// hardware does not need: 2x the time); fma_of_xyz x * y + z rounded once;
// lookup_of_table_index the lanes of a 32-entry table at the index lanes;
// Wide the float64 lanes of the set (for float32 ops computed in float64).
#define ORDO_SLEEF_LANES(Name, VecType, ScalarType, WideLanes, shape, isa, exp_of_x, log_of_x, tanh_of_x, sqrt_of_x, \
                         pow_of_xy, fma_of_xyz, lookup_of_table_index)                                            \
  struct Name {                                                                                                   \
    using Vec = VecType;                                                                                          \
    using Scalar = ScalarType;                                                                                    \
    using Wide = WideLanes;                                                                                       \
    using Index = __typeof__(Vec{} != Vec{});                                                                     \
    static constexpr auto& sleef_exp = Sleef_exp##shape##_u10##isa;                                               \
    static constexpr auto& sleef_pow = Sleef_pow##shape##_u10##isa;                                               \
    static Vec exp(Vec x) { return exp_of_x; }                                                                    \
    static Vec log(Vec x) { return log_of_x; }                                                                    \
    static Vec tanh(Vec x) { return tanh_of_x; }                                                                  \
    static Vec erf(Vec x) { return Sleef_erf##shape##_u10##isa(x); }                                              \
    static Vec sqrt(Vec x) { return sqrt_of_x; }                                                                  \
    static Vec pow(Vec x, Vec y) { return pow_of_xy; }                                                            \
    static Vec fma(Vec x, Vec y, Vec z) { return fma_of_xyz; }                                                    \
    static Vec lookup(const Scalar* table, Index index) { return lookup_of_table_index; }                         \
  };
// float32 log and tanh are ordo's own (vector_math_rows.inc), on FMA and
// table lookups; no float64 op looks anything up.
#define ORDO_FLOAT32_LANES(VecType, shape, isa, sqrt_of_x, fma_of_xyz, lookup_of_table_index)                     \
  ORDO_SLEEF_LANES(F32, VecType, float, F64, shape, isa, sleef_exp(x), float_log<F32>(x), float_tanh<F32>(x),      \
                   sqrt_of_x, sleef_pow(x, y), fma_of_xyz, lookup_of_table_index)
#define ORDO_FLOAT64_LANES(VecType, shape, isa, sqrt_of_x, fma_of_xyz)                                            \
  ORDO_SLEEF_LANES(F64, VecType, double, void, shape, isa, double_exp(x, sleef_exp),                                \
                   Sleef_log##shape##_u10##isa(x),                                                                \
                   Sleef_tanh##shape##_u10##isa(x), sqrt_of_x, double_pow(x, y, sleef_pow), fma_of_xyz,           \
                   (lanewise_lookup<Vec, Scalar>(table, index)))

// Baseline x86-64: SLEEF's 128-bit dispatchers; fma and lookups lane by
// lane, as the instructions would give them.
namespace sse2 {
#include "kernels/vector_math_rows.inc"
ORDO_FLOAT64_LANES(__m128d, d2, , _mm_sqrt_pd(x), lanewise_fma(x, y, z))
ORDO_FLOAT32_LANES(__m128, f4, , _mm_sqrt_ps(x), lanewise_fma(x, y, z), (lanewise_lookup<Vec, Scalar>(table, index)))
}  // namespace sse2

#pragma GCC push_options
#pragma GCC target("arch=x86-64-v3")
namespace avx2 {
#include "kernels/vector_math_rows.inc"
ORDO_FLOAT64_LANES(__m256d, d4, avx2, _mm256_sqrt_pd(x), _mm256_fmadd_pd(x, y, z))
ORDO_FLOAT32_LANES(__m256, f8, avx2, _mm256_sqrt_ps(x), _mm256_fmadd_ps(x, y, z),
                   _mm256_i32gather_ps(table, (__m256i)index, 4))
}  // namespace avx2
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("arch=x86-64-v4")
namespace avx512 {
#include "kernels/vector_math_rows.inc"
// The masked forms: GCC 12 warns that _mm512_sqrt_ps's own undefined
// operand may be used uninitialized.
ORDO_FLOAT64_LANES(__m512d, d8, avx512f, _mm512_mask_sqrt_pd(x, 0xff, x), _mm512_fmadd_pd(x, y, z))
ORDO_FLOAT32_LANES(__m512, f16, avx512f, _mm512_mask_sqrt_ps(x, 0xffff, x), _mm512_fmadd_ps(x, y, z),
                   _mm512_permutex2var_ps(_mm512_load_ps(table), (__m512i)index, _mm512_load_ps(table + 16)))
}  // namespace avx512
#pragma GCC pop_options

#undef ORDO_FLOAT64_LANES
#undef ORDO_FLOAT32_LANES
#undef ORDO_SLEEF_LANES

}  // namespace

VectorIsa best_vector_isa() {
  static const VectorIsa isa = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("x86-64-v4")) return VectorIsa::kAvx512;
    if (__builtin_cpu_supports("x86-64-v3")) return VectorIsa::kAvx2;
    return VectorIsa::kSse2;
  }();
  return isa;
}

RowFn vector_math_row(ir::OpKind op, DType dtype, VectorIsa isa) {
  switch (isa) {
    case VectorIsa::kSse2:
      return sse2::row_of<sse2::F32, sse2::F64>(op, dtype);
    case VectorIsa::kAvx2:
      return avx2::row_of<avx2::F32, avx2::F64>(op, dtype);
    case VectorIsa::kAvx512:
      return avx512::row_of<avx512::F32, avx512::F64>(op, dtype);
  }
  return nullptr;
}

}  // namespace ordo::kernels
