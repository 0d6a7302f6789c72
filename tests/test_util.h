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

}  // namespace ordo::testing
