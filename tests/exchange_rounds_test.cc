// The exchange's round counts among one process's devices: tags used once do not pile up,
// and a tag's rounds still meet in order when devices are not level; a
// device short of memory for its payload fails the round for everyone.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "comm/device_status.h"
#include "comm/protocol/exchange.h"
#include "ordo/collectives.h"
#include "ordo/error.h"
#include "test_util.h"

namespace ordo::comm {
namespace {

constexpr int kWorld = 3;

// Each device calls exchange(tag_of(round)) for every round, in a thread
// of its own; returns what device 0 received in the last round.
template <typename TagOf>
std::vector<std::string> run_rounds(Exchange& exchange, int rounds, const TagOf& tag_of) {
  std::vector<std::string> last;
  std::vector<std::thread> threads;
  for (int d = 0; d < kWorld; ++d) {
    threads.emplace_back([&, d] {
      for (int r = 0; r < rounds; ++r) {
        const std::string tag = tag_of(r);
        const std::string payload = std::to_string(d) + ":" + std::to_string(r);
        std::vector<std::string> all = exchange.exchange({GlobalOrdinal(d), tag, {}, payload});
        if (d == 0 && r == rounds - 1) last = std::move(all);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return last;
}

TEST(ExchangeRoundsTest, TagsUsedOnceLeaveNoRoundCountsBehind) {
  DeviceStatus status;
  Exchange exchange(Topology::single_process(kWorld), status);
  const std::vector<std::string> last =
      run_rounds(exchange, 500, [](int r) { return "epoch_" + std::to_string(r); });
  EXPECT_EQ(last, (std::vector<std::string>{"0:499", "1:499", "2:499"}));
  EXPECT_EQ(exchange.round_counts_held(), 0u);
}

TEST(ExchangeRoundsTest, ARepeatedTagMeetsRoundByRoundAndEndsLevel) {
  DeviceStatus status;
  Exchange exchange(Topology::single_process(kWorld), status);
  // Devices race ahead into the next round of the same tag: the counts of
  // a round taken while another started stay, and the rounds still pair.
  const std::vector<std::string> last = run_rounds(exchange, 300, [](int) { return std::string("step"); });
  EXPECT_EQ(last, (std::vector<std::string>{"0:299", "1:299", "2:299"}));
  EXPECT_EQ(exchange.round_counts_held(), 0u);
}

TEST(ExchangeRoundsTest, ADeviceShortOfMemoryFailsTheRoundForEveryParticipantAtOnce) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer's shadow memory takes the address space a limit would bound";
#endif
  const CollectiveTimeouts before_timeouts = collective_timeouts();
  set_collective_timeouts({10.0, 20.0});  // the old behaviour: a wait this long
  DeviceStatus status;
  Exchange exchange(Topology::single_process(kWorld), status);
  const std::string words = "rendezvous 'short': device 0 ran out of memory sending its payload of 268435456 bytes";
  std::vector<std::string> errors(kWorld);
  std::vector<double> seconds(kWorld);
  auto take_part = [&](int d, const std::string& payload) {
    const auto start = std::chrono::steady_clock::now();
    try {
      exchange.exchange({GlobalOrdinal(d), "short", {}, payload});
    } catch (const OutOfMemoryError& e) {
      errors[d] = std::string("OutOfMemoryError: ") + e.what();
    } catch (const CollectiveError& e) {
      errors[d] = std::string("CollectiveError: ") + e.what();
    } catch (const std::exception& e) {
      errors[d] = std::string("other: ") + e.what();
    }
    seconds[d] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  std::vector<std::thread> peers;
  for (int d = 1; d < kWorld; ++d) peers.emplace_back(take_part, d, "short");
  const std::string payload(size_t{256} << 20, 'x');
  {
    const ordo::testing::ScopedAddressSpaceLimit no_room_for_a_copy(size_t{96} << 20);
    take_part(0, payload);
  }
  for (std::thread& t : peers) t.join();
  set_collective_timeouts(before_timeouts);
  EXPECT_EQ(errors[0], "OutOfMemoryError: " + words);
  for (int d = 1; d < kWorld; ++d) {
    EXPECT_EQ(errors[d], "CollectiveError: " + words) << "device " << d;
    EXPECT_LT(seconds[d], 5.0) << "device " << d << " waited for the timeout";
  }
}

}  // namespace
}  // namespace ordo::comm
