// The geometry of a convolution node (Conv, ConvInputGrad, ConvWeightGrad)
// and its encoding in ir::Attrs: ints = {groups, then per spatial dim:
// stride, pad_begin, pad_end, dilation}. Padding has two sides because
// torch's padding='same' with an even kernel pads one more at the end.
// One of the op list's attrs structs (ir/op_attrs.h).
#pragma once

#include <cstdint>
#include <vector>

#include "ir/node.h"

namespace ordo::ir {

struct ConvDim {
  int64_t stride = 1;
  int64_t pad_begin = 0;
  int64_t pad_end = 0;
  int64_t dilation = 1;

  // Input positions one kernel window spans.
  int64_t window(int64_t kernel) const { return dilation * (kernel - 1) + 1; }
  // Output positions for `input` positions and a kernel of `kernel`; below 1
  // when the window does not fit the padded input.
  int64_t output_size(int64_t input, int64_t kernel) const {
    const int64_t padded = input + pad_begin + pad_end;
    return padded < window(kernel) ? 0 : (padded - window(kernel)) / stride + 1;
  }
};

struct ConvAttrs {
  int64_t groups = 1;
  std::vector<ConvDim> dims;  // one per spatial dim, outermost first

  Attrs encode() const;
  static ConvAttrs decode(const Attrs& attrs);
};

}  // namespace ordo::ir
