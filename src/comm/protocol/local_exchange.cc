#include "comm/protocol/local_exchange.h"

#include <cxxabi.h>

#include <algorithm>
#include <deque>
#include <new>
#include <utility>

#include "comm/deadlines.h"
#include "comm/exchange_rules.h"
#include "comm/protocol/pacing.h"
#include "core/interrupt.h"

namespace ordo::comm {

LocalExchange::LocalExchange(int world_size, const DeviceStatus& status)
    : world_size_(world_size),
      status_(status),
      rounds_(static_cast<size_t>(world_size)),
      waiting_in_(static_cast<size_t>(world_size), nullptr) {}

std::vector<std::string> LocalExchange::exchange(const ExchangeCall& call) {
  std::vector<int> participants = exchange_participants(call, world_size_);
  const GlobalOrdinal me = call.device;
  const auto rank = static_cast<size_t>(std::find(participants.begin(), participants.end(), me.value()) -
                                        participants.begin());
  std::unique_lock<std::mutex> lock(mu_);
  if (const Meeting* other = waiting_in_[me.slot()]) {
    throw_error<InvalidArgument>(describe_tag(call.tag), ": device ", me, " already waits in ",
                                 describe_tag(std::get<0>(*other->round)),
                                 " (on another thread): a device takes part in one rendezvous at a time");
  }
  int64_t& next = rounds_[me.slot()][{std::string(call.tag), participants}];
  const size_t size = participants.size();
  auto [it, added] = meetings_.try_emplace(Round{std::string(call.tag), std::move(participants), next++}, size);
  Meeting& meeting = it->second;
  if (added) meeting.round = &it->first;
  // Short of memory for its copy, the device still arrives, to fail the
  // round for every participant at once (they would wait the timeout).
  std::optional<device::Failure> own_failure;
  try {
    meeting.payloads[rank].assign(call.payload);
  } catch (const std::bad_alloc&) {
    own_failure = exchange_out_of_memory(call.tag, me, call.payload.size());
    if (!meeting.failure) fail_locked(meeting, {ErrorCode::kCollective, own_failure->message});
  }
  meeting.arrived[rank] = true;
  ++meeting.arrivals;
  if (meeting.given_up && !meeting.failure) {
    fail_locked(meeting, exchange_given_up(call.tag, *meeting.given_up));
  }
  cv_.notify_all();
  waiting_in_[me.slot()] = &meeting;
  const std::optional<device::Failure> failure = wait_locked(lock, meeting, me, call);
  waiting_in_[me.slot()] = nullptr;
  std::vector<std::string> payloads;
  const bool last = ++meeting.taken == size;
  if (!failure) payloads = last ? std::move(meeting.payloads) : meeting.payloads;
  if (last) {
    forget_rounds_if_level_locked(it->first);
    meetings_.erase(it);
  }
  lock.unlock();
  if (own_failure) own_failure->raise();
  if (failure) failure->raise();
  return payloads;
}

size_t LocalExchange::round_counts_held() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t held = 0;
  for (const auto& counts : rounds_) held += counts.size();
  return held;
}

bool LocalExchange::unsettled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !meetings_.empty() ||
         std::any_of(rounds_.begin(), rounds_.end(), [](const auto& counts) { return !counts.empty(); });
}

void LocalExchange::start_afresh() {
  std::lock_guard<std::mutex> lock(mu_);
  meetings_.clear();
  for (auto& counts : rounds_) counts.clear();
  std::fill(waiting_in_.begin(), waiting_in_.end(), nullptr);
}

void LocalExchange::forget_rounds_if_level_locked(const Round& done) {
  // Round counts exist to tell a tag's rounds apart. Once every participant
  // took this round and none started the next, they all start again at 0,
  // so that tags used once (f"epoch_{n}") do not pile up.
  const auto& [tag, participants, number] = done;
  const std::pair<std::string, std::vector<int>> key{tag, participants};
  for (int d : participants) {
    const auto& counts = rounds_[static_cast<size_t>(d)];
    const auto count = counts.find(key);
    if (count == counts.end() || count->second != number + 1) return;
  }
  for (int d : participants) rounds_[static_cast<size_t>(d)].erase(key);
}

std::optional<device::Failure> LocalExchange::wait_locked(std::unique_lock<std::mutex>& lock, Meeting& meeting,
                                                          GlobalOrdinal me, const ExchangeCall& call) {
  Deadlines deadlines;
  for (;;) {
    if (meeting.failure) return meeting.failure;
    if (meeting.arrivals == meeting.arrived.size()) return std::nullopt;
    if (std::optional<device::Failure> failure = failure_seen_locked(meeting, me)) {
      fail_locked(meeting, std::move(*failure));
      cv_.notify_all();
      return meeting.failure;
    }
    if (const std::vector<int> cycle = wait_cycle_locked(me); !cycle.empty()) {
      // Every round of the cycle fails: once me left, the others' waits
      // would form no cycle any more.
      const device::Failure mismatch{ErrorCode::kCollectiveMismatch, mismatch_message_locked(cycle)};
      for (int d : cycle) {
        Meeting& theirs = *waiting_in_[static_cast<size_t>(d)];
        if (!theirs.failure) fail_locked(theirs, mismatch);
      }
      cv_.notify_all();
      return meeting.failure;
    }
    if (deadlines.warning_due()) {
      const std::string message = slow_wait_warning(me, deadlines.warn_seconds(), describe_tag(call.tag),
                                                    describe_group(missing_of(meeting)));
      lock.unlock();
      try {
        call.warn ? call.warn(warning_line(message)) : report_warning(message);
      } catch (abi::__forced_unwind&) {  // the thread is ending (pthread_exit): let it
        throw;
      } catch (...) {
        // A warning that could not be given changes nothing of the wait.
      }
      lock.lock();
      continue;  // things may have changed meanwhile
    }
    if (deadlines.timed_out()) {
      // Each waiter times out on its own and says how long it waited; the
      // round can no longer complete, so whoever arrives next fails it.
      device::Failure timeout = exchange_timeout(me, deadlines.timeout_seconds(), call.tag, missing_of(meeting));
      if (!meeting.given_up) meeting.given_up = timeout.message;
      drop_payloads(meeting);
      return timeout;
    }
    block_until(cv_, lock, deadlines.next());
  }
}

std::optional<device::Failure> LocalExchange::failure_seen_locked(const Meeting& meeting, GlobalOrdinal me) const {
  const std::string& tag = std::get<0>(*meeting.round);
  if (interrupted()) {
    const std::string& cause = interrupt_cause();
    return exchange_interrupted(tag, me, cause.empty() ? "" : str_cat(" by ", cause, " while it waited"));
  }
  if (status_.any_interrupted()) {
    if (std::optional<std::string> reason = status_.interrupt_reason(me)) {
      return exchange_interrupted(tag, me, ": " + *reason);
    }
  }
  if (status_.any_gone()) {
    for (int d : missing_of(meeting)) {
      if (std::optional<std::string> reason = status_.gone_reason(GlobalOrdinal(d))) {
        return exchange_peer_gone(tag, GlobalOrdinal(d), *reason);
      }
    }
  }
  return std::nullopt;
}

std::vector<int> LocalExchange::wait_cycle_locked(GlobalOrdinal me) const {
  // Breadth first over the devices that wait, each for the participants
  // missing from its meeting; came_from leads back to me.
  std::vector<int> came_from(static_cast<size_t>(world_size_), -1);
  std::deque<int> frontier{me.value()};
  while (!frontier.empty()) {
    const int waiter = frontier.front();
    frontier.pop_front();
    for (int d : missing_of(*waiting_in_[static_cast<size_t>(waiter)])) {
      if (d == me.value()) {
        std::vector<int> cycle{waiter};
        while (cycle.back() != me.value()) cycle.push_back(came_from[static_cast<size_t>(cycle.back())]);
        return {cycle.rbegin(), cycle.rend()};
      }
      if (waiting_in_[static_cast<size_t>(d)] == nullptr || came_from[static_cast<size_t>(d)] != -1) continue;
      came_from[static_cast<size_t>(d)] = waiter;
      frontier.push_back(d);
    }
  }
  return {};
}

std::string LocalExchange::mismatch_message_locked(const std::vector<int>& cycle) const {
  std::string message = str_cat("rendezvous mismatch: device ", cycle[0]);
  for (size_t i = 0; i < cycle.size(); ++i) {
    const auto& [tag, participants, number] = *waiting_in_[static_cast<size_t>(cycle[i])]->round;
    message += str_cat(i == 0 ? " waits in " : ", which waits in ", describe_tag(tag), " (round ", number,
                       " of devices ", describe_group(participants), ") for device ",
                       cycle[(i + 1) % cycle.size()]);
  }
  return message + ": they can never meet";
}

std::vector<int> LocalExchange::missing_of(const Meeting& meeting) {
  const std::vector<int>& participants = std::get<1>(*meeting.round);
  std::vector<int> missing;
  for (size_t rank = 0; rank < participants.size(); ++rank) {
    if (!meeting.arrived[rank]) missing.push_back(participants[rank]);
  }
  return missing;
}

void LocalExchange::fail_locked(Meeting& meeting, device::Failure failure) {
  meeting.failure = std::move(failure);
  drop_payloads(meeting);
}

void LocalExchange::drop_payloads(Meeting& meeting) {
  // Nobody reads the payloads of a round that cannot complete.
  for (std::string& payload : meeting.payloads) std::string().swap(payload);
}

void LocalExchange::wake() {
  std::lock_guard<std::mutex> lock(mu_);
  cv_.notify_all();
}

void LocalExchange::interrupt(GlobalOrdinal device, const std::string& reason) {
  if (device.value() < 0 || device.value() >= world_size_) return;  // a device that cannot wait here
  std::lock_guard<std::mutex> lock(mu_);
  Meeting* meeting = waiting_in_[device.slot()];
  if (meeting != nullptr && !meeting->failure) {
    fail_locked(*meeting, exchange_interrupted(std::get<0>(*meeting->round), device, ": " + reason));
  }
  cv_.notify_all();
}

}  // namespace ordo::comm
