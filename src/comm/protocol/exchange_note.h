// What a participant of the exchange (Communicator::exchange, a
// rendezvous) tells another: its payload for a round, that it gave the
// round up, or that the round is one of a cycle of waits that can never
// meet. Between devices of one process a note goes straight into the
// receiver's inbox (exchange.h); to another process's device it goes
// through the transport (exchange_mail.h).
//
//   ExchangeRound round{"step", {0, 1, 2}, 4};  // round 4 of 'step' among devices 0-2
//   ExchangeNote note = ExchangeNote::payload(0, 1, round);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ordo/error.h"

namespace ordo::comm {

// One round of the exchange: (tag, participants, number). Each device
// counts its rounds per tag and participant set (the round's key).
struct ExchangeRound {
  std::string tag;
  std::vector<int> participants;  // sorted ordinals
  int64_t number = -1;            // -1: no round

  bool same_key(const ExchangeRound& other) const { return tag == other.tag && participants == other.participants; }
  bool operator==(const ExchangeRound& other) const { return number == other.number && same_key(other); }
};

struct ExchangeNote {
  // A payload; or its sender gave up on the round (body: why), or found
  // the round can never complete (a mismatch: body is the message).
  enum class Kind : uint64_t { kPayload = 0, kGivenUp = 1, kMismatch = 2 };
  Kind kind = Kind::kPayload;
  int sender = 0;
  int receiver = 0;
  ExchangeRound round;  // as the sender counts it
  std::string body;     // the payload, or why the sender gave up
  uint64_t body_follows = 0;  // > 0: the payload comes apart, this long (exchange_mail.h)
  // kMismatch: the other round of the cycle, the one the sender's wait
  // led to; both are doomed.
  ExchangeRound other;
  // kGivenUp: the sender's error. A timeout fails only participants that
  // come after it (those that wait time out on their own, saying how
  // long they waited); any other fails every participant alike.
  ErrorCode code = ErrorCode::kCollectiveTimeout;

  static ExchangeNote payload(int sender, int receiver, const ExchangeRound& round) {
    ExchangeNote note;
    note.sender = sender;
    note.receiver = receiver;
    note.round = round;
    return note;
  }
  // Whether the note is about round (as its own round or, a mismatch's, its other).
  bool names(const ExchangeRound& of) const { return round == of || (kind == Kind::kMismatch && other == of); }
};

}  // namespace ordo::comm
