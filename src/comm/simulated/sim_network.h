// A simulated transport (protocol/transport.h) for tests: the processes
// of a job are objects of this process, their messages wait in memory,
// and a seeded schedule decides what a real network or host may do:
// - delays: a message becomes takeable only after 0 .. max_delay polls
//   (of any process: the job's time goes on while the receiver computes
//   or sleeps), so that messages of different sources or tags overtake
//   each other (those of one source and tag never do, as the protocol
//   relies on);
// - sends that complete only once received (as MPI's large ones), or at once;
// - a slow process (every call of it yields first) and a frozen one (one
//   of its calls stalls for a while);
// - a process that dies at its n-th send: of the messages it sent that have
//   not been taken yet, a first part per receiver and tag is delivered at
//   once and the rest dropped (never a later one without those before it),
//   then every other process hears of the death, and every later call of
//   the dead process throws CollectiveError;
// - the inline limit of the exchange's payloads (piece_bytes).
// Interrupts are the harness's (simulated_job.h): they come from outside
// the transport, as Ctrl-C does.
//
//   Schedule schedule = Schedule::from_seed(seed, Faults::kAll);
//   SimNetwork network(/*processes=*/3, /*devices_per_process=*/2, schedule);
//   ProcessesCommunicator process1(network.transport(1));
//
// The seed fixes the schedule and every delay drawn, in the order the
// sends come; which thread sends first is the operating system's, so a
// replay reruns the same faults, not the same interleaving.
//
// Locking: one mutex for the network, a leaf, held only inside a call;
// news handlers of each process run under that process's delivery mutex
// (taken before the network's, never while holding it), on the thread
// that announced or died.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "comm/protocol/transport.h"

namespace ordo::comm {

enum class Faults { kNone, kBenign, kAll };  // kBenign: delays, reorderings, slow and frozen processes

struct Schedule {
  uint64_t seed = 0;
  int max_delay = 0;           // polls of the network a message may wait
  double rendezvous = 0;       // the share of sends done only once received
  size_t piece_bytes = size_t{1} << 20;
  int slow_process = -1;       // none when negative
  int frozen_process = -1;
  int64_t freeze_at_call = 0;  // of the frozen process
  std::chrono::milliseconds freeze_for{0};
  int dying_process = -1;
  int64_t die_at_send = 0;     // of the dying process, from 1
  double delivered_at_death = 0.5;  // the share of its untaken messages that still arrive

  // A schedule drawn from seed for a job of `processes`, with the faults allowed.
  static Schedule from_seed(uint64_t seed, int processes, Faults faults);
  // "seed 42: delay <= 3, rendezvous 0.25, ..., process 1 dies at its send 7"
  std::string describe() const;
};

class SimNetwork {
 public:
  SimNetwork(int processes, int devices_per_process, Schedule schedule);
  ~SimNetwork();
  SimNetwork(const SimNetwork&) = delete;
  SimNetwork& operator=(const SimNetwork&) = delete;

  // Process p's transport (once per p); the network outlives it.
  std::unique_ptr<Transport> transport(int process);
  int process_count() const { return static_cast<int>(processes_.size()); }
  bool dead(int process);
  // Every message sent so far becomes takeable: what a barrier of the
  // harness promises in a real job, where it takes longer than a message.
  void settle();
  // Sends so far, every process's together.
  int64_t sends();

 private:
  class Endpoint;
  class EndpointInbox;
  struct Message {
    int source = 0;
    int tag = 0;
    std::string bytes;
    uint64_t ready_at = 0;  // in the network's polls
    uint64_t completes = 0; // the sender's transfer done when this is taken (0: none)
  };
  struct PostedReceive {
    int source = 0;
    int tag = 0;
    std::byte* base = nullptr;
    Region region;
    uint64_t id = 0;
  };
  struct Place {
    std::unique_ptr<Processes> processes;  // as process p sees the job
    uint64_t calls = 0;
    int64_t sends = 0;
    bool dead = false;
    std::list<Message> arrived;     // in the order sent
    std::list<PostedReceive> posted;
    std::set<uint64_t> pending;     // its transfers not done yet
    std::map<std::pair<int, int>, uint64_t> last_ready;  // by (source, tag)
    // Guarded by delivery_mu: the handlers, the deaths heard (replayed to
    // every listener), the device news that came while nobody listened
    // (kept for the next), as the MPI mesh keeps them.
    std::recursive_mutex delivery_mu;
    NewsHandlers handlers;
    std::vector<std::pair<int, std::string>> deaths;
    std::vector<DeviceNews> unheard;
  };

  // Both with mu_ held. poll_locked: a call of p that moves messages.
  void poll_locked(int process);
  void match_locked(Place& place);
  // A send of p: queued for `to`, and the transfer it makes (into), if any.
  void send_locked(int from, int to, int tag, std::string bytes, Requests* into);
  // Throws once p is dead; slows or freezes it as the schedule says.
  void enter(int process, bool sending);
  // p dies now: its untaken messages are dropped or delivered, the others hear.
  void die_locked(int process);
  // Runs event on every other living process's place, holding its delivery mutex.
  void tell_others(int process, const std::function<void(Place&)>& event);
  uint64_t draw_delay_locked();

  const Schedule schedule_;
  const int devices_per_process_;
  std::mutex mu_;
  std::mt19937_64 random_;  // guarded by mu_
  uint64_t next_id_ = 1;    // guarded by mu_
  int64_t sends_ = 0;       // guarded by mu_
  uint64_t polls_ = 0;      // of every process, guarded by mu_
  std::vector<std::unique_ptr<Place>> processes_;
};

}  // namespace ordo::comm
