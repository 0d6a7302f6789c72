#include "core/steady_clock.h"

namespace ordo::internal {

int64_t refresh_wall_offset() noexcept {
  const int64_t steady_ns = steady_now_ns();
  const int64_t offset = wall_now_ns() - steady_ns;
  g_wall_minus_steady_ns.store(offset, std::memory_order_relaxed);
  // Released after the offset: a reader that sees this time sees that offset.
  g_wall_offset_taken_ns.store(steady_ns, std::memory_order_release);
  return offset;
}

}  // namespace ordo::internal
