// Shared test fixtures.
#pragma once

#include <sys/resource.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstddef>
#include <fstream>

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

// Bounds the process's address space to what it uses now and `headroom`
// more, until destroyed: a larger allocation then fails (std::bad_alloc),
// as on a host short of memory. Not under a sanitizer, whose shadow
// memory takes address space.
class ScopedAddressSpaceLimit {
 public:
  explicit ScopedAddressSpaceLimit(size_t headroom) {
    std::ifstream statm("/proc/self/statm");
    size_t pages = 0;
    statm >> pages;
    EXPECT_EQ(getrlimit(RLIMIT_AS, &before_), 0);
    rlimit limited = before_;
    limited.rlim_cur = pages * static_cast<size_t>(sysconf(_SC_PAGESIZE)) + headroom;
    EXPECT_EQ(setrlimit(RLIMIT_AS, &limited), 0);
  }
  ~ScopedAddressSpaceLimit() { EXPECT_EQ(setrlimit(RLIMIT_AS, &before_), 0); }
  ScopedAddressSpaceLimit(const ScopedAddressSpaceLimit&) = delete;
  ScopedAddressSpaceLimit& operator=(const ScopedAddressSpaceLimit&) = delete;

 private:
  rlimit before_{};
};

}  // namespace ordo::testing
