// NaN bits are part of "bitwise the same": when both operands of + or * are
// NaN, which one's bits the result carries must not depend on how a kernel
// covers the output (one flat row, rows of a broadcasting walk, fused tiles,
// a vectorized loop or its scalar tail).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "ordo/ordo.h"
#include "test_util.h"

namespace ordo {
namespace {

using NanBitsTest = testing::OneDeviceTest;

template <typename T>
using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;

template <typename T>
T negative_nan() {
  return -std::numeric_limits<T>::quiet_NaN();
}

template <typename T>
bool sign_of(T x) {
  return std::signbit(x);
}

template <typename T>
std::vector<Bits<T>> bits_of(const Tensor& t) {
  std::vector<Bits<T>> bits;
  for (T x : t.to_vector<T>()) bits.push_back(std::bit_cast<Bits<T>>(x));
  return bits;
}

// x (+NaN, dense) op s (-NaN, one element) then * column (ones, [rows, 1]):
// with fusion the column cuts the group into rows of `length`, so op runs
// once per row; without it op runs over one flat row of rows * length.
template <typename T>
std::vector<Bits<T>> nan_pair_bits(Tensor (*op)(const Tensor&, const Tensor&, Caller), int64_t rows, int64_t length,
                                   bool fuse) {
  set_schedule(0, {ScheduleMode::kDefault, 0, fuse});
  const DType dtype = dtype_of<T>();
  Tensor x = from_vector(std::vector<T>(rows * length, std::numeric_limits<T>::quiet_NaN()), {rows, length});
  Tensor s = from_vector(std::vector<T>{negative_nan<T>()}, {});
  Tensor column = full({rows, 1}, 1, dtype);
  Tensor y = mul(op(x, s, Caller::current()), column);
  mark_step();
  return bits_of<T>(y);
}

template <typename T>
void expect_fusion_keeps_nan_bits() {
  for (auto op : {&add, &mul}) {
    for (int64_t length : {int64_t{128}, int64_t{129}, int64_t{131}, int64_t{1025}}) {
      SCOPED_TRACE(length);
      const std::vector<Bits<T>> fused = nan_pair_bits<T>(op, 4, length, true);
      const std::vector<Bits<T>> unfused = nan_pair_bits<T>(op, 4, length, false);
      ASSERT_EQ(fused.size(), unfused.size());
      size_t differ = 0;
      for (size_t i = 0; i < fused.size(); ++i) differ += fused[i] != unfused[i];
      EXPECT_EQ(differ, 0u) << "of " << fused.size() << " NaNs";
    }
  }
}

TEST_F(NanBitsTest, FusionKeepsTheBitsOfANanPairFloat32) { expect_fusion_keeps_nan_bits<float>(); }
TEST_F(NanBitsTest, FusionKeepsTheBitsOfANanPairFloat64) { expect_fusion_keeps_nan_bits<double>(); }

// The rule itself, over every length around the vector width and every way
// an operand can be laid out: the first operand's NaN wins, quieted.
template <typename T>
void expect_first_nan_wins() {
  const T positive = std::numeric_limits<T>::quiet_NaN();
  for (auto op : {&add, &sub, &mul, &div}) {
    for (int64_t n = 1; n <= 20; ++n) {
      SCOPED_TRACE(n);
      for (bool first_negative : {false, true}) {
        const T a = first_negative ? negative_nan<T>() : positive;
        const T b = first_negative ? positive : negative_nan<T>();
        const Tensor dense_a = from_vector(std::vector<T>(n, a), {n});
        const Tensor dense_b = from_vector(std::vector<T>(n, b), {n});
        const Tensor one_a = from_vector(std::vector<T>{a}, {});
        const Tensor one_b = from_vector(std::vector<T>{b}, {});
        for (const Tensor& result : {op(dense_a, dense_b, Caller::current()), op(dense_a, one_b, Caller::current()),
                                     op(one_a, dense_b, Caller::current())}) {
          for (T x : result.to_vector<T>()) {
            ASSERT_TRUE(std::isnan(x));
            ASSERT_EQ(sign_of(x), first_negative);
          }
        }
      }
    }
  }
}

TEST_F(NanBitsTest, TheFirstOperandsNanWinsFloat32) { expect_first_nan_wins<float>(); }
TEST_F(NanBitsTest, TheFirstOperandsNanWinsFloat64) { expect_first_nan_wins<double>(); }

}  // namespace
}  // namespace ordo
