// The devices declared gone: every collective that needs one of them and
// that it has not joined fails. A device is gone for good when its driving
// thread died, and absent while nothing drives it (its spawn thread
// returned) until it is driven again.
//
// Any backend keeps one, marked through its Communicator, and fails a
// waiting collective with gone_failure; a device's own graph that fails
// abandons its collectives, whose peers fail with abandoned_failure.
//
// Locking: mu_ guards the reasons. count_ mirrors how many there are,
// changed under mu_ after the reasons, so any() is a lock-free first check
// on the fast path (a waiter looks again whenever it is woken, and marking
// wakes every waiter); the reasons themselves are read under mu_. A leaf:
// taken after a backend's own locks (Channel::mu in process), never before.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "device/device_data.h"
#include "ir/ops.h"

namespace ordo::comm {

class GoneDevices {
 public:
  // Gone for good. The first reason given for a device is the one reported.
  void mark(int device, const std::string& reason) {
    std::lock_guard<std::mutex> lock(mu_);
    add_locked(gone_, device, reason);
  }
  // Absent until clear_absent. A mark is made for the device's absence
  // epoch it was asked in (it takes effect later, on the device's worker),
  // and is dropped if a clear came in between.
  uint64_t absence_epoch(int device) const {
    std::lock_guard<std::mutex> lock(mu_);
    return absence_epoch_locked(device);
  }
  void mark_absent(int device, const std::string& reason, uint64_t epoch) {
    std::lock_guard<std::mutex> lock(mu_);
    if (absence_epoch_locked(device) == epoch) add_locked(absent_, device, reason);
  }
  void clear_absent(int device) {
    std::lock_guard<std::mutex> lock(mu_);
    ++absence_epochs_[device];
    if (absent_.erase(device) != 0) count_.fetch_sub(1, std::memory_order_seq_cst);
  }

  bool any() const { return count_.load(std::memory_order_acquire) > 0; }

  // Why the device is gone (for good first), if it is.
  std::optional<std::string> reason(int device) const {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto* reasons : {&gone_, &absent_}) {
      auto it = reasons->find(device);
      if (it != reasons->end()) return it->second;
    }
    return std::nullopt;
  }

 private:
  uint64_t absence_epoch_locked(int device) const {
    auto it = absence_epochs_.find(device);
    return it == absence_epochs_.end() ? 0 : it->second;
  }
  void add_locked(std::map<int, std::string>& reasons, int device, const std::string& reason) {
    if (reasons.emplace(device, reason).second) count_.fetch_add(1, std::memory_order_seq_cst);
  }

  mutable std::mutex mu_;
  std::map<int, std::string> gone_;
  std::map<int, std::string> absent_;
  std::map<int, uint64_t> absence_epochs_;  // raised by every clear_absent
  std::atomic<int> count_{0};
};

// "<where> cannot complete: device 2 is gone (<reason>), <when>", when
// saying how far the device got ("before any collective").
device::Failure gone_failure(const std::string& where, int device, const std::string& reason,
                             const std::string& when);

// What the peers of an abandoned collective fail with: "device 2 will not
// join all_reduce #3 on group [0, 2]: <reason>".
device::Failure abandoned_failure(int device, ir::OpKind op, int64_t sequence, const std::vector<int>& group,
                                  const std::string& reason);

}  // namespace ordo::comm
