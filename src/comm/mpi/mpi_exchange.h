// The exchange (Communicator::exchange, a rendezvous) between devices of
// several processes: every participant sends its payload to every other
// one, as one message to a device of another process (one MPI tag for
// all, kExchangeTag: the message names its round and its receiver) or
// straight into the inbox of a device of this one.
//
// MPI keeps the messages of one sender in order, and a device takes part
// in one exchange at a time in its program's order, so the k-th exchange
// that devices d and e share is the same on both: each message carries
// that count. A message of an older count is a leftover of a round that
// failed and is dropped; one of the right count but another tag or
// participant set means the two devices wait in different rendezvous:
// both find it (each gets the other's message) and raise
// CollectiveMismatchError. A participant that gives up (timeout, gone
// peer, interrupt) tells the others, whose round fails at once.
//
// Whoever waits moves MPI forward: it takes every exchange message that
// has come for any device of the process into that device's inbox.
//
// Locking: mu_ guards the inboxes, the counts and who waits. It is taken
// before the MPI lock (the link's), never while holding another lock of
// the communicator.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/gone_devices.h"
#include "comm/interrupted_devices.h"
#include "comm/mpi/mpi_link.h"
#include "comm/mpi/mpi_world.h"
#include "comm/mpi/progress_board.h"

namespace ordo::comm {

inline constexpr int kExchangeTag = 1;

class MpiExchange {
 public:
  MpiExchange(const MpiWorld& world, MpiLink& link, const GoneDevices& gone, const InterruptedDevices& interrupted,
              ProgressBoard& board);

  // call.device is this process's; the participants span processes.
  std::vector<std::string> exchange(const ExchangeCall& call, std::vector<int> participants);

 private:
  struct Note {
    bool given_up = false;
    int sender = 0;
    int receiver = 0;
    int64_t count = 0;  // the k-th exchange of sender and receiver
    std::string tag;
    std::vector<int> participants;
    std::string body;   // the payload, or why the sender gave up
  };
  static std::string encode(const Note& note);
  Note decode(const std::string& bytes, int source) const;

  void deliver(Note note);
  // Takes every exchange message that has come into its device's inbox.
  void pump();
  void tell_given_up(const ExchangeCall& call, const std::vector<int>& participants,
                     const std::map<int, int64_t>& counts, const std::string& why);

  const MpiWorld& world_;
  MpiLink& link_;
  const GoneDevices& gone_;
  const InterruptedDevices& interrupted_;
  ProgressBoard& board_;  // answered while waiting
  std::mutex mu_;
  std::vector<std::deque<Note>> inboxes_;       // by local device index
  std::vector<bool> waiting_;                   // by local device index
  std::map<std::pair<int, int>, int64_t> counts_;  // (local device, peer) -> exchanges so far
};

}  // namespace ordo::comm
