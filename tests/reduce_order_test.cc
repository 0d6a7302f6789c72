// What the vectorized reductions (kernels/reduce.cc) keep of an in-order
// fold, wherever the lanes, chunks and blocks cut a row: max and min give
// the first NaN (its bits) and the first of +0 and -0, argmax the first
// maximum or NaN; sums add in the documented order; and every result is
// bitwise the same with one kernel thread or two.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "reference.h"

namespace ordo {
namespace {

using testing::HostArray;
using testing::read;
using testing::to_tensor;
using testing::Values;

using ReduceOrderTest = testing::OneDeviceTest;

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

// Rows of these lengths cross lanes, vector pairs, chunks and blocks.
constexpr int64_t kLengths[] = {1, 5, 16, 33, 1000, 4097, 70001};

// The one value of a 0-d or 1-element result.
double value_of(const Tensor& t) { return read(t).values.at(0); }

TEST_F(ReduceOrderTest, MaxAndMinKeepTheFirstNanAndArgmaxFindsIt) {
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    for (int64_t n : kLengths) {
      for (int64_t first : {int64_t{0}, n / 2, n - 1}) {
        Values values(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) values[static_cast<size_t>(i)] = static_cast<double>((i * 37) % 101);
        values[static_cast<size_t>(first)] = -kNan;  // the first NaN has its sign bit set
        if (first + 1 < n) values[static_cast<size_t>(n - 1)] = kNan;
        const Tensor x = to_tensor(HostArray{{n}, values}, dtype);
        const std::string what = std::string(dtype_name(dtype)) + " n " + std::to_string(n) + " NaN at " +
                                 std::to_string(first);
        for (const Tensor& result : {max(x), min(x)}) {
          const double got = value_of(result);
          EXPECT_TRUE(std::isnan(got) && std::signbit(got)) << what << ": got " << got;
        }
        EXPECT_EQ(value_of(argmax(x)), static_cast<double>(first)) << what;
      }
    }
  }
}

TEST_F(ReduceOrderTest, MaxAndMinKeepTheFirstZeroAndArgmaxTheFirstTie) {
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    for (int64_t n : kLengths) {
      if (n < 2) continue;
      for (double first_zero : {-0.0, 0.0}) {
        // Max: all negative but two zeros; min: all positive but two zeros.
        Values below(static_cast<size_t>(n)), above(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) {
          below[static_cast<size_t>(i)] = -1.0 - static_cast<double>(i % 7);
          above[static_cast<size_t>(i)] = 1.0 + static_cast<double>(i % 7);
        }
        const size_t a = static_cast<size_t>(n / 3), b = static_cast<size_t>(n - 1);
        below[a] = above[a] = first_zero;
        below[b] = above[b] = -first_zero;
        const std::string what = std::string(dtype_name(dtype)) + " n " + std::to_string(n);
        const double got_max = value_of(max(to_tensor(HostArray{{n}, below}, dtype)));
        const double got_min = value_of(min(to_tensor(HostArray{{n}, above}, dtype)));
        EXPECT_EQ(std::signbit(got_max), std::signbit(first_zero)) << what << " max";
        EXPECT_EQ(std::signbit(got_min), std::signbit(first_zero)) << what << " min";
        EXPECT_EQ(value_of(argmax(to_tensor(HostArray{{n}, below}, dtype))), static_cast<double>(a)) << what;
      }
      // The maximum 9 at every 11th position from n / 4: the first is the answer.
      Values ties(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) ties[static_cast<size_t>(i)] = (i >= n / 4 && (i - n / 4) % 11 == 0) ? 9 : i % 5;
      EXPECT_EQ(value_of(argmax(to_tensor(HostArray{{n}, ties}, dtype))), static_cast<double>(n / 4)) << n;
    }
  }
}

// Both infinities (and sums that overflow) without a NaN: what a NaN
// probe of the max's lanes also sees, which must not read as a NaN.
TEST_F(ReduceOrderTest, MaxAndMinOfBothInfinitiesAreInfinities) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    for (int64_t n : kLengths) {
      if (n < 2) continue;
      // Sums of these overflow to +inf, then meet -inf: NaN.
      const double big = dtype == DType::kFloat32 ? 3e38 : 1.7e308;
      Values values(static_cast<size_t>(n), big);
      values[static_cast<size_t>(n / 3)] = kInf;
      values[static_cast<size_t>(n / 2)] = -kInf;
      const Tensor x = to_tensor(HostArray{{n}, values}, dtype);
      const std::string what = std::string(dtype_name(dtype)) + " n " + std::to_string(n);
      EXPECT_EQ(value_of(max(x)), kInf) << what;
      EXPECT_EQ(value_of(min(x)), -kInf) << what;
      EXPECT_EQ(value_of(argmax(x)), static_cast<double>(n / 3)) << what;
    }
  }
}

// A whole-row sum in the order reduce.cc documents: chunks of 4096, each
// dealt to 32 lanes of Lane (element i to lane i % 32) that meet in a tree
// (j with j + 16, then + 8, ...), a chunk under 32 in index order in
// double; the chunks' results add in double, rounded once to Out.
template <typename Lane, typename Out>
double documented_sum(const Values& values) {
  const int64_t n = static_cast<int64_t>(values.size());
  double total = 0;
  for (int64_t begin = 0; begin < n; begin += 4096) {
    const int64_t length = std::min<int64_t>(4096, n - begin);
    double chunk = 0;
    if (length < 32) {
      for (int64_t i = 0; i < length; ++i) chunk += static_cast<double>(static_cast<Out>(values[begin + i]));
    } else {
      Lane lanes[32] = {};
      for (int64_t i = 0; i < length; ++i) lanes[i % 32] += static_cast<Lane>(static_cast<Out>(values[begin + i]));
      for (int width = 16; width >= 1; width /= 2) {
        for (int j = 0; j < width; ++j) lanes[j] += lanes[j + width];
      }
      chunk = static_cast<double>(lanes[0]);
    }
    total += chunk;
  }
  return static_cast<double>(static_cast<Out>(total));
}

TEST_F(ReduceOrderTest, FloatSumsAddTheirLanesInTheirOwnTypeAndTheChunksInDouble) {
  for (int64_t n : {int64_t{1}, int64_t{31}, int64_t{32}, int64_t{33}, int64_t{4096}, int64_t{4127}, int64_t{70001}}) {
    // Magnitudes from 1e-3 to 1e5 and both signs: most orders round differently.
    Values values(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const double power = static_cast<double>(i % 9 - 3);
      values[static_cast<size_t>(i)] = std::sin(static_cast<double>(i)) * std::pow(10.0, power);
    }
    const HostArray x{{n}, values};
    EXPECT_EQ(std::bit_cast<uint64_t>(value_of(sum(to_tensor(x, DType::kFloat32)))),
              std::bit_cast<uint64_t>(documented_sum<float, float>(values)))
        << "float32, n " << n;
    EXPECT_EQ(std::bit_cast<uint64_t>(value_of(sum(to_tensor(x, DType::kFloat64)))),
              std::bit_cast<uint64_t>(documented_sum<double, double>(values)))
        << "float64, n " << n;
  }
}

// Every reduction's result bits.
std::vector<Values> reduction_results() {
  std::vector<Values> results;
  const std::pair<Shape, std::vector<int64_t>> cases[] = {
      {{70001}, {0}}, {{300, 301}, {0}}, {{300, 301}, {1}}, {{64, 4097}, {1}}, {{3, 70000}, {1}}};
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    for (const auto& [shape, axes] : cases) {
      HostArray x{shape, Values(static_cast<size_t>(shape_numel(shape)))};
      for (size_t i = 0; i < x.values.size(); ++i) x.values[i] = std::sin(static_cast<double>(i)) * 1e3;
      const Tensor t = to_tensor(x, dtype);
      for (const Tensor& r : {sum(t, axes), mean(t, axes), max(t, axes), min(t, axes), argmax(t, axes)}) {
        results.push_back(read(r).values);
      }
    }
  }
  return results;
}

TEST_F(ReduceOrderTest, BitwiseTheSameWithOneOrTwoKernelThreads) {
  testing::expect_same_bits(testing::with_kernel_threads("1", reduction_results),
                            testing::with_kernel_threads("2", reduction_results));
}

}  // namespace
}  // namespace ordo
