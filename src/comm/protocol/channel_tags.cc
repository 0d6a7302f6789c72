#include "comm/protocol/channel_tags.h"

#include <cstdint>

#include "ordo/error.h"

namespace ordo::comm {

int channel_tag(std::span<const int> group, int tag_upper_bound) {
  ORDO_ARG_CHECK(tag_upper_bound > kFirstChannelTag, "MPI's largest tag ", tag_upper_bound,
                 " leaves no room for ordo's channels (they start at ", kFirstChannelTag, ")");
  // splitmix64's finalizer over the members in order: every bit of the
  // hash depends on every member and on its position.
  uint64_t h = group.size();
  for (int member : group) {
    h ^= static_cast<uint64_t>(static_cast<uint32_t>(member)) + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
    h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
    h ^= h >> 31;
  }
  const uint64_t channels = static_cast<uint64_t>(tag_upper_bound) - kFirstChannelTag + 1;
  return kFirstChannelTag + static_cast<int>(h % channels);
}

}  // namespace ordo::comm
