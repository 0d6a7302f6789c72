// The exchange (Communicator::exchange, a rendezvous) among participants
// that are all threads of this process, so they meet in memory: the whole
// exchange in-process, and an MPI process's rounds whose participants are
// all its own. Each leaves a copy of its payload in the round's meeting and
// waits until every participant has; each then copies every payload out.
// It is host-side and rare (a barrier, a mesh_reduce), so one mutex and
// one condition variable serve every meeting.
//
//   LocalExchange exchange(world, gone, interrupted);
//   std::vector<std::string> all = exchange.exchange({device, "step", {}, bytes});
//
// A round is (tag, participants, number); each device counts its rounds
// per tag and participant set. Devices that wait for each other in
// different rounds (a cycle of waits: device 0 in 'a' for device 1, device
// 1 in 'b' for device 0) can never meet: whoever waits finds the cycle and
// fails its round with CollectiveMismatchError. A waiter times out on its
// own (each says how long it waited); a round one of its participants
// gave up on can no longer complete, so the next arrival fails it.
//
// Locking: mu_ guards meetings_, rounds_ and waiting_in_; cv_ is notified
// on every change of them and whenever a device is declared gone, absent
// or interrupted. DeviceStatus is taken after mu_,
// never before; no other lock of the communicator is taken with it held,
// nor is the caller's warning called with it held.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "comm/communicator.h"
#include "comm/device_status.h"
#include "device/device_data.h"

namespace ordo::comm {

class LocalExchange {
 public:
  LocalExchange(int world_size, const DeviceStatus& status);

  std::vector<std::string> exchange(const ExchangeCall& call);
  // A device was declared gone or absent: waiters look again.
  void wake();
  // The round device waits in, if any, fails now for every participant
  // (its later rounds fail while DeviceStatus holds the interrupt).
  void interrupt(GlobalOrdinal device, const std::string& reason);
  // How many (device, tag, participants) round counts are held: only those
  // of tags whose participants are not level (tests check that tags used
  // once do not pile up).
  size_t round_counts_held() const;
  // Whether a round is held (a meeting not every participant left, or
  // participants not level in a tag's rounds): what a failure leaves.
  bool unsettled() const;
  // Every device starts again at round 0 of every tag, with no meeting
  // left. Only while no device waits in an exchange.
  void start_afresh();

 private:
  using Round = std::tuple<std::string, std::vector<int>, int64_t>;  // tag, participants, number
  struct Meeting {
    explicit Meeting(size_t size) : payloads(size), arrived(size, false) {}
    const Round* round = nullptr;       // its key in meetings_
    std::vector<std::string> payloads;  // by rank (position among the participants)
    std::vector<bool> arrived;          // by rank
    size_t arrivals = 0;
    size_t taken = 0;  // participants that left; the last one erases it
    // Why it can never complete; every participant fails with it.
    std::optional<device::Failure> failure;
    // A participant timed out in it: it can never complete either.
    std::optional<std::string> given_up;
  };

  // Until meeting completes (nullopt) or fails for device me (why).
  std::optional<device::Failure> wait_locked(std::unique_lock<std::mutex>& lock, Meeting& meeting, GlobalOrdinal me,
                                             const ExchangeCall& call);
  // Why meeting cannot complete, as me sees it now, if it cannot: me is
  // interrupted, or a participant that has not arrived is gone.
  std::optional<device::Failure> failure_seen_locked(const Meeting& meeting, GlobalOrdinal me) const;
  // A cycle of waits from me back to me: devices me, d1, ..., dk where
  // each waits for the next and dk waits for me. Empty if there is none.
  std::vector<int> wait_cycle_locked(GlobalOrdinal me) const;
  std::string mismatch_message_locked(const std::vector<int>& cycle) const;
  static std::vector<int> missing_of(const Meeting& meeting);
  static void fail_locked(Meeting& meeting, device::Failure failure);
  static void drop_payloads(Meeting& meeting);
  // After the last participant took `done`: forgets its tag's round counts
  // if every participant is level at the next round.
  void forget_rounds_if_level_locked(const Round& done);

  const int world_size_;
  const DeviceStatus& status_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<Round, Meeting> meetings_;
  // By device: the number of its next round of each tag and participant set.
  std::vector<std::map<std::pair<std::string, std::vector<int>>, int64_t>> rounds_;
  std::vector<Meeting*> waiting_in_;  // by device: the meeting it waits in, or null
};

}  // namespace ordo::comm
