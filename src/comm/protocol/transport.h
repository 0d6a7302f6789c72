// What the protocol among processes (processes_communicator.h) needs of
// the way its processes reach each other: a transport. The protocol is
// written once, here in protocol/; a backend is only a transport (mpi/:
// MPI point to point, shared-memory rings, a TCP mesh for news;
// simulated/: in-memory queues run by a seeded schedule, for tests).
//
//   Transport& t = ...;
//   Requests requests;
//   t.send(data, bytes, process, tag, requests);
//   t.receive(out, bytes, process, tag, requests);
//   Backoff backoff;  // protocol/pacing.h
//   while (!t.test(requests)) { check_failures(); backoff.pause(); }
//
// What the protocol relies on, and every transport keeps:
// - Messages of one (source, tag) never overtake each other; messages of
//   different sources or tags may.
// - Data and messages move only while some thread of the process calls the
//   transport (a test, a take, an inbox's take): every waiter polls.
// - News of a device (failed, absent, present) reaches every other process
//   in the order it was announced, and only the communicator of the runtime
//   it was announced in (a late one is dropped); a process that dies or
//   finishes its program is reported once, to every other.
// - After a peer is gone, what it sent before may still arrive for
//   gone_grace(): a waiter that needs nothing more from it waits no longer.
//
// Locking: a transport is used by many threads at once; each call takes
// what it needs and holds nothing across calls. News handlers run on a
// thread of the transport's, one at a time.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "comm/device_status.h"
#include "comm/topology.h"

namespace ordo::comm {

// A transfer the transport has in flight (for MPI, an MPI_Request).
struct Transfer {
  uint64_t handle = 0;
};
using Requests = std::vector<Transfer>;

// Any process, for try_take.
inline constexpr int kAnyProcess = -1;

// A strided region of a buffer, in bytes: `count` blocks of `block` bytes,
// `stride` apart, from `offset` on (what one member needs of another's
// tensor in reduce_scatter and all_to_all).
struct Region {
  size_t offset = 0;
  size_t count = 1;
  size_t block = 0;
  size_t stride = 0;
  size_t bytes() const { return count * block; }
};

// Where the body that follows a message taken by try_take goes: `bytes`
// into `data`, from the sender on `tag`, its receives into `requests`.
// bytes == 0: nothing follows.
struct Followers {
  std::byte* data = nullptr;
  size_t bytes = 0;
  int tag = 0;
  Requests* requests = nullptr;
};
// Called holding the transport's lock: it must neither call the transport
// nor take a lock.
using FollowersOf = std::function<Followers(const std::string& message, int source)>;

// The two tags of one kind of small message of a group (its headers, its
// retractions): a message too long for the inbox's buffer goes on the
// overflow tag.
struct PostedTags {
  int tag = 0;
  int overflow_tag = 0;
};

// News about one device, sent to every other process (in order per sender).
struct DeviceNews {
  enum class Kind : uint8_t { kFailed, kAbsent, kPresent };  // gone for good / absent until present again / present again
  Kind kind = Kind::kFailed;
  GlobalOrdinal device{0};
  std::string reason;  // for kFailed and kAbsent
  // The runtime start it belongs to, counted alike by every process (the
  // starts are collective): news that arrives after the next start is stale.
  uint64_t runtime = 0;
};

// What a process hears of its peers.
struct NewsHandlers {
  // e.g. "process 1 (host vm, pid 42) died: its connection closed without a goodbye"
  std::function<void(int process, const std::string& reason)> process_died;
  // "process 1 (host vm, pid 42) finished its program"
  std::function<void(int process, const std::string& reason)> process_finished;
  std::function<void(const DeviceNews&)> device_news;
};

// The processes of the job: where every device is, and how messages name
// a process.
class Processes {
 public:
  Processes(Topology topology, std::vector<std::string> descriptions)
      : topology_(std::move(topology)), descriptions_(std::move(descriptions)) {}
  const Topology& topology() const { return topology_; }
  int rank() const { return topology_.process(); }
  int size() const { return topology_.process_count(); }
  // "process 1 (host vm, pid 4242)"
  const std::string& describe_process(int process) const { return descriptions_[static_cast<size_t>(process)]; }

 private:
  Topology topology_;
  std::vector<std::string> descriptions_;  // by process
};

// The small messages of one kind from one process, in order.
class Inbox {
 public:
  virtual ~Inbox() = default;
  // The next message, if it has come; the bytes stay valid until the next call.
  virtual std::optional<std::string_view> try_take() = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;

  virtual const Processes& processes() const = 0;
  // Tags are 0 .. tag_upper_bound().
  virtual int tag_upper_bound() const = 0;

  // Data, into or out of buffers the caller keeps until the requests are
  // done (or abandoned: then the buffers of sends stay alive).
  virtual void send(const void* data, size_t bytes, int process, int tag, Requests& into) = 0;
  virtual void receive(void* data, size_t bytes, int process, int tag, Requests& into) = 0;
  virtual void send_region(const std::byte* base, const Region& region, int process, int tag, Requests& into) = 0;
  virtual void receive_region(std::byte* base, const Region& region, int process, int tag, Requests& into) = 0;
  // True once every request is done (and then empty). Moves every pending
  // message of the process.
  virtual bool test(Requests& requests) = 0;
  // Gives up on requests that cannot complete (a peer failed).
  virtual void abandon(Requests& requests) = 0;
  // The longest message a payload may go inline in (the exchange's).
  virtual size_t piece_bytes() const = 0;

  // A message the transport keeps until it has left, then body on
  // body_tag (in the order of the messages, per receiver).
  virtual void send_owned(std::string message, int process, int tag, std::shared_ptr<const std::string> body = nullptr,
                          int body_tag = 0) = 0;
  // The next message from process (kAnyProcess: anyone) on tag, if one has
  // come, *source the sender; followers_of, if given, places the body that
  // follows it.
  virtual std::optional<std::string> try_take(int process, int tag, int* source,
                                              const FollowersOf& followers_of) = 0;
  std::optional<std::string> try_take(int process, int tag, int* source = nullptr) {
    return try_take(process, tag, source, nullptr);
  }
  // A group's small messages of one kind from process, and the sending of one.
  virtual std::unique_ptr<Inbox> open_inbox(int process, PostedTags tags) = 0;
  virtual void send_small(std::string_view message, int process, PostedTags tags) = 0;
  // What this process sent leaves it before news of its devices does
  // (waiting a bounded time).
  virtual void flush_sends() = 0;
  // Called every few milliseconds by the communicator's own thread, even
  // while every device computes: moves what waited for room.
  virtual void upkeep() = 0;

  // News. listen replaces the handlers (empty: nobody listens) and replays
  // what came while nobody did; once it returns the old ones never run.
  virtual void listen(NewsHandlers handlers) = 0;
  virtual void announce(const DeviceNews& news) = 0;
  // A collective or exchange of this process failed (why).
  virtual void gave_up(const std::string& why) = 0;
  // How long a waiter still waits for what a gone peer sent before it went.
  virtual std::chrono::milliseconds gone_grace() const { return kGoneGrace; }
};

}  // namespace ordo::comm
