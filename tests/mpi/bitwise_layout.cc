// A fixed computation on a world of 8 devices, whatever the layout
// (processes x devices), that prints a hash of every result of every
// device, in ordinal order, from the process of ordinal 0 (the lines
// travel there by rendezvous): tests/mpi/same_across_layouts.sh requires
// the same lines from 1 x 8, 2 x 4, 4 x 2 and 8 x 1. The float32 inputs mix magnitudes (1e8, 1, -1e8,
// ...), so a reduction that ran in any order other than the global ranks'
// would round differently; the groups list their members out of ordinal
// order, where a group's rank order is its list's.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ordo/ordo.h"

namespace {

constexpr int kWorld = 8;
constexpr int64_t kElements = 48;  // divisible by 8 shards and by 4

uint64_t fnv1a(const std::vector<float>& values) {
  uint64_t hash = 1469598103934665603ull;
  const auto* bytes = reinterpret_cast<const unsigned char*>(values.data());
  for (size_t i = 0; i < values.size() * sizeof(float); ++i) hash = (hash ^ bytes[i]) * 1099511628211ull;
  return hash;
}

// Device `ordinal`'s input: large terms that cancel and small ones that
// survive only when added in one particular order.
std::vector<float> input_of(int ordinal) {
  static constexpr float kPattern[] = {1e8f, 1.0f, -1e8f, 0.3f, 3.0e7f, -7.5e-3f, -3.0e7f, 2.5f};
  std::vector<float> values(kElements);
  for (int64_t j = 0; j < kElements; ++j) {
    values[j] = kPattern[(ordinal * 3 + j) % 8] * (1.0f + 0.01f * float((ordinal + 2 * j) % 7));
  }
  return values;
}

// A 16-bit float result as float32 (exact), to hash as the others.
ordo::Tensor widened(const ordo::Tensor& x) { return ordo::cast(x, ordo::DType::kFloat32); }

std::string run(int ordinal) {
  const ordo::ReplicaGroups odd_first = {{5, 1, 7, 3}, {2, 6, 0, 4}};
  const ordo::ReplicaGroups pairs = {{6, 1}, {0, 7}, {3, 4}, {2, 5}};
  const ordo::Tensor x = ordo::from_vector<float>(input_of(ordinal), {kElements});
  const std::vector<std::pair<std::string, ordo::Tensor>> results = {
      {"all_reduce sum", ordo::all_reduce(ordo::ReduceType::kSum, x)},
      {"all_reduce mean", ordo::all_reduce(ordo::ReduceType::kSum, x, 1.0 / kWorld)},
      {"all_reduce sum in groups", ordo::all_reduce(ordo::ReduceType::kSum, x * 3.0 - 1.0, 1.0, odd_first)},
      {"all_reduce mean in pairs", ordo::all_reduce(ordo::ReduceType::kSum, x, 0.5, pairs)},
      {"all_reduce mul", ordo::all_reduce(ordo::ReduceType::kMul, x * 1e-8 + 1.0)},
      {"reduce_scatter sum", ordo::reduce_scatter(ordo::ReduceType::kSum, x, 1.0, 0, kWorld)},
      {"reduce_scatter mean in groups",
       ordo::reduce_scatter(ordo::ReduceType::kSum, x, 0.25, 0, 4, odd_first)},
      {"all_gather", ordo::all_gather(x * 0.5)},
      {"all_gather in groups", ordo::all_gather(x, 0, odd_first)},
      {"all_gather of a sum", ordo::all_gather(ordo::all_reduce(ordo::ReduceType::kSum, x, 1.0, pairs))},
      // The 16-bit floats fold in float32 in rank order, then round once.
      {"all_reduce sum bfloat16",
       widened(ordo::all_reduce(ordo::ReduceType::kSum, ordo::cast(x, ordo::DType::kBFloat16)))},
      {"reduce_scatter float16 groups",
       widened(ordo::reduce_scatter(ordo::ReduceType::kSum, ordo::cast(x * 1e-4, ordo::DType::kFloat16), 0.25, 0,
                                    4, odd_first))},
  };
  ordo::mark_step();
  std::string lines;
  for (const auto& [name, tensor] : results) {
    char line[160];
    std::snprintf(line, sizeof(line), "ordinal %d: %-30s %016llx\n", ordinal, name.c_str(),
                  static_cast<unsigned long long>(fnv1a(tensor.to_vector<float>())));
    lines += line;
  }
  return lines;
}

}  // namespace

int main() {
  try {
    if (ordo::world_size() != kWorld) {
      std::fprintf(stderr, "bitwise_layout: needs a world of %d devices, this one has %d\n", kWorld,
                   ordo::world_size());
      return 2;
    }
    std::string every_device;  // on ordinal 0, in ordinal order
    ordo::spawn([&](int ordinal) {
      const std::vector<std::string> lines = ordo::rendezvous("hashes", run(ordinal));
      if (ordinal != 0) return;
      for (const std::string& device_lines : lines) every_device += device_lines;
    });
    std::fputs(every_device.c_str(), stdout);
    ordo::shutdown();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bitwise_layout: %s\n", e.what());
    return 1;
  }
  return 0;
}
