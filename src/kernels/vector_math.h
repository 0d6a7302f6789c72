// Row functions (elementwise_rows.h) of the transcendental float ops (exp,
// log, tanh, sigmoid, sqrt, rsqrt, pow) through SLEEF's vector functions,
// accurate to 1 ulp (sqrt: correctly rounded; sigmoid and rsqrt add a
// division's rounding). The instruction set is the best the CPU has,
// chosen once: SSE2 (SLEEF's 128-bit entry points pick SSE2, SSE4.1 or
// AVX2-in-128-bit themselves), AVX2 + FMA, or AVX-512. On a CPU with FMA
// every set gives the same bits (tests/vector_math_test.cc checks that);
// without FMA SLEEF's arithmetic differs in the last bit now and then.
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
