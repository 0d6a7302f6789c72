// Row functions (elementwise_rows.h) of the transcendental float ops (exp,
// log, tanh, sigmoid, erf, sqrt, rsqrt, pow) on vectors: float32 within
// each function's bound of the true value on every input
// (tests/float32_accuracy.h; scripts/ulp-sweep.sh checks all 2^32), float64
// within 2 ulp of the C library (tests/vector_math_test.cc). SLEEF's 1-ulp
// functions, sqrt by the (correctly rounded) instruction, float32 log
// (Cephes' polynomial) and tanh (a table of polynomials) of ordo's own on
// FMA, sigmoid from exp(-|x|) (float32's computed in float64), rsqrt as
// 1 / sqrt. The instruction set is the best the CPU
// has, chosen once: SSE2 (SLEEF's 128-bit entry points pick SSE2, SSE4.1 or
// AVX2-in-128-bit themselves; ordo's FMA is the C library's fma there, lane
// by lane, exact but slow on a CPU without the instruction), AVX2 + FMA, or
// AVX-512. On a CPU with FMA every set gives the same bits but for the sign
// of a NaN it makes; without FMA SLEEF's arithmetic rounds differently now
// and then (within the bound). A row's last, partial vector is padded, so
// an element's bits never depend on its position.
//
//   RowFn exp_rows = vector_math_row(ir::OpKind::kExp, DType::kFloat32, best_vector_isa());
#pragma once

#include "ir/ops.h"
#include "kernels/elementwise_rows.h"
#include "ordo/dtype.h"

namespace ordo::kernels {

enum class VectorIsa { kSse2, kAvx2, kAvx512 };

// The widest set this CPU (and its OS) supports.
VectorIsa best_vector_isa();

// The row function of op over dtype in isa (which the CPU must support);
// null when op is not one of these ops or dtype is not a float dtype.
RowFn vector_math_row(ir::OpKind op, DType dtype, VectorIsa isa);

}  // namespace ordo::kernels
