#include "python/waiting.h"

#include <chrono>
#include <thread>

#include "core/log.h"

namespace ordo::python {
namespace {

bool interpreter_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

void sleep_forever_if_finalizing() {
  if (!interpreter_finalizing()) return;
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

}  // namespace

PyGILState_STATE take_gil_in_foreign_thread() {
  sleep_forever_if_finalizing();
  return PyGILState_Ensure();
}

GilRelease::GilRelease() : main_thread_(_PyOS_IsMainThread() != 0), state_(PyEval_SaveThread()) {}

void GilRelease::reacquire() {
  if (state_ == nullptr) return;
  // The main thread is the one that finalizes: it always comes back.
  if (!main_thread_) sleep_forever_if_finalizing();
  PyEval_RestoreThread(state_);
  state_ = nullptr;
}

void print_on_python_stdout(const std::string& line) {
  if (interpreter_finalizing()) {
    logging::log_line(LogLevel::kWarning, line);
    return;
  }
  // Not gil_scoped_acquire: as the interpreter finalizes, CPython would end
  // a thread that is not its own (a spawned device's) inside the acquire.
  struct Gil {
    const PyGILState_STATE state = take_gil_in_foreign_thread();
    ~Gil() { PyGILState_Release(state); }
  } gil;
  try {
    py::print(line, py::arg("flush") = true);
  } catch (py::error_already_set& error) {
    // A Ctrl-C while printing is the wait's: its next check raises it.
    if (error.matches(PyExc_KeyboardInterrupt)) PyErr_SetInterrupt();
    logging::log_line(LogLevel::kWarning, line);
  }
}

InterruptibleWait::InterruptibleWait(int device, const char* doing) : device_(device), doing_(doing) {
  if (gil_.on_main_thread()) check_.emplace(&InterruptibleWait::check, this);
}

void InterruptibleWait::finish() {
  check_.reset();
  gil_.reacquire();
  if (!raised_) return;
  py::error_already_set raised = std::move(*raised_);
  raised_.reset();
  throw raised;
}

bool InterruptibleWait::check(void* context) noexcept {
  auto& self = *static_cast<InterruptibleWait*>(context);
  std::string reason;
  PyEval_RestoreThread(self.gil_.state_);
  if (PyErr_CheckSignals() != 0) {
    try {
      self.raised_.emplace();  // takes the handler's exception
      const std::string raised = py::str(self.raised_->type().attr("__name__")).cast<std::string>();
      set_interrupt_cause(raised);
      reason = str_cat("Python's main thread was interrupted by ", raised, " while it waited for ");
    } catch (...) {
      PyErr_Clear();
      reason = "Python's main thread was interrupted while it waited for ";
    }
  }
  self.gil_.state_ = PyEval_SaveThread();
  if (reason.empty()) return false;
  if (self.device_ == kNoDevice) return true;
  if (self.device_ == kEveryDevice) {
    reason += str_cat("every device (", self.doing_, ")");
  } else {
    // Messages name devices by global ordinal; without a runtime (shut
    // down meanwhile) there is none, and the index is all there is.
    int ordinal = self.device_;
    try {
      if (is_initialized()) ordinal = get_ordinal(self.device_);
    } catch (const Error&) {  // a runtime with other devices started meanwhile
    }
    reason += str_cat("device ", ordinal, " (", self.doing_, ")");
  }
  self.interrupt_devices(reason);
  return true;
}

void InterruptibleWait::interrupt_devices(const std::string& reason) const noexcept {
  try {
    // Never starts a runtime: a wait needs one, unless it was shut down
    // meanwhile, and then there is nothing left to interrupt.
    if (!is_initialized()) return;
    if (device_ != kEveryDevice) {
      interrupt_device(device_, reason);
      return;
    }
    for (int device = 0; device < num_devices(); ++device) interrupt_device(device, reason);
  } catch (...) {
    // The wait gives up all the same; its device's collectives then wait
    // for their peers or their timeout, as without an interrupt.
  }
}

}  // namespace ordo::python
