// Waiting in ordo from Python: without the GIL, and on the main thread
// interruptibly.
//
//   m.def("mark_step", &mark_step, py::call_guard<GilRelease>());
//   wait_interruptibly(device, "reading a value", [&] { t.copy_to_host(data, bytes); });
//
// A call that waits for devices (reading a value, wait_device_ops) would
// otherwise hold off Ctrl-C until it ends: Python runs signal handlers only
// on its main thread, with the GIL. On the main thread such a call runs
// the handlers every kInterruptPollPeriod meanwhile (core/interrupt.h); if
// one raises (Ctrl-C: KeyboardInterrupt), the waits of the devices waited
// for are interrupted (interrupt_device: the collectives they wait in fail
// for every peer, naming the interrupt), the call stops waiting and raises
// that exception. Handlers then run inside ordo's wait, possibly inside a
// collective the thread runs for its device: a handler must not wait for
// ordo itself (raising, as the default one does, is fine).
#pragma once

#include <optional>
#include <type_traits>

#include "core/interrupt.h"
#include "python/module.h"

namespace ordo::python {

// Releases the GIL for a call (py::call_guard<GilRelease>). Unlike
// py::gil_scoped_release, a thread other than the main one that comes
// back while the interpreter shuts down never takes the GIL again: CPython
// would end it with pthread_exit, and that unwinding through a destructor
// aborts the process ("terminate called without an active exception").
// The thread sleeps until the process ends instead, as Python 3.14 does.
class GilRelease {
 public:
  GilRelease();
  ~GilRelease() { reacquire(); }
  GilRelease(const GilRelease&) = delete;
  GilRelease& operator=(const GilRelease&) = delete;

  void reacquire();
  bool on_main_thread() const { return main_thread_; }

 private:
  friend class InterruptibleWait;

  bool main_thread_;
  PyThreadState* state_;  // null while this thread holds the GIL
};

// Takes the GIL in a thread that Python did not start (a spawned device's).
// While the interpreter shuts down it sleeps until the process ends
// instead, as GilRelease does: CPython would end the thread with
// pthread_exit. Released with PyGILState_Release.
PyGILState_STATE take_gil_in_foreign_thread();

// The devices a wait is for: one ordinal, or every device; or none, when
// its caller interrupts what it waits for itself (spawn: its devices are
// declared failed first), or when it waits for no device's queue (a
// rendezvous: an interrupt fails the wait itself, for its peers too, and
// leaves every device's queue alone).
inline constexpr int kEveryDevice = -1;
inline constexpr int kNoDevice = -2;

// Prints line on Python's sys.stdout (a warning of a wait without the
// GIL, which it takes); on stderr once the interpreter finalizes or if
// printing raises.
void print_on_python_stdout(const std::string& line);

// A wait without the GIL that Python's signal handlers may interrupt when
// it runs on the main thread (anywhere else it is a GilRelease).
class InterruptibleWait {
 public:
  // doing: what the wait is, for the interrupt's reason ("reading a value").
  InterruptibleWait(int device, const char* doing);
  InterruptibleWait(const InterruptibleWait&) = delete;
  InterruptibleWait& operator=(const InterruptibleWait&) = delete;

  // Takes the GIL back; then raises what a signal handler raised meanwhile.
  void finish();

 private:
  static bool check(void* self) noexcept;
  void interrupt_devices(const std::string& reason) const noexcept;

  const int device_;
  const char* const doing_;
  GilRelease gil_;
  std::optional<py::error_already_set> raised_;
  std::optional<ScopedInterruptCheck> check_;
};

// Runs wait() as an InterruptibleWait and returns its result.
template <typename Wait>
auto wait_interruptibly(int device, const char* doing, Wait&& wait) -> decltype(wait()) {
  InterruptibleWait waiting(device, doing);
  try {
    if constexpr (std::is_void_v<decltype(wait())>) {
      wait();
      waiting.finish();
    } else {
      auto result = wait();
      waiting.finish();
      return result;
    }
  } catch (const py::error_already_set&) {
    throw;  // finish() raised the handler's exception
  } catch (...) {
    // A signal handler's exception wins over the error of the wait it cut
    // short (the collective it interrupted, say).
    waiting.finish();
    throw;
  }
}

}  // namespace ordo::python
