// bfloat16 and float16 conversions (core/half_float.h): the row loops the
// CPU picks give the scalar reference's bits on every 16-bit pattern and a
// dense sample of float32 patterns (every exponent, the rounding bits'
// ties and neighbours, NaN and inf), at every offset and tail length; and
// the reference's known values. tests/python/test_half_float.py checks the
// same conversions against torch 1.13.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "core/half_float.h"

namespace ordo {
namespace {

std::vector<uint16_t> every_pattern() {
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  return all;
}

// Each high half with the low halves that decide rounding to bfloat16
// (0, just below, at and above the tie, all ones), and to float16 every
// float whose dropped 13 bits are one of the like; plus random patterns.
std::vector<float> float_sample() {
  std::vector<float> sample;
  for (uint32_t high = 0; high < 65536; ++high) {
    for (uint32_t low : {0x0000u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu, 0x0fffu, 0x1000u, 0x1001u, 0x3000u}) {
      sample.push_back(std::bit_cast<float>(high << 16 | low));
    }
  }
  std::mt19937 random(37);
  for (int i = 0; i < (1 << 20); ++i) sample.push_back(std::bit_cast<float>(static_cast<uint32_t>(random())));
  return sample;
}

uint32_t bits(float x) { return std::bit_cast<uint32_t>(x); }

TEST(HalfFloatTest, ReferenceValues) {
  EXPECT_EQ(float_to_bfloat16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bfloat16(1.0f / 3), 0x3eab);
  EXPECT_EQ(float_to_bfloat16(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie to even
  EXPECT_EQ(float_to_bfloat16(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // tie to even, up
  EXPECT_EQ(float_to_bfloat16(std::numeric_limits<float>::max()), 0x7f80);  // rounds to inf
  EXPECT_EQ(float_to_bfloat16(std::numeric_limits<float>::quiet_NaN()), 0xffff);
  EXPECT_EQ(float_to_bfloat16(-std::numeric_limits<float>::infinity()), 0xff80);
  EXPECT_EQ(float_to_float16(1.0f), 0x3c00);
  EXPECT_EQ(float_to_float16(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_float16(65519.99f), 0x7bff);
  EXPECT_EQ(float_to_float16(65520.0f), 0x7c00);  // the tie above the largest rounds to inf
  EXPECT_EQ(float_to_float16(0x1p-24f), 0x0001);
  EXPECT_EQ(float_to_float16(0x1p-25f), 0x0000);   // tie to even: 0
  EXPECT_EQ(float_to_float16(0x1.8p-24f), 0x0002);  // tie to even: 2
  EXPECT_EQ(float_to_float16(-std::numeric_limits<float>::quiet_NaN()), 0xfe00);
  EXPECT_EQ(float_to_float16(std::bit_cast<float>(0x7fa00001u)), 0x7e00);
  EXPECT_EQ(bits(float16_to_float(0x7c01)), 0x7fc02000u);  // a signaling NaN comes back quiet
  EXPECT_EQ(float16_to_float(0x0001), 0x1p-24f);
  EXPECT_EQ(bits(float16_to_float(0x8000)), 0x80000000u);
  EXPECT_EQ(bits(bfloat16_to_float(0x7f81)), 0x7f810000u);
}

TEST(HalfFloatTest, WideningIsExactAndRoundTrips) {
  for (uint32_t i = 0; i < 65536; ++i) {
    const auto h = static_cast<uint16_t>(i);
    const float b = bfloat16_to_float(h);
    EXPECT_EQ(bits(b), i << 16);
    if (!std::isnan(b)) {
      EXPECT_EQ(float_to_bfloat16(b), h);
    }
    const float f = float16_to_float(h);
    if (!std::isnan(f)) {
      ASSERT_EQ(float_to_float16(f), h) << std::hex << i;
    }
  }
}

TEST(HalfFloatTest, RowsMatchTheScalarReferenceAtEveryOffsetAndTail) {
  const std::vector<uint16_t> all = every_pattern();
  const std::vector<float> sample = float_sample();
  for (DType half : {DType::kBFloat16, DType::kFloat16}) {
    const auto widen = half == DType::kBFloat16 ? &bfloat16_to_float : &float16_to_float;
    const auto narrow = half == DType::kBFloat16 ? &float_to_bfloat16 : &float_to_float16;
    std::vector<float> wide(all.size());
    widen_rows(half, wide.data(), all.data(), static_cast<int64_t>(all.size()));
    for (size_t i = 0; i < all.size(); ++i) ASSERT_EQ(bits(wide[i]), bits(widen(all[i]))) << i;
    std::vector<uint16_t> narrowed(sample.size());
    narrow_rows(half, narrowed.data(), sample.data(), static_cast<int64_t>(sample.size()));
    for (size_t i = 0; i < sample.size(); ++i) {
      ASSERT_EQ(narrowed[i], narrow(sample[i])) << dtype_name(half) << " of " << std::hex << bits(sample[i]);
    }
    // Short rows from every offset: the vector loops' heads and tails.
    for (int64_t offset = 0; offset < 9; ++offset) {
      for (int64_t n = 0; n < 40; ++n) {
        std::vector<uint16_t> out(static_cast<size_t>(n) + 1, 0x5555);
        narrow_rows(half, out.data(), sample.data() + offset, n);
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(out[i], narrow(sample[offset + i]));
        ASSERT_EQ(out[n], 0x5555) << "wrote past the row";
        std::vector<float> back(static_cast<size_t>(n) + 1, 7.0f);
        widen_rows(half, back.data(), all.data() + 0x7bf0 + offset, n);
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(bits(back[i]), bits(widen(all[0x7bf0 + offset + i])));
        ASSERT_EQ(back[n], 7.0f) << "wrote past the row";
      }
    }
  }
}

TEST(HalfFloatTest, PromotionFollowsTorch) {
  EXPECT_EQ(promote_types(DType::kBFloat16, DType::kFloat16), DType::kFloat32);
  EXPECT_EQ(promote_types(DType::kBFloat16, DType::kFloat32), DType::kFloat32);
  EXPECT_EQ(promote_types(DType::kFloat16, DType::kInt64), DType::kFloat16);
  EXPECT_EQ(promote_types(DType::kBool, DType::kBFloat16), DType::kBFloat16);
  EXPECT_EQ(promote_types(DType::kFloat64, DType::kFloat16), DType::kFloat64);
  EXPECT_EQ(dtype_size(DType::kBFloat16), 2u);
  EXPECT_EQ(dtype_name(DType::kFloat16), "float16");
  EXPECT_TRUE(is_floating(DType::kBFloat16));
}

}  // namespace
}  // namespace ordo
