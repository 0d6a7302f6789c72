#include "comm/protocol/missing_members.h"

#include <algorithm>
#include <vector>

#include "comm/describe.h"
#include "comm/fingerprint.h"

namespace ordo::comm {
namespace {

using Snapshot = DeviceProgress::Snapshot;

// The members of p's group that have not joined p's collective, by rank.
std::vector<size_t> missing_ranks(const Participant& p) {
  std::vector<size_t> missing;
  for (size_t rank = 0; rank < p.channel.size(); ++rank) {
    if (rank == p.rank || p.channel.member(rank).joined.load(std::memory_order_relaxed) >= p.sequence) {
      continue;
    }
    missing.push_back(rank);
  }
  return missing;
}

// What a device's record shows it doing.
std::string doing(const Participant& p, const Snapshot& seen) {
  if (!seen.latest) return "has not reached a collective yet";
  const int64_t number = seen.started - 1;
  if (seen.latest->channel == &p.channel && seen.latest->sequence == p.sequence) return "is arriving here";
  if (seen.inside) return str_cat("is waiting in ", seen.latest->describe(), ", its collective #", number);
  return str_cat("has not reached a collective since its collective #", number, " (", seen.latest->describe(), ")");
}

// A mismatch, if the record of the member of rank (device) shows that its
// collective #p.number is not p's: that number is on another partition,
// or it went past it (too far to see it) on another partition without
// joining p's. A member behind p may still come, and one whose #p.number
// is on p's partition but elsewhere in p's channel means the channel is
// out of step after a failure, not that the programs differ.
std::optional<device::Failure> mismatch_with(const Participant& p, size_t rank, GlobalOrdinal device,
                                             const Snapshot& seen) {
  const Partition* partition = nullptr;
  std::string theirs;
  if (seen.wanted) {
    const ProgressEntry& entry = *seen.wanted;
    // On its way here: the meeting compares the ops, partitions included.
    if (entry.channel == &p.channel && entry.sequence == p.sequence) return std::nullopt;
    if (entry.partition == &p.partition) return std::nullopt;
    partition = entry.partition;
    theirs = entry.describe();
  } else {
    if (seen.started <= p.number || seen.latest->partition == &p.partition) return std::nullopt;
    // It may have joined after the look that found it missing (the record
    // was read after that look, and its join came before its later records).
    if (p.channel.member(rank).joined.load(std::memory_order_relaxed) >= p.sequence) return std::nullopt;
    partition = seen.latest->partition;
    theirs = str_cat("past its collective #", p.number, " without joining it: it is at its collective #",
                     seen.started - 1, ", ", seen.latest->describe());
  }
  return device::Failure{
      ErrorCode::kCollectiveMismatch,
      partition_mismatch_message(p.number, p.call.device, describe_at(p.call, p.sequence, p.group), device,
                                 theirs, p.partition.text, partition->text)};
}

std::optional<device::Failure> gone_member_failure(const Participant& p, GlobalOrdinal device, const Snapshot& seen) {
  std::optional<std::string> reason = p.status.gone_reason(device);
  if (!reason) return std::nullopt;
  const std::string when =
      seen.latest ? str_cat("after its collective #", seen.started - 1, " (", seen.latest->describe(), ")")
                  : std::string("before any collective");
  return gone_failure(describe_at(p.call, p.sequence, p.group), device, *reason, when);
}

}  // namespace

std::optional<device::Failure> missing_member_failure(const Participant& p) {
  const std::vector<size_t> missing = missing_ranks(p);
  std::vector<Snapshot> seen;
  seen.reserve(missing.size());
  // A mismatch first: a device that went elsewhere and then returned from
  // its function is also gone, but the mismatch is why it is not here.
  for (size_t rank : missing) {
    const GlobalOrdinal device(p.channel.group()[rank]);
    seen.push_back(p.progress[device.slot()].read(p.number, device));
    if (std::optional<device::Failure> mismatch = mismatch_with(p, rank, device, seen.back())) return mismatch;
  }
  if (!p.status.any_gone()) return std::nullopt;
  for (size_t i = 0; i < missing.size(); ++i) {
    const GlobalOrdinal device(p.channel.group()[missing[i]]);
    if (std::optional<device::Failure> gone = gone_member_failure(p, device, seen[i])) return gone;
  }
  return std::nullopt;
}

std::string missing_members(const Participant& p) {
  ShortList out;
  for (size_t rank : missing_ranks(p)) {
    const GlobalOrdinal device(p.channel.group()[rank]);
    const Snapshot seen = p.progress[device.slot()].read(p.number, device);
    std::string what = doing(p, seen);
    if (std::optional<std::string> reason = p.status.gone_reason(device)) what = str_cat("is gone (", *reason, ") and ", what);
    out.add(str_cat(device, " (", what, ")", p.place));
  }
  return out.text();
}

}  // namespace ordo::comm
