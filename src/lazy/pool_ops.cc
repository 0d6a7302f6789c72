// Builders of max_pool2d, avg_pool2d and adaptive_avg_pool2d: torch 1.13's
// argument checks and output sizes, all before anything is recorded. The
// ops see (N, C, H, W) only: a 3-d input is reshaped to one sample.
#include <string>

#include "core/source_location.h"
#include "lazy/pool_ops.h"
#include "lazy/trace.h"
#include "ordo/nn_ops.h"

namespace ordo {
namespace {

// A 3-d or 4-d floating input, as a 4-d tensor.
Tensor as_batch(std::string_view what, const Tensor& x) {
  ORDO_ARG_CHECK(x.defined(), what, ": the input tensor is undefined");
  ORDO_ARG_CHECK(x.dim() == 3 || x.dim() == 4, what, ": the input must be (N, C, H, W) or (C, H, W), got shape ",
                 shape_to_string(x.shape()));
  ORDO_DTYPE_CHECK(is_floating(x.dtype()), what, ": needs a float tensor, got ", dtype_name(x.dtype()));
  for (int64_t d = x.dim() - 2; d < x.dim(); ++d) {
    ORDO_ARG_CHECK(x.shape()[d] > 0, what, ": the input's spatial sizes must be positive, got shape ",
                   shape_to_string(x.shape()));
  }
  const Tensor* in[] = {&x};
  lazy::common_device(what, in);
  return x.dim() == 4 ? x : reshape(x, {1, x.shape()[0], x.shape()[1], x.shape()[2]});
}

// The result in the input's rank.
Tensor like_input(const Tensor& y, const Tensor& x) {
  return x.dim() == 4 ? y : reshape(y, {y.shape()[1], y.shape()[2], y.shape()[3]});
}

// floor(a / b) for b > 0, as torch's div_rtn.
int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// One axis of torch's pooling_output_shape_pad_lr, with its checks.
int64_t pooled_size(std::string_view what, const char* axis, int64_t input, int64_t kernel, int64_t stride,
                    int64_t pad, int64_t dilation, bool ceil_mode) {
  ORDO_ARG_CHECK(kernel > 0 && stride > 0 && dilation > 0, what, ": kernel, stride and dilation must be positive, got ",
                 kernel, ", ", stride, " and ", dilation, " for the ", axis);
  ORDO_ARG_CHECK(pad >= 0 && pad <= kernel / 2, what, ": padding must be at most half the kernel, got padding ", pad,
                 " and kernel ", kernel, " for the ", axis);
  const int64_t span = dilation * (kernel - 1) + 1;
  ORDO_ARG_CHECK(span <= input + 2 * pad, what, ": the kernel (", span, " with dilation) is larger than the padded ",
                 axis, " (", input, " + 2 * ", pad, ")");
  int64_t out = floor_div(input + 2 * pad - span + (ceil_mode ? stride - 1 : 0), stride) + 1;
  if (ceil_mode && (out - 1) * stride >= input + pad) --out;  // the last window starts inside
  ORDO_ARG_CHECK(out >= 1, what, ": the output ", axis, " would be ", out, " (input ", input, ")");
  return out;
}

struct Pooled {
  Shape shape;
  ir::MaxPoolAttrs pool;  // the window with its stride resolved, the dilation
};

// The output shape and the window's geometry.
Pooled pool_geometry(std::string_view what, const Tensor& x4, const Pool2dWindow& window) {
  Pooled p{x4.shape(), {{window.kernel, {}, window.padding}, window.dilation, false}};
  const char* axes[] = {"height", "width"};
  for (int a = 0; a < 2; ++a) {
    p.pool.window.stride[a] = window.stride[a] == 0 ? window.kernel[a] : window.stride[a];
    p.shape[2 + a] = pooled_size(what, axes[a], x4.shape()[2 + a], window.kernel[a], p.pool.window.stride[a],
                                 window.padding[a], window.dilation[a], window.ceil_mode);
  }
  return p;
}

lazy::Tensors trace_max_pool(const Tensor& x4, ir::MaxPoolAttrs pool, const Shape& output_shape,
                             bool with_indices) {
  ir::ValueTypes outputs{{x4.dtype(), output_shape}};
  if (with_indices) outputs.push_back({DType::kInt64, output_shape});
  pool.with_indices = with_indices;
  const Tensor* in[] = {&x4};
  return lazy::trace(ir::OpKind::kMaxPool2d, in, std::move(outputs), ir::encode<ir::OpKind::kMaxPool2d>(pool));
}

}  // namespace

Tensor max_pool2d(const Tensor& x, const Pool2dWindow& window, Caller caller) {
  const ScopedUserLocation here(caller);
  const Tensor x4 = as_batch("max_pool2d", x);
  Pooled p = pool_geometry("max_pool2d", x4, window);
  return like_input(trace_max_pool(x4, p.pool, p.shape, false)[0], x);
}

std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, const Pool2dWindow& window, Caller caller) {
  const ScopedUserLocation here(caller);
  const Tensor x4 = as_batch("max_pool2d", x);
  Pooled p = pool_geometry("max_pool2d", x4, window);
  lazy::Tensors out = trace_max_pool(x4, p.pool, p.shape, true);
  return {like_input(out[0], x), like_input(out[1], x)};
}

Tensor avg_pool2d(const Tensor& x, const Pool2dWindow& window, bool count_include_pad,
                  std::optional<int64_t> divisor_override, Caller caller) {
  const ScopedUserLocation here(caller);
  const Tensor x4 = as_batch("avg_pool2d", x);
  ORDO_ARG_CHECK(window.dilation[0] == 1 && window.dilation[1] == 1, "avg_pool2d: has no dilation");
  ORDO_ARG_CHECK(!divisor_override || *divisor_override > 0, "avg_pool2d: divisor_override must be positive, got ",
                 divisor_override.value_or(0));
  const Pooled p = pool_geometry("avg_pool2d", x4, window);
  const ir::AvgPoolAttrs pool{p.pool.window, count_include_pad, divisor_override.value_or(0)};
  return like_input(lazy::avg_pool2d_forward(x4, pool, p.shape), x);
}

Tensor adaptive_avg_pool2d(const Tensor& x, std::array<int64_t, 2> output_size, Caller caller) {
  const ScopedUserLocation here(caller);
  const Tensor x4 = as_batch("adaptive_avg_pool2d", x);
  ORDO_ARG_CHECK(output_size[0] >= 1 && output_size[1] >= 1,
                 "adaptive_avg_pool2d: output sizes must be at least 1, got (", output_size[0], ", ", output_size[1],
                 ")");
  const Shape shape{x4.shape()[0], x4.shape()[1], output_size[0], output_size[1]};
  return like_input(lazy::trace1(ir::OpKind::kAdaptiveAvgPool2d, {&x4}, {x4.dtype(), shape}), x);
}

namespace lazy {

Tensor max_pool2d_backward(const Tensor& grad, const Tensor& x, const ir::MaxPoolAttrs& pool) {
  ir::MaxPoolAttrs backward = pool;
  backward.with_indices = false;
  return trace1(ir::OpKind::kMaxPool2dBackward, {&grad, &x}, {x.dtype(), x.shape()},
                ir::encode<ir::OpKind::kMaxPool2dBackward>(backward));
}

Tensor max_pool2d_indices(const Tensor& x, const ir::MaxPoolAttrs& pool, const Shape& output_shape) {
  return trace_max_pool(x, pool, output_shape, true)[1];
}

Tensor avg_pool2d_forward(const Tensor& x, const ir::AvgPoolAttrs& pool, const Shape& output_shape) {
  return trace1(ir::OpKind::kAvgPool2d, {&x}, {x.dtype(), output_shape}, ir::encode<ir::OpKind::kAvgPool2d>(pool));
}

Tensor avg_pool2d_backward(const Tensor& grad, const ir::AvgPoolAttrs& pool, const Shape& input_shape) {
  return trace1(ir::OpKind::kAvgPool2dBackward, {&grad}, {grad.dtype(), input_shape},
                ir::encode<ir::OpKind::kAvgPool2dBackward>(pool));
}

Tensor adaptive_avg_pool2d_backward(const Tensor& grad, const Shape& input_shape) {
  return trace1(ir::OpKind::kAdaptiveAvgPool2dBackward, {&grad}, {grad.dtype(), input_shape});
}

}  // namespace lazy
}  // namespace ordo
