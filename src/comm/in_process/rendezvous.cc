#include "comm/in_process/rendezvous.h"

#include <sstream>

namespace ordo::comm {

void Rendezvous::fail_locked(ErrorCode code, std::string message) {
  if (failed.load(std::memory_order_relaxed)) return;
  failure = {code, std::move(message)};
  failed.store(true, std::memory_order_release);
  cv.notify_all();
}

std::string Rendezvous::missing_locked() const {
  std::ostringstream out;
  const char* separator = "";
  for (size_t rank = 0; rank < size(); ++rank) {
    if (!joined[rank]) {
      out << separator << group[rank];
      separator = ", ";
    }
  }
  return out.str();
}

std::string Rendezvous::op_locked() const {
  for (const CollectiveCall* call : calls) {
    if (call != nullptr) return describe(*call);
  }
  return "a collective";
}

std::shared_ptr<Rendezvous> RendezvousTable::find_or_create(const std::vector<int>& group,
                                                            int64_t sequence) {
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<Rendezvous>& entry = open_[{group, sequence}];
  if (!entry) entry = std::make_shared<Rendezvous>(group, sequence);
  if (!gone_.empty()) {
    std::lock_guard<std::mutex> rendezvous_lock(entry->mu);
    fail_if_member_gone_locked(*entry);
  }
  return entry;
}

void RendezvousTable::erase(const Rendezvous& rendezvous) {
  std::lock_guard<std::mutex> lock(mu_);
  open_.erase({rendezvous.group, rendezvous.sequence});
}

void RendezvousTable::mark_device_failed(int device, const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  gone_.emplace(device, reason);
  for (auto& [key, rendezvous] : open_) {
    std::lock_guard<std::mutex> rendezvous_lock(rendezvous->mu);
    fail_if_member_gone_locked(*rendezvous);
  }
}

void RendezvousTable::fail_if_member_gone_locked(Rendezvous& rendezvous) {
  if (rendezvous.failed.load(std::memory_order_relaxed)) return;
  for (size_t rank = 0; rank < rendezvous.size(); ++rank) {
    auto gone = gone_.find(rendezvous.group[rank]);
    if (gone == gone_.end() || rendezvous.joined[rank]) continue;
    rendezvous.fail_locked(
        ErrorCode::kCollective,
        str_cat(rendezvous.op_locked(), " #", rendezvous.sequence, " on group ",
                describe_group(rendezvous.group), " cannot complete: device ", gone->first,
                " is gone (", gone->second, ")"));
    return;
  }
}

}  // namespace ordo::comm
