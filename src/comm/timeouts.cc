// The collective warning and timeout times: environment defaults, API override.
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "comm/timeouts.h"
#include "ordo/collectives.h"
#include "ordo/error.h"

namespace ordo {
namespace {

double seconds_from_env(const char* name, double fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  ORDO_ARG_CHECK(end != text && *end == '\0' && std::isfinite(value) && value > 0, name, ": '",
                 text, "' is not a positive number of seconds");
  return value;
}

void check(const CollectiveTimeouts& t) {
  ORDO_ARG_CHECK(std::isfinite(t.warn_seconds) && t.warn_seconds > 0 &&
                     std::isfinite(t.timeout_seconds) && t.timeout_seconds > 0,
                 "collective timeouts must be positive and finite, got warn ", t.warn_seconds,
                 " s, timeout ", t.timeout_seconds, " s");
}

std::mutex g_mu;
bool g_loaded = false;         // guarded by g_mu
CollectiveTimeouts g_timeouts; // guarded by g_mu

}  // namespace

CollectiveTimeouts collective_timeouts() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_loaded) {
    CollectiveTimeouts t;
    t.warn_seconds = seconds_from_env("ORDO_COLLECTIVE_WARN_SECONDS", t.warn_seconds);
    t.timeout_seconds = seconds_from_env("ORDO_COLLECTIVE_TIMEOUT_SECONDS", t.timeout_seconds);
    g_timeouts = t;
    g_loaded = true;
  }
  return g_timeouts;
}

void set_collective_timeouts(CollectiveTimeouts timeouts) {
  check(timeouts);
  std::lock_guard<std::mutex> lock(g_mu);
  g_timeouts = timeouts;
  g_loaded = true;
}

}  // namespace ordo

namespace ordo::comm {

void lock_timeouts_for_fork() { g_mu.lock(); }
void unlock_timeouts_after_fork() { g_mu.unlock(); }

}  // namespace ordo::comm
