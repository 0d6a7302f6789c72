// Numbers that become tensor values (issue #11): a value that does not fit
// its dtype is an OutOfRange error when traced (NaN into an integer an
// InvalidArgument), as numpy 2 refuses int32_array + 2**32; integer powers
// with a negative exponent fail the graph alike fused or not; and a device
// argument below -1 is refused instead of meaning the current device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "reference.h"

namespace ordo {
namespace {

constexpr DType kInt32 = DType::kInt32, kInt64 = DType::kInt64, kFloat32 = DType::kFloat32;
constexpr int64_t kTwo31 = int64_t{1} << 31;

using ConversionTest = testing::OneDeviceTest;

// call throws E (and, for InvalidArgument, not OutOfRange), naming
// message_part, and records nothing.
template <typename E>
void expect_refused(std::string_view message_part, const std::function<Tensor()>& call) {
  const std::string before = dump_pending_graph();
  try {
    call();
    ADD_FAILURE() << "no error; expected one mentioning \"" << message_part << "\"";
  } catch (const E& e) {
    if constexpr (std::is_same_v<E, InvalidArgument>) {
      EXPECT_EQ(dynamic_cast<const OutOfRange*>(&e), nullptr) << "unexpected OutOfRange: " << e.what();
    }
    EXPECT_NE(std::string_view(e.what()).find(message_part), std::string_view::npos) << e.what();
  }
  EXPECT_EQ(dump_pending_graph(), before) << "the failed call recorded something";
}

TEST(ScalarFitsTest, IntegersFitTheirRangeAndFloatsTheirTruncation) {
  EXPECT_TRUE(Scalar(kTwo31 - 1).fits(kInt32));
  EXPECT_TRUE(Scalar(-kTwo31).fits(kInt32));
  EXPECT_FALSE(Scalar(kTwo31).fits(kInt32));
  EXPECT_FALSE(Scalar(-kTwo31 - 1).fits(kInt32));
  EXPECT_TRUE(Scalar(std::numeric_limits<int64_t>::max()).fits(kInt64));
  EXPECT_TRUE(Scalar(2147483647.9).fits(kInt32));   // truncates to 2^31 - 1
  EXPECT_TRUE(Scalar(-2147483648.9).fits(kInt32));  // truncates to -2^31
  EXPECT_FALSE(Scalar(2147483648.0).fits(kInt32));
  EXPECT_FALSE(Scalar(9223372036854775808.0).fits(kInt64));
  EXPECT_FALSE(Scalar(std::nan("")).fits(kInt64));
  EXPECT_FALSE(Scalar(-INFINITY).fits(kInt32));
  for (DType any : {DType::kBool, kFloat32, DType::kFloat64}) {
    EXPECT_TRUE(Scalar(std::numeric_limits<int64_t>::min()).fits(any));
    EXPECT_TRUE(Scalar(std::nan("")).fits(any));
  }
}

TEST_F(ConversionTest, FullRefusesValuesItsDTypeCannotHold) {
  expect_refused<OutOfRange>("full: integer 2147483648 out of bounds for int32",
                             [] { return full({2}, kTwo31, kInt32); });
  expect_refused<OutOfRange>("full: float 1e+10 out of bounds for int32", [] { return full({2}, 1e10, kInt32); });
  expect_refused<OutOfRange>("full: cannot convert float inf to int64", [] { return full({2}, INFINITY, kInt64); });
  expect_refused<InvalidArgument>("full: cannot convert float NaN to int32",
                                  [] { return full({2}, std::nan(""), kInt32); });
  EXPECT_EQ(full({2}, -kTwo31, kInt32).to_vector<int32_t>(), (std::vector<int32_t>{INT32_MIN, INT32_MIN}));
  EXPECT_EQ(full({1}, -2.9, kInt32).item<int32_t>(), -2);
  EXPECT_EQ(full({1}, std::nan(""), DType::kBool).item<bool>(), true);
}

TEST_F(ConversionTest, ScalarOperandsMustFitTheTensorsDType) {
  const Tensor x = from_vector<int32_t>({0, 1}, {2});
  expect_refused<OutOfRange>("scalar operand: integer 4294967296 out of bounds for int32",
                             [&] { return x + (int64_t{1} << 32); });
  expect_refused<OutOfRange>("out of bounds for int32", [&] { return kTwo31 * x; });
  EXPECT_EQ(scalar_dtype(Scalar(kTwo31), kInt32), kInt32);
  EXPECT_EQ(scalar_dtype(Scalar(kTwo31), DType::kBool), kInt64);
  EXPECT_EQ((x + (kTwo31 - 1)).to_vector<int32_t>(), (std::vector<int32_t>{INT32_MAX, INT32_MIN}));  // wraps
  EXPECT_EQ((zeros({1}) + (int64_t{1} << 40)).item<float>(), 1099511627776.0f);  // a float tensor takes any int
}

TEST_F(ConversionTest, IntegerRangesMustFitTheirDType) {
  expect_refused<OutOfRange>("arange: integer 2147483648 out of bounds for int32",
                             [] { return arange(kTwo31 - 2, kTwo31 + 1, 1, kInt32); });
  expect_refused<OutOfRange>("arange: integer -2147483649 out of bounds for int32",
                             [] { return arange(-kTwo31 - 1, 0, 1, kInt32); });
  expect_refused<OutOfRange>("last value of the range is out of bounds for int64",
                             [] { return arange(0, 1e19, int64_t{1} << 62, kInt64); });
  expect_refused<InvalidArgument>("has 1e+30 elements, more than int64 can hold",
                                  [] { return arange(0, 1e30, 1, kFloat32); });
  EXPECT_EQ(arange(0, kTwo31, int64_t{1} << 30, kInt32).to_vector<int32_t>(), (std::vector<int32_t>{0, 1 << 30}));
  EXPECT_EQ(arange(kTwo31 - 2, kTwo31, 1, kInt32).to_vector<int32_t>(),
            (std::vector<int32_t>{INT32_MAX - 1, INT32_MAX}));
}

class NegativePowerTest : public testing::OneDeviceTest, public ::testing::WithParamInterface<bool> {};

// Integer pow with a negative exponent has no integer result: numpy raises,
// torch gives 0 (and 1 for base 1). ordo fails the graph, fused or not.
TEST_P(NegativePowerTest, FailsTheGraphFusedOrNot) {
  set_schedule(0, {ScheduleMode::kDefault, 0, /*fuse_elementwise=*/GetParam()});
  const Tensor base = from_vector<int32_t>({2, 1, 3}, {3});
  const Tensor exponent = from_vector<int32_t>({1, -1, 2}, {3});
  const Tensor result = (pow(base, exponent) + 1) * 2;  // one fused group when fusing
  try {
    result.to_vector<int32_t>();
    ADD_FAILURE() << "no error";
  } catch (const ExecutionError& e) {
    EXPECT_NE(std::string_view(e.what()).find("integers to negative integer powers are not allowed (1 ** -1)"),
              std::string_view::npos)
        << e.what();
    // Which step failed: the fused group, or pow on its own.
    const std::string_view step = GetParam() ? "3 fused elementwise ops" : "pow (node";
    EXPECT_TRUE(std::string_view(e.what()).starts_with(step)) << e.what();
  }
  EXPECT_EQ(pow(base, abs(exponent)).to_vector<int32_t>(), (std::vector<int32_t>{2, 1, 9}));  // the device goes on
}

INSTANTIATE_TEST_SUITE_P(Fusion, NegativePowerTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Fused" : "Unfused"; });

TEST_F(ConversionTest, DevicesBelowMinusOneAreRefused) {
  const float one = 1.0f;
  expect_refused<InvalidArgument>("device -2 does not exist: this runtime has 1 devices, 0 to 0 (-1 is",
                                  [] { return full({1}, 1.0, kFloat32, -2); });
  expect_refused<InvalidArgument>("device -5 does not exist", [&] { return from_host(&one, kFloat32, {1}, -5); });
  expect_refused<InvalidArgument>("device -3 does not exist", [] {
    mark_step(-3);
    return Tensor();
  });
  EXPECT_EQ(full({1}, 1.0, kFloat32, -1).device(), 0);
}

}  // namespace
}  // namespace ordo
