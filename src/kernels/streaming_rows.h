// Row functions that write with streaming stores, for outputs too large to
// stay in the caches.
//
// A plain store first reads the line it writes (the read for ownership),
// so an op whose output is past the caches moves that output through
// memory twice. A streaming (non-temporal) store writes the line without
// reading it: on the 2-core EPYC (32 MiB of L3), x * 2 over 4M floats on
// one thread took 2.0-2.4 ms with them against 2.9-3.5 ms stored plainly,
// in the same process. Below kStreamingOutputBytes the output may still be
// in a cache when the next op reads it, and a streamed one would not be.
//
// Two general forms were measured inside ordo and dropped: computing 4 KiB
// chunks with the plain row function into a scratch and streaming that out
// (no faster than plain stores), and streaming each line from the generic
// row template (slower: GCC left its scalar-operand loop unvectorized).
// What pays is a vector loop that stores with the streaming intrinsic, so
// there are such loops for the ops that move the most bytes per flop: +,
// -, * and / of float32 and float64, dense or against one element. They
// compute exactly what the plain row functions do (the same NaN rule for
// + and *, elementwise.cc), bit for bit.
#pragma once

#include "kernels/elementwise_rows.h"

namespace ordo::kernels {

inline constexpr int64_t kStreamingOutputBytes = int64_t{8} << 20;

// The streaming row function of op over `dtype` operands and result, for a
// dense dst whose operands are dense or single elements (stride 1 or 0);
// null where there is none (another op or dtype, or a CPU without SSE2).
RowFn streaming_row_fn(ir::OpKind op, DType dtype);

}  // namespace ordo::kernels
