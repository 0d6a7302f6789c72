// The topology: global ordinals, indices in a process, host ordinals.
#include <gtest/gtest.h>

#include "comm/topology.h"
#include "ordo/error.h"

namespace ordo::comm {
namespace {

TEST(TopologyTest, OneProcessIsTheWholeWorld) {
  const Topology t = Topology::single_process(4);
  EXPECT_EQ(t.world_size(), 4);
  EXPECT_EQ(t.process_count(), 1);
  EXPECT_EQ(t.local_devices(), 4);
  EXPECT_EQ(t.host_devices(), 4);
  for (int d = 0; d < 4; ++d) {
    EXPECT_EQ(t.global_ordinal(d), d);
    EXPECT_EQ(t.index_of(d), d);
    EXPECT_EQ(t.host_ordinal(d), d);
  }
  EXPECT_FALSE(t.is_local(4));
  EXPECT_EQ(t.describe(), "4 devices in one process");
}

// Four processes of two devices each, two processes per host: the layout
// of TPU v3 under PJRT, where each process drives two devices.
TEST(TopologyTest, ProcessesOnHostsNameDevicesThreeWays) {
  const Topology t(2, /*process=*/3, {0, 0, 1, 1});
  EXPECT_EQ(t.world_size(), 8);
  EXPECT_EQ(t.process_count(), 4);
  EXPECT_EQ(t.host_count(), 2);
  EXPECT_EQ(t.host(), 1);
  EXPECT_EQ(t.host_devices(), 4);
  EXPECT_EQ(t.global_ordinal(0), 6);
  EXPECT_EQ(t.global_ordinal(1), 7);
  EXPECT_EQ(t.index_of(7), 1);
  EXPECT_EQ(t.index_of(5), std::nullopt);
  const DevicePlace& five = t.place(5);
  EXPECT_EQ(five.process, 2);
  EXPECT_EQ(five.index, 1);
  EXPECT_EQ(five.host, 1);
  // torch_xla's local ordinal counts the devices of a host.
  const int host_ordinals[] = {0, 1, 2, 3, 0, 1, 2, 3};
  for (int d = 0; d < 8; ++d) EXPECT_EQ(t.host_ordinal(d), host_ordinals[d]) << "device " << d;
  EXPECT_EQ(t.describe(), "8 devices: 4 processes x 2 devices on 2 hosts");
}

TEST(TopologyTest, HostsNeedNotHoldNeighbouringProcesses) {
  const Topology t(1, 0, {0, 1, 0});
  EXPECT_EQ(t.host_ordinal(0), 0);
  EXPECT_EQ(t.host_ordinal(1), 0);
  EXPECT_EQ(t.host_ordinal(2), 1);
  EXPECT_EQ(t.host_devices(), 2);
}

TEST(TopologyTest, ALayoutThatIsNotOneIsRefused) {
  EXPECT_THROW(Topology(0, 0, {0}), InvalidArgument);
  EXPECT_THROW(Topology(2, 2, {0, 0}), InvalidArgument);
  EXPECT_THROW(Topology(2, 0, {}), InvalidArgument);
  EXPECT_THROW(Topology(2, 0, {0, 2}), InvalidArgument);  // host 1 never appears
  EXPECT_THROW(Topology(1 << 20, 0, std::vector<int>(2048, 0)), InvalidArgument);
}

}  // namespace
}  // namespace ordo::comm
