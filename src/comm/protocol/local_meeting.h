// Where the members of a cross-process group that live in this process
// meet, before one of them (the leader) runs the collective with the other
// processes for all of them, once every one has come. The others wait for
// the leader's outcome; nobody but the leader calls the transport for the group.
//
// The leader is local member (position of the process in the group) mod
// (local members): fixed, and a different one in neighbouring processes.
// The last to arrive would save the leader's wake-up when it comes first,
// but with more device threads than CPUs (2 processes x 2 devices on 2
// CPUs, devices pinned 0, 1 / 0, 1) both processes' leaders then sat on
// one CPU in about half the collectives and took turns on it: a 1 KiB
// all_reduce took 130 us against MPI's 13.
//
//   Arrival a = meeting.arrive(index, sequence, &call, checks);
//   if (a.leader) { ... run with meeting.calls() ...; meeting.finish(sequence, failure); }
//   else if (a.failure) a.failure->raise();
//
// Every local member passes through the group's collectives 0, 1, 2, ...
// in order (its program's order); the meeting holds one at a time. The
// leader's finish opens the next at once: every member has arrived by
// then, and a waiting member needs nothing of the meeting but the
// outcome, kept apart (a success is a finished number with no failure
// kept for it). Waiting for each member to come back and leave made the
// leader's next arrival wait for a member that was not on a CPU (2 x 2 on
// 2 CPUs: a fifth of the context switches). A collective that fails
// before every member arrived opens the next once every member that
// arrived has left, and fails for the late ones too (the failures of the
// last few are kept).
//
// Locking: mu_ guards everything but finished_ and running_ (atomic
// copies of the last collective finished and the last one every member
// came to, for waiters that spin); the leader reads calls() without it
// (nobody writes them while it runs). Taken before the transport's lock, never
// while another meeting's is held.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/protocol/group_plan.h"
#include "device/device_data.h"

namespace ordo::comm {

class LocalMeeting {
 public:
  explicit LocalMeeting(GroupPlan plan);

  const GroupPlan& plan() const { return plan_; }

  // When the last local member came, and which (its clocks: steady for
  // this process, the system's for other hosts), for the leader.
  struct LastArrival {
    GlobalOrdinal device{-1};
    int64_t steady_ns = 0;
    int64_t wall_ns = 0;
  };
  struct Arrival {
    bool leader = false;
    std::optional<device::Failure> failure;  // for a member that is not the leader
    LastArrival last;                        // for the leader
  };
  // What a member that waits for the others checks now and then (with no
  // lock held); missing: the local devices not arrived yet. A failure ends
  // the collective for every local member, and `told` is called once with
  // it so that the other processes hear of it.
  // Made on the caller's stack for each arrival: nothing is allocated on
  // the path of a collective.
  class Checks {
   public:
    virtual std::optional<device::Failure> check(const std::vector<int>& missing, int64_t sequence) = 0;
    virtual void told(int64_t sequence, const device::Failure& failure) = 0;

   protected:
    ~Checks() = default;
  };
  // Member `index` (its position among the local members) arrives at its
  // collective #sequence with call, at arrived_ns on the steady clock.
  Arrival arrive(size_t index, int64_t sequence, const CollectiveCall* call, int64_t arrived_ns, Checks& checks);
  // Member `index` will not run #sequence: the collective fails with
  // failure for every local member (and told), without waiting.
  void abandon(size_t index, int64_t sequence, const device::Failure& failure, Checks& checks);
  // The leader's calls, by local member.
  const std::vector<const CollectiveCall*>& calls() const { return calls_; }
  // The leader is done: wakes the others with the outcome.
  void finish(int64_t sequence, std::optional<device::Failure> failure);

 private:
  enum class Phase { kGathering, kRunning, kFinished };

  // Waits until the meeting holds #sequence (mu_ held).
  std::optional<device::Failure> open_locked(std::unique_lock<std::mutex>& lock, int64_t sequence);
  std::vector<int> missing_locked() const;
  void fail_locked(int64_t sequence, const device::Failure& failure);
  // A member leaves #sequence (mu_ held) after a failure while gathering:
  // the last one opens the next.
  void leave_locked();
  // The meeting holds the next collective (mu_ held).
  void open_next_locked();
  // How #sequence, finished, ended for its members (mu_ held).
  std::optional<device::Failure> outcome_locked(int64_t sequence) const;

  const GroupPlan plan_;
  const size_t leader_;  // the local member that leads
  std::mutex mu_;
  std::condition_variable cv_;
  int64_t sequence_ = 0;  // the collective the meeting holds
  Phase phase_ = Phase::kGathering;
  size_t arrived_ = 0, left_ = 0;
  std::vector<bool> present_;                 // by local member
  std::vector<const CollectiveCall*> calls_;  // by local member
  LastArrival last_;  // of the collective running
  std::map<int64_t, device::Failure> failed_;  // the last few failed collectives
  std::atomic<int64_t> finished_{-1};
  std::atomic<int64_t> running_{-1};
};

}  // namespace ordo::comm
