// ordo::rendezvous, the public face of the communicator's exchange: the
// calling thread's device takes part, replicas come in any order, and it
// runs beside what the device queued (the exchange itself is covered by
// tests/comm_exchange_conformance_test.cc).
#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

#include "test_util.h"

namespace ordo {
namespace {

using RendezvousTest = testing::FourDeviceTest;

std::string payload_of(int device) { return std::string(static_cast<size_t>(device), static_cast<char>('a' + device)); }

TEST_F(RendezvousTest, EveryDeviceGetsEveryPayloadInOrdinalOrder) {
  std::vector<std::vector<std::string>> got(4);
  spawn([&](int device) { got[device] = rendezvous("all", payload_of(device)); });
  const std::vector<std::string> want = {payload_of(0), payload_of(1), payload_of(2), payload_of(3)};
  for (int d = 0; d < 4; ++d) EXPECT_EQ(got[d], want) << "device " << d;
}

TEST_F(RendezvousTest, ReplicasInAnyOrderMeetInOrdinalOrder) {
  std::vector<std::vector<std::string>> got(4);
  spawn([&](int device) {
    const std::vector<int> replicas = device % 2 ? std::vector<int>{3, 1} : std::vector<int>{2, 0};
    got[device] = rendezvous("pairs", payload_of(device), replicas);
  });
  EXPECT_EQ(got[0], (std::vector<std::string>{payload_of(0), payload_of(2)}));
  EXPECT_EQ(got[3], (std::vector<std::string>{payload_of(1), payload_of(3)}));
}

TEST_F(RendezvousTest, RunsBesideACollectiveItsDeviceQueued) {
  // Device 0 queues an all_reduce of every device and meets the others in
  // a rendezvous before they trace theirs: a rendezvous that waited for
  // the device's queue would wait for ever.
  std::vector<float> sums(4);
  spawn([&](int device) {
    Tensor total = all_reduce(ReduceType::kSum, full({2}, 1.0f, DType::kFloat32));
    if (device == 0) mark_step();
    rendezvous("beside");
    sums[device] = total.to_vector<float>()[0];
  });
  EXPECT_EQ(sums, std::vector<float>(4, 4.0f));
}

TEST_F(RendezvousTest, TheWarningGoesWhereTheCallerSays) {
  set_collective_timeouts({0.05, 0.2});
  std::mutex mu;
  std::vector<std::string> warnings;
  EXPECT_THROW(rendezvous("alone", "", {0, 1}, [&](const std::string& line) {
    std::lock_guard<std::mutex> lock(mu);
    warnings.push_back(line);
  }), CollectiveTimeoutError);
  set_collective_timeouts({});
  EXPECT_EQ(warnings, std::vector<std::string>{"ordo: device 0 has waited 0.05 s in rendezvous 'alone'; missing "
                                               "devices: [1]"});
}

}  // namespace
}  // namespace ordo
