// The ops of ordo/nn_ops.h against plain reference loops: softmax,
// log_softmax, logsumexp (and their infinities), var/std, clamp (ties and
// broadcast bounds), gelu, erf; random_uniform against rand_uniform's
// generator, a new seed reusing the compiled plan; dropout's zeros and scale.
// Python's tests/python/test_training_ops.py compares with torch.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "ordo/ordo.h"
#include "test_util.h"

namespace ordo {
namespace {

using TrainingOpsTest = testing::OneDeviceTest;
constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor seed_tensor(int64_t seed) { return from_vector<int64_t>({seed}, {}); }

void expect_close(const std::vector<double>& got, const std::vector<double>& want, double tolerance = 1e-12) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "element " << i << " is " << got[i];
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << "element " << i;
    } else {
      EXPECT_NEAR(got[i], want[i], tolerance * (1 + std::abs(want[i]))) << "element " << i;
    }
  }
}

// Row r of a [rows, n] array, reduced along its last axis by a plain loop.
std::vector<double> softmax_rows(const std::vector<double>& x, size_t n, bool log_form) {
  std::vector<double> out(x.size());
  for (size_t r = 0; r < x.size() / n; ++r) {
    double m = -kInf;
    for (size_t j = 0; j < n; ++j) m = std::max(m, x[r * n + j]);
    double total = 0;
    for (size_t j = 0; j < n; ++j) total += std::exp(x[r * n + j] - m);
    for (size_t j = 0; j < n; ++j) {
      const double shifted = x[r * n + j] - m;
      out[r * n + j] = log_form ? shifted - std::log(total) : std::exp(shifted) / total;
    }
  }
  return out;
}

const std::vector<double> kRows = {1, 2, 3, -4, 1000, 1001, 999, 0.5, -kInf, -kInf, -kInf, -kInf, -kInf, 0, 2, -kInf};

TEST_F(TrainingOpsTest, SoftmaxAndLogSoftmaxMatchAStableLoopAlongEitherEnd) {
  const Tensor x = from_vector<double>(kRows, {4, 4});
  expect_close(softmax(x, -1).to_vector<double>(), softmax_rows(kRows, 4, false));
  expect_close(log_softmax(x, 1).to_vector<double>(), softmax_rows(kRows, 4, true));
  // Along dim 0: the transpose's rows.
  const Tensor t = transpose(x, 0, 1);
  expect_close(transpose(softmax(t, 0), 0, 1).to_vector<double>(), softmax_rows(kRows, 4, false));
}

TEST_F(TrainingOpsTest, LogsumexpTakesOutAFiniteMaxOnly) {
  const Tensor x = from_vector<double>(kRows, {4, 4});
  const std::vector<double> want = {std::log(std::exp(1.) + std::exp(2.) + std::exp(3.) + std::exp(-4.)),
                                    1001 + std::log(std::exp(-1.) + 1 + std::exp(-2.) + std::exp(0.5 - 1001)),
                                    -kInf, 2 + std::log(std::exp(-2.) + 1)};
  expect_close(logsumexp(x, {1}).to_vector<double>(), want);
  EXPECT_EQ(logsumexp(x, {-1}, true).shape(), (Shape{4, 1}));
  EXPECT_EQ(logsumexp(from_vector<double>({1, kInf}, {2}), {0}).item<double>(), kInf);
  EXPECT_EQ(logsumexp(zeros({0, 3}, DType::kFloat64), {0}).to_vector<double>(), std::vector<double>(3, -kInf));
  // A 0-d tensor reduces along dim 0 as torch's do.
  EXPECT_DOUBLE_EQ(logsumexp(full({}, 2.5, DType::kFloat64), {0}).item<double>(), 2.5);
  EXPECT_EQ(softmax(full({}, 2.5, DType::kFloat64), -1).item<double>(), 1.0);
}

TEST_F(TrainingOpsTest, VarAndStdDivideByNMinusCorrection) {
  const std::vector<double> v = {1, 2, 4, 8, -3, 0};
  const Tensor x = from_vector<double>(v, {2, 3});
  for (double correction : {0.0, 1.0, 2.0}) {
    std::vector<double> want;
    for (int r = 0; r < 2; ++r) {
      double mean = 0, squares = 0;
      for (int j = 0; j < 3; ++j) mean += v[r * 3 + j] / 3;
      for (int j = 0; j < 3; ++j) squares += (v[r * 3 + j] - mean) * (v[r * 3 + j] - mean);
      want.push_back(squares / (3 - correction));
    }
    expect_close(var(x, {1}, correction).to_vector<double>(), want);
    expect_close(ordo::std(x, {-1}, correction).to_vector<double>(), {std::sqrt(want[0]), std::sqrt(want[1])});
  }
  EXPECT_TRUE(std::isnan(var(from_vector<double>({3}, {1})).item<double>()));  // N - 1 = 0: 0 / 0
  EXPECT_THROW(var(from_vector<int64_t>({1, 2}, {2})), DTypeError);
}

TEST_F(TrainingOpsTest, ClampBoundsBroadcastAndEitherMayBeAbsent) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor x = from_vector<double>({-2, 0, 1, 3, 5, nan}, {2, 3});
  const Tensor low = from_vector<double>({0, 1, 2}, {3});
  expect_close(clamp(x, low, Tensor()).to_vector<double>(), {0, 1, 2, 3, 5, nan});
  expect_close(clamp(x, std::nullopt, Scalar(1.0)).to_vector<double>(), {-2, 0, 1, 1, 1, nan});
  expect_close(clamp(x, Scalar(0.0), Scalar(3.0)).to_vector<double>(), {0, 0, 1, 3, 3, nan});
  EXPECT_THROW(clamp(x, Tensor(), Tensor()), InvalidArgument);
}

TEST_F(TrainingOpsTest, GeluMatchesItsFormulas) {
  const std::vector<double> v = {-5, -1, -0.25, 0, 0.5, 3};
  const Tensor x = from_vector<double>(v, {6});
  std::vector<double> exact, tanh_form;
  for (double a : v) {
    exact.push_back(0.5 * a * (1 + std::erf(a / std::sqrt(2.0))));
    tanh_form.push_back(0.5 * a * (1 + std::tanh(std::sqrt(2 / M_PI) * (a + 0.044715 * a * a * a))));
  }
  expect_close(gelu(x).to_vector<double>(), exact);
  expect_close(gelu(x, "tanh").to_vector<double>(), tanh_form);
  expect_close(cast(erf(x), DType::kFloat64).to_vector<double>(), {std::erf(-5.), std::erf(-1.), std::erf(-0.25),
                                                                   0, std::erf(0.5), std::erf(3.)});
  EXPECT_THROW(gelu(x, "sigmoid"), InvalidArgument);
}

TEST_F(TrainingOpsTest, RandomUniformIsRandUniformsGeneratorAndANewSeedReusesThePlan) {
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    const Tensor device_made = random_uniform({3, 5}, seed_tensor(77), -1.0, 2.0, dtype);
    const Tensor host_made = rand_uniform({3, 5}, 77, -1.0, 2.0, dtype);
    EXPECT_EQ(cast(device_made, DType::kFloat64).to_vector<double>(),
              cast(host_made, DType::kFloat64).to_vector<double>());
  }
  reset_compile_cache();
  std::vector<std::vector<float>> draws;
  for (int64_t step = 0; step < 4; ++step) {
    Tensor u = random_uniform({1000}, seed_tensor(step));
    mark_step();
    draws.push_back(u.to_vector<float>());
  }
  EXPECT_EQ(compile_cache_stats().misses, 1);
  EXPECT_EQ(compile_cache_stats().hits, 3);
  EXPECT_NE(draws[0], draws[1]);
  for (float u : draws[0]) {
    EXPECT_GE(u, 0.0f);
    EXPECT_LT(u, 1.0f);
  }
  EXPECT_THROW(random_uniform({2}, from_vector<int32_t>({1}, {})), DTypeError);
  EXPECT_THROW(random_uniform({2}, from_vector<int64_t>({1}, {1})), InvalidArgument);
  EXPECT_THROW(random_uniform({2}, seed_tensor(1), 0, 1, DType::kInt64), DTypeError);
}

TEST_F(TrainingOpsTest, DropoutZeroesOrScalesEveryElement) {
  const int64_t n = 20000;
  const Tensor x = full({n}, 3.0f, DType::kFloat32);
  const std::vector<float> u = random_uniform({n}, seed_tensor(5)).to_vector<float>();
  const std::vector<float> y = dropout(x, 0.25, seed_tensor(5)).to_vector<float>();
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(y[i], u[i] >= 0.25f ? 3.0f * (1.0f / 0.75f) : 0.0f) << i;
    total += y[i];
  }
  EXPECT_NEAR(total / n, 3.0, 0.05);  // 4 sigma of the mean of n draws
  EXPECT_EQ(dropout(x, 0, seed_tensor(5)).impl(), x.impl());
  EXPECT_EQ(dropout(x, 1, seed_tensor(5)).to_vector<float>(), std::vector<float>(n, 0.0f));
  EXPECT_THROW(dropout(x, 1.5, seed_tensor(5)), InvalidArgument);
  EXPECT_THROW(dropout(x, -0.1, seed_tensor(5)), InvalidArgument);
}

}  // namespace
}  // namespace ordo
