// float32 convolutions through oneDNN (Debian's libdnnl 2.6, the library of
// PyTorch's CPU convolutions), when the build found it (ORDO_HAVE_ONEDNN);
// conv.cc's patch-matrix products serve every other case.
//
// As the BLAS: oneDNN runs on the calling thread only (its OpenMP team is
// set to one thread on every thread that calls it), in blocks of samples
// fixed by the shape, spread by ordo over its free cores. A weight gradient
// sums the blocks' partial products in block order after them. So the bits
// do not depend on the thread count, as for every other kernel.
//
//   if (onednn::convolve(onednn::ConvPass::kForward, p, x, w, y)) return;
#pragma once

#include "kernels/conv_problem.h"

namespace ordo::kernels::onednn {

// Forward: out = y from (a, b) = (x, w). Input gradient: out = dx from
// (gy, w). Weight gradient: out = dw from (x, gy). Every pointer is to a
// dense tensor of ordo's layout (NCHW, OIHW).
enum class ConvPass { kForward, kInputGrad, kWeightGrad };

// Runs the pass and returns true, or returns false having written nothing
// where oneDNN has no implementation for the problem (the answer depends
// on the problem only). p has at least one sample and one output element.
bool convolve(ConvPass pass, const ConvProblem& p, const float* a, const float* b, float* out);

}  // namespace ordo::kernels::onednn
