#include <map>
#include <mutex>

#include "ordo/random.h"
#include "ordo/runtime.h"

namespace ordo {
namespace {

struct DeviceRandom {
  uint64_t seed = 0;
  uint64_t draws = 0;
  uint64_t initializations = 0;
  SeedScope scope = SeedScope::kPerDevice;
};

struct RandomStates {
  std::mutex mu;
  // Locking: mu guards by_ordinal (global ordinal -> state). Kept across
  // runtimes, as a seed outlives a restart.
  std::map<int, DeviceRandom> by_ordinal;
};

RandomStates& states() {
  static RandomStates* s = new RandomStates();
  return *s;
}

// splitmix64's finalizer: every bit of z moves every bit of the result.
uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

int resolved(int device) { return device < 0 ? current_device() : device; }

}  // namespace

void manual_seed(uint64_t seed, int device, SeedScope scope) {
  const int ordinal = get_ordinal(resolved(device));
  std::lock_guard<std::mutex> lock(states().mu);
  states().by_ordinal[ordinal] = DeviceRandom{seed, 0, 0, scope};
}

void manual_seed_all(uint64_t seed) {
  for (int d = 0; d < num_devices(); ++d) manual_seed(seed, d);
}

uint64_t manual_seed_of(int device) {
  const int ordinal = get_ordinal(resolved(device));
  std::lock_guard<std::mutex> lock(states().mu);
  return states().by_ordinal[ordinal].seed;
}

Tensor next_seed(int device, Caller caller) {
  device = resolved(device);
  const int ordinal = get_ordinal(device);
  DeviceRandom state;
  {
    std::lock_guard<std::mutex> lock(states().mu);
    DeviceRandom& s = states().by_ordinal[ordinal];
    state = s;
    ++s.draws;
  }
  const uint64_t stream = state.scope == SeedScope::kShared ? 0 : static_cast<uint64_t>(ordinal);
  const uint64_t value =
      mix(mix(mix(state.seed) + stream * 0x9E3779B97F4A7C15ULL) + state.draws * 0xD1B54A32D192ED03ULL);
  const int64_t seed = static_cast<int64_t>(value);
  return from_host(&seed, DType::kInt64, {}, device, caller);
}

uint64_t next_init_seed(int device) {
  const int ordinal = get_ordinal(resolved(device));
  uint64_t seed, draw;
  {
    std::lock_guard<std::mutex> lock(states().mu);
    DeviceRandom& s = states().by_ordinal[ordinal];
    seed = s.seed;
    draw = s.initializations++;
  }
  return mix(mix(seed) + (draw + 1) * 0xD1B54A32D192ED03ULL);
}

}  // namespace ordo
