// Shared test fixtures.
#pragma once

#include <gtest/gtest.h>

#include "ordo/ordo.h"

namespace ordo::testing {

// Starts a fresh runtime with kDevices devices and a fresh compile cache for
// each test, so tests never see each other's graphs.
template <int kDevices>
class RuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    shutdown();
    init(kDevices);
    reset_compile_cache();
    set_current_device(0);
  }
  void TearDown() override { shutdown(); }
};

using OneDeviceTest = RuntimeTest<1>;
using FourDeviceTest = RuntimeTest<4>;

// Collective timeouts far longer than a test may take: a peer must fail for
// what it hears (an interrupt, a gone device), not because it timed out,
// and a wait that is not cut short shows as a failure, not a stalled suite.
inline constexpr CollectiveTimeouts kLongTimeouts{60.0, 120.0};

class FourDeviceLongTimeoutsTest : public FourDeviceTest {
 protected:
  void SetUp() override {
    FourDeviceTest::SetUp();
    set_collective_timeouts(kLongTimeouts);
  }
  void TearDown() override {
    set_collective_timeouts({});
    FourDeviceTest::TearDown();
  }
};

}  // namespace ordo::testing
