// The deadlines of a waiting collective: a timeout shorter than the
// warning time wins.
#include <gtest/gtest.h>

#include <chrono>

#include "test_util.h"

namespace ordo {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// ---- Deadlines: the timeout always wins. ----

class CollectiveDeadlinesTest : public testing::FourDeviceTest {
 protected:
  void TearDown() override {
    set_collective_timeouts({});
    testing::FourDeviceTest::TearDown();
  }
};

TEST_F(CollectiveDeadlinesTest, ATimeoutShorterThanTheWarningTimeFailsAtTheTimeoutWithoutAWarning) {
  set_collective_timeouts({10.0, 0.5});
  ::testing::internal::CaptureStderr();
  const Clock::time_point start = Clock::now();
  std::string message;
  try {
    all_reduce(ReduceType::kSum, ones({2}), 1.0, {{0, 1}, {2}, {3}}).to_vector<float>();
  } catch (const CollectiveTimeoutError& e) {
    message = e.what();
  }
  const auto waited = Clock::now() - start;
  const std::string warnings = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(contains(message, "device 0 waited 0.5 s in all_reduce")) << message;
  EXPECT_GE(waited, 500ms);
  EXPECT_LT(waited, 5s);  // before, it slept until the warning at 10 s
  EXPECT_FALSE(contains(warnings, "has waited")) << warnings;
}

}  // namespace
}  // namespace ordo
