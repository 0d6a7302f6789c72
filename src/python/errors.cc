#include "python/module.h"

#include <new>

namespace ordo::python {

// Only this layer turns ordo errors into Python exceptions: bad arguments
// are ValueError (TypeError for dtypes, OverflowError for numbers out of
// range); failures while graphs run are ExecutionError, with the
// CollectiveError family for collectives and OutOfMemoryError (also a
// MemoryError) for allocations.
void bind_errors(py::module_& m) {
  static py::exception<ExecutionError> execution(m, "ExecutionError", PyExc_RuntimeError);
  // Also a MemoryError, which is what Python code catches for memory.
  static py::exception<OutOfMemoryError> out_of_memory(
      m, "OutOfMemoryError", py::make_tuple(execution, py::handle(PyExc_MemoryError)));
  static py::exception<CollectiveError> collective(m, "CollectiveError", execution.ptr());
  static py::exception<CollectiveMismatchError> mismatch(m, "CollectiveMismatchError", collective.ptr());
  static py::exception<CollectiveTimeoutError> timeout(m, "CollectiveTimeoutError", collective.ptr());
  py::register_exception_translator([](std::exception_ptr error) {
    try {
      if (error) std::rethrow_exception(error);
    } catch (const DTypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    } catch (const OutOfRange& e) {
      PyErr_SetString(PyExc_OverflowError, e.what());
    } catch (const InvalidArgument& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const CollectiveMismatchError& e) {
      PyErr_SetString(mismatch.ptr(), e.what());
    } catch (const CollectiveTimeoutError& e) {
      PyErr_SetString(timeout.ptr(), e.what());
    } catch (const CollectiveError& e) {
      PyErr_SetString(collective.ptr(), e.what());
    } catch (const OutOfMemoryError& e) {
      PyErr_SetString(out_of_memory.ptr(), e.what());
    } catch (const ExecutionError& e) {
      PyErr_SetString(execution.ptr(), e.what());
    } catch (const InternalError& e) {
      PyErr_SetString(PyExc_SystemError, e.what());
    } catch (const std::bad_alloc&) {
      // What an allocation of ordo's own did not say itself (pybind11's
      // default: a bare MemoryError "std::bad_alloc").
      PyErr_SetString(out_of_memory.ptr(), "ordo ran out of memory (std::bad_alloc: an allocation failed)");
    }
  });
}

}  // namespace ordo::python
