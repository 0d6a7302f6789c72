// Builders of softmax, log_softmax, logsumexp, var, std, clamp and gelu,
// composed of the ops of ordo/tensor.h: gradients come from those ops'
// rules, and the compositions are the stable ones torch uses.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "core/source_location.h"
#include "lazy/shape_inference.h"
#include "ordo/nn_ops.h"

namespace ordo {
namespace {

const Tensor& defined(std::string_view what, const Tensor& x) {
  ORDO_ARG_CHECK(x.defined(), what, ": the input tensor is undefined");
  return x;
}

// Integers and bools compute in float32, as exp does.
Tensor floating(std::string_view what, const Tensor& x) {
  return is_floating(defined(what, x).dtype()) ? x : cast(x, DType::kFloat32);
}

// A 0-d tensor reduces along dim 0 (or -1) as if it were of shape [1], as in
// torch: f runs on that view with the dims made non-negative, and a 0-d
// result comes back 0-d.
template <typename F>
Tensor reduce_along(std::string_view what, const Tensor& x, const std::vector<int64_t>& dims, F f) {
  if (x.dim() > 0) return f(x, lazy::normalize_axes(what, dims, x.dim()));
  const Tensor y = f(reshape(x, {1}), lazy::normalize_axes(what, dims, 1));
  return reshape(y, {});
}

// The max over axes (kept as 1s), taken out before exp so that exp cannot
// overflow; 0 when an axis is empty (there is nothing to take out).
// It gets no gradient (its gradient cancels in every composition here, and
// PyTorch does not propagate through it either).
Tensor max_to_take_out(const Tensor& x, const std::vector<int64_t>& axes) {
  for (int64_t axis : axes) {
    if (x.shape()[axis] == 0) return scalar_like(0, x);
  }
  return max(x, axes, true).detach();
}

// Every element not reduced away, for var's N.
int64_t reduced_count(const Tensor& x, const std::vector<int64_t>& axes) {
  int64_t n = 1;
  for (int64_t axis : axes) n *= x.shape()[axis];
  return n;
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim, Caller caller) {
  const ScopedUserLocation here(caller);
  return reduce_along("softmax", floating("softmax", x), {dim}, [](const Tensor& v, const std::vector<int64_t>& axes) {
    const Tensor e = exp(v - max_to_take_out(v, axes));
    return e / sum(e, axes, true);
  });
}

Tensor log_softmax(const Tensor& x, int64_t dim, Caller caller) {
  const ScopedUserLocation here(caller);
  return reduce_along("log_softmax", floating("log_softmax", x), {dim},
                      [](const Tensor& v, const std::vector<int64_t>& axes) {
                        const Tensor shifted = v - max_to_take_out(v, axes);
                        return shifted - log(sum(exp(shifted), axes, true));
                      });
}

Tensor logsumexp(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim, Caller caller) {
  const ScopedUserLocation here(caller);
  return reduce_along("logsumexp", floating("logsumexp", x), dims,
                      [keepdim](const Tensor& v, const std::vector<int64_t>& axes) {
                        // An infinite max is not taken out (inf - inf would be nan): torch's rule.
                        const Tensor found = max_to_take_out(v, axes);
                        const Tensor inf = scalar_like(std::numeric_limits<double>::infinity(), found);
                        const Tensor m = where(eq(abs(found), inf), scalar_like(0, found), found);
                        const Tensor total = log(sum(exp(v - m), axes, true)) + m;
                        return keepdim ? total : reshape(total, lazy::reduced_shape(v.shape(), axes, false));
                      });
}

Tensor var(const Tensor& x, const std::vector<int64_t>& dims, double correction, bool keepdim, Caller caller) {
  const ScopedUserLocation here(caller);
  ORDO_DTYPE_CHECK(is_floating(defined("var", x).dtype()), "var: needs a float tensor, got ",
                   dtype_name(x.dtype()));
  return reduce_along("var", x, dims, [&](const Tensor& v, const std::vector<int64_t>& axes) {
    const Tensor centered = v - mean(v, axes, true);
    const double divisor = std::max(static_cast<double>(reduced_count(v, axes)) - correction, 0.0);
    return sum(centered * centered, axes, keepdim) / divisor;
  });
}

Tensor std(const Tensor& x, const std::vector<int64_t>& dims, double correction, bool keepdim, Caller caller) {
  const ScopedUserLocation here(caller);
  return sqrt(var(x, dims, correction, keepdim));
}

// Two wheres rather than maximum/minimum, so that x's gradient (through the
// where's untaken branch) reaches x at a bound too, as torch's does.
// Forward this is min(max(x, min), max), nan in x staying nan.
Tensor clamp(const Tensor& x, const Tensor& min, const Tensor& max, Caller caller) {
  const ScopedUserLocation here(caller);
  defined("clamp", x);
  ORDO_ARG_CHECK(min.defined() || max.defined(), "clamp: at least one of min and max must be given");
  Tensor out = x;
  if (min.defined()) out = where(lt(out, min), min, out);
  if (max.defined()) out = where(gt(out, max), max, out);
  return out;
}

Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max, Caller caller) {
  const ScopedUserLocation here(caller);
  defined("clamp", x);
  return clamp(x, min ? scalar_like(*min, x) : Tensor(), max ? scalar_like(*max, x) : Tensor());
}

Tensor gelu(const Tensor& x, std::string_view approximate, Caller caller) {
  const ScopedUserLocation here(caller);
  const Tensor v = floating("gelu", x);
  if (approximate == "none") return v * 0.5 * (1.0 + erf(v * (std::numbers::sqrt2 / 2)));
  ORDO_ARG_CHECK(approximate == "tanh", "gelu: approximate must be 'none' or 'tanh', got '", approximate, "'");
  // torch's constants: sqrt(2 / pi) and 0.044715.
  const double beta = std::numbers::sqrt2 * (2 / std::sqrt(std::numbers::pi)) * 0.5;
  const Tensor inner = (v + v * v * v * 0.044715) * beta;
  return 0.5 * v * (1.0 + tanh(inner));
}

}  // namespace ordo
