// Internal checks name the file, the line, the condition and both values.
#include <gtest/gtest.h>

#include <string>

#include "core/check.h"

namespace ordo {
namespace {

std::string message_of(void (*fails)()) {
  try {
    fails();
  } catch (const InternalError& e) {
    return e.what();
  }
  return "(no InternalError)";
}

TEST(CheckTest, AComparisonNamesFileLineConditionAndBothValues) {
  const std::string message = message_of([] {
    const size_t inputs = 3;
    ORDO_CHECK_EQ(inputs, 2u, " for add");
  });
  EXPECT_NE(message.find("check_test.cc:"), std::string::npos) << message;
  EXPECT_NE(message.find("check failed: inputs == 2u (3 vs 2) for add"), std::string::npos) << message;
}

TEST(CheckTest, AConditionNamesItselfAndTheExtraParts) {
  const std::string message = message_of([] {
    const int index = 70;
    ORDO_CHECK(index < 64, ": op ", index);
  });
  EXPECT_NE(message.find("check failed: index < 64: op 70"), std::string::npos) << message;
}

TEST(CheckTest, GreaterThanAndUnreachableNameWhereTheyFailed) {
  const std::string greater = message_of([] {
    const int devices = 1;
    ORDO_CHECK_GT(devices, 1, " devices");
  });
  EXPECT_NE(greater.find("check failed: devices > 1 (1 vs 1) devices"), std::string::npos) << greater;
  const std::string unreachable = message_of([] { ORDO_UNREACHABLE(": op ", 7, " is not a collective"); });
  EXPECT_NE(unreachable.find("check_test.cc:"), std::string::npos) << unreachable;
  EXPECT_NE(unreachable.find(": unreachable: op 7 is not a collective"), std::string::npos) << unreachable;
}

TEST(CheckTest, PassingChecksEvaluateEachOperandOnce) {
  int evaluations = 0;
  auto counted = [&evaluations](int v) {
    ++evaluations;
    return v;
  };
  ORDO_CHECK_LT(counted(1), counted(2));
  ORDO_CHECK_GE(counted(2), 2);
  ORDO_CHECK_NE(counted(1), 2);
  ORDO_CHECK_LE(1, 1);
  EXPECT_EQ(evaluations, 4);
  EXPECT_NE(message_of([] { ORDO_CHECK_LE(2, 1); }).find("(2 vs 1)"), std::string::npos);
}

}  // namespace
}  // namespace ordo
