// Builders of conv1d and conv2d (ordo/nn_ops.h): torch 1.13's argument
// rules, checked before anything is recorded, then one Conv node (and an
// add of the bias, whose gradient is then the add's: g summed over the
// batch and spatial dims).
#include "lazy/conv_ops.h"

#include <string>

#include "core/source_location.h"
#include "ir/op_attrs.h"
#include "lazy/trace.h"
#include "ordo/nn_ops.h"

namespace ordo {
namespace {

// One value per spatial dim from a list of one (every dim) or `spatial`.
std::vector<int64_t> per_dim(std::string_view what, std::string_view name, const std::vector<int64_t>& values,
                             size_t spatial, int64_t minimum) {
  ORDO_ARG_CHECK(values.size() == 1 || values.size() == spatial, what, ": ", name, " must hold 1 or ", spatial,
                 " values, got ", values.size());
  for (int64_t value : values) {
    ORDO_ARG_CHECK(value >= minimum, what, ": ", name, " must be >= ", minimum, ", got ", value);
  }
  return values.size() == spatial ? values : std::vector<int64_t>(spatial, values[0]);
}

// The node's geometry from the options for a kernel of `kernel` sizes.
ir::ConvAttrs geometry(std::string_view what, const ConvOptions& options, const Shape& kernel) {
  const size_t spatial = kernel.size();
  const std::vector<int64_t> stride = per_dim(what, "stride", options.stride, spatial, 1);
  const std::vector<int64_t> dilation = per_dim(what, "dilation", options.dilation, spatial, 1);
  ORDO_ARG_CHECK(options.padding_mode.empty() || options.padding_mode == "same" || options.padding_mode == "valid",
                 what, ": padding must be 'same', 'valid' or numbers, got '", options.padding_mode, "'");
  const bool same = options.padding_mode == "same";
  for (int64_t s : stride) {
    ORDO_ARG_CHECK(!same || s == 1, what, ": padding='same' is not supported for strided convolutions");
  }
  const std::vector<int64_t> padding =
      options.padding_mode.empty() ? per_dim(what, "padding", options.padding, spatial, 0)
                                   : std::vector<int64_t>(spatial, 0);
  ir::ConvAttrs conv;
  conv.groups = options.groups;
  for (size_t d = 0; d < spatial; ++d) {
    ir::ConvDim dim{stride[d], padding[d], padding[d], dilation[d]};
    if (same) {  // torch's: the total split evenly, the odd one at the end
      const int64_t total = dilation[d] * (kernel[d] - 1);
      dim.pad_begin = total / 2;
      dim.pad_end = total - dim.pad_begin;
    }
    conv.dims.push_back(dim);
  }
  return conv;
}

void check_operands(std::string_view what, const Tensor& x, const Tensor& w, const Tensor& bias, size_t spatial) {
  const auto rank = static_cast<int64_t>(spatial);
  ORDO_ARG_CHECK(x.defined() && w.defined(), what, ": the input and the weight must be defined");
  ORDO_DTYPE_CHECK(is_floating(x.dtype()), what, ": needs float tensors, got ", dtype_name(x.dtype()));
  ORDO_DTYPE_CHECK(w.dtype() == x.dtype(), what, ": the weight's dtype ", dtype_name(w.dtype()),
                   " differs from the input's ", dtype_name(x.dtype()));
  ORDO_ARG_CHECK(x.dim() == rank + 2 || x.dim() == rank + 1, what, ": expected a ", rank + 2, "-d (batched) or ", rank + 1,
                 "-d (unbatched) input, got shape ", shape_to_string(x.shape()));
  ORDO_ARG_CHECK(w.dim() == rank + 2, what, ": expected a ", rank + 2, "-d weight, got shape ",
                 shape_to_string(w.shape()));
  if (bias.defined()) {
    ORDO_DTYPE_CHECK(bias.dtype() == x.dtype(), what, ": the bias's dtype ", dtype_name(bias.dtype()),
                     " differs from the input's ", dtype_name(x.dtype()));
    ORDO_ARG_CHECK(bias.dim() == 1 && bias.shape()[0] == w.shape()[0], what, ": the bias must have shape [",
                   w.shape()[0], "] (one per output channel), got ", shape_to_string(bias.shape()));
  }
}

// The output shape, or InvalidArgument naming what does not fit.
Shape output_shape(std::string_view what, const Shape& x, const Shape& w, const ir::ConvAttrs& conv) {
  const int64_t channels = x[1], out_channels = w[0];
  ORDO_ARG_CHECK(conv.groups >= 1, what, ": groups must be >= 1, got ", conv.groups);
  ORDO_ARG_CHECK(out_channels >= 1 && out_channels % conv.groups == 0, what, ": groups ", conv.groups,
                 " must divide the weight's ", out_channels, " output channels");
  ORDO_ARG_CHECK(channels >= 1 && channels % conv.groups == 0, what, ": groups ", conv.groups,
                 " must divide the input's ", channels, " channels");
  ORDO_ARG_CHECK(w[1] * conv.groups == channels, what, ": the weight ", shape_to_string(w), " with groups ",
                 conv.groups, " expects ", w[1] * conv.groups, " input channels, the input ", shape_to_string(x),
                 " has ", channels);
  Shape out = {x[0], out_channels};
  for (size_t d = 0; d < conv.dims.size(); ++d) {
    const ir::ConvDim& dim = conv.dims[d];
    const int64_t input = x[d + 2], kernel = w[d + 2];
    ORDO_ARG_CHECK(kernel >= 1, what, ": the kernel's sizes must be >= 1, got weight ", shape_to_string(w));
    const int64_t padded = input + dim.pad_begin + dim.pad_end;
    ORDO_ARG_CHECK(padded >= dim.window(kernel), what, ": the kernel's window (", dim.window(kernel),
                   " with dilation) is larger than the padded input (", padded, ") along spatial dim ", d,
                   ": input ", shape_to_string(x), ", weight ", shape_to_string(w));
    out.push_back(dim.output_size(input, kernel));
  }
  return out;
}

Tensor convolve(std::string_view what, const Tensor& x, const Tensor& w, const Tensor& bias,
                const ConvOptions& options, size_t spatial) {
  check_operands(what, x, w, bias, spatial);
  const Tensor* in[] = {&x, &w, &bias};
  lazy::common_device(what, std::span(in, bias.defined() ? 3 : 2));
  const ir::ConvAttrs conv = geometry(what, options, Shape(w.shape().begin() + 2, w.shape().end()));
  // torch's unbatched form is a batch of one.
  const bool unbatched = x.dim() == static_cast<int64_t>(spatial) + 1;
  Shape batched = x.shape();
  if (unbatched) batched.insert(batched.begin(), 1);
  const Shape out = output_shape(what, batched, w.shape(), conv);
  const Tensor input = unbatched ? reshape(x, batched) : x;
  Tensor y = lazy::trace1(ir::OpKind::kConv, {&input, &w}, {x.dtype(), out}, ir::encode<ir::OpKind::kConv>(conv));
  if (bias.defined()) {
    Shape per_channel(out.size() - 1, 1);
    per_channel[0] = out[1];
    y = y + reshape(bias, per_channel);
  }
  return unbatched ? reshape(y, Shape(out.begin() + 1, out.end())) : y;
}

}  // namespace

Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias, const ConvOptions& options, Caller caller) {
  const ScopedUserLocation here(caller);
  return convolve("conv1d", x, weight, bias, options, 1);
}

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const ConvOptions& options, Caller caller) {
  const ScopedUserLocation here(caller);
  return convolve("conv2d", x, weight, bias, options, 2);
}

namespace lazy {

Tensor conv(const Tensor& x, const Tensor& w, const ir::ConvAttrs& conv) {
  Shape out = {x.shape()[0], w.shape()[0]};
  for (size_t d = 0; d < conv.dims.size(); ++d) {
    out.push_back(conv.dims[d].output_size(x.shape()[d + 2], w.shape()[d + 2]));
  }
  return trace1(ir::OpKind::kConv, {&x, &w}, {x.dtype(), std::move(out)}, ir::encode<ir::OpKind::kConv>(conv));
}

Tensor conv_input_grad(const Tensor& g, const Tensor& w, const ir::ConvAttrs& conv, const Shape& x_shape) {
  return trace1(ir::OpKind::kConvInputGrad, {&g, &w}, {g.dtype(), x_shape},
                ir::encode<ir::OpKind::kConvInputGrad>(conv));
}

Tensor conv_weight_grad(const Tensor& x, const Tensor& g, const ir::ConvAttrs& conv, const Shape& w_shape) {
  return trace1(ir::OpKind::kConvWeightGrad, {&x, &g}, {x.dtype(), w_shape},
                ir::encode<ir::OpKind::kConvWeightGrad>(conv));
}

}  // namespace lazy
}  // namespace ordo
