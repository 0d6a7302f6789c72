// The warning and timeout schedule of one slow wait (a collective's, an
// exchange's), from the collective timeouts (ordo/collectives.h). The
// timeout always wins: a warning due no sooner than the failure is not
// given (the error says more), and the wait never sleeps past the timeout
// waiting for the warning.
//
//   Deadlines deadlines;  // starts now
//   while (!done()) {
//     if (deadlines.take_warning()) warn(deadlines.warn_seconds());
//     if (deadlines.timed_out()) fail(deadlines.timeout_seconds());
//     cv.wait_until(lock, deadlines.next());
//   }
#pragma once

#include <chrono>

#include "ordo/collectives.h"

namespace ordo::comm {

class Deadlines {
 public:
  using Clock = std::chrono::steady_clock;

  Deadlines() : timeouts_(collective_timeouts()), start_(Clock::now()) {}

  // Whether the warning is due; true once, then it counts as given.
  bool take_warning() {
    if (!warning_pending() || Clock::now() < start_ + seconds(timeouts_.warn_seconds)) return false;
    warned_ = true;
    return true;
  }
  double warn_seconds() const { return timeouts_.warn_seconds; }
  bool timed_out() const { return Clock::now() >= start_ + seconds(timeouts_.timeout_seconds); }
  double timeout_seconds() const { return timeouts_.timeout_seconds; }
  // When the wait must look again: the warning's time, else the timeout's.
  Clock::time_point next() const {
    return start_ + seconds(warning_pending() ? timeouts_.warn_seconds : timeouts_.timeout_seconds);
  }

 private:
  static Clock::duration seconds(double s) {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  }
  bool warning_pending() const { return !warned_ && timeouts_.warn_seconds < timeouts_.timeout_seconds; }

  const CollectiveTimeouts timeouts_;
  const Clock::time_point start_;
  bool warned_ = false;
};

}  // namespace ordo::comm
