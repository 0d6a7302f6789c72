// When a wait for peers warns and when it fails, for every backend, and
// the words of both. The warning is printed in one place only
// (report_warning), whoever waits: a collective, or any other meeting of
// the devices.
//
//   Deadlines deadlines;  // after the fast path gave up
//   while (!done()) {
//     if (deadlines.warning_due()) report_warning(slow_wait_warning(device, deadlines.warn_seconds(), where, missing));
//     if (deadlines.timed_out()) fail(timeout_failure(device, deadlines.timeout_seconds(), where, missing));
//     sleep_until(deadlines.next());
//   }
#pragma once

#include <chrono>
#include <string>

#include "core/device_numbers.h"
#include "device/device_data.h"
#include "ordo/collective_types.h"

namespace ordo::comm {

// The warning and timeout schedule of one slow wait, from the timeouts in
// force when it starts (ordo/collective_types.h). The timeout always wins: a
// warning due no sooner than the failure is not given (the error says
// more), and next() is never past the timeout.
class Deadlines {
 public:
  using Clock = std::chrono::steady_clock;

  Deadlines();
  explicit Deadlines(CollectiveTimeouts timeouts, Clock::time_point start = Clock::now());

  // True once, when the warning is due. A waiter that has just read the
  // clock passes its reading.
  bool warning_due(Clock::time_point now = Clock::now());
  bool timed_out(Clock::time_point now = Clock::now()) const { return now >= start_ + timeout_after_; }
  // When to look again for the warning or the timeout, whichever is next.
  Clock::time_point next() const { return start_ + (warning_pending() ? warn_after_ : timeout_after_); }
  double warn_seconds() const { return timeouts_.warn_seconds; }
  double timeout_seconds() const { return timeouts_.timeout_seconds; }

 private:
  bool warning_pending() const { return !warned_ && timeouts_.warn_seconds < timeouts_.timeout_seconds; }

  const CollectiveTimeouts timeouts_;
  const Clock::time_point start_;
  const Clock::duration warn_after_;
  const Clock::duration timeout_after_;
  bool warned_ = false;
};

// Logs message as a warning (core/log.h: "ordo: <message>" on stderr by
// default): the one place a wait's warning is printed, unless the waiter
// was handed a printer of its own (Python's rendezvous prints on sys.stdout).
void report_warning(const std::string& message);
// "ordo: <message>"
std::string warning_line(const std::string& message);

// "device 1 has waited 30 s in <where>; missing devices: <missing>", where
// is what it waits in ("all_reduce(...) #3 on group [0, 1]").
std::string slow_wait_warning(GlobalOrdinal device, double waited_seconds, const std::string& where,
                              const std::string& missing);

// A CollectiveTimeoutError: "device 1 waited 300 s in <where>; missing
// devices: <missing>".
device::Failure timeout_failure(GlobalOrdinal device, double timeout_seconds, const std::string& where,
                                const std::string& missing);

}  // namespace ordo::comm
