// Every gradient rule against central finite differences in float64, and
// the C++ autograd API.
#include <cmath>
#include <functional>
#include <random>

#include "test_util.h"

namespace ordo {
namespace {

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

struct Input {
  Shape shape;
  double low = -1.0, high = 1.0;
};

std::vector<double> random_values(const Shape& shape, double low, double high, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(low, high);
  std::vector<double> v(static_cast<size_t>(shape_numel(shape)));
  for (double& x : v) x = dist(gen);
  return v;
}

// f's output, weighted by fixed values so that each element's gradient differs, summed.
double weighted_value(const Fn& f, const std::vector<std::vector<double>>& values, const std::vector<Input>& inputs) {
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < inputs.size(); ++i) tensors.push_back(from_vector<double>(values[i], inputs[i].shape));
  const Tensor out = f(tensors);
  const Tensor w = from_vector<double>(random_values(out.shape(), -1, 1, 99), out.shape());
  return sum(out * w).item<double>();
}

void expect_gradients_match_differences(const std::string& name, const Fn& f, const std::vector<Input>& inputs) {
  SCOPED_TRACE(name);
  std::vector<std::vector<double>> values;
  for (size_t i = 0; i < inputs.size(); ++i) {
    values.push_back(random_values(inputs[i].shape, inputs[i].low, inputs[i].high, 7 + static_cast<uint32_t>(i)));
  }
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < inputs.size(); ++i) {
    tensors.push_back(from_vector<double>(values[i], inputs[i].shape));
    tensors.back().set_requires_grad();
  }
  const Tensor out = f(tensors);
  const Tensor w = from_vector<double>(random_values(out.shape(), -1, 1, 99), out.shape());
  const std::vector<Tensor> grads = grad(sum(out * w), tensors);
  constexpr double kStep = 1e-6;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<double> analytic = grads[i].to_vector<double>();
    for (size_t e = 0; e < values[i].size(); ++e) {
      std::vector<std::vector<double>> up = values, down = values;
      up[i][e] += kStep;
      down[i][e] -= kStep;
      const double numeric = (weighted_value(f, up, inputs) - weighted_value(f, down, inputs)) / (2 * kStep);
      EXPECT_NEAR(analytic[e], numeric, 1e-6 * (1 + std::fabs(numeric))) << "input " << i << " element " << e;
    }
  }
}

using AutogradTest = testing::OneDeviceTest;

TEST_F(AutogradTest, EveryRuleMatchesCentralDifferences) {
  const Input x23{{2, 3}}, x3{{3}}, scalar{{}}, positive{{2, 3}, 0.5, 2.0};
  const std::vector<std::tuple<std::string, Fn, std::vector<Input>>> cases = {
      {"neg", [](auto& t) { return -t[0]; }, {x23}},
      {"abs", [](auto& t) { return abs(t[0]); }, {x23}},
      {"exp", [](auto& t) { return exp(t[0]); }, {x23}},
      {"log", [](auto& t) { return log(t[0]); }, {positive}},
      {"sqrt", [](auto& t) { return sqrt(t[0]); }, {positive}},
      {"rsqrt", [](auto& t) { return rsqrt(t[0]); }, {positive}},
      {"tanh", [](auto& t) { return tanh(t[0]); }, {x23}},
      {"sigmoid", [](auto& t) { return sigmoid(t[0]); }, {x23}},
      {"relu", [](auto& t) { return relu(t[0]); }, {x23}},
      {"erf", [](auto& t) { return erf(t[0]); }, {x23}},
      {"add broadcast", [](auto& t) { return t[0] + t[1]; }, {x23, x3}},
      {"sub 0-d", [](auto& t) { return t[0] - t[1]; }, {x23, scalar}},
      {"mul broadcast", [](auto& t) { return t[0] * t[1]; }, {Input{{2, 1}}, Input{{1, 3}}}},
      {"div", [](auto& t) { return t[0] / t[1]; }, {x23, positive}},
      {"pow", [](auto& t) { return pow(t[0], t[1]); }, {positive, x23}},
      {"maximum", [](auto& t) { return maximum(t[0], t[1]); }, {x23, x3}},
      {"minimum", [](auto& t) { return minimum(t[0], t[1]); }, {x23, x3}},
      {"where", [](auto& t) { return where(gt(t[0], t[1]), t[0] * 2.0, t[1]); }, {x23, x3}},
      {"sum", [](auto& t) { return sum(t[0], {1}); }, {x23}},
      {"sum keepdim", [](auto& t) { return sum(t[0], {0}, true); }, {x23}},
      {"mean", [](auto& t) { return mean(t[0]); }, {x23}},
      {"max", [](auto& t) { return max(t[0], {1}); }, {x23}},
      {"min", [](auto& t) { return min(t[0]); }, {x23}},
      {"matmul", [](auto& t) { return matmul(t[0], t[1]); }, {x23, Input{{3, 2}}}},
      {"matmul 1-D", [](auto& t) { return matmul(t[0], t[1]); }, {x3, Input{{3, 2}}}},
      {"matmul batched", [](auto& t) { return matmul(t[0], t[1]); }, {Input{{2, 2, 3}}, Input{{3, 2}}}},
      {"reshape", [](auto& t) { return reshape(t[0], {3, 2}); }, {x23}},
      {"permute", [](auto& t) { return permute(t[0], {1, 0}); }, {x23}},
      {"slice step", [](auto& t) { return slice(t[0], 0, 1, 6, 2); }, {Input{{7, 2}}}},
      {"concat", [](auto& t) { return concat({t[0], t[1]}, 0); }, {x23, Input{{1, 3}}}},
      {"broadcast_to", [](auto& t) { return broadcast_to(t[0], {4, 3}); }, {x3}},
      {"index_select", [](auto& t) { return index_select(t[0], 1, from_vector<int64_t>({2, 0, 2}, {3})); }, {x23}},
      {"gather", [](auto& t) { return gather(t[0], 0, from_vector<int64_t>({1, 1, 0}, {1, 3})); }, {x23}},
      {"scatter_add",
       [](auto& t) { return scatter_add(t[0], 0, from_vector<int64_t>({1, 1, 0, 1, 0, 0}, {2, 3}), t[1]); },
       {x23, x23}},
      {"softmax", [](auto& t) { return softmax(t[0], 1); }, {x23}},
      {"log_softmax", [](auto& t) { return log_softmax(t[0], 0); }, {x23}},
      {"logsumexp", [](auto& t) { return logsumexp(t[0], {1}); }, {x23}},
      {"var", [](auto& t) { return var(t[0], {1}); }, {x23}},
      {"std", [](auto& t) { return ordo::std(t[0], {0}, 0); }, {x23}},
      {"clamp", [](auto& t) { return clamp(t[0], Scalar(-0.5), Scalar(0.5)); }, {x23}},
      {"gelu", [](auto& t) { return gelu(t[0]); }, {x23}},
      {"gelu tanh", [](auto& t) { return gelu(t[0], "tanh"); }, {x23}},
  };
  for (const auto& [name, f, inputs] : cases) expect_gradients_match_differences(name, f, inputs);
}

// float32 rounds away a finite difference's step: checked exactly instead.
TEST_F(AutogradTest, CastsBetweenFloatTypesCastTheGradientBack) {
  Tensor x = from_vector<double>({0.1, 0.2}, {2});
  x.set_requires_grad();
  Tensor y = cast(x, DType::kFloat32) * 3.0f;
  const Tensor g = grad(sum(y), {x})[0];
  EXPECT_EQ(g.dtype(), DType::kFloat64);
  EXPECT_EQ(g.to_vector<double>(), (std::vector<double>{3, 3}));
  EXPECT_FALSE(cast(x, DType::kInt64).requires_grad());
}

TEST_F(AutogradTest, SizeZeroDimensionsGiveEmptyGradients) {
  Tensor a = zeros({0, 3}, DType::kFloat64);
  a.set_requires_grad();
  Tensor b = ones({3}, DType::kFloat64);
  b.set_requires_grad();
  const std::vector<Tensor> g = grad(sum(a * b), {a, b});
  EXPECT_EQ(g[0].shape(), (Shape{0, 3}));
  EXPECT_EQ(g[1].to_vector<double>(), (std::vector<double>{0, 0, 0}));
}

TEST_F(AutogradTest, BackwardAccumulatesIntoLeavesAcrossMarkStep) {
  Tensor w = from_vector<double>({1, 2}, {2});
  w.set_requires_grad();
  Tensor y = w * w;
  mark_step();
  y.to_vector<double>();
  sum(y).backward();
  sum(w * 3.0).backward();
  EXPECT_EQ(w.grad().to_vector<double>(), (std::vector<double>{5, 7}));
  EXPECT_TRUE(w.is_leaf());
  EXPECT_FALSE(y.is_leaf());
}

TEST_F(AutogradTest, NoGradGuardAndDetachRecordNothing) {
  Tensor w = from_vector<double>({1}, {1});
  w.set_requires_grad();
  {
    NoGradGuard no_grad;
    EXPECT_FALSE((w * 2.0).requires_grad());
    w.assign(w - 0.5);  // an optimizer's update: w stays a leaf
  }
  EXPECT_TRUE(w.is_leaf() && w.requires_grad());
  EXPECT_FALSE(w.detach().requires_grad());
  EXPECT_TRUE((w * 2.0).requires_grad());
  EXPECT_EQ(w.to_vector<double>(), (std::vector<double>{0.5}));
}

TEST_F(AutogradTest, ErrorsComeBeforeAnythingIsTraced) {
  Tensor w = from_vector<double>({1, 2}, {2});
  w.set_requires_grad();
  EXPECT_THROW((w * 2.0).backward(), InvalidArgument);  // two elements, no gradient given
  EXPECT_THROW((w * 2.0).backward(ones({3}, DType::kFloat64)), InvalidArgument);
  EXPECT_THROW(sum(ones({2})).backward(), InvalidArgument);
  EXPECT_THROW(from_vector<int64_t>({1}, {1}).set_requires_grad(), DTypeError);
  Tensor loss = sum(w * w);
  loss.backward();
  EXPECT_THROW(loss.backward(), InvalidArgument);  // freed
  Tensor v = from_vector<double>({1}, {1});
  v.set_requires_grad();
  Tensor u = v * 2.0;
  Tensor z = u * u;
  u.assign(from_vector<double>({5}, {1}));  // rebound after z used it
  EXPECT_THROW(sum(z).backward(), InvalidArgument);
}

TEST_F(AutogradTest, AStepTracedTwiceCompilesOnce) {
  Tensor w = from_vector<double>({1, 2, 3, 4}, {2, 2});
  w.set_requires_grad();
  const Tensor x = from_vector<double>({1, -1, 2, 0.5}, {2, 2});
  auto step = [&] {
    w.set_grad({});
    sum(relu(matmul(x, w))).backward();
    NoGradGuard no_grad;
    w.assign(w - w.grad() * 0.1);
    mark_step();
  };
  step();
  const CompileCacheStats before = compile_cache_stats();
  step();
  step();
  EXPECT_EQ(compile_cache_stats().misses, before.misses);
}

}  // namespace
}  // namespace ordo
