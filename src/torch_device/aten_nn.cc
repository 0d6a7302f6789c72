// The layers' ops and their backward ops, as compositions of ordo's ops
// (the formulas of torch's derivatives).
#include <cmath>

#include <torch/library.h>

#include "torch_device/bridge.h"
#include "torch_device/dtypes.h"
#include "torch_device/operands.h"

namespace ordo::torch_device {
namespace {

at::Tensor log_softmax(const at::Tensor& self, int64_t dim, bool) {
  return make_xla(ordo::log_softmax(value_of(self, "log_softmax"), wrap_dim(dim, self.dim(), "log_softmax")));
}

at::Tensor softmax(const at::Tensor& self, int64_t dim, bool) {
  return make_xla(ordo::softmax(value_of(self, "softmax"), wrap_dim(dim, self.dim(), "softmax")));
}

// grad - exp(output) * sum(grad)
at::Tensor log_softmax_backward(const at::Tensor& grad_output, const at::Tensor& output, int64_t dim,
                                at::ScalarType) {
  const ordo::Tensor& g = value_of(grad_output, "log_softmax_backward");
  const ordo::Tensor& y = value_of(output, "log_softmax_backward");
  dim = wrap_dim(dim, output.dim(), "log_softmax_backward");
  return make_xla(ordo::sub(g, ordo::mul(ordo::exp(y), ordo::sum(g, {dim}, true))));
}

// output * (grad - sum(grad * output))
at::Tensor softmax_backward(const at::Tensor& grad_output, const at::Tensor& output, int64_t dim, at::ScalarType) {
  const ordo::Tensor& g = value_of(grad_output, "softmax_backward");
  const ordo::Tensor& y = value_of(output, "softmax_backward");
  dim = wrap_dim(dim, output.dim(), "softmax_backward");
  return make_xla(ordo::mul(y, ordo::sub(g, ordo::sum(ordo::mul(g, y), {dim}, true))));
}

enum Reduction : int64_t { kNone = 0, kMean = 1, kSum = 2 };

// Per sample of nll_loss: the class weight of its target (0 where the
// target is ignore_index) and the target made safe to index with.
struct NllTargets {
  ordo::Tensor weight;  // [N], the input's dtype
  ordo::Tensor index;   // [N], int64, ignored targets at 0
};

NllTargets nll_targets(const ordo::Tensor& input, const at::Tensor& target, const c10::optional<at::Tensor>& weight,
                       int64_t ignore_index) {
  TORCH_CHECK(input.dim() == 2 || input.dim() == 1, "nll_loss: expected 1-D or 2-D input, got ", input.dim(),
              "-D (higher ranks are nll_loss2d's)");
  const int device = input.device();
  ordo::Tensor t = operand(target, DType::kInt64, device, "nll_loss");
  if (t.dim() == 0) t = ordo::reshape(t, {1});
  ordo::Tensor ignored = ordo::eq(t, ordo::full({}, ignore_index, DType::kInt64, device));
  ordo::Tensor zero_index = ordo::zeros({}, DType::kInt64, device);
  ordo::Tensor index = ordo::where(ignored, zero_index, t);
  ordo::Tensor w = ordo::ones(t.shape(), input.dtype(), device);
  if (weight.has_value() && weight->defined()) {
    w = ordo::index_select(operand(*weight, input.dtype(), device, "nll_loss"), 0, index);
  }
  w = ordo::where(ignored, ordo::zeros({}, input.dtype(), device), w);
  return {w, index};
}

ordo::Tensor as_rows(const ordo::Tensor& input) {
  return input.dim() == 1 ? ordo::reshape(input, {1, input.shape()[0]}) : input;
}

std::tuple<at::Tensor, at::Tensor> nll_loss_forward(const at::Tensor& self, const at::Tensor& target,
                                                    const c10::optional<at::Tensor>& weight, int64_t reduction,
                                                    int64_t ignore_index) {
  const ordo::Tensor& input = value_of(self, "nll_loss");
  NllTargets targets = nll_targets(input, target, weight, ignore_index);
  ordo::Tensor rows = as_rows(input);
  const int64_t n = rows.shape()[0];
  ordo::Tensor picked = ordo::reshape(ordo::gather(rows, 1, ordo::reshape(targets.index, {n, 1})), {n});
  // An ignored row adds nothing, even where its picked value is infinite.
  ordo::Tensor zero = ordo::zeros({}, input.dtype(), input.device());
  ordo::Tensor losses = ordo::where(ordo::eq(targets.weight, zero), zero, ordo::neg(ordo::mul(picked, targets.weight)));
  ordo::Tensor total_weight = ordo::sum(targets.weight);
  if (reduction == kNone) {
    return {make_xla(input.dim() == 1 ? ordo::reshape(losses, {}) : losses), make_xla(total_weight)};
  }
  ordo::Tensor total = ordo::sum(losses);
  if (reduction == kMean) total = ordo::div(total, total_weight);
  return {make_xla(total), make_xla(total_weight)};
}

at::Tensor nll_loss_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                             const c10::optional<at::Tensor>& weight, int64_t reduction, int64_t ignore_index,
                             const at::Tensor& total_weight) {
  const ordo::Tensor& input = value_of(self, "nll_loss_backward");
  NllTargets targets = nll_targets(input, target, weight, ignore_index);
  ordo::Tensor rows = as_rows(input);
  const int64_t n = rows.shape()[0], classes = rows.shape()[1];
  ordo::Tensor g = value_of(grad_output, "nll_loss_backward");
  if (reduction == kMean) g = ordo::div(g, value_of(total_weight, "nll_loss_backward"));
  g = reduction == kNone ? ordo::reshape(g, {n}) : g;
  ordo::Tensor zero = ordo::zeros({}, input.dtype(), input.device());
  // Rows of weight 0 (ignored) get 0, even when every row is ignored and g
  // is 0 / 0.
  ordo::Tensor coefficient =
      ordo::where(ordo::eq(targets.weight, zero), zero, ordo::neg(ordo::mul(targets.weight, g)));  // [N]
  ordo::Tensor hot = ordo::one_hot(targets.index, classes, input.dtype());
  ordo::Tensor grad = ordo::mul(hot, ordo::reshape(coefficient, {n, 1}));
  return make_xla(ordo::reshape(grad, input.shape()));
}

std::vector<int64_t> trailing_dims(int64_t rank, size_t count) {
  std::vector<int64_t> dims;
  for (int64_t d = rank - static_cast<int64_t>(count); d < rank; ++d) dims.push_back(d);
  return dims;
}

std::vector<int64_t> leading_dims(int64_t rank, size_t count) {
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < rank - static_cast<int64_t>(count); ++d) dims.push_back(d);
  return dims;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> layer_norm(const at::Tensor& input, c10::SymIntArrayRef normalized,
                                                          const c10::optional<at::Tensor>& weight,
                                                          const c10::optional<at::Tensor>& bias, double eps) {
  const ordo::Tensor& x = value_of(input, "layer_norm");
  const Shape norm_shape = ints_of(normalized);
  TORCH_CHECK(norm_shape.size() <= static_cast<size_t>(x.dim()), "layer_norm: normalized_shape ",
              c10::IntArrayRef(norm_shape), " is longer than the input's ", input.sizes());
  const std::vector<int64_t> dims = trailing_dims(x.dim(), norm_shape.size());
  ordo::Tensor mean = ordo::mean(x, dims, true);
  ordo::Tensor centered = ordo::sub(x, mean);
  ordo::Tensor variance = ordo::mean(ordo::mul(centered, centered), dims, true);
  ordo::Tensor rstd = ordo::rsqrt(ordo::add(variance, ordo::full({}, eps, x.dtype(), x.device())));
  ordo::Tensor out = ordo::mul(centered, rstd);
  if (weight.has_value() && weight->defined()) out = ordo::mul(out, value_of(*weight, "layer_norm"));
  if (bias.has_value() && bias->defined()) out = ordo::add(out, value_of(*bias, "layer_norm"));
  return {make_xla(out), make_xla(mean), make_xla(rstd)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> layer_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input, c10::SymIntArrayRef normalized, const at::Tensor& mean,
    const at::Tensor& rstd, const c10::optional<at::Tensor>& weight, const c10::optional<at::Tensor>&,
    std::array<bool, 3> mask) {
  const ordo::Tensor& g = value_of(grad_out, "layer_norm_backward");
  const ordo::Tensor& x = value_of(input, "layer_norm_backward");
  const ordo::Tensor& r = value_of(rstd, "layer_norm_backward");
  const size_t count = normalized.size();
  const std::vector<int64_t> dims = trailing_dims(x.dim(), count);
  const std::vector<int64_t> batch = leading_dims(x.dim(), count);
  ordo::Tensor xhat = ordo::mul(ordo::sub(x, value_of(mean, "layer_norm_backward")), r);
  const bool has_weight = weight.has_value() && weight->defined();
  at::Tensor dx, dw, db;
  if (mask[0]) {
    ordo::Tensor gw = has_weight ? ordo::mul(g, value_of(*weight, "layer_norm_backward")) : g;
    ordo::Tensor inner = ordo::sub(ordo::sub(gw, ordo::mean(gw, dims, true)),
                                   ordo::mul(xhat, ordo::mean(ordo::mul(gw, xhat), dims, true)));
    dx = make_xla(ordo::mul(r, inner));
  }
  if (mask[1]) dw = make_xla(ordo::sum(ordo::mul(g, xhat), batch));
  if (mask[2]) db = make_xla(ordo::sum(g, batch));
  return {dx, dw, db};
}

at::Tensor gelu(const at::Tensor& self, c10::string_view approximate) {
  return make_xla(ordo::gelu(value_of(self, "gelu"), std::string_view(approximate.data(), approximate.size())));
}

// d/dx of x * Phi(x) = Phi(x) + x * phi(x); of the tanh form, torch's
// formula for its approximation.
at::Tensor gelu_backward(const at::Tensor& grad_output, const at::Tensor& self, c10::string_view approximate) {
  const ordo::Tensor& g = value_of(grad_output, "gelu_backward");
  const ordo::Tensor& x = value_of(self, "gelu_backward");
  auto c = [&x](double v) { return ordo::full({}, v, x.dtype(), x.device()); };
  if (approximate == "tanh") {
    const double k = std::sqrt(2.0 / M_PI), a = 0.044715;
    ordo::Tensor x2 = ordo::mul(x, x);
    ordo::Tensor inner = ordo::mul(c(k), ordo::add(x, ordo::mul(c(a), ordo::mul(x2, x))));
    ordo::Tensor th = ordo::tanh(inner);
    ordo::Tensor left = ordo::mul(c(0.5), ordo::add(c(1), th));
    ordo::Tensor dinner = ordo::mul(c(k), ordo::add(c(1), ordo::mul(c(3 * a), x2)));
    ordo::Tensor right = ordo::mul(ordo::mul(ordo::mul(c(0.5), x), ordo::sub(c(1), ordo::mul(th, th))), dinner);
    return make_xla(ordo::mul(g, ordo::add(left, right)));
  }
  TORCH_CHECK(approximate == "none", "gelu: approximate must be 'none' or 'tanh'");
  ordo::Tensor cdf = ordo::mul(c(0.5), ordo::add(c(1), ordo::erf(ordo::mul(x, c(M_SQRT1_2)))));
  ordo::Tensor pdf = ordo::mul(c(0.5 * M_2_SQRTPI * M_SQRT1_2), ordo::exp(ordo::mul(c(-0.5), ordo::mul(x, x))));
  return make_xla(ordo::mul(g, ordo::add(cdf, ordo::mul(x, pdf))));
}

at::Tensor embedding_dense_backward(const at::Tensor& grad_output, const at::Tensor& indices,
                                    c10::SymInt num_weights, int64_t padding_idx, bool scale_grad_by_freq) {
  TORCH_CHECK(!scale_grad_by_freq, "embedding: scale_grad_by_freq is not lowered on the xla device");
  const ordo::Tensor& g = value_of(grad_output, "embedding_backward");
  const int64_t rows = num_weights.expect_int();
  const int64_t width = g.shape().back();
  ordo::Tensor index = ordo::reshape(operand(indices, DType::kInt64, g.device(), "embedding_backward"), {-1});
  ordo::Tensor updates = ordo::reshape(g, {-1, width});
  if (padding_idx >= 0) {
    ordo::Tensor keep = ordo::ne(index, ordo::full({}, padding_idx, DType::kInt64, g.device()));
    updates = ordo::mul(updates, ordo::reshape(ordo::cast(keep, g.dtype()), {-1, 1}));
  }
  return make_xla(ordo::index_add(ordo::zeros({rows, width}, g.dtype(), g.device()), 0, index, updates));
}

at::Tensor mse_loss(const at::Tensor& self, const at::Tensor& target, int64_t reduction) {
  const ordo::Tensor& x = value_of(self, "mse_loss");
  ordo::Tensor d = ordo::sub(x, operand(target, x.dtype(), x.device(), "mse_loss"));
  ordo::Tensor sq = ordo::mul(d, d);
  if (reduction == kNone) return make_xla(sq);
  return make_xla(reduction == kMean ? ordo::mean(sq) : ordo::sum(sq));
}

at::Tensor mse_loss_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                             int64_t reduction) {
  const ordo::Tensor& x = value_of(self, "mse_loss_backward");
  ordo::Tensor d = ordo::sub(x, operand(target, x.dtype(), x.device(), "mse_loss_backward"));
  double factor = 2.0;
  if (reduction == kMean) factor /= static_cast<double>(std::max<int64_t>(x.numel(), 1));
  ordo::Tensor g = value_of(grad_output, "mse_loss_backward");
  return make_xla(ordo::mul(ordo::mul(d, ordo::full({}, factor, x.dtype(), x.device())), g));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, XLA, m) {
  m.impl("_log_softmax", TORCH_FN(log_softmax));
  m.impl("_softmax", TORCH_FN(softmax));
  m.impl("_log_softmax_backward_data", TORCH_FN(log_softmax_backward));
  m.impl("_softmax_backward_data", TORCH_FN(softmax_backward));
  m.impl("nll_loss_forward", TORCH_FN(nll_loss_forward));
  m.impl("nll_loss_backward", TORCH_FN(nll_loss_backward));
  m.impl("native_layer_norm", TORCH_FN(layer_norm));
  m.impl("native_layer_norm_backward", TORCH_FN(layer_norm_backward));
  m.impl("gelu", TORCH_FN(gelu));
  m.impl("gelu_backward", TORCH_FN(gelu_backward));
  m.impl("embedding_dense_backward", TORCH_FN(embedding_dense_backward));
  m.impl("mse_loss", TORCH_FN(mse_loss));
  m.impl("mse_loss_backward", TORCH_FN(mse_loss_backward));
}

}  // namespace ordo::torch_device
