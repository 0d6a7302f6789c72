// Threads that drive devices 0..count-1 (indices in this process), one each: what ordo::spawn, Python's
// ordo.spawn and the tests' run_on_devices have in common.
//
//   api::SpawnedDevices devices([](int index) { ... }, 4);
//   if (!devices.wait()) {                   // this thread's interrupt check said so
//     devices.interrupt("the caller was interrupted");
//     devices.wait_until(Clock::now() + 500ms);  // the indices still running
//   }
//   std::vector<api::SpawnedOutcome> outcomes = devices.finish();
//
// Each thread is bound to its device (bind_thread_to_device), has it current
// and runs fn(index); fn may not shut the runtime down (ordo::shutdown
// refuses in these threads). What the communicator hears of the devices
// (never once the runtime the spawn started on is gone: the caller may
// replace it while threads left behind by an interrupt still run, and
// these devices have no peers left to tell there):
// - fn threw, or its thread ended before fn returned (pthread_exit,
//   cancellation): the device failed (mark_device_failed) until a spawn
//   starts afresh (below), so that its peers fail instead of waiting for it;
// - fn returned (with SpawnOptions::absence): the device is absent until the
//   spawn ends (mark_device_absent): a peer waiting for a collective it never
//   traced fails at once rather than at its timeout;
// - finish(): the devices may be driven again (by the caller, or by another
//   spawn): a spawn of every device first lets every device run what it
//   queued (all of them, then every clear: a clear before another device's
//   queue ran would let that queue's collective wait for the cleared
//   device); a spawn of fewer devices cannot wait, since a queued collective
//   may need a device that the caller drives only after the spawn returns.
// - A spawn starts afresh when earlier failures left the communicator out
//   of step (Communicator::out_of_step), no thread of an earlier spawn
//   still runs, and every device it leaves to the caller is idle with no
//   collective traced (a fresh start would orphan it): each spawned device
//   drops the pending graph its failed driver left if it holds a
//   collective and runs its queue, every device forgets the failure
//   recorded for its next step, and the communicator forgets the devices'
//   failures, absences, interrupts and numbering (start_afresh), so the
//   spawn meets as in a new runtime. Under MPI, whose numbering and news
//   other processes share, nothing is forgotten, and the spawn raises
//   CollectiveError before it starts a thread, saying what failed.
//
// Locking: one mutex guards the outcomes; it is never held while fn runs,
// while news is told, or while an interrupt check runs.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/device_numbers.h"

namespace ordo::api {

using SpawnClock = std::chrono::steady_clock;

// What became of one spawned device's call.
struct SpawnedOutcome {
  // What fn threw (ExecutionError if its thread ended before fn returned);
  // null if fn returned or is still running.
  std::exception_ptr error;
  // When error was caught, before any peer heard of it: the first failure
  // in time is the cause, the others usually follow from it.
  SpawnClock::time_point failed_at{};
  bool ended = false;  // the thread is done with fn and with the news
};

struct SpawnOptions {
  // The count argument's name in the error for a count out of range.
  std::string count_name = "count";
  // Peers read "device d is gone (<prefix><what fn threw>)".
  std::string failure_reason_prefix = "its spawn function threw: ";
  // Whether a device whose fn returned is absent until finish() (see
  // above). Without it, a peer waits for such a device until it times out.
  bool absence = true;
};

class SpawnedDevices {
 public:
  using Function = std::function<void(int index)>;

  // Starts the threads. A count outside [1, num_devices()] is an
  // InvalidArgument and starts nothing. If a thread cannot be started, the
  // devices without one are declared failed, the started threads are
  // joined, the devices may be driven again (as in finish()) and the error
  // (std::system_error) is rethrown.
  SpawnedDevices(Function fn, int64_t count, SpawnOptions options = {});
  // Joins every thread not abandoned.
  ~SpawnedDevices();
  SpawnedDevices(const SpawnedDevices&) = delete;
  SpawnedDevices& operator=(const SpawnedDevices&) = delete;

  int count() const { return static_cast<int>(threads_.size()); }

  // Until every thread ended (true), or until this thread's interrupt
  // check (core/interrupt.h) says "interrupt" (false).
  bool wait();
  // The caller was interrupted while it waited: every spawned device is
  // declared failed for reason (all of them first, so that each thread,
  // failing, finds them all failed for this reason rather than for its
  // peers' failures), then interrupted (interrupt_device): the collectives
  // they wait in, now or later, fail at once for them and their peers.
  void interrupt(const std::string& reason);
  // Until every thread ended, deadline passed, or this thread's interrupt
  // check said "interrupt"; returns the indices still running.
  std::vector<int> wait_until(SpawnClock::time_point deadline);
  // The outcomes so far, by index.
  std::vector<SpawnedOutcome> outcomes() const;
  // Waits for every thread (uninterruptibly), lets the devices be driven
  // again (see above) and returns the outcomes by index. Once only.
  std::vector<SpawnedOutcome> finish();
  // Detaches the threads still running (after an interrupt, to return
  // without them): they keep the spawn's own state alive, but whatever fn
  // refers to must then outlive them.
  void abandon();

  struct State;

 private:
  std::shared_ptr<State> state_;
  std::vector<std::thread> threads_;
};

// The device (its index in this process) whose spawned thread the calling
// thread is, or -1 if it is none: such a thread may not shut the runtime
// down under its peers.
int spawned_device_of_this_thread();
// The threads of every spawn that still run.
int spawned_threads_running();

// The index whose call failed first in time, or -1 if none failed.
int first_failure(const std::vector<SpawnedOutcome>& outcomes);

// What a spawn that starts afresh does with a device's pending graph
// (steps.cc): drops it as drop_pending_graph does, saying `why`, if it
// holds a collective, whose peers have gone past it; else keeps it.
void drop_collectives_left_behind(LocalDevice device, const std::string& why);
// Whether the device's pending graph holds a collective (steps.cc).
bool has_collectives_pending(LocalDevice device);

}  // namespace ordo::api
