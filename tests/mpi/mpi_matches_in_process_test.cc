// The MPI backend against the in-process one, bitwise, under mpirun at
// several processes x devices (mpi_tests.cmake): every process runs each
// collective twice, once on an in-process communicator of the whole world
// (every device a thread of this process: the reference) and once on the
// MPI communicator with its own devices, and compares its devices'
// outputs byte for byte. The inputs come from (case, device), so every
// process makes every device's.
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "comm/in_process/in_process_communicator.h"
#include "comm/mpi/mpi_transport.h"
#include "comm/mpi/mpi_world.h"
#include "comm_conformance.h"
#include "core/dtype_dispatch.h"
#include "runtime/runtime.h"

namespace ordo::comm {
namespace {

const MpiWorld& world() { return MpiWorld::join(runtime::num_devices_from_env()); }

Communicator& mpi() {
  static Communicator* comm = make_mpi_communicator(world()).release();  // until exit: mpirun ends the job
  return *comm;
}

struct Case {
  ir::OpKind op;
  DType dtype;
  Shape input_shape;
  Shape output_shape;
  size_t tensors = 1;
};

std::shared_ptr<device::Buffer> input_of(const Case& c, int device, size_t tensor) {
  auto buffer = device::allocate_buffer(c.dtype, c.input_shape);
  ORDO_DISPATCH_DTYPE(c.dtype, T, {
    T* data = buffer->mutable_data<T>();
    for (int64_t i = 0; i < buffer->numel; ++i) data[i] = conformance::input_value<T>(device + 1000, tensor, i);
  });
  return buffer;
}

struct Result {
  std::vector<std::vector<std::shared_ptr<device::Buffer>>> outputs;  // by device, by tensor
  std::vector<std::string> errors;                                     // by device
};

// Runs the case on comm with the given devices as threads.
Result run(Communicator& comm, const Case& c, const std::vector<int>& devices,
           const std::function<ir::CollectiveAttrs(int)>& attrs_of) {
  const int world_size = comm.world_size();
  Result result{std::vector<std::vector<std::shared_ptr<device::Buffer>>>(static_cast<size_t>(world_size)),
                std::vector<std::string>(static_cast<size_t>(world_size))};
  std::vector<std::thread> threads;
  for (int d : devices) {
    threads.emplace_back([&, d] {
      std::vector<std::shared_ptr<device::Buffer>> inputs;
      std::vector<const device::Buffer*> in, out;
      for (size_t t = 0; t < c.tensors; ++t) {
        inputs.push_back(input_of(c, d, t));
        result.outputs[static_cast<size_t>(d)].push_back(device::allocate_buffer(c.dtype, c.output_shape));
        in.push_back(inputs.back().get());
        out.push_back(result.outputs[static_cast<size_t>(d)].back().get());
      }
      const ir::CollectiveAttrs attrs = attrs_of(d);
      try {
        comm.run({c.op, attrs, GlobalOrdinal(d), in, out});
      } catch (const Error& e) {
        result.errors[static_cast<size_t>(d)] = e.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return result;
}

std::vector<int> local_devices() {
  std::vector<int> out;
  for (int i = 0; i < world().topology().local_devices(); ++i) {
    out.push_back(world().topology().global_ordinal(LocalDevice(i)).value());
  }
  return out;
}

void expect_same(const Case& c, const std::function<ir::CollectiveAttrs(int)>& attrs_of, const std::string& what) {
  const int world_size = world().topology().world_size();
  InProcessCommunicator reference_comm(world_size);
  std::vector<int> everyone(static_cast<size_t>(world_size));
  std::iota(everyone.begin(), everyone.end(), 0);
  const Result reference = run(reference_comm, c, everyone, attrs_of);
  const Result mine = run(mpi(), c, local_devices(), attrs_of);
  for (int d : local_devices()) {
    const auto i = static_cast<size_t>(d);
    ASSERT_EQ(mine.errors[i], reference.errors[i]) << what << " on device " << d;
    if (!reference.errors[i].empty()) continue;
    for (size_t t = 0; t < c.tensors; ++t) {
      const device::Buffer& a = *mine.outputs[i][t];
      const device::Buffer& b = *reference.outputs[i][t];
      ASSERT_EQ(std::memcmp(a.storage.get(), b.storage.get(), a.nbytes()), 0)
          << what << ": device " << d << " tensor " << t << " differs from the in-process backend";
    }
  }
}

ir::CollectiveAttrs with_groups(ir::CollectiveAttrs attrs, ReplicaGroups groups) {
  attrs.groups = std::move(groups);
  return attrs;
}

// Every device in one group, last ordinal first: processes in reverse.
ReplicaGroups reversed_world(int world_size) {
  std::vector<int> all(static_cast<size_t>(world_size));
  std::iota(all.rbegin(), all.rend(), 0);
  return {all};
}

// Pairs of devices from both ends: {0, W-1}, {1, W-2}, ... (W even).
ReplicaGroups outer_pairs(int world_size) {
  ReplicaGroups groups;
  for (int d = 0; d < world_size / 2; ++d) groups.push_back({d, world_size - 1 - d});
  return groups;
}

TEST(MpiMatchesInProcess, AllReduce) {
  const int w = world().topology().world_size();
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{1000}, int64_t{70000}, int64_t{3 << 20}}) {
    for (DType dtype : {DType::kFloat32, DType::kInt32, DType::kFloat64, DType::kBFloat16}) {
      for (ReduceType reduce : {ReduceType::kSum, ReduceType::kMax}) {
        const Case c{ir::OpKind::kAllReduce, dtype, {n}, {n}, 2};
        ir::CollectiveAttrs attrs;
        attrs.reduce = reduce;
        attrs.scale = reduce == ReduceType::kSum && dtype != DType::kInt32 ? 0.5 : 1.0;
        const std::string what = str_cat("all_reduce of ", n, " ", dtype_name(dtype));
        expect_same(c, [&](int) { return attrs; }, what);
        expect_same(c, [&](int) { return with_groups(attrs, reversed_world(w)); }, what + " reversed");
        if (w % 2 == 0) expect_same(c, [&](int) { return with_groups(attrs, outer_pairs(w)); }, what + " pairs");
      }
    }
  }
}

TEST(MpiMatchesInProcess, AllGatherReduceScatterAllToAll) {
  const int w = world().topology().world_size();
  for (int64_t n : {int64_t{1}, int64_t{3}, int64_t{5000}}) {
    ir::CollectiveAttrs attrs;
    expect_same({ir::OpKind::kAllGather, DType::kFloat32, {n, 3}, {n * w, 3}}, [&](int) { return attrs; },
                "all_gather dim 0");
    attrs.dim = 1;
    expect_same({ir::OpKind::kAllGather, DType::kFloat32, {3, n}, {3, n * w}}, [&](int) { return attrs; },
                "all_gather dim 1");
    expect_same({ir::OpKind::kReduceScatter, DType::kFloat32, {3, n * w}, {3, n}}, [&](int) { return attrs; },
                "reduce_scatter dim 1");
    attrs.dim = 0;
    expect_same({ir::OpKind::kReduceScatter, DType::kInt32, {n * w, 2}, {n, 2}},
                [&](int) { return with_groups(attrs, reversed_world(w)); }, "reduce_scatter dim 0 reversed");
    expect_same({ir::OpKind::kReduceScatter, DType::kFloat16, {n * w, 2}, {n, 2}},
                [&](int) { return with_groups(attrs, reversed_world(w)); }, "reduce_scatter of float16 reversed");
    attrs.dim = 1;
    attrs.concat_dim = 0;
    expect_same({ir::OpKind::kAllToAll, DType::kFloat32, {2, n * w}, {2 * w, n}}, [&](int) { return attrs; },
                "all_to_all");
  }
}

TEST(MpiMatchesInProcess, PermuteAndBroadcast) {
  const int w = world().topology().world_size();
  ir::CollectiveAttrs ring;
  for (int d = 0; d < w; ++d) ring.pairs.emplace_back(d, (d + 1) % w);
  ring.pairs.resize(static_cast<size_t>(std::max(0, w - 1)));  // the last device gets zeros
  expect_same({ir::OpKind::kCollectivePermute, DType::kFloat32, {1000}, {1000}}, [&](int) { return ring; },
              "collective_permute");
  ir::CollectiveAttrs broadcast;
  broadcast.root = w - 1;
  expect_same({ir::OpKind::kCollectiveBroadcast, DType::kFloat32, {5000}, {5000}, 2},
              [&](int) { return broadcast; }, "collective_broadcast");
}

TEST(MpiMatchesInProcess, AMismatchFailsEveryDeviceAlike) {
  const int w = world().topology().world_size();
  if (w < 2) GTEST_SKIP() << "one device cannot disagree";
  ir::CollectiveAttrs sum, max;
  max.reduce = ReduceType::kMax;
  const Case c{ir::OpKind::kAllReduce, DType::kFloat32, {100}, {100}};
  const Result mine = run(mpi(), c, local_devices(), [&](int d) { return d == w - 1 ? max : sum; });
  for (int d : local_devices()) {
    const std::string& e = mine.errors[static_cast<size_t>(d)];
    EXPECT_NE(e.find("collective mismatch"), std::string::npos) << e;
    EXPECT_NE(e.find(str_cat("device ", w - 1)), std::string::npos) << e;
  }
  // The group goes on afterwards.
  expect_same(c, [&](int) { return sum; }, "all_reduce after a mismatch");
}

TEST(MpiMatchesInProcess, Exchange) {
  const int w = world().topology().world_size();
  for (const std::vector<int>& participants : std::vector<std::vector<int>>{{}, {0, w - 1}}) {
    if (participants.size() == 2 && w < 2) continue;
    std::vector<int> mine;
    for (int d : local_devices()) {
      if (participants.empty() || std::find(participants.begin(), participants.end(), d) != participants.end()) {
        mine.push_back(d);
      }
    }
    std::vector<std::vector<std::string>> got(static_cast<size_t>(w));
    std::vector<std::thread> threads;
    for (int d : mine) {
      threads.emplace_back([&, d] {
        for (int round = 0; round < 3; ++round) {
          const std::string payload(static_cast<size_t>(d * 1000 + round), static_cast<char>('a' + d % 26));
          const std::vector<GlobalOrdinal> ordinals(participants.begin(), participants.end());
          got[static_cast<size_t>(d)] = mpi().exchange({GlobalOrdinal(d), "step", ordinals, payload});
          std::vector<int> expected_from = participants;
          if (expected_from.empty()) {
            expected_from.resize(static_cast<size_t>(w));
            std::iota(expected_from.begin(), expected_from.end(), 0);
          }
          ASSERT_EQ(got[static_cast<size_t>(d)].size(), expected_from.size());
          for (size_t r = 0; r < expected_from.size(); ++r) {
            const int e = expected_from[r];
            EXPECT_EQ(got[static_cast<size_t>(d)][r],
                      std::string(static_cast<size_t>(e * 1000 + round), static_cast<char>('a' + e % 26)));
          }
        }
      });
    }
    for (std::thread& t : threads) t.join();
  }
}

}  // namespace
}  // namespace ordo::comm
