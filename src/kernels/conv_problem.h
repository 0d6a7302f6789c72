// A convolution node's geometry in 2-d terms, shared by the kernels of
// conv.cc and their oneDNN route (onednn/conv_onednn.cc): x [batch,
// channels, height, width], w [out_channels, channels / groups, kernel_h,
// kernel_w], y [batch, out_channels, out_h, out_w]. A 1-d convolution is a
// 2-d one of height 1.
#pragma once

#include <cstdint>

#include "ordo/dtype.h"
#include "ir/conv_attrs.h"

namespace ordo::kernels {

struct ConvProblem {
  int64_t batch = 0, channels = 0, height = 1, width = 0;
  int64_t out_channels = 0, kernel_h = 1, kernel_w = 0;
  int64_t out_h = 1, out_w = 0;
  int64_t groups = 1;
  ir::ConvDim along_h, along_w;

  int64_t group_channels() const { return channels / groups; }
  int64_t group_out_channels() const { return out_channels / groups; }
  int64_t patch() const { return group_channels() * kernel_h * kernel_w; }
  int64_t in_area() const { return height * width; }
  int64_t out_area() const { return out_h * out_w; }
  // A 1x1 kernel reading every position once: x's rows are the patch matrix.
  bool pointwise() const {
    const auto plain = [](const ir::ConvDim& d) { return d.stride == 1 && d.pad_begin == 0 && d.pad_end == 0; };
    return kernel_h == 1 && kernel_w == 1 && plain(along_h) && plain(along_w);
  }
};

inline ConvProblem conv_problem_of(const Shape& x, const Shape& w, const Shape& y, const ir::ConvAttrs& conv) {
  const bool two_d = conv.dims.size() == 2;
  ConvProblem p;
  p.batch = x[0];
  p.channels = x[1];
  p.width = x.back();
  p.out_channels = w[0];
  p.kernel_w = w.back();
  p.out_w = y.back();
  p.groups = conv.groups;
  p.along_w = conv.dims.back();
  if (two_d) {
    p.height = x[2];
    p.kernel_h = w[2];
    p.out_h = y[2];
    p.along_h = conv.dims[0];
  }
  return p;
}

}  // namespace ordo::kernels
