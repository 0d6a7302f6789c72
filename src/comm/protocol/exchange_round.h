// One device's part in one round of the exchange (exchange.h): made when
// the device enters the round, gone when it leaves. It holds the payloads
// that came, why the round failed if another device found it can never
// complete, and the device's own wait: its deadlines, since when it has
// seen a cycle through another process or a gone participant.
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "comm/deadlines.h"
#include "comm/protocol/exchange.h"
#include "comm/protocol/pacing.h"

namespace ordo::comm {

class Exchange::Round {
 public:
  // Enters round (its number still to take) for call.device, and reads
  // what came before it did.
  Round(Exchange& owner, const ExchangeCall& call, ExchangeRound round);
  ~Round();
  Round(const Round&) = delete;
  Round& operator=(const Round&) = delete;

  // Keeps this device's payload and sends it to every other participant;
  // gives up if it cannot.
  void send_payload();
  // Until every payload came; gives up on a failure.
  void wait();
  std::vector<std::string> take_payloads() { return std::move(payloads_); }

  // mu_ held: the note, for this device, is about this round: taken.
  bool take_locked(ExchangeNote& note);
  // mu_ held: every payload came.
  bool complete_locked() const { return missing_ == 0; }
  // mu_ held: the round cannot complete (other is the round of the cycle
  // its wait leads to, if a mismatch).
  void fail_locked(device::Failure failure, std::optional<ExchangeRound> other = std::nullopt);
  bool failed_locked() const { return failure_.has_value(); }
  const ExchangeRound& round() const { return round_; }
  // mu_ held: the participants whose payloads have not come.
  std::vector<int> missing_locked() const;

 private:
  size_t rank_of(int device) const;
  // First look (mu_ held): leftovers dropped, this round's notes taken.
  void read_inbox_locked();
  void read_mismatch_notes_locked(Inbox& inbox);
  void take_round_notes_locked(Inbox& inbox);
  // mu_ held: why the round failed (failure_; an interrupt, a participant
  // gone for long enough, a cycle of waits through this device), if it did.
  std::optional<device::Failure> settle_locked();
  std::optional<device::Failure> interruption() const;
  std::optional<device::Failure> gone_participant();
  void warn(const std::string& missing);
  // Until something may have changed (mu_ held on entry, perhaps not after).
  void pause(std::unique_lock<std::mutex>& lock, Backoff& backoff);
  // The round completed: the device leaves it (mu_ held).
  void leave_complete_locked();
  // Tells the other participants and raises failure.
  [[noreturn]] void give_up(device::Failure failure);

  Exchange& owner_;
  const ExchangeCall& call_;
  const GlobalOrdinal me_;
  const size_t index_;  // me_'s local index
  ExchangeRound round_;
  const bool spans_processes_;
  // Guarded by owner_.mu_ while the device takes part.
  std::vector<std::string> payloads_;  // by rank
  std::vector<bool> have_;             // by rank
  size_t missing_ = 0;
  std::optional<device::Failure> failure_;
  std::optional<ExchangeRound> other_;  // a mismatch's other round
  bool left_ = false;                   // the device left the round complete
  // The waiter's own.
  Deadlines deadlines_;
  std::optional<PaceClock::time_point> cycle_since_;  // a cycle through another process seen
  GoneGrace gone_grace_;
};

}  // namespace ordo::comm
