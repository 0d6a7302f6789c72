// The devices whose waits are interrupted (Communicator::interrupt): every
// collective of such a device that waits, for its peers or for its slot,
// fails naming the reason, until the interrupt ends (after what the device
// had queued, so only that is cancelled).
//
// Any backend keeps one, marked through its Communicator, and fails an
// interrupted wait with interrupted_failure.
//
// Locking: mu_ guards the interrupts. count_ mirrors how many there are,
// changed under mu_, so any() is a lock-free first check for a waiter (it
// looks again whenever it is woken, and interrupting wakes every waiter).
// A leaf: taken after a backend's own locks (Channel::mu in process),
// never before.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "device/device_data.h"

namespace ordo::comm {

class InterruptedDevices {
 public:
  // Returns the interrupt's id, for end. A later interrupt of the device
  // replaces the reason.
  uint64_t interrupt(int device, const std::string& reason) {
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, added] = interrupts_.try_emplace(device);
    if (added) count_.fetch_add(1, std::memory_order_seq_cst);
    it->second = {++last_id_, reason};
    return last_id_;
  }
  // Ends the interrupt `id` of device unless a later one replaced it.
  void end(int device, uint64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = interrupts_.find(device);
    if (it == interrupts_.end() || it->second.id != id) return;
    interrupts_.erase(it);
    count_.fetch_sub(1, std::memory_order_seq_cst);
  }

  bool any() const { return count_.load(std::memory_order_acquire) > 0; }

  // Why the device's waits are interrupted, if they are.
  std::optional<std::string> reason(int device) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = interrupts_.find(device);
    if (it == interrupts_.end()) return std::nullopt;
    return it->second.reason;
  }

 private:
  struct Interrupt {
    uint64_t id = 0;
    std::string reason;
  };

  mutable std::mutex mu_;
  std::map<int, Interrupt> interrupts_;
  uint64_t last_id_ = 0;
  std::atomic<int> count_{0};
};

// "<where> was interrupted on device 1: <reason>; devices that had not
// arrived: <missing>". Without a reason (the device's waits are not
// interrupted) the waiting thread was (core/interrupt.h).
device::Failure interrupted_failure(const std::string& where, int device, const std::optional<std::string>& reason,
                                    const std::string& missing);

}  // namespace ordo::comm
