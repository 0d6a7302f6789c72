// Waits that whoever waits may interrupt. Python's main thread must run
// its signal handlers (Ctrl-C) while it waits in ordo without the GIL, or
// a KeyboardInterrupt would come only when the wait ends, minutes later
// if a collective's peers never come.
//
//   ScopedInterruptCheck check(&signal_raised, &state);  // for one wait
//   ordo::wait_device_ops(0);  // throws ExecutionError once check said so
//
// For the scope of such a wait the thread installs a check. Every wait of
// ordo that may last (for a value, for a device's queue, for a
// collective's peers or slot) wakes at least every kInterruptPollPeriod on
// that thread and calls poll_interrupt() with no lock of ordo held. Once
// the check said "interrupt", the wait gives up: a collective fails (for
// its peers too), other waits throw ExecutionError. The check runs on the
// waiting thread, possibly inside a task the thread runs for its device
// (see device/worker.h): it must not wait for ordo itself.
//
// Threads without a check (workers, other Python threads) wait as before:
// nothing wakes them but the event they wait for.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace ordo {

inline constexpr std::chrono::milliseconds kInterruptPollPeriod{50};

class ScopedInterruptCheck {
 public:
  // check(context) returns whether to stop waiting; it must not throw.
  using Check = bool (*)(void* context) noexcept;
  ScopedInterruptCheck(Check check, void* context);
  ~ScopedInterruptCheck();  // the thread's earlier check, if any, applies again
  ScopedInterruptCheck(const ScopedInterruptCheck&) = delete;
  ScopedInterruptCheck& operator=(const ScopedInterruptCheck&) = delete;

 private:
  friend bool poll_interrupt();
  friend bool interrupted();
  friend bool has_interrupt_check();
  friend void set_interrupt_cause(std::string cause);
  friend const std::string& interrupt_cause();

  Check check_;
  void* context_;
  ScopedInterruptCheck* outer_;
  bool interrupted_ = false;
  std::string cause_;
  std::chrono::steady_clock::time_point last_poll_{};
};

// Whether this thread waits interruptibly: its sleeps end at the latest at
// interrupt_poll_deadline.
bool has_interrupt_check();
// Runs this thread's check unless it ran less than kInterruptPollPeriod
// ago; true once it has said "interrupt" (and for the rest of its scope).
bool poll_interrupt();
// Whether this thread's check has said "interrupt" (without running it).
bool interrupted();
// What interrupted this thread's wait, as its check named it when it said
// "interrupt" ("KeyboardInterrupt"), for messages that say so; empty if it
// named nothing. set_interrupt_cause is for the check itself to call.
void set_interrupt_cause(std::string cause);
const std::string& interrupt_cause();
// When a sleep that would last until deadline must wake on this thread.
std::chrono::steady_clock::time_point interrupt_poll_deadline(std::chrono::steady_clock::time_point deadline);
// The wait `what` gives up: throws ExecutionError("<what> was interrupted").
[[noreturn]] void throw_interrupted(std::string_view what);

}  // namespace ordo
