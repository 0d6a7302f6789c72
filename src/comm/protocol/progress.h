// Where each device is in its program of collectives, for the peers that
// wait for it. A device numbers its collectives 0, 1, 2, ... in the order
// its tasks run them (the cc token chain makes that the program order), and
// in an SPMD program every device's collective #k is the same op on the
// same partition. Members of one group meet only each other, so a device
// that took another partition at #k (or went to another channel) is seen
// only by a peer that waits for it: the waiter reads the device's record
// and finds it at #k elsewhere (a mismatch), behind (late), or past #k.
// Every collective of a device of this process is recorded here, once:
// those of groups in this process (local_groups.h) and those of groups
// that span processes (processes_communicator.h), whose records other
// processes read through questions (progress_board.h).
//
//   DeviceProgress& mine = progress[device];
//   const int64_t number = mine.start({op, partition, &group, &channel, sequence});
//   ...  // a waiter, on its slow path:
//   DeviceProgress::Snapshot seen = progress[peer].read(number);
//
// Locking: a DeviceProgress is written only by whoever runs its device's
// tasks (one at a time, see worker.h), before the device joins the
// collective it records; readers are waiters on their slow path. A
// sequence lock: the writer makes the version odd, writes an entry, makes
// it even again; a reader that saw the same even version before and after
// reading has a consistent copy (the entry's loads are acquire, so they
// stay before the second look at the version). Nobody blocks. On x86 every
// one of these is a plain load or store on the device's own cache lines,
// which no peer reads in the steady state.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/device_numbers.h"
#include "ir/ops.h"
#include "ordo/collective_types.h"

namespace ordo::comm {

class Channel;

// A partition of the devices into replica groups, made once by the
// communicator for each distinct partition: equal partitions are one
// object, so comparing two is comparing pointers. Immutable, and alive as
// long as the communicator.
struct Partition {
  ReplicaGroups groups;  // canonical; the world's is one group of every device
  std::string text;      // "[[0, 1], [2, 3]]"
};

// One collective of a device's program.
struct ProgressEntry {
  ir::OpKind op = ir::OpKind::kAllReduce;
  const Partition* partition = nullptr;
  const std::vector<int>* group = nullptr;  // the device's group in the partition
  // Where the device meets its group (of a group that spans processes,
  // this process's members: local_meeting.h).
  const Channel* channel = nullptr;
  int64_t sequence = 0;  // the collective's number in its group

  // "all_reduce #3 on group [0, 1]"
  std::string describe() const;
};

class alignas(64) DeviceProgress {
 public:
  // How many of a device's latest collectives a reader can still look up.
  static constexpr int64_t kHistory = 16;

  // Records the device's next collective and returns its number. On the
  // path of every collective, so inline.
  int64_t start(const ProgressEntry& entry) {
    const uint64_t version = version_.load(std::memory_order_relaxed);  // only this thread writes it
    const auto number = static_cast<int64_t>(version / 2);
    version_.store(version + 1, std::memory_order_relaxed);
    // Release stores: a reader that loads one of them sees the odd version
    // (or a later one) when it looks at the version again.
    Entry& e = entries_[static_cast<size_t>(number % kHistory)];
    e.op.store(entry.op, std::memory_order_release);
    e.partition.store(entry.partition, std::memory_order_release);
    e.group.store(entry.group, std::memory_order_release);
    e.channel.store(entry.channel, std::memory_order_release);
    e.sequence.store(entry.sequence, std::memory_order_release);
    version_.store(version + 2, std::memory_order_release);
    return number;
  }

  struct Snapshot {
    int64_t started = 0;                  // collectives started; the latest is #started - 1
    std::optional<ProgressEntry> latest;  // none before the first
    std::optional<ProgressEntry> wanted;  // the one asked for, if started and still kept
    bool inside = false;                  // the device has not left its latest yet (its done mark)
  };
  // A consistent copy of the latest entry and of collective #wanted's;
  // device: whose record this is.
  Snapshot read(int64_t wanted, GlobalOrdinal device) const;

 private:
  struct Entry {
    std::atomic<ir::OpKind> op{ir::OpKind::kAllReduce};
    std::atomic<const Partition*> partition{nullptr};
    std::atomic<const std::vector<int>*> group{nullptr};
    std::atomic<const Channel*> channel{nullptr};
    std::atomic<int64_t> sequence{0};
  };
  ProgressEntry load(int64_t number) const;

  // Twice the collectives started, plus one while one is being recorded.
  std::atomic<uint64_t> version_{0};
  std::array<Entry, kHistory> entries_;  // collective #n in entries_[n % kHistory]
};

}  // namespace ordo::comm
