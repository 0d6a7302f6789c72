#include "comm/protocol/progress.h"

#include <algorithm>
#include <thread>

#include "comm/describe.h"
#include "comm/protocol/channel.h"

namespace ordo::comm {
namespace {

// Whether device has not left the collective of entry yet.
bool still_in(const ProgressEntry& entry, GlobalOrdinal device) {
  const std::vector<int>& group = entry.channel->group();
  const auto rank = static_cast<size_t>(std::find(group.begin(), group.end(), device.value()) - group.begin());
  return entry.channel->member(rank).done.load(std::memory_order_acquire) < entry.sequence;
}

}  // namespace

std::string ProgressEntry::describe() const {
  return str_cat(ir::op_name(op), " #", sequence, " on group ", describe_group(*group));
}

ProgressEntry DeviceProgress::load(int64_t number) const {
  const Entry& e = entries_[static_cast<size_t>(number % kHistory)];
  return {e.op.load(std::memory_order_acquire), e.partition.load(std::memory_order_acquire),
          e.group.load(std::memory_order_acquire), e.channel.load(std::memory_order_acquire),
          e.sequence.load(std::memory_order_acquire)};
}

DeviceProgress::Snapshot DeviceProgress::read(int64_t wanted, GlobalOrdinal device) const {
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
    if (version_.load(std::memory_order_relaxed) != before) continue;
    seen.inside = seen.latest && still_in(*seen.latest, device);
    return seen;
  }
}

}  // namespace ordo::comm
