// conv1d and conv2d (ordo/nn_ops.h): output shapes of every argument form,
// values and the three gradients against a plain loop in float64, and the
// errors when the arguments do not fit (raised before anything is
// recorded); the gradient ops' own rules against their adjoint pairings. tests/python/test_conv.py compares with torch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <type_traits>
#include <vector>

#include "ir/conv_attrs.h"
#include "lazy/conv_ops.h"
#include "ordo/autograd.h"
#include "reference.h"

namespace ordo {
namespace {

using ConvTest = testing::OneDeviceTest;

// A 2-d convolution's geometry for the plain loop (padding on both sides).
struct Geometry {
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1, groups = 1;
};

// y[n, o, i, j] = sum over c, p, q of x[n, g*cg + c, i*sh - ph + p*dh, j*sw - pw + q*dw] * w[o, c, p, q].
std::vector<double> plain_conv2d(const std::vector<double>& x, const Shape& xs, const std::vector<double>& w,
                                 const Shape& ws, const Shape& ys, const Geometry& g) {
  std::vector<double> y(static_cast<size_t>(shape_numel(ys)), 0.0);
  const int64_t cg = ws[1], og = ws[0] / g.groups;
  for (int64_t n = 0; n < ys[0]; ++n) {
    for (int64_t o = 0; o < ys[1]; ++o) {
      for (int64_t i = 0; i < ys[2]; ++i) {
        for (int64_t j = 0; j < ys[3]; ++j) {
          double total = 0;
          for (int64_t c = 0; c < cg; ++c) {
            for (int64_t p = 0; p < ws[2]; ++p) {
              for (int64_t q = 0; q < ws[3]; ++q) {
                const int64_t h = i * g.stride_h - g.pad_h + p * g.dilation_h;
                const int64_t v = j * g.stride_w - g.pad_w + q * g.dilation_w;
                if (h < 0 || h >= xs[2] || v < 0 || v >= xs[3]) continue;
                const int64_t channel = o / og * cg + c;
                total += x[static_cast<size_t>(((n * xs[1] + channel) * xs[2] + h) * xs[3] + v)] *
                         w[static_cast<size_t>(((o * cg + c) * ws[2] + p) * ws[3] + q)];
              }
            }
          }
          y[static_cast<size_t>(((n * ys[1] + o) * ys[2] + i) * ys[3] + j)] = total;
        }
      }
    }
  }
  return y;
}

std::vector<double> values(int64_t count, double scale) {
  std::vector<double> v(static_cast<size_t>(count));
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(static_cast<double>(i) * 0.37 + scale) * scale;
  return v;
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12 * (1 + std::abs(want[i]))) << i;
}

// The loop's dot(y, seed) differentiated by moving one element at a time:
// exact for a function linear in that element.
std::vector<double> plain_gradient(std::vector<double> point, const std::function<double(const std::vector<double>&)>& f) {
  std::vector<double> grads(point.size());
  const double base = f(point);
  for (size_t i = 0; i < point.size(); ++i) {
    point[i] += 1;
    grads[i] = f(point) - base;
    point[i] -= 1;
  }
  return grads;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double total = 0;
  for (size_t i = 0; i < a.size(); ++i) total += a[i] * b[i];
  return total;
}

struct Case {
  Shape x, w, y;
  Geometry geometry;
  ConvOptions options;
};

TEST_F(ConvTest, Conv2dAndItsGradientsMatchAPlainLoop) {
  const std::vector<Case> cases = {
      {{2, 3, 7, 6}, {4, 3, 3, 2}, {2, 4, 5, 5}, {}, {}},
      {{1, 4, 9, 8}, {6, 2, 3, 3}, {1, 6, 5, 4}, {2, 2, 1, 1, 1, 1, 2}, {{2}, {1}, {1}, 2, ""}},
      {{2, 3, 5, 5}, {3, 1, 2, 2}, {2, 3, 2, 2}, {3, 3, 0, 0, 1, 1, 3}, {{3}, {0}, {1}, 3, ""}},  // stride > kernel
      {{1, 2, 6, 7}, {2, 2, 3, 3}, {1, 2, 4, 3}, {1, 2, 1, 0, 2, 1, 1}, {{1, 2}, {1, 0}, {2, 1}, 1, ""}},
      {{3, 5, 4, 4}, {2, 5, 1, 1}, {3, 2, 4, 4}, {}, {}},  // 1x1: the input is the patch matrix
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(shape_to_string(c.x) + " * " + shape_to_string(c.w));
    const std::vector<double> xv = values(shape_numel(c.x), 1.0), wv = values(shape_numel(c.w), 0.5);
    const std::vector<double> seed = values(shape_numel(c.y), 0.25);
    Tensor x = from_vector<double>(xv, c.x), w = from_vector<double>(wv, c.w);
    x.set_requires_grad();
    w.set_requires_grad();
    const Tensor y = conv2d(x, w, Tensor(), c.options);
    ASSERT_EQ(y.shape(), c.y);
    expect_near(y.to_vector<double>(), plain_conv2d(xv, c.x, wv, c.w, c.y, c.geometry));
    const std::vector<Tensor> grads = grad(y, {x, w}, from_vector<double>(seed, c.y));
    expect_near(grads[0].to_vector<double>(), plain_gradient(xv, [&](const std::vector<double>& p) {
                  return dot(plain_conv2d(p, c.x, wv, c.w, c.y, c.geometry), seed);
                }));
    expect_near(grads[1].to_vector<double>(), plain_gradient(wv, [&](const std::vector<double>& p) {
                  return dot(plain_conv2d(xv, c.x, p, c.w, c.y, c.geometry), seed);
                }));
  }
}

// The gradient ops' own rules: ConvInputGrad(g, w) and ConvWeightGrad(x, g)
// are conv's adjoints, so <h, ConvInputGrad(g, w)> = <conv(h, w), g> and
// <h, ConvWeightGrad(x, g)> = <conv(x, h), g>: their gradients must be
// what conv2d and its (loop-checked) gradients give for those pairings.
TEST_F(ConvTest, TheGradientOpsRulesAreTheirAdjoints) {
  const Shape xs = {2, 4, 7, 6}, ws = {6, 2, 3, 2}, ys = {2, 6, 4, 3};
  const ir::ConvAttrs attrs{2, {{2, 1, 1, 1}, {2, 0, 0, 1}}};
  const ConvOptions options{{2}, {1, 0}, {1}, 2, ""};
  Tensor x = from_vector<double>(values(shape_numel(xs), 1.0), xs);
  Tensor w = from_vector<double>(values(shape_numel(ws), 0.5), ws);
  Tensor g = from_vector<double>(values(shape_numel(ys), 0.25), ys);
  const Tensor h_x = from_vector<double>(values(shape_numel(xs), 0.75), xs);
  const Tensor h_w = from_vector<double>(values(shape_numel(ws), 0.3), ws);
  for (Tensor* t : {&x, &w, &g}) t->set_requires_grad();
  const std::vector<Tensor> of_input_grad = grad(lazy::conv_input_grad(g, w, attrs, xs), {g, w}, h_x);
  expect_near(of_input_grad[0].to_vector<double>(), conv2d(h_x, w, Tensor(), options).to_vector<double>());
  expect_near(of_input_grad[1].to_vector<double>(),
              grad(conv2d(h_x, w, Tensor(), options), {w}, g)[0].to_vector<double>());
  const std::vector<Tensor> of_weight_grad = grad(lazy::conv_weight_grad(x, g, attrs, ws), {x, g}, h_w);
  expect_near(of_weight_grad[0].to_vector<double>(),
              grad(conv2d(x, h_w, Tensor(), options), {x}, g)[0].to_vector<double>());
  expect_near(of_weight_grad[1].to_vector<double>(), conv2d(x, h_w, Tensor(), options).to_vector<double>());
}

// float32 takes another route (oneDNN where the build has it, in blocks of
// samples: 5 samples make blocks of 2, 2 and 1) than float64: its values
// and gradients must be float64's within float32's rounding, and four
// devices running it at once (each thread its own primitives) must agree
// bit for bit.
using ConvDevicesTest = testing::FourDeviceTest;

TEST_F(ConvDevicesTest, Float32OnFourDevicesAtOnceMatchesFloat64) {
  const Shape xs = {5, 4, 9, 8}, ws = {6, 2, 3, 3};
  const ConvOptions options{{1}, {1}, {1}, 2, ""};
  const std::vector<double> xv = values(shape_numel(xs), 1.0), wv = values(shape_numel(ws), 0.5);
  const auto run = [&]<typename T>(std::type_identity<T>) {
    Tensor x = from_vector<T>(std::vector<T>(xv.begin(), xv.end()), xs);
    Tensor w = from_vector<T>(std::vector<T>(wv.begin(), wv.end()), ws);
    x.set_requires_grad();
    w.set_requires_grad();
    const Tensor y = conv2d(x, w, Tensor(), options);
    const std::vector<Tensor> grads = grad(y, {x, w}, y);
    std::vector<std::vector<T>> results{y.to_vector<T>(), grads[0].to_vector<T>(), grads[1].to_vector<T>()};
    return results;
  };
  const std::vector<std::vector<double>> want = run(std::type_identity<double>{});
  std::vector<std::vector<std::vector<float>>> got(4);
  spawn([&](int ordinal) { got[static_cast<size_t>(ordinal)] = run(std::type_identity<float>{}); });
  for (size_t result = 0; result < want.size(); ++result) {
    double scale = 0;
    for (double v : want[result]) scale = std::max(scale, std::abs(v));
    ASSERT_EQ(got[0][result].size(), want[result].size());
    for (size_t i = 0; i < want[result].size(); ++i) {
      EXPECT_NEAR(got[0][result][i], want[result][i], 1e-5 * scale) << result << " " << i;
    }
    for (size_t device = 1; device < got.size(); ++device) EXPECT_EQ(got[device][result], got[0][result]) << device;
  }
}

TEST_F(ConvTest, OutputShapesFollowTorchsRules) {
  const Tensor x = zeros({2, 4, 10, 9});
  EXPECT_EQ(conv2d(x, zeros({6, 4, 3, 3})).shape(), (Shape{2, 6, 8, 7}));
  EXPECT_EQ(conv2d(x, zeros({6, 2, 3, 3}), zeros({6}), {{2}, {1}, {1}, 2, ""}).shape(), (Shape{2, 6, 5, 5}));
  EXPECT_EQ(conv2d(x, zeros({4, 1, 4, 2}), Tensor(), {{1}, {0}, {1}, 4, "same"}).shape(), (Shape{2, 4, 10, 9}));
  EXPECT_EQ(conv2d(x, zeros({3, 4, 4, 2}), Tensor(), {{1}, {0}, {3}, 1, "same"}).shape(), (Shape{2, 3, 10, 9}));
  EXPECT_EQ(conv2d(x, zeros({3, 4, 10, 9}), Tensor(), {{1}, {0}, {1}, 1, "valid"}).shape(), (Shape{2, 3, 1, 1}));
  EXPECT_EQ(conv2d(zeros({4, 10, 9}), zeros({6, 4, 3, 3})).shape(), (Shape{6, 8, 7}));  // unbatched
  EXPECT_EQ(conv1d(zeros({2, 3, 11}), zeros({5, 3, 4}), Tensor(), {{3}, {2}, {2}, 1, ""}).shape(), (Shape{2, 5, 3}));
  EXPECT_EQ(conv1d(zeros({3, 11}), zeros({5, 3, 4}), zeros({5}), {{1}, {0}, {1}, 1, "same"}).shape(),
            (Shape{5, 11}));
}

TEST_F(ConvTest, SamePaddingOfAnEvenKernelPadsOneMoreAtTheEnd) {
  // x = 1..5, w = [1, 10]: 'same' pads 0 before and 1 after, as torch.
  const Tensor y = conv1d(from_vector<double>({1, 2, 3, 4, 5}, {1, 1, 5}), from_vector<double>({1, 10}, {1, 1, 2}),
                          from_vector<double>({0.5}, {1}), {{1}, {0}, {1}, 1, "same"});
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{21.5, 32.5, 43.5, 54.5, 5.5}));
}

TEST_F(ConvTest, ArgumentsThatDoNotFitAreRejectedBeforeAnythingIsRecorded) {
  const Tensor x = zeros({2, 4, 6, 6});
  const Tensor w = zeros({6, 4, 3, 3});
  const Tensor pending = exp(x);  // the failing calls must leave its graph alone
  testing::RejectedCalls rejected;
  rejected.invalid("expects 4 input channels, the input [2, 3, 6, 6] has 3",
                   [&] { return conv2d(zeros({2, 3, 6, 6}), w); });
  rejected.invalid("groups 4 must divide the weight's 6 output channels",
                   [&] { return conv2d(pending, zeros({6, 1, 3, 3}), Tensor(), {{1}, {0}, {1}, 4, ""}); });
  rejected.invalid("groups 3 must divide the input's 4 channels",
                   [&] { return conv2d(x, zeros({6, 1, 3, 3}), Tensor(), {{1}, {0}, {1}, 3, ""}); });
  rejected.invalid("groups must be >= 1", [&] { return conv2d(x, w, Tensor(), {{1}, {0}, {1}, 0, ""}); });
  rejected.invalid("larger than the padded input", [&] { return conv2d(x, zeros({6, 4, 7, 3})); });
  rejected.invalid("larger than the padded input",
                   [&] { return conv2d(x, w, Tensor(), {{1}, {0}, {3}, 1, ""}); });  // dilated window 7
  rejected.invalid("expected a 4-d (batched) or 3-d", [&] { return conv2d(zeros({6, 6}), w); });
  rejected.invalid("expected a 4-d weight", [&] { return conv2d(x, zeros({6, 4, 3})); });
  rejected.invalid("expected a 3-d (batched)", [&] { return conv1d(x, zeros({6, 4, 3})); });
  rejected.invalid("the bias must have shape [6]", [&] { return conv2d(x, w, zeros({4})); });
  rejected.invalid("stride must be >= 1", [&] { return conv2d(x, w, Tensor(), {{0}, {0}, {1}, 1, ""}); });
  rejected.invalid("padding must be >= 0", [&] { return conv2d(x, w, Tensor(), {{1}, {-1}, {1}, 1, ""}); });
  rejected.invalid("stride must hold 1 or 2", [&] { return conv2d(x, w, Tensor(), {{1, 1, 1}, {0}, {1}, 1, ""}); });
  rejected.invalid("not supported for strided", [&] { return conv2d(x, w, Tensor(), {{2}, {0}, {1}, 1, "same"}); });
  rejected.invalid("padding must be 'same', 'valid'",
                   [&] { return conv2d(x, w, Tensor(), {{1}, {0}, {1}, 1, "full"}); });
  rejected.dtype("needs float tensors", [&] { return conv2d(zeros({2, 4, 6, 6}, DType::kInt32), w); });
  rejected.dtype("differs from the input's", [&] { return conv2d(x, zeros({6, 4, 3, 3}, DType::kFloat64)); });
}

}  // namespace
}  // namespace ordo
