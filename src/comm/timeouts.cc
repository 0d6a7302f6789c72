// The collective warning and timeout times: environment defaults, API override.
#include <cmath>
#include <mutex>
#include <optional>

#include "comm/timeouts.h"
#include "core/config.h"
#include "ordo/collective_types.h"
#include "ordo/error.h"

namespace ordo {
namespace {

void check(const CollectiveTimeouts& t) {
  ORDO_ARG_CHECK(std::isfinite(t.warn_seconds) && t.warn_seconds > 0 &&
                     std::isfinite(t.timeout_seconds) && t.timeout_seconds > 0,
                 "collective timeouts must be positive and finite, got warn ", t.warn_seconds,
                 " s, timeout ", t.timeout_seconds, " s");
}

std::mutex g_mu;
std::optional<CollectiveTimeouts> g_set_in_code;  // guarded by g_mu

}  // namespace

CollectiveTimeouts collective_timeouts() {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_set_in_code) return *g_set_in_code;
  }
  const Config& from_environment = config();
  return {from_environment.collective_warn_seconds, from_environment.collective_timeout_seconds};
}

void set_collective_timeouts(CollectiveTimeouts timeouts) {
  check(timeouts);
  std::lock_guard<std::mutex> lock(g_mu);
  g_set_in_code = timeouts;
}

}  // namespace ordo

namespace ordo::comm {

void lock_timeouts_for_fork() { g_mu.lock(); }
void unlock_timeouts_after_fork() { g_mu.unlock(); }

}  // namespace ordo::comm
