#include "comm/protocol/exchange_round.h"

#include <cxxabi.h>

#include <algorithm>
#include <new>

#include "comm/exchange_rules.h"
#include "core/interrupt.h"

namespace ordo::comm {
namespace {

// A cycle through another process's device must hold this long (exchange.h).
constexpr auto kCycleHold = std::chrono::milliseconds(50);

// Why a device could not send its payload, for every participant: short of
// memory (an OutOfMemoryError, not a bare std::bad_alloc), or an error of
// ordo's (MPI's, say). Called in a catch block of either.
device::Failure sending_failure(std::string_view tag, GlobalOrdinal device, size_t bytes) {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return exchange_out_of_memory(tag, device, bytes);
  } catch (const Error& e) {
    return {e.code(), str_cat(describe_tag(tag), ": device ", device, " could not send its payload of ", bytes,
                              " bytes: ", e.what())};
  }
}

}  // namespace

Exchange::Round::Round(Exchange& owner, const ExchangeCall& call, ExchangeRound round)
    : owner_(owner),
      call_(call),
      me_(call.device),
      index_(owner.index_of(call.device.value())),
      round_(std::move(round)),
      spans_processes_(!owner.all_local(round_.participants)),
      payloads_(round_.participants.size()),
      have_(round_.participants.size(), false),
      missing_(round_.participants.size() - 1),
      gone_grace_(spans_processes_ ? owner.post_->gone_grace() : kGoneGrace) {
  have_[rank_of(me_.value())] = true;  // its payload is kept by send_payload, before anyone reads it
  std::lock_guard<std::mutex> lock(owner_.mu_);
  if (const Round* other = owner_.waiting_in_[index_]) {
    throw_error<InvalidArgument>(describe_tag(call.tag), ": device ", me_, " already waits in ",
                                 describe_tag(other->round_.tag),
                                 " (on another thread): a device takes part in one rendezvous at a time");
  }
  round_.number = owner_.take_number_locked(index_, key_of(round_));
  owner_.waiting_in_[index_] = this;
  read_inbox_locked();
}

Exchange::Round::~Round() {
  if (left_) return;
  std::lock_guard<std::mutex> lock(owner_.mu_);
  owner_.waiting_in_[index_] = nullptr;
}

void Exchange::Round::leave_complete_locked() {
  owner_.waiting_in_[index_] = nullptr;
  owner_.forget_if_level_locked(round_);
  left_ = true;
}

size_t Exchange::Round::rank_of(int device) const {
  const std::vector<int>& participants = round_.participants;
  return static_cast<size_t>(std::find(participants.begin(), participants.end(), device) - participants.begin());
}

std::vector<int> Exchange::Round::missing_locked() const {
  std::vector<int> missing;
  for (size_t rank = 0; rank < have_.size(); ++rank) {
    if (!have_[rank]) missing.push_back(round_.participants[rank]);
  }
  return missing;
}

void Exchange::Round::fail_locked(device::Failure failure, std::optional<ExchangeRound> other) {
  failure_ = std::move(failure);
  if (!other) return;
  other_ = std::move(other);
  owner_.pass_locked(index_, *other_);
}

void Exchange::Round::send_payload() {
  const int me = me_.value();
  try {
    payloads_[rank_of(me)].assign(call_.payload);
    std::vector<ExchangeNote> here;
    std::vector<int> elsewhere;  // participants of other processes
    for (const int e : round_.participants) {
      if (e == me) continue;
      if (!owner_.topology_.is_local(GlobalOrdinal(e))) {
        elsewhere.push_back(e);
        continue;
      }
      ExchangeNote& note = here.emplace_back(ExchangeNote::payload(me, e, round_));
      note.body.assign(call_.payload);
    }
    owner_.deliver(std::move(here));
    if (!elsewhere.empty()) owner_.post_->send_payload(ExchangeNote::payload(me, me, round_), elsewhere, call_.payload);
  } catch (const std::bad_alloc&) {
    give_up(sending_failure(call_.tag, me_, call_.payload.size()));
  } catch (const Error&) {
    give_up(sending_failure(call_.tag, me_, call_.payload.size()));
  }
}

void Exchange::Round::read_inbox_locked() {
  Inbox& inbox = owner_.inboxes_[index_];
  // Leftovers of rounds this device is past.
  inbox.erase(std::remove_if(inbox.begin(), inbox.end(),
                             [&](const ExchangeNote& note) {
                               const int64_t next = note.round.same_key(round_)
                                                        ? round_.number
                                                        : owner_.next_number_locked(index_, key_of(note.round));
                               return note.round.number < next;
                             }),
              inbox.end());
  read_mismatch_notes_locked(inbox);
  take_round_notes_locked(inbox);
}

void Exchange::Round::read_mismatch_notes_locked(Inbox& inbox) {
  // Both rounds of a mismatch are doomed: one that is this round fails it,
  // and this device passes the others.
  for (auto it = inbox.begin(); it != inbox.end();) {
    if (it->kind != ExchangeNote::Kind::kMismatch) {
      ++it;
      continue;
    }
    const ExchangeNote note = *it;
    const size_t before = inbox.size();
    if (!failure_ && note.names(round_)) {
      fail_locked({ErrorCode::kCollectiveMismatch, note.body}, note.round == round_ ? note.other : note.round);
    }
    owner_.pass_locked(index_, note.round);
    if (note.other.number >= 0) owner_.pass_locked(index_, note.other);
    // Passing may erase anywhere: look again from the front. A note it
    // left in place (one of a round of this device's own key) is stepped
    // over, or the loop would find it again for ever.
    it = inbox.size() == before ? std::next(it) : inbox.begin();
  }
}

void Exchange::Round::take_round_notes_locked(Inbox& inbox) {
  for (auto it = inbox.begin(); it != inbox.end();) {
    if (!(it->round == round_)) {
      ++it;
      continue;
    }
    if (it->kind == ExchangeNote::Kind::kGivenUp && it->code == ErrorCode::kCollectiveTimeout) {
      // Given up before this device came: the round can no longer complete.
      if (!failure_) fail_locked(exchange_given_up(round_.tag, it->body));
    } else {
      take_locked(*it);
    }
    it = inbox.erase(it);
  }
}

bool Exchange::Round::take_locked(ExchangeNote& note) {
  if (!note.names(round_)) return false;
  if (note.kind == ExchangeNote::Kind::kPayload) {
    const size_t rank = rank_of(note.sender);
    if (rank < have_.size() && !have_[rank]) {
      payloads_[rank] = std::move(note.body);
      have_[rank] = true;
      --missing_;
    }
  } else if (failure_) {
    // Failed already: the first reason stands.
  } else if (note.kind == ExchangeNote::Kind::kMismatch) {
    fail_locked({ErrorCode::kCollectiveMismatch, note.body}, note.round == round_ ? note.other : note.round);
  } else if (note.code != ErrorCode::kCollectiveTimeout) {
    fail_locked({note.code, note.body});
  }
  // A timeout given up while this device waits: it times out on its own.
  return true;
}

std::optional<device::Failure> Exchange::Round::settle_locked() {
  if (failure_) return failure_;
  if (complete_locked()) return std::nullopt;
  if (std::optional<device::Failure> failure = interruption()) return failure;
  if (std::optional<device::Failure> failure = gone_participant()) return failure;
  const std::optional<WaitCycle> cycle = owner_.wait_cycle_locked(me_.value());
  if (!cycle) {
    cycle_since_.reset();
    return std::nullopt;
  }
  if (!cycle->local) {
    const PaceClock::time_point now = PaceClock::now();
    if (!cycle_since_) cycle_since_ = now;
    if (now - *cycle_since_ < kCycleHold) return std::nullopt;
  }
  owner_.fail_cycle_locked(*cycle);
  return failure_;
}

void Exchange::Round::wait() {
  Backoff backoff;
  for (;;) {
    if (spans_processes_) owner_.post_->collect();
    std::unique_lock<std::mutex> lock(owner_.mu_);
    std::optional<device::Failure> failure = settle_locked();
    if (!failure && complete_locked()) return leave_complete_locked();
    if (!failure && deadlines_.timed_out()) {
      failure = exchange_timeout(me_, deadlines_.timeout_seconds(), call_.tag, missing_locked());
    }
    if (failure) {
      lock.unlock();
      give_up(std::move(*failure));
    }
    if (deadlines_.warning_due()) {
      const std::string missing = describe_group(missing_locked());
      lock.unlock();
      warn(missing);
      continue;  // things may have changed meanwhile
    }
    pause(lock, backoff);
  }
}

void Exchange::Round::pause(std::unique_lock<std::mutex>& lock, Backoff& backoff) {
  if (!spans_processes_) {
    // Woken by every note and every news of a device; a cycle through
    // another process's device is looked at again when it has held.
    PaceClock::time_point until = deadlines_.next();
    if (cycle_since_) until = std::min(until, *cycle_since_ + kCycleHold);
    block_until(owner_.cv_, lock, until);
    return;
  }
  lock.unlock();
  if (has_interrupt_check()) poll_interrupt();
  owner_.post_->idle();
  backoff.pause();
}

std::optional<device::Failure> Exchange::Round::interruption() const {
  if (interrupted()) {
    const std::string& cause = interrupt_cause();
    return exchange_interrupted(call_.tag, me_, cause.empty() ? "" : str_cat(" by ", cause, " while it waited"));
  }
  if (owner_.status_.any_interrupted()) {
    if (std::optional<std::string> reason = owner_.status_.interrupt_reason(me_)) {
      return exchange_interrupted(call_.tag, me_, ": " + *reason);
    }
  }
  return std::nullopt;
}

std::optional<device::Failure> Exchange::Round::gone_participant() {
  // News of another process's devices comes beside their notes: a device
  // that was absent and is driven again may send before its return is
  // heard of, so a gone participant of another process fails the round
  // only if it stays gone for the grace.
  if (!owner_.status_.any_gone()) return std::nullopt;
  bool any_gone = false;
  for (const int member : missing_locked()) {
    const GlobalOrdinal d(member);
    std::optional<std::string> reason = owner_.status_.gone_reason(d);
    if (!reason) continue;
    any_gone = true;
    if (owner_.topology_.is_local(d) || gone_grace_.over(PaceClock::now())) {
      return exchange_peer_gone(call_.tag, d, *reason);
    }
  }
  if (!any_gone) gone_grace_.reset();
  return std::nullopt;
}

void Exchange::Round::warn(const std::string& missing) {
  const std::string message = slow_wait_warning(me_, deadlines_.warn_seconds(), describe_tag(call_.tag), missing);
  try {
    call_.warn ? call_.warn(warning_line(message)) : report_warning(message);
  } catch (abi::__forced_unwind&) {  // the thread is ending (pthread_exit): let it
    throw;
  } catch (...) {
    // A warning that could not be given changes nothing of the wait.
  }
}

void Exchange::Round::give_up(device::Failure failure) {
  const int me = me_.value();  // notes carry ordinals as data
  ExchangeNote note = ExchangeNote::payload(me, me, round_);
  note.kind = ExchangeNote::Kind::kGivenUp;
  note.body = failure.message;
  // The others fail as a collective: the memory or the argument that
  // failed was this device's, not theirs.
  const bool shared = failure.code == ErrorCode::kCollectiveMismatch || failure.code == ErrorCode::kCollectiveTimeout;
  note.code = shared ? failure.code : ErrorCode::kCollective;
  if (failure.code == ErrorCode::kCollectiveMismatch) {
    std::lock_guard<std::mutex> lock(owner_.mu_);
    if (other_) {
      note.kind = ExchangeNote::Kind::kMismatch;
      note.other = *other_;
    }
  }
  owner_.tell(note);
  failure.raise();
}

}  // namespace ordo::comm
