// The exchange (Communicator::exchange, a rendezvous) between devices of
// several processes: every participant sends its payload to every other
// one, as one message to a device of another process (one tag for
// all, kExchangeTag: the message names its round and its receiver) or
// straight into the inbox of a device of this one.
//
// Rounds are counted per tag, participant set and device, as in-process,
// and every message names its round. The transport keeps the messages of one sender
// in order and a device takes part in one exchange at a time, so when a
// device waits for a participant and holds that participant's message of
// another exchange it has not done, the two wait for each other in
// different rendezvous: each holds the other's message, and both raise
// CollectiveMismatchError (the first to see it for 50 ms tells the
// participants of its round, naming both rounds; every device that hears
// of them is past both, so that what is left of them is dropped). A cycle through three devices
// or more is not seen across processes: it ends in the timeout. A message of a round the device is past is a
// leftover and is dropped; one of a round to come is kept. A participant
// that gives up (timeout, gone peer, interrupt) tells the others, whose
// round fails at once, now or when they come.
//
// Whoever waits moves the transport forward: it takes every exchange message that
// has come for any device of the process into that device's inbox.
//
// A payload longer than half the transport's piece (MPI: 512 MiB) follows its note
// on kExchangeBodyTag (cut into pieces by MPI, which counts in int), one copy for
// every process it goes to; the note waits until its body is in, and the
// sender's later notes behind it. A sender that fails to send (short of
// memory, say) gives the round up, and every participant fails with its
// reason; so does a receiver that cannot hold a body (and the bodies from
// that process after it, which it can no longer tell apart).
//
// Locking: pump_mu_ (one thread takes for all; the others go on waiting)
// guards the notes whose bodies still come, and is taken before mu_. mu_
// guards the inboxes, the rounds and who waits where. Both are taken
// before the transport's lock, never while holding another lock of
// the communicator.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "comm/communicator.h"
#include "comm/device_status.h"
#include "comm/protocol/transport.h"
#include "comm/protocol/progress_board.h"

namespace ordo::comm {

inline constexpr int kExchangeTag = 1;
inline constexpr int kExchangeBodyTag = 4;  // payloads that follow their notes

class CrossExchange {
 public:
  CrossExchange(const Processes& world, Transport& transport, const DeviceStatus& status, ProgressBoard& board);
  ~CrossExchange();
  CrossExchange(const CrossExchange&) = delete;
  CrossExchange& operator=(const CrossExchange&) = delete;

  // call.device is this process's; the participants span processes.
  std::vector<std::string> exchange(const ExchangeCall& call, std::vector<int> participants);

 private:
  struct Note {
    // A payload; or its sender gave up on the round (body: why), or found
    // it can never complete (a mismatch: body is the message).
    enum class Kind : uint64_t { kPayload = 0, kGivenUp = 1, kMismatch = 2 };
    Kind kind = Kind::kPayload;
    int sender = 0;
    int receiver = 0;
    int64_t round = 0;  // of the tag and participants, as the sender counts it
    std::string tag;
    std::vector<int> participants;
    std::string body;   // the payload, or why the sender gave up
    uint64_t body_follows = 0;  // > 0: the payload comes apart, this long (kExchangeBodyTag)
    // kMismatch: the other round of the cycle (the one the sender waited
    // in, or the one it found a participant waiting in): both are doomed.
    std::string other_tag;
    std::vector<int> other_participants;
    int64_t other_round = -1;
    // kGivenUp: the sender's error. A timeout fails only participants that
    // come after it (those that wait time out on their own, saying how
    // long they waited); any other fails every participant alike.
    ErrorCode code = ErrorCode::kCollectiveTimeout;
  };
  // One device's part in one round, while it takes part (mpi_exchange.cc).
  class Round;

  // note with body as its payload (note.body is not read).
  static std::string encode(const Note& note, std::string_view body);
  Note decode(const std::string& bytes, int source) const;
  // Payloads longer than this follow their notes.
  size_t longest_inline_payload() const { return transport_.piece_bytes() / 2; }

  void deliver(Note note);
  // Takes every exchange message that has come into its device's inbox.
  void pump();
  // A note taken, its body still coming (pump_mu_).
  struct Incoming {
    Note note;
    int source = 0;
    Requests body;
  };
  // Where note's body goes (pump_mu_ and the transport's lock held): into its
  // body, or nowhere, the note then turned into its round's failure.
  Followers followers_of(Incoming& incoming);
  // Delivers the taken notes whose bodies are in, each process's in order.
  void deliver_arrived_locked();
  // Sends note (its receiver set to each) to every other participant.
  void tell(const Note& note);
  // The round device is at for key (the next it will do), counted up by
  // take; the least recently used keys are forgotten past kRoundsKept.
  using Key = std::pair<std::string, std::vector<int>>;
  int64_t round_locked(size_t index, const Key& key) const;
  int64_t take_round_locked(size_t index, const Key& key);
  // The device will not take part in key's rounds before round + 1.
  void pass_round_locked(size_t index, const Key& key, int64_t round);

  const Processes& world_;
  Transport& transport_;
  const DeviceStatus& status_;
  ProgressBoard& board_;  // answered while waiting
  std::mutex pump_mu_;
  std::deque<Incoming> incoming_;  // guarded by pump_mu_, in the order taken
  std::set<int> unreadable_from_;  // processes a body from which could not be held (pump_mu_)
  std::mutex mu_;
  std::vector<std::deque<Note>> inboxes_;       // by local device index
  std::vector<std::optional<std::string>> waiting_in_;  // by local device index: the tag it waits in
  struct Rounds {
    std::map<Key, std::pair<int64_t, uint64_t>> next;  // key -> (next round, last use)
    uint64_t uses = 0;
  };
  std::vector<Rounds> rounds_;  // by local device index
};

}  // namespace ordo::comm
