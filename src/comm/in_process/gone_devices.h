// The devices declared gone (their driving thread died): every collective
// that needs one of them and that it has not joined fails.
//
// Locking: mu_ guards reasons_. count_ is raised under mu_ after the reason
// is stored and never lowered, so any() is a lock-free first check on the
// fast path; the reasons themselves are read under mu_. Taken after
// Channel::mu when both are held, never before.
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace ordo::comm {

class GoneDevices {
 public:
  // The first reason given for a device is the one reported.
  void mark(int device, const std::string& reason) {
    std::lock_guard<std::mutex> lock(mu_);
    if (reasons_.emplace(device, reason).second) count_.fetch_add(1, std::memory_order_seq_cst);
  }

  bool any() const { return count_.load(std::memory_order_acquire) > 0; }

  std::optional<std::string> reason(int device) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = reasons_.find(device);
    if (it == reasons_.end()) return std::nullopt;
    return it->second;
  }

 private:
  mutable std::mutex mu_;
  std::map<int, std::string> reasons_;
  std::atomic<int> count_{0};
};

}  // namespace ordo::comm
