// How every waiter of comm/ passes the time until what it waits for comes,
// in one place: the spin, the yields and the sleeps, how often a sleeper
// looks again, how long a gone device is given, and a block that still
// runs the waiting thread's interrupt check (core/interrupt.h). What a
// waiter checks between two looks (the status of its peers, the warning
// and the timeout: comm/deadlines.h, comm/device_status.h) is its own.
//
//   if (!spin_until(done)) { ... block_until(cv, lock, look_again.next()) ... }  // woken by peers
//   Backoff backoff; while (!poll()) { check(); backoff.pause(); }              // polling (MPI)
//   if (seen_gone && grace.over(now)) fail(...);                                // news beside the data
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <optional>
#include <thread>

#include "comm/device_status.h"
#include "core/interrupt.h"

namespace ordo::comm {

using PaceClock = std::chrono::steady_clock;

// How a waiter that polls passes the time between two polls: spin first
// (peers usually answer within microseconds), then yield the core (with
// more threads than cores a peer may need this very one), then sleep,
// longer each time up to a millisecond. Yielding lasts milliseconds: on an
// oversubscribed host a peer is often off its CPU for longer than a spin,
// and a waiter that sleeps then makes its own peers wait for its wake-up
// (mpi_matches_in_process at 3x2 on 2 loaded cores: 51 s instead of 38).
//
// On a host with more device threads than CPUs, every pause yields from
// the first: a waiter that spins there holds the CPU that a peer it waits
// for (another process's leader, or a local member to be woken) needs. 2
// processes x 2 devices on 2 CPUs, 4 MiB: 1.19 -> 1.69x MPI's bus
// bandwidth, 1 KiB 96 -> 61 us. With a CPU per device thread the spin
// stays: a yield per poll made 1 KiB at 2 x 1 2.3 -> 3.3 us.
class Backoff {
 public:
  void pause();
  // Set by the communicator from the topology; read by every waiter.
  static void set_oversubscribed(bool oversubscribed) { oversubscribed_.store(oversubscribed); }
  static bool oversubscribed() { return oversubscribed_.load(std::memory_order_relaxed); }

 private:
  // A pause reads the clock once in kPausesPerClockRead (a reading costs as
  // much as a poll or two in a VM, and delays noticing the answer), from
  // the first pause on: a wait that ends at its first poll reads none.
  static constexpr unsigned kPausesPerClockRead = 16;
  unsigned pauses_ = 0;
  std::optional<std::chrono::steady_clock::time_point> started_;
  std::chrono::steady_clock::duration waited_{};  // at the last reading
  std::chrono::microseconds sleep_{20};
  static inline std::atomic<bool> oversubscribed_{false};
};

// Spins until done() for up to `within`, yielding the core at every look
// when it must (a host with more device threads than CPUs: see Backoff);
// returns done(). For a waiter that sleeps next and that a peer usually
// releases within microseconds (a wake-up costs more than a small
// collective).
template <typename Done>
bool spin_for(const Done& done, PaceClock::duration within, bool yields) {
  const PaceClock::time_point until = PaceClock::now() + within;
  while (!done() && PaceClock::now() < until) {
    if (yields) std::this_thread::yield();
  }
  return done();
}

// Peers usually arrive within microseconds: spin on the flag for a while,
// then yield for a while (a peer may be waiting for this very core: with
// more devices than cores a pure spin would hold it), then let the caller
// block. The spin has no pause instruction: in a virtual machine a pause
// loop may trap to the hypervisor, which costs more than it saves. On a
// host with more device threads than CPUs every look yields (see Backoff).
template <typename Done>
bool spin_until(const Done& done) {
  for (int i = 0; i < 256; ++i) {
    if (done()) return true;
  }
  if (Backoff::oversubscribed()) return spin_for(done, std::chrono::microseconds(250), /*yields=*/true);
  constexpr auto kSpinFor = std::chrono::microseconds(50);
  constexpr auto kYieldFor = std::chrono::microseconds(200);
  const PaceClock::time_point spin_until = PaceClock::now() + kSpinFor;
  do {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
    }
  } while (PaceClock::now() < spin_until);
  const PaceClock::time_point yield_until = PaceClock::now() + kYieldFor;
  do {
    for (int i = 0; i < 16; ++i) {
      if (done()) return true;
      std::this_thread::yield();
    }
  } while (PaceClock::now() < yield_until);
  return done();
}

// When a sleeping waiter looks again at what nobody wakes it for (a member
// that went to another channel: peers never look at each other's channels
// on the fast path; a member of a local meeting that has not come): after
// a millisecond, then at doubling intervals up to a tenth of a second.
class LookAgain {
 public:
  PaceClock::time_point next() {
    const PaceClock::time_point at = PaceClock::now() + interval_;
    interval_ = std::min(2 * interval_, kLongest);
    return at;
  }

 private:
  static constexpr PaceClock::duration kLongest = std::chrono::milliseconds(100);
  PaceClock::duration interval_ = std::chrono::milliseconds(1);
};

// Since when a device awaited has been seen gone, for a waiter whose news
// of devices travels beside their data: it fails on a gone device only
// once the device has been gone kGoneGrace (what it sent before it went,
// or its return, may still be on its way).
class GoneGrace {
 public:
  explicit GoneGrace(std::chrono::milliseconds grace = kGoneGrace) : grace_(grace) {}
  // The device seen gone now: whether its grace is over.
  bool over(PaceClock::time_point now) {
    if (!since_) since_ = now;
    return now - *since_ >= grace_;
  }
  // No device awaited is gone any more.
  void reset() { since_.reset(); }

 private:
  std::chrono::milliseconds grace_;
  std::optional<PaceClock::time_point> since_;
};

// Waits on cv (lock held) until deadline or a notification. On a thread
// that waits interruptibly (core/interrupt.h) it wakes in time to run the
// thread's check, without the lock: the check may take other locks.
template <typename Lock>
void block_until(std::condition_variable& cv, Lock& lock, PaceClock::time_point deadline) {
  if (!has_interrupt_check()) {
    cv.wait_until(lock, deadline);
    return;
  }
  cv.wait_until(lock, interrupt_poll_deadline(deadline));
  lock.unlock();
  poll_interrupt();
  lock.lock();
}

}  // namespace ordo::comm
