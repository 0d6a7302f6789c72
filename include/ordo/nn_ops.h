// The ops of training beyond the elementwise ones: softmax and its kin,
// variance, clamping, gelu, and random numbers made on the device from a
// seed that is a tensor. All but random_uniform are composed of the ops of
// ordo/tensor.h, so gradients flow through those ops' rules. dim counts
// from the end when negative; a 0-d tensor takes dim 0 or -1, as in torch.
//
//   ordo::Tensor logits = ordo::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
//   ordo::Tensor p = ordo::softmax(logits, -1);                  // rows sum to 1
//   ordo::Tensor seed = ordo::from_vector<int64_t>({42}, {});    // new each step: no recompile
//   ordo::Tensor h = ordo::dropout(ordo::gelu(logits), 0.1, seed);
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ordo/tensor.h"

namespace ordo {

// exp(x) / sum(exp(x)) along dim, stable for large x (x - max(x) first).
// A row of only -inf (or holding +inf) gives nan, as in torch.
Tensor softmax(const Tensor& x, int64_t dim, Caller caller = Caller::current());
// x - logsumexp(x, dim): a row of only -inf gives nan, as in torch.
Tensor log_softmax(const Tensor& x, int64_t dim, Caller caller = Caller::current());
// log(sum(exp(x))) over dims (empty: every dim), stable: the max of the
// reduced elements (0 where it is infinite) is taken out first. Reducing
// only -inf, or nothing, gives -inf; +inf gives +inf.
Tensor logsumexp(const Tensor& x, const std::vector<int64_t>& dims = {}, bool keepdim = false,
                 Caller caller = Caller::current());

// Variance over dims (empty: every dim): sum((x - mean)^2) / (N - correction),
// correction 1 being Bessel's (torch's unbiased=True). N <= correction gives
// inf or nan, as in torch. Floating x only.
Tensor var(const Tensor& x, const std::vector<int64_t>& dims = {}, double correction = 1,
           bool keepdim = false, Caller caller = Caller::current());
Tensor std(const Tensor& x, const std::vector<int64_t>& dims = {}, double correction = 1,
           bool keepdim = false, Caller caller = Caller::current());

// min(max(x, min), max) with either bound absent (an undefined Tensor, or
// nullopt); bounds broadcast against x and promote with it. The gradient
// reaches x where min <= x <= max (bounds included), a tensor bound where x
// is beyond it, as in torch 1.13.
Tensor clamp(const Tensor& x, const Tensor& min, const Tensor& max, Caller caller = Caller::current());
Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max,
             Caller caller = Caller::current());

// x * Phi(x): approximate "none" through erf, "tanh" through torch's tanh
// formula. Anything else is an InvalidArgument.
Tensor gelu(const Tensor& x, std::string_view approximate = "none", Caller caller = Caller::current());

// Uniform in [low, high) of dtype (float32 or float64) on seed's device;
// seed is a 0-d int64 tensor whose value is read when the graph runs, so a
// new seed each step compiles nothing new. Element i depends only on (seed,
// i): rand_uniform(shape, s, low, high, dtype) gives the same bits.
Tensor random_uniform(const Shape& shape, const Tensor& seed, double low = 0.0, double high = 1.0,
                      DType dtype = DType::kFloat32, Caller caller = Caller::current());

// Zeroes each element of x with probability p and scales the rest by
// 1 / (1 - p) (mask: random_uniform(seed) >= p). p = 0 returns x, p = 1
// returns x * 0, as torch; p outside [0, 1] is an InvalidArgument.
Tensor dropout(const Tensor& x, double p, const Tensor& seed, Caller caller = Caller::current());

// ---- Pooling and batch norm, as torch 1.13's. ----
// Inputs are (N, C, H, W), or (C, H, W) for one sample; float32 or float64.
//
//   ordo::Tensor y = ordo::max_pool2d(x, {.kernel = {2, 2}});          // stride = kernel
//   ordo::Tensor z = ordo::avg_pool2d(x, {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}});
//   ordo::Tensor p = ordo::adaptive_avg_pool2d(x, {1, 1});
//   ordo::Tensor n = ordo::batch_norm(x, running_mean, running_var, w, b, /*training=*/true);

// The windows of a 2-d pooling, (height, width) pairs. Each output position
// o covers o * stride - padding and the kernel's next positions (dilation
// apart); ceil_mode rounds the output size up, but the last window must
// start inside the input or its left padding. The padding is at most half
// the kernel and every output size at least 1, or InvalidArgument.
struct Pool2dWindow {
  std::array<int64_t, 2> kernel{1, 1};
  std::array<int64_t, 2> stride{0, 0};  // 0: the kernel's (torch's stride=None)
  std::array<int64_t, 2> padding{0, 0};
  std::array<int64_t, 2> dilation{1, 1};  // max_pool2d only
  bool ceil_mode = false;
};

// The maximum of each window (padding never wins; nan wins, as in torch).
// The gradient reaches the first maximum of each window (the last nan).
Tensor max_pool2d(const Tensor& x, const Pool2dWindow& window, Caller caller = Caller::current());
// Also the int64 index of each maximum in its flattened (H, W) plane.
std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, const Pool2dWindow& window,
                                                  Caller caller = Caller::current());
// The mean of each window: divided by divisor_override if given (> 0), else
// by the window's size counting the padding (count_include_pad) or not.
// The padding of a ceil_mode window past the right padding never counts.
Tensor avg_pool2d(const Tensor& x, const Pool2dWindow& window, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt, Caller caller = Caller::current());
// The mean over windows that split the plane into output_size (each >= 1):
// output row i covers rows floor(i * H / OH) to ceil((i + 1) * H / OH).
Tensor adaptive_avg_pool2d(const Tensor& x, std::array<int64_t, 2> output_size,
                           Caller caller = Caller::current());

// Batch norm over the batch statistics of x (N, C, ...): per channel c,
// y = (x - mean_c) / sqrt(var_c + eps) * weight_c + bias_c with the biased
// variance. weight and bias (C) may be undefined (1 and 0). Also returns
// the mean and the biased variance (for running statistics), which carry
// gradients too. Needs more than one value per channel.
struct BatchNormTraining {
  Tensor output, mean, var;
};
BatchNormTraining batch_norm_training(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps = 1e-5,
                                      Caller caller = Caller::current());

// torch.nn.functional.batch_norm. Training: batch statistics, and when the
// running statistics are defined they are reassigned (no gradient) to
// (1 - momentum) * running + momentum * batch, the variance unbiased
// (N / (N - 1)). Not training: the running statistics normalize.
Tensor batch_norm(const Tensor& x, Tensor& running_mean, Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, double momentum = 0.1, double eps = 1e-5,
                  Caller caller = Caller::current());

}  // namespace ordo

// ---- Convolutions (lazy/conv_ops.cc), as torch 1.13's conv1d and conv2d. ----
//
//   ordo::Tensor x = ordo::ones({8, 3, 32, 32});
//   ordo::Tensor w = ordo::ones({16, 3, 3, 3});
//   ordo::Tensor y = ordo::conv2d(x, w, ordo::Tensor(), {.stride = {2}, .padding = {1}});  // [8, 16, 16, 16]
namespace ordo {

// stride, padding and dilation hold one value for every spatial dim or one
// per dim. padding_mode "same" (stride 1 only; an odd total pads one more
// at the end) or "valid" (no padding) replaces padding; empty: padding's
// numbers, on both sides.
struct ConvOptions {
  std::vector<int64_t> stride = {1};
  std::vector<int64_t> padding = {0};
  std::vector<int64_t> dilation = {1};
  int64_t groups = 1;
  std::string padding_mode;
};

// x [N, C, L] (or unbatched [C, L]) with weight [O, C / groups, K] and an
// optional bias [O] (an undefined Tensor: none), float32 or float64, one
// dtype. Channels that do not match the weight, groups that do not divide
// both channel counts, a kernel window larger than the padded input, or
// wrong ranks are an InvalidArgument, and nothing is recorded.
Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(), const ConvOptions& options = {},
              Caller caller = Caller::current());
// x [N, C, H, W] (or unbatched [C, H, W]) with weight [O, C / groups, KH, KW]; as conv1d.
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(), const ConvOptions& options = {},
              Caller caller = Caller::current());

}  // namespace ordo
