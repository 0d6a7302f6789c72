// The topology: global ordinals, indices in a process, host ordinals.
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include "comm/topology.h"
#include "ordo/error.h"

namespace ordo::comm {
namespace {

// A device's two numbers are two types: neither passes for the other, nor
// for an int, without saying so (core/device_numbers.h).
static_assert(!std::is_convertible_v<LocalDevice, GlobalOrdinal>);
static_assert(!std::is_convertible_v<GlobalOrdinal, LocalDevice>);
static_assert(!std::is_convertible_v<int, LocalDevice> && !std::is_convertible_v<int, GlobalOrdinal>);
static_assert(!std::is_convertible_v<LocalDevice, int> && !std::is_convertible_v<GlobalOrdinal, int>);
static_assert(sizeof(LocalDevice) == sizeof(int) && sizeof(GlobalOrdinal) == sizeof(int));

TEST(TopologyTest, EveryLocalDeviceInOrder) {
  std::vector<int> seen;
  for (const LocalDevice d : LocalDevices(3)) seen.push_back(d.index());
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(str_cat("device ", GlobalOrdinal(5), " and ", LocalDevice(1)), "device 5 and 1");
}

TEST(TopologyTest, OneProcessIsTheWholeWorld) {
  const Topology t = Topology::single_process(4);
  EXPECT_EQ(t.world_size(), 4);
  EXPECT_EQ(t.process_count(), 1);
  EXPECT_EQ(t.local_devices(), 4);
  EXPECT_EQ(t.host_devices(), 4);
  for (int d = 0; d < 4; ++d) {
    EXPECT_EQ(t.global_ordinal(LocalDevice(d)), GlobalOrdinal(d));
    EXPECT_EQ(t.local_device(GlobalOrdinal(d)), LocalDevice(d));
    EXPECT_EQ(t.host_ordinal(GlobalOrdinal(d)), d);
  }
  EXPECT_FALSE(t.is_local(GlobalOrdinal(4)));
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
  EXPECT_EQ(t.global_ordinal(LocalDevice(0)), GlobalOrdinal(6));
  EXPECT_EQ(t.global_ordinal(LocalDevice(1)), GlobalOrdinal(7));
  EXPECT_EQ(t.local_device(GlobalOrdinal(7)), LocalDevice(1));
  EXPECT_EQ(t.local_device(GlobalOrdinal(5)), std::nullopt);
  const DevicePlace& five = t.place(GlobalOrdinal(5));
  EXPECT_EQ(five.process, 2);
  EXPECT_EQ(five.local, LocalDevice(1));
  EXPECT_EQ(five.host, 1);
  // torch_xla's local ordinal counts the devices of a host.
  const int host_ordinals[] = {0, 1, 2, 3, 0, 1, 2, 3};
  for (int d = 0; d < 8; ++d) EXPECT_EQ(t.host_ordinal(GlobalOrdinal(d)), host_ordinals[d]) << "device " << d;
  EXPECT_EQ(t.describe(), "8 devices: 4 processes x 2 devices on 2 hosts");
}

TEST(TopologyTest, HostsNeedNotHoldNeighbouringProcesses) {
  const Topology t(1, 0, {0, 1, 0});
  EXPECT_EQ(t.host_ordinal(GlobalOrdinal(0)), 0);
  EXPECT_EQ(t.host_ordinal(GlobalOrdinal(1)), 0);
  EXPECT_EQ(t.host_ordinal(GlobalOrdinal(2)), 1);
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
