// ordo.spawn: the C++ spawn (api/spawned_devices.h) running a Python
// function. Only what Python needs is here: the GIL in each device's
// thread, results and exceptions as Python objects (the first error with
// its "ordinal N:" prefix and note), and Ctrl-C while the caller waits.
#include <cxxabi.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

#include "api/spawned_devices.h"
#include "python/module.h"
#include "python/waiting.h"

namespace ordo::python {
namespace {

using api::SpawnClock;
using api::SpawnedDevices;
using api::SpawnedOutcome;

// How long an interrupted spawn waits for its threads to end (their waits
// in ordo fail at once, and their exceptions need a moment in Python)
// before it raises: KeyboardInterrupt comes within a second even if a
// thread is busy in code of its own, and even on a loaded machine.
constexpr std::chrono::milliseconds kStopGrace{300};

constexpr const char* kRaisedReason = "its spawn function raised ";

// What a spawned function raised, as the C++ spawn sees it: "<type>:
// <message>", which its peers read as "device d is gone (its spawn
// function raised <type>: <message>)".
class RaisedInPython : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

std::string type_name(const py::handle& type) { return py::str(type.attr("__name__")).cast<std::string>(); }

std::string describe(const py::error_already_set& error) {
  std::string message;
  try {
    message = py::str(error.value()).cast<std::string>();
  } catch (const py::error_already_set&) {
    message = "(its str() raised)";
  }
  return str_cat(type_name(error.type()), ": ", message);
}

// A C++ exception as the Python exception the binding raises for it.
py::error_already_set as_python_error(const std::exception_ptr& error) {
  try {
    py::cpp_function([error] { std::rethrow_exception(error); })();
  } catch (py::error_already_set& translated) {
    return translated;
  }
  py::pybind11_fail("spawn: an error was not translated");
}

// A spawn's Python side: fn, its arguments, and what each call returned or
// raised, by this process's device index (the C++ spawn's ordinal). fn and
// the messages see global ordinals, as torch_xla's spawn gives them. Its
// objects are touched with the GIL held only.
class PythonSpawn {
 public:
  PythonSpawn(py::object fn, py::tuple args, int devices, int first_ordinal)
      : fn_(std::move(fn)), args_(std::move(args)), first_ordinal_(first_ordinal),
        results_(static_cast<size_t>(devices), py::none()), errors_(static_cast<size_t>(devices)) {}

  // The global ordinal of this process's device `index`.
  int global_ordinal(int index) const { return first_ordinal_ + index; }

  // In device `ordinal`'s thread, without the GIL: what fn raised is
  // thrown as RaisedInPython. Takes and gives back the GIL by hand: a
  // thread that CPython ends with pthread_exit (as the interpreter shuts
  // down) does not hold it as it unwinds through here.
  __attribute__((no_sanitize("undefined"))) void run(int ordinal) {
    const PyGILState_STATE gil = take_gil_in_foreign_thread();
    std::optional<RaisedInPython> raised;
    try {
      raised = call(ordinal);
    } catch (abi::__forced_unwind&) {
      throw;
    } catch (...) {
      PyGILState_Release(gil);
      throw;
    }
    PyGILState_Release(gil);
    if (raised) throw *raised;
  }

  const py::object& result(int ordinal) const { return results_[ordinal]; }
  // What call `ordinal` raised, as a Python exception.
  py::error_already_set error(int ordinal, const SpawnedOutcome& outcome) const {
    if (errors_[ordinal]) return *errors_[ordinal];
    return as_python_error(outcome.error);  // not raised by fn: the thread ended early, say
  }

 private:
  std::optional<RaisedInPython> call(int ordinal) {
    try {
      // As threading names a thread it starts (logging shows it).
      py::module_::import("threading").attr("current_thread")().attr("name") =
          py::str("ordo-device-{}").format(global_ordinal(ordinal));
      results_[ordinal] = call_fn(ordinal);
    } catch (py::error_already_set& error) {
      RaisedInPython raised(describe(error));
      errors_[ordinal] = std::move(error);
      return raised;
    }
    return std::nullopt;
  }

  // fn(global ordinal, *args). CPython may end the thread inside the call (with
  // pthread_exit, as the interpreter shuts down): no Python object of ours
  // is then on the stack, whose destructor would run without the GIL.
  py::object call_fn(int ordinal) const {
    PyObject* call_args = nullptr;
    {
      py::list listed;
      listed.append(global_ordinal(ordinal));
      for (const py::handle arg : args_) listed.append(arg);
      call_args = py::tuple(std::move(listed)).release().ptr();
    }
    PyObject* result = PyObject_Call(fn_.ptr(), call_args, nullptr);
    Py_DECREF(call_args);
    if (result == nullptr) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(result);
  }

  const py::object fn_;
  const py::tuple args_;
  const int first_ordinal_;
  std::vector<py::object> results_;
  std::vector<std::optional<py::error_already_set>> errors_;
};

// "ordinal 0: CollectiveError, ordinal 2: ValueError", in the order they
// were raised.
std::string raised_so_far(const PythonSpawn& python, const std::vector<SpawnedOutcome>& outcomes) {
  std::vector<int> failed;
  for (int ordinal = 0; ordinal < static_cast<int>(outcomes.size()); ++ordinal) {
    if (outcomes[ordinal].error) failed.push_back(ordinal);
  }
  std::stable_sort(failed.begin(), failed.end(),
                   [&](int a, int b) { return outcomes[a].failed_at < outcomes[b].failed_at; });
  std::string raised;
  for (int ordinal : failed) {
    raised += str_cat(raised.empty() ? "" : ", ", "ordinal ", python.global_ordinal(ordinal), ": ",
                      type_name(python.error(ordinal, outcomes[ordinal]).type()));
  }
  return raised.empty() ? "nothing" : raised;
}

// The caller was interrupted (Ctrl-C) while it waited for the threads:
// each spawned device is declared failed and interrupted, so that every
// collective and rendezvous its thread waits in, now or later, fails at
// once for it and its peers, naming the interrupt. The threads get a
// moment to end, so that the note can say what their calls raised; a
// second Ctrl-C ends that moment. Returns the ordinals still running;
// notes on the interrupt what the calls raised.
std::vector<int> stop_spawned_threads(const PythonSpawn& python, SpawnedDevices& devices,
                                      py::error_already_set& interrupt,
                                      std::optional<py::error_already_set>& raised_meanwhile) {
  const std::string reason = str_cat("the main thread was interrupted by ", type_name(interrupt.type()),
                                     " while ordo.spawn waited for the devices' threads");
  {
    GilRelease released;
    devices.interrupt(reason);
  }
  const SpawnClock::time_point deadline = SpawnClock::now() + kStopGrace;
  std::vector<int> running;
  try {
    running = wait_interruptibly(kNoDevice, "ordo.spawn", [&] { return devices.wait_until(deadline); });
  } catch (py::error_already_set& again) {
    // Another signal handler's exception replaces the interrupt; a second
    // Ctrl-C raises the first at once.
    if (!again.matches(PyExc_KeyboardInterrupt)) raised_meanwhile = std::move(again);
    running = devices.wait_until(SpawnClock::now());
  }
  std::string note =
      "ordo.spawn was interrupted; the devices' calls raised: " + raised_so_far(python, devices.outcomes());
  if (!running.empty()) {
    note += "; still running: ordinals [";
    for (size_t i = 0; i < running.size(); ++i) {
      note += str_cat(i == 0 ? "" : ", ", python.global_ordinal(running[i]));
    }
    note += "]";
  }
  interrupt.value().attr("add_note")(note);
  return running;
}

// The first error in time is the cause; the others follow from it.
[[noreturn]] void raise_first_error(const PythonSpawn& python, int ordinal, const SpawnedOutcome& outcome) {
  py::error_already_set error = python.error(ordinal, outcome);
  const py::object& value = error.value();
  py::list args(value.attr("args"));
  if (!args.empty() && py::isinstance<py::str>(args[0])) {
    args[0] = py::str("ordinal {}: {}").format(python.global_ordinal(ordinal), args[0]);
    value.attr("args") = py::tuple(args);
  }
  value.attr("add_note")(str_cat("raised by the spawn function of ordinal ", python.global_ordinal(ordinal)));
  throw error;
}

// nprocs as int() takes it (None: every device); past int64 an OverflowError.
int64_t spawn_count(const py::object& nprocs) {
  if (nprocs.is_none()) return num_devices();
  const long long count = PyLong_AsLongLong(py::int_(nprocs).ptr());
  if (count == -1 && PyErr_Occurred()) throw py::error_already_set();
  return count;
}

// Destroys the spawn's threads (joins them) without the GIL, which they
// may need to end.
struct JoinWithoutGil {
  std::shared_ptr<SpawnedDevices>& devices;
  ~JoinWithoutGil() {
    GilRelease released;
    devices.reset();
  }
};

py::list spawn_python_function(py::object fn, const py::object& args, const py::object& nprocs) {
  py::tuple arguments(args);
  const int64_t count = spawn_count(nprocs);
  api::SpawnOptions options;
  options.count_name = "nprocs";
  options.failure_reason_prefix = kRaisedReason;
  // Left behind (never freed) if threads still run after an interrupt.
  auto python = std::make_unique<PythonSpawn>(std::move(fn), std::move(arguments), num_devices(),
                                              get_ordinal(0));
  std::shared_ptr<SpawnedDevices> devices;
  const JoinWithoutGil join{devices};
  {
    GilRelease released;  // the threads need it to run fn
    devices = std::make_shared<SpawnedDevices>([spawn = python.get()](int ordinal) { spawn->run(ordinal); },
                                               count, options);
  }
  try {
    while (!wait_interruptibly(kNoDevice, "ordo.spawn", [&] { return devices->wait(); })) {
      // The interrupt check stopped the wait without an exception to raise.
    }
  } catch (py::error_already_set& interrupt) {
    std::optional<py::error_already_set> raised_meanwhile;
    if (!stop_spawned_threads(*python, *devices, interrupt, raised_meanwhile).empty()) {
      // Left to run, and not waited for at exit, like Python's daemon
      // threads: one that comes back into Python as the interpreter
      // finalizes is ended by CPython or sleeps (waiting.h).
      devices->abandon();
      python.release();  // the threads still use it
    }
    if (raised_meanwhile) throw *raised_meanwhile;
    throw;
  }
  const std::vector<SpawnedOutcome> outcomes =
      wait_interruptibly(kEveryDevice, "ordo.spawn", [&] { return devices->finish(); });
  const int first = api::first_failure(outcomes);
  if (first >= 0) raise_first_error(*python, first, outcomes[first]);
  py::list results(outcomes.size());
  for (size_t ordinal = 0; ordinal < outcomes.size(); ++ordinal) results[ordinal] = python->result(ordinal);
  return results;
}

}  // namespace

void bind_spawn(py::module_& m) {
  m.def("_spawn", &spawn_python_function, py::arg("fn"), py::arg("args"), py::arg("nprocs"));
}

}  // namespace ordo::python
