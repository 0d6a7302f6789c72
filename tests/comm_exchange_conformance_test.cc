// The conformance suite of the host-side exchange (Communicator::exchange,
// a rendezvous): every backend, world sizes 1..8, payloads of {0, 1, 7,
// 1000, 1M + 3} bytes and of different lengths, with and without
// participant subsets, rounds repeated, beside a waiting collective; then
// mismatch, timeout, failure, absence, interrupt and bad input. It drives
// a Communicator directly, from a thread per device as the devices'
// driving threads would. Under MPI each process runs and checks its own
// devices (tests/mpi/mpi_tests.cmake).
#include <gtest/gtest.h>

#include <chrono>
#include <numeric>
#include <optional>
#include <regex>

#include "comm_conformance.h"
#include "core/interrupt.h"
#include "device/buffer.h"

namespace ordo::conformance {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kSizes[] = {0, 1, 7, 1000, 1'000'003};

// Bytes that differ by device, round and position, every value of a byte.
std::string payload(int device, int round, size_t size) {
  std::string bytes(size, '\0');
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>((i * 131 + device * 17 + round * 7) & 0xFF);
  return bytes;
}

// One device's exchange.
struct Part {
  std::string tag;
  std::vector<int> participants;  // empty: every device
  std::string payload;
};

struct ExchangeOutcome {
  std::vector<std::string> payloads;
  std::string error;  // "" when it succeeded
  ErrorCode code = ErrorCode::kInternal;
  std::vector<std::string> warnings;
};

std::vector<int> every_device(int world) {
  std::vector<int> all(static_cast<size_t>(world));
  std::iota(all.begin(), all.end(), 0);
  return all;
}

class ExchangeConformance : public BackendCase {
 protected:
  void SetUp() override {
    BackendCase::SetUp();
    // A case that would wait for ever fails in seconds instead.
    set_collective_timeouts({10.0, 20.0});
  }

  ExchangeOutcome exchange_on(int device, const Part& part) {
    ExchangeOutcome outcome;
    const std::vector<GlobalOrdinal> participants(part.participants.begin(), part.participants.end());
    try {
      outcome.payloads = comm().exchange({GlobalOrdinal(device), part.tag, participants, part.payload,
                                          [&outcome](const std::string& line) { outcome.warnings.push_back(line); }});
    } catch (const Error& e) {
      outcome.error = e.what();
      outcome.code = e.code();
    }
    return outcome;
  }

  // part_of(d) on a thread per device of this process that has a part, at
  // once; the outcomes are indexed by global ordinal.
  std::vector<ExchangeOutcome> exchange_everywhere(const std::function<std::optional<Part>(int)>& part_of) {
    std::vector<ExchangeOutcome> outcomes(static_cast<size_t>(world_));
    std::vector<std::thread> threads;
    for (const int d : devices()) {
      std::optional<Part> part = part_of(d);
      if (part) threads.emplace_back([this, d, part = std::move(*part), &outcomes] { outcomes[d] = exchange_on(d, part); });
    }
    for (std::thread& t : threads) t.join();
    return outcomes;
  }

  // Every device gives payload(d, round, size) under tag; each must get
  // every payload in ordinal order.
  void expect_every_payload(const std::string& tag, int round, const std::function<size_t(int)>& size_of) {
    const std::vector<ExchangeOutcome> outcomes = exchange_everywhere([&](int d) {
      return Part{tag, {}, payload(d, round, size_of(d))};
    });
    std::vector<std::string> want;
    for (int d = 0; d < world_; ++d) want.push_back(payload(d, round, size_of(d)));
    for (const int d : devices()) {
      ASSERT_EQ(outcomes[d].error, "") << tag << " on device " << d;
      EXPECT_TRUE(outcomes[d].payloads == want) << tag << " round " << round << " on device " << d;
    }
  }
};

TEST_P(ExchangeConformance, EveryPayloadSizeComesBackInOrdinalOrder) {
  for (size_t size : kSizes) expect_every_payload(str_cat("size ", size), 0, [size](int) { return size; });
}

TEST_P(ExchangeConformance, PayloadsOfDifferentLengthsAndEmptyOnesMeet) {
  expect_every_payload("lengths", 0, [](int d) { return static_cast<size_t>(d) * 3; });  // device 0's is empty
  expect_every_payload("large and small", 0, [](int d) { return d % 2 ? size_t{1'000'003} : static_cast<size_t>(d); });
}

TEST_P(ExchangeConformance, RoundsOfOneTagDoNotMixAndTagsCountApart) {
  for (int round = 0; round < 5; ++round) {
    expect_every_payload("again", round, [](int d) { return static_cast<size_t>(7 + d); });
    expect_every_payload(str_cat("other ", round % 2), round, [](int) { return size_t{1}; });
  }
}

TEST_P(ExchangeConformance, SubsetsMeetApartInAnyOrderOfTheirMembers) {
  // Even and odd devices in two subsets at once, then every device, then
  // the subset of the first and last device while the others stay away.
  for (int round = 0; round < 3; ++round) {
    const std::vector<ExchangeOutcome> outcomes = exchange_everywhere([&](int d) {
      std::vector<int> subset;
      for (int q = d % 2; q < world_; q += 2) subset.push_back(q);
      return Part{"halves", subset, payload(d, round, 1000 + d)};
    });
    for (const int d : devices()) {
      std::vector<std::string> want;
      for (int q = d % 2; q < world_; q += 2) want.push_back(payload(q, round, 1000 + q));
      ASSERT_EQ(outcomes[d].error, "") << "device " << d;
      EXPECT_TRUE(outcomes[d].payloads == want) << "round " << round << " on device " << d;
    }
    expect_every_payload("everyone", round, [](int) { return size_t{7}; });
  }
  const std::vector<int> ends = world_ == 1 ? std::vector<int>{0} : std::vector<int>{0, world_ - 1};
  const std::vector<ExchangeOutcome> outcomes = exchange_everywhere([&](int d) -> std::optional<Part> {
    if (d != 0 && d != world_ - 1) return std::nullopt;
    return Part{"ends", ends, payload(d, 0, 0)};
  });
  for (int d : ends) {
    if (!drives(d)) continue;
    ASSERT_EQ(outcomes[d].error, "") << "device " << d;
    EXPECT_EQ(outcomes[d].payloads.size(), ends.size());
  }
}

TEST_P(ExchangeConformance, AnExchangeRunsBesideAWaitingCollective) {
  // Every device but the last waits in an all_reduce for it; the last one
  // joins only once every device met in the exchange. An exchange that
  // took the devices' collective slots would wait for the all_reduce.
  std::vector<DevicePart> parts(static_cast<size_t>(world_));
  for (DevicePart& part : parts) {
    part.inputs.push_back(device::allocate_buffer(DType::kFloat32, {4}));
    part.outputs.push_back(device::allocate_buffer(DType::kFloat32, {4}));
    std::fill_n(part.inputs[0]->mutable_data<float>(), 4, 1.0f);
  }
  const ir::CollectiveAttrs attrs;
  const int last = world_ - 1;
  conformance::Outcome early;
  std::thread collectives([&] {
    early = run_collective(session_, ir::OpKind::kAllReduce, std::vector<ir::CollectiveAttrs>(world_, attrs), parts,
                           [last](int d) { return d == last; });
  });
  expect_every_payload("beside", 0, [](int) { return size_t{7}; });
  const conformance::Outcome late = run_collective(
      session_, ir::OpKind::kAllReduce, std::vector<ir::CollectiveAttrs>(world_, attrs), parts,
      [last](int d) { return d != last; });
  collectives.join();
  for (const int d : devices()) {
    EXPECT_EQ((d == last ? late : early).errors[d], "") << "device " << d;
    EXPECT_EQ(parts[d].outputs[0]->data<float>()[0], static_cast<float>(world_)) << "device " << d;
  }
}

TEST_P(ExchangeConformance, BadInputIsRefusedAndLeavesNothingBehind) {
  const std::vector<int> all = every_device(world_);
  // Asked for a device of this process, or for one that does not exist.
  auto expect_refused = [&](int device, std::vector<int> participants, const std::string& message) {
    if (device >= 0 && device < world_ && !drives(device)) return;
    const ExchangeOutcome outcome = exchange_on(device, {"bad", std::move(participants), "x"});
    EXPECT_EQ(outcome.code, ErrorCode::kInvalidArgument) << outcome.error;
    EXPECT_NE(outcome.error.find(message), std::string::npos) << outcome.error;
  };
  expect_refused(world_, {}, str_cat("rendezvous 'bad': device ", world_, " does not exist (world size ", world_));
  expect_refused(-1, {}, "device -1 does not exist");
  expect_refused(0, {world_}, str_cat("device ", world_, " among the replicas [", world_, "] does not exist"));
  expect_refused(0, {0, 0}, "device 0 is twice among the replicas [0, 0]");
  if (world_ > 1) {
    expect_refused(0, {1, 0}, "the replicas [1, 0] are not sorted");
    expect_refused(0, {1}, "rendezvous 'bad': device 0 is not among the replicas [1]");
  }
  // Nothing was left half done: device 1 meets alone, every device meets.
  if (world_ > 1 && drives(1)) {
    const ExchangeOutcome alone = exchange_on(1, {"bad", {1}, "y"});
    EXPECT_EQ(alone.error, "");
    EXPECT_TRUE(alone.payloads == std::vector<std::string>{"y"});
  }
  expect_every_payload("bad", 0, [](int) { return size_t{1}; });
}

// Failure cases need a peer.
class ExchangeConformanceFailures : public ExchangeConformance {
 protected:
  // Every device but `missing` exchanges under tag (with a thread of its
  // own); returns their outcomes once they all ended.
  std::vector<ExchangeOutcome> exchange_without(int missing, const std::string& tag) {
    return exchange_everywhere([&](int d) -> std::optional<Part> {
      if (d == missing) return std::nullopt;
      return Part{tag, {}, payload(d, 0, 7)};
    });
  }

  void expect_failed(const std::vector<ExchangeOutcome>& outcomes, int except, ErrorCode code, const std::string& message) {
    for (const int d : devices()) {
      if (d == except) continue;
      EXPECT_EQ(outcomes[d].code, code) << "device " << d << ": " << outcomes[d].error;
      EXPECT_NE(outcomes[d].error.find(message), std::string::npos) << "device " << d << ": " << outcomes[d].error;
    }
  }
};

TEST_P(ExchangeConformanceFailures, ATagMismatchFailsEveryDeviceNamingBothAndLeavesThemAligned) {
  const int odd = world_ - 1;
  const std::vector<ExchangeOutcome> outcomes = exchange_everywhere([&](int d) {
    return Part{d == odd ? "b" : "a", {}, payload(d, 0, 7)};
  });
  expect_failed(outcomes, -1, ErrorCode::kCollectiveMismatch, "rendezvous mismatch: device ");
  for (const int d : devices()) {
    EXPECT_NE(outcomes[d].error.find("rendezvous 'a' (round 0 of devices "), std::string::npos) << outcomes[d].error;
    EXPECT_NE(outcomes[d].error.find("rendezvous 'b' (round 0 of devices "), std::string::npos) << outcomes[d].error;
  }
  expect_every_payload("after a mismatch", 0, [](int) { return size_t{7}; });
}

TEST_P(ExchangeConformanceFailures, AParticipantSetMismatchFailsEveryDeviceNamingBoth) {
  if (world_ < 3) GTEST_SKIP() << "with two devices, [0, 1] is every device";
  // The last device meets device 0 alone while the others meet everyone.
  const int odd = world_ - 1;
  const std::vector<int> all = every_device(world_);
  const std::vector<ExchangeOutcome> outcomes = exchange_everywhere([&](int d) {
    return Part{"sets", d == odd ? std::vector<int>{0, odd} : all, payload(d, 0, 7)};
  });
  expect_failed(outcomes, -1, ErrorCode::kCollectiveMismatch, "rendezvous mismatch: device ");
  const std::string theirs = str_cat("rendezvous 'sets' (round 0 of devices [0, ", odd, "])");
  const std::string ours = str_cat("rendezvous 'sets' (round 0 of devices ", comm::describe_group(all), ")");
  for (const int d : devices()) {
    EXPECT_NE(outcomes[d].error.find(theirs), std::string::npos) << outcomes[d].error;
    EXPECT_NE(outcomes[d].error.find(ours), std::string::npos) << outcomes[d].error;
  }
}

TEST_P(ExchangeConformanceFailures, ACycleOfWaitsAcrossSeveralRoundsIsAMismatch) {
  if (world_ < 3) GTEST_SKIP() << "a cycle through three devices";
  // Across processes a process sees its own devices' waits and, of another
  // process's device, only that it waits for one of them: a cycle with two
  // devices of other processes in a row ends in the timeout (a clear error
  // still; issue 13's note). With two devices a process, devices 0 and 1
  // share one, which sees the whole cycle; with one, no process does.
  if (across_processes() && session_.devices_per_process < 2) {
    GTEST_SKIP() << "a cycle with two devices of other processes in a row is not seen";
  }
  // 0 waits for 1 in [0, 1], 1 for 2 in [1, 2], 2 for 0 in [0, 2].
  const std::vector<std::vector<int>> sets = {{0, 1}, {1, 2}, {0, 2}};
  const std::vector<ExchangeOutcome> outcomes = exchange_everywhere([&](int d) -> std::optional<Part> {
    if (d > 2) return std::nullopt;
    return Part{"cycle", sets[d], payload(d, 0, 1)};
  });
  // Whoever finds the cycle fails every round of it, naming each wait.
  for (const int d : devices()) {
    if (d > 2) continue;
    EXPECT_EQ(outcomes[d].code, ErrorCode::kCollectiveMismatch) << outcomes[d].error;
    for (int waiter = 0; waiter < 3; ++waiter) {
      const std::string wait = str_cat("waits in rendezvous 'cycle' (round 0 of devices ",
                                       comm::describe_group(sets[waiter]), ") for device ", (waiter + 1) % 3);
      EXPECT_NE(outcomes[d].error.find(wait), std::string::npos) << outcomes[d].error;
    }
    EXPECT_NE(outcomes[d].error.find("they can never meet"), std::string::npos) << outcomes[d].error;
  }
}

TEST_P(ExchangeConformanceFailures, AMissingDeviceWarnsThenTimesOutNamingTheTagAndIt) {
  // The timeout well after the warning: a waiter that wakes past its
  // timeout (a loaded machine, ThreadSanitizer) rightly gives no warning.
  set_collective_timeouts({0.05, 1.0});
  const int missing = world_ - 1;
  const Clock::time_point start = Clock::now();
  const std::vector<ExchangeOutcome> outcomes = exchange_without(missing, "late");
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
  for (const int d : devices()) {
    if (d == missing) continue;
    EXPECT_EQ(outcomes[d].code, ErrorCode::kCollectiveTimeout) << outcomes[d].error;
    EXPECT_EQ(outcomes[d].error,
              str_cat("device ", d, " waited 1 s in rendezvous 'late'; devices that never arrived: [", missing, "]"));
    // One warning, naming the missing device last. Others may still have
    // been on their way 0.05 s in (eight threads on a loaded machine).
    EXPECT_EQ(outcomes[d].warnings.size(), 1u) << "device " << d;
    if (outcomes[d].warnings.size() != 1) continue;
    EXPECT_TRUE(std::regex_match(outcomes[d].warnings[0],
                                 std::regex(str_cat("ordo: device ", d, " has waited 0\\.05 s in rendezvous 'late'; ",
                                                    "missing devices: \\[([0-9]+, )*", missing, "\\]"))))
        << outcomes[d].warnings[0];
  }
  // The round can no longer complete: the late device, once its peers
  // gave up, fails at once.
  step("the peers gave up");
  if (drives(missing)) {
    const ExchangeOutcome late = exchange_on(missing, {"late", {}, "x"});
    EXPECT_EQ(late.code, ErrorCode::kCollectiveTimeout) << late.error;
    EXPECT_NE(late.error.find("rendezvous 'late' cannot complete: a participant gave up on it: device "),
              std::string::npos)
        << late.error;
  }
  // A timeout at or below the warning time fails without a warning.
  set_collective_timeouts({0.2, 0.1});
  for (const ExchangeOutcome& outcome : exchange_without(missing, "no warning")) EXPECT_TRUE(outcome.warnings.empty());
}

TEST_P(ExchangeConformanceFailures, AFailedDeviceFailsExchangesWaitingNowAndLater) {
  const int failed = world_ - 1;
  // The device is marked failed by its own process; its peers hear of it
  // from the communicator.
  std::thread failer([&] {
    if (!drives(failed)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the others are waiting by now
    comm().tell({Event::kFailed, GlobalOrdinal(failed), "its thread died"});
  });
  const std::vector<ExchangeOutcome> waiting = exchange_without(failed, "now");
  failer.join();
  const std::vector<ExchangeOutcome> later = exchange_without(failed, "later");
  const std::string message = str_cat(": device ", failed, " is gone (its thread died)");
  expect_failed(waiting, failed, ErrorCode::kCollective, "rendezvous 'now'" + message);
  expect_failed(later, failed, ErrorCode::kCollective, "rendezvous 'later'" + message);
}

TEST_P(ExchangeConformanceFailures, AnAbsentDeviceFailsItsPeersUntilCleared) {
  const int absent = world_ - 1;
  if (drives(absent)) {
    comm().tell({Event::kAbsent, GlobalOrdinal(absent), "its spawn function returned",
                 comm().absence_epoch(GlobalOrdinal(absent))});
  }
  expect_failed(exchange_without(absent, "absent"), absent, ErrorCode::kCollective,
                str_cat("rendezvous 'absent': device ", absent, " is gone (its spawn function returned)"));
  // Cleared once its peers failed; they meet it once it is.
  step("the peers failed");
  if (drives(absent)) comm().tell({Event::kPresent, GlobalOrdinal(absent), ""});
  step("the absence was cleared");
  // Rounds count per tag: the absent device never took one of "absent".
  expect_every_payload("present", 0, [](int) { return size_t{7}; });
}

TEST_P(ExchangeConformanceFailures, AnInterruptFailsTheDevicesExchangeAndItsPeersNowAndLater) {
  const int missing = world_ - 1;
  uint64_t id = 0;
  std::thread interrupter([&] {
    if (!drives(0)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the others are waiting by now
    id = comm().tell({Event::kInterrupted, GlobalOrdinal(0), "Ctrl-C"});
  });
  const std::vector<ExchangeOutcome> outcomes = exchange_without(missing, "now");
  interrupter.join();
  expect_failed(outcomes, missing, ErrorCode::kCollective,
                "rendezvous 'now' cannot complete: device 0 was interrupted: Ctrl-C");
  // Until the interrupt ends, device 0's next exchange fails too; then the
  // devices meet again.
  if (drives(0)) {
    const ExchangeOutcome later = exchange_on(0, {"later", {}, "x"});
    EXPECT_EQ(later.error, "rendezvous 'later' cannot complete: device 0 was interrupted: Ctrl-C");
    comm().tell({Event::kResumed, GlobalOrdinal(0), "", id});
  }
  step("the interrupt ended");
  // Its peers then wait for device 0 in 'after' longer than a cycle of
  // waits takes to be seen: its 'later', given up, is no such cycle.
  if (drives(0)) std::this_thread::sleep_for(std::chrono::milliseconds(150));
  expect_every_payload("after", 0, [](int) { return size_t{7}; });
}

TEST_P(ExchangeConformanceFailures, ADeviceTakesPartInOneRendezvousAtATime) {
  const int missing = world_ - 1;
  // Device 0's process tries the second one; then the missing device's
  // process ends the first.
  std::thread second([&] {
    if (drives(0)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // device 0 waits by now
      const ExchangeOutcome outcome = exchange_on(0, {"second", {}, "y"});
      EXPECT_EQ(outcome.code, ErrorCode::kInvalidArgument) << outcome.error;
      EXPECT_EQ(outcome.error, "rendezvous 'second': device 0 already waits in rendezvous 'first' (on another "
                               "thread): a device takes part in one rendezvous at a time");
    }
    step("device 0 was refused");
    if (drives(missing)) comm().tell({Event::kFailed, GlobalOrdinal(missing), "the test is done"});
  });
  const std::vector<ExchangeOutcome> outcomes = exchange_without(missing, "first");
  second.join();
  expect_failed(outcomes, missing, ErrorCode::kCollective, "is gone (the test is done)");
}

// Says "interrupt" once its thread has waited 50 ms, naming a cause.
bool interrupt_after_50_ms(void* context) noexcept {
  if (Clock::now() < *static_cast<Clock::time_point*>(context) + std::chrono::milliseconds(50)) return false;
  set_interrupt_cause("the test's check");
  return true;
}

TEST_P(ExchangeConformanceFailures, AnInterruptedWaitingThreadFailsItsPeersNamingTheCause) {
  const int missing = world_ - 1;
  const Clock::time_point start = Clock::now();
  std::vector<ExchangeOutcome> outcomes(static_cast<size_t>(world_));
  std::vector<std::thread> threads;
  for (const int d : devices()) {
    if (d == missing) continue;
    threads.emplace_back([&, d] {
      Clock::time_point since = Clock::now();
      std::optional<ScopedInterruptCheck> check;
      if (d == 0) check.emplace(&interrupt_after_50_ms, &since);
      outcomes[d] = exchange_on(d, {"checked", {}, "x"});
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
  expect_failed(outcomes, missing, ErrorCode::kCollective,
                "rendezvous 'checked' cannot complete: device 0 was interrupted by the test's check while it waited");
}

INSTANTIATE_TEST_SUITE_P(Backends, ExchangeConformanceFailures, ::testing::ValuesIn(cases(2)), backend_and_world);
// An MPI job of one device has no failure cases.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ExchangeConformanceFailures);

INSTANTIATE_TEST_SUITE_P(Backends, ExchangeConformance, ::testing::ValuesIn(cases(1)), backend_and_world);

}  // namespace
}  // namespace ordo::conformance
