// The exchange's post between processes (exchange.h's ExchangePost) over
// a transport: a note to a device of another process is one message on
// kExchangeTag (it names its round and its receiver); whoever waits in a
// round that spans processes takes every note that came for any device of
// this process and delivers it.
//
// A payload longer than half the transport's piece (MPI: 512 MiB) follows
// its note on kExchangeBodyTag (cut into pieces by MPI, which counts in
// int), one copy for every process it goes to; the note waits until its
// body is in, and the sender's later notes behind it. A receiver that
// cannot hold a body turns the note into its round's failure (and the
// notes of bodies from that process after it, which it can no longer tell
// apart).
//
// Locking: pump_mu_ (one thread takes for all; the others go on waiting)
// guards the notes whose bodies still come; it is taken before the
// exchange's lock and the transport's.
#pragma once

#include <deque>
#include <mutex>
#include <set>
#include <string>

#include "comm/protocol/exchange.h"
#include "comm/protocol/progress_board.h"
#include "comm/protocol/transport.h"

namespace ordo::comm {

inline constexpr int kExchangeTag = 1;
inline constexpr int kExchangeBodyTag = 4;  // payloads that follow their notes

class ExchangeMail : public ExchangePost {
 public:
  // board is answered between two looks of a waiter.
  ExchangeMail(const Processes& world, Transport& transport, Exchange& exchange, ProgressBoard& board);
  ~ExchangeMail() override;
  ExchangeMail(const ExchangeMail&) = delete;
  ExchangeMail& operator=(const ExchangeMail&) = delete;

  void send_payload(ExchangeNote note, const std::vector<int>& receivers, std::string_view payload) override;
  void send(const ExchangeNote& note) override;
  void collect() override;
  void idle() override { board_.pump(); }
  const std::string& describe_process(int process) const override { return world_.describe_process(process); }
  std::chrono::milliseconds gone_grace() const override { return transport_.gone_grace(); }

 private:
  // A note taken, its body still coming (pump_mu_).
  struct Incoming {
    ExchangeNote note;
    int source = 0;
    Requests body;
  };

  // note with body as its payload (note.body is not read).
  static std::string encode(const ExchangeNote& note, std::string_view body);
  ExchangeNote decode(const std::string& bytes, int source) const;
  // Payloads longer than this follow their notes.
  size_t longest_inline_payload() const { return transport_.piece_bytes() / 2; }
  // Where note's body goes (pump_mu_ and the transport's lock held): into its
  // body, or nowhere, the note then turned into its round's failure.
  Followers followers_of(Incoming& incoming);
  // Delivers the taken notes whose bodies are in, each process's in order.
  void deliver_arrived_locked();

  const Processes& world_;
  Transport& transport_;
  Exchange& exchange_;
  ProgressBoard& board_;
  std::mutex pump_mu_;
  std::deque<Incoming> incoming_;  // guarded by pump_mu_, in the order taken
  std::set<int> unreadable_from_;  // processes a body from which could not be held (pump_mu_)
};

}  // namespace ordo::comm
