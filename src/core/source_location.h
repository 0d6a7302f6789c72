// Where the user's code made an IR node (IR debug, ordo/ir_debug.h): an
// interned (file, line), one pointer per node, never freed, so that nodes,
// plans and collective calls hold it without owning it.
//
//   ScopedUserLocation here(std::source_location::current());  // no-op unless IR debug is on
//   const SourceLocation* at = user_location();  // what the op traced now records
//
// The user location of a thread: the calling Python frame, when the
// Python binding installed its provider and the thread holds the GIL; else
// the outermost ScopedUserLocation of the thread (a public function's
// caller, not the ordo functions it calls in turn).
#pragma once

#include <atomic>
#include <cstdint>
#include <source_location>
#include <string>
#include <string_view>

#include "core/config.h"
#include "ordo/ir_debug.h"

namespace ordo {

struct SourceLocation {
  std::string file;
  int line = 0;
  // Of file and line, the same in every process: the fingerprint peers
  // compare carries it.
  uint64_t hash = 0;

  std::string to_string() const { return file + ":" + std::to_string(line); }
};

// The one SourceLocation of (file, line). Thread-safe.
const SourceLocation* intern_source_location(std::string_view file, int line);

namespace source_location_internal {
// 1 or 0 as set_ir_debug_enabled set it; -1 until then: ORDO_IR_DEBUG decides.
extern std::atomic<int> g_ir_debug_set;
}  // namespace source_location_internal

// ir_debug_enabled() for the paths taken at every op: a relaxed load, and
// unless set in code, the configuration's field.
inline bool ir_debug_on() {
  const int set = source_location_internal::g_ir_debug_set.load(std::memory_order_relaxed);
  return set >= 0 ? set != 0 : config().ir_debug;
}

// Sets the thread's user location for its scope, unless IR debug is off or
// an outer scope set one already (the outermost caller is the user). Every
// public op opens one, so with IR debug off it costs ir_debug_on(). A
// default-constructed std::source_location (line 0: the Python binding's,
// whose user line comes from the provider) sets nothing.
class ScopedUserLocation {
 public:
  explicit ScopedUserLocation(const std::source_location& where) {
    if (ir_debug_on()) enter(where);
  }
  explicit ScopedUserLocation(const SourceLocation* where);
  ~ScopedUserLocation() {
    if (set_) leave();
  }
  ScopedUserLocation(const ScopedUserLocation&) = delete;
  ScopedUserLocation& operator=(const ScopedUserLocation&) = delete;

 private:
  void enter(const std::source_location& where);
  void leave();

  bool set_ = false;
};

// Returns the location of the calling user frame, or null when it cannot
// tell (the Python binding's: null without the GIL or a Python caller).
using UserLocationProvider = const SourceLocation* (*)();
void set_user_location_provider(UserLocationProvider provider);

// Where the op being traced on this thread comes from: null with IR debug
// off (ir_debug_on()). May run Python (the provider): call it before
// taking any lock of ordo.
const SourceLocation* user_location_when_on();
inline const SourceLocation* user_location() { return ir_debug_on() ? user_location_when_on() : nullptr; }

}  // namespace ordo
