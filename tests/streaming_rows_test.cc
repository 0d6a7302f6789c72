// The rule of +, -, * and / of floats (the first operand's NaN for + and *,
// elementwise.cc), bit for bit, NaN payloads included, for dense operands
// and single elements on either side, with a tail that is not a whole
// vector: in the streaming row functions (kernels/streaming_rows.h), which
// write flat outputs of 8 MiB and more, in the plain rows and in fused tiles.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/streaming_rows.h"
#include "reference.h"

namespace ordo {
namespace {

using StreamingRowsTest = testing::OneDeviceTest;

// The unsigned integer of a float's width.
template <typename T>
using BitsOf = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;

template <typename T>
T nan_with_payload(uint64_t payload, bool negative) {
  using Bits = BitsOf<T>;
  Bits bits;
  T quiet = std::numeric_limits<T>::quiet_NaN();
  std::memcpy(&bits, &quiet, sizeof(T));
  bits |= static_cast<Bits>(payload);
  if (negative) bits |= Bits{1} << (sizeof(T) * 8 - 1);
  T value;
  std::memcpy(&value, &bits, sizeof(T));
  return value;
}

// Normal values with every special one sprinkled in: NaNs of several
// payloads and both signs, infinities, zeros of both signs, denormals and
// values whose products and quotients overflow.
template <typename T>
std::vector<T> values(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 10.0);
  std::uniform_int_distribution<int> pick(0, 15);
  const T specials[] = {nan_with_payload<T>(1, false),
                        nan_with_payload<T>(2, true),
                        nan_with_payload<T>(seed, false),
                        std::numeric_limits<T>::infinity(),
                        -std::numeric_limits<T>::infinity(),
                        T{0},
                        -T{0},
                        std::numeric_limits<T>::denorm_min(),
                        -std::numeric_limits<T>::denorm_min() * 3,
                        std::numeric_limits<T>::max() / 2};
  std::vector<T> out(static_cast<size_t>(n));
  for (T& v : out) {
    const int k = pick(rng);
    v = k < static_cast<int>(std::size(specials)) && pick(rng) < 4 ? specials[k] : static_cast<T>(normal(rng));
  }
  return out;
}

template <typename T>
struct Case {
  std::string name;
  std::function<Tensor(const Tensor&, const Tensor&)> op;
  std::function<T(T, T)> reference;  // the plain rows' rule (elementwise.cc)
};

template <typename T>
std::vector<Case<T>> cases() {
  return {{"add", [](const Tensor& a, const Tensor& b) { return a + b; },
           [](T a, T b) { return a + (std::isnan(a) ? a : b); }},
          {"sub", [](const Tensor& a, const Tensor& b) { return a - b; }, [](T a, T b) { return a - b; }},
          {"mul", [](const Tensor& a, const Tensor& b) { return a * b; },
           [](T a, T b) { return a * (std::isnan(a) ? a : b); }},
          {"div", [](const Tensor& a, const Tensor& b) { return a / b; }, [](T a, T b) { return a / b; }}};
}

template <typename T>
std::string bits_of(T value) {
  BitsOf<T> bits;
  std::memcpy(&bits, &value, sizeof(T));
  std::ostringstream out;
  out << value << " (0x" << std::hex << bits << ")";
  return out.str();
}

template <typename T>
void expect_bitwise(const std::string& what, const std::vector<T>& got, const std::vector<T>& want) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0) {
      FAIL() << what << ": element " << i << " is " << bits_of(got[i]) << ", the plain rows give "
             << bits_of(want[i]);
    }
  }
}

// op(a, b) of n elements against the rule, each operand dense or a single
// element; with `fused`, each result goes through `* 1` (exact, and a NaN
// stays itself), so that the op runs in a fused group's tiles.
template <typename T>
void expect_rows_match(int64_t n, bool fused) {
  const std::vector<T> a = values<T>(n, 1), b = values<T>(n, 2);
  const Tensor ta = from_vector<T>(a, {n}), tb = from_vector<T>(b, {n});
  const auto run = [fused](const Tensor& t) { return (fused ? t * 1.0 : t).template to_vector<T>(); };
  for (const T single : {T{3}, T{-0.0}, nan_with_payload<T>(5, true)}) {
    const Tensor ts = from_vector<T>({single}, {1});
    for (const Case<T>& c : cases<T>()) {
      const std::string what = c.name + " " + std::string(dtype_name(dtype_of<T>())) + " of " + std::to_string(n) +
                               (fused ? ", fused, " : ", ");
      std::vector<T> want(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) want[i] = c.reference(a[i], b[i]);
      expect_bitwise(what + "dense, dense", run(c.op(ta, tb)), want);
      for (int64_t i = 0; i < n; ++i) want[i] = c.reference(a[i], single);
      expect_bitwise(what + "dense, one element", run(c.op(ta, ts)), want);
      for (int64_t i = 0; i < n; ++i) want[i] = c.reference(single, b[i]);
      expect_bitwise(what + "one element, dense", run(c.op(ts, tb)), want);
    }
  }
}

TEST_F(StreamingRowsTest, LargeArithmeticMatchesThePlainRowsBitForBit) {
  // Past kStreamingOutputBytes, and 37 elements more: a tail of no whole vector.
  expect_rows_match<float>(kernels::kStreamingOutputBytes / 4 + 37, false);
  expect_rows_match<double>(kernels::kStreamingOutputBytes / 8 + 37, false);
}

// The plain rows and a fused group's tiles (1024 elements: 1061 ends in a
// short tile), whose clones (core/simd.h) each vectorize the rule, and a
// single element first takes a loop of its own (a number there is moved
// second, where the loop vectorizes; a NaN there is every result).
TEST_F(StreamingRowsTest, SmallAndFusedArithmeticKeepTheRule) {
  for (bool fused : {false, true}) {
    expect_rows_match<float>(1061, fused);
    expect_rows_match<double>(1061, fused);
  }
}

TEST_F(StreamingRowsTest, OnlyFloatArithmeticHasStreamingRows) {
  EXPECT_EQ(kernels::streaming_row_fn(ir::OpKind::kAdd, DType::kInt32), nullptr);
  EXPECT_EQ(kernels::streaming_row_fn(ir::OpKind::kExp, DType::kFloat32), nullptr);
#if defined(__SSE2__)
  EXPECT_NE(kernels::streaming_row_fn(ir::OpKind::kMul, DType::kFloat64), nullptr);
#endif
}

}  // namespace
}  // namespace ordo
