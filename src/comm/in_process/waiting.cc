#include "comm/in_process/waiting.h"

#include <chrono>
#include <cstdio>
#include <thread>

#include "ordo/collectives.h"

namespace ordo::comm {
namespace {

using Clock = std::chrono::steady_clock;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

template <typename Done>
bool spin_until(const Done& done) {
  constexpr int kSpins = 4000;
  for (int i = 0; i < kSpins; ++i) {
    if (done()) return true;
    cpu_relax();
  }
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
