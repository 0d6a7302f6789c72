// The communication interface: what a collective kernel calls, and what a
// device's driver tells of it (tell). The protocol behind it is written
// once (comm/protocol/): the in-process backend is the protocol among a
// process's devices alone; ProcessesCommunicator runs it among processes
// over a transport (MPI's, comm/mpi/; a seeded simulated one for tests,
// comm/simulated/). Every backend passes the same conformance tests
// (tests/comm_conformance_test.cc, tests/comm_exchange_conformance_test.cc);
// the in-process backend is the reference.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/device_numbers.h"
#include "core/steady_clock.h"
#include "device/buffer.h"
#include "ir/collective_attrs.h"
#include "ir/ops.h"

namespace ordo::comm {

// When a participant met its peers, as the backend saw it (steady_now_ns,
// ns since its epoch): the wait is all_arrived_ns - arrived_ns, the data
// movement what follows. Every backend fills it in a collective that
// succeeds; arrived_ns is also where the collective's time starts (the
// caller reads the clock only at its end).
struct CollectiveTiming {
  int64_t arrived_ns = 0;      // this device reached the collective
  int64_t all_arrived_ns = 0;  // the last member of its group did (from another host's clock: may lie past the end)
  GlobalOrdinal last_device{-1};  // that member (this device, if it came last); -1 until filled
};

// One participant's part in a collective.
struct CollectiveCall {
  ir::OpKind op;
  const ir::CollectiveAttrs& attrs;
  GlobalOrdinal device;
  std::span<const device::Buffer* const> inputs;    // the data inputs (no token)
  std::span<const device::Buffer* const> outputs;   // allocated; the collective writes them
  CollectiveTiming* timing = nullptr;               // filled when not null
};

// One participant's part in a host-side exchange (a rendezvous): called
// from the thread that drives the device, not from its worker, so it never
// takes the device's collective slot and runs beside the device's graphs.
// Every field is read during the call only.
struct ExchangeCall {
  GlobalOrdinal device;               // among the participants
  std::string_view tag;               // the same for every participant of a round
  std::span<const GlobalOrdinal> participants;  // sorted; empty: every device
  std::string_view payload;           // any bytes, of any length (empty too)
  // Takes the warning of a slow wait ("ordo: device 0 has waited 30 s in
  // rendezvous 'x'; missing devices: [3]"), called with no lock of the
  // communicator held; empty: it goes to the log (core/log.h).
  std::function<void(const std::string& line)> warn = {};
};

// What happened to a device.
struct DeviceEvent {
  enum class Kind {
    kFailed,       // gone: every collective waiting for it, now or later, fails with reason
    kShutDown,     // its runtime shuts down: kFailed in this process only (a backend of several
                   // processes keeps it from the others: they shut down too, and news arriving
                   // after their next runtime started would fail its devices)
    kAbsent,       // driven by nobody for now: as kFailed until kPresent; `number` is the
                   // absence_epoch read when the absence was decided
    kPresent,      // driven again
    kInterrupted,  // every collective of the device that waits, now or later, for its peers or
                   // for its slot fails with reason, on the device and on its peers, until
                   // kResumed with the id tell returned (as `number`)
    kResumed,
  };
  Kind kind = Kind::kFailed;
  GlobalOrdinal device{0};
  std::string reason;   // kFailed, kShutDown, kAbsent, kInterrupted
  uint64_t number = 0;  // kAbsent: the epoch; kResumed: the interrupt's id
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int world_size() const = 0;
  // Meets the peers of call's group and runs the op. Throws
  // CollectiveMismatchError, CollectiveTimeoutError or CollectiveError.
  virtual void run(const CollectiveCall& call) = 0;
  // device will not run this collective (its graph failed before it): its
  // peers fail with reason instead of waiting.
  virtual void abandon(ir::OpKind op, const ir::CollectiveAttrs& attrs, GlobalOrdinal device,
                       const std::string& reason) = 0;
  // News of a device, from whoever drives it (DeviceEvent says what each
  // kind does); returns kInterrupted's id, else 0.
  virtual uint64_t tell(const DeviceEvent& event) = 0;
  // What a kAbsent told later carries: it counts only if no kPresent came
  // since.
  virtual uint64_t absence_epoch(GlobalOrdinal device) = 0;
  // Whether earlier failures left what start_afresh forgets: a device
  // failed, absent or interrupted, a collective that failed or was
  // abandoned (its members may be at different numbers since), an
  // exchange round still held.
  virtual bool out_of_step() = 0;
  // A spawn of every device starts while out of step: if the backend can,
  // it calls prepare() (the caller lets every device run its queue) and
  // forgets all of the above, so that the devices meet as in a new
  // runtime, and returns nothing. A backend whose numbering and news other
  // processes share cannot on its own: it calls nothing, keeps everything
  // and returns why (MPI: the devices stay gone until shutdown).
  virtual std::optional<std::string> start_afresh(const std::function<void()>& prepare) = 0;

  // Meets the other participants of call's round and returns every
  // participant's payload, in ordinal order. Rounds are counted per tag,
  // participant set and device. Like a collective, it fails instead of
  // waiting forever: CollectiveMismatchError when participants wait for
  // each other in different rounds (another tag or participant set),
  // CollectiveTimeoutError past the timeout (after the warning),
  // CollectiveError when a participant that has not arrived is failed or
  // absent, or when a participant's wait is interrupted (kInterrupted, or
  // the waiting thread's check: core/interrupt.h). InvalidArgument, with
  // nothing changed, when call.device is not among valid participants or
  // already waits in an exchange (a device takes part in one at a time).
  virtual std::vector<std::string> exchange(const ExchangeCall& call) = 0;
};

// For messages: "all_reduce(sum, scale 0.5, groups [[0, 1], [2, 3]]) of
// float32[4]" (and " at train.py:42" when IR debug recorded where), a group
// "[0, 1]", groups "[[0, 1], [2, 3]]". A long list shows its first and last
// few and "(N in all, digest D)": a message stays short whatever the world,
// and two lists still read alike only when they are equal (backends compare
// these texts across processes to tell partitions apart).
std::string describe(const CollectiveCall& call);
std::string describe_group(const std::vector<int>& group);
std::string describe_groups(const ReplicaGroups& groups);

}  // namespace ordo::comm
