// max_pool2d, avg_pool2d, adaptive_avg_pool2d and batch norm against plain
// loops over every kernel position (float64), their gradients through
// backward(), the argument errors (nothing recorded), and the same bits
// with one or two kernel threads. Python's tests/python/test_pool_batch_norm.py
// compares with torch 1.13.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "ordo/ordo.h"
#include "reference.h"
#include "test_util.h"

namespace ordo {
namespace {

using PoolBatchNormTest = testing::OneDeviceTest;
using testing::Values;

Values wavy(int64_t n, double phase = 0.3) {
  Values v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = std::sin(static_cast<double>(i) * 1.7 + phase) * 3;
  return v;
}

void expect_near(const Values& got, const Values& want, double tolerance = 1e-12) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tolerance * (1 + std::abs(want[i]))) << i;
}

struct Geometry {
  int64_t planes, h, w, oh, ow;
  Pool2dWindow window;

  int64_t stride(int a) const { return window.stride[a] == 0 ? window.kernel[a] : window.stride[a]; }
  // The input position of kernel tap k of output o along axis a (may be outside).
  int64_t tap(int a, int64_t o, int64_t k) const { return o * stride(a) - window.padding[a] + k * window.dilation[a]; }
};

// Per output: its value and the input index of its first maximum.
std::pair<Values, std::vector<int64_t>> reference_max(const Values& x, const Geometry& g) {
  Values out;
  std::vector<int64_t> at;
  for (int64_t p = 0; p < g.planes; ++p) {
    for (int64_t i = 0; i < g.oh; ++i) {
      for (int64_t j = 0; j < g.ow; ++j) {
        double best = -std::numeric_limits<double>::infinity();
        int64_t where = -1;
        for (int64_t ki = 0; ki < g.window.kernel[0]; ++ki) {
          for (int64_t kj = 0; kj < g.window.kernel[1]; ++kj) {
            const int64_t r = g.tap(0, i, ki), c = g.tap(1, j, kj);
            if (r < 0 || r >= g.h || c < 0 || c >= g.w) continue;
            const double v = x[static_cast<size_t>((p * g.h + r) * g.w + c)];
            if (where < 0 || v > best) best = v, where = r * g.w + c;
          }
        }
        out.push_back(best);
        at.push_back(where);
      }
    }
  }
  return {out, at};
}

// Per output: the input indices it averages and its divisor.
struct AvgTaps {
  std::vector<std::vector<int64_t>> inputs;
  Values divisor;
};

AvgTaps reference_avg_taps(const Geometry& g, bool count_include_pad) {
  AvgTaps taps;
  for (int64_t p = 0; p < g.planes; ++p) {
    for (int64_t i = 0; i < g.oh; ++i) {
      for (int64_t j = 0; j < g.ow; ++j) {
        std::vector<int64_t> in;
        int64_t padded = 0;
        for (int64_t ki = 0; ki < g.window.kernel[0]; ++ki) {
          for (int64_t kj = 0; kj < g.window.kernel[1]; ++kj) {
            const int64_t r = g.tap(0, i, ki), c = g.tap(1, j, kj);
            if (r < g.h + g.window.padding[0] && c < g.w + g.window.padding[1]) ++padded;
            if (r >= 0 && r < g.h && c >= 0 && c < g.w) in.push_back((p * g.h + r) * g.w + c);
          }
        }
        taps.divisor.push_back(static_cast<double>(count_include_pad ? padded : static_cast<int64_t>(in.size())));
        taps.inputs.push_back(in);
      }
    }
  }
  return taps;
}

Values averages(const Values& x, const AvgTaps& taps) {
  Values out;
  for (size_t o = 0; o < taps.inputs.size(); ++o) {
    double total = 0;
    for (int64_t i : taps.inputs[o]) total += x[static_cast<size_t>(i)];
    out.push_back(total / taps.divisor[o]);
  }
  return out;
}

// The gradient of the averages: each output's gradient spread over its taps.
Values spread(const Values& grad, const AvgTaps& taps, int64_t input_size) {
  Values out(static_cast<size_t>(input_size), 0.0);
  for (size_t o = 0; o < taps.inputs.size(); ++o) {
    for (int64_t i : taps.inputs[o]) out[static_cast<size_t>(i)] += grad[o] / taps.divisor[o];
  }
  return out;
}

Tensor leaf(const Values& v, const Shape& shape) {
  Tensor t = from_vector<double>(v, shape);
  t.set_requires_grad();
  return t;
}

// Shape classes: batch 1, odd sizes, stride above the kernel, the largest
// padding, dilation, ceil_mode windows that are kept and one that is dropped.
const Geometry kMaxCases[] = {
    {2 * 3, 7, 9, 3, 4, {{2, 2}, {0, 0}, {0, 0}, {1, 1}, false}},
    {1 * 2, 9, 8, 3, 3, {{2, 3}, {4, 3}, {1, 1}, {1, 1}, false}},  // stride above the kernel, padding k / 2
    {1 * 1, 5, 5, 3, 3, {{3, 3}, {2, 2}, {1, 1}, {1, 1}, true}},
    {2 * 2, 6, 6, 4, 4, {{2, 2}, {2, 2}, {1, 1}, {1, 1}, true}},   // ceil adds a window that starts inside
    {2 * 2, 5, 5, 3, 3, {{2, 2}, {2, 2}, {1, 1}, {1, 1}, true}},   // ceil's window in the right padding is dropped
    {1 * 2, 11, 10, 5, 4, {{3, 2}, {2, 3}, {1, 1}, {2, 2}, false}},  // dilation
    {1 * 1, 4, 4, 2, 2, {{2, 2}, {3, 3}, {0, 0}, {1, 1}, true}},
};

TEST_F(PoolBatchNormTest, MaxPoolAndItsGradientMatchALoopOverEveryTap) {
  for (const Geometry& g : kMaxCases) {
    const Shape shape{g.planes, 1, g.h, g.w};
    const Values xv = wavy(g.planes * g.h * g.w);
    const Tensor x = leaf(xv, shape);
    auto [y, indices] = max_pool2d_with_indices(x, g.window);
    ASSERT_EQ(y.shape(), (Shape{g.planes, 1, g.oh, g.ow}));
    const auto [want, at] = reference_max(xv, g);
    expect_near(y.to_vector<double>(), want, 0);
    EXPECT_EQ(indices.to_vector<int64_t>(), at);
    expect_near(max_pool2d(x, g.window).to_vector<double>(), want, 0);  // the values alone: another loop
    const Values gv = wavy(y.numel(), 1.1);
    y.backward(from_vector<double>(gv, y.shape()));
    Values grad(xv.size(), 0.0);
    for (size_t o = 0; o < at.size(); ++o) grad[static_cast<size_t>(static_cast<int64_t>(o) / (g.oh * g.ow) * g.h * g.w + at[o])] += gv[o];
    expect_near(x.grad().to_vector<double>(), grad, 0);
  }
}

TEST_F(PoolBatchNormTest, AvgPoolAndItsGradientMatchALoopOverEveryTap) {
  for (const Geometry& g : kMaxCases) {
    if (g.window.dilation[0] != 1 || g.window.dilation[1] != 1) continue;
    for (bool include_pad : {true, false}) {
      const Shape shape{g.planes, 1, g.h, g.w};
      const Values xv = wavy(g.planes * g.h * g.w);
      const Tensor x = leaf(xv, shape);
      const Tensor y = avg_pool2d(x, g.window, include_pad);
      const AvgTaps taps = reference_avg_taps(g, include_pad);
      expect_near(y.to_vector<double>(), averages(xv, taps));
      const Values gv = wavy(y.numel(), 1.1);
      y.backward(from_vector<double>(gv, y.shape()));
      expect_near(x.grad().to_vector<double>(), spread(gv, taps, x.numel()));
    }
  }
}

TEST_F(PoolBatchNormTest, AvgPoolDividesByTheOverride) {
  const Tensor x = from_vector<double>(wavy(25), {1, 1, 5, 5});
  const Tensor by_count = avg_pool2d(x, {.kernel = {2, 2}, .padding = {1, 1}}, true);
  const Tensor by_seven = avg_pool2d(x, {.kernel = {2, 2}, .padding = {1, 1}}, true, 7);
  expect_near(by_seven.to_vector<double>(), (by_count * (4.0 / 7.0)).to_vector<double>());
}

TEST_F(PoolBatchNormTest, AdaptiveAvgPoolAveragesOverlappingWindows) {
  const Values xv = wavy(2 * 7 * 5);
  const Tensor x = leaf(xv, {2, 1, 7, 5});
  const Tensor y = adaptive_avg_pool2d(x, {3, 2});
  Values want, grad(xv.size(), 0.0);
  const Values gv = wavy(2 * 3 * 2, 0.9);
  for (int64_t p = 0, o = 0; p < 2; ++p) {
    for (int64_t i = 0; i < 3; ++i) {
      for (int64_t j = 0; j < 2; ++j, ++o) {
        const int64_t r0 = i * 7 / 3, r1 = ((i + 1) * 7 + 2) / 3, c0 = j * 5 / 2, c1 = ((j + 1) * 5 + 1) / 2;
        double total = 0;
        const double count = static_cast<double>((r1 - r0) * (c1 - c0));
        for (int64_t r = r0; r < r1; ++r) {
          for (int64_t c = c0; c < c1; ++c) {
            total += xv[static_cast<size_t>((p * 7 + r) * 5 + c)];
            grad[static_cast<size_t>((p * 7 + r) * 5 + c)] += gv[static_cast<size_t>(o)] / count;
          }
        }
        want.push_back(total / count);
      }
    }
  }
  expect_near(y.to_vector<double>(), want);
  y.backward(from_vector<double>(gv, y.shape()));
  expect_near(x.grad().to_vector<double>(), grad);
}

// x (N, C, S): per channel mean, biased var, y, and the gradients for g.
struct BatchNormReference {
  Values y, mean, var, grad_x, grad_w, grad_b;
};

BatchNormReference reference_batch_norm(const Values& x, const Values& w, const Values& b, const Values& g,
                                        int64_t n, int64_t c, int64_t s, double eps) {
  BatchNormReference r{Values(x.size()), {}, {}, Values(x.size()), {}, {}};
  const double m = static_cast<double>(n * s);
  auto index = [&](int64_t i, int64_t ch, int64_t k) { return static_cast<size_t>((i * c + ch) * s + k); };
  for (int64_t ch = 0; ch < c; ++ch) {
    double mean = 0, var = 0, sum_g = 0, sum_g_hat = 0;
    for (int64_t i = 0; i < n; ++i) for (int64_t k = 0; k < s; ++k) mean += x[index(i, ch, k)] / m;
    for (int64_t i = 0; i < n; ++i) for (int64_t k = 0; k < s; ++k) var += std::pow(x[index(i, ch, k)] - mean, 2) / m;
    const double invstd = 1 / std::sqrt(var + eps);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t k = 0; k < s; ++k) {
        const double hat = (x[index(i, ch, k)] - mean) * invstd;
        r.y[index(i, ch, k)] = hat * w[static_cast<size_t>(ch)] + b[static_cast<size_t>(ch)];
        sum_g += g[index(i, ch, k)];
        sum_g_hat += g[index(i, ch, k)] * hat;
      }
    }
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t k = 0; k < s; ++k) {
        const double hat = (x[index(i, ch, k)] - mean) * invstd;
        r.grad_x[index(i, ch, k)] = w[static_cast<size_t>(ch)] * invstd / m * (m * g[index(i, ch, k)] - sum_g - hat * sum_g_hat);
      }
    }
    r.mean.push_back(mean);
    r.var.push_back(var);
    r.grad_w.push_back(sum_g_hat);
    r.grad_b.push_back(sum_g);
  }
  return r;
}

TEST_F(PoolBatchNormTest, BatchNormTrainingAndItsGradientsMatchTheFormula) {
  const Shape shapes[] = {{4, 3, 5, 7}, {1, 2, 3, 3}, {6, 5}, {3, 4, 9}};
  for (const Shape& shape : shapes) {
    const int64_t n = shape[0], c = shape[1], numel = shape_numel(shape);
    const Values xv = wavy(numel), wv = wavy(c, 2.0), bv = wavy(c, 0.1), gv = wavy(numel, 0.7);
    const Tensor x = leaf(xv, shape), w = leaf(wv, {c}), b = leaf(bv, {c});
    const BatchNormTraining out = batch_norm_training(x, w, b, 1e-3);
    const BatchNormReference want = reference_batch_norm(xv, wv, bv, gv, n, c, numel / n / c, 1e-3);
    expect_near(out.output.to_vector<double>(), want.y);
    expect_near(out.mean.to_vector<double>(), want.mean);
    expect_near(out.var.to_vector<double>(), want.var);
    out.output.backward(from_vector<double>(gv, shape));
    expect_near(x.grad().to_vector<double>(), want.grad_x, 1e-10);
    expect_near(w.grad().to_vector<double>(), want.grad_w, 1e-10);
    expect_near(b.grad().to_vector<double>(), want.grad_b, 1e-10);
  }
}

TEST_F(PoolBatchNormTest, BatchNormMovesTheRunningStatisticsThenUsesThemInEvaluation) {
  const Values xv = wavy(4 * 2 * 3);
  const Tensor x = from_vector<double>(xv, {4, 2, 3});
  Tensor running_mean = from_vector<double>({0.5, -1}, {2});
  Tensor running_var = from_vector<double>({2, 1}, {2});
  const BatchNormTraining batch = batch_norm_training(x, {}, {}, 1e-5);
  const Values mean = batch.mean.to_vector<double>(), var = batch.var.to_vector<double>();
  batch_norm(x, running_mean, running_var, {}, {}, /*training=*/true, 0.25);
  const Values rm = running_mean.to_vector<double>(), rv = running_var.to_vector<double>();
  expect_near(rm, {0.75 * 0.5 + 0.25 * mean[0], 0.75 * -1 + 0.25 * mean[1]});
  expect_near(rv, {0.75 * 2 + 0.25 * var[0] * 12 / 11, 0.75 * 1 + 0.25 * var[1] * 12 / 11});
  const Tensor y = batch_norm(x, running_mean, running_var, {}, {}, /*training=*/false);
  Values want;
  for (size_t i = 0; i < xv.size(); ++i) {
    const size_t ch = i / 3 % 2;
    want.push_back((xv[i] - rm[ch]) / std::sqrt(rv[ch] + 1e-5));
  }
  expect_near(y.to_vector<double>(), want);
  expect_near(running_mean.to_vector<double>(), rm, 0);  // evaluation leaves them alone
}

TEST_F(PoolBatchNormTest, BadArgumentsAreClearErrorsAndRecordNothing) {
  const Tensor x = from_vector<float>(std::vector<float>(2 * 3 * 5 * 5, 1.0f), {2, 3, 5, 5});
  const Tensor w4 = from_vector<float>({1, 1, 1, 1}, {4});
  const Tensor pair = from_vector<float>({1, 2}, {1, 2});
  const Tensor flat = from_vector<float>(std::vector<float>(150, 1.0f), {150});
  const Tensor integers = from_vector<int32_t>(std::vector<int32_t>(16, 1), {1, 1, 4, 4});
  Tensor none;
  testing::RejectedCalls rejected;
  rejected.invalid("larger than the padded", [&] { return max_pool2d(x, {.kernel = {6, 6}}); });
  rejected.invalid("at most half the kernel", [&] { return max_pool2d(x, {.kernel = {3, 3}, .padding = {2, 2}}); });
  rejected.invalid("must be positive", [&] { return avg_pool2d(x, {.kernel = {2, 2}, .stride = {-1, 1}}); });
  rejected.invalid("(N, C, H, W) or (C, H, W)", [&] { return max_pool2d(flat, {.kernel = {2, 2}}); });
  rejected.invalid("at least 1", [&] { return adaptive_avg_pool2d(x, {0, 2}); });
  rejected.invalid("divisor_override", [&] { return avg_pool2d(x, {.kernel = {2, 2}}, true, 0); });
  rejected.invalid("one value per channel (3)", [&] { return batch_norm_training(x, w4, {}).output; });
  rejected.invalid("more than 1 value", [&] { return batch_norm_training(pair, {}, {}).output; });
  rejected.invalid("must be given in evaluation", [&] { return batch_norm(x, none, none, {}, {}, false); });
  rejected.dtype("needs a float tensor", [&] { return max_pool2d(integers, {.kernel = {2, 2}}); });
}

// Every op's and gradient's bits, over shapes of many blocks.
std::vector<Values> pool_and_norm_results() {
  std::vector<Values> results;
  const Shape shape{8, 16, 30, 30};
  const Values xv = wavy(shape_numel(shape));
  Tensor x = from_vector<float>(std::vector<float>(xv.begin(), xv.end()), shape);
  x.set_requires_grad();
  Tensor w = full({16}, 1.5, DType::kFloat32);
  w.set_requires_grad();
  const Tensor pooled = max_pool2d(x, {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}});
  const Tensor averaged = avg_pool2d(x, {.kernel = {2, 2}}) + adaptive_avg_pool2d(x, {15, 15});
  const BatchNormTraining norm = batch_norm_training(x, w, {});
  const Tensor loss = sum(pooled * pooled) + sum(averaged * averaged) + sum(norm.output * norm.output * norm.output);
  loss.backward();
  for (const Tensor& t : {pooled, averaged, norm.output, norm.mean, norm.var, x.grad(), w.grad()}) {
    const std::vector<float> v = t.to_vector<float>();
    results.emplace_back(v.begin(), v.end());
  }
  return results;
}

TEST_F(PoolBatchNormTest, BitwiseTheSameWithOneOrTwoKernelThreads) {
  testing::expect_same_bits(testing::with_kernel_threads("1", pool_and_norm_results),
                            testing::with_kernel_threads("2", pool_and_norm_results));
}

}  // namespace
}  // namespace ordo
