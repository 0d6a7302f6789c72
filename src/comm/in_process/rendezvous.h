// Where the participants of one in-process collective meet: keyed by
// (group, per-group sequence number), holding each participant's call.
//
// Locking: RendezvousTable::mu_ guards the table and the gone devices;
// Rendezvous::mu guards calls, joined, joined_count and failure. Order:
// table mu_ before a rendezvous mu, never the reverse. arrived, finished
// and failed are atomics, changed under mu so that waiters never miss them.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "device/device_data.h"

namespace ordo::comm {

struct Rendezvous {
  Rendezvous(std::vector<int> group, int64_t sequence)
      : group(std::move(group)),
        sequence(sequence),
        calls(this->group.size(), nullptr),
        joined(this->group.size(), false) {}

  const std::vector<int> group;
  const int64_t sequence;

  std::mutex mu;
  std::condition_variable cv;
  std::vector<const CollectiveCall*> calls;  // by rank
  std::vector<bool> joined;                  // by rank
  size_t joined_count = 0;
  device::Failure failure;
  std::atomic<size_t> arrived{0};
  std::atomic<size_t> finished{0};
  std::atomic<bool> failed{false};

  size_t size() const { return group.size(); }
  // Fails the rendezvous once (mu held); every waiter raises the failure.
  void fail_locked(ErrorCode code, std::string message);
  // The group members that have not joined (mu held), for messages.
  std::string missing_locked() const;
  // An op description from any joined call (mu held).
  std::string op_locked() const;
};

class RendezvousTable {
 public:
  // The rendezvous of (group, sequence), made on first join. Fails it at
  // once if a member is gone.
  std::shared_ptr<Rendezvous> find_or_create(const std::vector<int>& group, int64_t sequence);
  // Called by the participant whose join completed the group.
  void erase(const Rendezvous& rendezvous);
  void mark_device_failed(int device, const std::string& reason);

 private:
  // Fails rendezvous if one of its members that has not joined is gone
  // (both mutexes held).
  void fail_if_member_gone_locked(Rendezvous& rendezvous);

  std::mutex mu_;
  std::map<std::pair<std::vector<int>, int64_t>, std::shared_ptr<Rendezvous>> open_;
  std::map<int, std::string> gone_;
};

}  // namespace ordo::comm
