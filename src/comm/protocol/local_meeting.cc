#include "comm/protocol/local_meeting.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "comm/protocol/pacing.h"
#include "core/check.h"
#include "core/steady_clock.h"
#include "ordo/error.h"

namespace ordo::comm {
namespace {

// How many failed collectives a meeting remembers for members that come late.
constexpr size_t kFailuresKept = 16;

}  // namespace

LocalMeeting::LocalMeeting(GroupPlan plan)
    : plan_(std::move(plan)),
      leader_(plan_.me % std::max<size_t>(1, plan_.local_ranks.size())),
      present_(plan_.local_ranks.size(), false),
      calls_(plan_.local_ranks.size(), nullptr) {}

std::vector<int> LocalMeeting::missing_locked() const {
  std::vector<int> missing;
  for (size_t i = 0; i < present_.size(); ++i) {
    if (!present_[i]) missing.push_back(plan_.group[plan_.local_ranks[i]]);
  }
  return missing;
}

std::optional<device::Failure> LocalMeeting::open_locked(std::unique_lock<std::mutex>& lock, int64_t sequence) {
  // The members of the collective before are leaving it: it is finished.
  cv_.wait(lock, [&] { return sequence_ >= sequence; });
  if (sequence_ == sequence) return std::nullopt;
  auto failed = failed_.find(sequence);
  if (failed != failed_.end()) return failed->second;
  return device::Failure{ErrorCode::kCollective,
                         str_cat("collective #", sequence, " on group ", plan_.text,
                                 " failed before this device arrived, too long ago to say why")};
}

void LocalMeeting::fail_locked(int64_t sequence, const device::Failure& failure) {
  phase_ = Phase::kFinished;
  finished_.store(sequence, std::memory_order_release);
  failed_.insert_or_assign(sequence, failure);
  while (failed_.size() > kFailuresKept) failed_.erase(failed_.begin());
  cv_.notify_all();
}

void LocalMeeting::leave_locked() {
  ++left_;
  if (phase_ == Phase::kFinished && left_ == arrived_) open_next_locked();
}

void LocalMeeting::open_next_locked() {
  ++sequence_;
  phase_ = Phase::kGathering;
  arrived_ = left_ = 0;
  std::fill(present_.begin(), present_.end(), false);
  std::fill(calls_.begin(), calls_.end(), nullptr);
  cv_.notify_all();
}

std::optional<device::Failure> LocalMeeting::outcome_locked(int64_t sequence) const {
  const auto failed = failed_.find(sequence);
  if (failed != failed_.end()) return failed->second;
  return std::nullopt;
}

LocalMeeting::Arrival LocalMeeting::arrive(size_t index, int64_t sequence, const CollectiveCall* call,
                                           int64_t arrived_ns, Checks& checks) {
  std::unique_lock<std::mutex> lock(mu_);
  if (std::optional<device::Failure> late = open_locked(lock, sequence)) return {false, std::move(late), {}};
  ++arrived_;
  present_[index] = true;
  if (phase_ == Phase::kFinished) {  // failed before this member came
    std::optional<device::Failure> failure = outcome_locked(sequence);
    leave_locked();
    return {false, std::move(failure), {}};
  }
  calls_[index] = call;
  if (arrived_ == calls_.size()) {
    phase_ = Phase::kRunning;
    last_ = {call->device, arrived_ns, wall_ns_at(arrived_ns)};
    if (index == leader_) return {true, std::nullopt, last_};
    running_.store(sequence, std::memory_order_release);
    cv_.notify_all();  // the leader may be asleep
  }
  // The others usually come, and the leader finishes, within microseconds:
  // spin a little before sleeping (a wake-up costs more than a small
  // collective).
  lock.unlock();
  const std::atomic<int64_t>& awaited = index == leader_ ? running_ : finished_;
  spin_for([&] { return awaited.load(std::memory_order_acquire) >= sequence; }, std::chrono::microseconds(50),
           Backoff::oversubscribed());
  lock.lock();
  // Look at the missing members again now and then (LookAgain); the last
  // arrival wakes the leader, and the leader's finish the others. A
  // finished collective is no longer the meeting's once the leader's
  // finish opened the next.
  const auto finished = [&] { return sequence_ != sequence || phase_ == Phase::kFinished; };
  LookAgain look_again;
  while (!finished()) {
    if (phase_ == Phase::kRunning && index == leader_) return {true, std::nullopt, last_};
    if (phase_ == Phase::kGathering) {
      const std::vector<int> missing = missing_locked();
      lock.unlock();
      std::optional<device::Failure> failure = checks.check(missing, sequence);
      lock.lock();
      if (failure && phase_ == Phase::kGathering && sequence_ == sequence) {
        fail_locked(sequence, *failure);
        lock.unlock();
        checks.told(sequence, *failure);
        lock.lock();
        break;
      }
    }
    cv_.wait_until(lock, look_again.next(),
                   [&] { return finished() || (phase_ == Phase::kRunning && index == leader_); });
  }
  std::optional<device::Failure> failure = outcome_locked(sequence);
  if (sequence_ == sequence) leave_locked();  // failed while gathering: members leave one by one
  return {false, std::move(failure), {}};
}

void LocalMeeting::abandon(size_t index, int64_t sequence, const device::Failure& failure, Checks& checks) {
  std::unique_lock<std::mutex> lock(mu_);
  if (open_locked(lock, sequence)) return;  // it failed already
  ++arrived_;
  present_[index] = true;
  if (phase_ == Phase::kFinished) {
    leave_locked();
    return;
  }
  ORDO_CHECK(phase_ == Phase::kGathering);
  fail_locked(sequence, failure);
  leave_locked();
  lock.unlock();
  checks.told(sequence, failure);
}

void LocalMeeting::finish(int64_t sequence, std::optional<device::Failure> failure) {
  std::lock_guard<std::mutex> lock(mu_);
  ORDO_CHECK_EQ(sequence, sequence_);
  // No phase to set: the next collective opens below, and a waiting member
  // sees its own as finished by the meeting's number.
  if (failure) {
    fail_locked(sequence, *failure);
  } else {
    finished_.store(sequence, std::memory_order_release);
  }
  // Every member arrived (the leader led only then): the others need only
  // the outcome now, so the next collective opens without them.
  open_next_locked();
}

}  // namespace ordo::comm
