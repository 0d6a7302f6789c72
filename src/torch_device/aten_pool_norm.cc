// Pooling and batch norm of (N, C, H, W) inputs, lowered to ordo's ops
// (ordo/nn_ops.h) and their backward ops (lazy/pool_ops.h); other ranks
// fall back.
#include <ATen/Operators.h>
#include <ATen/native/CPUFallback.h>
#include <torch/library.h>

#include "lazy/pool_ops.h"
#include "torch_device/bridge.h"
#include "torch_device/fallback.h"
#include "torch_device/operands.h"

namespace ordo::torch_device {
namespace {

std::array<int64_t, 2> pair_of(at::IntArrayRef values, int64_t otherwise) {
  if (values.empty()) return {otherwise, otherwise};
  return {values[0], values.size() > 1 ? values[1] : values[0]};
}

ordo::Pool2dWindow window_of(at::IntArrayRef kernel, at::IntArrayRef stride, at::IntArrayRef padding,
                             at::IntArrayRef dilation, bool ceil_mode) {
  ordo::Pool2dWindow window;
  window.kernel = pair_of(kernel, 1);
  window.stride = stride.empty() ? window.kernel : pair_of(stride, 1);
  window.padding = pair_of(padding, 0);
  window.dilation = pair_of(dilation, 1);
  window.ceil_mode = ceil_mode;
  return window;
}


std::tuple<at::Tensor, at::Tensor> max_pool2d_with_indices(const at::Tensor& self, at::IntArrayRef kernel,
                                                           at::IntArrayRef stride, at::IntArrayRef padding,
                                                           at::IntArrayRef dilation, bool ceil_mode) {
  if (self.dim() != 4) {
    return at::native::call_fallback_fn<&fall_back_to_cpu, ATEN_OP(max_pool2d_with_indices)>::call(
        self, kernel, stride, padding, dilation, ceil_mode);
  }
  auto [out, indices] = ordo::max_pool2d_with_indices(value_of(self, "max_pool2d"),
                                                      window_of(kernel, stride, padding, dilation, ceil_mode));
  return {make_xla(out), make_xla(indices)};
}

at::Tensor max_pool2d_backward(const at::Tensor& grad, const at::Tensor& self, at::IntArrayRef kernel,
                               at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation,
                               bool ceil_mode, const at::Tensor& indices) {
  if (self.dim() != 4) {
    return at::native::call_fallback_fn<&fall_back_to_cpu, ATEN_OP(max_pool2d_with_indices_backward)>::call(
        grad, self, kernel, stride, padding, dilation, ceil_mode, indices);
  }
  const ordo::Pool2dWindow window = window_of(kernel, stride, padding, dilation, ceil_mode);
  const ir::MaxPoolAttrs pool{{window.kernel, window.stride, window.padding}, window.dilation, false};
  return make_xla(lazy::max_pool2d_backward(value_of(grad, "max_pool2d_backward"),
                                            value_of(self, "max_pool2d_backward"), pool));
}

at::Tensor avg_pool2d(const at::Tensor& self, at::IntArrayRef kernel, at::IntArrayRef stride,
                      at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                      c10::optional<int64_t> divisor_override) {
  if (self.dim() != 4) {
    return at::native::call_fallback_fn<&fall_back_to_cpu, ATEN_OP(avg_pool2d)>::call(
        self, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override);
  }
  std::optional<int64_t> divisor;
  if (divisor_override.has_value()) divisor = *divisor_override;
  return make_xla(ordo::avg_pool2d(value_of(self, "avg_pool2d"), window_of(kernel, stride, padding, {}, ceil_mode),
                                   count_include_pad, divisor));
}

at::Tensor avg_pool2d_backward(const at::Tensor& grad, const at::Tensor& self, at::IntArrayRef kernel,
                               at::IntArrayRef stride, at::IntArrayRef padding, bool ceil_mode,
                               bool count_include_pad, c10::optional<int64_t> divisor_override) {
  if (self.dim() != 4) {
    return at::native::call_fallback_fn<&fall_back_to_cpu, ATEN_OP(avg_pool2d_backward)>::call(
        grad, self, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override);
  }
  const ordo::Pool2dWindow window = window_of(kernel, stride, padding, {}, ceil_mode);
  const ir::AvgPoolAttrs pool{{window.kernel, window.stride, window.padding}, count_include_pad,
                              divisor_override.value_or(0)};
  const ordo::Tensor& x = value_of(self, "avg_pool2d_backward");
  return make_xla(lazy::avg_pool2d_backward(value_of(grad, "avg_pool2d_backward"), pool, x.shape()));
}

at::Tensor adaptive_avg_pool2d(const at::Tensor& self, c10::SymIntArrayRef output_size) {
  const Shape size = ints_of(output_size);
  TORCH_CHECK_VALUE(size.size() == 2, "adaptive_avg_pool2d: output_size must be 2 numbers");
  return make_xla(ordo::adaptive_avg_pool2d(value_of(self, "adaptive_avg_pool2d"), {size[0], size[1]}));
}

at::Tensor adaptive_avg_pool2d_backward(const at::Tensor& grad, const at::Tensor& self) {
  return make_xla(lazy::adaptive_avg_pool2d_backward(value_of(grad, "adaptive_avg_pool2d_backward"),
                                                     value_of(self, "adaptive_avg_pool2d_backward").shape()));
}

ordo::Tensor optional_value(const c10::optional<at::Tensor>& t, const char* op) {
  return t.has_value() && t->defined() ? value_of(*t, op) : ordo::Tensor();
}

std::vector<int64_t> all_but_channels(int64_t rank) {
  std::vector<int64_t> dims{0};
  for (int64_t d = 2; d < rank; ++d) dims.push_back(d);
  return dims;
}

ordo::Tensor per_channel(const ordo::Tensor& t, int64_t rank) {
  Shape shape(static_cast<size_t>(rank), 1);
  shape[1] = t.numel();
  return ordo::reshape(t, shape);
}

// PyTorch 1.13's native_batch_norm updates the running statistics in place
// without saying so in its schema: they are written here.
std::tuple<at::Tensor, at::Tensor, at::Tensor> native_batch_norm(
    const at::Tensor& input, const c10::optional<at::Tensor>& weight, const c10::optional<at::Tensor>& bias,
    const c10::optional<at::Tensor>& running_mean, const c10::optional<at::Tensor>& running_var, bool training,
    double momentum, double eps) {
  const ordo::Tensor& x = value_of(input, "batch_norm");
  const ordo::Tensor w = optional_value(weight, "batch_norm"), b = optional_value(bias, "batch_norm");
  const auto eps_tensor = ordo::full({}, eps, x.dtype(), x.device());
  if (training) {
    ordo::BatchNormTraining out = ordo::batch_norm_training(x, w, b, eps);
    const bool tracked = running_mean.has_value() && running_mean->defined();
    if (tracked) {
      const double n = static_cast<double>(x.numel() / x.shape()[1]);
      // Inputs, not constants: momentum=None makes it 1 / num_batches_tracked.
      auto m = constant(momentum, x.dtype(), x.device());
      auto keep = constant(1 - momentum, x.dtype(), x.device());
      auto unbiased = ordo::mul(out.var, ordo::full({}, n / std::max(n - 1, 1.0), x.dtype(), x.device()));
      set_value_of(*running_mean, ordo::add(ordo::mul(keep, value_of(*running_mean)), ordo::mul(m, out.mean)));
      set_value_of(*running_var, ordo::add(ordo::mul(keep, value_of(*running_var)), ordo::mul(m, unbiased)));
    }
    return {make_xla(out.output), make_xla(out.mean), make_xla(ordo::rsqrt(ordo::add(out.var, eps_tensor)))};
  }
  TORCH_CHECK_VALUE(running_mean.has_value() && running_mean->defined() && running_var.has_value() &&
                        running_var->defined(),
                    "batch_norm: running_mean and running_var must be defined in evaluation mode");
  const ordo::Tensor mean = value_of(*running_mean, "batch_norm");
  const ordo::Tensor invstd = ordo::rsqrt(ordo::add(value_of(*running_var, "batch_norm"), eps_tensor));
  ordo::Tensor y = ordo::mul(ordo::sub(x, per_channel(mean, x.dim())), per_channel(invstd, x.dim()));
  if (w.defined()) y = ordo::mul(y, per_channel(w, x.dim()));
  if (b.defined()) y = ordo::add(y, per_channel(b, x.dim()));
  return {make_xla(y), make_xla(ordo::zeros({0}, x.dtype(), x.device())),
          make_xla(ordo::zeros({0}, x.dtype(), x.device()))};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_batch_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input, const c10::optional<at::Tensor>& weight,
    const c10::optional<at::Tensor>& running_mean, const c10::optional<at::Tensor>& running_var,
    const c10::optional<at::Tensor>&, const c10::optional<at::Tensor>&, bool train, double eps,
    std::array<bool, 3> mask) {
  const ordo::Tensor& g = value_of(grad_out, "batch_norm_backward");
  const ordo::Tensor& x = value_of(input, "batch_norm_backward");
  const ordo::Tensor w = optional_value(weight, "batch_norm_backward");
  at::Tensor dx, dw, db;
  if (train) {
    const int64_t channels = x.shape()[1];
    const ordo::Tensor zeros = ordo::zeros({channels}, x.dtype(), x.device());
    lazy::BatchNormGradients grads = lazy::batch_norm_training_backward(g, x, w, zeros, zeros, eps);
    if (mask[0]) dx = make_xla(grads.input);
    if (mask[1] && w.defined()) dw = make_xla(grads.weight);
    if (mask[2]) db = make_xla(grads.bias);
    return {dx, dw, db};
  }
  TORCH_CHECK_VALUE(running_mean.has_value() && running_mean->defined() && running_var.has_value() &&
                        running_var->defined(),
                    "batch_norm_backward: running_mean and running_var must be defined in evaluation mode");
  const int64_t rank = x.dim();
  const ordo::Tensor invstd = ordo::rsqrt(ordo::add(value_of(*running_var, "batch_norm_backward"),
                                                    ordo::full({}, eps, x.dtype(), x.device())));
  if (mask[0]) {
    ordo::Tensor scale = w.defined() ? ordo::mul(w, invstd) : invstd;
    dx = make_xla(ordo::mul(g, per_channel(scale, rank)));
  }
  if (mask[1] && w.defined()) {
    ordo::Tensor xhat = ordo::mul(ordo::sub(x, per_channel(value_of(*running_mean), rank)), per_channel(invstd, rank));
    dw = make_xla(ordo::sum(ordo::mul(g, xhat), all_but_channels(rank)));
  }
  if (mask[2]) db = make_xla(ordo::sum(g, all_but_channels(rank)));
  return {dx, dw, db};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, XLA, m) {
  m.impl("max_pool2d_with_indices", TORCH_FN(max_pool2d_with_indices));
  m.impl("max_pool2d_with_indices_backward", TORCH_FN(max_pool2d_backward));
  m.impl("avg_pool2d", TORCH_FN(avg_pool2d));
  m.impl("avg_pool2d_backward", TORCH_FN(avg_pool2d_backward));
  m.impl("_adaptive_avg_pool2d", TORCH_FN(adaptive_avg_pool2d));
  m.impl("_adaptive_avg_pool2d_backward", TORCH_FN(adaptive_avg_pool2d_backward));
  m.impl("native_batch_norm", TORCH_FN(native_batch_norm));
  m.impl("native_batch_norm_backward", TORCH_FN(native_batch_norm_backward));
}

}  // namespace ordo::torch_device
