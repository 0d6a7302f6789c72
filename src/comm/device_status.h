// What every waiter must know of the devices it waits for or waits as: one
// record per device, kept by every backend and marked through its
// Communicator.
//
// - Gone: the device will not join the collectives it has not joined. It
//   is failed (for good: its driving thread died, or its runtime shut
//   down), finished (for good: its program ended, as when its process said
//   goodbye at exit) or absent (nothing drives it now, as when its spawn
//   thread returned, until it is driven again); forget() ends any of them
//   when a spawn starts afresh. A waiting collective fails
//   with gone_failure; a device's own graph that fails abandons its
//   collectives, whose peers fail with abandoned_failure.
// - Interrupted (Communicator::interrupt): every collective of the device
//   that waits, for its peers or for its slot, fails naming the reason,
//   until the interrupt ends (after what the device had queued, so only
//   that is cancelled): interrupted_failure.
//
// The ways to be gone are one list (Gone), in the order a reason is
// reported: a new way is one more entry.
//
//   DeviceStatus status;
//   status.mark_gone(GlobalOrdinal(2), Gone::kFailed, "its thread died");
//   if (status.any_gone()) if (auto why = status.gone_reason(GlobalOrdinal(2))) ...;
//   const uint64_t id = status.interrupt(GlobalOrdinal(1), "Ctrl-C"); ... status.end_interrupt(GlobalOrdinal(1), id);
//
// Locking: mu_ guards the records. gone_count_ and interrupted_count_
// mirror how many devices are gone or interrupted, changed under mu_ after
// the records, so any_gone() and any_interrupted() are lock-free first
// checks on the fast path (a waiter looks again whenever it is woken, and
// every mark wakes every waiter); the reasons are read under mu_. A leaf:
// taken after a backend's own locks (Channel::mu, a meeting's), never
// before.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/device_numbers.h"
#include "device/device_data.h"
#include "ir/ops.h"

namespace ordo::comm {

// How a device is gone, in the order its reasons are reported (for good first).
enum class Gone { kFailed, kFinished, kAbsent };
inline constexpr size_t kGoneKinds = 3;

// How long a device of another process must stay gone before a wait fails
// on it: the news travels beside the data (comm/mpi/process_mesh.h), so
// what the device sent before it went, or its return after an absence,
// may still be on its way.
inline constexpr std::chrono::milliseconds kGoneGrace{1000};

class DeviceStatus {
 public:
  // The first reason given for a device and kind is the one reported.
  // An absence is marked for the device's absence epoch it was asked in
  // (it takes effect later, on the device's worker) and is dropped if the
  // absence was cleared in between; use mark_absent.
  void mark_gone(GlobalOrdinal device, Gone kind, const std::string& reason);
  uint64_t absence_epoch(GlobalOrdinal device) const;
  void mark_absent(GlobalOrdinal device, const std::string& reason, uint64_t epoch);
  void clear_absent(GlobalOrdinal device);
  bool any_gone() const { return gone_count_.load(std::memory_order_acquire) > 0; }
  // Why the device is gone (the first kind of Gone it is), if it is.
  std::optional<std::string> gone_reason(GlobalOrdinal device) const;
  // "device 3 is gone (<reason>)" for the lowest device failed, if any
  // is (not finished: a process that finished its program left nothing
  // out of step; not absent).
  std::optional<std::string> first_failed() const;

  // Returns the interrupt's id, for end_interrupt. A later interrupt of
  // the device replaces the reason.
  uint64_t interrupt(GlobalOrdinal device, const std::string& reason);
  // Ends the interrupt `id` of device unless a later one replaced it.
  void end_interrupt(GlobalOrdinal device, uint64_t id);
  bool any_interrupted() const { return interrupted_count_.load(std::memory_order_acquire) > 0; }
  // Why the device's waits are interrupted, if they are.
  std::optional<std::string> interrupt_reason(GlobalOrdinal device) const;

  // The device is driven afresh (a spawn starts clean once every device
  // ran its queue): no reason to be gone and no interrupt are left; an
  // absence still queued for it is dropped, as by clear_absent.
  void forget(GlobalOrdinal device);

 private:
  struct Record {
    std::array<std::optional<std::string>, kGoneKinds> gone;  // by Gone
    uint64_t absence_epoch = 0;                               // raised by every clear_absent
    uint64_t interrupt_id = 0;                                // 0: not interrupted
    std::string interrupt_reason;
    bool is_gone() const;
  };
  // The record of device, made if need be (mu_ held).
  Record& record_locked(GlobalOrdinal device) { return records_[device]; }
  const Record* find_locked(GlobalOrdinal device) const;
  // Sets one reason of the record, counting the device if it was not gone (mu_ held).
  void set_gone_locked(Record& record, Gone kind, const std::string& reason);

  mutable std::mutex mu_;
  std::map<GlobalOrdinal, Record> records_;
  uint64_t last_interrupt_id_ = 0;
  std::atomic<int> gone_count_{0};         // devices with a reason to be gone
  std::atomic<int> interrupted_count_{0};  // devices interrupted
};

// "<where> cannot complete: device 2 is gone (<reason>), <when>", when
// saying how far the device got ("before any collective").
device::Failure gone_failure(const std::string& where, GlobalOrdinal device, const std::string& reason,
                             const std::string& when);

// What the peers of an abandoned collective fail with: "device 2 will not
// join all_reduce #3 on group [0, 2]: <reason>".
device::Failure abandoned_failure(GlobalOrdinal device, ir::OpKind op, int64_t sequence,
                                  const std::vector<int>& group, const std::string& reason);

// "<where> was interrupted on device 1: <reason>; devices that had not
// arrived: <missing>". Without a reason (the device's waits are not
// interrupted) the waiting thread was (core/interrupt.h).
device::Failure interrupted_failure(const std::string& where, GlobalOrdinal device,
                                    const std::optional<std::string>& reason, const std::string& missing);

}  // namespace ordo::comm
