// The exchange (Communicator::exchange, a rendezvous), for every backend:
// every participant sends its payload to every other one as a note
// (exchange_note.h), and waits until it holds every payload of its round.
// A note for a device of this process goes straight to it; one for
// another process's device goes through the post (exchange_mail.h, over
// the transport), which hands what comes back to deliver().
//
//   Exchange exchange(Topology::single_process(4), status);
//   std::vector<std::string> all = exchange.exchange({device, "step", {}, bytes});
//
// Rounds. Each device counts its rounds per tag and participant set (the
// key), and every note names its round. A note of the round its receiver
// waits in is taken at once; any other waits in the receiver's inbox: one
// of a round to come until the receiver gets there, a leftover of a round
// it is past until it next looks (then it is dropped). Counts of a key
// whose participants are all this process's are forgotten once they are
// level again (tags used once, like f"epoch_{n}", do not pile up); those
// of keys that span processes, least recently used first past 4096.
//
// The cycle rule. Devices that wait for each other in different rounds
// (device 0 in 'a' for device 1, device 1 in 'b' for device 0) can never
// meet: whoever waits finds the cycle and fails every round of it with
// CollectiveMismatchError, naming each wait (exchange_cycles.cc). A device
// of this process waits for the participants missing from its round; one
// of another process waits for a device of this one whose inbox holds its
// payload of a round that device has not done. A cycle of this process's
// devices fails at once; one through another process's device must hold
// for 50 ms (its payload may be of a round it has since given up, the
// note saying so on its way). So a cycle across processes is seen when
// every device of another process in it is followed by one of this; any
// other ends in the timeout.
//
// Failures. A device that gives up (timeout, gone peer, interrupt, a
// payload it could not send or keep) tells the other participants: a
// timeout fails those that come after it (those waiting time out on their
// own, saying how long they waited), anything else fails them all at
// once. Devices of another process count as gone only once gone for the
// transport's grace (news comes beside their notes).
//
// Locking: mu_ guards the inboxes, the counts, who waits where and each
// waiting round's payloads and failure; cv_ is notified on each change
// and whenever a device is declared gone, absent or interrupted. The
// post's locks are taken before mu_, never with it held; the device
// status's after it (a leaf). The caller's warning is called with no lock
// held.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "comm/communicator.h"
#include "comm/device_status.h"
#include "comm/protocol/exchange_note.h"
#include "comm/topology.h"

namespace ordo::comm {

// How notes reach the devices of other processes (exchange_mail.h).
class ExchangePost {
 public:
  virtual ~ExchangePost() = default;
  // note (note.body not read) with payload as its body, to each receiver.
  virtual void send_payload(ExchangeNote note, const std::vector<int>& receivers, std::string_view payload) = 0;
  virtual void send(const ExchangeNote& note) = 0;
  // Hands every note that came for a device of this process to Exchange::deliver.
  virtual void collect() = 0;
  // Between two looks of a waiter whose round spans processes.
  virtual void idle() = 0;
  // "process 1 (host vm, pid 42)"
  virtual const std::string& describe_process(int process) const = 0;
  // How long a device of another process must stay gone to count as gone.
  virtual std::chrono::milliseconds gone_grace() const = 0;
};

class Exchange {
 public:
  Exchange(Topology topology, const DeviceStatus& status);
  ~Exchange();
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  // Where notes to other processes go; set before any round spans processes.
  void set_post(ExchangePost* post) { post_ = post; }

  std::vector<std::string> exchange(const ExchangeCall& call);
  // participants: exchange_participants(call, world size).
  std::vector<std::string> exchange(const ExchangeCall& call, std::vector<int> participants);
  // A note for a device of this process; several at once.
  void deliver(ExchangeNote note);
  void deliver(std::vector<ExchangeNote> notes);
  // A device was declared gone or absent: waiters look again.
  void wake();
  // The round device waits in, if any, fails now for every participant
  // (its later rounds fail while DeviceStatus holds the interrupt).
  void interrupt(GlobalOrdinal device, const std::string& reason);
  // How many (device, key) round counts are held.
  size_t round_counts_held() const;
  // What a failure leaves among this process's devices: a note of a round
  // of theirs not taken, or counts of their keys that are not level.
  bool unsettled() const;
  // Every device starts again at round 0 of every key, with nothing held.
  // Only while no device waits in an exchange.
  void start_afresh();

 private:
  class Round;  // exchange_round.h
  using Key = std::pair<std::string, std::vector<int>>;
  using Inbox = std::deque<ExchangeNote>;
  struct Counts {
    std::map<Key, std::pair<int64_t, uint64_t>> next;  // key -> (next round, last use)
    uint64_t uses = 0;
  };
  // A cycle of waits: devices[i] waits in rounds[i] for devices[i + 1],
  // the last for devices[0].
  struct WaitCycle {
    std::vector<int> devices;
    std::vector<ExchangeRound> rounds;
    bool local = true;  // every device of it is this process's
  };

  static Key key_of(const ExchangeRound& round) { return {round.tag, round.participants}; }
  bool all_local(const std::vector<int>& participants) const;
  size_t index_of(int device) const { return topology_.local_device(GlobalOrdinal(device))->slot(); }
  void deliver_locked(ExchangeNote note);
  // Sends note (its receiver set to each) to every other participant of its round.
  void tell(const ExchangeNote& note);

  // exchange_rounds.cc: the counts.
  int64_t next_number_locked(size_t index, const Key& key) const;
  int64_t take_number_locked(size_t index, const Key& key);
  // Device index will not take part in round before round.number + 1:
  // what is left of it in its inbox is dropped.
  void pass_locked(size_t index, const ExchangeRound& round);
  // After a device left done complete: forgets done's key if every
  // participant is level at its next round and none is in one.
  void forget_if_level_locked(const ExchangeRound& done);

  // exchange_cycles.cc: the cycle rule.
  std::optional<WaitCycle> wait_cycle_locked(int me) const;
  // Who device waits for, and in which round; nothing if it waits for none.
  std::vector<std::pair<int, ExchangeRound>> waits_of_locked(int device) const;
  // Whether inbox holds a note that sender gave payload's round up.
  static bool given_up(const Inbox& inbox, const ExchangeNote& payload);
  std::string mismatch_message(const WaitCycle& cycle) const;
  // Fails every round of cycle waited in by a device of this process.
  void fail_cycle_locked(const WaitCycle& cycle);

  const Topology topology_;
  const DeviceStatus& status_;
  ExchangePost* post_ = nullptr;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Inbox> inboxes_;       // by local device index
  std::vector<Round*> waiting_in_;   // by local device index: its round, while it takes part
  std::vector<Counts> counts_;       // by local device index
};

}  // namespace ordo::comm
