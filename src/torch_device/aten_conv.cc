// Convolutions: 1-d and 2-d, not transposed, lowered to ordo's Conv ops
// (lazy/conv_ops.h); anything else (transposed, 3-d) falls back.
#include <ATen/Operators.h>
#include <ATen/native/CPUFallback.h>
#include <torch/library.h>

#include "ir/conv_attrs.h"
#include "lazy/conv_ops.h"
#include "torch_device/bridge.h"
#include "torch_device/fallback.h"
#include "torch_device/operands.h"

namespace ordo::torch_device {
namespace {

bool lowered(const at::Tensor& input, bool transposed) {
  return !transposed && (input.dim() == 3 || input.dim() == 4) && is_xla(input);
}

// torch's per-dim lists (one value for every dim, or one per dim).
int64_t at_dim(at::IntArrayRef values, size_t d) { return values.size() == 1 ? values[0] : values[d]; }

ir::ConvAttrs geometry(int64_t spatial, at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation,
                       int64_t groups) {
  ir::ConvAttrs conv;
  conv.groups = groups;
  for (int64_t d = 0; d < spatial; ++d) {
    const size_t i = static_cast<size_t>(d);
    conv.dims.push_back({at_dim(stride, i), at_dim(padding, i), at_dim(padding, i), at_dim(dilation, i)});
  }
  return conv;
}

at::Tensor convolution(const at::Tensor& input, const at::Tensor& weight, const c10::optional<at::Tensor>& bias,
                       at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
                       at::IntArrayRef output_padding, int64_t groups) {
  if (!lowered(input, transposed)) {
    return at::native::call_fallback_fn<&fall_back_to_cpu, ATEN_OP(convolution)>::call(
        input, weight, bias, stride, padding, dilation, transposed, output_padding, groups);
  }
  auto list = [](at::IntArrayRef values) { return std::vector<int64_t>(values.begin(), values.end()); };
  ordo::ConvOptions options{list(stride), list(padding), list(dilation), groups, ""};
  const ordo::Tensor& x = value_of(input, "convolution");
  const ordo::Tensor b = bias.has_value() && bias->defined() ? value_of(*bias, "convolution") : ordo::Tensor();
  const ordo::Tensor& w = value_of(weight, "convolution");
  return make_xla(input.dim() == 3 ? ordo::conv1d(x, w, b, options) : ordo::conv2d(x, w, b, options));
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight,
    at::OptionalSymIntArrayRef bias_sizes, at::IntArrayRef stride, at::IntArrayRef padding,
    at::IntArrayRef dilation, bool transposed, at::IntArrayRef output_padding, int64_t groups,
    std::array<bool, 3> mask) {
  if (!lowered(input, transposed)) {
    return at::native::call_fallback_fn_symint<&fall_back_to_cpu, ATEN_OP(convolution_backward)>::call(
        grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed, output_padding, groups,
        mask);
  }
  const ordo::Tensor& g = value_of(grad_output, "convolution_backward");
  const ordo::Tensor& x = value_of(input, "convolution_backward");
  const ordo::Tensor& w = value_of(weight, "convolution_backward");
  const ir::ConvAttrs conv = geometry(input.dim() - 2, stride, padding, dilation, groups);
  at::Tensor dx, dw, db;
  if (mask[0]) dx = make_xla(lazy::conv_input_grad(g, w, conv, x.shape()));
  if (mask[1]) dw = make_xla(lazy::conv_weight_grad(x, g, conv, w.shape()));
  if (mask[2]) {
    std::vector<int64_t> dims{0};
    for (int64_t d = 2; d < g.dim(); ++d) dims.push_back(d);
    db = make_xla(ordo::sum(g, dims));
  }
  return {dx, dw, db};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, XLA, m) {
  m.impl("convolution", TORCH_FN(convolution));
  m.impl("convolution_backward", TORCH_FN(convolution_backward));
}

}  // namespace ordo::torch_device
