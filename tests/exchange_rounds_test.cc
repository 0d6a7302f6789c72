// The in-process exchange's round counts: tags used once do not pile up,
// and a tag's rounds still meet in order when devices are not level.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "comm/device_status.h"
#include "comm/protocol/local_exchange.h"

namespace ordo::comm {
namespace {

constexpr int kWorld = 3;

// Each device calls exchange(tag_of(round)) for every round, in a thread
// of its own; returns what device 0 received in the last round.
template <typename TagOf>
std::vector<std::string> run_rounds(LocalExchange& exchange, int rounds, const TagOf& tag_of) {
  std::vector<std::string> last;
  std::vector<std::thread> threads;
  for (int d = 0; d < kWorld; ++d) {
    threads.emplace_back([&, d] {
      for (int r = 0; r < rounds; ++r) {
        const std::string tag = tag_of(r);
        const std::string payload = std::to_string(d) + ":" + std::to_string(r);
        std::vector<std::string> all = exchange.exchange({d, tag, {}, payload});
        if (d == 0 && r == rounds - 1) last = std::move(all);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return last;
}

TEST(ExchangeRoundsTest, TagsUsedOnceLeaveNoRoundCountsBehind) {
  DeviceStatus status;
  LocalExchange exchange(kWorld, status);
  const std::vector<std::string> last =
      run_rounds(exchange, 500, [](int r) { return "epoch_" + std::to_string(r); });
  EXPECT_EQ(last, (std::vector<std::string>{"0:499", "1:499", "2:499"}));
  EXPECT_EQ(exchange.round_counts_held(), 0u);
}

TEST(ExchangeRoundsTest, ARepeatedTagMeetsRoundByRoundAndEndsLevel) {
  DeviceStatus status;
  LocalExchange exchange(kWorld, status);
  // Devices race ahead into the next round of the same tag: the counts of
  // a round taken while another started stay, and the rounds still pair.
  const std::vector<std::string> last = run_rounds(exchange, 300, [](int) { return std::string("step"); });
  EXPECT_EQ(last, (std::vector<std::string>{"0:299", "1:299", "2:299"}));
  EXPECT_EQ(exchange.round_counts_held(), 0u);
}

}  // namespace
}  // namespace ordo::comm
