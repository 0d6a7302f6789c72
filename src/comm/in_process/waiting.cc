#include "comm/in_process/waiting.h"

#include <chrono>
#include <cstdio>
#include <thread>

#include "ordo/collectives.h"

namespace ordo::comm {
namespace {

using Clock = std::chrono::steady_clock;

// Peers usually arrive within microseconds: spin on the flag for a while,
// then yield for a while (a peer may be waiting for this very core: with
// more devices than cores a pure spin would hold it), then let the caller
// block. The spin has no pause instruction: in a virtual machine a pause
// loop may trap to the hypervisor, which costs more than it saves.
template <typename Done>
bool spin_until(const Done& done) {
  constexpr auto kSpinFor = std::chrono::microseconds(50);
  constexpr auto kYieldFor = std::chrono::microseconds(200);
  const Clock::time_point spin_until = Clock::now() + kSpinFor;
  do {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
    }
  } while (Clock::now() < spin_until);
  const Clock::time_point yield_until = Clock::now() + kYieldFor;
  do {
    for (int i = 0; i < 16; ++i) {
      if (done()) return true;
      std::this_thread::yield();
    }
  } while (Clock::now() < yield_until);
  return done();
}

Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

}  // namespace

void wait_for_arrivals(Rendezvous& r, int device) {
  auto done = [&r] {
    return r.failed.load(std::memory_order_acquire) ||
           r.arrived.load(std::memory_order_acquire) == r.size();
  };
  if (!spin_until(done)) {
    const CollectiveTimeouts timeouts = collective_timeouts();
    const Clock::time_point start = Clock::now();
    std::unique_lock<std::mutex> lock(r.mu);
    if (!r.cv.wait_until(lock, start + seconds(timeouts.warn_seconds), done)) {
      std::fprintf(stderr,
                   "ordo: device %d has waited %.1f s in %s #%lld on group %s; missing devices: %s\n",
                   device, timeouts.warn_seconds, r.op_locked().c_str(),
                   static_cast<long long>(r.sequence), describe_group(r.group).c_str(),
                   r.missing_locked().c_str());
      if (!r.cv.wait_until(lock, start + seconds(timeouts.timeout_seconds), done)) {
        r.fail_locked(ErrorCode::kCollectiveTimeout,
                      str_cat("device ", device, " waited ", timeouts.timeout_seconds, " s in ",
                              r.op_locked(), " #", r.sequence, " on group ",
                              describe_group(r.group), "; devices that never arrived: ",
                              r.missing_locked()));
      }
    }
  }
  if (r.failed.load(std::memory_order_acquire)) {
    device::Failure failure;
    {
      std::lock_guard<std::mutex> lock(r.mu);
      failure = r.failure;
    }
    failure.raise();
  }
}

void wait_for_finish(Rendezvous& r) {
  auto done = [&r] { return r.finished.load(std::memory_order_acquire) == r.size(); };
  if (spin_until(done)) return;
  std::unique_lock<std::mutex> lock(r.mu);
  r.cv.wait(lock, done);
}

}  // namespace ordo::comm
