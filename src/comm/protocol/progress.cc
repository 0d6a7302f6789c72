#include "comm/protocol/progress.h"

#include <thread>

namespace ordo::comm {

ProgressEntry DeviceProgress::load(int64_t number) const {
  const Entry& e = entries_[static_cast<size_t>(number % kHistory)];
  return {e.op.load(std::memory_order_acquire), e.partition.load(std::memory_order_acquire),
          e.channel.load(std::memory_order_acquire), e.sequence.load(std::memory_order_acquire)};
}

DeviceProgress::Snapshot DeviceProgress::read(int64_t wanted) const {
  for (;;) {
    const uint64_t before = version_.load(std::memory_order_acquire);
    if (before % 2 != 0) {  // the writer is between two stores: a few nanoseconds
      std::this_thread::yield();
      continue;
    }
    Snapshot seen;
    seen.started = static_cast<int64_t>(before / 2);
    if (seen.started > 0) seen.latest = load(seen.started - 1);
    if (wanted >= 0 && wanted < seen.started && seen.started - wanted <= kHistory) seen.wanted = load(wanted);
    if (version_.load(std::memory_order_relaxed) == before) return seen;
  }
}

}  // namespace ordo::comm
