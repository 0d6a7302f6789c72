#include "comm/deadlines.h"

#include <algorithm>

#include "core/log.h"

namespace ordo::comm {
namespace {

Deadlines::Clock::duration after(double seconds) {
  // Timeouts are finite but may be huge (1e300 s: "never"); ten years is
  // never too, and start + it stays far from the clock's overflow.
  constexpr double kLongest = 10 * 365.25 * 24 * 3600;
  return std::chrono::duration_cast<Deadlines::Clock::duration>(
      std::chrono::duration<double>(std::min(seconds, kLongest)));
}

}  // namespace

Deadlines::Deadlines() : Deadlines(collective_timeouts()) {}

Deadlines::Deadlines(CollectiveTimeouts timeouts, Clock::time_point start)
    : timeouts_(timeouts),
      start_(start),
      warn_after_(after(timeouts.warn_seconds)),
      timeout_after_(after(timeouts.timeout_seconds)) {}

bool Deadlines::warning_due(Clock::time_point now) {
  if (!warning_pending() || now < start_ + warn_after_) return false;
  warned_ = true;
  return true;
}

std::string warning_line(const std::string& message) { return logging::line_of(message); }

void report_warning(const std::string& message) {
  logging::log(LogLevel::kWarning, message);
}

std::string slow_wait_warning(GlobalOrdinal device, double waited_seconds, const std::string& where,
                              const std::string& missing) {
  return str_cat("device ", device, " has waited ", waited_seconds, " s in ", where, "; missing devices: ", missing);
}

device::Failure timeout_failure(GlobalOrdinal device, double timeout_seconds, const std::string& where,
                                const std::string& missing) {
  return {ErrorCode::kCollectiveTimeout,
          str_cat("device ", device, " waited ", timeout_seconds, " s in ", where, "; missing devices: ", missing)};
}

}  // namespace ordo::comm
