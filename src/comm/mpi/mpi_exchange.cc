#include "comm/mpi/mpi_exchange.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "comm/deadlines.h"
#include "comm/exchange_rules.h"
#include "comm/mpi/wire.h"
#include "core/interrupt.h"

namespace ordo::comm {
namespace {

constexpr uint32_t kNoteMagic = 0x6f726478;  // "ordx"
constexpr size_t kRoundsKept = 4096;
// How long a participant of another process must stay gone to fail a round.
constexpr auto kGoneGrace = std::chrono::milliseconds(1000);

}  // namespace

MpiExchange::MpiExchange(const MpiWorld& world, MpiLink& link, const GoneDevices& gone,
                         const InterruptedDevices& interrupted, ProgressBoard& board)
    : world_(world),
      link_(link),
      gone_(gone),
      interrupted_(interrupted),
      board_(board),
      inboxes_(static_cast<size_t>(world.topology().local_devices())),
      waiting_in_(inboxes_.size()),
      rounds_(inboxes_.size()) {}

int64_t MpiExchange::round_locked(size_t index, const Key& key) const {
  const auto& next = rounds_[index].next;
  auto it = next.find(key);
  return it == next.end() ? 0 : it->second.first;
}

void MpiExchange::pass_round_locked(size_t index, const Key& key, int64_t round) {
  Rounds& rounds = rounds_[index];
  auto& [next, used] = rounds.next[key];
  used = ++rounds.uses;
  next = std::max(next, round + 1);
}

int64_t MpiExchange::take_round_locked(size_t index, const Key& key) {
  Rounds& rounds = rounds_[index];
  auto& [next, used] = rounds.next[key];
  used = ++rounds.uses;
  const int64_t round = next++;
  // Round counts only tell a tag's rounds apart: a key unused for long
  // (tags used once, like f"epoch_{n}") is forgotten, not kept forever.
  if (rounds.next.size() > kRoundsKept) {
    auto oldest = rounds.next.begin();
    for (auto it = rounds.next.begin(); it != rounds.next.end(); ++it) {
      if (it->second.second < oldest->second.second) oldest = it;
    }
    rounds.next.erase(oldest);
  }
  return round;
}

std::string MpiExchange::encode(const Note& note) {
  std::string out;
  put_word(out, kNoteMagic);
  put_word(out, static_cast<uint64_t>(note.kind));
  put_word(out, static_cast<uint64_t>(note.sender));
  put_word(out, static_cast<uint64_t>(note.receiver));
  put_word(out, static_cast<uint64_t>(note.round));
  put_bytes(out, note.tag);
  put_word(out, note.participants.size());
  for (int d : note.participants) put_word(out, static_cast<uint64_t>(d));
  put_bytes(out, note.body);
  put_bytes(out, note.other_tag);
  put_word(out, note.other_participants.size());
  for (int d : note.other_participants) put_word(out, static_cast<uint64_t>(d));
  put_word(out, static_cast<uint64_t>(note.other_round));
  put_word(out, static_cast<uint64_t>(note.code));
  return out;
}

MpiExchange::Note MpiExchange::decode(const std::string& bytes, int source) const {
  WireReader in(bytes, "rendezvous", world_.describe_process(source));
  if (in.word() != kNoteMagic) in.malformed("no header");
  Note note;
  const uint64_t kind = in.word();
  if (kind > 2) in.malformed("an unknown kind");
  note.kind = static_cast<Note::Kind>(kind);
  note.sender = static_cast<int>(in.word());
  note.receiver = static_cast<int>(in.word());
  note.round = static_cast<int64_t>(in.word());
  note.tag = in.bytes();
  const uint64_t n = in.count();
  for (uint64_t i = 0; i < n; ++i) note.participants.push_back(static_cast<int>(in.word()));
  note.body = in.bytes();
  note.other_tag = in.bytes();
  const uint64_t others = in.count();
  for (uint64_t i = 0; i < others; ++i) note.other_participants.push_back(static_cast<int>(in.word()));
  note.other_round = static_cast<int64_t>(in.word());
  note.code = static_cast<ErrorCode>(in.word());
  if (!world_.topology().is_local(note.receiver)) {
    throw_error<CollectiveError>("a rendezvous message from ", world_.describe_process(source), " is for device ",
                                 note.receiver, ", which this process does not drive");
  }
  return note;
}

void MpiExchange::deliver(Note note) {
  std::lock_guard<std::mutex> lock(mu_);
  inboxes_[static_cast<size_t>(*world_.topology().index_of(note.receiver))].push_back(std::move(note));
}

void MpiExchange::pump() {
  int source = 0;
  while (std::optional<std::string> bytes = link_.try_take(MPI_ANY_SOURCE, kExchangeTag, &source)) {
    deliver(decode(*bytes, source));
  }
}

void MpiExchange::tell(const Note& note) {
  for (int e : note.participants) {
    if (e == note.sender) continue;
    Note copy = note;
    copy.receiver = e;
    if (world_.topology().is_local(e)) {
      deliver(std::move(copy));
    } else {
      link_.send_owned(encode(copy), world_.topology().place(e).process, kExchangeTag);
    }
  }
}

std::vector<std::string> MpiExchange::exchange(const ExchangeCall& call, std::vector<int> participants) {
  const int me = call.device;
  const auto index = static_cast<size_t>(*world_.topology().index_of(me));
  const Key key{std::string(call.tag), participants};
  int64_t round = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (const std::optional<std::string>& other = waiting_in_[index]) {
      throw_error<InvalidArgument>(describe_tag(call.tag), ": device ", me, " already waits in ", describe_tag(*other),
                                   " (on another thread): a device takes part in one rendezvous at a time");
    }
    waiting_in_[index] = std::string(call.tag);
    round = take_round_locked(index, key);
  }
  struct NotWaiting {
    MpiExchange& self;
    size_t index;
    ~NotWaiting() {
      std::lock_guard<std::mutex> lock(self.mu_);
      self.waiting_in_[index].reset();
    }
  } not_waiting{*this, index};

  for (int e : participants) {
    if (e == me) continue;
    Note note{Note::Kind::kPayload, me, e, round, key.first, participants, std::string(call.payload), {}, {}, -1,
              ErrorCode::kCollectiveTimeout};
    if (world_.topology().is_local(e)) {
      deliver(std::move(note));
    } else {
      link_.send_owned(encode(note), world_.topology().place(e).process, kExchangeTag);
    }
  }
  const auto rank_of = [&](int d) {
    return static_cast<size_t>(std::find(participants.begin(), participants.end(), d) - participants.begin());
  };
  std::vector<std::string> payloads(participants.size());
  std::vector<bool> have(participants.size(), false);
  payloads[rank_of(me)] = std::string(call.payload);
  have[rank_of(me)] = true;
  auto missing = [&] {
    std::vector<int> out;
    for (size_t r = 0; r < participants.size(); ++r) {
      if (!have[r]) out.push_back(participants[r]);
    }
    return out;
  };
  // The other round of a mismatch, once found.
  std::optional<Note> other;
  auto give_up = [&](device::Failure failure) -> std::vector<std::string> {
    Note note{Note::Kind::kGivenUp, me, me, round, key.first, participants, failure.message, {}, {}, -1, failure.code};
    if (failure.code == ErrorCode::kCollectiveMismatch && other) {
      note.kind = Note::Kind::kMismatch;
      note.other_tag = other->tag;
      note.other_participants = other->participants;
      note.other_round = other->round;
    }
    tell(note);
    failure.raise();
  };
  // A participant this device waits for that waits in another rendezvous
  // this device has not done: each waits for the other.
  auto cycle = [&](const Note& theirs, int64_t their_round) {
    return device::Failure{
        ErrorCode::kCollectiveMismatch,
        str_cat("rendezvous mismatch: device ", me, " waits in ", describe_tag(call.tag), " (round ", round,
                " of devices ", describe_group(participants), ") for device ", theirs.sender, " on ",
                world_.describe_process(world_.topology().place(theirs.sender).process), ", which waits in ",
                describe_tag(theirs.tag), " (round ", their_round, " of devices ", describe_group(theirs.participants),
                ") for device ", me, ": they can never meet")};
  };
  Deadlines deadlines;
  Backoff backoff;
  // Since when a participant this device waits for has waited in another
  // rendezvous, as far as its messages show.
  bool cycle_seen = false;
  std::chrono::steady_clock::time_point cycle_since;
  bool first_look = true;  // what came before this device did
  bool gone_seen = false;  // since gone_since, a participant waited for is gone
  std::chrono::steady_clock::time_point gone_since;
  while (std::count(have.begin(), have.end(), false) > 0) {
    pump();
    std::optional<device::Failure> failure;
    {
      std::lock_guard<std::mutex> lock(mu_);
      std::deque<Note>& inbox = inboxes_[index];
      auto erase_round = [&](const std::string& tag, const std::vector<int>& of, int64_t r) {
        for (auto it = inbox.begin(); it != inbox.end();) {
          const bool same = it->round == r && it->tag == tag && it->participants == of;
          it = same ? inbox.erase(it) : std::next(it);
        }
      };
      // Both rounds of a mismatch are doomed: this device is past them, so
      // that what is left of them, now and to come, is dropped here.
      auto pass = [&](const std::string& tag, const std::vector<int>& of, int64_t r) {
        if (tag == key.first && of == key.second) return;  // this round: taken already
        pass_round_locked(index, {tag, of}, r);
        erase_round(tag, of, r);
      };
      // Leftovers of rounds this device is past go first.
      for (auto it = inbox.begin(); it != inbox.end();) {
        const bool mine = it->tag == key.first && it->participants == key.second;
        if (it->round < (mine ? round : round_locked(index, {it->tag, it->participants}))) {
          it = inbox.erase(it);
          continue;
        }
        ++it;
      }
      // Mismatch notes next: naming this round, they fail it.
      for (auto it = inbox.begin(); it != inbox.end() && !failure;) {
        if (it->kind != Note::Kind::kMismatch) {
          ++it;
          continue;
        }
        const Note note = *it;
        const bool names_mine = (note.tag == key.first && note.participants == key.second && note.round == round) ||
                                (note.other_tag == key.first && note.other_participants == key.second &&
                                 note.other_round == round);
        if (names_mine) {
          failure = device::Failure{ErrorCode::kCollectiveMismatch, note.body};
          const bool first_is_mine = note.tag == key.first && note.participants == key.second;
          other = note;
          if (first_is_mine) {
            other->tag = note.other_tag;
            other->participants = note.other_participants;
            other->round = note.other_round;
          }
        }
        pass(note.tag, note.participants, note.round);
        if (note.other_round >= 0) pass(note.other_tag, note.other_participants, note.other_round);
        it = inbox.begin();
      }
      // A payload whose sender gave its round up (the note follows it on
      // the same tag) says nothing of where the sender waits now: its
      // round may never be done here, and would be taken for half of a
      // cycle whenever this device waits for that sender again.
      auto given_up = [&](const Note& payload) {
        return std::any_of(inbox.begin(), inbox.end(), [&](const Note& n) {
          return n.kind == Note::Kind::kGivenUp && n.sender == payload.sender && n.round == payload.round &&
                 n.tag == payload.tag && n.participants == payload.participants;
        });
      };
      bool in_cycle = false;
      for (auto it = inbox.begin(); it != inbox.end() && !failure;) {
        const bool mine = it->tag == key.first && it->participants == key.second;
        const size_t rank = rank_of(it->sender);
        const bool awaited = rank < have.size() && !have[rank];
        if (mine && it->round == round) {
          if (it->kind == Note::Kind::kGivenUp) {
            if (it->code != ErrorCode::kCollectiveTimeout) {
              failure = device::Failure{it->code, it->body};
            } else if (first_look) {
              failure = exchange_given_up(call.tag, it->body);
            }
          } else if (awaited) {
            payloads[rank] = std::move(it->body);
            have[rank] = true;
          }
          it = inbox.erase(it);
          continue;
        }
        if (!mine && awaited && it->kind == Note::Kind::kPayload && !given_up(*it)) {
          in_cycle = true;
          const auto now = std::chrono::steady_clock::now();
          if (!cycle_seen) cycle_seen = true, cycle_since = now;
          if (now - cycle_since >= std::chrono::milliseconds(50)) {
            failure = cycle(*it, it->round);
            other = *it;
          }
        }
        ++it;  // a round to come: kept
      }
      if (!in_cycle) cycle_seen = false;
      first_look = false;
      if (other) pass(other->tag, other->participants, other->round);
    }
    if (failure) return give_up(std::move(*failure));
    if (std::count(have.begin(), have.end(), false) == 0) break;
    if (interrupted()) {
      const std::string& cause = interrupt_cause();
      return give_up(exchange_interrupted(call.tag, me, cause.empty() ? "" : str_cat(" by ", cause, " while it waited")));
    }
    if (interrupted_.any()) {
      if (std::optional<std::string> reason = interrupted_.reason(me)) {
        return give_up(exchange_interrupted(call.tag, me, ": " + *reason));
      }
    }
    // News of another process's devices comes beside MPI: a device that
    // was absent and is driven again may send before its return is heard
    // of, so a gone participant fails the round only if it stays gone.
    if (gone_.any()) {
      bool any_gone = false;
      for (int d : missing()) {
        std::optional<std::string> reason = gone_.reason(d);
        if (!reason) continue;
        any_gone = true;
        const auto now = std::chrono::steady_clock::now();
        if (world_.topology().is_local(d) || (gone_seen && now - gone_since >= kGoneGrace)) {
          return give_up(exchange_peer_gone(call.tag, d, *reason));
        }
        if (!gone_seen) gone_seen = true, gone_since = now;
      }
      if (!any_gone) gone_seen = false;
    }
    if (deadlines.warning_due()) {
      const std::string message =
          slow_wait_warning(me, deadlines.warn_seconds(), describe_tag(call.tag), describe_group(missing()));
      try {
        call.warn ? call.warn(warning_line(message)) : report_warning(message);
      } catch (abi::__forced_unwind&) {
        throw;
      } catch (...) {
        // A warning that could not be given changes nothing of the wait.
      }
    }
    if (deadlines.timed_out()) {
      return give_up(exchange_timeout(me, deadlines.timeout_seconds(), call.tag, missing()));
    }
    if (has_interrupt_check()) poll_interrupt();
    board_.pump();
    backoff.pause();
  }
  return payloads;
}

}  // namespace ordo::comm
