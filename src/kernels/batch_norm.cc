// BatchNormTraining and its backward. Each works channel by channel: the
// statistics of a channel are float64 sums over its values (N rows of S,
// element s of a row to lane s % 8, the lanes met in a fixed tree), then the
// channel is normalized while it is still in cache. Blocks of whole channels
// (fixed by the shape) go to the free cores, so the bits are the same
// whatever the thread count; the backward recomputes the statistics with
// the same code, so they match the forward's bit for bit.
#include <algorithm>
#include <cmath>

#include "kernels/item_blocks.h"
#include "kernels/kernels_internal.h"

namespace ordo::kernels {
namespace {

// x viewed as (N, C, S).
struct ChannelLayout {
  int64_t batch, channels, spatial;

  int64_t values() const { return batch * spatial; }
  int64_t offset(int64_t n, int64_t c) const { return (n * channels + c) * spatial; }
};

ChannelLayout layout_of(const Shape& shape) {
  int64_t spatial = 1;
  for (size_t d = 2; d < shape.size(); ++d) spatial *= shape[d];
  return {shape[0], shape[1], spatial};
}

constexpr int kLanes = 8;

double fold_lanes(const double (&lanes)[kLanes]) {
  return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
}

// sum over the channel's values of term(n, s), in float64 lanes.
template <typename Term>
double channel_sum(const ChannelLayout& l, Term&& term) {
  double lanes[kLanes] = {};
  for (int64_t n = 0; n < l.batch; ++n) {
    int64_t s = 0;
    for (; s + kLanes <= l.spatial; s += kLanes) {
      for (int j = 0; j < kLanes; ++j) lanes[j] += term(n, s + j);
    }
    for (int j = 0; s < l.spatial; ++s, ++j) lanes[j] += term(n, s);
  }
  return fold_lanes(lanes);
}

struct Moments {
  double mean, var;  // var biased
};

template <typename T>
Moments channel_moments(const ChannelLayout& l, const T* x, int64_t c) {
  const double count = static_cast<double>(l.values());
  const double mean =
      channel_sum(l, [&](int64_t n, int64_t s) { return static_cast<double>(x[l.offset(n, c) + s]); }) / count;
  const double squares = channel_sum(l, [&](int64_t n, int64_t s) {
    const double d = static_cast<double>(x[l.offset(n, c) + s]) - mean;
    return d * d;
  });
  return {mean, squares / count};
}

// y = x * alpha + beta over the channel.
template <typename T>
void channel_affine(const ChannelLayout& l, const T* x, T* y, int64_t c, T alpha, T beta) {
  for (int64_t n = 0; n < l.batch; ++n) {
    const T* row = x + l.offset(n, c);
    T* out = y + l.offset(n, c);
    for (int64_t s = 0; s < l.spatial; ++s) out[s] = row[s] * alpha + beta;
  }
}

template <typename Body>
void for_each_channel(const ChannelLayout& l, Body&& body) {
  for_each_item(l.channels, l.values(), body);
}

double inverse_std(double var, double eps) { return 1.0 / std::sqrt(var + eps); }

// The backward of one channel. With g the output's gradient, xhat the
// normalized input and a = invstd * w:
//   grad_x = (g - mean(g) - xhat * mean(g * xhat)) * a
//            + grad_mean / M + 2 * grad_var * (x - mean) / M
template <typename T>
struct ChannelBackward {
  const ChannelLayout& l;
  const T *g, *x, *w, *grad_mean, *grad_var;
  T *grad_x, *grad_w, *grad_b;
  double eps;

  void operator()(int64_t c) const {
    const Moments m = channel_moments(l, x, c);
    const double invstd = inverse_std(m.var, eps);
    const double sum_g = channel_sum(l, [&](int64_t n, int64_t s) { return static_cast<double>(g[l.offset(n, c) + s]); });
    const double sum_g_centered = channel_sum(l, [&](int64_t n, int64_t s) {
      const int64_t i = l.offset(n, c) + s;
      return static_cast<double>(g[i]) * (static_cast<double>(x[i]) - m.mean);
    });
    grad_w[c] = static_cast<T>(sum_g_centered * invstd);
    grad_b[c] = static_cast<T>(sum_g);
    const double count = static_cast<double>(l.values());
    const double a = invstd * static_cast<double>(w[c]);
    const double projection = sum_g_centered / count * invstd * invstd;
    const auto scale_g = static_cast<T>(a);
    const auto scale_centered = static_cast<T>(projection * a - 2.0 * static_cast<double>(grad_var[c]) / count);
    const auto shift = static_cast<T>(sum_g / count * a - static_cast<double>(grad_mean[c]) / count);
    const auto mean = static_cast<T>(m.mean);
    for (int64_t n = 0; n < l.batch; ++n) {
      const int64_t base = l.offset(n, c);
      for (int64_t s = 0; s < l.spatial; ++s) {
        grad_x[base + s] = g[base + s] * scale_g - (x[base + s] - mean) * scale_centered - shift;
      }
    }
  }
};

}  // namespace

template <>
void run<ir::OpKind::kBatchNormTraining>(const KernelArgs& args) {
  const device::Buffer& x = *args.inputs[0];
  const ChannelLayout l = layout_of(x.shape);
  const double eps = ir::decode<ir::OpKind::kBatchNormTraining>(args.attrs).eps;
  const device::Buffer& y = make_output(args, 0);
  const device::Buffer& mean = make_output(args, 1);
  const device::Buffer& var = make_output(args, 2);
  visit_dtype(FloatingTypes{}, x.dtype, [&]<typename T>(TypeTag<T>) {
    const T* w = args.inputs[1]->data<T>();
    const T* b = args.inputs[2]->data<T>();
    for_each_channel(l, [&](int64_t c) {
      const Moments m = channel_moments(l, x.data<T>(), c);
      const double alpha = inverse_std(m.var, eps) * static_cast<double>(w[c]);
      const double beta = static_cast<double>(b[c]) - m.mean * alpha;
      channel_affine(l, x.data<T>(), y.mutable_data<T>(), c, static_cast<T>(alpha), static_cast<T>(beta));
      mean.mutable_data<T>()[c] = static_cast<T>(m.mean);
      var.mutable_data<T>()[c] = static_cast<T>(m.var);
    });
  });
}

template <>
void run<ir::OpKind::kBatchNormTrainingBackward>(const KernelArgs& args) {
  const device::Buffer& x = *args.inputs[1];
  const ChannelLayout l = layout_of(x.shape);
  const device::Buffer& grad_x = make_output(args, 0);
  const device::Buffer& grad_w = make_output(args, 1);
  const device::Buffer& grad_b = make_output(args, 2);
  const double eps = ir::decode<ir::OpKind::kBatchNormTrainingBackward>(args.attrs).eps;
  visit_dtype(FloatingTypes{}, x.dtype, [&]<typename T>(TypeTag<T>) {
    const ChannelBackward<T> channel{l,
                                     args.inputs[0]->data<T>(),
                                     x.data<T>(),
                                     args.inputs[2]->data<T>(),
                                     args.inputs[3]->data<T>(),
                                     args.inputs[4]->data<T>(),
                                     grad_x.mutable_data<T>(),
                                     grad_w.mutable_data<T>(),
                                     grad_b.mutable_data<T>(),
                                     eps};
    for_each_channel(l, channel);
  });
}

}  // namespace ordo::kernels
